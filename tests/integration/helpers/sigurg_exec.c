/*
 * sigurg_exec [restart|norestart]: fork + execve of "sh -c 'echo I >> FILE'" 20 times while
 * signals keep arriving: each child sets a 1 ms SIGURG timer on itself before it calls execve,
 * with a handler installed with SA_RESTART (as Go's runtime does) or without, and the parent
 * sends the child SIGURG every millisecond until it has been reaped.
 *
 * restart: prints "runs=20 lines=20 bad=0": each exec ran its command exactly once.
 * norestart: an exec may fail with EINTR under a seccomp supervisor (the kernel's wait before
 * the supervisor has received the notification is interruptible, docs/kernel-notes.md), but
 * no command may ever run twice and no exec may fail otherwise; prints "dups=0 other=0".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define RUNS 20

extern char **environ;

static volatile sig_atomic_t hits;

static void on_sigurg(int sig)
{
	(void)sig;
	hits++;
}

static void child(const char *file, int restart, int index)
{
	char idx[16];
	snprintf(idx, sizeof(idx), "%d", index);
	char *const argv[] = {"sh", "-c", "echo $2 >> \"$1\"", "sh", (char *)file, idx, NULL};
	struct sigaction sa = {.sa_handler = on_sigurg, .sa_flags = restart ? SA_RESTART : 0};
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGURG};
	struct itimerspec its = {.it_interval = {0, 1000000}, .it_value = {0, 1000000}};
	struct timespec pause_ns = {0, 3000000};
	timer_t timer;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGURG, &sa, NULL) != 0)
		_exit(96);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0 ||
	    timer_settime(timer, 0, &its, NULL) != 0)
		_exit(95);
	/* Let a few signals land before the exec as well. */
	while (nanosleep(&pause_ns, &pause_ns) != 0 && errno == EINTR)
		;
	execve("/bin/sh", argv, environ);
	_exit(errno == EINTR ? 126 : 127);
}

int main(int argc, char **argv)
{
	int restart = argc < 2 || strcmp(argv[1], "norestart") != 0;
	int seen[RUNS] = {0}, dups = 0, other = 0;
	char file[] = "/tmp/rd-itest-sigurg.XXXXXX";
	struct timespec ms = {0, 1000000};
	int fd = mkstemp(file), bad = 0;
	size_t lines = 0;

	if (fd < 0)
		DIE("mkstemp");
	close(fd);
	for (int i = 0; i < RUNS; i++) {
		int status;
		pid_t pid, r;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			DIE("fork");
		if (pid == 0)
			child(file, restart, i);
		while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
			kill(pid, SIGURG);
			nanosleep(&ms, NULL);
		}
		if (r != pid)
			DIE("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (restart)
				print_status("bad_child", status);
			bad++;
			other += !(WIFEXITED(status) && WEXITSTATUS(status) == 126);
		}
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		DIE("open");
	FILE *f = fdopen(fd, "r");
	int v;
	while (f && fscanf(f, "%d", &v) == 1) {
		lines++;
		if (v >= 0 && v < RUNS && seen[v]++)
			dups++;
	}
	if (f)
		fclose(f);
	unlink(file);
	if (!restart) {
		/* Some ran (not every exec failed with EINTR), and each one that did ran once. */
		int ran = lines > 0 && lines == (size_t)(RUNS - bad);
		printf("dups=%d other=%d ran=%s\n", dups, other, ran ? "yes" : "no");
		return dups == 0 && other == 0 && ran ? 0 : 1;
	}
	printf("runs=%d lines=%zu bad=%d\n", RUNS, lines, bad);
	return lines == RUNS && bad == 0 && dups == 0 ? 0 : 1;
}
