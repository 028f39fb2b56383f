/* Between launch.c (runnerd's side of a sandbox), reaper.c (the sandbox's pid 1) and zygote.c
 * (which clones reapers): not an interface of the library. */
#ifndef RD_LAUNCH_INTERNAL_H
#define RD_LAUNCH_INTERNAL_H

#include "sandbox/launch.h"
#include "sandbox/zygote.h"

#include <linux/filter.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

enum { STAGE_SETUP = 1, STAGE_EXEC = 2 };

/* What a child of the launch tells runnerd when it cannot go on; nothing on success (the
 * pipe is CLOEXEC: EOF means the command's exec went through). */
struct setup_msg {
	int stage;
	int err;
	char what[120];
};

/* The plan crosses from runnerd to a waiting reaper (sandbox/plan.h) as the data of the first
 * packet on the plan socket if it is at most PLAN_INLINE_MAX bytes; else that data is a 0
 * (uint32_t) and the plan is in a memfd, the packet's first fd. The packet's fds go on with the
 * plan's lead fds (rd_plan_lead_fds), then as many of the caller's as fit, in order; the rest of
 * the caller's follow, FDS_PER_MSG a packet, each led by its count (uint32_t). */
#define FDS_PER_MSG     250
#define PLAN_INLINE_MAX (32 * 1024)

/* What a reaper with a preset reports once it is all in place: for each mask path, what the
 * path leads to in the sandbox's view with every mask placed (absent: nothing there). Its root
 * (O_PATH) comes with it, so that runnerd can look again, from inside, when the plan comes. */
struct preset_seen {
	uint64_t dev, ino;
	uint32_t absent;
};

#define PRESET_MAX_MASKS 1024

/* pid 1 of a sandbox (reaper.c), from the child of the clone. */
/* view: the session's writable roots and protected paths, for a reaper that makes the
 * session's part of the view itself (without RD_INHERIT_VIEW), and for a rule's own over them. */
_Noreturn void rd_reaper_main(int go_fd, int plan_fd, int err_fd, int status_fd,
                              const struct rd_sandbox_preset *preset, unsigned inherited,
                              const struct rd_view_paths *view);

/* What a reaper inherits done from the process that clones it (rd_reaper_main's inherited),
 * and what it is told of its sandbox. */
enum {
	RD_INHERIT_DISPOSITIONS = 1, /* every signal disposition the default */
	RD_INHERIT_BOUNDING = 2,     /* an empty capability bounding set (not across a new user
	                              * namespace, which starts with a full one) */
	RD_INHERIT_VIEW = 4,         /* the session's part of the view (sandbox/view.h) */
	RD_ROOT_IDS = 8,             /* uid 0 of the sandbox is the machine's root */
};

/* Is uid 0 of a sandbox the machine's root: every id mapped to itself (full_ids), or runnerd's
 * own, when it is root? */
static inline bool rd_root_ids(bool full_ids)
{
	return full_ids || geteuid() == 0;
}

/* In the zygote, once: what its reapers would otherwise each do. Returns RD_INHERIT_* for
 * what it did. */
unsigned rd_reaper_parent_setup(void);

/* The child's ends of a sandbox's pipes and socket, in the order rd_reaper_main takes them. */
enum { RD_REAPER_GO, RD_REAPER_PLAN, RD_REAPER_ERR, RD_REAPER_STATUS, RD_REAPER_NFDS };

/* The zygote starts: it makes a user and a mount namespace of its own, says so (a zygote_reply,
 * pid 0, or err if it could not), runnerd writes its maps and sends a zygote_view (ids
 * ZYGOTE_ROOT_IDS or ZYGOTE_OWN_IDS, then the writable roots and protected paths, each ending
 * in a NUL), the zygote makes the session's view in its mount namespace and says how that went
 * (a setup_msg, err 0: ready). Every reaper it clones then has new pid, mount and IPC
 * namespaces, in the zygote's user namespace. */
enum { ZYGOTE_OWN_IDS = 'o', ZYGOTE_ROOT_IDS = 'r' };

struct zygote_view {
	uint32_t ids;
	uint32_t n_write;
	uint32_t n_protect;
	uint32_t n_layers; /* after the protected paths, 2 * n_layers: each cache, its layer */
	uint32_t n_shadow; /* after the layers: the shadow directories, then the hidden paths */
	uint32_t n_hidden;
	uint32_t n_filters; /* a container's (rd_confine): after the paths, each a uint32_t length
	                     * and that many struct sock_filter */
	int64_t since_s, since_ns; /* when the session started (rd_view_since) */
	char
	    apparmor[256]; /* the agent's AppArmor profile (rd_confine), NUL-terminated; "": none */
};

/* In the zygote, once: the container's filters (rd_confine) every command loads last, and the
 * AppArmor profile it execs under ("": none). The reaper keeps the pointers. */
void rd_reaper_keep_confine(const struct sock_fprog *filters, size_t n, const char *apparmor);

/* A request: clone one reaper. The child's four fds come with it (SCM_RIGHTS, in the order of
 * RD_REAPER_*), and a preset's filter and mask paths follow this header. */
struct zygote_req {
	uint32_t preset; /* ZP_* */
	uint32_t net_none;
	uint32_t n_masks;
	uint32_t filter_len; /* the filter that follows stays 8-aligned */
};

enum {
	ZP_NONE, /* no preset */
	ZP_NEW,  /* this one, in the message: keep it */
	ZP_LAST, /* the one kept from an earlier request */
	/* No reaper, no fds, no answer: the shadow directory n_masks made again
	 * (rd_view_shadow_refresh); on an error the zygote exits */
	ZP_REFRESH,
};

/* The answer: the reaper's pid, or err; its pidfd comes with it (SCM_RIGHTS). */
struct zygote_reply {
	int32_t pid;
	int32_t err;
};

/* Largest request; a larger preset is not sent (the sandbox is then forked by runnerd). */
#define ZYGOTE_MAX_MSG (64 * 1024)

/* Ask the zygote to clone a reaper, runnerd's child (CLONE_PARENT), in new pid, mount and IPC
 * namespaces, running rd_reaper_main on fds (sent, not closed) with preset. Returns 0, or
 * -errno: -EMSGSIZE for a preset too large to send (the zygote is fine), anything else when the
 * zygote is gone (z->lost). */
int rd_zygote_request(struct rd_zygote *z, const struct rd_sandbox_preset *preset,
                      const int fds[RD_REAPER_NFDS], struct rd_error *err);

/* The answer to the oldest request: the reaper's pid, with its pidfd in *pidfd, or -errno (a
 * failed clone; or the zygote is gone: z->lost). Waits for it. */
long rd_zygote_answer(struct rd_zygote *z, int *pidfd, struct rd_error *err);

#endif
