/* The control socket and the terminal prompt: where an operator answers an "ask".
 *
 * One SOCK_SEQPACKET socket per session, $XDG_RUNTIME_DIR/runnerd/SESSION.sock (or
 * /run/runnerd/SESSION.sock as root), mode 0600 in a 0700 directory. A connection carries one
 * JSON request and gets one JSON reply: {"op":"pending"}, {"op":"approve","id":N},
 * {"op":"deny","id":N}. The peer must be runnerd's own user (or root), and neither runnerd
 * nor anything it started: an agent, or a command, must never answer its own ask. Commands
 * cannot even see the socket: its directory is masked in every sandbox. */
#include "sup_internal.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CLIENTS 16
#define MAX_REQUEST 4096

char *rd_control_dir(struct rd_error *err)
{
	char *dir = NULL;
	if (geteuid() == 0)
		return strdup("/run/runnerd");
	const char *x = getenv("XDG_RUNTIME_DIR");
	if (!x || x[0] != '/') {
		rd_error_set(err, ENOENT,
		             "XDG_RUNTIME_DIR is not set (or not an absolute path), so there is no "
		             "place for the control socket that answers \"ask\" rules");
		return NULL;
	}
	if (asprintf(&dir, "%s/runnerd", x) < 0) {
		rd_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	return dir;
}

void rd_control_dirs(char *out[RD_CONTROL_DIRS])
{
	size_t n = 0;
	const char *x = getenv("XDG_RUNTIME_DIR");
	char *cand[RD_CONTROL_DIRS] = {strdup("/run/runnerd"), NULL, NULL};
	if (asprintf(&cand[1], "/run/user/%u/runnerd", (unsigned)geteuid()) < 0)
		cand[1] = NULL;
	if (x && x[0] == '/' && asprintf(&cand[2], "%s/runnerd", x) < 0)
		cand[2] = NULL;
	for (size_t i = 0; i < RD_CONTROL_DIRS; i++) {
		bool dup = false;
		for (size_t k = 0; cand[i] && k < n; k++)
			dup = dup || strcmp(out[k], cand[i]) == 0;
		if (cand[i] && !dup)
			out[n++] = cand[i];
		else
			free(cand[i]);
	}
	while (n < RD_CONTROL_DIRS)
		out[n++] = NULL;
}

int rd_control_listen(const char *dir, const char *session, char **path, struct rd_error *err)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return rd_error_set(err, errno, "cannot create %s: %s", dir, strerror(errno));
	struct stat st;
	if (lstat(dir, &st) < 0)
		return rd_error_set(err, errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return rd_error_set(
		    err, EPERM,
		    "%s must be a directory of uid %u with mode 0700 (it is %s, uid "
		    "%u, mode %04o): refusing to put a control socket there",
		    dir, (unsigned)geteuid(),
		    S_ISDIR(st.st_mode) ? "a directory" : "not a directory", (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", dir, session) >=
	    sizeof(sa.sun_path))
		return rd_error_set(err, ENAMETOOLONG,
		                    "%s/%s.sock is too long for a socket path (%zu bytes at most)",
		                    dir, session, sizeof(sa.sun_path) - 1);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rd_error_set(err, errno, "socket: %s", strerror(errno));
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	umask(old);
	if (r < 0 || chmod(sa.sun_path, 0600) < 0 || listen(fd, MAX_CLIENTS) < 0) {
		e = r < 0 ? e : errno;
		if (r == 0)
			unlink(sa.sun_path);
		close(fd);
		return rd_error_set(err, e, "cannot listen on %s: %s", sa.sun_path, strerror(e));
	}
	if (!(*path = strdup(sa.sun_path))) {
		unlink(sa.sun_path);
		close(fd);
		return rd_error_set(err, ENOMEM, "out of memory");
	}
	return fd;
}

/* Is pid runnerd itself or one of its descendants (the agent, its processes, a sandbox)? */
static bool ours(pid_t pid)
{
	pid_t self = getpid();
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		if (pid == self)
			return true;
		char p[64], buf[4096];
		snprintf(p, sizeof(p), "/proc/%d/status", pid);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return true; /* gone or hidden: not to be trusted */
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			return true;
		buf[n] = 0;
		const char *pp = strstr(buf, "\nPPid:");
		if (!pp)
			return true;
		pid = (pid_t)atoi(pp + 6);
	}
	return false;
}

static void comm_of(pid_t pid, char out[17])
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, 16) : -1;
	if (fd >= 0)
		close(fd);
	out[n > 0 ? n : 0] = 0;
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = 0;
}

static void reply(int fd, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (text)
		send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	free(text);
	json_decref(j);
}

static json_t *error_reply(const char *fmt, ...) _printf_(1, 2);
static json_t *error_reply(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", false, "error", msg);
}

static void drop_client(struct sup *u, struct client *cl)
{
	rd_sup_unwatch(u, &cl->fd);
	free(cl);
	u->n_clients--;
}

void rd_control_accept(struct sup *u)
{
	for (;;) {
		int fd = accept4(u->control_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct ucred cr = {0};
		socklen_t len = sizeof(cr);
		const char *why = NULL;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
			why = "cannot read its credentials";
		else if (cr.uid != geteuid() && cr.uid != 0)
			why = "it runs as another user";
		else if (cr.pid <= 0 || ours(cr.pid))
			why =
			    "it is runnerd, the agent or something they started: an approval must "
			    "come from outside the session";
		if (why)
			rd_audit(u->s->audit, "control_refused",
			         json_pack("{s:i, s:i, s:s}", "uid", (int)cr.uid, "pid",
			                   (int)cr.pid, "reason", why));
		struct client *cl = u->n_clients < MAX_CLIENTS ? calloc(1, sizeof(*cl)) : NULL;
		if (!cl) {
			close(fd);
			continue;
		}
		/* A refused peer gets its refusal as the reply to its request: closing on it at
		 * once could reset the connection before it reads why. */
		cl->refused = why;
		cl->fd = fd;
		cl->cred = cr;
		cl->src = (struct src){.type = SRC_CONTROL_CLIENT, .cmd = NULL};
		cl->src.client = cl;
		u->n_clients++;
		rd_sup_watch(u, fd, &cl->src);
	}
}

static json_t *pending_json(struct sup *u)
{
	json_t *list = json_array();
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (struct cmd *c = u->cmds; c; c = c->next) {
		if (c->ask != ASK_PENDING)
			continue;
		const struct req *q = c->req;
		json_t *argv = json_array();
		size_t bytes = 0;
		for (size_t i = 0; i < q->strs.argc && bytes < 2048; i++) {
			bytes += strlen(q->strs.argv[i]) + 1;
			json_array_append_new(argv, rd_json_bytes(q->strs.argv[i]));
		}
		char cwd[4096] = "", link[64];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", q->t.cwd_fd);
		ssize_t n = readlink(link, cwd, sizeof(cwd) - 1);
		cwd[n > 0 ? n : 0] = 0;
		unsigned secs = q->rule->ask_timeout_s ? q->rule->ask_timeout_s : 60;
		double waited = rd_ms_since(&c->asked) / 1000.0;
		json_t *e = json_pack(
		    "{s:I, s:i, s:o, s:o, s:o, s:b, s:o, s:I, s:I, s:f, s:f}", "id",
		    (json_int_t)c->id, "tid", (int)c->tid, "path", rd_json_bytes(q->path),
		    "resolved", rd_json_bytes(q->tg.resolved), "argv", argv, "argv_truncated",
		    json_array_size(argv) < q->strs.argc, "cwd", rd_json_bytes(cwd), "rule",
		    (json_int_t)q->rule->index, "asked_at", (json_int_t)c->asked_wall, "waited_s",
		    waited, "expires_in_s", secs - waited > 0 ? secs - waited : 0.0);
		if (e && q->rule->description)
			json_object_set_new(e, "description", json_string(q->rule->description));
		if (e)
			json_array_append_new(list, e);
	}
	return list;
}

static json_t *answer(struct sup *u, const struct client *cl, json_t *req, bool approve)
{
	json_t *idj = json_object_get(req, "id");
	if (!json_is_integer(idj) || json_integer_value(idj) <= 0)
		return error_reply("\"id\" must be a positive integer");
	uint64_t id = (uint64_t)json_integer_value(idj);
	for (struct cmd *c = u->cmds; c; c = c->next) {
		if (c->id != id || c->ask != ASK_PENDING)
			continue;
		struct answerer by = {.via = BY_SOCKET, .uid = cl->cred.uid, .pid = cl->cred.pid};
		comm_of(cl->cred.pid, by.comm);
		rd_sup_ask_answer(u, c, approve ? ANSWER_APPROVE : ANSWER_DENY, &by, NULL);
		return json_pack("{s:b, s:I, s:s}", "ok", true, "id", (json_int_t)id, "answer",
		                 approve ? "approve" : "deny");
	}
	size_t keep = u->n_answered < RD_ANSWERED_KEEP ? u->n_answered : RD_ANSWERED_KEEP;
	for (size_t i = 0; i < keep; i++)
		if (u->answered[i].id == id)
			return error_reply("request %llu was already answered (%s); this answer is "
			                   "refused",
			                   (unsigned long long)id, u->answered[i].what);
	return error_reply("no request %llu waits for an answer in this session",
	                   (unsigned long long)id);
}

void rd_control_client(struct sup *u, struct client *cl)
{
	char buf[MAX_REQUEST + 1];
	ssize_t n = recv(cl->fd, buf, MAX_REQUEST, MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop_client(u, cl);
		return;
	}
	json_t *out;
	json_error_t jerr;
	if (cl->refused) {
		reply(cl->fd, error_reply("runnerd refuses this connection: %s", cl->refused));
		drop_client(u, cl);
		return;
	}
	json_t *req =
	    n > MAX_REQUEST ? NULL : json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
	const char *op = json_string_value(json_object_get(req, "op"));
	if (!req)
		out = error_reply("the request is not a JSON object of at most %d bytes",
		                  MAX_REQUEST);
	else if (op && strcmp(op, "pending") == 0)
		out = json_pack("{s:b, s:s, s:i, s:s, s:o}", "ok", true, "session", u->s->session,
		                "pid", (int)getpid(), "profile", u->s->prof->name, "pending",
		                pending_json(u));
	else if (op && (strcmp(op, "approve") == 0 || strcmp(op, "deny") == 0))
		out = answer(u, cl, req, strcmp(op, "approve") == 0);
	else
		out = error_reply("unknown request (\"op\" must be \"pending\", \"approve\" or "
		                  "\"deny\")");
	json_decref(req);
	reply(cl->fd, out);
	drop_client(u, cl);
}

/* --prompt: the oldest pending ask is shown on /dev/tty; the terminal is read only while one
 * is shown, so that no keystroke meant for the agent is taken otherwise. */
static void tty_write(struct sup *u, const char *text)
{
	size_t len = strlen(text);
	while (len) {
		ssize_t n = write(u->tty_fd, text, len);
		if (n <= 0)
			return; /* EAGAIN or gone: a prompt is not worth blocking the loop */
		text += n;
		len -= (size_t)n;
	}
}

static void tty_watch(struct sup *u, bool on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &u->tty_src};
	epoll_ctl(u->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, u->tty_fd, on ? &ev : NULL);
}

void rd_control_tty_done(struct sup *u, const char *what)
{
	if (u->tty_fd < 0 || !u->tty_asking)
		return;
	char line[256];
	snprintf(line, sizeof(line), "\r\nrunnerd: #%llu %s\r\n", (unsigned long long)u->tty_asking,
	         what);
	tty_write(u, line);
	u->tty_asking = 0;
	u->tty_len = 0;
	tty_watch(u, false);
}

void rd_control_tty_update(struct sup *u)
{
	if (u->tty_fd < 0 || u->tty_asking)
		return;
	struct cmd *oldest = NULL;
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (c->ask == ASK_PENDING && (!oldest || c->id < oldest->id))
			oldest = c;
	if (!oldest)
		return;
	const struct req *q = oldest->req;
	char text[2048];
	int n = snprintf(
	    text, sizeof(text), "\r\nrunnerd: run this command? (#%llu, rule %zu%s%s)\r\n  $",
	    (unsigned long long)oldest->id, q->rule->index, q->rule->description ? ": " : "",
	    q->rule->description ? q->rule->description : "");
	for (size_t i = 0; i < q->strs.argc && n > 0 && (size_t)n < sizeof(text) - 64; i++) {
		/* The caller's bytes, shown, never interpreted by the terminal. */
		n += snprintf(text + n, sizeof(text) - (size_t)n, " ");
		for (const char *p = q->strs.argv[i]; *p && (size_t)n < sizeof(text) - 64; p++)
			n += isprint((unsigned char)*p)
			         ? snprintf(text + n, sizeof(text) - (size_t)n, "%c", *p)
			         : snprintf(text + n, sizeof(text) - (size_t)n, "\\x%02x",
			                    (unsigned char)*p);
	}
	unsigned secs = q->rule->ask_timeout_s ? q->rule->ask_timeout_s : 60;
	snprintf(text + n, sizeof(text) - (size_t)n, "\r\n  [y/N] (no answer in %u s denies) ",
	         secs);
	tty_write(u, text);
	u->tty_asking = oldest->id;
	u->tty_len = 0;
	tty_watch(u, true);
}

void rd_control_tty(struct sup *u)
{
	char buf[64];
	ssize_t n = read(u->tty_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* EOF or EIO (the terminal hung up, or runnerd is in a background group): no more
		 * prompts there; the control socket still answers. */
		fprintf(stderr, "runnerd: /dev/tty cannot be read any more: approvals go through "
		                "runnerd approve/deny only\n");
		tty_watch(u, false);
		close(u->tty_fd);
		u->tty_fd = -1;
		u->tty_asking = 0;
		return;
	}
	for (ssize_t i = 0; i < n && u->tty_asking; i++) {
		char ch = buf[i];
		if (ch != '\r' && ch != '\n') {
			if (u->tty_len < sizeof(u->tty_line) - 1)
				u->tty_line[u->tty_len++] = ch;
			continue;
		}
		u->tty_line[u->tty_len] = 0;
		char *w = u->tty_line;
		while (*w == ' ')
			w++;
		bool yes = strcmp(w, "y") == 0 || strcmp(w, "Y") == 0 || strcmp(w, "yes") == 0;
		uint64_t id = u->tty_asking;
		for (struct cmd *c = u->cmds; c; c = c->next)
			if (c->id == id && c->ask == ASK_PENDING) {
				struct answerer by = {.via = BY_TTY};
				rd_sup_ask_answer(u, c, yes ? ANSWER_APPROVE : ANSWER_DENY, &by,
				                  NULL);
				break;
			}
	}
}

int rd_control_open(struct sup *u, struct rd_error *err)
{
	(void)err;
	u->control_fd = u->s->control_fd;
	u->tty_fd = u->s->tty_fd;
	if (u->control_fd >= 0) {
		u->control_src = (struct src){.type = SRC_CONTROL, .cmd = NULL};
		rd_sup_watch(u, u->control_fd, &u->control_src);
	}
	if (u->tty_fd >= 0)
		u->tty_src = (struct src){.type = SRC_TTY, .cmd = NULL};
	return 0;
}
