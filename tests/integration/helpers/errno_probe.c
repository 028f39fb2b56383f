/*
 * errno_probe: execve and execveat calls that must fail, each in a forked child; prints the
 * errno name each one failed with, or how the child ended if the exec unexpectedly worked.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

enum how { EXECVE, EXECVEAT };

struct exec_case {
	const char *label;
	enum how how;
	int dirfd;
	const char *path;
	char **argv;
	char **envp;
	int flags;
};

static char dir[] = "/tmp/rd-itest-errno.XXXXXX";

static char *in_dir(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		DIE("asprintf");
	return path;
}

static char *make_file(const char *name, const char *text, mode_t mode)
{
	char *path = in_dir(name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		DIE("open");
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		DIE("write");
	close(fd);
	if (chmod(path, mode) != 0)
		DIE("chmod");
	return path;
}

static void try_exec(const struct exec_case *c)
{
	char buf[64] = "";
	int p[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		DIE("pipe2");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		DIE("fork");
	if (pid == 0) {
		const char *name;

		close(p[0]);
		if (c->how == EXECVE)
			syscall(SYS_execve, c->path, c->argv, c->envp);
		else
			syscall(SYS_execveat, c->dirfd, c->path, c->argv, c->envp, c->flags);
		name = strerrorname_np(errno);
		if (write(p[1], name, strlen(name)) < 0)
			_exit(98);
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid)
		DIE("waitpid");
	if (n > 0) {
		buf[n] = '\0';
		printf("%s=%s\n", c->label, buf);
		fflush(stdout);
	} else {
		char label[128];

		snprintf(label, sizeof(label), "%s=exec-succeeded", c->label);
		print_status(label, status);
	}
}

int main(void)
{
	char *argv_true[] = {"true", NULL};
	char *argv_badptr[] = {"true", (char *)1, NULL};
	char *env_badptr[] = {"A=1", (char *)1, NULL};
	char *argv_big[] = {"true", NULL, NULL};
	char *long_path, *plain, *garbage, *loop_a, *loop_b, *busy, *no_interp, *dir_interp;
	char *script;
	int busy_fd, script_fd, file_fd;
	size_t long_len = PATH_MAX + 100;

	if (!mkdtemp(dir))
		DIE("mkdtemp");

	argv_big[1] = malloc(131073);
	if (!argv_big[1])
		DIE("malloc");
	memset(argv_big[1], 'a', 131072);
	argv_big[1][131072] = '\0';

	long_path = malloc(long_len + 1);
	if (!long_path)
		DIE("malloc");
	for (size_t i = 0; i < long_len; i++)
		long_path[i] = i % 2 ? '.' : '/';
	long_path[long_len] = '\0';

	plain = make_file("plain", "#!/bin/sh\necho should-not-run\n", 0644);
	garbage = make_file("garbage", "\x01\x02\x03 not an executable\n", 0755);
	loop_a = in_dir("loop-a");
	loop_b = in_dir("loop-b");
	if (symlink(loop_b, loop_a) != 0 || symlink(loop_a, loop_b) != 0)
		DIE("symlink");
	busy = make_file("busy", "#!/bin/sh\necho should-not-run\n", 0755);
	busy_fd = open(busy, O_WRONLY | O_CLOEXEC);
	if (busy_fd < 0)
		DIE("open busy");
	no_interp = make_file("no-interp", "#!/nonexistent/rd-interp\n", 0755);
	dir_interp = make_file("dir-interp", "#!/tmp\n", 0755);
	script = make_file("script", "#!/bin/sh\necho should-not-run\n", 0755);
	script_fd = open(script, O_RDONLY | O_CLOEXEC);
	file_fd = open(plain, O_RDONLY | O_CLOEXEC);
	if (script_fd < 0 || file_fd < 0)
		DIE("open script");

	const struct exec_case cases[] = {
	    {"missing_file", EXECVE, 0, "/nonexistent-rd/prog", argv_true, environ, 0},
	    {"directory", EXECVE, 0, "/tmp", argv_true, environ, 0},
	    {"not_executable", EXECVE, 0, plain, argv_true, environ, 0},
	    {"component_is_file", EXECVE, 0, "/etc/passwd/x", argv_true, environ, 0},
	    {"garbage_content", EXECVE, 0, garbage, argv_true, environ, 0},
	    {"symlink_loop", EXECVE, 0, loop_a, argv_true, environ, 0},
	    {"empty_path", EXECVE, 0, "", argv_true, environ, 0},
	    {"null_path", EXECVE, 0, NULL, argv_true, environ, 0},
	    {"argv_bad_pointer", EXECVE, 0, "/bin/true", argv_badptr, environ, 0},
	    {"envp_bad_pointer", EXECVE, 0, "/bin/true", argv_true, env_badptr, 0},
	    {"argv_bad_array", EXECVE, 0, "/bin/true", (char **)8, environ, 0},
	    {"argv_string_too_long", EXECVE, 0, "/bin/true", argv_big, environ, 0},
	    {"path_too_long", EXECVE, 0, long_path, argv_true, environ, 0},
	    {"text_busy", EXECVE, 0, busy, argv_true, environ, 0},
	    {"missing_interpreter", EXECVE, 0, no_interp, argv_true, environ, 0},
	    {"directory_interpreter", EXECVE, 0, dir_interp, argv_true, environ, 0},
	    {"at_bad_flags", EXECVEAT, AT_FDCWD, "/bin/true", argv_true, environ, 0x40000000},
	    {"at_bad_dirfd", EXECVEAT, 999, "true", argv_true, environ, 0},
	    {"at_dirfd_not_dir", EXECVEAT, file_fd, "true", argv_true, environ, 0},
	    {"at_empty_path_no_flag", EXECVEAT, script_fd, "", argv_true, environ, 0},
	    {"at_cloexec_script", EXECVEAT, script_fd, "", argv_true, environ, AT_EMPTY_PATH},
	    {"at_nofollow_symlink", EXECVEAT, AT_FDCWD, loop_a, argv_true, environ,
	     AT_SYMLINK_NOFOLLOW},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		try_exec(&cases[i]);

	close(busy_fd);
	close(script_fd);
	close(file_fd);
	unlink(plain);
	unlink(garbage);
	unlink(loop_a);
	unlink(loop_b);
	unlink(busy);
	unlink(no_interp);
	unlink(dir_interp);
	unlink(script);
	rmdir(dir);
	return 0;
}
