/* What changed in the view's shadow directories (view.h): the zygote shows each as it was when
 * it made it, so runnerd has it made again once an entry was made, removed or renamed there
 * (inotify, watched from before the zygote makes them), and no sandbox made before is used
 * again (rd_zygote_refresh). Hidden names do not count (rd_view_hidden): the agent writing
 * ~/.claude.json again changes nothing a command sees. Any other event does, even if the
 * directory holds the same names by the time runnerd looks: the zygote may have read it in
 * between (an entry made and gone again). */
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

/* Watch view's shadow directories (the caller's memory, unchanged until rd_shadow_watch_free).
 * 0 or -ENOMEM; without inotify (or its limits reached) every check makes them all again, and
 * runnerd says so. */
int rd_shadow_watch_init(struct rd_shadow_watch *w, const struct rd_view_paths *view);

/* Each shadow directory whose entries changed since it was last made, made again by z's zygote
 * (rd_zygote_refresh); one that holds more than RD_VIEW_SHADOW_MAX entries now with the names
 * it held alone (view.c), which runnerd says once. Returns how many. */
size_t rd_shadow_watch_check(struct rd_shadow_watch *w, struct rd_zygote *z);

/* A shadow directory removed or moved since the session started (rm -rf ~/.docker, then a
 * login making it again): the mount the zygote put on it went with it, and a command would see
 * the new one's files, the masked ones too, as they are. Its path, or NULL. */
const char *rd_shadow_watch_gone(struct rd_shadow_watch *w);

void rd_shadow_watch_free(struct rd_shadow_watch *w);

#endif
