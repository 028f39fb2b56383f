/* What changed at the masked paths of a spare's preset, told by inotify rather than looked up
 * at every exec. Each directory on the way to a masked path that exists is watched for names
 * coming, going and moving, and for itself going; an event whose name is a masked path or a
 * directory on the way to one (or any event that says less: a queue overflow, a watch lost)
 * makes a new generation. A spare made in one generation, used in the same, finds every
 * masked path as it left it: runnerd skips looking them up again (sandbox/launch.c). Events
 * are queued by the very call that made the change, so draining the queue sees every change
 * done before. */
#ifndef RD_SANDBOX_MASKWATCH_H
#define RD_SANDBOX_MASKWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rd_mask_watch {
	int fd; /* inotify; -1: none (the paths are looked up at every exec) */
	uint64_t gen;
	bool rearm; /* the watches must be placed again (a directory came or went) */
	char *const *masks;
	size_t n_masks;
	struct rd_watched *dirs;
	size_t n_dirs, cap_dirs;
};

#define RD_MASK_WATCH_NONE ((struct rd_mask_watch){.fd = -1})

/* Watch the directories on the way to masks (absolute paths; the caller's memory, unchanged
 * until rd_mask_watch_free). Returns 0, or -errno (no inotify, the user's limit of watches or
 * instances reached): w is then RD_MASK_WATCH_NONE, and every exec looks the paths up. */
int rd_mask_watch_init(struct rd_mask_watch *w, char *const *masks, size_t n_masks);

/* The generation now, after every queued event. */
uint64_t rd_mask_watch_gen(struct rd_mask_watch *w);

/* Does w work (else the generation says nothing)? */
static inline bool rd_mask_watch_on(const struct rd_mask_watch *w)
{
	return w && w->fd >= 0;
}

/* Close and forget the watches; their last close waits for the kernel (close_apart in
 * maskwatch.c), here. */
void rd_mask_watch_free(struct rd_mask_watch *w);

/* The same at runnerd's end: a child of runnerd's does the last close, so that runnerd's exit,
 * and its caller, do not wait for it (forks once). */
void rd_mask_watch_end(struct rd_mask_watch *w);

#endif
