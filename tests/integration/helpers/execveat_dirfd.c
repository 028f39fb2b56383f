/* execveat_dirfd: execveat(dirfd of /bin, "echo", ...): a path relative to a directory fd. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

int main(void)
{
	char *const argv[] = {"echo", "execveat-dirfd-ok", NULL};
	int dirfd = open("/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		DIE("open /bin");
	syscall(SYS_execveat, dirfd, "echo", argv, environ, 0);
	printf("execveat failed: %s\n", strerrorname_np(errno));
	return 97;
}
