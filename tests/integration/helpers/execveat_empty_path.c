/*
 * execveat_empty_path: execveat(fd, "", ..., AT_EMPTY_PATH) of /bin/echo, first through an
 * O_PATH fd in a child, then through an O_RDONLY|O_CLOEXEC fd in the process itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static void exec_fd(int flags, char *word)
{
	char *const argv[] = {"echo", word, NULL};
	int fd = open("/bin/echo", flags);

	if (fd < 0)
		DIE("open /bin/echo");
	syscall(SYS_execveat, fd, "", argv, environ, AT_EMPTY_PATH);
	printf("execveat %s failed: %s\n", word, strerrorname_np(errno));
	fflush(stdout);
	_exit(97);
}

int main(void)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		DIE("fork");
	if (pid == 0)
		exec_fd(O_PATH, "empty-path-opath");
	if (waitpid(pid, &status, 0) != pid)
		DIE("waitpid");
	print_status("child", status);
	exec_fd(O_RDONLY | O_CLOEXEC, "empty-path-cloexec");
}
