/* Passing fds over a unix socket (SCM_RIGHTS): one packet of data and fds each way. Every
 * process of runnerd's that passes fds does it through these two (the stub, which has no libc,
 * apart). */
#ifndef RD_FDPASS_H
#define RD_FDPASS_H

#include "lib/util.h"

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The most fds one packet carries: the kernel's SCM_MAX_FD. */
#define RD_FDPASS_MAX 253

/* Send one packet: all the bytes of iov (a short send is -EIO) and n_fds fds (none if 0; at
 * most RD_FDPASS_MAX). flags go to sendmsg, with MSG_NOSIGNAL always added. Returns 0 or
 * -errno. Touches errno. */
int rd_send_fds(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds,
                int flags) _wur_;

/* The same for one buffer. */
int rd_send_buf_fds(int sock, const void *buf, size_t len, const int *fds, size_t n_fds,
                    int flags) _wur_;

/* Receive one packet into iov and its fds (close-on-exec) into fds, at most max_fds of them;
 * *n_fds says how many came. Returns the bytes received (0: end of file), or -errno. A packet
 * larger than iov is -EMSGSIZE, one with more fds than max_fds or control data other than
 * SCM_RIGHTS is -EPROTO; either way every fd that came with it is closed. EINTR is retried.
 * flags go to recvmsg, with MSG_CMSG_CLOEXEC always added. */
ssize_t rd_recv_fds(int sock, struct iovec *iov, size_t n_iov, int *fds, size_t max_fds,
                    size_t *n_fds, int flags) _wur_;

/* The same for one buffer. */
ssize_t rd_recv_buf_fds(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *n_fds,
                        int flags) _wur_;

#endif
