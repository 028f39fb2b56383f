/* runnerd serve (cmd_serve.c) and the session it runs for one runnerd-intercept (cmd_run.c):
 * the host's part first (config, profile, audit, helpers, filters), then, in the container's
 * namespaces, the agent's part and the supervisor. */
#ifndef RD_SERVE_H
#define RD_SERVE_H

#include "lib/bpf.h"
#include "runnerd/cli.h"

#include <stdbool.h>
#include <sys/types.h>

#define RD_SERVE_NS 6
/* Where the mount and pid namespaces are in struct rd_serve_session's ns. */
#define RD_SERVE_NS_MNT 0
#define RD_SERVE_NS_PID 1

struct rd_serve_session {
	int sock;  /* the connection to runnerd-intercept */
	int pidfd; /* the client's, which becomes the agent */
	uid_t uid; /* the client's uid and gid */
	gid_t gid;
	int argc; /* the agent's argv, and the client's environment, as the client sent them */
	char **argv;
	char **env;
	/* The container's seccomp filters, oldest first, and where it runs (runnerd ps). */
	struct rd_bpf *filters;
	size_t n_filters;
	/* The agent's AppArmor profile, which each command is put under at its exec ("": none). */
	char apparmor[256];
	const char *where;
	/* The client's mount, pid, net, IPC, UTS and cgroup namespaces, as they were checked;
	 * and the user namespace that owns them, if not the machine's (a rootless engine's), else
	 * -1. */
	int ns[RD_SERVE_NS];
	int userns;
	bool rootless; /* set by enter: the supervisor is in that user namespace */
	/* Set by enter, in the process that supervises the session: the client's pid there,
	 * and the fd on which a byte asks for the agent's SIGSTOP ('s') or SIGKILL ('k') from
	 * outside its pid namespace. */
	pid_t pid;
	int kill_fd;
	/* The session's control socket on the host, removed when the session ends. */
	const char *control_path;
	/* Held until the session has joined the container's cgroups: its end tells the daemon
	 * that the connection waits no more on the daemon's account (-1: none). */
	int waiting_fd;
	/* The client's stderr (-1: it sent none): where the session says what it has to say once
	 * its agent runs, as runnerd's own stderr is the agent's terminal. */
	int stderr_fd;
};

/* Join the container: its cgroup, then its namespaces; the process that returns (0) is the
 * session's supervisor, in the client's cwd and with its environment as environ. For a rootful
 * engine's container, outside its pid namespace, in a copy of its mount namespace with a /proc
 * of the machine's (ss->pid the machine's pid of the client); in a rootless engine's, in its
 * pid and user namespaces, as the container's root (no privilege on the machine), with
 * ss->uid and gid the client's ids there. The one that called never returns. -1: said on stderr and
 * to the client. Called by rd_cmd_run_served once the host's part is done. */
int rd_serve_enter(struct rd_serve_session *ss);

/* One session for runnerd serve: cli->profile is the profile, decided already. Returns the
 * exit status to use. */
int rd_cmd_run_served(struct rd_cli *cli, struct rd_serve_session *ss);

int rd_cmd_serve(struct rd_cli *cli, int argc, char **argv);

#endif
