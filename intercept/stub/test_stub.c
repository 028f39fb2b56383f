/* Tests for runnerd-stub: runs the real binary (argv[1]) the way runnerd's handoff leaves it:
 * control socket at RD_STUB_CONTROL_FD(soft RLIMIT_NOFILE), empty environment, the caller's
 * other fds open. The parent plays runnerd on the other end of the socket.
 *
 * Usage: test_stub PATH-TO-STUB. Exit 0 if all pass, 1 on any failure, 77 if PATH is missing. */
#include "lib/fdpass.h"
#include "lib/stub_proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 5000
#define CALLER_FD  5 /* the pipe write end the stub must close */

static const char *stub_path;
static char core_dir[] = "/tmp/test_stub.XXXXXX";
static int passed, failed;
static const char *current;
static bool case_failed;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL %s: ", current);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	case_failed = true;
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail(__VA_ARGS__);                                                         \
	} while (0)

enum ctl_kind { CTL_SOCKET, CTL_NONE, CTL_DEVNULL, CTL_STREAM };

struct opts {
	enum ctl_kind ctl;
	rlim_t nofile;      /* soft RLIMIT_NOFILE in the child; 0 = 256 */
	bool ignore_sigint; /* SIG_IGN on SIGINT before exec */
	bool raise_core;    /* raise soft RLIMIT_CORE to the hard limit before exec */
	int pending_signal; /* block it and raise it before exec, so it is pending across */
	/* Packets queued on the control socket before the stub starts, so that it reads them
	 * in one go: {type, value} pairs, type 0 ends. */
	struct {
		uint32_t type;
		int32_t value;
	} queued[3];
};

struct kid {
	pid_t pid;
	int sock;   /* our end of the control socket */
	int pipe_r; /* read end of the pipe whose write end sits at CALLER_FD in the stub */
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void child_die(const char *what)
{
	/* stderr may already be the stub's; report by exit code only, plus a best effort. */
	dprintf(2, "test_stub child: %s: %s\n", what, strerror(errno));
	_exit(126);
}

static bool send_msg(int sock, uint32_t type, int32_t value, const char *text, int pass_fd);

static bool spawn(struct kid *k, const struct opts *o)
{
	int sv[2] = {-1, -1}, pfd[2];
	int type = o->ctl == CTL_STREAM ? SOCK_STREAM : SOCK_SEQPACKET;

	k->pid = -1;
	k->sock = -1;
	k->pipe_r = -1;
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
		fail("socketpair/pipe: %s", strerror(errno));
		return false;
	}
	for (size_t i = 0; i < sizeof(o->queued) / sizeof(o->queued[0]) && o->queued[i].type; i++)
		if (!send_msg(sv[0], o->queued[i].type, o->queued[i].value, NULL, -1))
			return false;
	pid_t pid = fork();
	if (pid < 0) {
		fail("fork: %s", strerror(errno));
		return false;
	}
	if (pid == 0) {
		struct rlimit rl;
		rlim_t soft = o->nofile ? o->nofile : 256;
		int ctl = RD_STUB_CONTROL_FD(soft);

		if (chdir(core_dir) < 0)
			child_die("chdir");
		if (o->raise_core) {
			if (getrlimit(RLIMIT_CORE, &rl) < 0)
				child_die("getrlimit core");
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_CORE, &rl) < 0)
				child_die("setrlimit core");
		}
		if (o->ignore_sigint)
			signal(SIGINT, SIG_IGN);
		if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
			child_die("getrlimit nofile");
		if (rl.rlim_max < soft)
			rl.rlim_max = soft;
		rl.rlim_cur = soft;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			child_die("setrlimit nofile");
		if (o->ctl == CTL_SOCKET || o->ctl == CTL_STREAM) {
			if (dup2(sv[1], ctl) < 0)
				child_die("dup2 socket");
		} else if (o->ctl == CTL_DEVNULL) {
			int fd = open("/dev/null", O_RDWR);
			if (fd < 0 || dup2(fd, ctl) < 0)
				child_die("dup2 /dev/null");
		}
		/* After the control fd: sv[1] itself may be CALLER_FD. dup2 clears FD_CLOEXEC on
		 * the new number, so these two survive the exec. */
		if (dup2(pfd[1], CALLER_FD) < 0)
			child_die("dup2 pipe");
		if (o->pending_signal) {
			sigset_t s;
			sigemptyset(&s);
			sigaddset(&s, o->pending_signal);
			sigprocmask(SIG_BLOCK, &s, NULL);
			raise(o->pending_signal);
		}
		char *argv[] = {"stubname", "arg1", NULL};
		char *envp[] = {NULL};
		execve(stub_path, argv, envp);
		child_die("execve");
	}
	close(sv[1]);
	close(pfd[1]);
	k->pid = pid;
	k->sock = sv[0];
	k->pipe_r = pfd[0];
	return true;
}

/* Wait for the child to end; on timeout kill it and fail. Returns the wait status, or -1. */
static int wait_end(struct kid *k, int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	int status;

	for (;;) {
		pid_t r = waitpid(k->pid, &status, WNOHANG);
		if (r == k->pid) {
			k->pid = -1;
			return status;
		}
		if (r < 0) {
			fail("waitpid: %s", strerror(errno));
			return -1;
		}
		if (now_ms() > end) {
			fail("child %d did not end within %d ms", (int)k->pid, timeout_ms);
			kill(k->pid, SIGKILL);
			waitpid(k->pid, &status, 0);
			k->pid = -1;
			return -1;
		}
		usleep(1000);
	}
}

static bool running(struct kid *k)
{
	int status;

	return waitpid(k->pid, &status, WNOHANG) == 0;
}

static void reap(struct kid *k)
{
	if (k->pid > 0) {
		kill(k->pid, SIGKILL);
		waitpid(k->pid, NULL, 0);
	}
	if (k->sock >= 0)
		close(k->sock);
	if (k->pipe_r >= 0)
		close(k->pipe_r);
	k->pid = -1;
	k->sock = k->pipe_r = -1;
}

/* Read fd until EOF, at most cap bytes. Returns the byte count, or -1 on timeout/error. */
static ssize_t read_to_eof(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t got = 0;
	long end = now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		long left = end - now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		ssize_t n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return (ssize_t)got;
		got += (size_t)n;
		if (got == cap)
			return (ssize_t)got;
	}
}

/* The stub closes CALLER_FD after it has blocked all signals: EOF on the pipe is our "ready". */
static bool wait_ready(struct kid *k)
{
	char buf[16];

	if (read_to_eof(k->pipe_r, buf, sizeof(buf), TIMEOUT_MS) != 0) {
		fail("no EOF on the caller's pipe: the stub did not close fd %d", CALLER_FD);
		return false;
	}
	return true;
}

static bool send_raw(int sock, const void *buf, size_t len, int pass_fd)
{
	int r = rd_send_buf_fds(sock, buf, len, &pass_fd, pass_fd >= 0, 0);
	if (r < 0) {
		fail("sendmsg: %s", strerror(-r));
		return false;
	}
	return true;
}

static bool send_msg(int sock, uint32_t type, int32_t value, const char *text, int pass_fd)
{
	struct rd_stub_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.value = value;
	if (text) {
		m.len = (uint32_t)strlen(text);
		memcpy(m.text, text, m.len);
	}
	return send_raw(sock, &m, sizeof(m), pass_fd);
}

/* 1: got a packet; 0: timeout; -1: EOF or error. */
static int recv_msg(int sock, struct rd_stub_msg *m, int timeout_ms)
{
	struct pollfd p = {sock, POLLIN, 0};

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	ssize_t n = recv(sock, m, sizeof(*m), MSG_DONTWAIT);
	if (n <= 0)
		return -1;
	if (n != (ssize_t)sizeof(*m)) {
		fail("packet of %zd bytes from the stub", n);
		return -1;
	}
	return 1;
}

static void expect_exit(struct kid *k, int code)
{
	int st = wait_end(k, TIMEOUT_MS);

	if (st == -1)
		return;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == code, "want exit %d, got status 0x%x", code, st);
}

static void expect_killed(struct kid *k, int sig)
{
	int st = wait_end(k, TIMEOUT_MS);

	if (st == -1)
		return;
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sig, "want killed by %d, got status 0x%x", sig,
	      st);
	CHECK(!WCOREDUMP(st), "status 0x%x says a core was dumped", st);
}

static bool start(struct kid *k, const struct opts *o)
{
	return spawn(k, o) && wait_ready(k);
}

static const struct opts dflt = {.ctl = CTL_SOCKET};

/* (1) EXIT with an exit status: the stub exits with the same code. */
static void t_exit_code(int code)
{
	struct kid k;

	if (start(&k, &dflt) && send_msg(k.sock, RD_STUB_EXIT, code << 8, NULL, -1))
		expect_exit(&k, code);
	reap(&k);
}

static void t_exit_7(void)
{
	t_exit_code(7);
}

static void t_exit_0(void)
{
	t_exit_code(0);
}

static void t_exit_255(void)
{
	t_exit_code(255);
}

/* (2) EXIT with a "killed by" status: the stub dies by the same signal, without a core. */
static void t_killed(int sig, bool raise_core)
{
	struct opts o = dflt;
	struct kid k;

	o.raise_core = raise_core;
	if (start(&k, &o) && send_msg(k.sock, RD_STUB_EXIT, sig, NULL, -1))
		expect_killed(&k, sig);
	reap(&k);
}

static void t_killed_sigterm(void)
{
	t_killed(SIGTERM, false);
}

static void t_killed_sigsegv_nocore(void)
{
	struct rlimit rl;

	getrlimit(RLIMIT_CORE, &rl);
	if (rl.rlim_max == 0)
		fprintf(stderr, "note: hard RLIMIT_CORE is 0 here; the no-core check is weaker\n");
	t_killed(SIGSEGV, true);
}

static void t_killed_sigabrt_nocore(void)
{
	t_killed(SIGABRT, true);
}

static void t_killed_sigkill(void)
{
	t_killed(SIGKILL, false);
}

static void t_killed_sigint_ignored(void)
{
	/* The caller ignored SIGINT; the command died of it anyway: so must the stub. */
	struct opts o = dflt;
	struct kid k;

	o.ignore_sigint = true;
	if (start(&k, &o) && send_msg(k.sock, RD_STUB_EXIT, SIGINT, NULL, -1))
		expect_killed(&k, SIGINT);
	reap(&k);
}

static void t_killed_by_nonfatal(void)
{
	/* A "killed by SIGCHLD" cannot be reproduced by raising it: 128 + sig instead. */
	struct kid k;

	if (start(&k, &dflt) && send_msg(k.sock, RD_STUB_EXIT, SIGCHLD, NULL, -1))
		expect_exit(&k, 128 + SIGCHLD);
	reap(&k);
}

/* (3)+(9) Signals sent to the stub reach runnerd as RD_STUB_SIGNAL; the stub keeps running. */
static void forward_and_check(struct kid *k, int sig, int code, pid_t from)
{
	struct rd_stub_msg m;

	int r = recv_msg(k->sock, &m, TIMEOUT_MS);
	if (r != 1) {
		fail("no RD_STUB_SIGNAL for signal %d (%s)", sig, r == 0 ? "timeout" : "EOF");
		return;
	}
	CHECK(m.type == RD_STUB_SIGNAL, "want type %d, got %u", RD_STUB_SIGNAL, m.type);
	CHECK(m.value == sig, "want signal %d, got %d", sig, m.value);
	CHECK(m.code == code, "signal %d: want code %d, got %d", sig, code, m.code);
	CHECK(m.pid == from, "signal %d: want pid %d, got %d", sig, (int)from, m.pid);
	CHECK(running(k), "the stub ended after forwarding signal %d", sig);
}

/* kill(pid, sig) from a process of its own (not the control socket's peer, which stands for
 * runnerd here); returns its pid. */
static pid_t kill_from_other(pid_t pid, int sig)
{
	pid_t c = fork();
	if (c == 0)
		_exit(kill(pid, sig) < 0 ? 1 : 0);
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("kill from another process: %s", c < 0 ? strerror(errno) : "failed");
	return c;
}

static void t_forward(void)
{
	static const int sigs[] = {SIGUSR1, SIGINT,   SIGTERM, SIGHUP, SIGQUIT,
	                           SIGCHLD, SIGWINCH, SIGTSTP, SIGPIPE};
	struct kid k;

	if (start(&k, &dflt)) {
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
			if (kill(k.pid, sigs[i]) < 0)
				fail("kill: %s", strerror(errno));
			forward_and_check(&k, sigs[i], SI_USER, getpid());
		}
		/* SIGCONT from anyone but runnerd (t_runnerd_wake). */
		pid_t other = kill_from_other(k.pid, SIGCONT);
		forward_and_check(&k, SIGCONT, SI_USER, other);
		/* sigqueue: si_code SI_QUEUE, a real-time signal. */
		union sigval v = {.sival_int = 42};
		if (sigqueue(k.pid, SIGRTMIN + 1, v) < 0)
			fail("sigqueue: %s", strerror(errno));
		forward_and_check(&k, SIGRTMIN + 1, SI_QUEUE, getpid());
		send_msg(k.sock, RD_STUB_EXIT, 0, NULL, -1);
		expect_exit(&k, 0);
	}
	reap(&k);
}

/* runnerd's own SIGCONT only wakes a stopped stub: it is not passed on to the command. */
static void t_runnerd_wake(void)
{
	struct kid k;
	struct rd_stub_msg m;

	if (start(&k, &dflt)) {
		kill(k.pid, SIGCONT);
		/* On its own: a signalfd gives the lowest pending signal first, so a SIGUSR1 sent
		 * with it would be read before a forwarded SIGCONT. */
		CHECK(recv_msg(k.sock, &m, TIMEOUT_MS) == 1 && m.type == RD_STUB_AWAKE,
		      "runnerd's SIGCONT was passed on, or not answered: type %u value %d", m.type,
		      m.value);
		CHECK(recv_msg(k.sock, &m, 300) == 0, "then a word: type %u value %d", m.type,
		      m.value);
		kill(k.pid, SIGUSR1);
		CHECK(recv_msg(k.sock, &m, TIMEOUT_MS) == 1 && m.type == RD_STUB_SIGNAL &&
		          m.value == SIGUSR1,
		      "want SIGUSR1 forwarded (the stub still serves), got type %u value %d",
		      m.type, m.value);
		send_msg(k.sock, RD_STUB_EXIT, 0, NULL, -1);
		expect_exit(&k, 0);
	}
	reap(&k);
}

/* The stub stopped? (its parent sees it so: waitpid WUNTRACED) */
static bool stopped_within(struct kid *k, int ms)
{
	long end = now_ms() + ms;
	do {
		int st;
		if (waitpid(k->pid, &st, WNOHANG | WUNTRACED) == k->pid && WIFSTOPPED(st))
			return true;
		usleep(2000);
	} while (now_ms() < end);
	return false;
}

/* A stop undone by a later message before the stub read either: no stop. Both are queued
 * before the stub starts, so it cannot read the first alone however the two are scheduled. */
static void t_stop_undone(void)
{
	struct opts o = dflt;
	struct kid k;

	o.queued[0].type = RD_STUB_STOPPED;
	o.queued[0].value = SIGSTOP;
	o.queued[1].type = RD_STUB_CONTINUED;
	if (start(&k, &o)) {
		CHECK(!stopped_within(&k, 300),
		      "the stub stopped for a stop a later message undid");
		send_msg(k.sock, RD_STUB_EXIT, 4 << 8, NULL, -1);
		expect_exit(&k, 4);
	}
	reap(&k);
}

/* A stop, then the end while the stub is stopped: runnerd's SIGCONT wakes it to read it. */
static void t_stop_then_end(void)
{
	struct kid k;

	if (start(&k, &dflt)) {
		send_msg(k.sock, RD_STUB_STOPPED, SIGSTOP, NULL, -1);
		CHECK(stopped_within(&k, TIMEOUT_MS), "the stub did not stop");
		send_msg(k.sock, RD_STUB_EXIT, 5 << 8, NULL, -1);
		usleep(100 * 1000);
		CHECK(running(&k), "a stopped stub ended");
		kill(k.pid, SIGCONT);
		expect_exit(&k, 5);
	}
	reap(&k);
}

/* A stub that stops tells runnerd so, once per command: runnerd then reads the reaper's
 * reports as they come, to wake it. runnerd's wake-up with the command still stopped stops it
 * again, without a second word. */
static void t_stopping_told(void)
{
	struct kid k;
	struct rd_stub_msg m;

	if (start(&k, &dflt)) {
		/* SIGSTOP: a SIGTSTP would be dropped in an orphaned process group (ctest may
		 * run us in one), as the kernel drops it for any process there. */
		send_msg(k.sock, RD_STUB_STOPPED, SIGSTOP, NULL, -1);
		CHECK(stopped_within(&k, TIMEOUT_MS), "the stub did not stop");
		CHECK(recv_msg(k.sock, &m, TIMEOUT_MS) == 1 && m.type == RD_STUB_STOPPING &&
		          m.value == SIGSTOP,
		      "want RD_STUB_STOPPING for SIGSTOP, got type %u value %d", m.type, m.value);
		kill(k.pid, SIGCONT);
		CHECK(stopped_within(&k, TIMEOUT_MS), "woken, the stub did not stop again");
		CHECK(recv_msg(k.sock, &m, TIMEOUT_MS) == 1 && m.type == RD_STUB_AWAKE &&
		          m.value == 0,
		      "want RD_STUB_AWAKE with no CONTINUED read, got type %u value %d", m.type,
		      m.value);
		CHECK(recv_msg(k.sock, &m, 200) == 0, "a second stop told: type %u", m.type);
		send_msg(k.sock, RD_STUB_EXIT, 6 << 8, NULL, -1);
		kill(k.pid, SIGCONT);
		expect_exit(&k, 6);
	}
	reap(&k);
}

/* runnerd's SIGCONT is answered with the number of CONTINUED read: a wake-up lost to the stub's
 * own stop (a stop signal discards a pending SIGCONT) is sent again until the count is right. */
static void t_awake_counts(void)
{
	struct kid k;
	struct rd_stub_msg m;

	if (start(&k, &dflt)) {
		send_msg(k.sock, RD_STUB_STOPPED, SIGSTOP, NULL, -1);
		CHECK(stopped_within(&k, TIMEOUT_MS), "the stub did not stop");
		CHECK(recv_msg(k.sock, &m, TIMEOUT_MS) == 1 && m.type == RD_STUB_STOPPING,
		      "want RD_STUB_STOPPING, got type %u", m.type);
		send_msg(k.sock, RD_STUB_CONTINUED, 0, NULL, -1);
		kill(k.pid, SIGCONT);
		CHECK(recv_msg(k.sock, &m, TIMEOUT_MS) == 1 && m.type == RD_STUB_AWAKE &&
		          m.value == 1,
		      "want RD_STUB_AWAKE with 1 CONTINUED read, got type %u value %d", m.type,
		      m.value);
		CHECK(!stopped_within(&k, 300), "the stub stopped again after CONTINUED");
		send_msg(k.sock, RD_STUB_EXIT, 2 << 8, NULL, -1);
		expect_exit(&k, 2);
	}
	reap(&k);
}

static void t_forward_ignored(void)
{
	struct opts o = dflt;
	struct kid k;

	o.ignore_sigint = true;
	if (start(&k, &o)) {
		kill(k.pid, SIGINT);
		forward_and_check(&k, SIGINT, SI_USER, getpid());
		send_msg(k.sock, RD_STUB_EXIT, 3 << 8, NULL, -1);
		expect_exit(&k, 3);
	}
	reap(&k);
}

static void t_forward_pending_across_exec(void)
{
	/* The task raised SIGUSR1 while blocking it, then exec'd: the stub inherits it pending. */
	struct opts o = dflt;
	struct kid k;

	o.pending_signal = SIGUSR1;
	if (start(&k, &o)) {
		forward_and_check(&k, SIGUSR1, SI_TKILL, k.pid); /* raise() is tgkill */
		send_msg(k.sock, RD_STUB_EXIT, 0, NULL, -1);
		expect_exit(&k, 0);
	}
	reap(&k);
}

/* (4) The caller's pipe sees EOF while the stub is still running. */
static void t_pipe_eof(void)
{
	struct kid k;

	if (start(&k, &dflt)) {
		usleep(20000);
		CHECK(running(&k), "the stub ended before it was told to");
		send_msg(k.sock, RD_STUB_EXIT, 0, NULL, -1);
		expect_exit(&k, 0);
	}
	reap(&k);
}

/* (5) SAY writes the text to the fd passed with it, closes it, and waits for the EXIT. */
static void t_say(void)
{
	static const char text[] = "runnerd: denied by rule 3 (curl to the network)\n";
	char buf[RD_STUB_TEXT_MAX + 1];
	struct kid k;
	int p[2];

	if (pipe(p) < 0) {
		fail("pipe: %s", strerror(errno));
		return;
	}
	if (start(&k, &dflt) && send_msg(k.sock, RD_STUB_SAY, 0, text, p[1])) {
		close(p[1]);
		p[1] = -1;
		/* EOF proves the stub closed the fd it received. */
		ssize_t n = read_to_eof(p[0], buf, sizeof(buf), TIMEOUT_MS);
		CHECK(n == (ssize_t)strlen(text) && memcmp(buf, text, strlen(text)) == 0,
		      "SAY text: got %zd bytes", n);
		CHECK(running(&k), "the stub ended after SAY");
		send_msg(k.sock, RD_STUB_EXIT, 1 << 8, NULL, -1);
		expect_exit(&k, 1);
	}
	if (p[1] >= 0)
		close(p[1]);
	close(p[0]);
	reap(&k);
}

static void t_say_full_length(void)
{
	char text[RD_STUB_TEXT_MAX + 1], buf[RD_STUB_TEXT_MAX + 1];
	struct rd_stub_msg m;
	struct kid k;
	int p[2];

	memset(text, 'x', RD_STUB_TEXT_MAX);
	if (pipe(p) < 0) {
		fail("pipe: %s", strerror(errno));
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = RD_STUB_SAY;
	m.len = RD_STUB_TEXT_MAX;
	memcpy(m.text, text, RD_STUB_TEXT_MAX);
	if (start(&k, &dflt) && send_raw(k.sock, &m, sizeof(m), p[1])) {
		close(p[1]);
		p[1] = -1;
		ssize_t n = read_to_eof(p[0], buf, sizeof(buf), TIMEOUT_MS);
		CHECK(n == RD_STUB_TEXT_MAX && memcmp(buf, text, RD_STUB_TEXT_MAX) == 0,
		      "full-length SAY: got %zd bytes", n);
		send_msg(k.sock, RD_STUB_EXIT, 0, NULL, -1);
		expect_exit(&k, 0);
	}
	if (p[1] >= 0)
		close(p[1]);
	close(p[0]);
	reap(&k);
}

/* A SAY to a pipe nobody reads: the write's own SIGPIPE must not be forwarded as the caller's. */
static void t_say_epipe_not_forwarded(void)
{
	struct rd_stub_msg m;
	struct kid k;
	int p[2];

	if (pipe(p) < 0) {
		fail("pipe: %s", strerror(errno));
		return;
	}
	close(p[0]);
	if (start(&k, &dflt) && send_msg(k.sock, RD_STUB_SAY, 0, "nobody reads this\n", p[1])) {
		usleep(100000);
		kill(k.pid, SIGUSR2);
		forward_and_check(&k, SIGUSR2, SI_USER, getpid());
		usleep(50000);
		send_msg(k.sock, RD_STUB_EXIT, 0, NULL, -1);
		expect_exit(&k, 0);
		while (recv_msg(k.sock, &m, 0) == 1)
			CHECK(m.value != SIGPIPE, "the stub forwarded its own SIGPIPE");
	}
	close(p[1]);
	reap(&k);
}

/* (6) runnerd gone: the stub dies by SIGKILL. */
static void t_runnerd_gone(void)
{
	struct kid k;

	if (start(&k, &dflt)) {
		close(k.sock);
		k.sock = -1;
		expect_killed(&k, SIGKILL);
	}
	reap(&k);
}

/* An EXIT queued before runnerd closed its end is still honoured. */
static void t_exit_then_close(void)
{
	struct kid k;

	if (start(&k, &dflt) && send_msg(k.sock, RD_STUB_EXIT, 9 << 8, NULL, -1)) {
		close(k.sock);
		k.sock = -1;
		expect_exit(&k, 9);
	}
	reap(&k);
}

/* (7) Protocol errors: the stub dies by SIGKILL. */
static void protocol_error(const void *buf, size_t len, int pass_fd)
{
	struct kid k;

	if (start(&k, &dflt) && send_raw(k.sock, buf, len, pass_fd))
		expect_killed(&k, SIGKILL);
	reap(&k);
}

static void t_garbage_short(void)
{
	protocol_error("garbage!!!", 10, -1);
}

static void t_garbage_long(void)
{
	char buf[sizeof(struct rd_stub_msg) + 100];

	memset(buf, 0, sizeof(buf));
	((struct rd_stub_msg *)(void *)buf)->type = RD_STUB_EXIT;
	protocol_error(buf, sizeof(buf), -1);
}

static void t_unknown_type(void)
{
	struct rd_stub_msg m;

	memset(&m, 0, sizeof(m));
	m.type = 99;
	protocol_error(&m, sizeof(m), -1);
}

static void t_say_without_fd(void)
{
	struct rd_stub_msg m;

	memset(&m, 0, sizeof(m));
	m.type = RD_STUB_SAY;
	m.len = 3;
	memcpy(m.text, "hi\n", 3);
	protocol_error(&m, sizeof(m), -1);
}

static void t_say_too_long(void)
{
	struct rd_stub_msg m;

	memset(&m, 0, sizeof(m));
	m.type = RD_STUB_SAY;
	m.len = RD_STUB_TEXT_MAX + 1;
	protocol_error(&m, sizeof(m), 2);
}

static void t_exit_with_fd(void)
{
	struct rd_stub_msg m;

	memset(&m, 0, sizeof(m));
	m.type = RD_STUB_EXIT;
	protocol_error(&m, sizeof(m), 2);
}

static void t_exit_stopped_status(void)
{
	struct rd_stub_msg m;

	memset(&m, 0, sizeof(m));
	m.type = RD_STUB_EXIT;
	m.value = (SIGTSTP << 8) | 0x7f; /* WIFSTOPPED: not an end */
	protocol_error(&m, sizeof(m), -1);
}

/* (8) Not started by runnerd: no socket at the control fd → exit 127, quickly. */
static void not_runnerd(enum ctl_kind ctl)
{
	struct opts o = dflt;
	struct kid k;

	o.ctl = ctl;
	if (spawn(&k, &o)) {
		long t0 = now_ms();
		int st = wait_end(&k, TIMEOUT_MS);
		long ms = now_ms() - t0;
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 127,
		      "want exit 127, got status 0x%x", st);
		CHECK(ms < 1000, "took %ld ms", ms);
	}
	reap(&k);
}

static void t_no_socket(void)
{
	not_runnerd(CTL_NONE);
}

static void t_devnull_at_control_fd(void)
{
	not_runnerd(CTL_DEVNULL);
}

static void t_stream_socket_at_control_fd(void)
{
	not_runnerd(CTL_STREAM);
}

/* RLIMIT_NOFILE >= 1024: the control fd is 1023. */
static void t_high_nofile(void)
{
	struct opts o = dflt;
	struct kid k;

	o.nofile = 4096;
	if (start(&k, &o) && send_msg(k.sock, RD_STUB_EXIT, 5 << 8, NULL, -1))
		expect_exit(&k, 5);
	reap(&k);
}

struct test {
	const char *name;
	void (*fn)(void);
};

static const struct test tests[] = {
    {"exit code 7", t_exit_7},
    {"exit code 0", t_exit_0},
    {"exit code 255", t_exit_255},
    {"killed by SIGTERM", t_killed_sigterm},
    {"killed by SIGSEGV, no core", t_killed_sigsegv_nocore},
    {"killed by SIGABRT, no core", t_killed_sigabrt_nocore},
    {"killed by SIGKILL", t_killed_sigkill},
    {"killed by SIGINT the caller ignored", t_killed_sigint_ignored},
    {"killed by SIGCHLD -> exit 145", t_killed_by_nonfatal},
    {"signals forwarded, stub keeps running", t_forward},
    {"runnerd's SIGCONT wakes, is not forwarded", t_runnerd_wake},
    {"STOPPED then CONTINUED unread: no stop", t_stop_undone},
    {"STOPPED, EXIT while stopped, SIGCONT: the end", t_stop_then_end},
    {"a stop is told to runnerd, once", t_stopping_told},
    {"runnerd's wake-up is answered with the CONTINUED read", t_awake_counts},
    {"ignored SIGINT still forwarded", t_forward_ignored},
    {"signal pending across exec forwarded", t_forward_pending_across_exec},
    {"caller's pipe EOF while running", t_pipe_eof},
    {"SAY via SCM_RIGHTS pipe", t_say},
    {"SAY of RD_STUB_TEXT_MAX bytes", t_say_full_length},
    {"SAY EPIPE: own SIGPIPE not forwarded", t_say_epipe_not_forwarded},
    {"runnerd gone -> SIGKILL", t_runnerd_gone},
    {"EXIT then close -> exit status", t_exit_then_close},
    {"short garbage packet -> SIGKILL", t_garbage_short},
    {"oversized packet -> SIGKILL", t_garbage_long},
    {"unknown type -> SIGKILL", t_unknown_type},
    {"SAY without fd -> SIGKILL", t_say_without_fd},
    {"SAY len > max -> SIGKILL", t_say_too_long},
    {"EXIT with fd -> SIGKILL", t_exit_with_fd},
    {"EXIT with stopped status -> SIGKILL", t_exit_stopped_status},
    {"no socket at control fd -> 127", t_no_socket},
    {"/dev/null at control fd -> 127", t_devnull_at_control_fd},
    {"stream socket at control fd -> 127", t_stream_socket_at_control_fd},
    {"RLIMIT_NOFILE 4096 -> control fd 1023", t_high_nofile},
};

/* A stub that dumped core would have left a file in core_dir (its cwd), if core_pattern is a
 * plain name: any file there is a failure. Then remove the directory. */
static void check_no_core_files(void)
{
	DIR *d = opendir(core_dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		fprintf(stderr, "FAIL a core file was written: %s/%s\n", core_dir, e->d_name);
		failed++;
		unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	rmdir(core_dir);
}

int main(int argc, char **argv)
{
	struct stat st;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-RUNNERD-STUB\n", argv[0]);
		return 2;
	}
	stub_path = argv[1];
	if (stat(stub_path, &st) < 0) {
		/* The stub is always built with the tests: missing, it is a failure. */
		printf("FAIL: %s: %s\n", stub_path, strerror(errno));
		return 1;
	}
	if (!mkdtemp(core_dir)) {
		perror("mkdtemp");
		return 1;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		current = tests[i].name;
		case_failed = false;
		tests[i].fn();
		if (case_failed) {
			failed++;
		} else {
			passed++;
			printf("ok   %s\n", current);
		}
	}
	check_no_core_files();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
