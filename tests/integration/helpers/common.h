/* Shared by the integration-test helpers: status printing and error exits. */
#ifndef RD_ITEST_COMMON_H
#define RD_ITEST_COMMON_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Prints "FUNCTION: WHAT: strerror" and exits 99, a status no case expects. */
#define DIE(what)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "%s: %s: %s\n", __func__, (what), strerror(errno));                \
		exit(99);                                                                          \
	} while (0)

/* "exited N" or "killed SIGNAME", as the caller of waitpid sees it. */
static inline void print_status(const char *label, int status)
{
	if (WIFEXITED(status))
		printf("%s=exited %d\n", label, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		printf("%s=killed %s%s\n", label, sigabbrev_np(WTERMSIG(status)),
		       WCOREDUMP(status) ? " core" : "");
	else
		printf("%s=other 0x%x\n", label, (unsigned)status);
	fflush(stdout);
}

#endif
