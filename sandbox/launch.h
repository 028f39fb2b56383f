/* Running one command in its sandbox: new pid, mount and IPC namespaces in a user namespace that
 * is not the machine's (the session's, made by the zygote, or the sandbox's own), whose pid 1
 * is a small reaper of ours, and the command, its child, with the caller's fds, cwd,
 * credentials, umask, signals and rlimits. */
#ifndef RD_LAUNCH_H
#define RD_LAUNCH_H

#include "lib/error.h"
#include "sandbox/maskwatch.h"
#include "sandbox/plan.h"
#include "sandbox/zygote.h"

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* What the reaper writes to status_fd once the command has ended, then it exits. */
struct rd_reaper_report {
	int32_t status; /* the command's wait status */
	uint32_t flags; /* RD_REPORT_* */
};

enum {
	RD_REPORT_STUB_TOLD = 1, /* the stub has its RD_STUB_EXIT from the reaper */
	RD_REPORT_TIMEOUT = 2,   /* ... with the timeout's status (124), not the command's */
	RD_REPORT_LEFT = 4,      /* other processes of the sandbox were alive as it ended */
	/* Not the command's end: it goes on after a stop, and the stub was told so; runnerd
	 * sends the stub SIGCONT to wake it (status is 0). */
	RD_REPORT_CONTINUED = 8,
	/* With the end: the stub was last told the command stopped; runnerd sends it SIGCONT
	 * so that it reads the end. */
	RD_REPORT_STUB_STOPPED = 16,
	/* With the end: the command ended alone (nothing else of the sandbox alive), as the
	 * last of a plan that fit the sandbox's preset: pid 1 stays, makes the sandbox as it was
	 * before the plan came, then says so with RD_REPORT_IDLE (or exits if it cannot). */
	RD_REPORT_REUSE = 32,
	/* Not a command's end: pid 1 is waiting for another plan, its preset report sent again
	 * (status is 0). Written only after an end with RD_REPORT_REUSE. */
	RD_REPORT_IDLE = 64,
};

/* runnerd's requests to a sandbox's pid 1, each a mark sent on the plan socket (which stays
 * open for them; no process of the sandbox holds it), followed by a SIGTERM that only wakes
 * pid 1: it reads its marks on every signal it takes and trusts no signal itself (a process
 * inside can send it any, and one of runnerd's may merge with one of theirs). The marks: those
 * that end the whole sandbox, a command's timeout (rd_sandbox_timeout: the caller then sees
 * 124) and the session's end (rd_sandbox_end); the one that kills the command's main process
 * alone (rd_sandbox_kill_command), whose stub is gone; and a signal the stub forwarded
 * (rd_sandbox_signal), SIGNAL_MARK | its number. */
#define RD_REAPER_TIMEOUT_MARK 0x74696d65
#define RD_REAPER_END_MARK     0x656e6473
#define RD_REAPER_KILL_MARK    0x6b696c6c
#define RD_REAPER_SIGNAL_MARK  0x73690000
#define RD_REAPER_SIGNAL_MASK  0xffff0000

/* What a spare sandbox can put in place before it knows its plan: the masks, the network and
 * the seccomp filter most commands get. The filter goes on the reaper itself, after its own
 * mounts, and the command inherits it: nothing is compiled on the exec path. */
struct rd_sandbox_preset {
	char *const *masks; /* as in rd_launch_plan, same order */
	size_t n_masks;
	const struct sock_filter *filter; /* NULL: none */
	unsigned short filter_len;
	bool net_none;
	/* What changes at the masked paths; NULL (or off): each is looked up again when the
	 * spare is used. */
	struct rd_mask_watch *watch;
};

/* What became of a spare's preset when its plan came. */
enum rd_preset_use {
	RD_PRESET_NONE,   /* the spare had none */
	RD_PRESET_USED,   /* the plan asked for exactly that, and it was still in place */
	RD_PRESET_UNFIT,  /* the plan asks for other masks, network or filter */
	RD_PRESET_STALE,  /* a masked path changed since the spare was made */
	RD_PRESET_BROKEN, /* the spare died or said nothing: its preset could not be applied */
};

struct rd_sandbox {
	pid_t reaper; /* pid 1 of the sandbox, as runnerd sees it */
	int reaper_pidfd;
	int status_fd; /* O_NONBLOCK; the reaper writes a struct rd_reaper_report here (two if
	                * the second corrects the first), then exits */
	int setup_fd;  /* EOF once the command exec'd; a message if anything failed */
	int plan_fd;   /* where the plan goes, then runnerd's marks (RD_REAPER_*_MARK) */
	/* The spare's preset (the caller's memory, unchanged until the plan is sent), or NULL. */
	const struct rd_sandbox_preset *preset;
	enum rd_preset_use preset_use; /* set by rd_sandbox_start */
	/* Whether the plan fits the preset, when the caller compared them already (the masks
	 * are some 60 paths): rd_sandbox_start does not compare them again. */
	bool fit_known, fit;
	/* Asked of the zygote, not answered yet: reaper is -1 until rd_sandbox_spare_finish. */
	bool pending;
	bool userns; /* runnerd cloned it, in a user namespace whose maps it writes */
	/* The preset's watch generation when the spare was asked for (watched: there was one) */
	bool watched;
	uint64_t watch_gen;
	bool full_ids;     /* those maps are every id to itself (else runnerd's alone) */
	int go_fd;         /* a byte here starts the reaper, once runnerd has written its maps */
	unsigned uses;     /* the plans it has taken: from the second on, with a setup pipe */
	uint64_t view_gen; /* the zygote's view_gen when it was asked for */
};

#define RD_SANDBOX_NONE                                                                            \
	((struct rd_sandbox){.reaper = -1,                                                         \
	                     .reaper_pidfd = -1,                                                   \
	                     .status_fd = -1,                                                      \
	                     .setup_fd = -1,                                                       \
	                     .plan_fd = -1,                                                        \
	                     .preset = NULL,                                                       \
	                     .preset_use = RD_PRESET_NONE,                                         \
	                     .fit_known = false,                                                   \
	                     .fit = false,                                                         \
	                     .pending = false,                                                     \
	                     .userns = false,                                                      \
	                     .full_ids = false,                                                    \
	                     .watched = false,                                                     \
	                     .watch_gen = 0,                                                       \
	                     .go_fd = -1,                                                          \
	                     .uses = 0,                                                            \
	                     .view_gen = 0})

/* Can runnerd map every id of a sandbox to itself: has it CAP_SETUID and CAP_SETGID (root,
 * mostly; decided by the capabilities, not by the uid)? */
bool rd_sandbox_can_map_all_ids(void);

/* The maps of pid's new user namespace, written from its parent namespace: every id to itself
 * (full: runnerd has CAP_SETUID and CAP_SETGID), else runnerd's uid and gid alone, with
 * setgroups denied. Returns 0 or -errno. */
int rd_write_id_maps(pid_t pid, bool full);

/* The same in two steps, so that runnerd goes on while the zygote clones: begin asks the
 * zygote and returns with out->pending set (or, without a zygote, makes the spare at once);
 * finish takes the zygote's answer, once z->fd is readable or when the spare is needed (it
 * then waits), and starts the reaper. On error out is RD_SANDBOX_NONE; z->lost says whether
 * the zygote is gone. A sandbox that runnerd clones itself gets a user namespace of its own
 * that maps every id to itself with full_ids, else runnerd's uid and gid alone. */
int rd_sandbox_spare_begin(struct rd_zygote *z, bool full_ids,
                           const struct rd_sandbox_preset *preset, struct rd_sandbox *out,
                           struct rd_error *err) _wur_;
int rd_sandbox_spare_finish(struct rd_zygote *z, struct rd_sandbox *out,
                            struct rd_error *err) _wur_;

/* The plan asks for exactly what the preset puts in place: the same masks in the same order,
 * the same network and the same filter. */
bool rd_sandbox_preset_fits(const struct rd_sandbox_preset *pre, const struct rd_launch_plan *p);

/* Hand the plan to the spare sb (one is made on the spot, through z, if sb->reaper < 0); the
 * command is on its way. A spare with a preset is used only if the plan asks for exactly its masks
 * (same list, same order), network and filter, and every masked path still looks, from inside the
 * spare, as it did once the masks were placed; otherwise it is destroyed and a sandbox is made
 * for this plan (sb->preset_use says which). Returns 0 or -errno (setup failed; sb is then
 * closed). */
int rd_sandbox_start(struct rd_zygote *z, const struct rd_launch_plan *p, struct rd_sandbox *sb,
                     struct rd_error *err) _wur_;

/* Wait until the command's execve has succeeded. Returns 0; or -errno with *exec_errno set
 * (> 0) when the command's own exec failed: that errno belongs to the caller's execve; or
 * -errno with *exec_errno 0 when setting up the sandbox failed. On error the sandbox is
 * gone. */
int rd_sandbox_wait_exec(struct rd_sandbox *s, int *exec_errno, struct rd_error *err) _wur_;

/* A command's timeout: SIGTERM to the reaper, which passes it on to the command and, when the
 * command ends, tells the stub the timeout's status (124) rather than the command's. Returns 0
 * or -errno. */
int rd_sandbox_timeout(struct rd_sandbox *s);

/* The session ends: SIGTERM to every process of the sandbox (its pid 1 passes it on), which
 * runnerd follows with SIGKILL after a grace. Returns 0 or -errno. */
int rd_sandbox_end(struct rd_sandbox *s);

/* The command's stub is gone (its caller was killed): its main process gets SIGKILL, as the
 * process the caller would have exec'd; what it started lives on, as the sandbox's lifetime
 * says. Returns 0 or -errno. */
int rd_sandbox_kill_command(struct rd_sandbox *s);

/* A signal for the command, forwarded by its stub: pid 1 passes it on to the command (to every
 * process of the sandbox for SIGCONT, and once the command has ended). Returns 0 or -errno. */
int rd_sandbox_signal(struct rd_sandbox *s, int sig);

/* Close runnerd's ends (the reaper, if alive, is reaped by the supervisor's loop). */
void rd_sandbox_close(struct rd_sandbox *s);

/* Kill the reaper (and with it the whole namespace) and close everything; the supervisor's loop
 * reaps it. */
void rd_sandbox_destroy(struct rd_sandbox *s);

#endif
