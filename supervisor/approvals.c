#include "supervisor/approvals.h"
#include "lib/stub_proto.h"
#include "supervisor/command.h"
#include "supervisor/masks.h"
#include "supervisor/spare.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static const char *const answer_names[] = {
    [ANSWER_APPROVE] = "approve",
    [ANSWER_DENY] = "deny",
    [ANSWER_TIMEOUT] = "timeout",
    [ANSWER_WITHDRAWN] = "withdrawn",
};

void sup_ask_hold(struct sup *u, struct cmd *c, struct req *q)
{
	unsigned secs = q->rule->ask_timeout_s; /* an ask is always a rule's */
	c->ask.state = ASK_PENDING;
	c->ask.req = q;
	clock_gettime(CLOCK_MONOTONIC, &c->ask.asked);
	c->ask.asked_wall = time(NULL);
	u->ap.n_pending++;
	rd_audit(u->s->audit, "decision",
	         json_pack("{s:I, s:I, s:s, s:s, s:i}", "id", (json_int_t)c->id, "rule",
	                   (json_int_t)q->rule->index, "action", "ask", "state", "pending",
	                   "ask_timeout_s", (int)secs));
	sup_log(u, "exec %llu (%s): waiting for approval, %u s", (unsigned long long)c->id, q->path,
	        secs);
}

static void remember(struct sup *u, uint64_t id, const char *what)
{
	struct approvals *ap = &u->ap;
	struct answered *a = &ap->answered[ap->n_answered++ % RD_ANSWERED_KEEP];
	a->id = id;
	snprintf(a->what, sizeof(a->what), "%s", what);
}

const char *sup_ask_answered_what(struct sup *u, uint64_t id)
{
	const struct approvals *ap = &u->ap;
	size_t keep = ap->n_answered < RD_ANSWERED_KEEP ? ap->n_answered : RD_ANSWERED_KEEP;
	for (size_t k = 0; k < keep; k++) { /* newest first */
		const struct answered *a =
		    &ap->answered[(ap->n_answered - 1 - k) % RD_ANSWERED_KEEP];
		if (a->id == id)
			return a->what;
	}
	return NULL;
}

struct cmd *sup_ask_oldest(struct sup *u)
{
	struct cmd *oldest = NULL;
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (c->ask.state == ASK_PENDING && (!oldest || c->id < oldest->id))
			oldest = c;
	return oldest;
}

static json_t *answerer_json(const struct answerer *by)
{
	if (!by || by->via == BY_NONE)
		return json_null();
	if (by->via == BY_TTY)
		return json_pack("{s:s}", "via", "tty");
	return json_pack("{s:s, s:i, s:i, s:o}", "via", "socket", "uid", (int)by->uid, "pid",
	                 (int)by->pid, "comm", rd_json_bytes(by->comm));
}

static void describe(char *out, size_t size, enum ask_answer a, const struct answerer *by,
                     const char *reason)
{
	char who[64] = "";
	if (by && by->via == BY_TTY)
		snprintf(who, sizeof(who), " on the terminal");
	else if (by && by->via == BY_SOCKET)
		snprintf(who, sizeof(who), " by uid %u (pid %d, %s)", (unsigned)by->uid,
		         (int)by->pid, by->comm);
	switch (a) {
	case ANSWER_APPROVE:
		snprintf(out, size, "approved%s", who);
		break;
	case ANSWER_DENY:
		snprintf(out, size, "denied%s", who);
		break;
	case ANSWER_TIMEOUT:
	case ANSWER_WITHDRAWN:
		snprintf(out, size, "%s: %s", a == ANSWER_TIMEOUT ? "denied" : "withdrawn", reason);
		break;
	}
}

/* Start an approved ask's command from the plan held since the trap; on failure (-1) the stub
 * tells the caller why. Frees the plan; may free c. */
static int launch_approved(struct sup *u, struct cmd *c)
{
	struct req *q = c->ask.req;
	struct run *run = &c->run;
	struct rd_error err = {0};
	int exec_errno = 0;
	const char *moved = sup_masks_tampered(u, &q->masks);
	int r;
	if (moved) {
		r = rd_error_set(
		    &err, EPERM,
		    "the masked path %s has moved or changed since the session started", moved);
	} else {
		q->plan.h.has_stub_ctl = run->ctl_fd >= 0;
		q->plan.stub_ctl_fd = run->ctl_fd;
		bool granted = q->rule && q->rule->grants_secret;
		sup_cmd_read_ends(u, !granted);
		r = sup_spare_start(u, c, &q->plan, granted, &err);
		if (r == 0)
			r = rd_sandbox_wait_exec(&run->sb, &exec_errno, &err);
		if (r == 0)
			r = sup_cmd_started(u, c, &err);
	}
	if (r < 0) {
		sup_audit_launch_failure(u, c->id, c->tid, q->path, exec_errno,
		                         sup_launch_errno(exec_errno, err.err), err.msg);
		char line[RD_STUB_TEXT_MAX];
		snprintf(line, sizeof(line), "runnerd: %.200s: %.200s\n", q->path,
		         exec_errno ? strerror(exec_errno) : err.msg);
		run->sb = RD_SANDBOX_NONE;
		run->reaped = run->status_known = true;
		sup_stub_say_exit(u, c, sup_caller_stderr(q), line,
		                  (exec_errno == ENOENT ? 127 : 126) << 8);
	} else {
		clock_gettime(CLOCK_MONOTONIC, &run->start); /* its duration: from the approval */
		sup_spare_make(u);
	}
	sup_req_free(q);
	c->ask.req = NULL;
	sup_cmd_free_if_done(u, c);
	return r < 0 ? -1 : 0;
}

int sup_ask_answer(struct sup *u, struct cmd *c, enum ask_answer a, const struct answerer *by,
                   const char *reason)
{
	if (c->ask.state != ASK_PENDING)
		return 0;
	enum ask_answer given = a;
	uint64_t id = c->id;
	c->ask.state = ASK_ANSWERED;
	u->ap.n_pending--;
	char what[120];
	describe(what, sizeof(what), a, by, reason);
	/* When it was answered is the event's "ts"; when it was asked, here. */
	char asked[32] = "";
	struct tm tm;
	if (gmtime_r(&c->ask.asked_wall, &tm))
		strftime(asked, sizeof(asked), "%Y-%m-%dT%H:%M:%SZ", &tm);
	const struct req *q = c->ask.req;
	json_t *ev = json_pack("{s:I, s:I, s:s, s:s, s:o, s:s, s:f}", "id", (json_int_t)c->id,
	                       "rule", (json_int_t)(q->rule ? q->rule->index : 0), "action", "ask",
	                       "answer", answer_names[a], "by", answerer_json(by), "asked_at",
	                       asked, "waited_ms", sup_ms_since(&c->ask.asked));
	if (ev && reason)
		json_object_set_new(ev, "reason", json_string(reason));
	/* The audit line comes before the decision takes effect; no line, no command. */
	if (rd_audit(u->s->audit, "decision", ev) < 0 && a == ANSWER_APPROVE) {
		a = ANSWER_DENY;
		snprintf(what, sizeof(what), "denied: the audit log cannot be written");
	}
	remember(u, c->id, what);
	sup_log(u, "exec %llu: %s", (unsigned long long)c->id, what);
	if (a == ANSWER_APPROVE) {
		if (launch_approved(u, c) < 0) { /* may free c */
			snprintf(
			    what, sizeof(what),
			    "approved, but the command could not start (the audit log says why)");
			remember(u, id, what);
			given = ANSWER_DENY;
		}
	} else {
		if (a != ANSWER_WITHDRAWN) {
			char line[RD_STUB_TEXT_MAX];
			snprintf(line, sizeof(line), "runnerd: %s: %s\n", q->path, what);
			sup_stub_say_exit(u, c, sup_caller_stderr(q), line, 126 << 8);
		}
		c->run.reaped = c->run.status_known = true;
		sup_req_free(c->ask.req);
		c->ask.req = NULL;
		sup_cmd_free_if_done(u, c); /* may free c */
	}
	return given == a ? 1 : -1;
}

/* Signals whose default action does not end a process. */
static bool default_is_not_fatal(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH ||
	       sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void sup_ask_ctl(struct sup *u, struct cmd *c)
{
	struct rd_stub_msg m;
	ssize_t n = recv(c->run.ctl_fd, &m, sizeof(m), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == sizeof(m) && m.type == RD_STUB_SIGNAL) {
		int sig = m.value;
		if (default_is_not_fatal(sig))
			return;
		/* What the command would have done, had it run: end by the signal. */
		char why[64];
		snprintf(why, sizeof(why), "the caller got SIG%s", sigabbrev_np(sig) ?: "?");
		sup_stub_exit(u, c, sig);
		sup_ask_answer(u, c, ANSWER_WITHDRAWN, NULL, why);
		return;
	}
	/* EOF or garbage: the stub is gone, and with it the caller. */
	sup_unwatch(u, &c->run.ctl_fd);
	sup_ask_answer(u, c, ANSWER_WITHDRAWN, NULL, "the caller died");
}

void sup_ask_timer(struct sup *u, struct cmd *c)
{
	uint64_t ticks;
	if (read(c->run.timer_fd, &ticks, sizeof(ticks)) != sizeof(ticks))
		return;
	char why[64];
	snprintf(why, sizeof(why), "no answer within %u s", c->ask.req->rule->ask_timeout_s);
	sup_ask_answer(u, c, ANSWER_TIMEOUT, NULL, why);
}

void sup_ask_session_end(struct sup *u)
{
	for (struct cmd *c = u->cmds, *next; c; c = next) {
		next = c->next;
		if (c->ask.state == ASK_PENDING)
			sup_ask_answer(u, c, ANSWER_WITHDRAWN, NULL, "the agent exited");
	}
}
