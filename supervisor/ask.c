/* Approvals: the end of an "ask", whoever gives it. The caller already runs the stub, which
 * waits; approved, the command runs from the plan held since the trap; denied, timed out or
 * withdrawn, the stub tells the caller why (one line on its stderr) and exits 126. One answer
 * wins: the first ends the ask, a later one is refused with what the first was. */
#include "lib/fdpass.h"
#include "lib/stub_proto.h"
#include "supervisor/sup_internal.h"

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

void rd_sup_stub_exit(struct cmd *c, int status)
{
	struct rd_stub_msg e = {.type = RD_STUB_EXIT, .value = status};
	if (c->ctl_fd >= 0)
		send(c->ctl_fd, &e, sizeof(e), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void rd_sup_stub_say_exit(struct sup *u, struct cmd *c, int say_fd, const char *text, int status)
{
	if (c->ctl_fd < 0)
		return;
	struct rd_stub_msg m = {.type = RD_STUB_SAY};
	size_t len = strlen(text);
	m.len = (uint32_t)(len < RD_STUB_TEXT_MAX ? len : RD_STUB_TEXT_MAX);
	memcpy(m.text, text, m.len);
	/* The caller's stderr goes with the text, and the stub writes it there. Without it there
	 * is nothing to say, only the exit. */
	if (say_fd >= 0 && rd_send_buf_fds(c->ctl_fd, &m, sizeof(m), &say_fd, 1, MSG_DONTWAIT) < 0)
		rd_sup_log(u, "exec %llu: the stub could not be told why: %s",
		           (unsigned long long)c->id, "its queue is full or it is gone");
	rd_sup_stub_exit(c, status);
}

static void remember(struct sup *u, uint64_t id, const char *what)
{
	struct answered *a = &u->answered[u->n_answered++ % RD_ANSWERED_KEEP];
	a->id = id;
	snprintf(a->what, sizeof(a->what), "%s", what);
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

int rd_sup_ask_answer(struct sup *u, struct cmd *c, enum ask_answer a, const struct answerer *by,
                      const char *reason)
{
	if (c->ask != ASK_PENDING)
		return 0;
	enum ask_answer given = a;
	uint64_t id = c->id;
	c->ask = ASK_ANSWERED;
	u->n_pending--;
	char what[120];
	describe(what, sizeof(what), a, by, reason);
	/* When it was answered is the event's "ts"; when it was asked, here. */
	char asked[32] = "";
	struct tm tm;
	if (gmtime_r(&c->asked_wall, &tm))
		strftime(asked, sizeof(asked), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *ev = json_pack("{s:I, s:I, s:s, s:s, s:o, s:s, s:f}", "id", (json_int_t)c->id,
	                       "rule", (json_int_t)(c->req->rule ? c->req->rule->index : 0),
	                       "action", "ask", "answer", answer_names[a], "by", answerer_json(by),
	                       "asked_at", asked, "waited_ms", rd_ms_since(&c->asked));
	if (ev && reason)
		json_object_set_new(ev, "reason", json_string(reason));
	/* The audit line comes before the decision takes effect; no line, no command. */
	if (rd_audit(u->s->audit, "decision", ev) < 0 && a == ANSWER_APPROVE) {
		a = ANSWER_DENY;
		snprintf(what, sizeof(what), "denied: the audit log cannot be written");
	}
	remember(u, c->id, what);
	rd_sup_log(u, "exec %llu: %s", (unsigned long long)c->id, what);
	if (u->tty_asking == c->id)
		rd_control_tty_done(u, what);
	const char *path = c->req->path;
	if (a == ANSWER_APPROVE) {
		if (rd_sup_launch_approved(u, c) < 0) { /* may free c */
			snprintf(
			    what, sizeof(what),
			    "approved, but the command could not start (the audit log says why)");
			remember(u, id, what);
			given = ANSWER_DENY;
		}
	} else {
		if (a != ANSWER_WITHDRAWN) {
			char line[RD_STUB_TEXT_MAX];
			snprintf(line, sizeof(line), "runnerd: %s: %s\n", path, what);
			rd_sup_stub_say_exit(u, c, rd_sup_caller_stderr(c->req), line, 126 << 8);
		}
		c->reaped = c->status_known = true;
		rd_sup_req_free(c->req);
		c->req = NULL;
		rd_sup_cmd_free_if_done(u, c); /* may free c */
	}
	rd_control_tty_update(u);
	return given == a ? 1 : -1;
}

/* Signals whose default action does not end a process. */
static bool default_is_not_fatal(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH ||
	       sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void rd_sup_ask_signal(struct sup *u, struct cmd *c, int sig)
{
	if (sig == 0) {
		rd_sup_ask_answer(u, c, ANSWER_WITHDRAWN, NULL, "the caller died");
		return;
	}
	if (default_is_not_fatal(sig))
		return;
	/* What the command would have done, had it run: end by the signal. */
	char why[64];
	snprintf(why, sizeof(why), "the caller got SIG%s", sigabbrev_np(sig) ?: "?");
	rd_sup_stub_exit(c, sig);
	rd_sup_ask_answer(u, c, ANSWER_WITHDRAWN, NULL, why);
}
