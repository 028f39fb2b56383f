#include "sandbox/shadowwatch.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

struct rd_shadow_dir {
	int wd;       /* -1: not watched */
	bool dirty;   /* an entry came, went or was replaced since it was made */
	bool said;    /* that it holds too many entries to be made again */
	bool gone;    /* removed or moved: the zygote's shadow is off it, and stays off */
	bool recheck; /* events were lost: gone is told by its device and inode */
	dev_t dev;
	ino_t ino;
};

#define EVENTS                                                                                     \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |     \
	 IN_ONLYDIR | IN_DONT_FOLLOW)

int rd_shadow_watch_init(struct rd_shadow_watch *w, const struct rd_view_paths *view)
{
	*w = RD_SHADOW_WATCH_NONE;
	w->view = view;
	if (!view || !view->n_shadow)
		return 0;
	w->dirs = calloc(view->n_shadow, sizeof(*w->dirs));
	if (!w->dirs)
		return -ENOMEM;
	w->n_dirs = view->n_shadow;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	bool all = w->fd >= 0;
	for (size_t i = 0; i < w->n_dirs; i++) {
		struct rd_shadow_dir *d = &w->dirs[i];
		d->wd = w->fd >= 0 ? inotify_add_watch(w->fd, view->shadow[i], EVENTS) : -1;
		struct stat st;
		if (lstat(view->shadow[i], &st) == 0) {
			d->dev = st.st_dev;
			d->ino = st.st_ino;
		}
		d->recheck = d->wd < 0;
		/* Unwatched (no inotify, the user's limit of watches): made again at every check.
		 */
		d->dirty = d->wd < 0;
		all = all && d->wd >= 0;
	}
	if (!all)
		fprintf(stderr,
		        "runnerd: cannot watch the directories of masked files (inotify: %s): the "
		        "zygote makes them again before every sandbox\n",
		        strerror(errno));
	return 0;
}

/* dir/name (dir: the shadow directory i) removed, renamed away, or another renamed over it (or
 * made there: after it went): if it is a shadow directory itself, it is gone. Its own
 * IN_DELETE_SELF does not come while the zygote holds it open. */
static void entry_gone(struct rd_shadow_watch *w, size_t i, const char *name)
{
	const char *dir = w->view->shadow[i];
	size_t len = strcmp(dir, "/") ? strlen(dir) : 0;
	for (size_t k = 0; k < w->n_dirs; k++) {
		const char *p = w->view->shadow[k];
		if (strncmp(p, dir, len) == 0 && p[len] == '/' && strcmp(p + len + 1, name) == 0)
			w->dirs[k].gone = true;
	}
}

/* The events queued: each directory with an entry made, removed or renamed there, other than
 * a hidden one (the agent writing ~/.claude.json again changes nothing a command sees), is to
 * be made again; all of them, for an overflowed queue. */
static void drain(struct rd_shadow_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const uint32_t self = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT;
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;
			p += sizeof(*ev) + ev->len;
			for (size_t i = 0; i < w->n_dirs; i++) {
				struct rd_shadow_dir *d = &w->dirs[i];
				if (ev->mask & IN_Q_OVERFLOW) {
					d->dirty = d->recheck = true;
					continue;
				}
				if (d->wd != ev->wd)
					continue;
				if (ev->mask & self) {
					d->gone = true;
					continue;
				}
				if (ev->len && (ev->mask & (IN_DELETE | IN_MOVED_FROM |
				                            IN_MOVED_TO | IN_CREATE)))
					entry_gone(w, i, ev->name);
				d->dirty = d->dirty || !ev->len ||
				           !rd_view_hidden(w->view, w->view->shadow[i], ev->name,
				                           ev->mask & IN_ISDIR);
			}
		}
	}
}

/* path's entries, at most RD_VIEW_SHADOW_MAX + 1 counted. */
static size_t count(const char *path)
{
	DIR *d = opendir(path);
	size_t n = 0;
	if (!d)
		return 0;
	for (struct dirent *e; n <= RD_VIEW_SHADOW_MAX && (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

size_t rd_shadow_watch_check(struct rd_shadow_watch *w, struct rd_zygote *z)
{
	if (!w->n_dirs)
		return 0;
	if (w->fd >= 0)
		drain(w);
	size_t made = 0;
	for (size_t i = 0; i < w->n_dirs; i++) {
		struct rd_shadow_dir *d = &w->dirs[i];
		if (!d->dirty)
			continue;
		d->dirty = d->wd < 0;
		/* Past the most the view holds: made again with the names it held alone (those
		 * gone or replaced go, none comes; view.c, shadow_build), said once. */
		if (!d->said && count(w->view->shadow[i]) > RD_VIEW_SHADOW_MAX) {
			fprintf(stderr,
			        "runnerd: %s holds more than %d entries now: commands see no entry "
			        "made there from now on, until the session ends\n",
			        w->view->shadow[i], RD_VIEW_SHADOW_MAX);
			d->said = true;
		}
		rd_zygote_refresh(z, i);
		made++;
	}
	return made;
}

const char *rd_shadow_watch_gone(struct rd_shadow_watch *w)
{
	if (w->fd >= 0)
		drain(w);
	for (size_t i = 0; i < w->n_dirs; i++) {
		struct rd_shadow_dir *d = &w->dirs[i];
		struct stat st;
		/* Unwatched, or events lost: the directory there now, still the one it was? */
		if (d->recheck && !d->gone)
			d->gone = lstat(w->view->shadow[i], &st) < 0 || st.st_dev != d->dev ||
			          st.st_ino != d->ino;
		d->recheck = d->wd < 0;
		if (d->gone)
			return w->view->shadow[i];
	}
	return NULL;
}

void rd_shadow_watch_free(struct rd_shadow_watch *w)
{
	free(w->dirs);
	if (w->fd >= 0)
		close(w->fd);
	*w = RD_SHADOW_WATCH_NONE;
}
