/* The zygote: one small static program (runnerd-zygote), started by runnerd once per session,
 * that clones every sandbox's reaper on runnerd's behalf. A clone copies the address space of
 * the process that clones (about 1 us per mapping), write-protects its private memory, so that
 * both then take copy-on-write faults, and the child tears its copy down when it exits. runnerd
 * is dynamically linked, with about 40 mappings, and busy; the zygote has a handful of mappings
 * and, between two clones, only waits on its socket.
 *
 * The reaper is cloned with CLONE_PARENT: its parent is runnerd, as if runnerd had forked it.
 * So runnerd still reaps it (SIGCHLD, waitpid), can setpgid it, and the reaper's PDEATHSIG
 * still follows runnerd. The zygote has no child of its own. */
#ifndef RD_ZYGOTE_H
#define RD_ZYGOTE_H

#include "lib/bpf.h"
#include "lib/error.h"
#include "sandbox/view.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rd_zygote {
	pid_t pid; /* -1: none */
	int fd;    /* runnerd's end of the request socket; -1: none, or lost */
	bool lost; /* it died or stopped answering: sandboxes are forked by runnerd again */
	/* The last preset sent, as it went on the wire: the zygote keeps it, so an unchanged
	 * preset is not sent again. */
	char *last;
	size_t last_len;
	/* The session's writable roots and protected paths (the caller's memory): the zygote
	 * makes them once; a sandbox runnerd clones itself (no zygote, or lost) makes them too. */
	const struct rd_view_paths *view;
	/* runnerd serve's (rd_confine): only the zygote's reapers carry the container's filters
	 * and may mount /proc there, so runnerd clones none itself. */
	bool required;
	/* How many times the view's shadow directories were made again (rd_zygote_refresh): a
	 * sandbox made before holds what they held then. */
	uint64_t view_gen;
};

/* What the commands of a session that `runnerd serve` runs in a container keep of the
 * container: they live in the machine's user namespace, as the container's processes do (a
 * user namespace of the zygote's own would own its mount namespace, and the kernel then refuses
 * a fresh /proc under a container's covered one); and each loads the container's own seccomp
 * filters, oldest first, last of all before its exec. */
struct rd_confine {
	bool host_userns;
	const struct rd_bpf *filters;
	size_t n_filters;
	const char *apparmor; /* the AppArmor profile each command execs under; NULL or "": none */
	/* A rootful engine's container: its mount namespace (mntns, an fd), which the zygote
	 * enters before anything else; runnerd itself lives in a copy of it, with a /proc of the
	 * machine's pid namespace, where the zygote and its reapers live too. */
	bool enter_mntns;
	int mntns;
};

#define RD_ZYGOTE_NONE ((struct rd_zygote){.pid = -1, .fd = -1})

/* Start the zygote: fork, and exec the program exe_fd (runnerd-zygote) with its end of the
 * socket at fd 3, no other fd and an empty environment. It makes a user namespace (whose maps
 * runnerd writes: every id to itself with full_ids, else runnerd's uid and gid alone) and a
 * mount namespace with the session's part of the commands' view (sandbox/view.h: writable
 * only in paths' writable roots), every sandbox's starting point. It is not dumpable, dies with
 * runnerd (PDEATHSIG) and does nothing but answer runnerd's requests. */
/* confine (NULL: none) is a container's, for runnerd serve: the zygote then makes a mount
 * namespace alone, and hands the filters to every command. */
int rd_zygote_start(struct rd_zygote *z, int exe_fd, bool full_ids,
                    const struct rd_view_paths *paths, const struct rd_confine *confine,
                    struct rd_error *err) _wur_;

/* The zygote is gone (runnerd reaped it, or a request failed): close runnerd's end, kill it if
 * it still runs (runnerd's loop reaps it), and mark it lost. */
void rd_zygote_lost(struct rd_zygote *z);

/* Close runnerd's end and kill the zygote; runnerd's loop reaps it. */
void rd_zygote_stop(struct rd_zygote *z);

/* Have the zygote make its view's shadow directory view->shadow[i] again, from what that
 * directory holds now (and those above it): sandboxes it clones from then on show that. No
 * answer; a zygote that cannot is lost (runnerd's own sandboxes make the view each time).
 * Counts z->view_gen up, with or without a zygote. */
void rd_zygote_refresh(struct rd_zygote *z, size_t i);

#endif
