/*
 * probe: prints, as key=value lines, what a process inherits from its caller: ids, umask, cwd,
 * open fds, signal masks, rlimits, session, no_new_privs, capabilities and the names (never
 * the values) of its environment. Linked statically so that it also covers static commands.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static void print_status_field(const char *field)
{
	char line[512];
	size_t len = strlen(field);
	FILE *f = fopen("/proc/self/status", "re");

	if (!f) {
		printf("%s=?\n", field);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			char *v = line + len + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			printf("%s=%s\n", field, v);
			fclose(f);
			return;
		}
	}
	fclose(f);
	printf("%s=missing\n", field);
}

static void print_rlimit(const char *name, int resource)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl) != 0) {
		printf("rlimit_%s=?\n", name);
		return;
	}
	printf("rlimit_%s=", name);
	if (rl.rlim_cur == RLIM_INFINITY)
		printf("unlimited");
	else
		printf("%llu", (unsigned long long)rl.rlim_cur);
	if (rl.rlim_max == RLIM_INFINITY)
		printf(":unlimited\n");
	else
		printf(":%llu\n", (unsigned long long)rl.rlim_max);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a;
	int y = *(const int *)b;

	return (x > y) - (x < y);
}

static void print_fds(void)
{
	int fds[1024];
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");

	if (!d) {
		printf("fds=?\n");
		return;
	}
	while ((e = readdir(d)) && n < sizeof(fds) / sizeof(fds[0])) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (e->d_name[0] == '.' || *end != '\0' || fd == dirfd(d))
			continue;
		fds[n++] = (int)fd;
	}
	closedir(d);
	qsort(fds, n, sizeof(fds[0]), cmp_int);
	for (size_t i = 0; i < n; i++) {
		char path[64], target[PATH_MAX];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[i]);
		len = readlink(path, target, sizeof(target) - 1);
		if (len < 0)
			len = 0;
		target[len] = '\0';
		printf("fd%d=%s\n", fds[i], target);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_env_names(void)
{
	size_t n = 0;
	char **names;

	while (environ[n])
		n++;
	names = calloc(n + 1, sizeof(*names));
	if (!names) {
		printf("env=?\n");
		return;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = strndup(environ[i], strcspn(environ[i], "="));
	qsort(names, n, sizeof(*names), cmp_str);
	printf("env_names=");
	for (size_t i = 0; i < n; i++) {
		printf("%s%s", i ? "," : "", names[i] ? names[i] : "?");
		free(names[i]);
	}
	printf("\n");
	free(names);
}

int main(void)
{
	gid_t groups[256];
	int ngroups = getgroups(256, groups);
	mode_t mask = umask(0);
	char cwd[PATH_MAX];
	pid_t pid = getpid();

	umask(mask);
	printf("pid=%d\n", (int)pid);
	printf("ppid=%d\n", (int)getppid());
	printf("uid=%d\n", (int)getuid());
	printf("euid=%d\n", (int)geteuid());
	printf("gid=%d\n", (int)getgid());
	printf("egid=%d\n", (int)getegid());
	printf("groups=");
	for (int i = 0; i < ngroups; i++)
		printf("%s%d", i ? "," : "", (int)groups[i]);
	printf("\n");
	printf("umask=%04o\n", (unsigned)mask);
	printf("cwd=%s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	print_fds();
	print_status_field("SigBlk");
	print_status_field("SigIgn");
	print_rlimit("nofile", RLIMIT_NOFILE);
	print_rlimit("core", RLIMIT_CORE);
	printf("sid_is_pid=%d\n", getsid(0) == pid);
	printf("pgid_is_pid=%d\n", getpgid(0) == pid);
	printf("pgid_is_sid=%d\n", getpgid(0) == getsid(0));
	print_status_field("NoNewPrivs");
	print_status_field("CapEff");
	print_env_names();
	return 0;
}
