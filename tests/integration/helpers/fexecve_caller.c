/*
 * fexecve_caller: fexecve of /bin/sh through an fd opened without O_CLOEXEC. The fd stays open
 * across the exec, so the shell still has it at the same number.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

int main(void)
{
	char script[128];
	char *argv[] = {"sh", "-c", script, "fexecve-arg0", "a b", NULL};
	int fd = open("/bin/sh", O_RDONLY);

	if (fd < 0)
		DIE("open /bin/sh");
	snprintf(script, sizeof(script),
	         "echo \"fexecve-ok $0 [$1]\"; if [ -e /proc/self/fd/%d ]; then echo fd-open; "
	         "else echo fd-closed; fi",
	         fd);
	fflush(stdout);
	fexecve(fd, argv, environ);
	printf("fexecve failed: %s\n", strerrorname_np(errno));
	return 97;
}
