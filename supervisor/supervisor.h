/* The supervisor: one single-threaded epoll loop that owns the agent's exec listener and every
 * command's sandbox, from the trapped exec to the stub's exit. */
#ifndef RD_SUPERVISOR_H
#define RD_SUPERVISOR_H

#include "intercept/launcher.h"
#include "policy/config.h"
#include "policy/envpolicy.h"
#include "sandbox/cmdfilter.h"
#include "sandbox/view.h"
#include "sandbox/zygote.h"
#include "supervisor/audit.h"

#include <signal.h>
#include <stdio.h>

/* Where a control socket may be, at most: see rd_control_dirs. */
#define RD_CONTROL_DIRS 4

struct rd_session {
	const struct rd_config *cfg;
	const struct rd_profile *prof;
	struct rd_audit *audit;
	int verbose;
	int stub_fd;   /* O_RDONLY of runnerd-stub, injected into every caller */
	int zygote_fd; /* O_RDONLY of runnerd-zygote until it is started (then -1); -1 from the
	                * start when there is none: runnerd forks sandboxes */
	/* The commands' seccomp profiles: "default" (user namespaces allowed), "strict". */
	struct rd_bpf cmd_filter, cmd_filter_strict;
	struct rd_agent agent;
	/* The variables stripped as secrets at the agent's start ("NAME=value"): a command's
	 * variable that holds one of their values is stripped too (policy/envpolicy.h). */
	struct rd_env_secrets secrets;
	/* The agent's environment as runnerd started it: what a command that a rule grants a
	 * secret gets of rd_grant_pinned_names. */
	char *const *agent_env;
	/* Where commands may write, and what stays read-only there (sandbox/view.h); and the
	 * workspace, the directory runnerd started in (NULL: unknown). */
	struct rd_view_paths view;
	const char *workspace;
	/* The protected paths that were missing at the start, where commands could make them
	 * (a .git/commondir, a ~/.gitconfig, a .mcp.json): one that is there now may be a
	 * command's, and no command a rule grants a secret runs while one is. */
	const struct rd_strv *missing;
	/* Where the commands of any rule may write (the session's roots and every rule's own),
	 * with what stays read-only in all of them: the session's protected paths and the agent's
	 * own files, which each rule's view keeps read-only too. What a command could have
	 * replaced is judged by it. */
	struct rd_view_paths any_rule;
	/* The agent's own programs, by file identity, taken when the session starts
	 * (runnerd/agent_path.h): an exec of one from the agent's tree runs as the agent. interp:
	 * the interpreter the agent's launcher script runs in (none: its dev and ino 0), which
	 * runs as the agent when its arguments are the profile's agent.interpreter_options and then
	 * the script or one of the files. The launcher itself is none of the files: an agent that
	 * is a general program (python, bash) would make every exec of it the agent's. */
	struct rd_agent_files {
		struct rd_file_id {
			dev_t dev;
			ino_t ino;
		} * files, interp, script;
		size_t n_files;
	} agent_files;
	sigset_t orig_mask; /* what runnerd's own mask was before it blocked its signals */
	int agent_signal;   /* set by rd_supervise: the signal that killed the agent, or 0 */
	char session[33];
	/* Where runnerd runs: "on this host", "in a podman container", ... (runnerd ps). */
	const char *where;
	const char *agent_path; /* the agent's program, as runnerd resolved it (runnerd ps) */
	/* Approvals ("ask"): the listening control socket (-1: the profile never asks), its
	 * path, and /dev/tty for --prompt (-1: not asked). */
	int control_fd;
	char *control_path;
	/* Where the sessions of the user list where their commands can write (supervisor/
	 * sessions.h), and the name of this one's entry there; NULL: nowhere (runnerd serve). */
	char *sessions_dir;
	const char *sessions_self;
	int tty_fd;
	/* Every directory where control sockets live: masked in every command's sandbox. */
	char *control_dirs[RD_CONTROL_DIRS];
	/* runnerd serve: the agent is runnerd-intercept's, in a container whose mount, pid, and
	 * other namespaces runnerd has joined. It is not runnerd's child: its end is its pidfd's,
	 * its exit status unknown. kill_fd reaches the process of runnerd's outside the
	 * container's pid namespace, which signals the agent on a byte, 's' SIGSTOP, 'k' SIGKILL
	 * (from inside, a signal to the container's pid 1 is ignored). Control connections from
	 * outside that pid namespace are from outside the session. */
	struct {
		bool on;
		int kill_fd;
		/* runnerd is in the container's user namespace (a rootless engine's), where the
		 * machine's root is not mapped: a control peer that is shows as the overflow uid */
		bool rootless;
		/* The container's mount and pid namespaces (their inode numbers): a caller must
		 * live in that mount namespace (runnerd itself lives in a copy of it, for a
		 * rootful engine's container); a control peer in that pid namespace, or one under
		 * it, lives in the container. */
		ino_t mntns, pidns;
	} remote;
	/* What commands keep of that container (sandbox/zygote.h). */
	struct rd_confine confine;
};

/* The seccomp profile of a command with this box, or NULL ("none"). */
static inline const struct rd_bpf *rd_cmd_filter(const struct rd_session *s,
                                                 const struct rd_box_opts *box)
{
	return rd_box_is(box, RD_BOX_SECCOMP, RD_SECCOMP_NONE)     ? NULL
	       : rd_box_is(box, RD_BOX_SECCOMP, RD_SECCOMP_STRICT) ? &s->cmd_filter_strict
	                                                           : &s->cmd_filter;
}

/* The signals the supervisor takes through a signalfd: SIGCHLD, and those it forwards to the
 * agent. The caller blocks them before it starts the agent, so that none is lost. */
void rd_supervise_signals(sigset_t *set);

/* Run until the agent exits; returns its exit status as a shell reports it (code, or 128 +
 * signal, with the signal in agent_signal). Every command still running then is killed. */
int rd_supervise(struct rd_session *s);

/* The directory of this user's control sockets: /run/runnerd as root; else
 * $XDG_RUNTIME_DIR/runnerd, or without it /run/user/UID/runnerd, or /tmp/runnerd-UID. NULL with
 * err set only when out of memory. */
char *rd_control_dir(struct rd_error *err);
/* Every directory where this user's control sockets may be, for the masks. */
void rd_control_dirs(char *out[RD_CONTROL_DIRS]);
/* Make dir (0700, ours) and listen on dir/session.sock (0600). Returns the fd, path in *path. */
int rd_control_listen(const char *dir, const char *session, char **path, struct rd_error *err);

#endif
