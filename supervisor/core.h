/* The supervisor's state and the services every handler uses: logging, watching fds, the list
 * of commands, refusing and releasing a trapped exec, talking to a stub, timers. The loop
 * (loop.c) dispatches each event to one handler file; a handler calls the services here and
 * the handlers below it, never one above it nor the loop:
 *
 *   core -> masks -> spare -> command -> approvals -> handoff -> exec, control, prompt -> loop
 *
 * (tests/layers.py checks the order through the includes). Not an interface of the library:
 * supervisor.h is. */
#ifndef RD_SUP_CORE_H
#define RD_SUP_CORE_H

#include "intercept/handoff.h"
#include "intercept/reader.h"
#include "intercept/resolve.h"
#include "intercept/task.h"
#include "policy/envpolicy.h"
#include "sandbox/launch.h"
#include "sandbox/shadowwatch.h"
#include "supervisor/supervisor.h"

#include <limits.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

/* What an fd in the epoll set is: the loop dispatches on it. */
enum src_type {
	SRC_SIGNAL,
	SRC_CTL,            /* a stub's control socket */
	SRC_TIMER,          /* a command's timer: its timeout_s, or its ask_timeout_s */
	SRC_SETUP,          /* a command's exec succeeded (EOF) or failed (a message) */
	SRC_ZYGOTE,         /* the zygote's answer: a spare sandbox cloned */
	SRC_CONTROL,        /* the control socket: accept */
	SRC_CONTROL_CLIENT, /* one connection to it */
	SRC_CLIENT_TIMER,   /* idle connections, and a listener paused for lack of fds */
	SRC_TTY,            /* --prompt: the operator's answer on /dev/tty */
	SRC_STATUS,         /* a command's reaper reports: its end, or that it went on */
	SRC_WAKE,           /* a stopped stub not yet seen awake: wake it again */
	SRC_AGENT,          /* runnerd serve: the agent's pidfd (it is not runnerd's child) */
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
	struct rd_strv write, protect; /* the rule's own, over the session's view */
	struct rd_fd_map *map;
	const struct rd_rule *rule;
	struct rd_box_opts box;
	struct rd_launch_plan plan;
	/* A command a rule grants a secret: the directory whose .git its check took, the top of
	 * the repository its git is to take (sup_grant_reads); NULL if none. */
	char *git_top;
	bool git_top_dir; /* its .git a directory (not a file naming one elsewhere) */
	char *git_cwd;    /* where the check started: the caller's cwd */
	/* Its git directory and common directory, real paths, as the check took them (a .git
	 * file's gitdir, and the commondir there). */
	char *git_dir, *git_common;
	/* git's global configuration files (grant.c, global_files), as the check found them:
	 * missing where a command could make them (left out for git), or there. */
	bool global_open[2], global_there[2];
	/* The gits of the exec path of the git it runs, covered by git's own git (sandbox/view.h,
	 * rd_view_git_gate). */
	struct rd_strv gates;
	/* gates.v[0] is the program's git, bound where runnerd's gits run it (RD_VIEW_GIT_REAL). */
	bool git_real;
};

struct req *sup_req_new(void);
void sup_req_free(struct req *q);

/* The handoff of the caller to the stub (handoff.c). */
enum handoff_state {
	H_STOPPING,  /* answered after PTRACE_INTERRUPT: waiting for the stop */
	H_RETRAP,    /* registers rewritten: waiting for the stub's execveat to trap (and, if the
	              * command's exec is not known to have succeeded yet, for that) */
	H_EXEC,      /* execveat let through: waiting for PTRACE_EVENT_EXEC */
	H_UNDO_STOP, /* the command's exec failed: the stub's execveat answered after
	              * PTRACE_INTERRUPT, waiting for the stop */
	H_UNDO,      /* closing what was put into the caller, by syscalls run in it */
	H_RUNNING,   /* detached: the stub mirrors the command */
	H_RETURNED,  /* detached: the caller's own exec failed, with the command's errno */
	H_ABORTED,   /* the caller died or misbehaved during the handoff */
};

struct handoff {
	enum handoff_state state;
	uint64_t empty_path, argv_addr; /* the stub's execveat, as the caller will make it */
	int stub_in_task, ctl_target;   /* the stub's and the control socket's numbers there */
	/* Pipelined: the handoff runs while the command starts (an "allow" whose control fd's
	 * place in the caller was free); the stub's execveat is let through only once the
	 * command's exec has succeeded. If it failed, the caller gets its own exec back, failed
	 * with fail_errno: the registers saved at the stop, the injected fds closed by syscalls
	 * run in it. */
	bool exec_pending; /* the command's exec: not known yet (sb.setup_fd watched) */
	bool held;         /* the stub's execveat trapped, waiting for it: held_id */
	uint64_t held_id;
	int fail_errno;
	struct rd_saved_task saved; /* at the interrupt stop */
	int undo_fds[2][2];         /* close_range(lo, hi) to run in the caller, in order */
	int n_undo, undo_at;
	bool undo_in_syscall; /* between the syscall's entry and exit stops */
	int undo_sig;         /* a stop signal that came meanwhile, passed on at detach */
	struct src setup_src;
};

/* An "ask" (approvals.c): the caller is handed to the stub at once, the command waits for the
 * answer; req is held until then, and the command's timer counts ask_timeout_s. */
enum ask_state { ASK_NONE, ASK_PENDING, ASK_ANSWERED };

struct ask {
	enum ask_state state;
	struct req *req;
	struct timespec asked; /* CLOCK_MONOTONIC */
	time_t asked_wall;     /* for the operator */
};

/* The command in its sandbox, and the stub that mirrors it (command.c). */
struct run {
	struct rd_sandbox sb;
	/* The stub's control socket: runnerd's end (a copy goes to the reaper with the plan),
	 * and the stub's end until it is put into the caller. */
	int ctl_fd, ctl_peer;
	struct src ctl_src, timer_src, status_src, wake_src;
	/* The stub's process (the caller's, by pidfd), for the SIGCONT that wakes it when the
	 * command goes on after a stop by itself, or ends while the stub is stopped; opened when
	 * the stub first stops (command.c), -1 before. A wake-up is sent again by wake_timer
	 * until the stub says it has read every CONTINUED the reaper reported (continued_read,
	 * continued), or, for its end, until it has gone (sup_stub_wake). */
	int stub_pidfd, wake_timer;
	unsigned continued, continued_read;
	bool wake_for_end;
	/* The reaper's reports are read as they come: the stub has stopped once (command.c). */
	bool status_watched;
	/* An end the stub could not be told yet (its queue full): sent once it can take it. */
	bool exit_pending;
	int exit_status;
	int timer_fd;          /* -1 if none */
	unsigned timeout_s;    /* armed once the command runs; 0: none */
	unsigned kill_grace_s; /* from SIGTERM to SIGKILL */
	bool timed_out;        /* SIGTERM sent for the timeout: the caller sees 124 */
	const char *killed; /* why runnerd killed the command, for the audit; NULL if it did not */
	const char *ended;  /* why runnerd ended the sandbox after its command (its background
	                     * processes): a timeout, the session's end; NULL if it did not */
	bool reaped, status_known;
	bool left; /* other processes of its sandbox were alive as the command ended */
	/* Its end said RD_REPORT_REUSE: pid 1 stays for another plan and says so (IDLE); the
	 * sandbox then goes back to the spares (sup_spare_return). preset_gen: the spares'
	 * preset the sandbox had, when it had theirs. */
	bool reuse;
	uint64_t preset_gen;
	/* Its pid 1 reported the end with nothing of the sandbox left (not gone without a word),
	 * read at ended_at: no process of it is alive, nor can one appear. */
	bool ended_alone;
	struct timespec ended_at;
	/* Another sandbox of the session was alive at some time while this one's command ran: a
	 * process there may hold an fd of this sandbox's (its /proc, a socket of its network),
	 * through which it would reach the next command here. Its sandbox takes no other. */
	bool crowded;
	/* A rule granted its command a secret: its sandbox, after it, takes no other command (pid 1
	 * keeps what the command cost it, its children's CPU time and faults, and the pid
	 * namespace the number of processes it made). */
	bool granted;
	int status;
	struct timespec start;
};

/* One intercepted exec, from the trap to the stub's exit. */
struct cmd {
	struct cmd *next;
	uint64_t id;
	pid_t tid, tgid;
	char *path; /* as the caller passed it: for messages and the audit */
	/* For runnerd ps: argv, its strings one after the other, at most RD_CMD_ARGV_KEEP bytes
	 * of them (argv_cut: not all), and the rule that decided (-1: commands.default). */
	char *argv;
	size_t argv_len;
	bool argv_cut;
	long rule;
	char comm[16]; /* the name the command's process has, which the stub takes */
	bool dead;     /* off the list, on sup.dead */
	struct handoff ho;
	struct ask ask;
	struct run run;
};

/* Who answered an ask: the control socket's peer, the terminal, or no one. */
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
	bool dead;             /* off the list, on the control's dead list */
	struct src src;
};

/* Answers given, so that a late one gets a clear refusal. A ring of the last ones. */
#define RD_ANSWERED_KEEP 256
struct answered {
	uint64_t id;
	char what[120];
};

/* Spare sandboxes and their presets, the zygote, and the masks (spare.c, masks.c). */
struct spares {
	/* A sandbox made while idle, waiting for the next command: its clone and mounts are
	 * off the exec path. reaper < 0: none. */
	struct rd_sandbox spare;
	/* A sandbox whose command ended alone, back for another plan (sup_spare_return) while
	 * spare was taken already: the next exec takes it, so that runnerd asks for no new one
	 * as long as commands come one at a time. reaper < 0: none. */
	struct rd_sandbox idle;
	/* The last spare could not be made: the next try waits until retry_at (CLOCK_MONOTONIC),
	 * backoff_ms after the failure, which doubles while spares keep failing. */
	bool failed, said_failed;
	struct timespec retry_at;
	unsigned backoff_ms;
	/* Clones every reaper, so that runnerd does not fork per exec (sandbox/zygote.h). Once
	 * lost, runnerd clones them itself again. */
	struct rd_zygote zygote;
	bool warned_zygote;
	struct src zygote_src;
	/* What spares put in place ahead of time: the masks (for preset_home), network and filter
	 * of a command no rule gives its own. off: a spare died applying it, so spares are made
	 * without one from then on. unfit: the last plan asked for something else, so the next
	 * spare is a plain one, which any plan can use. */
	struct rd_sandbox_preset preset;
	struct rd_strv preset_masks;
	char *preset_home;
	bool preset_off, preset_unfit;
	uint64_t
	    preset_gen; /* counts the presets made: a sandbox back from a command had this one */
	/* What changes at the preset's masked paths (sandbox/maskwatch.h); due: to be placed once
	 * the spare being asked for is on its way (sup_spare_make). */
	struct rd_mask_watch watch;
	/* What changes in the view's shadow directories (sandbox/shadowwatch.h): checked before
	 * a sandbox is asked for or taken. */
	struct rd_shadow_watch shadow;
	bool watch_due;
};

struct masks {
	/* Masked paths that existed when the session started, and what they were then. */
	struct pin {
		char *path;
		char *real; /* where it led at the start, when a symlink did: what is masked */
		dev_t dev;  /* what is masked (real's, or path's), as it is now */
		ino_t ino;
		mode_t type;   /* its S_IFMT */
		dev_t dir_dev; /* the directory it is in (real's, or path's) */
		ino_t dir_ino;
	} * pins;
	size_t n_pins;
	bool pinned; /* the pins are taken: a list made from now on is final */
	bool warned;
	/* The last list made, and for which rule and uid: the same every exec of a session
	 * (the config, the profile and the pins do not change), so it is copied, not made. */
	struct {
		bool valid;
		const struct rd_rule *rule;
		uid_t uid;
		char *home;
		struct rd_strv list;
	} last;
	/* The home directory of the last caller uid seen, for "~/" in masks. */
	uid_t home_uid;
	char *home;
};

struct approvals {
	size_t n_pending;
	struct answered answered[RD_ANSWERED_KEEP];
	size_t n_answered;
};

struct control {
	int fd; /* -1: the profile has no "ask" rule */
	struct src src;
	size_t n_clients, n_refused;
	struct client *clients, *dead_clients;
	int timer;
	struct src timer_src;
	bool timer_armed, paused;
	unsigned long n_refused_total;
};

/* Programs pinned by a rule's "sha256" and found to match: a sealed copy of each, run in its
 * place, kept while the file stays as it was (supervisor/grant.c). */
#define RD_PINNED_KEEP 8
struct pinned {
	struct pinned_file {
		dev_t dev;
		ino_t ino;
		off_t size;
		struct timespec mtime, ctime;
		int memfd; /* -1: the slot is free */
		char hex[65];
	} f[RD_PINNED_KEEP];
	unsigned next; /* the slot to reuse when all are taken */
};

struct prompt {
	int fd; /* /dev/tty with --prompt, else -1 */
	struct src src;
	uint64_t asking; /* the ask shown now (0: none) */
	bool truncated;  /* it was cut short: it can only be denied there */
	char line[64];
	size_t len;
};

/* The other live sessions of the user, as their entries say (supervisor/sessions.h). */
struct peers {
	struct peer {
		pid_t pid;
		char *workspace;
		struct rd_strv write, protect, missing;
		/* An ended session: when it started and ended (CLOCK_REALTIME, ms). What its
		 * commands could write then, changed then, may be theirs. Ended sessions folded
		 * into one entry: each one's run, in spans (start, end pairs), n_spans of them. */
		bool ended;
		long long start, end;
		long long *spans;
		size_t n_spans;
	} * v;
	size_t n;
	char why[2 * PATH_MAX + 128]; /* sup_sessions_writable's answer */
	bool hit;                     /* sup_sessions_writable answered since sup_sessions_load */
	int err; /* errno where the list could not be read whole: everywhere counts as theirs */
};

struct sup {
	struct rd_session *s;
	int epfd, sigfd, listener;
	struct seccomp_notif *notif;
	size_t notif_size;
	bool agent_done;
	int agent_status;
	struct src agent_src; /* runnerd serve: the agent's pidfd */
	struct cmd *cmds;
	struct cmd *dead; /* freed once the events in hand are handled */
	uint64_t next_id;
	dev_t stub_dev;
	ino_t stub_ino;
	/* Sandboxes map every id to itself (runnerd has CAP_SETUID and CAP_SETGID), else
	 * runnerd's uid and gid alone (sandbox/launch.h). */
	bool full_ids;
	/* runnerd's effective ids: a caller of others is looked at as itself (exec.c). */
	uid_t euid;
	gid_t egid;
	struct stat root_st;
	ino_t mntns;
	bool warned_ptrace, warned_full, warned_audit;
	bool env_note_said;   /* an agent program run as a command for its env (exec.c) */
	uint64_t said_errnos; /* runnerd's own failures said on stderr, by errno (bit e) */
	size_t max_sandboxes; /* sandbox.max_sandboxes: live sandboxes at once */
	/* sandbox.execs_per_second (0: no limit): a bucket of that many execs, refilled at that
	 * rate, so a burst of up to one second's worth passes. */
	struct rate {
		uint64_t per_s;
		double tokens;
		struct timespec at;
		bool warned;
	} rate;
	uint64_t n_started; /* commands started (a sandbox launched or held for an answer) */
	struct timespec started_at;
	/* runnerd kill: who ended the session ("uid U, pid P (COMM)"), empty while it runs. */
	char killed_by[96];
	/* runnerd serve: the agent's SIGKILL is owed, asked of the process outside its pid
	 * namespace once the reply to runnerd kill is sent (an agent that is the container's
	 * pid 1 takes runnerd down with it). */
	bool remote_kill_owed;
	struct src signal_src;
	struct spares sp;
	struct masks mk;
	struct peers pe;
	struct pinned pin;
	struct approvals ap;
	struct control ctl;
	struct prompt tty;
};

/* Every process's parent, by the /proc/PID/stat anyone may read (a sandbox's pid 1 is not
 * dumpable, so its /proc/PID/ns is not), read at once, by pid; with its start time (clock
 * ticks after boot), which with the pid names one process, a reused pid another. */
struct sup_proc {
	pid_t pid, ppid;
	unsigned long long start;
	long threads;
	char state; /* Z: a zombie, or a thread group whose leader alone has exited */
};
struct sup_procs {
	struct sup_proc *p;
	size_t n;
};
struct sup_procs sup_read_procs(void);
/* The parent and the start time of pid in /proc now: 0, or -1 if it is gone. */
int sup_proc_parent(pid_t pid, pid_t *ppid);
int sup_proc_start(pid_t pid, unsigned long long *start);
/* Its state letter (R, S, T, Z, ...), or -1 if it cannot be read. */
int sup_proc_state(pid_t pid, char *state);
/* Does pid still run? Not for a zombie; for a state Z whose threads are not all gone (its
 * leader exited first), yes. */
bool sup_proc_running(const struct sup_proc *p);
/* The parent of pid in t (0: not in it). */
pid_t sup_procs_parent(const struct sup_procs *t, pid_t pid);
/* How many processes have pid among their ancestors (every orphan of a pid namespace is its
 * pid 1's child, so for a sandbox's pid 1: what lives in the sandbox, pid 1 left out). */
long sup_procs_below(const struct sup_procs *t, pid_t pid);

/* Logging (-v) and time. */
void sup_log(struct sup *u, const char *fmt, ...) _printf_(2, 3);
double sup_ms_since(const struct timespec *t0);
const char *sup_errno_name(int e);

/* The epoll set: a fd watched as src (abort() if it cannot be: runnerd never runs unwatched),
 * or forgotten and closed (*fd set to -1). */
void sup_watch(struct sup *u, int fd, struct src *src);
void sup_unwatch(struct sup *u, int *fd);

/* Commands. */
#define RD_CMD_ARGV_KEEP 2048
struct cmd *sup_cmd_new(uint64_t id, pid_t tid, pid_t tgid, const char *path);
/* Keep (a bounded copy of) argv, for runnerd ps. */
void sup_cmd_keep_argv(struct cmd *c, char *const *argv, size_t argc);
/* The command of a handoff in progress for tid, or NULL. */
struct cmd *sup_cmd_find_tid(struct sup *u, pid_t tid);
void sup_cmd_link(struct sup *u, struct cmd *c);
/* A command never linked: its sockets, timer and itself. */
void sup_cmd_discard(struct sup *u, struct cmd *c);
/* Off the list once its handoff, its sandbox and its stub are all done with; freed after the
 * round of events (sup_free_dead), as an event in hand may still name it. */
void sup_cmd_free_if_done(struct sup *u, struct cmd *c);
void sup_free_dead(struct sup *u);

/* A trapped exec runnerd will not run: the audit line of the refusal, and the answer. */
void sup_audit_refusal(struct sup *u, uint64_t id, pid_t tid, const char *path, int e,
                       const char *why);
/* A limit of the machine or of runnerd (processes, fds, memory): e itself, the kernel's errno
 * for it, which the caller gets as its own exec or fork would, rather than EPERM; else 0. */
int sup_resource_errno(int e);
/* A failure of runnerd's own, on stderr once for each errno (the audit has every one). */
void sup_say_once(struct sup *u, uint64_t id, const char *path, const char *why, int e);
/* A command that could not start, in one way wherever it is found: its own exec failed
 * (exec_failed, exactly the caller's errno), or runnerd failed (refused with e, said once). */
void sup_audit_launch_failure(struct sup *u, uint64_t id, pid_t tid, const char *path,
                              int exec_errno, int e, const char *why);
/* The errno a caller gets for a launch that failed: the command's own exec's, else a limit's
 * (err, an rd_error's), else EPERM. */
int sup_launch_errno(int exec_errno, int err);
/* Answer a trapped exec that was not seized (e: its errno, 0 for success is never given). */
void sup_reply(struct sup *u, uint64_t notif_id, int e);
/* Give back a task runnerd seized but will not hand off: stop it, answer its exec with e,
 * detach. */
void sup_release(struct sup *u, pid_t tid, uint64_t notif_id, int e);

/* The stub's control socket of c, before the plan: the reaper gets a copy of runnerd's end. */
int sup_make_ctl(struct cmd *c);
void sup_close_peer(struct cmd *c);
/* Tell the stub of c to exit with status (a wait status, as the command's would be); with
 * text, to say it first (one line) on say_fd (the caller's stderr; -1: nowhere). A stub
 * whose queue is full is woken and told once it has room (sup_cmd_ctl). */
void sup_stub_exit(struct sup *u, struct cmd *c, int status);
/* SIGCONT to the stub of c, stopped as its command was (if it has stopped once): it reads
 * what it was sent (RD_STUB_CONTINUED, RD_STUB_EXIT) and does not pass this SIGCONT on. A stop
 * signal discards a pending SIGCONT, so one that came just before the stub stopped is lost:
 * the wake-up is sent again every 20 ms while sup_stub_wake_due (for_end: until the stub has
 * gone). */
void sup_stub_wake(struct sup *u, struct cmd *c, bool for_end);
/* Does pid run runnerd's stub (its /proc/PID/exe the stub's file)? */
bool sup_is_stub(struct sup *u, pid_t pid);
bool sup_stub_wake_due(const struct run *r);
void sup_stub_say_exit(struct sup *u, struct cmd *c, int say_fd, const char *text, int status);
/* The caller's stderr as runnerd holds it (a copy from the snapshot), or -1. */
int sup_caller_stderr(const struct req *q);
/* The caller's cwd as a path, for the operator (from the snapshot; "" if it had none). */
static inline const char *sup_req_cwd(const struct req *q)
{
	return q->t.cwd_path ? q->t.cwd_path : "";
}

/* c's timer (one per command) set to fire in secs, made and watched if it has none yet. */
int sup_arm_timer(struct sup *u, struct cmd *c, unsigned secs);

/* SIGKILL to c's sandbox, unless it is reaped. */
void sup_kill_sandbox(struct cmd *c);

/* Is c's sandbox still there (made, not reaped)? Its command may have ended: background
 * processes keep a sandbox ("lifetime": "session"). */
static inline bool sup_cmd_live(const struct cmd *c)
{
	return c->run.sb.reaper > 0 && !c->run.reaped;
}

/* Has runnerd seen c's exec through (no handoff waiting for its result, no setup pipe left)?
 * Until then its sandbox stays as it is: the exec's result comes through it
 * (sup_handoff_exec_result). */
static inline bool sup_cmd_exec_seen(const struct cmd *c)
{
	return !c->ho.exec_pending && c->run.sb.setup_fd < 0;
}

#endif
