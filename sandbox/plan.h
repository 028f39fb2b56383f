/* The launch plan: everything the sandbox needs to start one command, built by the supervisor
 * and handed to the sandbox's pid 1 over a socket. Its fixed part is plain data sent as it is;
 * the arrays that follow it are listed once, in RD_PLAN_ARRAYS and RD_PLAN_STRINGS, and
 * packed and unpacked from those lists. A new setting is a field of struct rd_plan_head (or a
 * row of a list) plus its use; a new sandbox key needs not even that: the merged keys travel
 * whole, in head.box. */
#ifndef RD_PLAN_H
#define RD_PLAN_H

#include "intercept/task.h"
#include "lib/util.h"
#include "policy/box.h"

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <termios.h>

/* How the command is executed: execveat(fd, exec_path, argv, envp, exec_flags), fd being: */
enum rd_exec_via {
	RD_EXEC_CWD,    /* AT_FDCWD: exec_path relative to the caller's cwd */
	RD_EXEC_TARGET, /* one of the caller's fds, by the number it has in the command (exec_fd) */
	RD_EXEC_OWN,    /* an fd of runnerd's, passed with the plan (own_exec_fd) */
};

/* Where the command stands in sessions and process groups, as the caller did. Every sandbox is
 * a session of its own, led by its pid 1: nothing a command does with kill(2) can name a
 * process outside it, and signals from outside reach the command only through the stub. */
enum rd_pgrp_mode {
	RD_PGRP_MEMBER,  /* the caller led neither: the command is in its pid 1's group */
	RD_PGRP_OWN,     /* the caller led its own group: the command leads one too */
	RD_PGRP_SESSION, /* the caller led its own session: so does the command */
};

struct rd_fd_map {
	int fd;     /* runnerd's fd (in the sandbox: the reaper's copy) */
	int target; /* the number the command gets it at */
};

/* The fixed part, sent as it is (both ends are one build; size says so). */
struct rd_plan_head {
	uint32_t size; /* sizeof(struct rd_plan_head) */
	int32_t exec_via;
	int32_t exec_fd; /* RD_EXEC_TARGET: the number */
	int32_t exec_flags;
	struct rd_inherit inh; /* credentials, umask, signals, rlimits of the caller */
	int32_t pgrp_mode;
	/* The file the decision was made on: the command refuses to exec anything else under
	 * exec_path, or at the fd for an exec by fd (0: no check). */
	uint64_t expect_dev, expect_ino;
	/* The sandbox's user namespace maps runnerd's uid and gid alone, to themselves, and
	 * setgroups is denied there (runnerd has no CAP_SETUID and CAP_SETGID to map more). */
	uint8_t single_ids;
	/* runnerd's end of the stub's control socket comes with the plan (stub_ctl_fd): the
	 * reaper tells the stub the command's end itself (RD_STUB_EXIT), one hop sooner. */
	uint8_t has_stub_ctl;
	/* The sandbox ran a command before (launch.h, RD_REPORT_IDLE): the write end of this
	 * command's setup pipe comes with the plan (setup_fd), not from the sandbox's making. */
	uint8_t has_setup_fd;
	/* The caller's terminal, when one of its fds is on one (the first of fds 0 to 2 that is,
	 * else the first other): the command gets a pseudo-terminal of its own instead (every fd
	 * of the caller on that terminal becomes its slave), with these modes and this size, as
	 * its controlling terminal. The terminal is told by TIOCGDEV, the device of the terminal
	 * itself, which an fd opened as /dev/tty shares with /dev/pts/N (fstat tells them
	 * apart). tty_input: the caller's fd 0 is on it, so that what is typed there is the
	 * command's to read. */
	uint8_t has_tty, tty_input;
	/* The caches' layers taken off (sandbox/view.h, rd_view_no_layers): a command a rule
	 * grants a secret reads nothing other commands wrote there. */
	uint8_t no_layers;
	/* gates[0] is the git runnerd's gits run (rd_view_git_gate's real_first). */
	uint8_t git_real;
	uint64_t tty_rdev;
	struct termios tty_modes;
	struct winsize tty_size;
	/* Every sandbox key, merged (policy/box.h): network, rlimit caps, ... */
	struct rd_box_opts box;
	/* The lengths of the arrays of struct rd_launch_plan, set by whoever builds it. */
	uint32_t argc, envc, n_masks, n_fds, n_groups, filter_len, n_write, n_protect, n_gates;
};

struct rd_launch_plan {
	struct rd_plan_head h;
	const char *exec_path;
	/* The caller's cwd by its path in runnerd's view, which is the caller's: the command enters
	 * it by that path inside its sandbox, so that the kernel reports it as reachable, if it is
	 * the directory cwd_fd is (else it enters cwd_fd, as the caller could). "" if unknown. */
	const char *cwd_path;
	char *const *argv; /* NULL-terminated (unpacked) */
	char *const *envp;
	/* Absolute paths the command must not see: an empty read-only tmpfs goes over a
	 * directory, /dev/null over anything else; a path that does not exist is fine. */
	char *const *masks;
	/* A rule's own writable roots and protected paths, over the session's (sandbox/view.h,
	 * rd_view_rule); absolute. */
	char *const *write;
	char *const *protect;
	/* The gits that git's own git is covered at (sandbox/view.h, rd_view_git_gate): a command
	 * a rule grants a secret. */
	char *const *gates;
	const struct rd_fd_map *fds; /* the caller's fds the command keeps, h.n_fds of them */
	const gid_t *groups;         /* the caller's supplementary groups, h.n_groups */
	/* The command's seccomp filter (BPF), loaded after no_new_privs, just before its exec;
	 * NULL (h.filter_len 0) for none. */
	const struct sock_filter *filter;
	/* Passed with the plan, not part of its data: */
	int cwd_fd;      /* the caller's cwd */
	int stub_ctl_fd; /* h.has_stub_ctl */
	int own_exec_fd; /* RD_EXEC_OWN */
	int setup_fd;    /* h.has_setup_fd */
};

/* The arrays that follow the head, in this order: name, length field, element type. Each
 * element count is 4-byte aligned or more. */
#define RD_PLAN_ARRAYS(X)                                                                          \
	X(filter, filter_len, struct sock_filter)                                                  \
	X(groups, n_groups, gid_t)
/* Then the fds' target numbers (int, n_fds), then NUL-terminated strings: exec_path, cwd_path,
 * and the string lists below, each string after the other. */
#define RD_PLAN_STRINGS(X)                                                                         \
	X(argv, argc)                                                                              \
	X(envp, envc)                                                                              \
	X(masks, n_masks)                                                                          \
	X(write, n_write)                                                                          \
	X(protect, n_protect)                                                                      \
	X(gates, n_gates)

/* A plan as iovecs over its own memory and p's: valid as long as p is. */
struct rd_plan_blob {
	struct rd_plan_head h; /* p's head, with the lengths filled in */
	int *targets;
	struct iovec *iov;
	size_t n_iov, size;
};

/* Fill b for p. Returns 0 or -ENOMEM. */
int rd_plan_pack(const struct rd_launch_plan *p, struct rd_plan_blob *b) _wur_;
void rd_plan_blob_free(struct rd_plan_blob *b);

/* The plan in blob (size bytes, 8-byte aligned, left in place: out points into it), with its
 * pointer arrays in one allocation, *arena, which the caller frees. out's fds have their
 * targets, and fd -1: the fds come apart. Returns 0, or -EPROTO when the blob does not add up
 * (it is runnerd's own, but a count that overflows stops here), or -ENOMEM. */
int rd_plan_unpack(const void *blob, size_t size, struct rd_launch_plan *out, void **arena) _wur_;

/* How many fds lead the plan's first packet before the caller's: cwd, the stub's control
 * socket, runnerd's exec fd, the setup pipe (as the head says). */
size_t rd_plan_lead_fds(const struct rd_plan_head *h);

#endif
