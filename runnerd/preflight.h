/* What runnerd needs of the kernel and of the container it may run in, tried for real before a
 * session starts (and by "runnerd check --system"): a user namespace; a sandbox of new user,
 * pid, mount and IPC namespaces with a fresh /proc and a devpts instance; ptrace,
 * process_vm_readv and pidfd_getfd on a child; a seccomp listener. Each probe runs in a child
 * of its own, so nothing of it stays with runnerd. A failed probe says its cause and the fix
 * for this environment (the host, a podman or a docker container), from what the kernel and
 * the container tell: sysctls, Yama, AppArmor, the seccomp mode, capabilities, /proc's
 * mounts. */
#ifndef RD_PREFLIGHT_H
#define RD_PREFLIGHT_H

#include "lib/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum rd_probe {
	RD_PROBE_USERNS,
	RD_PROBE_SANDBOX,
	RD_PROBE_PTRACE,
	RD_PROBE_VM_READV,
	RD_PROBE_PIDFD_GETFD,
	RD_PROBE_LISTENER,
	RD_PROBE_COUNT,
};

struct rd_probe_result {
	const char *name; /* what was tried, e.g. "a user namespace" */
	int err;          /* 0: it worked; else the errno the kernel gave */
	char cause[512];  /* why, when it failed */
	char fix[512];    /* what to do about it here */
};

struct rd_preflight {
	const char *where; /* "on this host", "in a podman container", ...: set when one failed */
	struct rd_probe_result r[RD_PROBE_COUNT];
	size_t failed;
	pid_t pid[RD_PROBE_COUNT]; /* the probes under way */
	int fd[RD_PROBE_COUNT];
};

/* Start every probe, each in a child of its own, all at once: runnerd goes on with its start
 * meanwhile. Returns 0, or -errno when they cannot be started (none is then left running). */
int rd_preflight_start(struct rd_preflight *pf) _wur_;

/* Wait for the probes started and judge them. Returns the number that failed. */
size_t rd_preflight_finish(struct rd_preflight *pf);

/* Where the probes ran: "on this host", "in a podman container", "in a docker container", ... */
const char *rd_preflight_where(struct rd_preflight *pf);

/* Both. A failure to start the probes is a failed probe. */
size_t rd_preflight_run(struct rd_preflight *pf);

/* The first failure as one message in err ("cannot sandbox commands in ...: CAUSE.
 * Fix: FIX."), returning -errno; 0 when every probe passed. */
int rd_preflight_error(const struct rd_preflight *pf, struct rd_error *err);

#endif
