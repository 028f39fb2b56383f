#include "sandbox/maskwatch.h"
#include "lib/syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct rd_watched {
	int wd;
	char *path;
};

/* IN_ATTRIB: a mode change can open a directory the spare could not search. */
#define EVENTS                                                                                     \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF |        \
	 IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)

/* Watch the directory path; 1 if it is not there (nor anything under it), 0, or -errno. A
 * symlink on the way: -ELOOP, for the watch would be on where it leads, whose own ancestors
 * no one watches (the paths are then looked up at every exec). A directory that cannot be
 * read but can be searched (mode 0311: what is in it is reached by name, and inotify wants
 * read permission): -EACCES, for the same reason. */
static int add_dir(struct rd_mask_watch *w, const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		return -ELOOP;
	int wd = inotify_add_watch(w->fd, path, EVENTS);
	if (wd < 0 && errno == EACCES && access(path, X_OK) == 0)
		return -EACCES;
	if (wd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 1 : -errno;
	/* One directory may be reached by two paths (bind mounts): each is kept. */
	for (size_t i = 0; i < w->n_dirs; i++)
		if (w->dirs[i].wd == wd && strcmp(w->dirs[i].path, path) == 0)
			return 0;
	if (w->n_dirs == w->cap_dirs) {
		size_t cap = w->cap_dirs ? 2 * w->cap_dirs : 16;
		struct rd_watched *d = realloc(w->dirs, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		w->dirs = d;
		w->cap_dirs = cap;
	}
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	w->dirs[w->n_dirs++] = (struct rd_watched){wd, copy};
	return 0;
}

/* Every directory on the way to every masked path, as far as they exist. */
static int arm(struct rd_mask_watch *w)
{
	char buf[PATH_MAX];
	for (size_t i = 0; i < w->n_masks; i++) {
		size_t n = strlen(w->masks[i]);
		if (w->masks[i][0] != '/' || n >= sizeof(buf))
			continue;
		memcpy(buf, w->masks[i], n + 1);
		for (size_t at = 0; at < n; at++) {
			if (buf[at] != '/')
				continue;
			buf[at] = '\0';
			int r = add_dir(w, at ? buf : "/");
			buf[at] = '/';
			if (r < 0)
				return r;
			if (r > 0)
				break;
		}
	}
	w->rearm = false;
	return 0;
}

int rd_mask_watch_init(struct rd_mask_watch *w, char *const *masks, size_t n_masks)
{
	*w = RD_MASK_WATCH_NONE;
	w->masks = masks;
	w->n_masks = n_masks;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	int r = w->fd < 0 ? -errno : arm(w);
	if (r < 0)
		rd_mask_watch_free(w);
	return r;
}

/* Is the name in the directory watched as wd, by any of its paths, a masked path, or on the
 * way to one? */
static bool relevant(const struct rd_mask_watch *w, int wd, const char *name)
{
	bool known = false;
	size_t nl = strlen(name);
	for (size_t d = 0; d < w->n_dirs; d++) {
		if (w->dirs[d].wd != wd)
			continue;
		known = true;
		const char *dir = w->dirs[d].path;
		size_t dl = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
		for (size_t i = 0; i < w->n_masks; i++) {
			const char *m = w->masks[i];
			if (strncmp(m, dir, dl) == 0 && m[dl] == '/' &&
			    strncmp(m + dl + 1, name, nl) == 0 &&
			    (m[dl + 1 + nl] == '\0' || m[dl + 1 + nl] == '/'))
				return true;
		}
	}
	return !known; /* a watch we do not know: say it changed */
}

uint64_t rd_mask_watch_gen(struct rd_mask_watch *w)
{
	if (w->fd < 0)
		return w->gen;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const void *)p;
			p += sizeof(*e) + e->len;
			bool self = e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED |
			                       IN_UNMOUNT | IN_Q_OVERFLOW);
			if (self || (e->len && relevant(w, e->wd, e->name))) {
				w->gen++;
				w->rearm = true;
			}
		}
	}
	/* Watches that cannot be placed again: the paths are looked up at every exec. */
	if (w->rearm && arm(w) < 0) {
		rd_mask_watch_free(w);
		w->gen++;
	}
	return w->gen;
}

/* The last close of an inotify instance waits for the kernel's reaper of its watches (a delayed
 * work and an SRCU grace period: about 20 ms here, measured at runnerd's end), which would
 * delay runnerd's exit, and so its caller, by as much. A child of runnerd's holds the last
 * reference instead: it closes everything else, waits until runnerd has let go of fd (the pipe's
 * EOF), closes it and exits. Without a child, the close is done here. */
static void close_apart(int fd)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0) {
		close(fd);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		unsigned lo = (unsigned)(fd < go[0] ? fd : go[0]),
		         hi = (unsigned)(fd < go[0] ? go[0] : fd);
		if (lo > 0)
			rd_close_range(0, lo - 1, 0);
		if (hi > lo + 1)
			rd_close_range(lo + 1, hi - 1, 0);
		rd_close_range(hi + 1, ~0U, 0);
		char c;
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		close(fd);
		_exit(0);
	}
	close(fd);
	close(go[0]);
	close(go[1]);
	/* Reaped by runnerd's loop like any child it does not know, or by init after runnerd. */
	(void)pid;
}

static void release(struct rd_mask_watch *w, bool apart)
{
	if (w->fd >= 0 && apart)
		close_apart(w->fd);
	else if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->n_dirs; i++)
		free(w->dirs[i].path);
	free(w->dirs);
	uint64_t gen = w->gen;
	*w = RD_MASK_WATCH_NONE;
	w->gen = gen;
}

void rd_mask_watch_free(struct rd_mask_watch *w)
{
	release(w, false);
}

void rd_mask_watch_end(struct rd_mask_watch *w)
{
	release(w, true);
}
