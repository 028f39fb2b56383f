#include "sandbox/shadowwatch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

struct entry {
	char *name;
	dev_t dev;
	ino_t ino;
	mode_t type;
};

struct rd_shadow_dir {
	int wd;     /* -1: not watched */
	bool dirty; /* an event came: read it again */
	struct entry *seen;
	size_t n_seen;
};

/* A directory's entries count as the same while their names, kinds and inodes are. */
#define EVENTS                                                                                     \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |     \
	 IN_ONLYDIR | IN_DONT_FOLLOW)

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void free_entries(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

/* What dir holds now, sorted by name, its hidden names left out; -errno. A directory that
 * cannot be read holds nothing. */
static int take(const struct rd_view_paths *v, const char *dir, struct entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOMEM ? -ENOMEM : 0;
	size_t cap = 0;
	int r = 0;
	for (struct dirent *e; r == 0 && (e = readdir(d));) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    rd_view_hidden(v, dir, e->d_name) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			struct entry *grown = realloc(*out, cap * sizeof(**out));
			if (!grown) {
				r = -ENOMEM;
				break;
			}
			*out = grown;
		}
		char *name = strdup(e->d_name);
		if (!name) {
			r = -ENOMEM;
			break;
		}
		(*out)[(*n)++] = (struct entry){name, st.st_dev, st.st_ino, st.st_mode & S_IFMT};
	}
	closedir(d);
	if (r < 0) {
		free_entries(*out, *n);
		*out = NULL;
		*n = 0;
		return r;
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), by_name);
	return 0;
}

static bool same(const struct entry *a, size_t na, const struct entry *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].name, b[i].name) || a[i].dev != b[i].dev || a[i].ino != b[i].ino ||
		    a[i].type != b[i].type)
			return false;
	return true;
}

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
	for (size_t i = 0; i < w->n_dirs; i++) {
		struct rd_shadow_dir *d = &w->dirs[i];
		d->wd = w->fd >= 0 ? inotify_add_watch(w->fd, view->shadow[i], EVENTS) : -1;
		/* Unwatched (the user's limit of watches): read at every check. */
		d->dirty = d->wd < 0;
		if (take(view, view->shadow[i], &d->seen, &d->n_seen) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The events queued: each directory they name is to be read again (all of them, for an
 * overflowed queue). */
static void drain(struct rd_shadow_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;
			for (size_t i = 0; i < w->n_dirs; i++)
				if ((ev->mask & IN_Q_OVERFLOW) || w->dirs[i].wd == ev->wd)
					w->dirs[i].dirty = true;
			p += sizeof(*ev) + ev->len;
		}
	}
}

size_t rd_shadow_watch_check(struct rd_shadow_watch *w, struct rd_zygote *z)
{
	if (!w->n_dirs)
		return 0;
	if (w->fd >= 0)
		drain(w);
	size_t made = 0;
	/* Deepest first, as the view lists them; one made again makes those above it again. */
	for (size_t i = 0; i < w->n_dirs; i++) {
		struct rd_shadow_dir *d = &w->dirs[i];
		if (!d->dirty)
			continue;
		d->dirty = d->wd < 0;
		struct entry *now;
		size_t n;
		if (take(w->view, w->view->shadow[i], &now, &n) < 0) {
			/* No memory to tell: made again, which is right either way. */
			rd_zygote_refresh(z, i);
			made++;
			continue;
		}
		if (same(now, n, d->seen, d->n_seen)) {
			free_entries(now, n);
			continue;
		}
		free_entries(d->seen, d->n_seen);
		d->seen = now;
		d->n_seen = n;
		rd_zygote_refresh(z, i);
		made++;
	}
	return made;
}

void rd_shadow_watch_free(struct rd_shadow_watch *w)
{
	for (size_t i = 0; i < w->n_dirs; i++)
		free_entries(w->dirs[i].seen, w->dirs[i].n_seen);
	free(w->dirs);
	if (w->fd >= 0)
		close(w->fd);
	*w = RD_SHADOW_WATCH_NONE;
}
