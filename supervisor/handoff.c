#include "supervisor/handoff.h"
#include "intercept/launcher.h"
#include "lib/stub_proto.h"
#include "supervisor/approvals.h"
#include "supervisor/command.h"

#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>

void sup_handoff_abort(struct sup *u, struct cmd *c, const char *why)
{
	sup_log(u, "exec %llu (task %d): %s", (unsigned long long)c->id, c->tid, why);
	if (c->ho.state < H_RUNNING)
		kill(c->tid, SIGKILL);
	c->ho.state = H_ABORTED;
	c->run.killed = "its handoff failed";
	sup_kill_sandbox(c);
	rd_audit(
	    u->s->audit, "handoff_failed",
	    json_pack("{s:I, s:i, s:s}", "id", (json_int_t)c->id, "tid", c->tid, "reason", why));
	/* Last: each may free c (on the dead list: it stays readable until the round ends). The
	 * stub's end may have been seen already, and then nothing else would free it. */
	if (c->ask.state == ASK_PENDING)
		sup_ask_answer(u, c, ANSWER_WITHDRAWN, NULL, why);
	else
		sup_cmd_free_if_done(u, c);
}

void sup_handoff_begin(struct sup *u, struct cmd *c, uint64_t notif_id)
{
	struct rd_error err = {0};
	struct run *r = &c->run;
	sup_cmd_link(u, c);
	c->ho.state = H_STOPPING;
	if (r->ctl_fd < 0 && sup_make_ctl(c) < 0) {
		rd_notif_reply(u->listener, notif_id, -EPERM, false);
		sup_handoff_abort(u, c, "cannot make the stub's control socket");
		return;
	}
	r->ctl_src = (struct src){.type = SRC_CTL, .cmd = c};
	sup_watch(u, r->ctl_fd, &r->ctl_src);
	/* The stub's first message, waiting for it: the command's name, for its comm. */
	if (c->comm[0]) {
		struct rd_stub_msg m = {.type = RD_STUB_NAME, .len = (uint32_t)strlen(c->comm)};
		memcpy(m.text, c->comm, m.len);
		send(r->ctl_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	/* Interrupt first, then answer (the control socket's ADDFD answers the call): the stop
	 * comes as the exec returns, before any signal is dequeued, so the registers there are
	 * the syscall's. */
	if (ptrace(PTRACE_INTERRUPT, c->tid, 0, 0) < 0) {
		rd_notif_reply(u->listener, notif_id, -EPERM, false);
		sup_handoff_abort(u, c, "PTRACE_INTERRUPT failed");
	} else if (r->ctl_peer < 0 ? rd_handoff_answer(u->listener, notif_id, c->ho.ctl_target) < 0
	                           : rd_handoff_send_ctl(u->listener, notif_id, r->ctl_peer,
	                                                 c->ho.ctl_target, true, &err) < 0) {
		rd_notif_reply(u->listener, notif_id, -EPERM, false);
		sup_handoff_abort(u, c, err.msg[0] ? err.msg : "the caller vanished at its answer");
	}
	sup_close_peer(c);
}

int sup_handoff_pipelined(struct sup *u, struct cmd *c, uint64_t notif_id, struct rd_error *err)
{
	int r = rd_handoff_send_ctl(u->listener, notif_id, c->run.ctl_peer, c->ho.ctl_target, false,
	                            err);
	if (r < 0)
		return r;
	sup_close_peer(c);
	c->ho.exec_pending = true;
	c->ho.setup_src = (struct src){.type = SRC_SETUP, .cmd = c};
	sup_watch(u, c->run.sb.setup_fd, &c->ho.setup_src);
	sup_handoff_begin(u, c, notif_id);
	return 0;
}

/* At the held execveat: interrupt, answer, and undo at the stop that follows. */
static void undo(struct sup *u, struct cmd *c)
{
	c->ho.held = false;
	c->ho.state = H_UNDO_STOP;
	if (ptrace(PTRACE_INTERRUPT, c->tid, 0, 0) < 0 ||
	    rd_notif_reply(u->listener, c->ho.held_id, -EPERM, false) < 0)
		sup_handoff_abort(u, c, "the caller vanished while its failed exec was given back");
}

void sup_handoff_notification(struct sup *u, struct cmd *c, const struct seccomp_notif *n)
{
	struct handoff *h = &c->ho;
	if (h->state == H_RETRAP &&
	    rd_arch_is_stub_exec(&n->data, h->stub_in_task, h->empty_path, h->argv_addr)) {
		if (h->exec_pending || h->fail_errno) {
			/* Pipelined: the command's exec is not known yet, or failed. */
			h->held = true;
			h->held_id = n->id;
			if (h->fail_errno)
				undo(u, c);
			return;
		}
		/* The execveat runnerd set up, checked from registers: the second and last
		 * CONTINUE. The exec event will confirm the image. */
		h->state = H_EXEC;
		if (rd_notif_reply(u->listener, n->id, 0, true) < 0)
			sup_handoff_abort(u, c, "the caller vanished at the stub's exec");
		return;
	}
	rd_notif_reply(u->listener, n->id, -EPERM, false);
	sup_handoff_abort(u, c, "the caller made another exec in the middle of its handoff");
}

void sup_handoff_exec_result(struct sup *u, struct cmd *c)
{
	struct handoff *h = &c->ho;
	struct run *run = &c->run;
	struct rd_error err = {0};
	int exec_errno = 0;
	/* rd_sandbox_wait_exec closes it (and epoll forgets it); it does not block now. */
	epoll_ctl(u->epfd, EPOLL_CTL_DEL, run->sb.setup_fd, NULL);
	h->exec_pending = false;
	int r = rd_sandbox_wait_exec(&run->sb, &exec_errno, &err);
	if (r < 0) {
		/* rd_sandbox_wait_exec has closed the sandbox: no reaper left to reap. */
		run->sb = RD_SANDBOX_NONE;
		run->reaped = run->status_known = true;
	}
	/* The caller is gone with its handoff aborted: nothing is left to let through or give
	 * back. The command ran if its exec went through; its end comes, audited, from the
	 * reaper or its reaping. */
	if (h->state == H_ABORTED) {
		sup_cmd_free_if_done(u, c);
		return;
	}
	/* Its stub's socket closed (runnerd killed the sandbox then; a thread of a live caller
	 * can close it too): the killed command's timeout is not armed, but the caller's held
	 * exec is answered all the same, as below (its stub, finding no runnerd, kills itself). */
	if (r == 0 && !run->killed)
		r = sup_cmd_started(u, c, &err);
	if (r == 0) {
		if (h->held) {
			h->held = false;
			h->state = H_EXEC;
			if (rd_notif_reply(u->listener, h->held_id, 0, true) < 0)
				sup_handoff_abort(u, c, "the caller vanished at the stub's exec");
		}
		return;
	}
	h->fail_errno = sup_launch_errno(exec_errno, err.err);
	sup_audit_launch_failure(u, c->id, c->tid, c->path, exec_errno, h->fail_errno,
	                         run->killed && !err.msg[0] ? run->killed : err.msg);
	run->sb = RD_SANDBOX_NONE;
	run->reaped = run->status_known = true;
	if (run->timer_fd >= 0)
		sup_unwatch(u, &run->timer_fd);
	sup_unwatch(u, &run->ctl_fd);
	/* Where the caller is: at the stop or still on its way there, it is undone there. */
	if (h->state == H_RETRAP && h->held)
		undo(u, c);
}

/* Undoing a pipelined handoff whose command's exec failed: the caller runs close_range for
 * the stub and the control socket runnerd put in, one syscall at a time between its entry and
 * exit stops, then gets the registers and signal mask of its stop back, its exec returning
 * fail_errno, and is let go. */
static void undo_next(struct sup *u, struct cmd *c)
{
	struct handoff *h = &c->ho;
	struct rd_error err = {0};
	if (h->undo_at < h->n_undo) {
		if (rd_arch_inject_close(c->tid, &h->saved, h->undo_fds[h->undo_at][0],
		                         h->undo_fds[h->undo_at][1], &err) < 0 ||
		    ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
			sup_handoff_abort(u, c, err.msg[0] ? err.msg : "PTRACE_SYSCALL failed");
		return;
	}
	if (rd_arch_return_errno(c->tid, &h->saved, h->fail_errno, &err) < 0) {
		sup_handoff_abort(u, c, err.msg);
		return;
	}
	ptrace(PTRACE_DETACH, c->tid, 0, h->undo_sig);
	h->state = H_RETURNED;
	sup_log(u, "exec %llu (task %d): its command's exec failed: %s returned to the caller",
	        (unsigned long long)c->id, c->tid, sup_errno_name(h->fail_errno));
	sup_cmd_free_if_done(u, c);
}

static void undo_start(struct sup *u, struct cmd *c)
{
	struct handoff *h = &c->ho;
	if (rd_handoff_trace_syscalls(c->tid) < 0) {
		sup_handoff_abort(u, c, "PTRACE_SETOPTIONS failed");
		return;
	}
	int ctl = h->ctl_target, stub = h->stub_in_task;
	h->n_undo = h->undo_at = 0;
	if (stub >= 0 && stub == ctl - 1) {
		h->undo_fds[h->n_undo][0] = stub;
		h->undo_fds[h->n_undo++][1] = ctl;
	} else {
		h->undo_fds[h->n_undo][0] = h->undo_fds[h->n_undo][1] = ctl;
		h->n_undo++;
		if (stub >= 0) {
			h->undo_fds[h->n_undo][0] = h->undo_fds[h->n_undo][1] = stub;
			h->n_undo++;
		}
	}
	h->state = H_UNDO;
	h->undo_in_syscall = false;
	undo_next(u, c);
}

static void undo_step(struct sup *u, struct cmd *c, int st)
{
	struct handoff *h = &c->ho;
	int event = st >> 16;
	if (event == 0 && WSTOPSIG(st) == (SIGTRAP | 0x80)) {
		if (!h->undo_in_syscall) {
			h->undo_in_syscall = true;
			if (ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
				sup_handoff_abort(u, c, "PTRACE_SYSCALL failed");
			return;
		}
		h->undo_in_syscall = false;
		h->undo_at++;
		undo_next(u, c);
		return;
	}
	/* Every other signal is blocked: a SIGSTOP, kept for the detach; or a group stop. */
	if (event == 0)
		h->undo_sig = WSTOPSIG(st);
	if (ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
		sup_handoff_abort(u, c, "PTRACE_SYSCALL failed");
}

void sup_handoff_tracee(struct sup *u, pid_t pid, int st)
{
	int event = st >> 16;
	struct cmd *c = sup_cmd_find_tid(u, pid);
	if (!c && WIFSTOPPED(st) && event == PTRACE_EVENT_EXEC) {
		/* A non-leader thread's exec is reported under the thread group id. */
		unsigned long old = 0;
		ptrace(PTRACE_GETEVENTMSG, pid, 0, &old);
		c = sup_cmd_find_tid(u, (pid_t)old);
		if (c)
			c->tid = pid;
	}
	if (!c) {
		if (WIFSTOPPED(st))
			ptrace(PTRACE_DETACH, pid, 0, 0);
		return;
	}
	struct handoff *h = &c->ho;
	if (!WIFSTOPPED(st)) {
		/* Reaped: its tid may belong to someone else from now on, never kill it. */
		h->state = H_ABORTED;
		sup_handoff_abort(u, c, "the caller died during the handoff");
		return;
	}
	struct rd_error err = {0};
	/* Our interrupt's stop, or a group stop taken at the same point (a SIGSTOP can consume
	 * the interrupt): either way the caller stands just after its exec returned, which the
	 * register check confirms. */
	if (h->state == H_UNDO) {
		undo_step(u, c, st);
	} else if (event == PTRACE_EVENT_STOP && h->state == H_STOPPING) {
		if (rd_arch_save_stop(pid, h->ctl_target, &h->saved, &err) < 0 ||
		    (!h->fail_errno &&
		     rd_arch_rewrite_exec(pid, &h->saved, h->stub_in_task, h->empty_path,
		                          h->argv_addr, &err) < 0)) {
			sup_handoff_abort(u, c, err.msg);
			return;
		}
		h->state = H_RETRAP;
		if (h->fail_errno)
			undo_start(u, c); /* the command's exec failed before this stop */
		else
			ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (event == PTRACE_EVENT_STOP && h->state == H_UNDO_STOP) {
		undo_start(u, c);
	} else if (event == PTRACE_EVENT_EXEC && h->state == H_EXEC) {
		if (!sup_is_stub(u, pid)) {
			sup_handoff_abort(u, c, "the caller exec'd something other than the stub");
			return;
		}
		h->state = H_RUNNING;
		ptrace(PTRACE_DETACH, pid, 0, 0);
		sup_cmd_free_if_done(u, c);
	} else if (event == 0) {
		/* A signal on its way to the caller: deliver it. */
		ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st));
	} else {
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
}
