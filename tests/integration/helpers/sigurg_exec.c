/*
 * sigurg_exec: fork + execve of "sh -c 'echo x >> FILE'" 20 times while signals keep arriving:
 * each child sets a 1 ms SIGURG timer on itself before it calls execve (with and without
 * SA_RESTART, alternately), and the parent sends the child SIGURG every millisecond until it
 * has been reaped. Prints the line count of FILE: 20 means each exec ran its command exactly
 * once, even when interrupted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
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

static void child(const char *file, int restart)
{
	char *const argv[] = {"sh", "-c", "echo x >> \"$1\"", "sh", (char *)file, NULL};
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
	_exit(127);
}

int main(void)
{
	char file[] = "/tmp/rd-itest-sigurg.XXXXXX";
	struct timespec ms = {0, 1000000};
	int fd = mkstemp(file), bad = 0;
	char buf[4096];
	size_t lines = 0;
	ssize_t n;

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
			child(file, i % 2);
		while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
			kill(pid, SIGURG);
			nanosleep(&ms, NULL);
		}
		if (r != pid)
			DIE("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			print_status("bad_child", status);
			bad++;
		}
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		DIE("open");
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	unlink(file);
	printf("runs=%d lines=%zu bad=%d\n", RUNS, lines, bad);
	return lines == RUNS && bad == 0 ? 0 : 1;
}
