#include "supervisor/command.h"
#include "lib/stub_proto.h"
#include "lib/syscalls.h"
#include "supervisor/spare.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

int sup_cmd_started(struct sup *u, struct cmd *c, struct rd_error *err)
{
	struct run *r = &c->run;
	/* timeout_s: SIGTERM to the sandbox's pid 1 at expiry, SIGKILL after the grace. */
	if (r->timeout_s && sup_arm_timer(u, c, r->timeout_s) < 0) {
		rd_sandbox_destroy(&r->sb);
		return rd_error_set(err, EPERM, "cannot arm the command's timeout");
	}
	if (!r->timeout_s && r->timer_fd >= 0)
		sup_unwatch(u, &r->timer_fd);
	return 0;
}

/* The stub stops as its command did: from now on the reaper's reports are read as they come,
 * for the stub's sake (stopped, it must be woken when the command goes on by itself, or
 * ends). Until then they are read only when the stub or the reaper has gone: one wake-up of
 * runnerd fewer per command. */
static void watch_status(struct sup *u, struct cmd *c)
{
	struct run *r = &c->run;
	if (r->status_watched || r->sb.status_fd < 0)
		return;
	/* The stub is the caller's process, its thread group's leader since the exec. The pidfd
	 * is the stub's if the control socket is still open (the stub's death closes it, unless
	 * a child forked before the stub's exec holds it too) and, for that case, if the pid
	 * runs the stub's file after it was opened: a pid reused since could then only be another
	 * stub, which a wake-up only makes look at its queue. Else there is no one to wake. */
	int pidfd = rd_pidfd_open(c->tgid, 0);
	struct pollfd pf = {r->ctl_fd, POLLRDHUP, 0};
	if (pidfd >= 0 && (!sup_is_stub(u, c->tgid) || poll(&pf, 1, 0) != 0)) {
		close(pidfd);
		pidfd = -1;
	}
	r->stub_pidfd = pidfd;
	r->status_src = (struct src){.type = SRC_STATUS, .cmd = c};
	sup_watch(u, r->sb.status_fd, &r->status_src);
	r->status_watched = true; /* what came before the watch wakes runnerd at once */
}

/* The reaper's reports, read as they come once the stub has stopped (watch_status), and when
 * the stub has gone or the reaper has exited (or the agent has): that the command went on
 * after a stop (the stub is woken); its end; and, after the end, that the stub could not be
 * told it (its queue was full), which runnerd then does. A watch stays until the reaper has
 * gone (EOF). Returns whether the end is known now: a report, or the reaper gone without
 * one. */
static bool read_status(struct sup *u, struct cmd *c)
{
	struct run *r = &c->run;
	struct rd_reaper_report rep = {0}, more;
	bool got = false;
	ssize_t n;
	bool idle = false;
	while ((n = read(r->sb.status_fd, &more, sizeof(more))) == sizeof(more)) {
		if (more.flags & RD_REPORT_CONTINUED) {
			r->continued++;
			sup_stub_wake(u, c, false);
			continue;
		}
		if (more.flags & RD_REPORT_IDLE) {
			idle = true; /* the last word: nothing follows until another plan */
			break;
		}
		rep = more;
		got = true;
	}
	bool gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
	if (gone)
		sup_unwatch(u, &r->sb.status_fd);
	if (r->status_known) {
		/* The end was read already: a later report corrects whether the stub knows. */
		if (got && !(rep.flags & RD_REPORT_STUB_TOLD))
			sup_stub_exit(u, c, r->status);
		if (idle && r->reuse)
			sup_spare_return(u, c);
		sup_cmd_free_if_done(u, c);
		return true;
	}
	if (!got && !gone)
		return false; /* the command has not ended (or the reaper not written yet) */
	if (got) {
		r->status = rep.status;
	} else {
		/* The reaper died without a word: killed, as everything in its namespace. */
		r->status = SIGKILL;
		rep.flags = 0;
	}
	r->status_known = true;
	/* A command stopped for its timeout ends, for its caller, as timeout(1) reports it.
	 * Where the reaper told the stub itself, the caller saw what the reaper knew: a
	 * timeout that came as the command was ending may not have reached it. A mark the
	 * reaper saw without runnerd's timeout is not one: the audit keeps the command's own
	 * status. */
	bool told = rep.flags & RD_REPORT_STUB_TOLD;
	r->left = rep.flags & RD_REPORT_LEFT;
	r->ended_alone = got && !r->left;
	clock_gettime(CLOCK_MONOTONIC, &r->ended_at);
	/* The sandbox may come back: its pid 1 says when (IDLE), which runnerd must hear. */
	r->reuse = (rep.flags & RD_REPORT_REUSE) && !gone;
	if (r->reuse && !idle && !r->status_watched) {
		r->status_src = (struct src){.type = SRC_STATUS, .cmd = c};
		sup_watch(u, r->sb.status_fd, &r->status_src);
		r->status_watched = true;
	}
	/* A stub stopped as its command was: woken, it reads the end. */
	if (rep.flags & RD_REPORT_STUB_STOPPED)
		sup_stub_wake(u, c, true);
	if (told)
		r->timed_out = r->timed_out && (rep.flags & RD_REPORT_TIMEOUT);
	int real = r->status;
	if (r->timed_out)
		r->status = 124 << 8;
	json_t *f = json_pack("{s:I, s:f}", "id", (json_int_t)c->id, "duration_ms",
	                      sup_ms_since(&r->start));
	if (WIFEXITED(real))
		json_object_set_new(f, "status", json_integer(WEXITSTATUS(real)));
	else
		json_object_set_new(f, "signal", json_string(sigabbrev_np(WTERMSIG(real)) ?: "?"));
	if (r->timed_out)
		json_object_set_new(f, "reason", json_string("timeout"));
	else if (r->killed) {
		json_object_set_new(f, "reason", json_string("killed"));
		json_object_set_new(f, "killed_because", json_string(r->killed));
	}
	rd_audit(u->s->audit, "exit", f);
	if (!told)
		sup_stub_exit(u, c, r->status);
	if (idle && r->reuse)
		sup_spare_return(u, c);
	sup_cmd_free_if_done(u, c);
	return true;
}

void sup_cmd_timer(struct sup *u, struct cmd *c)
{
	struct run *r = &c->run;
	uint64_t ticks;
	if (read(r->timer_fd, &ticks, sizeof(ticks)) != sizeof(ticks) || r->reaped)
		return;
	/* The command itself may have ended: its background processes are what times out. */
	if (r->status_known && r->left && !r->ended)
		r->ended = "its timeout";
	if (!r->timed_out) {
		r->timed_out = true;
		sup_log(u, "exec %llu: timeout, SIGTERM to the sandbox", (unsigned long long)c->id);
		rd_sandbox_timeout(&r->sb);
		struct itimerspec its = {.it_value = {.tv_sec = r->kill_grace_s}};
		timerfd_settime(r->timer_fd, 0, &its, NULL);
	} else {
		sup_log(u, "exec %llu: still running after the grace, SIGKILL",
		        (unsigned long long)c->id);
		sup_kill_sandbox(c);
	}
}

void sup_cmd_wake_timer(struct cmd *c)
{
	struct run *r = &c->run;
	uint64_t ticks;
	if (read(r->wake_timer, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
	if (sup_stub_wake_due(r)) {
		rd_pidfd_send_signal(r->stub_pidfd, SIGCONT, NULL, 0);
		return;
	}
	struct itimerspec off = {0};
	timerfd_settime(r->wake_timer, 0, &off, NULL);
}

void sup_cmd_status(struct sup *u, struct cmd *c)
{
	/* After the end too: a correction may follow it, and the EOF must end the watch. */
	read_status(u, c);
}

/* Every end a reaper has written and runnerd not yet read; with seen_only, not of a command
 * whose exec runnerd has not seen through (its end is read after the exec's result). */
static void read_written(struct sup *u, bool seen_only)
{
	for (struct cmd *c = u->cmds, *next; c; c = next) {
		next = c->next; /* read_status may take c off the list */
		if (!c->run.status_known && c->run.sb.status_fd >= 0 &&
		    (!seen_only || sup_cmd_exec_seen(c)))
			read_status(u, c);
	}
}

void sup_cmd_read_ends(struct sup *u, bool wait_back)
{
	read_written(u, true);
	struct cmd *back;
	if (!wait_back || !sup_spare_none_ready(u) || !(back = sup_spare_coming_back(u)))
		return;
	/* Its pid 1 has little left to do: less than a sandbox made now. */
	while (sup_spare_coming_back(u) == back) {
		int left = RD_BACK_MS - (int)sup_ms_since(&back->run.ended_at);
		struct pollfd pf = {back->run.sb.status_fd, POLLIN, 0};
		if (left <= 0 || (poll(&pf, 1, left) < 0 && errno != EINTR))
			return;
		if (pf.revents)
			read_status(u, back);
	}
}

void sup_cmd_ctl(struct sup *u, struct cmd *c)
{
	struct run *r = &c->run;
	struct rd_stub_msg m;
	/* An end the stub had no room for: now, if it has (woken by EPOLLOUT). */
	if (r->exit_pending) {
		sup_stub_exit(u, c, r->exit_status);
		if (!r->exit_pending && r->ctl_fd >= 0) {
			struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &r->ctl_src};
			epoll_ctl(u->epfd, EPOLL_CTL_MOD, r->ctl_fd, &ev);
		}
	}
	ssize_t n = recv(r->ctl_fd, &m, sizeof(m), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == sizeof(m) && m.type == RD_STUB_STOPPING) {
		watch_status(u, c);
		return;
	}
	if (n == sizeof(m) && m.type == RD_STUB_AWAKE) {
		r->continued_read = (unsigned)m.value;
		if (!sup_stub_wake_due(r))
			sup_cmd_wake_timer(c);
		return;
	}
	if (n == sizeof(m) && m.type == RD_STUB_SIGNAL) {
		if (r->status_known)
			return;
		rd_sandbox_signal(&r->sb, m.value);
		return;
	}
	/* EOF or garbage: the stub is gone (the caller was killed, or it exited after EXIT).
	 * A command whose caller is gone must not run on. */
	sup_unwatch(u, &r->ctl_fd);
	if (!r->status_known && !(r->sb.status_fd >= 0 && read_status(u, c))) {
		r->killed = "its caller died";
		/* The command's main process dies with it, as it would have as the caller's own
		 * process; what it started in the background lives on, as without runnerd (and as
		 * the sandbox's lifetime says). A command not known to have exec'd yet goes with
		 * its whole sandbox. */
		if (c->ho.exec_pending || r->reaped || rd_sandbox_kill_command(&r->sb) < 0)
			sup_kill_sandbox(c);
	}
	sup_cmd_free_if_done(u, c);
}

bool sup_cmd_reaped(struct sup *u, pid_t pid)
{
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (c->run.sb.reaper == pid) {
			c->run.reaped = true;
			bool known = c->run.status_known;
			if (c->run.sb.status_fd >= 0)
				read_status(u, c); /* to its EOF: the reaper is gone */
			if (known && (c->run.ended || c->run.left))
				/* A sandbox that outlived its command: when it ended, and why. */
				rd_audit(u->s->audit, "sandbox_end",
				         json_pack("{s:I, s:s, s:f}", "id", (json_int_t)c->id,
				                   "reason",
				                   c->run.ended ?: "its last process exited",
				                   "duration_ms", sup_ms_since(&c->run.start)));
			sup_cmd_free_if_done(u, c);
			return true;
		}
	return false;
}

void sup_cmd_session_end(struct sup *u)
{
	/* A command whose end its caller may have seen already (the reaper tells the stub
	 * directly) is logged as it ended, not as killed. */
	read_written(u, false);
	/* Every sandbox left, its command running or not, gets SIGTERM; what is left of them
	 * after the grace, SIGKILL (sup_cmd_kill_all). */
	for (struct cmd *c = u->cmds; c; c = c->next) {
		if (!sup_cmd_live(c))
			continue;
		/* A sandbox whose command ended with nothing else in it is ending by itself. */
		if (c->run.status_known && c->run.left)
			c->run.ended = "the agent exited";
		else if (!c->run.status_known && !c->run.killed)
			c->run.killed = "the agent exited";
		rd_sandbox_end(&c->run.sb);
	}
}

unsigned sup_cmd_grace(const struct sup *u)
{
	unsigned g = 0;
	for (const struct cmd *c = u->cmds; c; c = c->next)
		if (sup_cmd_live(c) && c->run.kill_grace_s > g)
			g = c->run.kill_grace_s;
	return g;
}

size_t sup_cmd_live_count(const struct sup *u)
{
	size_t n = 0;
	for (const struct cmd *c = u->cmds; c; c = c->next)
		n += sup_cmd_live(c);
	return n;
}

void sup_cmd_kill_all(struct sup *u)
{
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (sup_cmd_live(c)) {
			sup_log(u, "exec %llu: still running after the grace, SIGKILL",
			        (unsigned long long)c->id);
			sup_kill_sandbox(c);
		}
}

/* Is pid one of runnerd's own children: the zygote, the spare, a command's reaper not reaped
 * yet? (A spare the zygote has made but not yet said is not known: it is killed with the rest,
 * harmlessly, and counted as the agent's.) */
static bool runnerd_own(const struct sup *u, pid_t pid)
{
	if (pid == u->sp.zygote.pid || pid == u->sp.spare.reaper || pid == u->sp.idle.reaper)
		return true;
	for (const struct cmd *c = u->cmds; c; c = c->next)
		if (c->run.sb.reaper == pid && !c->run.reaped)
			return true;
	return false;
}

/* SIGKILL to the process the table saw, if pid still names it (same start time): through a
 * pidfd, so that a pid reused since is never signalled. */
static void kill_exactly(const struct sup_proc *p)
{
	int fd = rd_pidfd_open(p->pid, 0);
	if (fd < 0)
		return;
	unsigned long long start;
	if (sup_proc_start(p->pid, &start) == 0 && start == p->start)
		rd_pidfd_send_signal(fd, SIGKILL, NULL, 0);
	close(fd);
}

/* SIGKILL to the agent's tree: the agent first, by its pidfd; then every process below runnerd
 * whose ancestor just below runnerd is not one of runnerd's own, that is the agent's processes
 * and its orphans (runnerd is their subreaper). Zombies stay in the table, for the walk up.
 * None of them can exec any more, but they may fork while this runs: again until a pass finds
 * none still running (a SIGKILLed process is gone, or a zombie, within a few passes). Returns
 * how many were signalled, or -1 if /proc could not be read. */
long sup_cmd_kill_agent(struct sup *u)
{
	/* runnerd serve: the agent's tree is what lies below it, in its container; the agent
	 * itself is killed from outside the container's pid namespace (it may be its pid 1). */
	bool remote = u->s->remote.on;
	if (!u->agent_done && remote) {
		/* Stopped first, so that it forks no more while its tree is killed, and does not
		 * exit by itself once its children are gone: as the container's pid 1 it would end
		 * the container, runnerd in it, before the reply. Bounded: 1 s. */
		(void)!write(u->s->remote.kill_fd, "s", 1);
		char st = 0;
		for (int i = 0; i < 1000 && sup_proc_state(u->s->agent.pid, &st) == 0 &&
		                st != 'T' && st != 't';
		     i++)
			usleep(1000);
		u->remote_kill_owed = true;
	} else if (!u->agent_done)
		rd_pidfd_send_signal(u->s->agent.pidfd, SIGKILL, NULL, 0);
	/* The agent, signalled above, counts once; the scan passes it by (dying, it may still
	 * show as running for a pass or two). */
	pid_t self = remote ? u->s->agent.pid : getpid(), *seen = NULL;
	size_t n_seen = 0, cap = 0, agent = u->agent_done ? 0 : 1;
	for (int pass = 0; pass < 200; pass++) {
		struct sup_procs t = sup_read_procs();
		if (!t.n) {
			free(seen);
			return -1;
		}
		size_t found = 0;
		for (size_t i = 0; i < t.n; i++) {
			pid_t pid = t.p[i].pid, up = pid, top = 0;
			for (int depth = 0; up > 1 && up != self && depth < 4096; depth++) {
				top = up;
				up = sup_procs_parent(&t, up);
			}
			if (pid == u->s->agent.pid)
				continue; /* the agent: signalled above */
			if (up != self || top <= 0 || runnerd_own(u, top) ||
			    !sup_proc_running(&t.p[i]))
				continue;
			kill_exactly(&t.p[i]);
			found++;
			bool known = false;
			for (size_t k = 0; k < n_seen && !known; k++)
				known = seen[k] == pid;
			if (!known && n_seen == cap) {
				cap = cap ? 2 * cap : 64;
				pid_t *more = realloc(seen, cap * sizeof(*seen));
				if (more)
					seen = more;
				else
					known = true; /* not counted; killed all the same */
			}
			if (!known)
				seen[n_seen++] = pid;
		}
		free(t.p);
		if (!found)
			break;
		usleep(1000);
	}
	free(seen);
	return (long)(n_seen + agent);
}

size_t sup_cmd_kill_for(struct sup *u, const char *why)
{
	size_t boxes = 0;
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (sup_cmd_live(c)) {
			if (!c->run.status_known)
				c->run.killed = why;
			sup_kill_sandbox(c);
			boxes++;
		}
	return boxes;
}
