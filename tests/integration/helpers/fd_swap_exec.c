/*
 * fd_swap_exec: N times, a child execs /dev/fd/50 holding /usr/bin/true while another of its
 * threads keeps dup2()ing /usr/bin/env and /usr/bin/true over fd 50. A rule that grants a
 * name to /usr/bin/true must never see it reach env: prints "leaks=K ran=R", the number of runs
 * whose output held the name's value. Usage: fd_swap_exec N MARKER
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int fd_true, fd_env;

static void *swap(void *arg)
{
	(void)arg;
	for (;;) {
		dup2(fd_env, 50);
		dup2(fd_true, 50);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[1]), leaks = 0, ran = 0;
	for (int i = 0; i < n; i++) {
		int p[2];
		if (pipe(p) < 0)
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			dup2(p[1], 1);
			close(p[0]);
			fd_true = open("/usr/bin/true", O_RDONLY | O_CLOEXEC);
			fd_env = open("/usr/bin/env", O_RDONLY | O_CLOEXEC);
			if (fd_true < 0 || fd_env < 0 || dup2(fd_true, 50) < 0)
				_exit(1);
			pthread_t t;
			if (pthread_create(&t, NULL, swap, NULL) != 0)
				_exit(98); /* no race to run: counted as a failure below */
			char *const args[] = {"probe", NULL};
			execve("/dev/fd/50", args, environ);
			_exit(127);
		}
		close(p[1]);
		char buf[65536];
		size_t got = 0;
		ssize_t r;
		while ((r = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)r;
		buf[got] = 0;
		close(p[0]);
		int st;
		if (waitpid(pid, &st, 0) != pid) {
			perror("fd_swap_exec: waitpid");
			return 1;
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 98) {
			fprintf(stderr, "fd_swap_exec: pthread_create failed\n");
			return 1;
		}
		leaks += strstr(buf, argv[2]) != NULL;
		ran += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	/* ran: execs that went through (a refused one exits 127), so that a run where every
	 * exec failed cannot pass as one without leaks. */
	printf("leaks=%d ran=%d\n", leaks, ran);
	return 0;
}
