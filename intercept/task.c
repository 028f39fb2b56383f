#include "intercept/task.h"
#include "lib/file.h"
#include "lib/syscalls.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *field(const char *text, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, len) == 0 && p[len] == ':')
			return p + len + 1;
	return NULL;
}

int rd_task_parse_status(const char *text, struct rd_task *t, struct rd_error *err)
{
	const char *f;
	unsigned long long blk, ign;
	unsigned int um;
	unsigned u[4], g[4];
	int tgid;
	if (!(f = field(text, "Tgid")) || sscanf(f, "%d", &tgid) != 1 ||
	    !(f = field(text, "Uid")) ||
	    sscanf(f, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]) != 4 ||
	    !(f = field(text, "Gid")) ||
	    sscanf(f, "%u %u %u %u", &g[0], &g[1], &g[2], &g[3]) != 4 ||
	    !(f = field(text, "Umask")) || sscanf(f, "%o", &um) != 1 ||
	    !(f = field(text, "SigBlk")) || sscanf(f, "%llx", &blk) != 1 ||
	    !(f = field(text, "SigIgn")) || sscanf(f, "%llx", &ign) != 1 ||
	    !(f = field(text, "Groups")))
		return rd_error_set(err, EPROTO, "task %d: unexpected /proc status format", t->tid);
	t->tgid = tgid;
	for (int i = 0; i < 3; i++) {
		t->inh.uid[i] = u[i];
		t->inh.gid[i] = g[i];
	}
	t->inh.umask = (mode_t)um;
	t->inh.sig_blocked = blk;
	t->inh.sig_ignored = ign;

	const char *end = strchr(f, '\n');
	size_t n = 0, cap = 16;
	gid_t *groups = malloc(cap * sizeof(*groups));
	if (!groups)
		return rd_error_set(err, ENOMEM, "out of memory");
	for (const char *p = f; p && (!end || p < end);) {
		char *next;
		unsigned long v = strtoul(p, &next, 10);
		if (next == p)
			break;
		if (n == cap) {
			gid_t *ng =
			    cap < RD_MAX_GROUPS ? realloc(groups, 2 * cap * sizeof(*ng)) : NULL;
			if (!ng) {
				free(groups);
				return rd_error_set(err, ENOMEM, "too many groups");
			}
			groups = ng;
			cap *= 2;
		}
		groups[n++] = (gid_t)v;
		p = next;
	}
	free(t->groups);
	t->groups = groups;
	t->n_groups = n;
	return 0;
}

int rd_task_open(pid_t tid, struct rd_task *t, struct rd_error *err)
{
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pidfd = t->cwd_fd = -1;
	char path[64];
	_cleanup_free_ char *buf = NULL;
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	/* Up to RD_MAX_GROUPS groups of up to ten digits and a space each, and the rest. */
	int r = (int)rd_read_file(path, (size_t)RD_MAX_GROUPS * 12 + 8192, &buf);
	if (r < 0)
		return rd_error_set(err, -r, "task %d: reading %s: %s", tid, path, strerror(-r));
	r = rd_task_parse_status(buf, t, err);
	if (r < 0)
		return r;
	/* notif.pid is a thread id; a pidfd wants the thread group (PIDFD_THREAD is 6.9+). */
	t->pidfd = rd_pidfd_open(t->tgid, 0);
	if (t->pidfd < 0)
		return rd_error_set(err, errno, "task %d: pidfd_open(%d): %s", tid, t->tgid,
		                    strerror(errno));
	return 0;
}

int rd_task_getfd(const struct rd_task *t, int fd)
{
	int r = rd_pidfd_getfd(t->pidfd, fd, 0);
	return r < 0 ? -errno : r;
}

/* Every fd of the task without FD_CLOEXEC, copied: the command gets them at the same
 * numbers, exactly what the task's own exec would have kept. */
static int copy_fds(struct rd_task *t, struct rd_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fdinfo", t->tid);
	DIR *d = opendir(path);
	if (!d)
		return rd_error_set(err, errno, "task %d: opening %s: %s", t->tid, path,
		                    strerror(errno));
	size_t cap = 0;
	int r = 0;
	struct dirent *de;
	t->max_fd = -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		int num = atoi(de->d_name);
		if (num > t->max_fd)
			t->max_fd = num;
		/* Relative to the directory, and only the head, where "pos" and "flags" are: the
		 * kernel says whether an fd is close-on-exec nowhere else, so this is one open and
		 * one read per fd (about 4 us each), a caller's every fd. */
		char info[128];
		int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		ssize_t len = fd >= 0 ? read(fd, info, sizeof(info) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (len <= 0)
			continue; /* closed meanwhile: only another thread of the task can do that
			           */
		info[len] = '\0';
		const char *fl = field(info, "flags");
		unsigned long flags;
		if (!fl || sscanf(fl, "%lo", &flags) != 1) {
			r = rd_error_set(err, EPROTO, "task %d: unexpected fdinfo format", t->tid);
			break;
		}
		if (flags & O_CLOEXEC)
			continue;
		int copy = rd_task_getfd(t, num);
		if (copy < 0) {
			r = rd_error_set(err, -copy, "task %d: pidfd_getfd(%d): %s", t->tid, num,
			                 strerror(-copy));
			break;
		}
		if (t->n_fds == cap) {
			cap = cap ? 2 * cap : 16;
			struct rd_fd_copy *nf = realloc(t->fds, cap * sizeof(*nf));
			if (!nf) {
				close(copy);
				r = rd_error_set(err, ENOMEM, "out of memory");
				break;
			}
			t->fds = nf;
		}
		t->fds[t->n_fds++] = (struct rd_fd_copy){.target = num, .fd = copy};
	}
	closedir(d);
	return r;
}

struct rlimit rd_task_rlimit(struct rd_task *t, int res, struct rlimit fallback)
{
	struct rd_inherit *h = &t->inh;
	if (!h->have_rlim[res])
		h->have_rlim[res] = prlimit(t->tgid, res, NULL, &h->rlim[res]) == 0;
	return h->have_rlim[res] ? h->rlim[res] : fallback;
}

int rd_task_snapshot(struct rd_task *t, struct rd_error *err)
{
	/* Those already read (rd_task_rlimit, for the exec's own checks) are not read again. */
	for (int res = 0; res < RLIM_NLIMITS; res++)
		(void)rd_task_rlimit(t, res, (struct rlimit){0, 0});
	t->sid = getsid(t->tid);
	t->pgid = getpgid(t->tid);
	if (t->sid < 0 || t->pgid < 0)
		return rd_error_set(err, errno, "task %d: getsid/getpgid: %s", t->tid,
		                    strerror(errno));
	int r = rd_task_cwd(t, err);
	if (r < 0)
		return r;
	/* The path of the very directory cwd_fd is, so that the sandbox can enter it by name. */
	char link[64], buf[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", t->cwd_fd);
	ssize_t n = readlink(link, buf, sizeof(buf));
	if (n > 0 && n < (ssize_t)sizeof(buf) && buf[0] == '/') {
		buf[n] = '\0';
		if (!(t->cwd_path = strdup(buf)))
			return rd_error_set(err, ENOMEM, "out of memory");
	}
	return copy_fds(t, err);
}

int rd_task_cwd(struct rd_task *t, struct rd_error *err)
{
	if (t->cwd_fd >= 0)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cwd", t->tid);
	t->cwd_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->cwd_fd < 0)
		return rd_error_set(err, errno, "task %d: opening its cwd: %s", t->tid,
		                    strerror(errno));
	return 0;
}

void rd_task_free(struct rd_task *t)
{
	for (size_t i = 0; i < t->n_fds; i++)
		close(t->fds[i].fd);
	free(t->fds);
	free(t->groups);
	free(t->cwd_path);
	if (t->pidfd >= 0)
		close(t->pidfd);
	if (t->cwd_fd >= 0)
		close(t->cwd_fd);
	memset(t, 0, sizeof(*t));
	t->pidfd = t->cwd_fd = -1;
}
