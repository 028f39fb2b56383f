/*
 * thread_exec: a thread other than the leader calls execve. The kernel kills the other threads
 * and the exec'ing thread takes over the leader's pid, so the caller's parent still waits for
 * the same pid.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static void *exec_thread(void *arg)
{
	char *const argv[] = {"echo", "thread-exec", NULL};

	(void)arg;
	execve("/bin/echo", argv, environ);
	printf("execve failed: %s\n", strerrorname_np(errno));
	fflush(stdout);
	_exit(97);
}

int main(void)
{
	pthread_t t;

	printf("before-exec\n");
	fflush(stdout);
	if (pthread_create(&t, NULL, exec_thread, NULL) != 0)
		DIE("pthread_create");
	for (;;)
		pause();
}
