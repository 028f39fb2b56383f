/* execbench: what one exec costs, seen from the process that starts it.
 *
 *   execbench [-w WARMUP] [-o FILE] [-f FDS] [-t] fork|posix_spawn N [COMMAND [ARG...]]
 *   execbench parallel N [COMMAND [ARG...]]
 *
 * fork and posix_spawn run N times "start a child that runs COMMAND, wait for it" and time each
 * one with CLOCK_MONOTONIC, from just before fork()/posix_spawn() to just after waitpid().
 * WARMUP more runs (default 10) come first and are not counted. It prints the median, p10 and
 * p90 in microseconds (nearest rank) and, with -o, writes every counted sample to FILE, one a
 * line, in microseconds. posix_spawn is glibc's, which clones with CLONE_VFORK: the path
 * Python's subprocess and Node's child_process take.
 *
 * parallel starts N children at once (fork + execve), prints its own VmRSS and VmHWM while
 * they all run, then waits for them.
 *
 * -f FDS: execbench holds FDS more fds (of /dev/null, close-on-exec, as most programs open
 * theirs) while it runs the children. -t: each child has a new pseudo-terminal as its stdin,
 * stdout and stderr (fork only); execbench holds its master and reads what comes.
 *
 * COMMAND defaults to /bin/true. A name without a slash is looked up in PATH once, before any
 * timing. execbench exits 1 if a child fails, 2 on a usage error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char *default_argv[] = {"/bin/true", NULL};
static int tty_slave = -1; /* -t */

static void usage(FILE *f)
{
	fprintf(f, "usage: execbench [-w WARMUP] [-o FILE] [-f FDS] [-t] fork|posix_spawn N "
	           "[COMMAND [ARG...]]\n"
	           "       execbench parallel N [COMMAND [ARG...]]\n");
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long parse_count(const char *s, long min)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > 10000000)
		return -1;
	return v;
}

/* The file execve would run for NAME: NAME itself if it has a slash, else the first executable
 * regular file along PATH. */
static char *resolve(const char *name)
{
	if (strchr(name, '/'))
		return strdup(name);
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char *dirs = strdup(path);
	if (!dirs)
		return NULL;
	char *found = NULL, *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		struct stat st;
		if (snprintf(cand, sizeof(cand), "%s/%s", *d ? d : ".", name) >= (int)sizeof(cand))
			continue;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			found = strdup(cand);
	}
	free(dirs);
	return found;
}

/* Starts one child running PATH with ARGV; returns its pid, or -1 with errno set. */
static pid_t spawn(int spawn_mode, const char *path, char *const argv[])
{
	if (spawn_mode) {
		pid_t pid;
		int r = posix_spawn(&pid, path, NULL, NULL, argv, environ);
		if (r) {
			errno = r;
			return -1;
		}
		return pid;
	}
	pid_t pid = fork();
	if (pid == 0) {
		if (tty_slave >= 0 &&
		    (dup2(tty_slave, 0) < 0 || dup2(tty_slave, 1) < 0 || dup2(tty_slave, 2) < 0))
			_exit(126);
		execve(path, argv, environ);
		_exit(127);
	}
	return pid;
}

/* -t: a pseudo-terminal for the children, its master drained as they go. */
static int tty_master = -1;

static int open_tty(void)
{
	tty_master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty_master < 0 || grantpt(tty_master) < 0 || unlockpt(tty_master) < 0) {
		perror("execbench: a pseudo-terminal");
		return -1;
	}
	const char *name = ptsname(tty_master);
	tty_slave = name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (tty_slave < 0) {
		perror("execbench: the pseudo-terminal's slave");
		return -1;
	}
	fcntl(tty_master, F_SETFL, O_NONBLOCK);
	return 0;
}

static void drain_tty(void)
{
	char buf[4096];
	while (tty_master >= 0 && read(tty_master, buf, sizeof(buf)) > 0)
		;
}

static int wait_ok(pid_t pid, const char *path)
{
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("execbench: waitpid");
			return -1;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		fprintf(stderr, "execbench: %s exited with status %d\n", path, WEXITSTATUS(status));
	else
		fprintf(stderr, "execbench: %s killed by signal %d\n", path, WTERMSIG(status));
	return -1;
}

/* PATH then ARGV[1..], for the report line. */
static void print_cmd(const char *path, char *const argv[])
{
	fputs(path, stdout);
	for (int i = 1; argv[i]; i++)
		printf(" %s", argv[i]);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest rank: the smallest sample with at least P percent of the samples at or below it. */
static double pct_us(const int64_t *sorted, long n, int p)
{
	long rank = (p * n + 99) / 100;
	if (rank < 1)
		rank = 1;
	return (double)sorted[rank - 1] / 1000.0;
}

static int run_timed(int spawn_mode, long n, long warmup, const char *out, const char *path,
                     char *const argv[])
{
	int64_t *ns = calloc((size_t)n, sizeof(*ns));
	if (!ns) {
		perror("execbench");
		return 1;
	}
	for (long i = -warmup; i < n; i++) {
		int64_t t0 = now_ns();
		pid_t pid = spawn(spawn_mode, path, argv);
		if (pid < 0) {
			fprintf(stderr, "execbench: %s %s: %s\n",
			        spawn_mode ? "posix_spawn" : "fork", path, strerror(errno));
			free(ns);
			return 1;
		}
		if (wait_ok(pid, path) < 0) {
			free(ns);
			return 1;
		}
		int64_t t1 = now_ns();
		if (i >= 0)
			ns[i] = t1 - t0;
		drain_tty();
	}
	if (out) {
		FILE *f = fopen(out, "w");
		if (!f) {
			fprintf(stderr, "execbench: %s: %s\n", out, strerror(errno));
			free(ns);
			return 1;
		}
		for (long i = 0; i < n; i++)
			fprintf(f, "%.1f\n", (double)ns[i] / 1000.0);
		if (fclose(f) != 0) {
			fprintf(stderr, "execbench: %s: %s\n", out, strerror(errno));
			free(ns);
			return 1;
		}
	}
	qsort(ns, (size_t)n, sizeof(*ns), cmp_i64);
	printf("%s ", spawn_mode ? "posix_spawn" : "fork");
	print_cmd(path, argv);
	printf(": n=%ld median=%.1f p10=%.1f p90=%.1f us\n", n, pct_us(ns, n, 50),
	       pct_us(ns, n, 10), pct_us(ns, n, 90));
	free(ns);
	return 0;
}

/* VmRSS and VmHWM of this process, in KiB. */
static void self_rss(long *rss, long *hwm)
{
	char line[256];
	*rss = *hwm = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmRSS:", 6))
			*rss = strtol(line + 6, NULL, 10);
		else if (!strncmp(line, "VmHWM:", 6))
			*hwm = strtol(line + 6, NULL, 10);
	}
	fclose(f);
}

static int run_parallel(long n, const char *path, char *const argv[])
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	if (!pids) {
		perror("execbench");
		return 1;
	}
	int failed = 0;
	long started = 0;
	int64_t t0 = now_ns();
	for (; started < n; started++) {
		pids[started] = spawn(0, path, argv);
		if (pids[started] < 0) {
			fprintf(stderr, "execbench: fork %s: %s\n", path, strerror(errno));
			failed = 1;
			break;
		}
	}
	int64_t t1 = now_ns();
	long rss, hwm;
	self_rss(&rss, &hwm);
	printf("parallel %s: started %ld in %.1f ms; execbench VmRSS=%ld KiB VmHWM=%ld KiB\n", path,
	       started, (double)(t1 - t0) / 1e6, rss, hwm);
	fflush(stdout);
	for (long i = 0; i < started; i++)
		if (wait_ok(pids[i], path) < 0)
			failed = 1;
	printf("parallel %s: all %ld done after %.1f ms\n", path, started,
	       (double)(now_ns() - t0) / 1e6);
	free(pids);
	return failed;
}

int main(int argc, char **argv)
{
	long warmup = 10;
	const char *out = NULL;
	int opt;
	long fds = 0;
	bool tty = false;
	while ((opt = getopt(argc, argv, "+w:o:f:th")) != -1) {
		switch (opt) {
		case 'f':
			fds = parse_count(optarg, 0);
			if (fds < 0) {
				fprintf(stderr, "execbench: bad fd count: %s\n", optarg);
				return 2;
			}
			break;
		case 't':
			tty = true;
			break;
		case 'w':
			warmup = parse_count(optarg, 0);
			if (warmup < 0) {
				fprintf(stderr, "execbench: bad warm-up count: %s\n", optarg);
				return 2;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	const char *mode = argv[optind];
	long n = parse_count(argv[optind + 1], 1);
	if (n < 0) {
		fprintf(stderr, "execbench: bad count: %s\n", argv[optind + 1]);
		return 2;
	}
	char **cmd = argc - optind > 2 ? argv + optind + 2 : default_argv;
	char *path = resolve(cmd[0]);
	if (!path) {
		fprintf(stderr, "execbench: %s: not found in PATH\n", cmd[0]);
		return 2;
	}
	for (long i = 0; i < fds; i++)
		if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0) {
			perror("execbench: -f: opening /dev/null");
			return 2;
		}
	if (tty && (strcmp(mode, "fork") || open_tty() < 0)) {
		fprintf(stderr, "execbench: -t needs fork, and a pseudo-terminal\n");
		return 2;
	}
	int r;
	if (!strcmp(mode, "fork"))
		r = run_timed(0, n, warmup, out, path, cmd);
	else if (!strcmp(mode, "posix_spawn"))
		r = run_timed(1, n, warmup, out, path, cmd);
	else if (!strcmp(mode, "parallel"))
		r = run_parallel(n, path, cmd);
	else {
		fprintf(stderr, "execbench: unknown mode: %s\n", mode);
		usage(stderr);
		r = 2;
	}
	free(path);
	return r;
}
