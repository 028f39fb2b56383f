/* The supervisor's loop: one thread that waits on the seccomp listener and an epoll set, and
 * hands each event to the handler it belongs to (core.h lists them, lowest first). */
#include "lib/syscalls.h"
#include "policy/rules.h"
#include "supervisor/approvals.h"
#include "supervisor/command.h"
#include "supervisor/control.h"
#include "supervisor/core.h"
#include "supervisor/exec.h"
#include "supervisor/grant.h"
#include "supervisor/handoff.h"
#include "supervisor/masks.h"
#include "supervisor/prompt.h"
#include "supervisor/sessions.h"
#include "supervisor/spare.h"
#include "supervisor/supervisor.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* A notification: the next exec of a caller, or one from a caller in the middle of its
 * handoff. */
static void notification(struct sup *u)
{
	struct seccomp_notif *n = u->notif;
	memset(n, 0, u->notif_size);
	if (ioctl(u->listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0)
		return; /* ENOENT: the task was interrupted before we got it */
	struct cmd *c = sup_cmd_find_tid(u, (pid_t)n->pid);
	if (c)
		sup_handoff_notification(u, c, n);
	else
		sup_exec(u, n);
}

/* SIGCHLD: every child that changed state, to whoever it belongs to. */
static void reap(struct sup *u)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);
		if (pid <= 0)
			return;
		bool ended = !WIFSTOPPED(st);
		if (ended && sup_spare_reaped(u, pid))
			continue;
		/* The agent's own process can be a caller mid-handoff (an agent that is a script
		 * exec's its interpreter): a stop is a ptrace event, not its end. */
		if (ended && pid == u->s->agent.pid) {
			u->agent_done = true;
			u->agent_status = st;
			if (sup_cmd_find_tid(u, pid))
				sup_handoff_tracee(u, pid, st);
			continue;
		}
		if (!sup_cmd_reaped(u, pid))
			sup_handoff_tracee(u, pid, st);
	}
}

static void signals(struct sup *u)
{
	struct signalfd_siginfo si;
	while (read(u->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(u);
			continue;
		}
		/* A signal from the terminal reached the agent too if it is in runnerd's process
		 * group; else (an interactive shell leads a group of its own, and on a hangup only
		 * runnerd, the session's leader, is told) it is passed on like any other. */
		if (u->s->remote.on)
			continue; /* the agent is not ours to signal: runnerd serve's */
		bool told = si.ssi_code == SI_KERNEL && getpgid(u->s->agent.pid) == getpgrp();
		if (!told && !u->agent_done)
			kill(u->s->agent.pid, (int)si.ssi_signo);
	}
}

static void dispatch(struct sup *u, struct src *src)
{
	struct cmd *c = src->cmd;
	switch (src->type) {
	case SRC_SIGNAL:
		signals(u);
		break;
	case SRC_CTL:
		if (c->ask.state == ASK_PENDING)
			sup_ask_ctl(u, c);
		else
			sup_cmd_ctl(u, c);
		break;
	case SRC_TIMER:
		if (c->ask.state == ASK_PENDING)
			sup_ask_timer(u, c);
		else
			sup_cmd_timer(u, c);
		break;
	case SRC_SETUP:
		sup_handoff_exec_result(u, c);
		break;
	case SRC_ZYGOTE:
		sup_spare_ready(u);
		break;
	case SRC_CONTROL:
		sup_control_accept(u);
		break;
	case SRC_CONTROL_CLIENT:
		sup_control_client(u, src->client);
		break;
	case SRC_CLIENT_TIMER:
		sup_control_tick(u);
		break;
	case SRC_TTY:
		sup_prompt_read(u);
		break;
	case SRC_STATUS:
		sup_cmd_status(u, c);
		break;
	case SRC_WAKE:
		sup_cmd_wake_timer(c);
		break;
	case SRC_AGENT:
		/* runnerd serve: the agent exited (not our child: no status). */
		sup_unwatch(u, &u->s->agent.pidfd);
		u->agent_done = true;
		break;
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
		sup_log(u,
		        "synchronous seccomp wake-ups are not available (%s): Linux 6.6 or later "
		        "has them",
		        strerror(errno));
}

void rd_supervise_signals(sigset_t *set)
{
	static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	sigemptyset(set);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(set, sigs[i]);
}

static int setup(struct sup *u, struct rd_session *s)
{
	memset(u, 0, sizeof(*u));
	u->s = s;
	u->listener = s->agent.listener;
	u->sp.spare = u->sp.idle = RD_SANDBOX_NONE;
	u->sp.zygote = RD_ZYGOTE_NONE;
	u->ctl.fd = u->ctl.timer = u->tty.fd = -1;
	for (size_t i = 0; i < RD_PINNED_KEEP; i++)
		u->pin.f[i].memfd = -1;
	sync_wakeups(u);
	u->full_ids = rd_sandbox_can_map_all_ids();
	u->euid = geteuid();
	u->egid = getegid();
	struct stat st;
	if (stat("/", &u->root_st) < 0 || stat("/proc/self/ns/mnt", &st) < 0)
		return -errno;
	u->mntns = s->remote.on && s->remote.mntns ? s->remote.mntns : st.st_ino;
	if (fstat(s->stub_fd, &st) < 0)
		return -errno;
	u->stub_dev = st.st_dev;
	u->stub_ino = st.st_ino;

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
	rd_supervise_signals(&mask);
	u->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* A sandbox or client that died before runnerd wrote to it is an EPIPE to handle, not
	 * the end of runnerd (and with it of every later exec of the agent). What runnerd starts
	 * sets its own dispositions: the agent's launcher and each reaper reset them all. */
	signal(SIGPIPE, SIG_IGN);
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (u->sigfd < 0 || u->epfd < 0)
		return -errno;
	u->signal_src = (struct src){.type = SRC_SIGNAL};
	sup_watch(u, u->sigfd, &u->signal_src);
	if (s->tty_fd >= 0) {
		/* A prompt on a terminal whose foreground runnerd is not in must not stop runnerd
		 * (the agent was started before this, with its own dispositions). */
		signal(SIGTTIN, SIG_IGN);
		signal(SIGTTOU, SIG_IGN);
	}
	struct rd_box_opts box = rd_box_resolve(s->cfg, s->prof, NULL);
	u->max_sandboxes = box.v[RD_BOX_MAX_SANDBOXES];
	u->rate.per_s = box.v[RD_BOX_EXECS_PER_SECOND];
	u->rate.tokens = (double)u->rate.per_s;
	clock_gettime(CLOCK_MONOTONIC, &u->rate.at);
	u->started_at = u->rate.at;
	if (s->remote.on) {
		u->agent_src = (struct src){.type = SRC_AGENT};
		sup_watch(u, s->agent.pidfd, &u->agent_src);
	}
	sup_prompt_open(u);
	int r = sup_control_open(u);
	if (r < 0)
		return r;
	sup_spare_setup(u);
	return 0;
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
	sup_masks_pin(&u);
	reap(&u); /* a SIGCHLD may have come before the signalfd existed */
	/* The listener is polled directly, not through epoll: a trapped task wakes a poll()
	 * waiter on its own CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP), where it then waits for
	 * the answer, so that the exchanges of a handoff stay on one CPU. epoll passes that
	 * wake-up on as an ordinary one: often to the other, idle, CPU, which in a VM takes tens
	 * of microseconds to wake, each way. */
	struct pollfd pf[2] = {{u.listener, POLLIN, 0}, {u.epfd, POLLIN, 0}};
	/* Once the agent has exited: until every sandbox left has ended, SIGKILL after the grace.
	 */
	struct timespec end = {0};
	bool ending = false, killed_all = false;
	while (!ending || sup_cmd_live_count(&u) > 0) {
		struct epoll_event evs[32];
		if (u.agent_done && !ending) {
			ending = true;
			/* The agent's other processes exec no more: ENOSYS, as when runnerd ends.
			 */
			if (u.listener >= 0)
				close(u.listener);
			pf[0].fd = u.listener = -1;
			sup_ask_session_end(&u);
			sup_cmd_session_end(&u);
			clock_gettime(CLOCK_MONOTONIC, &end);
			/* After runnerd kill, no grace: its sandboxes have their SIGKILL already.
			 */
			end.tv_sec += u.killed_by[0] ? 0 : sup_cmd_grace(&u);
			continue;
		}
		int wait_ms = -1;
		if (ending) {
			double left = -sup_ms_since(&end);
			if (left <= 0 && !killed_all) {
				sup_cmd_kill_all(&u);
				killed_all = true;
			}
			/* A SIGKILLed pid 1 ends its namespace at once; its reaping is bounded. */
			if (left <= -2000)
				break;
			wait_ms = left > 0 ? (int)left + 1 : 100;
		}
		long spare_ms = ending || u.killed_by[0] ? -1 : sup_spare_wait_ms(&u);
		bool want_spare = spare_ms == 0;
		if (spare_ms > 0 && (wait_ms < 0 || spare_ms < wait_ms))
			wait_ms = (int)spare_ms;
		pf[0].fd = u.listener; /* -1 once closed (runnerd kill) */
		int pn = poll(pf, 2, want_spare ? 0 : wait_ms);
		if (pn < 0 && errno == EINTR)
			continue;
		if (pn == 0 && want_spare) {
			sup_spare_make(&u);
			continue;
		}
		if (pn == 0)
			continue;
		if (pn < 0) {
			fprintf(stderr, "runnerd: poll: %s\n", strerror(errno));
			break;
		}
		if (pf[0].revents & POLLIN)
			notification(&u);
		else if (pf[0].revents) {
			/* POLLHUP: no task is left under the filter, none will be */
			close(u.listener);
			pf[0].fd = u.listener = -1;
		}
		int n = pf[1].revents ? epoll_wait(u.epfd, evs, 32, 0) : 0;
		for (int i = 0; i < n; i++) {
			struct src *src = evs[i].data.ptr;
			if ((src->cmd && src->cmd->dead) || (src->client && src->client->dead))
				continue;
			dispatch(&u, src);
		}
		sup_prompt_refresh(&u);
		sup_free_dead(&u);
		sup_control_reap(&u);
	}
	sup_free_dead(&u);
	sup_spare_teardown(&u);
	int st = u.agent_status;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	s->agent_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	json_t *f =
	    s->remote.on ? json_pack("{s:n}", "exit_code") : json_pack("{s:i}", "exit_code", code);
	if (!s->remote.on && WIFSIGNALED(st))
		json_object_set_new(f, "signal", json_string(sigabbrev_np(WTERMSIG(st)) ?: "?"));
	rd_audit(s->audit, "session_end", f);
	free(u.notif);
	sup_masks_free(&u);
	sup_sessions_peers_free(&u.pe);
	sup_grants_free(&u);
	return code;
}
