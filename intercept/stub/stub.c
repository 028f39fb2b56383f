/* runnerd-stub: stands in for a command in the caller's process (docs/architecture.md, 7 and 8).
 *
 * runnerd runs the real command in its sandbox and makes the trapped task execveat() this
 * program with the caller's argv, an empty environment, and the task's fds, signal mask and
 * ignored signals. The stub forwards every signal it receives to runnerd, and exits exactly as
 * the command did when runnerd tells it how.
 *
 * Freestanding: no libc, no TLS, no stack protector, no relocations. One exec of it must cost
 * little more than the kernel's own work (a static glibc stub cost ≈560 µs per command). */
#include "intercept/stub/stub_syscall.h"
#include "lib/stub_proto.h"

_Static_assert(sizeof(struct rd_stub_msg) == 500, "rd_stub_msg is a fixed 500-byte packet");

#define ALL_SIGNALS (~(uint64_t)0)

/* Our own pid, to tell the signals we raise ourselves from those we must forward. */
static long self_pid;

/* Signals our own write() made the kernel send us (bit sig-1): SIGPIPE after EPIPE, SIGXFSZ
 * after EFBIG. The forwarder drops one such signal per bit, if it comes from us. */
static uint64_t self_raised;

/* The outgoing packet. Static so that it is zeroed by the loader (.bss costs no file size)
 * and no memset is needed: only type/value/code/pid ever change. */
static struct rd_stub_msg out;

/* The RD_STUB_CONTINUED messages read: what runnerd's wake-ups are for (RD_STUB_AWAKE). */
static uint32_t continued_read;

void stub_main(void) __attribute__((noreturn, used));

/* The entry point: the kernel starts us with rsp/sp at argc. We need neither argv nor the
 * auxiliary vector; only a call-aligned stack (x86_64 guarantees 16 at entry, but align anyway
 * so that compiler-emitted SSE spills can never fault). */
#if defined(__x86_64__)
__asm__(".text\n"
        ".global _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "	xor %ebp, %ebp\n"
        "	and $-16, %rsp\n"
        "	call stub_main\n"
        "	hlt\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".global _start\n"
        ".type _start, %function\n"
        "_start:\n"
        "	mov x29, xzr\n"
        "	mov x30, xzr\n"
        "	bl stub_main\n"
        "	brk #0\n");
#endif

__attribute__((noreturn)) static void exit_group(int code)
{
	for (;;)
		sys1(NR_exit_group, code);
}

/* The command's terminal (RD_STUB_PTY): the master of its pseudo-terminal, and the caller's
 * terminal, whose modes are saved while the stub has it in raw mode: pty_outer, read from
 * and asked for modes, and pty_out, written to (two fds of the caller's when it had its
 * terminal open read-only on one, as `exec </dev/tty` does). -1: a command with pipes, no
 * relay. */
static int pty_master = -1, pty_outer = -1, pty_out = -1;
static int outer_gone, master_gone;
/* pty_input: the caller's fd 0 was on its terminal, so what is typed there is the command's;
 * else the stub only copies out what the command writes, and leaves the terminal's modes
 * and input alone. */
static int pty_input;
static struct ktermios outer_saved, outer_set;
static int outer_raw;

static int same_modes(const struct ktermios *a, const struct ktermios *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
	for (unsigned long i = 0; i < sizeof(*a); i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/* The caller's terminal as it was before the stub made it raw: whenever the stub stops or
 * ends, so that the caller's shell gets it back as it left it. Only if its modes are still
 * the stub's: what another process of the caller's set meanwhile (the agent's own line
 * editor) stays. */
static void term_restore(void)
{
	struct ktermios now;
	if (outer_raw && sys3(NR_ioctl, pty_outer, TCGETS, &now) == 0 &&
	    same_modes(&now, &outer_set))
		sys3(NR_ioctl, pty_outer, TCSETS, &outer_saved);
	outer_raw = 0;
}

/* Die the way a process killed by SIGKILL dies: the caller sees WIFSIGNALED/SIGKILL. Used
 * when runnerd is gone (its sandbox, and so the command, die with it) and on protocol errors:
 * fail closed, never pretend success. SIGKILL can be neither blocked nor ignored, and a
 * process-directed SIGKILL to oneself takes effect before the kill() call returns to user
 * space. */
__attribute__((noreturn)) static void die_killed(void)
{
	term_restore();
	sys2(NR_kill, self_pid, SIGKILL);
	exit_group(128 + SIGKILL);
}

/* Signals whose default action is to ignore or to stop: raising one of them would not end
 * the process, so a "killed by" status naming one is answered with exit(128 + sig). */
static int default_is_not_fatal(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH ||
	       sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* End the way the command ended; status is a wait status as waitpid() returns it. */
__attribute__((noreturn)) static void exit_like(int32_t status)
{
	int sig = status & 0x7f;

	term_restore();
	if (sig == 0)
		exit_group((status >> 8) & 0xff);
	/* 0x7f: a stopped (or, as 0xffff, continued) status is not an end: protocol error. */
	if (sig == 0x7f || sig > NSIG_MAX)
		die_killed();
	if (sig == SIGKILL)
		die_killed();
	if (default_is_not_fatal(sig))
		exit_group(128 + sig);

	/* No core file: the command's core (if any) was the sandbox's business, and the stub's
	 * own memory is worthless. RLIMIT_CORE 0 stops a core written to a file; a piped
	 * core_pattern ignores RLIMIT_CORE (except 1), but the kernel never dumps a process
	 * whose dumpable flag is 0. WCOREDUMP is set only when a core was actually written. */
	struct rlimit64 none = {0, 0};
	sys4(NR_prlimit64, 0, RLIMIT_CORE, &none, 0);
	sys2(NR_prctl, PR_SET_DUMPABLE, 0);

	/* SIG_DFL, in case the caller ignored sig (SIG_IGN survives execve; handlers do not).
	 * No SA_RESTORER is needed: the kernel only uses a restorer to build a handler frame. */
	struct k_sigaction dfl = {0, 0, 0, 0};
	sys4(NR_rt_sigaction, sig, &dfl, 0, KSIGSET_SIZE);

	/* sig is blocked, so it stays pending; unblocking it makes the kernel deliver it before
	 * rt_sigprocmask returns to user space, and its default action kills us. */
	uint64_t bit = (uint64_t)1 << (sig - 1);
	sys2(NR_kill, self_pid, sig);
	sys4(NR_rt_sigprocmask, SIG_UNBLOCK, &bit, 0, KSIGSET_SIZE);
	exit_group(128 + sig);
}

static void wait_writable(int fd)
{
	struct pollfd p = {fd, POLLOUT, 0};

	sys5(NR_ppoll, &p, 1, 0, 0, KSIGSET_SIZE);
}

/* Write all of text to fd. Errors end the attempt silently: the reader may be gone. A write
 * to a pipe without readers raises SIGPIPE, one past RLIMIT_FSIZE raises SIGXFSZ; it stays
 * pending (blocked), and the forwarder must not pass it on to the command as the caller's. */
static void write_all(int fd, const char *text, uint32_t len)
{
	uint32_t done = 0;

	while (done < len) {
		long r = sys3(NR_write, fd, text + done, len - done);

		if (r > 0) {
			done += (uint32_t)r;
			continue;
		}
		if (r == -EINTR)
			continue;
		if (r == -EAGAIN) {
			wait_writable(fd); /* the caller's fd may be O_NONBLOCK */
			continue;
		}
		if (r == -EPIPE)
			self_raised |= (uint64_t)1 << (SIGPIPE - 1);
		else if (r == -EFBIG)
			self_raised |= (uint64_t)1 << (SIGXFSZ - 1);
		return;
	}
}

/* Is the stub in the foreground of the caller's terminal? Only then does it read the terminal
 * or change its modes, as a shell's job would. */
static int foreground(void)
{
	int pg = 0;
	return sys3(NR_ioctl, pty_outer, TIOCGPGRP, &pg) == 0 && pg == sys1(NR_getpgid, 0);
}

/* The caller's terminal raw, as ssh and script make theirs: every byte typed goes to the
 * command's terminal, whose own modes (echo, line editing, ^C, ^Z) decide what it means. */
static void term_raw(void)
{
	if (pty_outer < 0 || !pty_input || outer_raw || outer_gone || !foreground())
		return;
	if (sys3(NR_ioctl, pty_outer, TCGETS, &outer_saved) < 0)
		return;
	struct ktermios t = outer_saved;
	t.c_iflag &= ~(uint32_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
	t.c_oflag &= ~(uint32_t)OPOST;
	t.c_lflag &= ~(uint32_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
	t.c_cflag &= ~(uint32_t)(CSIZE | PARENB);
	t.c_cflag |= CS8;
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	/* What the kernel kept of it is what term_restore compares with. */
	if (sys3(NR_ioctl, pty_outer, TCSETS, &t) == 0 &&
	    sys3(NR_ioctl, pty_outer, TCGETS, &outer_set) == 0)
		outer_raw = 1;
}

/* The caller's window size onto the command's terminal; the kernel sends the command's
 * foreground SIGWINCH when it changes. */
static void sync_winsize(void)
{
	struct kwinsize ws;
	if (pty_master >= 0 && !outer_gone && sys3(NR_ioctl, pty_outer, TIOCGWINSZ, &ws) == 0)
		sys3(NR_ioctl, pty_master, TIOCSWINSZ, &ws);
}

/* Input for the command not written yet: the master is non-blocking, so that a command that
 * reads nothing never stops the stub from relaying its output. While some is left, the
 * caller's terminal is not read. */
static char to_master[4096];
static uint32_t to_master_len;

static void relay_in(void)
{
	if (!to_master_len) {
		long n = sys3(NR_read, pty_outer, to_master, sizeof(to_master));
		if (n == -EINTR || n == -EAGAIN)
			return;
		if (n <= 0) {
			outer_gone = 1; /* hung up: the kernel tells the caller's group SIGHUP */
			return;
		}
		to_master_len = (uint32_t)n;
	}
	long w = sys3(NR_write, pty_master, to_master, to_master_len);
	if (w > 0) {
		to_master_len -= (uint32_t)w;
		for (uint32_t i = 0; i < to_master_len; i++)
			to_master[i] = to_master[i + (uint32_t)w];
	} else if (w != -EAGAIN && w != -EINTR) {
		to_master_len = 0; /* the command's side is gone */
	}
}

/* What the command wrote, to the caller's terminal; whether anything came. */
static int relay_out(void)
{
	char buf[4096];
	long n = sys3(NR_read, pty_master, buf, sizeof(buf));
	if (n == -EINTR || n == -EAGAIN)
		return 0;
	if (n <= 0) {
		master_gone = 1; /* EIO: no process has the command's terminal open any more */
		return 0;
	}
	if (!outer_gone)
		write_all(pty_out, buf, (uint32_t)n);
	return 1;
}

static long now_ms(void)
{
	struct {
		long sec, nsec;
	} ts = {0, 0};
	sys2(NR_clock_gettime, 1 /* CLOCK_MONOTONIC */, &ts);
	return ts.sec * 1000 + ts.nsec / 1000000;
}

/* The command has ended, or stopped: what it wrote last reaches the caller first. A pty hands
 * written bytes to its reader asynchronously, so the master is read until it has been quiet
 * for 30 ms (or until no one holds the command's terminal any more), for 200 ms at most: a
 * process of the sandbox that goes on writing does not hold the stub. */
static void drain(void)
{
	if (pty_master < 0)
		return; /* no terminal: nothing to read, and no clock to look at */
	long until = now_ms() + 200;
	for (int quiet = 0; !master_gone && quiet < 3 && now_ms() < until;) {
		struct pollfd p = {pty_master, POLLIN, 0};
		struct {
			long sec, nsec;
		} ts = {0, 10 * 1000 * 1000};
		long r = sys5(NR_ppoll, &p, 1, &ts, 0, KSIGSET_SIZE);
		if (r > 0 && relay_out())
			quiet = 0;
		else if (r >= 0)
			quiet++;
		else if (r != -EINTR)
			break;
	}
}

/* Stop the way the command stopped: by the same signal, so that the caller's shell reports the
 * same ("Stopped", "Stopped (tty input)"). The caller's terminal gets its modes back first. On
 * SIGCONT the stub goes on, and the SIGCONT (read from the signalfd) goes on to the command. */
static void stop_like(int sig)
{
	if (sig < 1 || sig > NSIG_MAX || sig == SIGKILL)
		return;
	term_restore();
	struct k_sigaction dfl = {0, 0, 0, 0};
	sys4(NR_rt_sigaction, sig, &dfl, 0, KSIGSET_SIZE);
	uint64_t bit = (uint64_t)1 << (sig - 1);
	sys2(NR_kill, self_pid, sig);
	sys4(NR_rt_sigprocmask, SIG_UNBLOCK, &bit, 0, KSIGSET_SIZE);
	sys4(NR_rt_sigprocmask, SIG_BLOCK, &bit, 0, KSIGSET_SIZE);
}

/* Read one packet from runnerd or the sandbox and act on it, but for a stop, which it leaves
 * in *stop (the signal; 0 once a later message says the command goes on; untouched by other
 * packets). Returns 0 when nothing more is queued, 1 after a packet, and only if the stub
 * keeps running. */
static int handle_one(int c, int *stop)
{
	struct rd_stub_msg m;
	/* Room for three SCM_RIGHTS fds (CMSG_SPACE(3 * sizeof(int)) = 32): a fourth one would
	 * be dropped by the kernel, which then sets MSG_CTRUNC, which we treat as an error. */
	union {
		struct cmsghdr h;
		unsigned char b[32];
	} ctl;
	struct iovec iov = {&m, sizeof(m)};
	struct msghdr mh = {0, 0, &iov, 1, &ctl, 32, 0};
	int fd[3] = {-1, -1, -1}, nfd = 0;

	long n = sys3(NR_recvmsg, c, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == -EAGAIN || n == -EINTR)
		return 0;
	/* EOF or an error: runnerd is gone, and the command with it. */
	if (n <= 0)
		die_killed();
	if (mh.controllen > 0) {
		if (mh.controllen < 20 || ctl.h.level != SOL_SOCKET || ctl.h.type != SCM_RIGHTS ||
		    (ctl.h.len != 20 && ctl.h.len != 24 && ctl.h.len != 28))
			die_killed();
		nfd = (int)(ctl.h.len - sizeof(struct cmsghdr)) / 4;
		for (int i = 0; i < nfd; i++)
			fd[i] = *(int *)(void *)(ctl.b + sizeof(struct cmsghdr) + 4 * (unsigned)i);
	}
	/* SOCK_SEQPACKET keeps packet boundaries: a short packet, a longer one (MSG_TRUNC) or a
	 * truncated fd list (MSG_CTRUNC) means runnerd and the stub disagree: fail closed. */
	if ((unsigned long)n != sizeof(m) || (mh.flags & (MSG_TRUNC | MSG_CTRUNC)))
		die_killed();

	switch (m.type) {
	case RD_STUB_EXIT:
		if (nfd)
			die_killed();
		drain();
		exit_like(m.value);
	case RD_STUB_SAY:
		if (nfd != 1 || m.len > RD_STUB_TEXT_MAX)
			die_killed();
		write_all(fd[0], m.text, m.len);
		sys1(NR_close, fd[0]);
		return 1;
	case RD_STUB_PTY:
		if (nfd != 3 || pty_master >= 0)
			die_killed();
		pty_master = fd[0];
		pty_outer = fd[1];
		pty_out = fd[2];
		pty_input = m.value != 0;
		sys3(NR_fcntl, pty_master, F_SETFL, O_NONBLOCK);
		term_raw();
		sync_winsize();
		return 1;
	case RD_STUB_STOPPED:
		if (nfd || m.value < 1 || m.value > NSIG_MAX)
			die_killed();
		*stop = m.value;
		return 1;
	case RD_STUB_CONTINUED:
		if (nfd)
			die_killed();
		*stop = 0;
		continued_read++;
		return 1;
	case RD_STUB_NAME: {
		char name[16] = {0};
		if (nfd || m.len > 15)
			die_killed();
		for (uint32_t i = 0; i < m.len; i++)
			name[i] = m.text[i];
		sys2(NR_prctl, PR_SET_NAME, name);
		return 1;
	}
	default:
		die_killed();
	}
}

static void send_to_runnerd(int c);

static void tell_runnerd(int c, uint32_t type, int32_t value)
{
	out.type = type;
	out.value = value;
	out.code = out.pid = 0;
	send_to_runnerd(c);
}

/* runnerd learns, once, that this stub stops when its command does (RD_STUB_STOPPING). */
static void tell_stopping(int c, int sig)
{
	static int told;
	if (!told)
		tell_runnerd(c, RD_STUB_STOPPING, sig);
	told = 1;
}

/* The signal the command last stopped by, until a packet says it went on or the caller sends
 * the stub SIGCONT: the stub stays stopped as long as the command is. */
static int stopped_sig;

/* Every packet queued, then a stop if the last word on it was one: a stop a later packet
 * undid (the command went on, or ended) is not made. recheck (runnerd woke the stub): stop
 * again if, after them, the command is still stopped. */
static void handle_control(int c, int recheck)
{
	int stop = -1;
	while (handle_one(c, &stop))
		;
	/* Woken by runnerd: it learns what has been read, and wakes the stub again if that is
	 * not all it woke it for. */
	if (recheck)
		tell_runnerd(c, RD_STUB_AWAKE, (int32_t)continued_read);
	if (stop >= 0)
		stopped_sig = stop;
	if (stop > 0 || (recheck && stopped_sig)) {
		stop = stopped_sig;
		/* What the terminal echoed as it stopped the command (^Z) comes before the
		 * caller's shell says it stopped, as without runnerd. */
		drain();
		tell_stopping(c, stop);
		/* The last look before the stop: a stop signal discards a pending SIGCONT, so
		 * runnerd's wake-up for a CONTINUED that came meanwhile would be lost. Such a
		 * CONTINUED is queued before runnerd is told of it; read, it undoes the stop. */
		int after = -1;
		while (handle_one(c, &after))
			;
		if (after >= 0) {
			stopped_sig = after;
			if (!after)
				return;
			stop = after;
		}
		stop_like(stop);
	}
}

static void send_to_runnerd(int c)
{
	for (;;) {
		long r = sys6(NR_sendto, c, (long)&out, sizeof(out), MSG_NOSIGNAL, 0, 0);

		if (r == -EINTR)
			continue;
		if (r == -EAGAIN) {
			/* runnerd made its socket non-blocking and is behind: wait, never drop. */
			wait_writable(c);
			continue;
		}
		/* Sent, or the peer is gone (EPIPE/ECONNRESET). In the second case do not die
		 * here: an EXIT may still be queued on our side; the control fd's EOF decides. */
		return;
	}
}

/* runnerd's pid, as this stub sees it: the peer of its control socket, which runnerd made. */
static long runnerd_pid(int c)
{
	static long pid;
	struct {
		int32_t pid, uid, gid;
	} cred = {0, 0, 0};
	uint32_t len = sizeof(cred);
	if (!pid && sys5(NR_getsockopt, c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		pid = cred.pid;
	return pid ? pid : -1;
}

static void forward_signals(int c, int sfd)
{
	struct signalfd_siginfo si[8];
	long n = sys3(NR_read, sfd, si, sizeof(si));

	for (long i = 0; n > 0 && i < n / (long)sizeof(si[0]); i++) {
		uint32_t sig = si[i].ssi_signo;
		uint64_t bit = sig >= 1 && sig <= NSIG_MAX ? (uint64_t)1 << (sig - 1) : 0;

		/* The kernel sends the SIGPIPE/SIGXFSZ of a failed write() with send_sig(): as
		 * SI_USER from the writer's own pid, which no other process can forge. Drop it
		 * only if we caused one; a signal the task sent itself before the exec and that
		 * stayed pending across it is still forwarded. */
		if ((self_raised & bit) && si[i].ssi_code == SI_USER &&
		    (long)si[i].ssi_pid == self_pid) {
			self_raised &= ~bit;
			continue;
		}
		/* With a terminal of its own, the command learns of a resize from it. */
		if (sig == SIGWINCH && pty_master >= 0) {
			sync_winsize();
			continue;
		}
		/* Going on after a stop, in the foreground again or not (fg, bg). */
		if (sig == SIGCONT && pty_master >= 0) {
			term_raw();
			sync_winsize();
		}
		/* runnerd's own SIGCONT wakes a stub stopped for a stop the command got out of
		 * by itself, to read that (RD_STUB_CONTINUED): not passed on; and if the command
		 * is still stopped as far as the stub knows (a late wake), it stops again. */
		if (sig == SIGCONT && si[i].ssi_code == SI_USER &&
		    (long)si[i].ssi_pid == runnerd_pid(c)) {
			handle_control(c, 1);
			continue;
		}
		/* Any other SIGCONT: the caller continued its child, which the command now is. */
		if (sig == SIGCONT)
			stopped_sig = 0;
		out.type = RD_STUB_SIGNAL;
		out.value = (int32_t)sig;
		out.code = si[i].ssi_code;
		out.pid = (int32_t)si[i].ssi_pid;
		send_to_runnerd(c);
	}
}

void stub_main(void)
{
	uint64_t all = ALL_SIGNALS;
	struct rlimit64 nofile;

	self_pid = sys0(NR_getpid);

	/* First of all, block every signal (the kernel silently keeps SIGKILL and SIGSTOP
	 * unblockable). A blocked signal is queued even when its disposition is SIG_IGN (the
	 * kernel's sig_ignored() is false for blocked signals), so signals the caller ignored
	 * before exec are forwarded too. Signals pending from before the exec survive it and
	 * are read from the signalfd below. */
	sys4(NR_rt_sigprocmask, SIG_SETMASK, &all, 0, KSIGSET_SIZE);

	/* The control fd: runnerd put it at the same number computed from the same rlimit. */
	if (sys4(NR_prlimit64, 0, RLIMIT_NOFILE, 0, &nofile) < 0)
		exit_group(127);
	int c = RD_STUB_CONTROL_FD(nofile.cur);
	int type = 0;
	int type_len = sizeof(type);
	/* Not our socket: we were exec'd by someone other than runnerd. Say nothing (the fds
	 * are the caller's) and fail like a shell's "command not found". */
	if (c < 0 || sys5(NR_getsockopt, c, SOL_SOCKET, SO_TYPE, &type, &type_len) < 0 ||
	    type != SOCK_SEQPACKET)
		exit_group(127);

	/* Close everything else, so the caller's pipes see EOF when the command (which holds
	 * its own copies) ends, not when the stub does. close_range (5.9) exists on every
	 * kernel runnerd supports (it needs 5.19); an empty range is EINVAL and harmless. */
	if (c > 0)
		sys3(NR_close_range, 0, c - 1, 0);
	sys3(NR_close_range, c + 1, ~0U, 0);

	/* Non-blocking, so that one read per wakeup never sleeps. */
	int sfd = (int)sys4(NR_signalfd4, -1, &all, KSIGSET_SIZE, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die_killed();

	struct pollfd p[4] = {{c, POLLIN, 0}, {sfd, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
	for (;;) {
		/* The command's output, always; the caller's input while the stub is in the
		 * foreground, and only as fast as the command takes it. */
		p[2].fd = pty_master >= 0 && !master_gone ? pty_master : -1;
		p[2].events = to_master_len ? POLLIN | POLLOUT : POLLIN;
		p[3].fd = outer_raw && !outer_gone && !to_master_len ? pty_outer : -1;
		long r = sys5(NR_ppoll, p, 4, 0, 0, KSIGSET_SIZE);

		if (r == -EINTR)
			continue;
		if (r < 0)
			die_killed();
		/* Control first: once the command has ended, a late signal has no one to go to. */
		if (p[0].revents)
			handle_control(c, 0);
		if (p[1].revents & POLLIN)
			forward_signals(c, sfd);
		if (p[2].revents & (POLLIN | POLLHUP | POLLERR))
			relay_out();
		if ((p[2].revents & POLLOUT) || (p[3].revents & (POLLIN | POLLHUP | POLLERR)))
			relay_in();
	}
}
