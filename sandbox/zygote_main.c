/* runnerd-zygote: the zygote, a small static program. runnerd starts it once per session, with
 * its end of the request socket at fd 3 and an empty environment, and from then on asks it for
 * every sandbox's reaper (zygote.h). Being a small static program is the point: each clone copies
 * its address space, each reaper tears that copy down when it exits, and both it and its reapers
 * take a copy-on-write fault for every page they write after a clone. None of it holds anything
 * of runnerd's memory, nor an environment to show in /proc/1/environ inside a sandbox. */
#include "lib/fdpass.h"
#include "lib/syscalls.h"
#include "sandbox/launch_internal.h"
#include "sandbox/view.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define ZYGOTE_FD 3

/* A preset as it came, in the zygote: buf holds the message, the rest points into it. */
struct kept_preset {
	char *buf;
	char **masks;
	struct rd_sandbox_preset pre;
};

/* n strings, each ending in a NUL, from s up to end: a NULL-terminated array of pointers into
 * them (malloc'd), or NULL if they do not add up. */
static char **split(char *s, char *end, size_t n)
{
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++) {
		char *nul = s < end ? memchr(s, '\0', (size_t)(end - s)) : NULL;
		if (!nul) {
			free(v);
			return NULL;
		}
		v[i] = s;
		s = nul + 1;
	}
	return v;
}

/* The preset of a request of n bytes in buf, checked (the message is runnerd's own, but a
 * count that does not add up stops here). Returns 0, or -1 if it does not add up. */
static int parse_preset(char *buf, size_t n, struct kept_preset *out)
{
	const struct zygote_req *q = (const void *)buf;
	size_t flen = sizeof(struct sock_filter) * (size_t)q->filter_len;
	if (q->n_masks > PRESET_MAX_MASKS || q->filter_len > BPF_MAXINSNS || sizeof(*q) + flen > n)
		return -1;
	char **masks = split(buf + sizeof(*q) + flen, buf + n, q->n_masks);
	if (!masks)
		return -1;
	*out = (struct kept_preset){
	    .buf = buf,
	    .masks = masks,
	    .pre = {.masks = masks,
	            .n_masks = q->n_masks,
	            .filter = q->filter_len ? (const struct sock_filter *)(q + 1) : NULL,
	            .filter_len = (unsigned short)q->filter_len,
	            .net_none = q->net_none != 0},
	};
	return 0;
}

static void reply(int sock, long pid, int err, int pidfd)
{
	struct zygote_reply r = {.pid = (int32_t)pid, .err = err};
	if (rd_send_buf_fds(sock, &r, sizeof(r), &pidfd, pidfd >= 0, 0) < 0)
		_exit(1); /* runnerd is gone, or gave us up */
}

/* The session's writable roots and protected paths, kept for each reaper: a rule's own go
 * over them (rd_view_rule). */
static struct rd_view_paths session_paths;

/* The session's namespaces (launch_internal.h): a user namespace, whose maps runnerd writes,
 * and a mount namespace with the session's part of the commands' view. Returns what every
 * reaper is to be told (RD_ROOT_IDS), or exits once runnerd knows why it could not. */
/* The container's filters, from the view message (launch_internal.h), into filters; the
 * position after them, or NULL if they do not add up. */
static char *take_filters(char *p, char *end, uint32_t n, struct sock_fprog **filters)
{
	struct sock_fprog *f = n ? calloc(n, sizeof(*f)) : NULL;
	if (n && !f)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len;
		if (end - p < (ptrdiff_t)sizeof(len))
			return NULL;
		memcpy(&len, p, sizeof(len));
		p += sizeof(len);
		size_t bytes = sizeof(struct sock_filter) * len;
		if (!len || len > BPF_MAXINSNS || (size_t)(end - p) < bytes)
			return NULL;
		struct sock_filter *insns = malloc(bytes);
		if (!insns)
			return NULL;
		memcpy(insns, p, bytes);
		p += bytes;
		f[i] = (struct sock_fprog){.len = (unsigned short)len, .filter = insns};
	}
	*filters = f;
	return p;
}

/* host: runnerd serve's, in a container (rd_confine): a mount namespace alone, in the machine's
 * user namespace, where the container's processes are. */
static unsigned session_setup(int sock, bool host)
{
	if (unshare(host ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		reply(sock, 0, errno, -1);
		_exit(1);
	}
	/* Dumpable until then: runnerd, without privilege, may open our maps only so. */
	reply(sock, 0, 0, -1);
	/* The ids, and the writable roots and protected paths, each ending in a NUL. */
	char *buf = malloc(ZYGOTE_MAX_MSG);
	ssize_t n = buf ? read(sock, buf, ZYGOTE_MAX_MSG) : -1;
	struct zygote_view v;
	if (n < (ssize_t)sizeof(v))
		_exit(1);
	memcpy(&v, buf, sizeof(v));
	char ids = (char)v.ids;
	if (v.since_s > 0 && v.since_ns >= 0 && v.since_ns < 1000000000)
		rd_view_since_set(
		    (struct timespec){.tv_sec = (time_t)v.since_s, .tv_nsec = (long)v.since_ns});
	size_t n_paths = (size_t)v.n_write + v.n_protect + 2 * (size_t)v.n_layers +
	                 (size_t)v.n_shadow + v.n_hidden;
	char **list = n_paths <= ZYGOTE_MAX_MSG ? split(buf + sizeof(v), buf + n, n_paths) : NULL;
	if (!list || (ids != ZYGOTE_ROOT_IDS && ids != ZYGOTE_OWN_IDS))
		_exit(1);
	struct sock_fprog *filters = NULL;
	if (v.n_filters) {
		/* After the last path's NUL. */
		char *p = n_paths ? list[n_paths - 1] : NULL;
		p = p ? p + strlen(p) + 1 : buf + sizeof(v);
		if (v.n_filters > 64 || !take_filters(p, buf + n, v.n_filters, &filters))
			_exit(1);
	}
	static char apparmor[sizeof(v.apparmor)];
	if (!memchr(v.apparmor, '\0', sizeof(v.apparmor)))
		_exit(1);
	memcpy(apparmor, v.apparmor, sizeof(apparmor));
	rd_reaper_keep_confine(filters, v.n_filters, apparmor);
	session_paths = (struct rd_view_paths){
	    .write = list,
	    .n_write = v.n_write,
	    .protect = list + v.n_write,
	    .n_protect = v.n_protect,
	    .layers = list + v.n_write + v.n_protect,
	    .n_layers = v.n_layers,
	    .shadow = list + v.n_write + v.n_protect + 2 * (size_t)v.n_layers,
	    .n_shadow = v.n_shadow,
	    .hidden = list + v.n_write + v.n_protect + 2 * (size_t)v.n_layers + v.n_shadow,
	    .n_hidden = v.n_hidden};
	/* Not dumpable: no other process of the user reads or traces it. */
	struct setup_msg m = {.stage = STAGE_SETUP};
	struct rd_view_error e;
	const char *what = NULL;
	int r = 0;
	/* A rootful engine's container: runnerd keeps the zygote outside the container's pid
	 * namespace, whose /proc has no "self" for it; one of its own for the while (the view
	 * reads its mounts there), then the container's again, which every reaper covers with
	 * its own. */
	bool own_proc = host && access("/proc/self", F_OK) < 0;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		r = -errno, what = "making it non-dumpable";
	else if (own_proc && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		/* First: a mount made while the container's mounts are shared would reach its
		 * own namespace, and stay there. */
		r = -errno, what = "making every mount private";
	else if (own_proc &&
	         mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		r = -errno, what = "mounting a /proc of its own";
	else if ((r = rd_view_session(&e, &session_paths, true)) < 0)
		what = e.what;
	else if (own_proc && umount2("/proc", MNT_DETACH) < 0)
		r = -errno, what = "taking its own /proc off";
	if (r < 0) {
		m.err = -r;
		snprintf(m.what, sizeof(m.what), "%s", what);
	} else if (rd_view_layers_alone()) {
		/* Ready, with a note for runnerd to pass on. */
		snprintf(m.what, sizeof(m.what), "%zu", rd_view_layers_alone());
	}
	if (send(sock, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m) || r < 0)
		_exit(1);
	return ids == ZYGOTE_ROOT_IDS ? RD_ROOT_IDS : 0;
}

/* The zygote. Everything it writes after a clone is copied once (copy-on-write) while that
 * reaper lives: so it writes little, its stack and the header of each request. */
int main(int argc, char **argv)
{
	int sock = ZYGOTE_FD;
	/* PDEATHSIG was armed before the exec, which keeps it: it dies with runnerd. */
	/* An exec by fd names the process after the fd on some kernels. */
	prctl(PR_SET_NAME, "runnerd-zygote", 0, 0, 0);
	/* Nothing but the socket: stdio is runnerd's, and the zygote never prints. */
	rd_close_range(0, ZYGOTE_FD - 1, 0);
	rd_close_range(ZYGOTE_FD + 1, ~0U, 0);

	bool host = argc > 1 && strcmp(argv[1], "host") == 0;
	unsigned inherited = session_setup(sock, host) | RD_INHERIT_VIEW;
	/* Default dispositions and, where it may, an empty bounding set, once for every reaper. */
	inherited |= rd_reaper_parent_setup();

	char *buf = malloc(ZYGOTE_MAX_MSG);
	struct kept_preset kept = {0};
	if (!buf)
		_exit(1);
	for (;;) {
		int fds[RD_REAPER_NFDS];
		size_t n_fds = 0;
		ssize_t n =
		    rd_recv_buf_fds(sock, buf, ZYGOTE_MAX_MSG, fds, RD_REAPER_NFDS, &n_fds, 0);
		if (n == 0)
			_exit(0); /* runnerd closed its end: the session is over */
		const struct zygote_req *q = (const void *)buf;
		if (n == (ssize_t)sizeof(struct zygote_req) && n_fds == 0 &&
		    q->preset == ZP_REFRESH) {
			/* runnerd's sandboxes from now on are made from this view. */
			if (rd_view_shadow_refresh(q->n_masks) < 0)
				_exit(1);
			continue;
		}
		if (n < (ssize_t)sizeof(struct zygote_req) || n_fds != RD_REAPER_NFDS)
			_exit(1);
		const struct rd_sandbox_preset *pre = NULL;
		if (q->preset == ZP_NEW) {
			struct kept_preset k;
			char *next = malloc(ZYGOTE_MAX_MSG);
			if (!next || parse_preset(buf, (size_t)n, &k) < 0)
				_exit(1);
			free(kept.buf);
			free(kept.masks);
			kept = k;
			buf = next;
			pre = &kept.pre;
		} else if (q->preset == ZP_LAST) {
			if (!kept.buf)
				_exit(1);
			pre = &kept.pre;
		}

		int pidfd = -1;
		struct clone_args ca = {
		    .flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_PIDFD | CLONE_PARENT,
		    .pidfd = (uint64_t)(uintptr_t)&pidfd,
		    .exit_signal = 0, /* CLONE_PARENT: the child's is ours, SIGCHLD */
		};
		long pid = rd_clone3(&ca, sizeof(ca));
		if (pid == 0) {
			prctl(PR_SET_NAME, "runnerd", 0, 0, 0);
			rd_reaper_main(fds[RD_REAPER_GO], fds[RD_REAPER_PLAN], fds[RD_REAPER_ERR],
			               fds[RD_REAPER_STATUS], pre, inherited, &session_paths);
		}
		int e = errno;
		for (int i = 0; i < RD_REAPER_NFDS; i++)
			close(fds[i]);
		reply(sock, pid < 0 ? -1 : pid, pid < 0 ? e : 0, pid < 0 ? -1 : pidfd);
		if (pidfd >= 0)
			close(pidfd);
	}
}
