/*
 * vfork_caller: vfork + execve of "wc -c" reading a pipe; the parent, released by the exec,
 * writes 1 MiB into the pipe. If the exec did not return to the parent until the command
 * finished, the command would wait for input that never comes: a deadlock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <unistd.h>

#include "common.h"

extern char **environ;

/* vfork + execve of wc reading fd rfd; nothing of the caller's is live across the vfork. */
static pid_t start_wc(int rfd, int wfd)
{
	char *const argv[] = {"wc", "-c", NULL};
	pid_t pid;

	fflush(stdout);
	pid = vfork();
	if (pid == 0) {
		if (dup2(rfd, STDIN_FILENO) < 0)
			_exit(98);
		close(rfd);
		close(wfd);
		execve("/usr/bin/wc", argv, environ);
		_exit(127);
	}
	return pid;
}

int main(void)
{
	static char buf[1 << 20];
	size_t off = 0;
	int p[2], status;
	pid_t pid;

	memset(buf, 'v', sizeof(buf));
	if (pipe(p) != 0)
		DIE("pipe");
	pid = start_wc(p[0], p[1]);
	if (pid < 0)
		DIE("vfork");
	close(p[0]);
	while (off < sizeof(buf)) {
		ssize_t n = write(p[1], buf + off, sizeof(buf) - off);

		if (n < 0)
			DIE("write");
		off += (size_t)n;
	}
	close(p[1]);
	if (waitpid(pid, &status, 0) != pid)
		DIE("waitpid");
	printf("written=%zu\n", off);
	print_status("status", status);
	return 0;
}
