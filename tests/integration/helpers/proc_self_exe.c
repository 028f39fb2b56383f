/* proc_self_exe: re-executes itself through /proc/self/exe once; the second run says so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <unistd.h>

#include "common.h"

extern char **environ;

int main(int argc, char **argv)
{
	char *const again[] = {"proc_self_exe-renamed", "second", NULL};

	if (argc > 1) {
		printf("%s argv0=%s argc=%d\n", argv[1], argv[0], argc);
		return 0;
	}
	printf("first\n");
	fflush(stdout);
	execve("/proc/self/exe", again, environ);
	printf("execve failed: %s\n", strerrorname_np(errno));
	return 97;
}
