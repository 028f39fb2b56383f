/* Where a trapped exec points, in the caller's view, and how the sandbox will exec the same
 * thing. Misses (ENOENT, ENOTDIR, ELOOP, EACCES on a directory or a file without an exec
 * bit, ...) are answered here with the kernel's errno without starting anything, which keeps
 * execvp's PATH search (one trapped execve per PATH entry) cheap and exact. What cannot be
 * judged without exec'ing (ENOEXEC, permission by credentials) is left to the sandbox's own
 * execve, whose errno goes back to the caller. */
#ifndef RD_RESOLVE_H
#define RD_RESOLVE_H

#include "intercept/task.h"
#include "lib/error.h"

#include <stdbool.h>
#include <sys/stat.h>

#define RD_TRANSLATED_MAX 4200

struct rd_target {
	/* For the launch plan: execveat(exec_fd, exec_path, ..., exec_flags). */
	int exec_fd; /* AT_FDCWD, a caller fd number (exec_fd_is_target), or own_fd */
	bool exec_fd_is_target;
	const char *exec_path;
	int exec_flags;
	int own_fd;    /* ours, to close after the launch; -1 if none */
	int caller_fd; /* the caller's number for the fd exec_fd copies, -1 if none */
	/* What it is: the absolute path after symlinks, for audit and rules. */
	char *resolved;
	dev_t dev;
	ino_t ino;
};

enum rd_resolve_outcome {
	RD_RESOLVED,        /* out says what to run */
	RD_RESOLVE_MISS,    /* the kernel's own exec would fail with *e: answer that, say nothing */
	RD_RESOLVE_REFUSED, /* runnerd will not run it as the caller asks (a /proc magic link it
	                     * cannot follow as the caller, "..", or the caller's cwd cannot be
	                     * looked at): refuse with *e, err says why */
};

/* Resolve path (as passed to execve, or execveat with dirfd and flags) for task t. t->cwd_fd
 * is opened here if it is not yet. *e is the errno the caller's exec gets unless resolved. */
enum rd_resolve_outcome rd_resolve(struct rd_task *t, int dirfd, const char *path, int flags,
                                   struct rd_target *out, int *e, struct rd_error *err) _wur_;

/* Once the caller's fds are known (rd_task_snapshot): use the caller's own fd number when
 * the command inherits that fd anyway. */
void rd_target_bind(const struct rd_task *t, struct rd_target *tg);

void rd_target_free(struct rd_target *tg);

#endif
