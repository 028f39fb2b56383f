/* The supervisor's state, shared by the loop (supervisor.c) and the exec path (exec.c). Not
 * an interface: both files are the supervisor. */
#ifndef RD_SUP_INTERNAL_H
#define RD_SUP_INTERNAL_H

#include "intercept/handoff.h"
#include "intercept/reader.h"
#include "intercept/resolve.h"
#include "intercept/task.h"
#include "policy/envpolicy.h"
#include "sandbox/launch.h"
#include "supervisor/supervisor.h"

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

enum src_type {
	SRC_SIGNAL,
	SRC_CTL,
	SRC_TIMER,
	SRC_CONTROL,        /* the control socket: accept */
	SRC_CONTROL_CLIENT, /* one connection to it */
	SRC_TTY,            /* --prompt: the operator's answer on /dev/tty */
	SRC_CLIENT_TIMER,   /* idle connections, and a listener paused for lack of fds */
	SRC_ZYGOTE,         /* the zygote's answer: a spare sandbox cloned */
	SRC_SETUP,          /* a command's exec succeeded (EOF) or failed (a message) */
};

struct src {
	enum src_type type;
	struct cmd *cmd;
	struct client *client;
};

/* One exec between its trap and its launch: what was read from the caller, what was decided,
 * and the plan that follows from it. An "ask" keeps it until the answer. */
struct req {
	char *path; /* as the caller passed it */
	size_t plen;
	struct rd_task t;
	struct rd_target tg;
	struct rd_strings strs;
	struct rd_env_result env;
	struct rd_strv masks;
	struct rd_fd_map *map;
	const struct rd_rule *rule;
	struct rd_box_opts box;
	struct rd_launch_plan plan;
};

void rd_sup_req_free(struct req *q);

/* One intercepted exec, from the trap to the stub's exit. */
enum cmd_state {
	C_STOPPING,  /* answered after PTRACE_INTERRUPT: waiting for the stop */
	C_RETRAP,    /* registers rewritten: waiting for the stub's execveat to trap (and, if
	              * the command's exec is not known to have succeeded yet, for that) */
	C_EXEC,      /* execveat let through: waiting for PTRACE_EVENT_EXEC */
	C_UNDO_STOP, /* the command's exec failed: the stub's execveat answered after
	              * PTRACE_INTERRUPT, waiting for the stop */
	C_UNDO,      /* closing what was put into the caller, by syscalls run in it */
	C_RUNNING,   /* detached: the stub mirrors the command */
	C_RETURNED,  /* detached: the caller's own exec failed, with the command's errno */
	C_ABORTED,   /* the caller died or misbehaved during the handoff */
};

struct cmd {
	struct cmd *next;
	uint64_t id;
	pid_t tid, tgid;
	enum cmd_state state;
	uint64_t empty_path, argv_addr;
	int stub_in_task, ctl_target;
	struct rd_sandbox sb;
	/* The stub's control socket: runnerd's end (a copy goes to the reaper with the plan),
	 * and the stub's end until it is put into the caller. */
	int ctl_fd, ctl_peer;
	struct src ctl_src, timer_src;
	int timer_fd;          /* timeout_s: -1 if none */
	unsigned kill_grace_s; /* from SIGTERM to SIGKILL */
	bool timed_out;        /* SIGTERM sent for the timeout: the caller sees 124 */
	const char *killed; /* why runnerd killed the sandbox, for the audit; NULL if it did not */
	bool reaped, status_known, joined_pgrp;
	int status;
	struct timespec start;
	/* An "ask": the caller is handed to the stub at once, the command waits for the answer.
	 * req is held until then; timer_fd counts ask_timeout_s until then. */
	enum ask_state { ASK_NONE, ASK_PENDING, ASK_ANSWERED } ask;
	struct req *req;
	struct timespec asked; /* CLOCK_MONOTONIC */
	time_t asked_wall;     /* for the operator */
	unsigned timeout_s;    /* the command's own, armed once it runs */
	bool dead;             /* off the list, on sup.dead */
	/* The handoff runs while the command starts (an "allow" whose control fd's place in the
	 * caller was free): the stub's execveat is let through only once the command's exec
	 * has succeeded. If it failed, the caller gets its own exec back, failed with fail_errno:
	 * the registers saved at the stop, the injected fds closed by syscalls run in it. */
	bool exec_pending; /* the command's exec: not known yet (sb.setup_fd watched) */
	bool held;         /* the stub's execveat trapped, waiting for it: held_id */
	uint64_t held_id;
	int fail_errno;             /* the command's exec failed: the caller's errno */
	struct rd_saved_task saved; /* at the interrupt stop */
	int undo_fds[2][2];         /* close_range(lo, hi) to run in the caller, in order */
	int n_undo, undo_at;
	bool undo_in_syscall; /* between the syscall's entry and exit stops */
	int undo_sig;         /* a stop signal that came meanwhile, passed on at detach */
	char *path;           /* for the audit of a failure found late */
	struct src setup_src;
};

/* How an ask ended. */
enum ask_answer { ANSWER_APPROVE, ANSWER_DENY, ANSWER_TIMEOUT, ANSWER_WITHDRAWN };

/* Who answered: the control socket's peer, the terminal, or no one. */
struct answerer {
	enum { BY_NONE, BY_SOCKET, BY_TTY } via;
	uid_t uid;
	pid_t pid;
	char comm[17];
};

/* A connection to the control socket: one request, one reply. */
struct client {
	struct client *next;
	int fd;
	struct ucred cred;
	const char *refused;   /* why its request will be refused; NULL if it will not */
	struct timespec since; /* CLOCK_MONOTONIC: dropped if it says nothing for long */
	bool dead;             /* off the list, on sup.dead_clients */
	struct src src;
};

/* Answers given, so that a late one gets a clear refusal. A ring of the last ones. */
#define RD_ANSWERED_KEEP 256
struct answered {
	uint64_t id;
	char what[120];
};

struct sup {
	struct rd_session *s;
	int epfd, sigfd, listener;
	bool agent_done;
	int agent_status;
	struct cmd *cmds;
	struct cmd *dead; /* freed once the events in hand are handled */
	uint64_t next_id;
	dev_t stub_dev;
	ino_t stub_ino;
	struct seccomp_notif *notif;
	size_t notif_size;
	bool warned_ptrace, warned_masks;
	pid_t sid;
	bool userns;
	struct stat root_st;
	ino_t mntns;
	/* A sandbox made while idle, waiting for the next command: its clone and mounts are
	 * off the exec path. reaper < 0: none. */
	struct rd_sandbox spare;
	bool spare_failed;
	/* Clones every reaper, so that runnerd does not fork per exec (sandbox/zygote.h). Once
	 * lost, runnerd clones them itself again. */
	struct rd_zygote zygote;
	bool warned_zygote;
	struct src zygote_src;
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
	struct src signal_src;
	/* Approvals: the control socket (-1 if the profile has no "ask" rule), the terminal
	 * (--prompt, else -1), and the ask shown there now (0: none). */
	int control_fd, tty_fd;
	struct src control_src, tty_src;
	uint64_t tty_asking;
	bool tty_truncated; /* the ask shown was cut short: it can only be denied there */
	char tty_line[64];
	size_t tty_len;
	size_t n_pending, n_clients, n_refused;
	struct client *clients, *dead_clients;
	int client_timer;
	struct src client_timer_src;
	bool client_timer_armed, control_paused;
	unsigned long n_control_refused;
	struct answered answered[RD_ANSWERED_KEEP];
	size_t n_answered;
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
/* exec.c: the zygote answered (or its socket closed): the spare asked of it is ready. */
void rd_sup_spare_ready(struct sup *u);
/* exec.c: the command of a pipelined handoff exec'd, or failed to. */
void rd_sup_exec_result(struct sup *u, struct cmd *c);
/* supervisor.c: give the caller of a pipelined handoff its own exec back, failed with
 * c->fail_errno, once the command's exec has failed. */
void rd_sup_undo(struct sup *u, struct cmd *c);
/* exec.c: say once that the zygote is gone, if it is, and stop watching its socket. */
void rd_sup_zygote_check(struct sup *u);
/* exec.c: record the masked paths as they are now (see mask_tampered). */
void rd_sup_pin_masks(struct sup *u);
/* exec.c: start an approved ask's command; on failure (-1) the stub tells the caller why. */
int rd_sup_launch_approved(struct sup *u, struct cmd *c);
/* exec.c: arm c->timer_fd for secs (a new timer if it has none); -errno if it cannot be. */
int rd_sup_arm_timer(struct sup *u, struct cmd *c, unsigned secs);

/* ask.c: the end of an ask, from whichever source: audited, then the command runs or the
 * stub tells the caller why not. 1: done as given; -1: an approval that did not run the
 * command (the audit could not be written, or the launch failed); 0: it was not pending. */
int rd_sup_ask_answer(struct sup *u, struct cmd *c, enum ask_answer a, const struct answerer *by,
                      const char *reason);
/* ask.c: a pending ask's stub got a signal (value), or its caller died (sig 0). */
void rd_sup_ask_signal(struct sup *u, struct cmd *c, int sig);
/* ask.c: the stub of c exits with status (a wait status, as the command's would be). */
void rd_sup_stub_exit(struct cmd *c, int status);
/* ask.c: the stub of c says text (one line) on say_fd (the caller's stderr, or -1 for
 * nowhere) and exits with status. */
void rd_sup_stub_say_exit(struct sup *u, struct cmd *c, int say_fd, const char *text, int status);
/* exec.c: the caller's stderr as runnerd holds it (a copy from the snapshot), or -1. */
int rd_sup_caller_stderr(const struct req *q);

/* control.c: the control socket and the terminal prompt. */
/* Watch the control socket (and its clients' timer); 0 or -errno. */
int rd_control_open(struct sup *u);
void rd_control_accept(struct sup *u);
void rd_control_client(struct sup *u, struct client *cl);
void rd_control_tick(struct sup *u);
/* Free the connections dropped during this round of events. */
void rd_control_reap(struct sup *u);
void rd_control_tty(struct sup *u);
/* A new pending ask, or one answered: show the next on the terminal. */
void rd_control_tty_update(struct sup *u);
/* The ask shown on the terminal was answered (what: how). */
void rd_control_tty_done(struct sup *u, const char *what);

#endif
