#include "lib/fdpass.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room for RD_FDPASS_MAX fds, aligned as a cmsghdr must be. */
union fd_cbuf {
	struct cmsghdr align;
	char b[CMSG_SPACE(sizeof(int) * RD_FDPASS_MAX)];
};

int rd_send_fds(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds,
                int flags)
{
	union fd_cbuf cbuf;
	struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = n_iov};
	size_t want = 0;
	for (size_t i = 0; i < n_iov; i++)
		want += iov[i].iov_len;
	if (n_fds > RD_FDPASS_MAX)
		return -EINVAL;
	if (n_fds) {
		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)want ? 0 : n < 0 ? -errno : -EIO;
}

int rd_send_buf_fds(int sock, const void *buf, size_t len, const int *fds, size_t n_fds, int flags)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	return rd_send_fds(sock, &iov, 1, fds, n_fds, flags);
}

ssize_t rd_recv_fds(int sock, struct iovec *iov, size_t n_iov, int *fds, size_t max_fds,
                    size_t *n_fds, int flags)
{
	union fd_cbuf cbuf;
	struct msghdr mh = {.msg_iov = iov,
	                    .msg_iovlen = n_iov,
	                    .msg_control = cbuf.b,
	                    .msg_controllen = sizeof(cbuf.b)};
	*n_fds = 0;
	ssize_t n;
	do
		n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* Every fd that came is ours to close, whatever else is wrong with the packet. */
	size_t got = 0;
	bool bad = (mh.msg_flags & MSG_CTRUNC) != 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			bad = true;
			continue;
		}
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < max_fds)
				fds[got++] = fd;
			else {
				close(fd);
				bad = true;
			}
		}
	}
	if (bad || (mh.msg_flags & MSG_TRUNC)) {
		for (size_t i = 0; i < got; i++)
			close(fds[i]);
		return bad ? -EPROTO : -EMSGSIZE;
	}
	*n_fds = got;
	return n;
}

ssize_t rd_recv_buf_fds(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *n_fds,
                        int flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	return rd_recv_fds(sock, &iov, 1, fds, max_fds, n_fds, flags);
}
