/* What a trapped task set between fork and exec, which its command must inherit: credentials,
 * umask, signal mask and ignored signals, rlimits, session and process group, cwd, and every
 * fd it would have kept across exec. Read from /proc, prlimit and pidfd_getfd. */
#ifndef RD_TASK_H
#define RD_TASK_H

#include "lib/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define RD_MAX_GROUPS 65536

struct rd_fd_copy {
	int target; /* the fd number in the task */
	int fd;     /* runnerd's copy (CLOEXEC) */
};

/* What the command inherits of its caller's state at the exec: plain data (the launch plan
 * carries it to the sandbox as it is). */
struct rd_inherit {
	uid_t uid[3]; /* real, effective, saved */
	gid_t gid[3];
	mode_t umask;
	uint64_t sig_blocked, sig_ignored; /* bit n-1 = signal n, as /proc/PID/status shows */
	struct rlimit rlim[RLIM_NLIMITS];
	bool have_rlim[RLIM_NLIMITS];
};

struct rd_task {
	pid_t tid, tgid;
	struct rd_inherit inh;
	gid_t *groups; /* supplementary groups */
	size_t n_groups;
	pid_t sid, pgid;
	int pidfd;      /* on the thread group */
	int cwd_fd;     /* O_PATH of the task's cwd */
	char *cwd_path; /* its path, in runnerd's view (the caller's): from the snapshot, NULL if it
	                 * cannot be named */
	struct rd_fd_copy *fds;
	size_t n_fds;
	int max_fd; /* the highest fd number the task had open, FD_CLOEXEC or not; -1: none */
};

/* Parse /proc/TID/status (Tgid, Uid, Gid, Groups, Umask, SigBlk, SigIgn) and open a pidfd on
 * the thread group. */
int rd_task_open(pid_t tid, struct rd_task *t, struct rd_error *err) _wur_;

/* The rest: rlimits, session, process group, cwd, and a copy of every fd without FD_CLOEXEC.
 * Needs ptrace access to the task (runnerd has seized it by then). */
int rd_task_snapshot(struct rd_task *t, struct rd_error *err) _wur_;

/* One of the task's rlimits, read once (the snapshot then keeps it), or fallback if it cannot
 * be read. */
struct rlimit rd_task_rlimit(struct rd_task *t, int res, struct rlimit fallback);

/* t->cwd_fd: an O_PATH fd of the task's cwd, opened once. Returns 0 or -errno. */
int rd_task_cwd(struct rd_task *t, struct rd_error *err) _wur_;

/* A copy of one fd of the task, or -errno. */
int rd_task_getfd(const struct rd_task *t, int fd);

/* The parsing of /proc/PID/status, apart for testing. */
int rd_task_parse_status(const char *text, struct rd_task *t, struct rd_error *err) _wur_;

void rd_task_free(struct rd_task *t);

#endif
