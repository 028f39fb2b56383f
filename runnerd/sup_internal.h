/* The supervisor's state, shared by the loop (supervisor.c) and the exec path (exec.c). Not
 * an interface: both files are the supervisor. */
#ifndef RD_SUP_INTERNAL_H
#define RD_SUP_INTERNAL_H

#include "launch.h"
#include "supervisor.h"

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

enum src_type { SRC_LISTENER, SRC_SIGNAL, SRC_STATUS, SRC_CTL, SRC_TIMER };

struct src {
	enum src_type type;
	struct cmd *cmd;
};

/* One intercepted exec, from the trap to the stub's exit. */
enum cmd_state {
	C_STOPPING, /* answered (ADDFD_FLAG_SEND) after PTRACE_INTERRUPT: waiting for the stop */
	C_RETRAP,   /* registers rewritten: waiting for the stub's execveat to trap */
	C_EXEC,     /* execveat let through: waiting for PTRACE_EVENT_EXEC */
	C_RUNNING,  /* detached: the stub mirrors the command */
	C_ABORTED,  /* the caller died or misbehaved during the handoff */
};

struct cmd {
	struct cmd *next;
	uint64_t id;
	pid_t tid, tgid;
	enum cmd_state state;
	uint64_t empty_path, argv_addr;
	int stub_in_task, ctl_target;
	struct rd_sandbox sb;
	int ctl_fd;
	struct src status_src, ctl_src, timer_src;
	int timer_fd;          /* timeout_s: -1 if none */
	unsigned kill_grace_s; /* from SIGTERM to SIGKILL */
	bool timed_out;        /* SIGTERM sent for the timeout: the caller sees 124 */
	const char *killed; /* why runnerd killed the sandbox, for the audit; NULL if it did not */
	bool reaped, status_known, joined_pgrp;
	int status;
	struct timespec start;
};

struct sup {
	struct rd_session *s;
	int epfd, sigfd, listener;
	bool agent_done;
	int agent_status;
	struct cmd *cmds;
	uint64_t next_id;
	dev_t stub_dev;
	ino_t stub_ino;
	struct seccomp_notif *notif;
	size_t notif_size;
	bool warned_ptrace, warned_ask, warned_masks;
	pid_t sid;
	bool userns;
	struct stat root_st;
	ino_t mntns;
	/* A sandbox made while idle, waiting for the next command: its clone and mounts are
	 * off the exec path. reaper < 0: none. */
	struct rd_sandbox spare;
	bool spare_failed;
	/* What spares put in place ahead of time: the masks (for preset_home), network and filter
	 * of a command no rule gives its own. preset_off: a spare died applying it, so spares
	 * are made without one from then on. preset_unfit: the last plan asked for something
	 * else, so the next spare is a plain one, which any plan can use. */
	struct rd_sandbox_preset preset;
	struct rd_strv preset_masks;
	char *preset_home;
	bool preset_off, preset_unfit;
	/* Masked paths that existed when the session started, and what they were then. */
	struct pin {
		char *path;
		dev_t dev;
		ino_t ino;
	} * pins;
	size_t n_pins;
	/* The home directory of the last caller uid seen, for "~/" in masks. */
	uid_t home_uid;
	char *home;
	struct src listener_src, signal_src;
};

void rd_sup_log(struct sup *u, const char *fmt, ...) _printf_(2, 3);
double rd_ms_since(const struct timespec *t0);
struct cmd *rd_sup_find_tid(struct sup *u, pid_t tid);
void rd_sup_watch(struct sup *u, int fd, struct src *src);
void rd_sup_unwatch(struct sup *u, int *fd);
void rd_sup_kill_sandbox(struct cmd *c);
void rd_sup_cmd_free_if_done(struct sup *u, struct cmd *c);
void rd_sup_cmd_abort(struct sup *u, struct cmd *c, const char *why);

/* exec.c: one trapped exec, from the notification to the handoff's first step. */
void rd_sup_handle_exec(struct sup *u, const struct seccomp_notif *n);
/* exec.c: make the next spare sandbox if there is none. */
void rd_sup_make_spare(struct sup *u);
/* exec.c: record the masked paths as they are now (see mask_tampered). */
void rd_sup_pin_masks(struct sup *u);

#endif
