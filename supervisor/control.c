/* The control socket and the terminal prompt: where an operator answers an "ask".
 *
 * One SOCK_SEQPACKET socket per session, $XDG_RUNTIME_DIR/runnerd/SESSION.sock (or
 * /run/runnerd/SESSION.sock as root), mode 0600 in a 0700 directory. A connection carries one
 * JSON request and gets one JSON reply: {"op":"pending"}, {"op":"approve","id":N},
 * {"op":"deny","id":N}. The peer must be runnerd's own user (or root), and neither runnerd
 * nor anything it started: an agent, or a command, must never answer its own ask. Commands
 * cannot even see the socket: its directory is masked in every sandbox. */
#include "supervisor/sup_internal.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#define MAX_CLIENTS   16
#define MAX_REFUSED   8  /* refused peers waiting to read why, counted apart */
#define CLIENT_IDLE_S 2  /* a connection that sends nothing for this long is dropped */
#define AUDIT_REFUSED 20 /* control_refused events per session; then one saying so */
#define MAX_REQUEST   4096

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

/* Does pid live in namespaces other than runnerd's? Every sandbox has its own pid and mount
 * namespaces (and user namespace, unprivileged), whichever session made it. */
static bool other_namespaces(pid_t pid)
{
	static const char *const kinds[] = {"pid", "mnt", "user"};
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		char p[64], q[64];
		struct stat a, b;
		snprintf(p, sizeof(p), "/proc/%d/ns/%s", pid, kinds[i]);
		snprintf(q, sizeof(q), "/proc/self/ns/%s", kinds[i]);
		if (stat(p, &a) < 0 || stat(q, &b) < 0 || a.st_ino != b.st_ino ||
		    a.st_dev != b.st_dev)
			return true;
	}
	return false;
}

/* Is pid runnerd itself or one of its descendants (the agent, its processes, a sandbox)? */
static bool ours(pid_t pid)
{
	pid_t self = getpid();
	for (int depth = 0;; depth++) {
		if (pid == self)
			return true; /* before the pid 1 test: runnerd may be pid 1 (a container) */
		if (pid <= 1)
			return false;
		if (depth >= 4096)
			return true; /* a chain too deep to follow: not to be trusted */
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
	/* The process names itself: what reaches a terminal is printable ASCII. */
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
}

static void reply(int fd, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (text && send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* Too big, or no room: an answer that says so rather than silence. */
		static const char failed[] = "{\"ok\":false,\"error\":\"the reply could not be "
		                             "sent (too large?)\"}";
		send(fd, failed, sizeof(failed) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
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
	for (struct client **pp = &u->clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	if (cl->refused)
		u->n_refused--;
	else
		u->n_clients--;
	/* Freed after this round of events: one of them may still name it. */
	cl->dead = true;
	cl->next = u->dead_clients;
	u->dead_clients = cl;
}

void rd_control_reap(struct sup *u)
{
	while (u->dead_clients) {
		struct client *cl = u->dead_clients;
		u->dead_clients = cl->next;
		free(cl);
	}
}

static void arm_client_timer(struct sup *u, bool on)
{
	if (u->client_timer < 0 || u->client_timer_armed == on)
		return;
	struct itimerspec its = {0};
	if (on)
		its.it_value.tv_sec = its.it_interval.tv_sec = 1;
	timerfd_settime(u->client_timer, 0, &its, NULL);
	u->client_timer_armed = on;
}

void rd_control_tick(struct sup *u)
{
	uint64_t ticks;
	if (read(u->client_timer, &ticks, sizeof(ticks)) != sizeof(ticks))
		return;
	for (struct client *cl = u->clients, *next; cl; cl = next) {
		next = cl->next;
		if (rd_ms_since(&cl->since) < CLIENT_IDLE_S * 1000.0)
			continue;
		if (cl->refused)
			reply(cl->fd,
			      error_reply("runnerd refuses this connection: %s", cl->refused));
		else
			reply(cl->fd, error_reply("no request within %d s", CLIENT_IDLE_S));
		drop_client(u, cl);
	}
	if (u->control_paused) {
		/* Out of fds a moment ago: listen again (it pauses again if still out). */
		u->control_paused = false;
		rd_sup_watch(u, u->control_fd, &u->control_src);
	}
	if (!u->clients && !u->control_paused)
		arm_client_timer(u, false);
}

void rd_control_accept(struct sup *u)
{
	for (;;) {
		int fd = accept4(u->control_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0 &&
		    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			/* The connection stays queued and the listener readable: stop watching it
			 * for a second rather than spin. */
			epoll_ctl(u->epfd, EPOLL_CTL_DEL, u->control_fd, NULL);
			u->control_paused = true;
			arm_client_timer(u, true);
			return;
		}
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
		else if (other_namespaces(cr.pid))
			why = "it runs in other namespaces than runnerd (a sandbox, of this "
			      "session or "
			      "another): an approval must come from outside any sandbox";
		if (why && ++u->n_control_refused <= AUDIT_REFUSED + 1) {
			json_t *ev = json_pack("{s:i, s:i, s:s}", "uid", (int)cr.uid, "pid",
			                       (int)cr.pid, "reason", why);
			if (ev && u->n_control_refused > AUDIT_REFUSED)
				json_object_set_new(ev, "further_refusals",
				                    json_string("not logged in this session"));
			rd_audit(u->s->audit, "control_refused", ev);
		}
		bool room = why ? u->n_refused < MAX_REFUSED : u->n_clients < MAX_CLIENTS;
		struct client *cl = room ? calloc(1, sizeof(*cl)) : NULL;
		if (!cl) {
			close(fd);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &cl->since);
		/* A refused peer gets its refusal as the reply to its request: closing on it at
		 * once could reset the connection before it reads why. */
		cl->refused = why;
		cl->fd = fd;
		cl->cred = cr;
		cl->src = (struct src){.type = SRC_CONTROL_CLIENT, .cmd = NULL};
		cl->src.client = cl;
		if (why)
			u->n_refused++;
		else
			u->n_clients++;
		cl->next = u->clients;
		u->clients = cl;
		rd_sup_watch(u, fd, &cl->src);
		arm_client_timer(u, true);
	}
}

/* The caller's bytes, at most max of them, for a reply; *cut says whether some were left. */
static json_t *bounded(const char *s, size_t max, bool *cut)
{
	size_t len = strlen(s);
	_cleanup_free_ char *part = strndup(s, len > max ? max : len);
	*cut = *cut || len > max;
	return part ? rd_json_bytes(part) : json_null();
}

/* The caller's cwd as a path, for the operator ("" if it cannot be read). */
static void req_cwd(const struct req *q, char *cwd, size_t size)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", q->t.cwd_fd);
	ssize_t n = readlink(link, cwd, size - 1);
	cwd[n > 0 ? n : 0] = 0;
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
		/* Bounded: at most 2 KiB of argv in all, each string cut at 512 bytes, so that one
		 * caller's argv cannot make the reply too large to send. */
		json_t *argv = json_array();
		size_t bytes = 0;
		bool cut = false, long_path = false;
		for (size_t i = 0; i < q->strs.argc && bytes < 2048; i++) {
			bytes += strnlen(q->strs.argv[i], 512) + 1;
			json_array_append_new(argv, bounded(q->strs.argv[i], 512, &cut));
		}
		char cwd[4096];
		req_cwd(q, cwd, sizeof(cwd));
		unsigned secs = q->rule->ask_timeout_s;
		double waited = rd_ms_since(&c->asked) / 1000.0;
		json_t *e =
		    json_pack("{s:I, s:i, s:o, s:o, s:o, s:b, s:o, s:I, s:I, s:f, s:f}", "id",
		              (json_int_t)c->id, "tid", (int)c->tid, "path",
		              bounded(q->path, 1024, &long_path), "resolved",
		              bounded(q->tg.resolved, 1024, &long_path), "argv", argv,
		              "argv_truncated", cut || json_array_size(argv) < q->strs.argc, "cwd",
		              bounded(cwd, 1024, &long_path), "rule", (json_int_t)q->rule->index,
		              "asked_at", (json_int_t)c->asked_wall, "waited_s", waited,
		              "expires_in_s", secs - waited > 0 ? secs - waited : 0.0);
		if (e && long_path)
			json_object_set_new(e, "paths_truncated", json_true());
		if (e && q->rule->description)
			json_object_set_new(e, "description", json_string(q->rule->description));
		if (e)
			json_array_append_new(list, e);
	}
	return list;
}

/* How request id was answered, if it is still remembered. */
static const char *answered_what(struct sup *u, uint64_t id)
{
	size_t keep = u->n_answered < RD_ANSWERED_KEEP ? u->n_answered : RD_ANSWERED_KEEP;
	for (size_t k = 0; k < keep; k++) { /* newest first */
		const struct answered *a = &u->answered[(u->n_answered - 1 - k) % RD_ANSWERED_KEEP];
		if (a->id == id)
			return a->what;
	}
	return NULL;
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
		if (rd_sup_ask_answer(u, c, approve ? ANSWER_APPROVE : ANSWER_DENY, &by, NULL) < 0)
			return error_reply("request %llu: %s", (unsigned long long)id,
			                   answered_what(u, id));
		return json_pack("{s:b, s:I, s:s}", "ok", true, "id", (json_int_t)id, "answer",
		                 approve ? "approve" : "deny");
	}
	const char *what = answered_what(u, id);
	if (what)
		return error_reply("request %llu was already answered (%s); this answer is refused",
		                   (unsigned long long)id, what);
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
static bool tty_write(struct sup *u, const char *text)
{
	size_t len = strlen(text);
	while (len) {
		ssize_t n = write(u->tty_fd, text, len);
		if (n <= 0)
			return false; /* EAGAIN or gone: a prompt is not worth blocking the loop */
		text += n;
		len -= (size_t)n;
	}
	return true;
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
	char text[2048], cwd[4096];
	size_t cap = sizeof(text) - 200; /* room for the tail below */
	int h = snprintf(text, cap, "\r\nrunnerd: run this command? (#%llu, rule %zu%s%s)\r\n",
	                 (unsigned long long)oldest->id, q->rule->index,
	                 q->rule->description ? ": " : "",
	                 q->rule->description ? q->rule->description : "");
	size_t n = h > 0 && (size_t)h < cap ? (size_t)h : 0;
	/* What runs, and where: argv[0] is the caller's to choose, and a rule may match on it.
	 * The caller's bytes, escaped so that the terminal interprets none of them; a run of
	 * spaces as its count, so that padding cannot push the rest out of sight. */
	req_cwd(q, cwd, sizeof(cwd));
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
		n = rd_escape_bytes(text, n, cap, &rest, true);
		/* Counted only if all of it went in: what is left would be hidden. */
		shown += (size_t)(rest - a);
		if (*rest)
			break;
		shown++;
	}
	/* A command line cut short could hide its end: it can be denied here, not approved. */
	u->tty_truncated = cut || shown < total;
	unsigned secs = q->rule->ask_timeout_s;
	if (u->tty_truncated)
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
	bool flushed = tcflush(u->tty_fd, TCIFLUSH) == 0;
	/* A prompt that did not go out whole (a full terminal, XOFF) was not seen whole either:
	 * it can only be denied; so can one after typeahead that could not be discarded. */
	if (!tty_write(u, text) || !flushed)
		u->tty_truncated = true;
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
		u->tty_fd = u->s->tty_fd = -1; /* the session's: not closed again at its end */
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
		u->tty_len = 0;
		char *w = u->tty_line;
		while (*w == ' ')
			w++;
		bool yes = strcmp(w, "y") == 0 || strcmp(w, "Y") == 0 || strcmp(w, "yes") == 0;
		if (yes && u->tty_truncated) {
			tty_write(u,
			          "\r\nrunnerd: not all of it was shown: approve it with runnerd "
			          "approve, or deny it here [N] ");
			return;
		}
		uint64_t id = u->tty_asking;
		for (struct cmd *c = u->cmds; c; c = c->next)
			if (c->id == id && c->ask == ASK_PENDING) {
				struct answerer by = {.via = BY_TTY};
				rd_sup_ask_answer(u, c, yes ? ANSWER_APPROVE : ANSWER_DENY, &by,
				                  NULL);
				break;
			}
		/* One line answers one prompt: what was typed with it, before the next prompt
		 * showed, answers nothing. */
		return;
	}
}

int rd_control_open(struct sup *u)
{
	u->control_fd = u->s->control_fd;
	u->tty_fd = u->s->tty_fd;
	if (u->control_fd >= 0) {
		u->control_src = (struct src){.type = SRC_CONTROL, .cmd = NULL};
		rd_sup_watch(u, u->control_fd, &u->control_src);
	}
	if (u->tty_fd >= 0)
		u->tty_src = (struct src){.type = SRC_TTY, .cmd = NULL};
	u->client_timer = -1;
	if (u->control_fd >= 0) {
		u->client_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (u->client_timer < 0)
			return -errno;
		u->client_timer_src = (struct src){.type = SRC_CLIENT_TIMER, .cmd = NULL};
		rd_sup_watch(u, u->client_timer, &u->client_timer_src);
	}
	return 0;
}
