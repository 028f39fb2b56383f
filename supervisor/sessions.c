#include "supervisor/sessions.h"
#include "lib/file.h"
#include "lib/strv.h"
#include "lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The time in ms, as the kernel stamps inodes' change times: for a session's start, the
 * coarse clock's (the last tick's), which no later change is stamped before; for its end (up),
 * the fine clock's, rounded up, which no change before it is stamped past. The coarse clock's
 * would not do there: with multigrain timestamps (Linux 6.13), a change is stamped by the fine
 * clock once its time has been looked at, up to a tick past the coarse clock read after it
 * (docs/kernel-notes.md). */
static long long now_ms(bool up)
{
	struct timespec t;
	clock_gettime(up ? CLOCK_REALTIME : CLOCK_REALTIME_COARSE, &t);
	return (long long)t.tv_sec * 1000 + (t.tv_nsec + (up ? 999999 : 0)) / 1000000;
}

/* The places that may list the user's sessions (each holds sessions/), in the order a session
 * lists itself in the first it can use: /run/runnerd as root; else /run/user/UID/runnerd where
 * /run/user/UID is the user's, then /tmp/runnerd-UID. /run/user/UID comes with a login and
 * goes with the last logout, so sessions of one user may be listed in either: every reader
 * reads both. Their count. */
static int bases(char out[SUP_SESSIONS_BASES][64])
{
	uid_t uid = geteuid();
	struct stat st;
	int n = 0;
	if (uid == 0) {
		snprintf(out[n++], 64, "/run/runnerd");
		return n;
	}
	snprintf(out[0], 64, "/run/user/%u", (unsigned)uid);
	if (lstat(out[0], &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		snprintf(out[n++], 64, "/run/user/%u/runnerd", (unsigned)uid);
	snprintf(out[n++], 64, "/tmp/runnerd-%u", (unsigned)uid);
	return n;
}

/* base's sessions/ into path, if it is the user's own 0700 directory: one that is missing,
 * or another's, lists none of the user's sessions (none could list itself there). */
static bool listing(const char *base, char path[PATH_MAX])
{
	struct stat st;
	snprintf(path, PATH_MAX, "%s/sessions", base);
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077);
}

/* How long a session waits for another's start (sup_sessions_start), in ms. */
#define LOCK_WAIT_MS 10000

/* dir/lock, held (flock, exclusive) within LOCK_WAIT_MS: its fd, or -errno with err set. */
static int lock_one(const char *dir, struct rd_error *err)
{
	char path[PATH_MAX + 8];
	snprintf(path, sizeof(path), "%s/lock", dir);
	int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return rd_error_set(err, errno, "%s: %s", path, strerror(errno));
	/* Not for ever: a session stopped (^Z) while it starts must not hold the others'. */
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited++) {
		int e = errno;
		if ((e != EWOULDBLOCK && e != EINTR) || waited >= LOCK_WAIT_MS) {
			close(fd);
			return rd_error_set(err, e == EWOULDBLOCK ? ETIMEDOUT : e, "%s: %s", path,
			                    e == EWOULDBLOCK
			                        ? "another runnerd session has held it "
			                          "for 10 s while starting"
			                        : strerror(e));
		}
		usleep(1000);
	}
	return fd;
}

int sup_sessions_start(int held[SUP_SESSIONS_BASES], char **dir, struct rd_error *err)
{
	char base[SUP_SESSIONS_BASES][64], path[PATH_MAX];
	int n = bases(base), r = 0;
	struct rd_error made = {0};
	*dir = NULL;
	for (int i = 0; i < SUP_SESSIONS_BASES; i++)
		held[i] = -1;
	/* Each place made where it can be, and its lock taken, in one order (no two sessions
	 * wait for each other): /tmp/runnerd-UID is every user session's, whether
	 * /run/user/UID was there at its start or not, so that two starts on either side of a
	 * login are held apart. This session is listed in the first place made. */
	for (int i = 0; r == 0 && i < n; i++) {
		snprintf(path, sizeof(path), "%s/sessions", base[i]);
		if (rd_own_dir(base[i], &made) < 0 || rd_own_dir(path, &made) < 0)
			continue;
		if (!*dir && !(*dir = strdup(path)))
			r = rd_error_set(err, ENOMEM, "out of memory");
		else if ((held[i] = lock_one(path, err)) < 0)
			r = held[i];
	}
	if (r == 0 && !*dir) {
		*err = made;
		rd_error_prefix(err, "the list of the user's runnerd sessions cannot be kept: ");
		r = -err->err;
	}
	if (r < 0) {
		sup_sessions_unlock(held);
		free(*dir);
		*dir = NULL;
	}
	return r;
}

void sup_sessions_unlock(int held[SUP_SESSIONS_BASES])
{
	for (int i = 0; i < SUP_SESSIONS_BASES; i++) {
		if (held[i] >= 0)
			close(held[i]);
		held[i] = -1;
	}
}

/* Each path of l as a line of its own, after tag; a path with a newline cannot be listed. */
static int put_lines(FILE *f, char tag, char *const *l, size_t n, const struct rd_view_paths *v)
{
	for (size_t i = 0; i < n; i++) {
		bool layer = false;
		for (size_t k = 0; v && k < v->n_layers; k++)
			layer = layer || strcmp(v->layers[2 * k], l[i]) == 0;
		if (layer || (v && strcmp(l[i], "/dev/shm") == 0))
			continue; /* written through a layer of its own, or its own tmpfs */
		if (strchr(l[i], '\n'))
			return -EINVAL;
		if (fprintf(f, "%c\t%s\n", tag, l[i]) < 0)
			return -EIO;
	}
	return 0;
}

int sup_sessions_list(const char *dir, const struct rd_session *s, struct sup_listed *out)
{
	*out = (struct sup_listed){.fd = -1};
	char *path = NULL, *tmp = NULL;
	int r = 0;
	/* Named by the session's id: unique across pid namespaces, where pids are not. */
	if (asprintf(&path, "%s/%d-%s", dir, (int)getpid(), s->session) < 0 ||
	    asprintf(&tmp, "%s.tmp", path) < 0)
		r = -ENOMEM;
	int fd =
	    r == 0 ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	if (r == 0 && fd < 0)
		r = -errno;
	/* Live while this lock is held: by this process, and whatever it forked, until the last
	 * of them is gone (in any pid namespace: the lock is the file's). Taken before the entry
	 * has its name, so that no reader ever finds it named and unlocked. */
	if (r == 0)
		r = rd_lock_take(fd);
	FILE *f = NULL;
	if (r == 0 && !(f = fdopen(dup(fd), "w")))
		r = -errno;
	if (r == 0 && s->workspace && !strchr(s->workspace, '\n') &&
	    fprintf(f, "s\t%s\n", s->workspace) < 0)
		r = -EIO;
	if (r == 0 && fprintf(f, "t\t%lld\n", now_ms(false)) < 0)
		r = -EIO;
	if (r == 0)
		r = put_lines(f, 'w', s->any_rule.write, s->any_rule.n_write, &s->view);
	if (r == 0)
		r = put_lines(f, 'p', s->any_rule.protect, s->any_rule.n_protect, NULL);
	if (r == 0 && s->missing)
		r = put_lines(f, 'm', s->missing->v, s->missing->n, NULL);
	if (f && fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0 && tmp)
		unlink(tmp);
	free(tmp);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		free(path);
	} else
		*out = (struct sup_listed){.path = path, .fd = fd};
	return r;
}

/* The ended entries kept, at most; past it, the oldest are folded into one (prune). */
#define ENDED_MAX 256
/* The paths a folded entry holds, at most: past it, each is taken up to its directory. The
 * runs it holds, at most: past it, the two closest are taken as one, the time between too. */
#define FOLD_MAX 4096

struct ended {
	long long t; /* its name's end, in seconds */
	char *name;
};

static int by_time(const void *a, const void *b)
{
	long long x = ((const struct ended *)a)->t, y = ((const struct ended *)b)->t;
	return (x > y) - (x < y);
}

static int take_fd(int fd, int pid, bool ended, long long ended_at, struct peer *p);
static void peer_free(struct peer *p);

/* path added to l unless l has it. */
static int add_once(struct rd_strv *l, const char *path)
{
	return rd_strv_contains(l, path) ? 0 : rd_strv_add(l, path);
}

/* l's paths each taken up to its directory ("/" stays), until at most FOLD_MAX are left. */
static int collapse(struct rd_strv *l)
{
	while (l->n > FOLD_MAX) {
		struct rd_strv up = {0};
		int r = 0;
		for (size_t i = 0; r == 0 && i < l->n; i++) {
			char *slash = strrchr(l->v[i], '/');
			char *dir = strndup(
			    l->v[i], slash && slash != l->v[i] ? (size_t)(slash - l->v[i]) : 1);
			r = dir ? add_once(&up, dir) : -ENOMEM;
			free(dir);
		}
		rd_strv_free(l);
		*l = up;
		if (r < 0)
			return r;
	}
	return 0;
}

/* Runs (start, end pairs), n of them. */
struct spans {
	long long *v;
	size_t n;
};

static int span_add(struct spans *s, long long a, long long b)
{
	long long *g = realloc(s->v, (s->n + 1) * 2 * sizeof(*g));
	if (!g)
		return -ENOMEM;
	s->v = g;
	g[2 * s->n] = a;
	g[2 * s->n++ + 1] = b;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* s's runs in order, those that overlap as one, and at most FOLD_MAX: past it, the two with
 * the least time between them as one (which takes that time in too). */
static void span_merge(struct spans *s)
{
	if (!s->n)
		return;
	qsort(s->v, s->n, 2 * sizeof(*s->v), by_start);
	size_t n = 1;
	for (size_t i = 1; i < s->n; i++) {
		long long *last = &s->v[2 * (n - 1)];
		if (s->v[2 * i] <= last[1]) {
			last[1] = s->v[2 * i + 1] > last[1] ? s->v[2 * i + 1] : last[1];
			continue;
		}
		s->v[2 * n] = s->v[2 * i];
		s->v[2 * n++ + 1] = s->v[2 * i + 1];
	}
	while (n > FOLD_MAX) {
		size_t at = 1;
		for (size_t i = 2; i < n; i++)
			if (s->v[2 * i] - s->v[2 * i - 1] < s->v[2 * at] - s->v[2 * at - 1])
				at = i;
		s->v[2 * at - 1] = s->v[2 * at + 1];
		memmove(&s->v[2 * at], &s->v[2 * at + 2], (n - at - 1) * 2 * sizeof(*s->v));
		n--;
	}
	s->n = n;
}

/* The folded entry of ended sessions: their places and their runs, written as an ended entry
 * of its own (renamed into place whole), its start the first run's, its end the last's. 0 or
 * -errno. */
static int fold_write(int dir, const struct rd_strv *places, const struct spans *runs)
{
	long long start = runs->v[0], end = runs->v[2 * runs->n - 1];
	unsigned char id[16];
	char name[96], tmp[128];
	if (getrandom(id, sizeof(id), 0) != sizeof(id))
		return -EIO;
	int at = snprintf(name, sizeof(name), "ended-%lld-0-", end / 1000);
	for (size_t i = 0; i < sizeof(id); i++)
		at += snprintf(name + at, sizeof(name) - (size_t)at, "%02x", id[i]);
	snprintf(tmp, sizeof(tmp), ".%s", name);
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	fprintf(f, "t\t%lld\n", start);
	for (size_t i = 0; i < runs->n; i++)
		fprintf(f, "r\t%lld\t%lld\n", runs->v[2 * i], runs->v[2 * i + 1]);
	for (size_t i = 0; i < places->n; i++)
		fprintf(f, "w\t%s\n", places->v[i]);
	fprintf(f, "e\t%lld\n", end);
	int r = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dir, tmp, dir, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dir, tmp, 0);
	return r;
}

/* dir's ended entries past ENDED_MAX, oldest first (by their names' end times), folded into one
 * entry: every place their commands could write (their writable roots and the paths missing at
 * their starts; not their protected paths, which some of them could write), and each one's run.
 * No session's run is dropped, and the list stays bounded; a grant's check then counts what
 * changed in any of their places during any of their runs. Where one cannot be read, nothing
 * is folded. */
static void prune(int dir)
{
	DIR *d = fdopendir(dup(dir));
	if (!d)
		return;
	struct ended *v = NULL;
	size_t n = 0, cap = 0;
	for (struct dirent *e; (e = readdir(d));) {
		long long t;
		if (sscanf(e->d_name, "ended-%lld-", &t) != 1)
			continue;
		if (n == cap) {
			struct ended *g = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
			if (!g)
				break;
			v = g;
		}
		if (!(v[n].name = strdup(e->d_name)))
			break;
		v[n++].t = t;
	}
	closedir(d);
	struct rd_strv places = {0};
	struct spans runs = {0};
	size_t k = n > ENDED_MAX ? n - ENDED_MAX + 1 : 0;
	int r = 0;
	if (k)
		qsort(v, n, sizeof(*v), by_time);
	for (size_t i = 0; r == 0 && i < k; i++) {
		struct peer p;
		int fd = openat(dir, v[i].name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			r = errno == ENOENT ? 0 : -errno; /* folded by another meanwhile */
			continue;
		}
		if ((r = take_fd(fd, 0, true, v[i].t, &p)) < 0)
			break;
		r = p.n_spans ? 0 : span_add(&runs, p.start, p.end);
		for (size_t j = 0; r == 0 && j < p.n_spans; j++)
			r = span_add(&runs, p.spans[2 * j], p.spans[2 * j + 1]);
		for (size_t j = 0; r == 0 && j < p.write.n; j++)
			r = add_once(&places, p.write.v[j]);
		for (size_t j = 0; r == 0 && j < p.missing.n; j++)
			r = add_once(&places, p.missing.v[j]);
		peer_free(&p);
	}
	span_merge(&runs);
	if (k && r == 0 && runs.n && (r = collapse(&places)) == 0 &&
	    (r = fold_write(dir, &places, &runs)) == 0)
		for (size_t i = 0; i < k; i++)
			unlinkat(dir, v[i].name, 0);
	free(runs.v);
	rd_strv_free(&places);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

void sup_sessions_unlist(struct sup_listed *l)
{
	if (!l->path)
		return;
	/* Kept as ended, with its end: what its commands wrote stays (a hook in another
	 * session's repository), and a grant's check still counts what changed meanwhile.
	 * Its end, where it can be written (else the time in its new name stands for it), the
	 * entry renamed as ended, and only then its lock let go; where it cannot be renamed, left
	 * as it is, unlocked, for the next reader to take as ended. Never removed: a hook its
	 * commands wrote would be taken. */
	char *slash = strrchr(l->path, '/'), *ended = NULL;
	char line[32];
	int len = snprintf(line, sizeof(line), "e\t%lld\n", now_ms(true));
	if (lseek(l->fd, 0, SEEK_END) < 0 || write(l->fd, line, (size_t)len) != len) {
		/* A part of it, or none: a reader takes the name's end. */
	}
	if (slash &&
	    asprintf(&ended, "%.*s/ended-%lld-%s", (int)(slash - l->path), l->path,
	             (long long)time(NULL), slash + 1) > 0 &&
	    rename(l->path, ended) == 0) {
		char *up = strndup(l->path, (size_t)(slash - l->path));
		int d = up ? open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		free(up);
		if (d >= 0) {
			prune(d);
			close(d);
		}
	}
	free(ended);
	close(l->fd);
	free(l->path);
	*l = (struct sup_listed){.fd = -1};
}

static void peer_free(struct peer *p)
{
	free(p->spans);
	free(p->workspace);
	rd_strv_free(&p->write);
	rd_strv_free(&p->protect);
	rd_strv_free(&p->missing);
}

void sup_sessions_peers_free(struct peers *pe)
{
	for (size_t i = 0; i < pe->n; i++)
		peer_free(&pe->v[i]);
	free(pe->v);
	pe->v = NULL;
	pe->n = 0;
}

static int take_fd(int fd, int pid, bool ended, long long ended_at, struct peer *p);

/* A live entry's name: its runnerd's pid and its session's id. */
static bool live_name(const char *name, int *pid)
{
	char id[33], end;
	return sscanf(name, "%d-%32[0-9a-f]%c", pid, id, &end) == 2 && strlen(id) == 32;
}

/* The entry at dir/name, of a session other than self (the name of this session's entry, or
 * NULL), into p: live, or ended (one whose lock no one holds, its runnerd and all it forked
 * gone, is renamed as ended here); 1 if it is taken, 0 if it is no entry (or an ended one
 * pruned since readdir), -errno if it cannot be read (-EAGAIN: a live one was renamed as
 * ended meanwhile, and readdir may not show its new name). */
static int take(int dir, const char *name, const char *self, struct peer *p)
{
	int pid;
	long long ended_at = 0;
	bool ended = strncmp(name, "ended-", 6) == 0;
	const char *after = ended ? strchr(name + 6, '-') : NULL;
	if (ended &&
	    (sscanf(name, "ended-%lld-", &ended_at) != 1 || !after || !live_name(after + 1, &pid)))
		return 0;
	if (!ended && (!live_name(name, &pid) || (self && strcmp(name, self) == 0)))
		return 0;
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno != ENOENT ? -errno : ended ? 0 : -EAGAIN;
	int held = ended ? 1 : rd_lock_held(fd);
	if (held < 0) {
		close(fd);
		return held;
	}
	/* A live entry whose runnerd is gone (killed): ended by now, and kept so. */
	if (!held) {
		char to[NAME_MAX + 64];
		ended_at = (long long)time(NULL);
		snprintf(to, sizeof(to), "ended-%lld-%s", ended_at, name);
		if (renameat(dir, name, dir, to) < 0) {
			int e = errno;
			close(fd);
			return e == ENOENT ? -EAGAIN : -e;
		}
		ended = true;
	}
	return take_fd(fd, pid, ended, ended_at, p);
}

/* take's entry, from its fd (closed here). */
static int take_fd(int fd, int pid, bool ended, long long ended_at, struct peer *p)
{
	char *text = NULL;
	ssize_t n = rd_read_fd(fd, 1 << 20, &text);
	close(fd);
	if (n < 0)
		return (int)n;
	int r = 0;
	/* Its end, in ms: from its "e" line, else (killed) the time in its name, in seconds. */
	*p = (struct peer){.pid = pid, .ended = ended, .end = ended_at * 1000 + 999};
	for (char *line = text, *next; r == 0 && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strlen(line) < 3 || line[1] != '\t')
			continue;
		/* A folded entry's run of one of its sessions: "r", its start and end. */
		if (line[0] == 'r' && next) {
			long long a, b;
			char c;
			if (sscanf(line + 2, "%lld\t%lld%c", &a, &b, &c) != 2 || b < a)
				continue;
			struct spans runs = {p->spans, p->n_spans};
			r = span_add(&runs, a, b);
			p->spans = runs.v;
			p->n_spans = runs.n;
			continue;
		}
		/* A time taken whole alone: an "e" line cut short (a full file system when it
		 * was written) would say an end long before the session's, and an end before
		 * its start none; then the name's stands. */
		if (line[0] == 't' || line[0] == 'e') {
			char *end;
			errno = 0;
			long long at = strtoll(line + 2, &end, 10);
			if (next && !*end && end != line + 2 && !errno &&
			    (line[0] == 't' || at >= p->start))
				*(line[0] == 't' ? &p->start : &p->end) = at;
			continue;
		}
		if (line[2] != '/')
			continue;
		struct rd_strv *to = line[0] == 'w'   ? &p->write
		                     : line[0] == 'p' ? &p->protect
		                     : line[0] == 'm' ? &p->missing
		                                      : NULL;
		if (to)
			r = rd_strv_add(to, line + 2);
		else if (line[0] == 's' && !p->workspace && !(p->workspace = strdup(line + 2)))
			r = -ENOMEM;
	}

	free(text);
	if (r < 0)
		peer_free(p);
	return r < 0 ? r : 1;
}

void sup_sessions_load(struct sup *u)
{
	u->pe.hit = false;
	if (u->s->sessions_dir)
		sup_sessions_read(u->s->sessions_self, &u->pe);
}

/* sup_sessions_read's one pass: -EAGAIN where an entry was renamed meanwhile. */
static int read_once(const char *dir, const char *self, struct peers *pe)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		return e == ENOENT ? 0 : -e; /* none yet: no other session */
	}
	int r = 0;
	while (r == 0) {
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e) {
			r = -errno;
			break;
		}
		struct peer p;
		struct peer *grown = realloc(pe->v, (pe->n + 1) * sizeof(*pe->v));
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		pe->v = grown;
		int t = take(dirfd(d), e->d_name, self, &p);
		if (t > 0)
			pe->v[pe->n++] = p;
		r = t < 0 ? t : 0;
	}
	closedir(d);
	return r;
}

void sup_sessions_read(const char *self, struct peers *pe)
{
	char base[SUP_SESSIONS_BASES][64], dir[PATH_MAX];
	int n = bases(base), r = 0;
	/* Read again where a session ended while it was read: a few times, then refused. */
	for (int i = 0; i < 5 && (i == 0 || r == -EAGAIN); i++) {
		sup_sessions_peers_free(pe);
		r = 0;
		for (int k = 0; r == 0 && k < n; k++)
			if (listing(base[k], dir))
				r = read_once(dir, self, pe);
	}
	pe->err = -r;
}

/* Did st change while ended session p's commands could write (its change time in p's run)? */
static bool changed_in(const struct stat *st, const struct peer *p)
{
	long long at = (long long)st->st_ctim.tv_sec * 1000 + st->st_ctim.tv_nsec / 1000000;
	for (size_t i = 0; i < p->n_spans; i++)
		if (at >= p->spans[2 * i] && at <= p->spans[2 * i + 1])
			return true;
	return !p->n_spans && at >= p->start && at <= p->end;
}

const char *sup_sessions_writable(struct sup *u, const char *path)
{
	struct peers *pe = &u->pe;
	struct stat st;
	bool looked = false, there = false;
	/* Not read whole: where the others' commands write is not known, so anywhere. */
	if (pe->err) {
		pe->hit = true;
		snprintf(
		    pe->why, sizeof(pe->why),
		    "%s: the list of the user's other runnerd sessions could not be read (%s): "
		    "where their commands write is not known",
		    path, strerror(pe->err));
		return pe->why;
	}
	for (size_t i = 0; i < pe->n; i++) {
		const struct peer *p = &pe->v[i];
		struct rd_view_paths v = {.write = p->write.v,
		                          .n_write = p->write.n,
		                          .protect = p->protect.v,
		                          .n_protect = p->protect.n};
		const char *root = rd_view_writable_root(&v, path);
		for (size_t k = 0; !root && k < p->missing.n; k++)
			if (rd_path_within(path, p->missing.v[k]))
				root = p->missing.v[k];
		if (!root)
			continue;
		/* An ended session's commands write nothing now: what they could have written is
		 * what changed while they ran (its inode's change time, which no one can set
		 * back). */
		if (p->ended) {
			if (!looked) {
				there = lstat(path, &st) == 0;
				looked = true;
			}
			/* A file's (a hook, a configuration, a link): a directory's change time
			 * moves with every entry made or removed in it, which is no content git
			 * reads, and the files in it are judged themselves. */
			if (!there || S_ISDIR(st.st_mode))
				continue;
			/* A program's, or a hook's, directory too, below the root: a directory
			 * moved into place (a work tree's tools/ moved in as .git/hooks) keeps
			 * its files' change times, and takes one of its own. Not a
			 * configuration's: its directory (.git, the home) changes all the time. */
			char up[PATH_MAX];
			const char *slash = strrchr(path, '/');
			struct stat ust;
			bool dir = S_ISREG(st.st_mode) && (st.st_mode & 0111) && slash &&
			           slash != path &&
			           snprintf(up, sizeof(up), "%.*s", (int)(slash - path), path) <
			               (int)sizeof(up) &&
			           strcmp(up, root) != 0 && lstat(up, &ust) == 0;
			const char *moved = dir && changed_in(&ust, p) ? up : NULL;
			if (!moved && !changed_in(&st, p))
				continue;
			pe->hit = true;
			snprintf(
			    pe->why, sizeof(pe->why),
			    "%s%s%s, changed while the commands of another runnerd session "
			    "could write there (runnerd %d, workspace %s, ended): look at it, "
			    "and if it is yours, write it again (cp, then mv over it) to have it "
			    "taken",
			    moved ? "the directory " : "", moved ? moved : path,
			    moved ? " (moved or changed)" : "", (int)p->pid,
			    p->workspace ? p->workspace : "unknown");
			return pe->why;
		}
		pe->hit = true;
		snprintf(pe->why, sizeof(pe->why),
		         "%s, where the commands of another runnerd session can write (runnerd %d, "
		         "workspace %s)",
		         root, (int)p->pid, p->workspace ? p->workspace : "unknown");
		return pe->why;
	}
	return NULL;
}
