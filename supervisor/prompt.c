/* --prompt: the oldest pending ask is shown on /dev/tty; the terminal is read only while one
 * is shown, so that no keystroke meant for the agent is taken otherwise. */
#include "supervisor/prompt.h"
#include "supervisor/approvals.h"

#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <termios.h>
#include <unistd.h>

static bool tty_write(struct sup *u, const char *text)
{
	size_t len = strlen(text);
	while (len) {
		ssize_t n = write(u->tty.fd, text, len);
		if (n <= 0)
			return false; /* EAGAIN or gone: a prompt is not worth blocking the loop */
		text += n;
		len -= (size_t)n;
	}
	return true;
}

static void tty_watch(struct sup *u, bool on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &u->tty.src};
	epoll_ctl(u->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, u->tty.fd, on ? &ev : NULL);
}

/* The ask shown was answered (what: how). */
static void tty_done(struct sup *u, const char *what)
{
	char line[256];
	snprintf(line, sizeof(line), "\r\nrunnerd: #%llu %s\r\n", (unsigned long long)u->tty.asking,
	         what);
	tty_write(u, line);
	u->tty.asking = 0;
	u->tty.len = 0;
	tty_watch(u, false);
}

/* Show the oldest pending ask, if any. */
static void tty_show(struct sup *u)
{
	if (!u->ap.n_pending)
		return; /* run on every turn of the loop: no walk of the commands for nothing */
	struct cmd *oldest = sup_ask_oldest(u);
	if (!oldest)
		return;
	const struct req *q = oldest->ask.req;
	char text[2048];
	size_t cap = sizeof(text) - 200; /* room for the tail below */
	int h = snprintf(text, cap, "\r\nrunnerd: run this command? (#%llu, rule %zu%s%s)\r\n",
	                 (unsigned long long)oldest->id, q->rule->index,
	                 q->rule->description ? ": " : "",
	                 q->rule->description ? q->rule->description : "");
	size_t n = h > 0 && (size_t)h < cap ? (size_t)h : 0;
	/* What runs, and where: argv[0] is the caller's to choose, and a rule may match on it.
	 * The caller's bytes, escaped so that the terminal interprets none of them; a run of
	 * spaces as its count, so that padding cannot push the rest out of sight. */
	const char *cwd = sup_req_cwd(q);
	const char *labels[] = {"  program: ", "\r\n  in: ", "\r\n  $"};
	const char *values[] = {q->tg.resolved ? q->tg.resolved : q->path, cwd, ""};
	bool cut = false;
	for (size_t i = 0; i < 3 && !cut; i++) {
		const char *rest = labels[i];
		n = rd_escape_bytes(text, n, cap, &rest, false);
		cut = *rest;
		rest = values[i];
		n = rd_escape_bytes(text, n, cap, &rest, true);
		cut = cut || *rest;
	}
	size_t shown = 0, total = 0;
	for (size_t k = 0; k < q->strs.argc; k++)
		total += strlen(q->strs.argv[k]) + 1;
	for (size_t i = 0; i < q->strs.argc && n + 1 < cap && !cut; i++) {
		const char *a = q->strs.argv[i], *rest = a;
		text[n++] = ' ';
		text[n] = '\0';
		n = rd_escape_word(text, n, cap, &rest, true);
		/* Counted only if all of it went in: what is left would be hidden. */
		shown += (size_t)(rest - a);
		if (*rest)
			break;
		shown++;
	}
	/* A command line cut short could hide its end: it can be denied here, not approved. */
	u->tty.truncated = cut || shown < total;
	unsigned secs = q->rule->ask_timeout_s;
	if (u->tty.truncated)
		snprintf(
		    text + n, sizeof(text) - n,
		    " ... (%zu more bytes not shown)\r\n  too long to check here: approve with "
		    "runnerd approve, or deny [N] (no answer in %u s denies) ",
		    total - shown, secs);
	else
		snprintf(text + n, sizeof(text) - n, "\r\n  [y/N] (no answer in %u s denies) ",
		         secs);
	/* What was typed before this prompt showed (a second Enter, a paste, half a line meant
	 * for an earlier prompt) answers nothing: the terminal hands it over one line per read,
	 * so it is discarded here, not just ignored with the read that answers. */
	bool flushed = tcflush(u->tty.fd, TCIFLUSH) == 0;
	/* A prompt that did not go out whole (a full terminal, XOFF) was not seen whole either:
	 * it can only be denied; so can one after typeahead that could not be discarded. */
	if (!tty_write(u, text) || !flushed)
		u->tty.truncated = true;
	u->tty.asking = oldest->id;
	u->tty.len = 0;
	tty_watch(u, true);
}

void sup_prompt_read(struct sup *u)
{
	struct prompt *t = &u->tty;
	char buf[64];
	ssize_t n = read(t->fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* EOF or EIO (the terminal hung up, or runnerd is in a background group): no more
		 * prompts there; the control socket still answers. */
		fprintf(stderr, "runnerd: /dev/tty cannot be read any more: approvals go through "
		                "runnerd approve/deny only\n");
		tty_watch(u, false);
		close(t->fd);
		t->fd = u->s->tty_fd = -1; /* the session's: not closed again at its end */
		t->asking = 0;
		return;
	}
	for (ssize_t i = 0; i < n && t->asking; i++) {
		char ch = buf[i];
		if (ch != '\r' && ch != '\n') {
			if (t->len < sizeof(t->line) - 1)
				t->line[t->len++] = ch;
			continue;
		}
		t->line[t->len] = 0;
		t->len = 0;
		char *w = t->line;
		while (*w == ' ')
			w++;
		bool yes = strcmp(w, "y") == 0 || strcmp(w, "Y") == 0 || strcmp(w, "yes") == 0;
		if (yes && t->truncated) {
			tty_write(u,
			          "\r\nrunnerd: not all of it was shown: approve it with runnerd "
			          "approve, or deny it here [N] ");
			return;
		}
		uint64_t id = t->asking;
		for (struct cmd *c = u->cmds; c; c = c->next)
			if (c->id == id && c->ask.state == ASK_PENDING) {
				struct answerer by = {.via = BY_TTY};
				sup_ask_answer(u, c, yes ? ANSWER_APPROVE : ANSWER_DENY, &by, NULL);
				break;
			}
		/* One line answers one prompt: what was typed with it, before the next prompt
		 * showed, answers nothing. */
		return;
	}
}

void sup_prompt_open(struct sup *u)
{
	u->tty.fd = u->s->tty_fd;
	u->tty.src = (struct src){.type = SRC_TTY};
}

void sup_prompt_refresh(struct sup *u)
{
	struct prompt *t = &u->tty;
	if (t->fd < 0)
		return;
	if (t->asking) {
		bool pending = false;
		for (struct cmd *c = u->cmds; c && !pending; c = c->next)
			pending = c->id == t->asking && c->ask.state == ASK_PENDING;
		if (pending)
			return;
		const char *what = sup_ask_answered_what(u, t->asking);
		tty_done(u, what ? what : "answered");
	}
	tty_show(u);
}
