/* What changed in the view's shadow directories (view.h): the zygote shows each as it was when
 * it made it, so runnerd has it made again once what the directory holds has changed (an
 * entry made, removed, or another file renamed over one), and no sandbox made before is used
 * again (rd_zygote_refresh). Told by inotify; what counts is what the directory holds when
 * runnerd looks, its hidden names left out: the agent writing ~/.claude.json again (a
 * temporary file, renamed over it) changes nothing a command sees. */
#ifndef RD_SANDBOX_SHADOWWATCH_H
#define RD_SANDBOX_SHADOWWATCH_H

#include "sandbox/view.h"
#include "sandbox/zygote.h"

#include <stdbool.h>
#include <stddef.h>

struct rd_shadow_dir;

struct rd_shadow_watch {
	int fd; /* inotify; -1: none (each check reads every directory) */
	const struct rd_view_paths *view;
	struct rd_shadow_dir *dirs; /* one for each of view->shadow */
	size_t n_dirs;
};

#define RD_SHADOW_WATCH_NONE ((struct rd_shadow_watch){.fd = -1})

/* Watch view's shadow directories (the caller's memory, unchanged until rd_shadow_watch_free),
 * as they are now. 0 or -ENOMEM; without inotify (or its limits reached) every check reads
 * them all. */
int rd_shadow_watch_init(struct rd_shadow_watch *w, const struct rd_view_paths *view);

/* Each shadow directory whose entries changed since it was last seen, made again by z's zygote
 * (rd_zygote_refresh). Returns how many. */
size_t rd_shadow_watch_check(struct rd_shadow_watch *w, struct rd_zygote *z);

void rd_shadow_watch_free(struct rd_shadow_watch *w);

#endif
