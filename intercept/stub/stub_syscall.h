/* Raw system calls and kernel ABI for runnerd-stub, which links no libc and includes no system
 * header except the compiler's own <stdint.h>: that keeps it buildable for another
 * architecture without that architecture's libc headers. Every wrapper returns the kernel's
 * value: >= 0 on success, -errno on failure. */
#ifndef RD_STUB_SYSCALL_H
#define RD_STUB_SYSCALL_H

#include <stdint.h>

#if defined(__x86_64__)
#define NR_read           0
#define NR_write          1
#define NR_close          3
#define NR_fcntl          72
#define NR_ioctl          16
#define NR_getpgid        121
#define NR_rt_sigaction   13
#define NR_rt_sigprocmask 14
#define NR_getpid         39
#define NR_sendto         44
#define NR_recvmsg        47
#define NR_getsockopt     55
#define NR_clock_gettime  228
#define NR_kill           62
#define NR_prctl          157
#define NR_exit_group     231
#define NR_ppoll          271
#define NR_signalfd4      289
#define NR_prlimit64      302
#define NR_close_range    436
#elif defined(__aarch64__)
/* arm64 uses the asm-generic table. */
#define NR_read           63
#define NR_write          64
#define NR_close          57
#define NR_fcntl          25
#define NR_ioctl          29
#define NR_getpgid        155
#define NR_rt_sigaction   134
#define NR_rt_sigprocmask 135
#define NR_getpid         172
#define NR_sendto         206
#define NR_recvmsg        212
#define NR_getsockopt     209
#define NR_clock_gettime  113
#define NR_kill           129
#define NR_prctl          167
#define NR_exit_group     94
#define NR_ppoll          73
#define NR_signalfd4      74
#define NR_prlimit64      261
#define NR_close_range    436
#else
#error "runnerd-stub: add this architecture's syscall numbers and syscall instruction"
#endif

#include "lib/raw_syscall.h"

/* errno values the stub tests for (identical on x86_64 and arm64). */
#define EINTR  4
#define EAGAIN 11
#define EFBIG  27
#define EPIPE  32

/* Signals: the kernel's sigset_t is 64 bits on both architectures (_NSIG = 64). */
#define KSIGSET_SIZE 8
#define SIGKILL      9
#define SIGPIPE      13
#define SIGCHLD      17
#define SIGCONT      18
#define SIGSTOP      19
#define SIGTSTP      20
#define SIGTTIN      21
#define SIGTTOU      22
#define SIGURG       23
#define SIGXFSZ      25
#define SIGWINCH     28
#define NSIG_MAX     64
#define SIG_SETMASK  2
#define SIG_UNBLOCK  1
#define SI_USER      0
#define SIG_BLOCK    0

/* The kernel's struct sigaction (not glibc's): handler, flags, restorer, mask on both
 * x86_64 and arm64 (arm64 defines SA_RESTORER, so asm-generic keeps the field). */
struct k_sigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	uint64_t mask;
};

/* <linux/signalfd.h> */
struct signalfd_siginfo {
	uint32_t ssi_signo;
	int32_t ssi_errno;
	int32_t ssi_code;
	uint32_t ssi_pid;
	uint32_t ssi_uid;
	int32_t ssi_fd;
	uint32_t ssi_tid;
	uint32_t ssi_band;
	uint32_t ssi_overrun;
	uint32_t ssi_trapno;
	int32_t ssi_status;
	int32_t ssi_int;
	uint64_t ssi_ptr;
	uint64_t ssi_utime;
	uint64_t ssi_stime;
	uint64_t ssi_addr;
	uint16_t ssi_addr_lsb;
	uint16_t pad2;
	int32_t ssi_syscall;
	uint64_t ssi_call_addr;
	uint32_t ssi_arch;
	uint8_t pad[28];
};
_Static_assert(sizeof(struct signalfd_siginfo) == 128, "signalfd_siginfo is 128 bytes");

#define SFD_CLOEXEC  02000000
#define SFD_NONBLOCK 04000

/* <linux/resource.h> */
#define RLIMIT_CORE   4
#define RLIMIT_NOFILE 7
struct rlimit64 {
	uint64_t cur;
	uint64_t max;
};

/* Terminals (asm-generic/termbits.h, ioctls.h; the same on x86_64 and arm64): the kernel's
 * struct termios, as TCGETS and TCSETS take it. */
#define NCCS       19
#define TCGETS     0x5401
#define TCSETS     0x5402
#define TIOCGPGRP  0x540F
#define TIOCGWINSZ 0x5413
#define TIOCSWINSZ 0x5414
struct ktermios {
	uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[NCCS];
};
struct kwinsize {
	uint16_t row, col, xpixel, ypixel;
};
#define IGNBRK 0000001
#define BRKINT 0000002
#define PARMRK 0000010
#define ISTRIP 0000040
#define INLCR  0000100
#define IGNCR  0000200
#define ICRNL  0000400
#define IXON   0002000
#define OPOST  0000001
#define CSIZE  0000060
#define CS8    0000060
#define PARENB 0000400
#define ISIG   0000001
#define ICANON 0000002
#define ECHO   0000010
#define ECHONL 0000100
#define IEXTEN 0100000
#define VTIME  5
#define VMIN   6

/* fcntl */
#define F_SETFL    4
#define O_NONBLOCK 04000

/* <linux/prctl.h> */
#define PR_SET_DUMPABLE 4
#define PR_SET_NAME     15

/* poll */
#define POLLIN  0x001
#define POLLOUT 0x004
#define POLLERR 0x008
#define POLLHUP 0x010
struct pollfd {
	int fd;
	short events;
	short revents;
};

/* Sockets (LP64 layouts, same on both architectures). */
#define SOL_SOCKET       1
#define SO_TYPE          3
#define SO_PEERCRED      17
#define SOCK_SEQPACKET   5
#define SCM_RIGHTS       1
#define MSG_CTRUNC       0x8
#define MSG_DONTWAIT     0x40
#define MSG_TRUNC        0x20
#define MSG_NOSIGNAL     0x4000
#define MSG_CMSG_CLOEXEC 0x40000000
struct iovec {
	void *base;
	unsigned long len;
};
struct msghdr {
	void *name;
	int namelen;
	struct iovec *iov;
	unsigned long iovlen;
	void *control;
	unsigned long controllen;
	int flags;
};
struct cmsghdr {
	unsigned long len;
	int level;
	int type;
};

#endif
