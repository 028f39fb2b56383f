#include "lib/fdpass.h"
#include "lib/syscalls.h"
#include "sandbox/launch_internal.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

/* How long runnerd waits for an answer before it gives the zygote up. */
#define ZYGOTE_TIMEOUT_S 2

/* The zygote_view message for ids and paths, into *out (malloc'd); its length, or -EMSGSIZE
 * if too large, -ENOMEM. */
static long view_msg(char ids, const struct rd_view_paths *paths, const struct rd_confine *confine,
                     char **out)
{
	struct zygote_view v = {.ids = (uint32_t)ids,
	                        .n_write = paths ? (uint32_t)paths->n_write : 0,
	                        .n_protect = paths ? (uint32_t)paths->n_protect : 0,
	                        .n_layers = paths ? (uint32_t)paths->n_layers : 0,
	                        .n_shadow = paths ? (uint32_t)paths->n_shadow : 0,
	                        .n_hidden = paths ? (uint32_t)paths->n_hidden : 0,
	                        .n_filters = confine ? (uint32_t)confine->n_filters : 0,
	                        .since_s = rd_view_since().tv_sec,
	                        .since_ns = rd_view_since().tv_nsec};
	if (confine && confine->apparmor &&
	    (size_t)snprintf(v.apparmor, sizeof(v.apparmor), "%s", confine->apparmor) >=
	        sizeof(v.apparmor))
		return -ENAMETOOLONG;
	size_t n = sizeof(v);
	for (size_t i = 0; i < v.n_filters; i++)
		n += sizeof(uint32_t) + sizeof(struct sock_filter) * confine->filters[i].len;
	for (size_t i = 0; i < v.n_write; i++)
		n += strlen(paths->write[i]) + 1;
	for (size_t i = 0; i < v.n_protect; i++)
		n += strlen(paths->protect[i]) + 1;
	for (size_t i = 0; i < 2 * (size_t)v.n_layers; i++)
		n += strlen(paths->layers[i]) + 1;
	for (size_t i = 0; i < v.n_shadow; i++)
		n += strlen(paths->shadow[i]) + 1;
	for (size_t i = 0; i < v.n_hidden; i++)
		n += strlen(paths->hidden[i]) + 1;
	if (n > ZYGOTE_MAX_MSG)
		return -EMSGSIZE;
	char *buf = malloc(n), *p = buf + sizeof(v);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &v, sizeof(v));
	size_t at_layers = v.n_write + v.n_protect, at_shadow = at_layers + 2 * (size_t)v.n_layers,
	       at_hidden = at_shadow + v.n_shadow;
	for (size_t i = 0; i < at_hidden + v.n_hidden; i++) {
		const char *s = i < v.n_write   ? paths->write[i]
		                : i < at_layers ? paths->protect[i - v.n_write]
		                : i < at_shadow ? paths->layers[i - at_layers]
		                : i < at_hidden ? paths->shadow[i - at_shadow]
		                                : paths->hidden[i - at_hidden];
		memcpy(p, s, strlen(s) + 1);
		p += strlen(s) + 1;
	}
	for (size_t i = 0; i < v.n_filters; i++) {
		uint32_t len = confine->filters[i].len;
		memcpy(p, &len, sizeof(len));
		memcpy(p + sizeof(len), confine->filters[i].insns,
		       sizeof(struct sock_filter) * len);
		p += sizeof(len) + sizeof(struct sock_filter) * len;
	}
	*out = buf;
	return (long)n;
}

/* Its namespaces made, the zygote waits for its maps; then it makes the view and says how that
 * went (launch_internal.h). */
static int zygote_setup(struct rd_zygote *z, bool full_ids, const struct rd_view_paths *paths,
                        const struct rd_confine *confine, struct rd_error *err)
{
	struct zygote_reply r;
	ssize_t n;
	do
		n = recv(z->fd, &r, sizeof(r), 0);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(r) || r.pid != 0) {
		int e = n < 0 ? errno : EPROTO;
		return rd_error_set(err, e, "runnerd-zygote did not start: %s", strerror(e));
	}
	if (r.err)
		return rd_error_set(err, r.err,
		                    "runnerd-zygote: creating the session's user and mount "
		                    "namespaces: %s",
		                    strerror(r.err));
	int e = confine && confine->host_userns ? 0 : -rd_write_id_maps(z->pid, full_ids);
	if (e)
		return rd_error_set(err, e, "writing runnerd-zygote's uid/gid map: %s",
		                    strerror(e));
	char ids = rd_root_ids(full_ids) ? ZYGOTE_ROOT_IDS : ZYGOTE_OWN_IDS;
	_cleanup_free_ char *msg = NULL;
	long len = view_msg(ids, paths, confine, &msg);
	if (len < 0)
		return rd_error_set(err, (int)-len,
		                    "runnerd-zygote: the writable and protected paths: %s",
		                    strerror((int)-len));
	if (send(z->fd, msg, (size_t)len, MSG_NOSIGNAL) != len)
		return rd_error_set(err, errno, "runnerd-zygote: %s", strerror(errno));
	struct setup_msg m;
	do
		n = recv(z->fd, &m, sizeof(m), 0);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(m)) {
		e = n < 0 ? errno : EPROTO;
		return rd_error_set(err, e, "runnerd-zygote did not start: %s", strerror(e));
	}
	m.what[sizeof(m.what) - 1] = '\0';
	if (m.err)
		return rd_error_set(err, m.err, "runnerd-zygote: making the commands' view: %s: %s",
		                    m.what, strerror(m.err));
	if (m.what[0])
		fprintf(
		    stderr,
		    "runnerd: %s of the caches could not be layered (overlayfs refused: the "
		    "layers' directory on an overlay file system, or on a tmpfs of a kernel "
		    "before 6.6?): commands see a cache of their own there, empty at the start, "
		    "and the user's stays unwritten\n",
		    m.what);
	return 0;
}

int rd_zygote_start(struct rd_zygote *z, int exe_fd, bool full_ids,
                    const struct rd_view_paths *paths, const struct rd_confine *confine,
                    struct rd_error *err)
{
	int sv[2];
	*z = RD_ZYGOTE_NONE;
	z->view = paths;
	z->required = confine && confine->host_userns;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return rd_error_set(err, errno, "socketpair: %s", strerror(errno));
	/* A zygote that stops answering (stopped, say) must not hang runnerd's loop. */
	struct timeval tv = {.tv_sec = ZYGOTE_TIMEOUT_S};
	if (setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return rd_error_set(err, e, "setting the zygote socket's timeout: %s", strerror(e));
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return rd_error_set(err, e, "fork (runnerd-zygote): %s", strerror(e));
	}
	if (pid == 0) {
		/* Kept across the exec (not set-id): the zygote dies with runnerd. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(0); /* runnerd died before PDEATHSIG was armed */
		if (confine && confine->enter_mntns && setns(confine->mntns, CLONE_NEWNS) < 0)
			_exit(127);
		/* The socket at fd 3; everything else of runnerd's closed by the exec. */
		int exe = fcntl(exe_fd, F_DUPFD_CLOEXEC, 4);
		if (exe < 0)
			_exit(127);
		/* dup2 onto itself would keep FD_CLOEXEC, and the exec would close it. */
		if (sv[1] == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(sv[1], 3) < 0)
			_exit(127);
		rd_close_range(4, ~0U, CLOSE_RANGE_CLOEXEC);
		char *argv[] = {"runnerd-zygote", confine && confine->host_userns ? "host" : NULL,
		                NULL},
		     *envp[] = {NULL};
		rd_execveat(exe, "", argv, envp, AT_EMPTY_PATH);
		_exit(127);
	}
	close(sv[1]);
	z->pid = pid;
	z->fd = sv[0];
	int r = zygote_setup(z, full_ids, paths, confine, err);
	if (r < 0)
		rd_zygote_lost(z);
	return r;
}

void rd_zygote_lost(struct rd_zygote *z)
{
	if (z->fd >= 0)
		close(z->fd);
	if (z->pid > 0)
		kill(z->pid, SIGKILL);
	z->fd = -1;
	z->lost = true;
	free(z->last);
	z->last = NULL;
	z->last_len = 0;
}

void rd_zygote_stop(struct rd_zygote *z)
{
	bool lost = z->lost;
	rd_zygote_lost(z);
	z->lost = lost;
}

/* The request for preset, into *out (malloc'd); its length, or -EMSGSIZE if too large. */
static long build_req(const struct rd_sandbox_preset *pre, char **out)
{
	size_t n = sizeof(struct zygote_req);
	if (pre) {
		if (pre->n_masks > PRESET_MAX_MASKS)
			return -EMSGSIZE;
		n += sizeof(struct sock_filter) * (pre->filter ? pre->filter_len : 0);
		for (size_t i = 0; i < pre->n_masks; i++)
			n += strlen(pre->masks[i]) + 1;
	}
	if (n > ZYGOTE_MAX_MSG)
		return -EMSGSIZE;
	char *buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	struct zygote_req q = {.preset = pre ? ZP_NEW : ZP_NONE};
	char *p = buf + sizeof(q);
	if (pre) {
		q.net_none = pre->net_none;
		q.n_masks = (uint32_t)pre->n_masks;
		q.filter_len = pre->filter ? pre->filter_len : 0;
		memcpy(p, pre->filter, sizeof(struct sock_filter) * q.filter_len);
		p += sizeof(struct sock_filter) * q.filter_len;
		for (size_t i = 0; i < pre->n_masks; i++) {
			size_t len = strlen(pre->masks[i]) + 1;
			memcpy(p, pre->masks[i], len);
			p += len;
		}
	}
	memcpy(buf, &q, sizeof(q));
	*out = buf;
	return (long)n;
}

int rd_zygote_request(struct rd_zygote *z, const struct rd_sandbox_preset *preset,
                      const int fds[RD_REAPER_NFDS], struct rd_error *err)
{
	_cleanup_free_ char *req = NULL;
	long len = build_req(preset, &req);
	if (len < 0)
		return len == -EMSGSIZE
		           ? -EMSGSIZE
		           : rd_error_set(err, (int)-len, "out of memory (the zygote)");
	/* The same preset as last time: the zygote has it already. */
	struct zygote_req *q = (void *)req;
	size_t send_len = (size_t)len;
	const struct zygote_req *was = (const void *)z->last;
	bool same = preset && z->last && z->last_len == (size_t)len &&
	            was->net_none == q->net_none && was->n_masks == q->n_masks &&
	            was->filter_len == q->filter_len &&
	            memcmp(z->last + sizeof(*q), req + sizeof(*q), (size_t)len - sizeof(*q)) == 0;
	if (same) {
		q->preset = ZP_LAST;
		send_len = sizeof(*q);
	}

	int r = rd_send_buf_fds(z->fd, req, send_len, fds, RD_REAPER_NFDS, MSG_DONTWAIT);
	if (r < 0) {
		rd_zygote_lost(z);
		return rd_error_set(err, r, "the zygote: %s", strerror(-r));
	}
	if (preset && !same) {
		free(z->last);
		z->last = steal_pointer(&req);
		z->last_len = (size_t)len;
	}
	return 0;
}

long rd_zygote_answer(struct rd_zygote *z, int *pidfd, struct rd_error *err)
{
	struct zygote_reply r;
	int fd = -1;
	size_t n_fds = 0;
	ssize_t n = z->fd >= 0 ? rd_recv_buf_fds(z->fd, &r, sizeof(r), &fd, 1, &n_fds, 0) : -EPIPE;
	if (n != sizeof(r) || (r.pid > 0) != (n_fds == 1)) {
		int e = n < 0 ? (int)-n : EPROTO;
		if (n_fds == 1)
			close(fd);
		rd_zygote_lost(z);
		return rd_error_set(err, e, "the zygote did not answer: %s", strerror(e));
	}
	if (r.pid <= 0)
		return rd_error_set(err, r.err, "clone3 (new pid, mount and IPC namespaces): %s",
		                    strerror(r.err));
	*pidfd = fd;
	return r.pid;
}

void rd_zygote_refresh(struct rd_zygote *z, size_t i)
{
	z->view_gen++;
	if (z->fd < 0)
		return;
	struct zygote_req q = {.preset = ZP_REFRESH, .n_masks = (uint32_t)i};
	if (send(z->fd, &q, sizeof(q), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(q))
		rd_zygote_lost(z);
}
