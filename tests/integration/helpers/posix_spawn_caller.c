/*
 * posix_spawn_caller: posix_spawnp of sh with a file action that sends its stdout into a pipe;
 * prints what came through the pipe and how the child ended. glibc spawns with
 * CLONE_VM|CLONE_VFORK, so the parent is held until the exec has happened or failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <spawn.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static void spawn_and_read(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	char buf[4096];
	size_t total = 0;
	int p[2], status, err;
	ssize_t n;
	pid_t pid;

	if (pipe(p) != 0)
		DIE("pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	posix_spawn_file_actions_addclose(&fa, p[1]);
	err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (err != 0) {
		printf("spawn_error=%s\n", strerrorname_np(err));
		close(p[0]);
		return;
	}
	while ((n = read(p[0], buf + total, sizeof(buf) - 1 - total)) > 0)
		total += (size_t)n;
	buf[total] = '\0';
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid)
		DIE("waitpid");
	printf("read=[%s]\n", buf);
	print_status("status", status);
}

int main(void)
{
	char *const sh[] = {"sh", "-c", "echo spawned-out; echo spawned-err >&2; exit 6", NULL};
	char *const missing[] = {"rd-no-such-command-xyz", NULL};

	spawn_and_read(sh);
	spawn_and_read(missing);
	return 0;
}
