#include "supervisor/supervisor.h"
#include "intercept/handoff.h"
#include "intercept/reader.h"
#include "intercept/resolve.h"
#include "intercept/task.h"
#include "lib/stub_proto.h"
#include "lib/syscalls.h"
#include "policy/envpolicy.h"
#include "policy/rules.h"
#include "sandbox/launch.h"
#include "supervisor/sup_internal.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>

void rd_sup_log(struct sup *u, const char *fmt, ...)
{
	if (!u->s->verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "runnerd: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

double rd_ms_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

struct cmd *rd_sup_find_tid(struct sup *u, pid_t tid)
{
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (c->tid == tid && c->state < C_RUNNING)
			return c;
	return NULL;
}

void rd_sup_watch(struct sup *u, int fd, struct src *src)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = src};
	if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		fprintf(stderr, "runnerd: epoll_ctl: %s\n", strerror(errno));
		abort(); /* cannot happen with our own fds; never run unwatched */
	}
}

void rd_sup_unwatch(struct sup *u, int *fd)
{
	if (*fd >= 0) {
		epoll_ctl(u->epfd, EPOLL_CTL_DEL, *fd, NULL);
		close(*fd);
	}
	*fd = -1;
}

void rd_sup_kill_sandbox(struct cmd *c)
{
	if (!c->reaped && c->sb.reaper_pidfd >= 0)
		rd_pidfd_send_signal(c->sb.reaper_pidfd, SIGKILL, NULL, 0);
}

void rd_sup_cmd_free_if_done(struct sup *u, struct cmd *c)
{
	if (c->dead)
		return;
	if (c->status_known && c->timer_fd >= 0)
		rd_sup_unwatch(u, &c->timer_fd);
	if (!c->reaped || c->status_known == false || c->ctl_fd >= 0 || c->sb.status_fd >= 0)
		return;
	if (c->state != C_RUNNING && c->state != C_RETURNED && c->state != C_ABORTED)
		return;
	for (struct cmd **pp = &u->cmds; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	rd_sandbox_close(&c->sb);
	rd_sup_req_free(c->req);
	c->req = NULL;
	/* Freed after this round of events: one of them may still name it. */
	c->dead = true;
	c->next = u->dead;
	u->dead = c;
}

/* The caller died or did something other than the planned exec: nothing of its command may
 * go on. */
void rd_sup_cmd_abort(struct sup *u, struct cmd *c, const char *why)
{
	rd_sup_log(u, "exec %llu (task %d): %s", (unsigned long long)c->id, c->tid, why);
	if (c->state < C_RUNNING)
		kill(c->tid, SIGKILL);
	c->state = C_ABORTED;
	c->killed = "its handoff failed";
	rd_sup_kill_sandbox(c);
	rd_audit(
	    u->s->audit, "handoff_failed",
	    json_pack("{s:I, s:i, s:s}", "id", (json_int_t)c->id, "tid", c->tid, "reason", why));
	/* Last: each may free c (on the dead list: it stays readable until the round ends). The
	 * stub's end may have been seen already, and then nothing else would free it. */
	if (c->ask == ASK_PENDING)
		rd_sup_ask_answer(u, c, ANSWER_WITHDRAWN, NULL, why);
	else
		rd_sup_cmd_free_if_done(u, c);
}

static void handle_notification(struct sup *u)
{
	struct seccomp_notif *n = u->notif;
	memset(n, 0, u->notif_size);
	if (ioctl(u->listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0)
		return; /* ENOENT: the task was interrupted before we got it */
	struct cmd *c = rd_sup_find_tid(u, (pid_t)n->pid);
	if (!c) {
		rd_sup_handle_exec(u, n);
		return;
	}
	if (c->state == C_RETRAP &&
	    rd_arch_is_stub_exec(&n->data, c->stub_in_task, c->empty_path, c->argv_addr)) {
		if (c->exec_pending || c->fail_errno) {
			/* Pipelined: the command's exec is not known yet, or failed. */
			c->held = true;
			c->held_id = n->id;
			if (c->fail_errno)
				rd_sup_undo(u, c);
			return;
		}
		/* The execveat runnerd set up, checked from registers: the second and last
		 * CONTINUE. The exec event will confirm the image. */
		c->state = C_EXEC;
		if (rd_notif_reply(u->listener, n->id, 0, true) < 0)
			rd_sup_cmd_abort(u, c, "the caller vanished at the stub's exec");
		return;
	}
	rd_notif_reply(u->listener, n->id, -EPERM, false);
	rd_sup_cmd_abort(u, c, "the caller made another exec in the middle of its handoff");
}

static bool is_stub(struct sup *u, pid_t pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	return stat(p, &st) == 0 && st.st_dev == u->stub_dev && st.st_ino == u->stub_ino;
}

/* Undoing a pipelined handoff whose command's exec failed: the caller runs close_range for
 * the stub and the control socket runnerd put in, one syscall at a time between its entry and
 * exit stops, then gets the registers and signal mask of its stop back, its exec returning
 * fail_errno, and is let go. */
static void undo_next(struct sup *u, struct cmd *c)
{
	struct rd_error err = {0};
	if (c->undo_at < c->n_undo) {
		if (rd_arch_inject_close(c->tid, &c->saved, c->undo_fds[c->undo_at][0],
		                         c->undo_fds[c->undo_at][1], &err) < 0 ||
		    ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
			rd_sup_cmd_abort(u, c, err.msg[0] ? err.msg : "PTRACE_SYSCALL failed");
		return;
	}
	if (rd_arch_return_errno(c->tid, &c->saved, c->fail_errno, &err) < 0) {
		rd_sup_cmd_abort(u, c, err.msg);
		return;
	}
	ptrace(PTRACE_DETACH, c->tid, 0, c->undo_sig);
	c->state = C_RETURNED;
	rd_sup_log(u, "exec %llu (task %d): its command's exec failed: %s returned to the caller",
	           (unsigned long long)c->id, c->tid, strerrorname_np(c->fail_errno) ?: "?");
	rd_sup_cmd_free_if_done(u, c);
}

static void undo_start(struct sup *u, struct cmd *c)
{
	if (rd_handoff_trace_syscalls(c->tid) < 0) {
		rd_sup_cmd_abort(u, c, "PTRACE_SETOPTIONS failed");
		return;
	}
	int ctl = c->ctl_target, stub = c->stub_in_task;
	c->n_undo = c->undo_at = 0;
	if (stub >= 0 && stub == ctl - 1) {
		c->undo_fds[c->n_undo][0] = stub;
		c->undo_fds[c->n_undo++][1] = ctl;
	} else {
		c->undo_fds[c->n_undo][0] = c->undo_fds[c->n_undo][1] = ctl;
		c->n_undo++;
		if (stub >= 0) {
			c->undo_fds[c->n_undo][0] = c->undo_fds[c->n_undo][1] = stub;
			c->n_undo++;
		}
	}
	c->state = C_UNDO;
	c->undo_in_syscall = false;
	undo_next(u, c);
}

static void undo_step(struct sup *u, struct cmd *c, int st)
{
	int event = st >> 16;
	if (event == 0 && WSTOPSIG(st) == (SIGTRAP | 0x80)) {
		if (!c->undo_in_syscall) {
			c->undo_in_syscall = true;
			if (ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
				rd_sup_cmd_abort(u, c, "PTRACE_SYSCALL failed");
			return;
		}
		c->undo_in_syscall = false;
		c->undo_at++;
		undo_next(u, c);
		return;
	}
	/* Every other signal is blocked: a SIGSTOP, kept for the detach; or a group stop. */
	if (event == 0)
		c->undo_sig = WSTOPSIG(st);
	if (ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
		rd_sup_cmd_abort(u, c, "PTRACE_SYSCALL failed");
}

void rd_sup_undo(struct sup *u, struct cmd *c)
{
	/* At the held execveat: interrupt, answer, and undo at the stop that follows. */
	c->held = false;
	c->state = C_UNDO_STOP;
	if (ptrace(PTRACE_INTERRUPT, c->tid, 0, 0) < 0 ||
	    rd_notif_reply(u->listener, c->held_id, -EPERM, false) < 0)
		rd_sup_cmd_abort(u, c, "the caller vanished while its failed exec was given back");
}

static void handle_tracee(struct sup *u, pid_t pid, int st)
{
	int event = st >> 16;
	struct cmd *c = rd_sup_find_tid(u, pid);
	if (!c && WIFSTOPPED(st) && event == PTRACE_EVENT_EXEC) {
		/* A non-leader thread's exec is reported under the thread group id. */
		unsigned long old = 0;
		ptrace(PTRACE_GETEVENTMSG, pid, 0, &old);
		c = rd_sup_find_tid(u, (pid_t)old);
		if (c)
			c->tid = pid;
	}
	if (!c) {
		if (WIFSTOPPED(st))
			ptrace(PTRACE_DETACH, pid, 0, 0);
		return;
	}
	if (!WIFSTOPPED(st)) {
		/* Reaped: its tid may belong to someone else from now on, never kill it. */
		c->state = C_ABORTED;
		rd_sup_cmd_abort(u, c, "the caller died during the handoff");
		return;
	}
	struct rd_error err = {0};
	/* Our interrupt's stop, or a group stop taken at the same point (a SIGSTOP can consume
	 * the interrupt): either way the caller stands just after its exec returned, which the
	 * register check confirms. */
	if (c->state == C_UNDO) {
		undo_step(u, c, st);
	} else if (event == PTRACE_EVENT_STOP && c->state == C_STOPPING) {
		if (rd_arch_save_stop(pid, c->ctl_target, &c->saved, &err) < 0 ||
		    (!c->fail_errno &&
		     rd_arch_rewrite_exec(pid, &c->saved, c->stub_in_task, c->empty_path,
		                          c->argv_addr, &err) < 0)) {
			rd_sup_cmd_abort(u, c, err.msg);
			return;
		}
		c->state = C_RETRAP;
		if (c->fail_errno)
			undo_start(u, c); /* the command's exec failed before this stop */
		else
			ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (event == PTRACE_EVENT_STOP && c->state == C_UNDO_STOP) {
		undo_start(u, c);
	} else if (event == PTRACE_EVENT_EXEC && c->state == C_EXEC) {
		if (!is_stub(u, pid)) {
			rd_sup_cmd_abort(u, c, "the caller exec'd something other than the stub");
			return;
		}
		c->state = C_RUNNING;
		ptrace(PTRACE_DETACH, pid, 0, 0);
		rd_sup_cmd_free_if_done(u, c);
	} else if (event == 0) {
		/* A signal on its way to the caller: deliver it. */
		ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st));
	} else {
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
}

static bool read_status(struct sup *u, struct cmd *c);

static void reap(struct sup *u)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);
		if (pid <= 0)
			return;
		if (pid == u->zygote.pid && !WIFSTOPPED(st)) {
			/* Its reapers are runnerd's children: they live on, watched as before. */
			u->zygote.pid = -1;
			rd_zygote_lost(&u->zygote);
			rd_sup_zygote_check(u);
			continue;
		}
		if (pid == u->spare.reaper && !WIFSTOPPED(st)) {
			/* The spare died before use (its setup failed): forget it, pid and all. If
			 * it had a preset, the next ones go without: the same failure would repeat.
			 */
			if (u->spare.preset && !u->preset_off) {
				fprintf(stderr,
				        "runnerd: the spare sandbox died while setting up masks "
				        "and the command filter ahead of time; each sandbox now "
				        "sets them up itself\n");
				u->preset_off = true;
			}
			rd_sandbox_close(&u->spare);
			u->spare = RD_SANDBOX_NONE;
			continue;
		}
		/* The agent's own process can be a caller mid-handoff (an agent that is a
		 * script exec's its interpreter): a stop is a ptrace event, not its end. */
		if (pid == u->s->agent.pid && !WIFSTOPPED(st)) {
			u->agent_done = true;
			u->agent_status = st;
			if (rd_sup_find_tid(u, pid))
				handle_tracee(u, pid, st);
			continue;
		}
		bool found = false;
		for (struct cmd *c = u->cmds; c; c = c->next)
			if (c->sb.reaper == pid) {
				c->reaped = found = true;
				if (!c->status_known && c->sb.status_fd >= 0)
					read_status(u, c);
				rd_sup_cmd_free_if_done(u, c);
				break;
			}
		if (!found)
			handle_tracee(u, pid, st);
	}
}

/* The reaper's report of the command's end, read when the stub has gone or the reaper has
 * exited (or the agent has): not watched, it wakes no one. The last report counts. Returns
 * whether the end is known now: a report, or the reaper gone without one. */
static bool read_status(struct sup *u, struct cmd *c)
{
	struct rd_reaper_report rep = {0}, more;
	bool got = false;
	ssize_t n;
	while ((n = read(c->sb.status_fd, &more, sizeof(more))) == sizeof(more)) {
		rep = more;
		got = true;
	}
	if (!got && n < 0 && (errno == EAGAIN || errno == EINTR))
		return false; /* the command has not ended (or the reaper not written yet) */
	if (got) {
		c->status = rep.status;
	} else {
		/* The reaper died without a word: killed, as everything in its namespace. */
		c->status = SIGKILL;
		rep.flags = 0;
	}
	c->status_known = true;
	rd_sup_unwatch(u, &c->sb.status_fd);
	/* A command stopped for its timeout ends, for its caller, as timeout(1) reports it.
	 * Where the reaper told the stub itself, the caller saw what the reaper knew: a
	 * timeout that came as the command was ending may not have reached it. A mark the
	 * reaper saw without runnerd's timeout (anyone of the sandbox's uid can queue one) is
	 * not one: the audit keeps the command's own status. */
	bool told = rep.flags & RD_REPORT_STUB_TOLD;
	if (told)
		c->timed_out = c->timed_out && (rep.flags & RD_REPORT_TIMEOUT);
	int real = c->status;
	if (c->timed_out)
		c->status = 124 << 8;
	json_t *f =
	    json_pack("{s:I, s:f}", "id", (json_int_t)c->id, "duration_ms", rd_ms_since(&c->start));
	if (WIFEXITED(real))
		json_object_set_new(f, "status", json_integer(WEXITSTATUS(real)));
	else
		json_object_set_new(f, "signal", json_string(sigabbrev_np(WTERMSIG(real)) ?: "?"));
	if (c->timed_out)
		json_object_set_new(f, "reason", json_string("timeout"));
	else if (c->killed) {
		json_object_set_new(f, "reason", json_string("killed"));
		json_object_set_new(f, "killed_because", json_string(c->killed));
	}
	rd_audit(u->s->audit, "exit", f);
	if (!told)
		rd_sup_stub_exit(c, c->status);
	rd_sup_cmd_free_if_done(u, c);
	return true;
}

/* The agent has exited: a command whose end its caller may have seen already (the reaper
 * tells the stub directly) is logged as it ended, not as killed. */
static void drain_statuses(struct sup *u)
{
	for (struct cmd *c = u->cmds, *next; c; c = next) {
		next = c->next;
		if (!c->status_known && c->sb.status_fd >= 0)
			read_status(u, c);
	}
}

static void handle_timer(struct sup *u, struct cmd *c)
{
	uint64_t ticks;
	if (read(c->timer_fd, &ticks, sizeof(ticks)) != sizeof(ticks) || c->status_known)
		return;
	if (c->ask == ASK_PENDING) {
		char why[64];
		snprintf(why, sizeof(why), "no answer within %u s", c->req->rule->ask_timeout_s);
		rd_sup_ask_answer(u, c, ANSWER_TIMEOUT, NULL, why);
		return;
	}
	if (!c->timed_out) {
		c->timed_out = true;
		rd_sup_log(u, "exec %llu: timeout, SIGTERM", (unsigned long long)c->id);
		rd_sandbox_timeout(&c->sb);
		struct itimerspec its = {.it_value = {.tv_sec = c->kill_grace_s}};
		timerfd_settime(c->timer_fd, 0, &its, NULL);
	} else {
		rd_sup_log(u, "exec %llu: still running after the grace, SIGKILL",
		           (unsigned long long)c->id);
		rd_sup_kill_sandbox(c);
	}
}

static void handle_ctl(struct sup *u, struct cmd *c)
{
	struct rd_stub_msg m;
	ssize_t n = recv(c->ctl_fd, &m, sizeof(m), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == sizeof(m) && m.type == RD_STUB_SIGNAL && c->ask == ASK_PENDING) {
		rd_sup_ask_signal(u, c, m.value);
		return;
	}
	if (n == sizeof(m) && m.type == RD_STUB_SIGNAL) {
		/* A signal from the terminal already reached a command in the caller's process
		 * group: forwarding it too would deliver it twice. */
		if (c->status_known || (m.code == SI_KERNEL && c->joined_pgrp))
			return;
		rd_pidfd_send_signal(c->sb.reaper_pidfd, m.value, NULL, 0);
		return;
	}
	/* EOF or garbage: the stub is gone (the caller was killed, or it exited after EXIT).
	 * A command whose caller is gone must not run on. */
	rd_sup_unwatch(u, &c->ctl_fd);
	if (c->ask == ASK_PENDING) {
		rd_sup_ask_signal(u, c, 0); /* frees c once it is done */
		return;
	}
	if (!c->status_known && !(c->sb.status_fd >= 0 && read_status(u, c))) {
		c->killed = "its caller died";
		rd_sup_kill_sandbox(c);
	}
	rd_sup_cmd_free_if_done(u, c);
}

static void handle_signal(struct sup *u)
{
	struct signalfd_siginfo si;
	while (read(u->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(u);
			continue;
		}
		/* From the terminal, the agent (same process group) got it already. */
		if (si.ssi_code != SI_KERNEL && !u->agent_done)
			kill(u->s->agent.pid, (int)si.ssi_signo);
	}
}

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* Linux 6.6+: a trapped exec wakes runnerd on the caller's CPU, and runnerd's answer wakes
 * the caller on runnerd's: the one waits while the other runs, so neither waits for a CPU
 * that is busy with a command while another idles (docs/benchmarks.md). A scheduling hint
 * only: older kernels go without it. */
static void sync_wakeups(struct sup *u)
{
	if (ioctl(u->listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) <
	    0)
		rd_sup_log(u,
		           "synchronous seccomp wake-ups are not available (%s): Linux 6.6 or "
		           "later has them",
		           strerror(errno));
}

static int setup(struct sup *u, struct rd_session *s)
{
	memset(u, 0, sizeof(*u));
	u->s = s;
	u->listener = s->agent.listener;
	sync_wakeups(u);
	u->spare = RD_SANDBOX_NONE;
	u->zygote = RD_ZYGOTE_NONE;
	u->sid = getsid(0);
	u->userns = geteuid() != 0;
	struct stat st;
	if (fstat(s->stub_fd, &st) < 0 || stat("/", &u->root_st) < 0 ||
	    stat("/proc/self/ns/mnt", &st) < 0)
		return -errno;
	fstat(s->stub_fd, &st);
	u->stub_dev = st.st_dev;
	u->stub_ino = st.st_ino;
	stat("/proc/self/ns/mnt", &st);
	u->mntns = st.st_ino;

	struct seccomp_notif_sizes sizes = {0};
	if (rd_seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		return -errno;
	u->notif_size = sizes.seccomp_notif > sizeof(struct seccomp_notif)
	                    ? sizes.seccomp_notif
	                    : sizeof(struct seccomp_notif);
	u->notif = calloc(1, u->notif_size);
	if (!u->notif)
		return -ENOMEM;

	sigset_t mask;
	sigemptyset(&mask);
	static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(&mask, sigs[i]);
	u->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* A sandbox or client that died before runnerd wrote to it is an EPIPE to handle, not
	 * the end of runnerd (and with it of every later exec of the agent). What runnerd starts
	 * sets its own dispositions: the agent's launcher and each reaper reset them all. */
	signal(SIGPIPE, SIG_IGN);
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (u->sigfd < 0 || u->epfd < 0)
		return -errno;
	u->signal_src = (struct src){.type = SRC_SIGNAL, .cmd = NULL};
	rd_sup_watch(u, u->sigfd, &u->signal_src);
	if (s->tty_fd >= 0) {
		/* A prompt on a terminal whose foreground runnerd is not in must not stop runnerd
		 * (the agent was started before this, with its own dispositions). */
		signal(SIGTTIN, SIG_IGN);
		signal(SIGTTOU, SIG_IGN);
	}
	int r = rd_control_open(u);
	if (r < 0)
		return r;
	/* Last, while runnerd's memory is as small as it will be. Without it, runnerd forks each
	 * sandbox itself, as it does once the zygote is lost. */
	struct rd_error err = {0};
	if (s->zygote_fd < 0) {
		u->warned_zygote = true; /* said at startup */
	} else if (rd_zygote_start(&u->zygote, s->zygote_fd, &err) < 0) {
		fprintf(stderr, "runnerd: %s; runnerd forks each sandbox itself\n", err.msg);
		u->warned_zygote = true;
	} else {
		u->zygote_src = (struct src){.type = SRC_ZYGOTE, .cmd = NULL};
		rd_sup_watch(u, u->zygote.fd, &u->zygote_src);
	}
	return 0;
}

/* The commands finished in this round of events. */
static void free_dead(struct sup *u)
{
	while (u->dead) {
		struct cmd *c = u->dead;
		u->dead = c->next;
		free(c->path);
		free(c);
	}
}

int rd_supervise(struct rd_session *s)
{
	struct sup u;
	int r = setup(&u, s);
	if (r < 0) {
		fprintf(stderr, "runnerd: setting up the supervisor: %s\n", strerror(-r));
		kill(s->agent.pid, SIGKILL);
		return 125;
	}
	rd_sup_pin_masks(&u);
	reap(&u); /* a SIGCHLD may have come before the signalfd existed */
	/* The listener is polled directly, not through epoll: a trapped task wakes a poll()
	 * waiter on its own CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP), where it then waits for
	 * the answer, so that the exchanges of a handoff stay on one CPU. epoll passes that
	 * wake-up on as an ordinary one: often to the other, idle, CPU, which in a VM takes tens
	 * of microseconds to wake, each way. */
	struct pollfd pf[2] = {{u.listener, POLLIN, 0}, {u.epfd, POLLIN, 0}};
	while (!u.agent_done) {
		struct epoll_event evs[32];
		bool want_spare = u.spare.reaper < 0 && !u.spare.pending && !u.spare_failed;
		int pn = poll(pf, 2, want_spare ? 0 : -1);
		if (pn < 0 && errno == EINTR)
			continue;
		if (pn == 0 && want_spare) {
			rd_sup_make_spare(&u);
			continue;
		}
		if (pn < 0) {
			fprintf(stderr, "runnerd: poll: %s\n", strerror(errno));
			break;
		}
		if (pf[0].revents & POLLIN)
			handle_notification(&u);
		else if (pf[0].revents)
			pf[0].fd = -1; /* POLLHUP: no task is left under the filter */
		int n = pf[1].revents ? epoll_wait(u.epfd, evs, 32, 0) : 0;
		for (int i = 0; i < n; i++) {
			struct src *src = evs[i].data.ptr;
			if ((src->cmd && src->cmd->dead) || (src->client && src->client->dead))
				continue;
			switch (src->type) {
			case SRC_SIGNAL:
				handle_signal(&u);
				break;
			case SRC_CTL:
				handle_ctl(&u, src->cmd);
				break;
			case SRC_TIMER:
				handle_timer(&u, src->cmd);
				break;
			case SRC_CONTROL:
				rd_control_accept(&u);
				break;
			case SRC_CONTROL_CLIENT:
				rd_control_client(&u, src->client);
				break;
			case SRC_TTY:
				rd_control_tty(&u);
				break;
			case SRC_CLIENT_TIMER:
				rd_control_tick(&u);
				break;
			case SRC_ZYGOTE:
				rd_sup_spare_ready(&u);
				break;
			case SRC_SETUP:
				rd_sup_exec_result(&u, src->cmd);
				break;
			}
		}
		free_dead(&u);
		rd_control_reap(&u);
	}
	/* The agent is gone: so is every command it started, and every ask it waits for. */
	drain_statuses(&u);
	for (struct cmd *c = u.cmds, *next; c; c = next) {
		next = c->next;
		if (c->ask == ASK_PENDING) {
			rd_sup_ask_answer(&u, c, ANSWER_WITHDRAWN, NULL, "the agent exited");
			continue;
		}
		if (c->status_known)
			continue;
		rd_sup_kill_sandbox(c);
		rd_audit(s->audit, "exit",
		         json_pack("{s:I, s:f, s:s, s:s}", "id", (json_int_t)c->id, "duration_ms",
		                   rd_ms_since(&c->start), "reason", "killed", "killed_because",
		                   "the agent exited"));
	}
	free_dead(&u);
	/* A spare still asked of the zygote exits without its go (runnerd's end closes here). */
	if (u.spare.reaper >= 0)
		kill(u.spare.reaper, SIGKILL);
	rd_sandbox_close(&u.spare);
	rd_zygote_stop(&u.zygote);
	int st = u.agent_status;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	s->agent_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	json_t *f = json_pack("{s:i}", "exit_code", code);
	if (WIFSIGNALED(st))
		json_object_set_new(f, "signal", json_string(sigabbrev_np(WTERMSIG(st)) ?: "?"));
	rd_audit(s->audit, "session_end", f);
	free(u.notif);
	free(u.home);
	free(u.preset_home);
	rd_strv_free(&u.preset_masks);
	for (size_t i = 0; i < u.n_pins; i++)
		free(u.pins[i].path);
	free(u.pins);
	return code;
}
