/*
 * script_caller: execve of "#!" scripts written to a temp dir: a plain /bin/sh script, one with
 * an interpreter argument, one whose interpreter is itself a script (two levels), and one that
 * exits non-zero. Each runs in a forked child; the parent prints how it ended.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static char dir[] = "/tmp/rd-itest-script.XXXXXX";

static void write_script(const char *name, const char *text, char *path, size_t size)
{
	int fd;

	snprintf(path, size, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0)
		DIE("open script");
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		DIE("write script");
	close(fd);
}

static void run(const char *label, const char *path, char *arg)
{
	char *const argv[] = {(char *)path, arg, NULL};
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		DIE("fork");
	if (pid == 0) {
		execve(path, argv, environ);
		printf("%s: execve failed: %s\n", label, strerrorname_np(errno));
		fflush(stdout);
		_exit(97);
	}
	if (waitpid(pid, &status, 0) != pid)
		DIE("waitpid");
	print_status(label, status);
}

int main(void)
{
	char s1[256], s2[256], s3[256], interp[256], s4[256], text[512];

	if (!mkdtemp(dir))
		DIE("mkdtemp");
	write_script("plain.sh", "#!/bin/sh\necho \"plain: $# args: $1\"\n", s1, sizeof(s1));
	write_script("witharg.sh", "#!/bin/sh -u\necho \"witharg: ${1}\"\necho \"$unset_var\"\n",
	             s2, sizeof(s2));
	write_script("interp.sh",
	             "#!/bin/sh\necho \"interp: $# args: ${1##*/} $2\"\n"
	             "while read -r line; do case $line in '#!'*) continue ;; esac\n"
	             "echo \"  line: $line\"; done < \"$1\"\n",
	             interp, sizeof(interp));
	snprintf(text, sizeof(text), "#!%s\nfirst line\nsecond line\n", interp);
	write_script("nested.sh", text, s3, sizeof(s3));
	write_script("exit3.sh", "#!/bin/sh\necho exiting 3\nexit 3\n", s4, sizeof(s4));

	run("plain", s1, "a b");
	run("witharg", s2, "x");
	run("nested", s3, "arg");
	run("exit3", s4, NULL);

	unlink(s1);
	unlink(s2);
	unlink(s3);
	unlink(s4);
	unlink(interp);
	rmdir(dir);
	return 0;
}
