#include "../intercept/syscalls.h"
#include "launch_internal.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>

/* A request: clone one reaper. The child's four fds come with it (SCM_RIGHTS, in the order of
 * RD_REAPER_*), and a preset's filter and mask paths follow this header. */
struct zygote_req {
	uint32_t userns;
	uint32_t preset; /* ZP_* */
	uint32_t net_none;
	uint32_t n_masks;
	uint32_t filter_len;
	uint32_t pad; /* the filter that follows stays 8-aligned */
};

enum {
	ZP_NONE, /* no preset */
	ZP_NEW,  /* this one, in the message: keep it */
	ZP_LAST, /* the one kept from an earlier request */
};

/* The answer: the reaper's pid, or err; its pidfd comes with it (SCM_RIGHTS). */
struct zygote_reply {
	int32_t pid;
	int32_t err;
};

/* Largest request; a larger preset is not sent (the sandbox is then forked by runnerd). */
#define ZYGOTE_MAX_MSG (64 * 1024)
/* How long runnerd waits for an answer before it gives the zygote up. */
#define ZYGOTE_TIMEOUT_S 2

/* A preset as it came, in the zygote: buf holds the message, the rest points into it. */
struct kept_preset {
	char *buf;
	char **masks;
	struct rd_sandbox_preset pre;
};

/* The preset of a request of n bytes in buf, checked (the message is runnerd's own, but a
 * count that does not add up stops here). Returns 0, or -1 if it does not add up. */
static int parse_preset(char *buf, size_t n, struct kept_preset *out)
{
	const struct zygote_req *q = (const void *)buf;
	size_t flen = sizeof(struct sock_filter) * (size_t)q->filter_len;
	if (q->n_masks > 1024 || q->filter_len > BPF_MAXINSNS || sizeof(*q) + flen > n)
		return -1;
	char **masks = calloc(q->n_masks + 1, sizeof(char *));
	if (!masks)
		return -1;
	char *s = buf + sizeof(*q) + flen, *end = buf + n;
	for (uint32_t i = 0; i < q->n_masks; i++) {
		char *nul = s < end ? memchr(s, '\0', (size_t)(end - s)) : NULL;
		if (!nul) {
			free(masks);
			return -1;
		}
		masks[i] = s;
		s = nul + 1;
	}
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
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof(r)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (pidfd >= 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != sizeof(r))
		_exit(1); /* runnerd is gone, or gave us up */
}

/* The zygote. Everything it writes after a clone is copied once (copy-on-write) while that
 * reaper lives: so it writes little, its stack and the header of each request. */
static _Noreturn void zygote_main(int sock, pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0); /* runnerd died before PDEATHSIG was armed */
	/* Not dumpable: it holds a copy of runnerd's memory (the agent's env among it). */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_NAME, "runnerd-zygote", 0, 0, 0);
	/* Nothing of runnerd's: not the listener, the audit log, the stub, stdio. */
	if (sock > 0)
		rd_close_range(0, (unsigned)sock - 1, 0);
	rd_close_range((unsigned)sock + 1, ~0U, 0);

	char *buf = malloc(ZYGOTE_MAX_MSG);
	struct kept_preset kept = {0};
	if (!buf)
		_exit(1);
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * RD_REAPER_NFDS)];
		struct iovec iov = {.iov_base = buf, .iov_len = ZYGOTE_MAX_MSG};
		struct msghdr mh = {.msg_iov = &iov,
		                    .msg_iovlen = 1,
		                    .msg_control = cbuf,
		                    .msg_controllen = sizeof(cbuf)};
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0); /* runnerd closed its end: the session is over */
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len != CMSG_LEN(sizeof(int) * RD_REAPER_NFDS) ||
		    (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
		    (size_t)n < sizeof(struct zygote_req))
			_exit(1);
		int fds[RD_REAPER_NFDS];
		memcpy(fds, CMSG_DATA(c), sizeof(fds));
		const struct zygote_req *q = (const void *)buf;
		bool userns = q->userns != 0;
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
		    .flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_PIDFD | CLONE_PARENT |
		             (userns ? CLONE_NEWUSER : 0),
		    .pidfd = (uint64_t)(uintptr_t)&pidfd,
		    .exit_signal = 0, /* CLONE_PARENT: the child's is ours, SIGCHLD */
		};
		/* With a user namespace, runnerd writes the reaper's uid_map and gid_map. Those
		 * /proc files belong to root while their process is not dumpable, and a clone
		 * copies our dumpability: so we are dumpable for the clone, as runnerd always
		 * is, and the reaper turns it off itself once its maps are written. */
		if (userns)
			prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		long pid = rd_clone3(&ca, sizeof(ca));
		if (pid == 0) {
			prctl(PR_SET_NAME, "runnerd", 0, 0, 0);
			rd_reaper_main(fds[RD_REAPER_GO], fds[RD_REAPER_PLAN], fds[RD_REAPER_ERR],
			               fds[RD_REAPER_STATUS], pre);
		}
		int e = errno;
		if (userns)
			prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		for (int i = 0; i < RD_REAPER_NFDS; i++)
			close(fds[i]);
		reply(sock, pid < 0 ? -1 : pid, pid < 0 ? e : 0, pid < 0 ? -1 : pidfd);
		if (pidfd >= 0)
			close(pidfd);
	}
}

int rd_zygote_start(struct rd_zygote *z, struct rd_error *err)
{
	int sv[2];
	*z = RD_ZYGOTE_NONE;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return rd_error_set(err, errno, "socketpair: %s", strerror(errno));
	/* A zygote that stops answering (stopped, say) must not hang runnerd's loop. */
	struct timeval tv = {.tv_sec = ZYGOTE_TIMEOUT_S};
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return rd_error_set(err, e, "fork (the zygote): %s", strerror(e));
	}
	if (pid == 0)
		zygote_main(sv[1], parent);
	close(sv[1]);
	z->pid = pid;
	z->fd = sv[0];
	return 0;
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
static long build_req(bool userns, const struct rd_sandbox_preset *pre, char **out)
{
	size_t n = sizeof(struct zygote_req);
	if (pre) {
		if (pre->n_masks > 1024)
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
	struct zygote_req q = {.userns = userns, .preset = pre ? ZP_NEW : ZP_NONE};
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

int rd_zygote_request(struct rd_zygote *z, bool userns, const struct rd_sandbox_preset *preset,
                      const int fds[RD_REAPER_NFDS], struct rd_error *err)
{
	_cleanup_free_ char *req = NULL;
	long len = build_req(userns, preset, &req);
	if (len < 0)
		return len == -EMSGSIZE
		           ? -EMSGSIZE
		           : rd_error_set(err, (int)-len, "out of memory (the zygote)");
	/* The same preset as last time: the zygote has it already. */
	struct zygote_req *q = (void *)req;
	size_t send_len = (size_t)len;
	bool same = preset && z->last && z->last_len == (size_t)len &&
	            memcmp(z->last + sizeof(*q), req + sizeof(*q), (size_t)len - sizeof(*q)) == 0;
	if (same) {
		q->preset = ZP_LAST;
		send_len = sizeof(*q);
	}

	char cbuf[CMSG_SPACE(sizeof(int) * RD_REAPER_NFDS)] = {0};
	struct iovec iov = {.iov_base = req, .iov_len = send_len};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * RD_REAPER_NFDS);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * RD_REAPER_NFDS);
	if (sendmsg(z->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)send_len) {
		int e = errno ? errno : EPROTO;
		rd_zygote_lost(z);
		return rd_error_set(err, e, "the zygote: %s", strerror(e));
	}
	if (preset && !same) {
		free(z->last);
		z->last = steal_pointer(&req);
		z->last_len = (size_t)len;
	}
	return 0;
}

long rd_zygote_answer(struct rd_zygote *z, bool userns, int *pidfd, struct rd_error *err)
{
	struct zygote_reply r;
	char rbuf[CMSG_SPACE(sizeof(int))];
	struct iovec riov = {.iov_base = &r, .iov_len = sizeof(r)};
	struct msghdr rh = {
	    .msg_iov = &riov, .msg_iovlen = 1, .msg_control = rbuf, .msg_controllen = sizeof(rbuf)};
	ssize_t n = -1;
	errno = EPIPE;
	while (z->fd >= 0 && (n = recvmsg(z->fd, &rh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	struct cmsghdr *rc = n == sizeof(r) ? CMSG_FIRSTHDR(&rh) : NULL;
	int fd = -1;
	if (rc && rc->cmsg_level == SOL_SOCKET && rc->cmsg_type == SCM_RIGHTS &&
	    rc->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(rc), sizeof(int));
	if (n != sizeof(r) || (r.pid > 0) != (fd >= 0)) {
		int e = n < 0 ? errno : EPROTO;
		if (fd >= 0)
			close(fd);
		rd_zygote_lost(z);
		return rd_error_set(err, e, "the zygote did not answer: %s", strerror(e));
	}
	if (r.pid <= 0)
		return rd_error_set(err, r.err, "clone3 (new pid and mount namespace%s): %s",
		                    userns ? " in a new user namespace" : "", strerror(r.err));
	*pidfd = fd;
	return r.pid;
}
