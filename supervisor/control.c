/* The control socket: where an operator answers an "ask" (the terminal prompt: prompt.c), lists
 * the session's sandboxes, and ends the session.
 *
 * One SOCK_SEQPACKET socket per session, $XDG_RUNTIME_DIR/runnerd/SESSION.sock (or
 * /run/runnerd/SESSION.sock as root), mode 0600 in a 0700 directory. A connection carries one
 * JSON request and gets one JSON reply: {"op":"pending"}, {"op":"ps"}, {"op":"approve","id":N},
 * {"op":"deny","id":N}, {"op":"kill"}. The peer must be runnerd's own user (or root), and neither
 * runnerd nor anything it started: an agent, or a command, must never answer its own ask. Commands
 * cannot even see the socket: its directory is masked in every sandbox. */
#include "supervisor/control.h"
#include "lib/file.h"
#include "supervisor/approvals.h"
#include "supervisor/command.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define MAX_CLIENTS   16
#define MAX_REFUSED   8  /* refused peers waiting to read why, counted apart */
#define CLIENT_IDLE_S 2  /* a connection that sends nothing for this long is dropped */
#define AUDIT_REFUSED 20 /* control_refused events per session; then one saying so */
#define MAX_REQUEST   4096

/* The user's runtime directory when XDG_RUNTIME_DIR does not name one (su, a container, a
 * service): /run/user/UID if it is the user's own directory. */

/* The uid the kernel shows for one not mapped in runnerd's user namespace: in a rootless
 * engine's container (runnerd serve), the machine's root, the only one who reaches the session's
 * control socket in /run/runnerd (0700). */
static uid_t overflow_uid(void)
{
	static uid_t uid = (uid_t)-1;
	if (uid == (uid_t)-1) {
		FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");
		unsigned v = 65534;
		if (!f || fscanf(f, "%u", &v) != 1)
			v = 65534;
		if (f)
			fclose(f);
		uid = (uid_t)v;
	}
	return uid;
}

static bool own_run_user(void)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/run/user/%u", (unsigned)geteuid());
	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid();
}

char *rd_control_dir(struct rd_error *err)
{
	char *dir = NULL;
	const char *x = getenv("XDG_RUNTIME_DIR");
	int r;
	if (geteuid() == 0)
		r = asprintf(&dir, "/run/runnerd");
	else if (x && x[0] == '/')
		r = asprintf(&dir, "%s/runnerd", x);
	else if (own_run_user())
		r = asprintf(&dir, "/run/user/%u/runnerd", (unsigned)geteuid());
	else
		/* Last, /tmp: rd_control_listen uses it only if it is the user's own, 0700. */
		r = asprintf(&dir, "/tmp/runnerd-%u", (unsigned)geteuid());
	if (r < 0) {
		rd_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	return dir;
}

void rd_control_dirs(char *out[RD_CONTROL_DIRS])
{
	size_t n = 0;
	const char *x = getenv("XDG_RUNTIME_DIR");
	char *cand[RD_CONTROL_DIRS] = {strdup("/run/runnerd"), NULL, NULL, NULL};
	if (asprintf(&cand[1], "/run/user/%u/runnerd", (unsigned)geteuid()) < 0)
		cand[1] = NULL;
	if (x && x[0] == '/' && asprintf(&cand[2], "%s/runnerd", x) < 0)
		cand[2] = NULL;
	if (asprintf(&cand[3], "/tmp/runnerd-%u", (unsigned)geteuid()) < 0)
		cand[3] = NULL;
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
	if (rd_own_dir(dir, err) < 0) {
		rd_error_prefix(err, "refusing to put a control socket in %s: ", dir);
		return -err->err;
	}
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

/* runnerd serve: does pid live in the agent's container, its pid namespace or one under it?
 * (runnerd, outside it, sees every pid of the machine.) A peer that cannot be looked at
 * does. */
static bool in_container(struct sup *u, pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", pid);
	int ns = open(p, O_RDONLY | O_CLOEXEC);
	for (int depth = 0; ns >= 0 && depth < 64; depth++) {
		struct stat st;
		if (fstat(ns, &st) < 0 || st.st_ino == u->s->remote.pidns)
			break;
		int parent = ioctl(ns, NS_GET_PARENT);
		close(ns);
		ns = parent;
		if (ns < 0 && errno == EPERM)
			return false; /* past the machine's own: not under the container's */
	}
	if (ns >= 0)
		close(ns);
	return true;
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
		if (sup_proc_parent(pid, &pid) < 0)
			return true; /* gone or hidden: not to be trusted */
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
	sup_unwatch(u, &cl->fd);
	for (struct client **pp = &u->ctl.clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	if (cl->refused)
		u->ctl.n_refused--;
	else
		u->ctl.n_clients--;
	/* Freed after this round of events: one of them may still name it. */
	cl->dead = true;
	cl->next = u->ctl.dead_clients;
	u->ctl.dead_clients = cl;
}

void sup_control_reap(struct sup *u)
{
	while (u->ctl.dead_clients) {
		struct client *cl = u->ctl.dead_clients;
		u->ctl.dead_clients = cl->next;
		free(cl);
	}
}

static void arm_client_timer(struct sup *u, bool on)
{
	if (u->ctl.timer < 0 || u->ctl.timer_armed == on)
		return;
	struct itimerspec its = {0};
	if (on)
		its.it_value.tv_sec = its.it_interval.tv_sec = 1;
	timerfd_settime(u->ctl.timer, 0, &its, NULL);
	u->ctl.timer_armed = on;
}

void sup_control_tick(struct sup *u)
{
	uint64_t ticks;
	if (read(u->ctl.timer, &ticks, sizeof(ticks)) != sizeof(ticks))
		return;
	for (struct client *cl = u->ctl.clients, *next; cl; cl = next) {
		next = cl->next;
		if (sup_ms_since(&cl->since) < CLIENT_IDLE_S * 1000.0)
			continue;
		if (cl->refused)
			reply(cl->fd,
			      error_reply("runnerd refuses this connection: %s", cl->refused));
		else
			reply(cl->fd, error_reply("no request within %d s", CLIENT_IDLE_S));
		drop_client(u, cl);
	}
	if (u->ctl.paused) {
		/* Out of fds a moment ago: listen again (it pauses again if still out). */
		u->ctl.paused = false;
		sup_watch(u, u->ctl.fd, &u->ctl.src);
	}
	if (!u->ctl.clients && !u->ctl.paused)
		arm_client_timer(u, false);
}

void sup_control_accept(struct sup *u)
{
	for (;;) {
		int fd = accept4(u->ctl.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0 &&
		    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			/* The connection stays queued and the listener readable: stop watching it
			 * for a second rather than spin. */
			epoll_ctl(u->epfd, EPOLL_CTL_DEL, u->ctl.fd, NULL);
			u->ctl.paused = true;
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
		else if (cr.uid != geteuid() && cr.uid != 0 &&
		         !(u->s->remote.rootless && cr.uid == overflow_uid()))
			why = "it runs as another user";
		else if (u->s->remote.on && cr.pid != 0 &&
		         (u->s->remote.rootless || ours(cr.pid) || in_container(u, cr.pid)))
			why = "it runs in the agent's container, or in a sandbox of the session: a "
			      "request must come from the host";
		else if (u->s->remote.on)
			; /* outside the container and the session (pid 0 where runnerd is in the
			   * container's pid namespace, a rootless engine's) */
		else if (cr.pid <= 0 || ours(cr.pid))
			why = "it is runnerd, the agent or something they started: a request must "
			      "come from outside the session";
		else if (other_namespaces(cr.pid))
			why = "it runs in other namespaces than runnerd (a sandbox, of this "
			      "session or "
			      "another): a request must come from outside any sandbox";
		if (why && ++u->ctl.n_refused_total <= AUDIT_REFUSED + 1) {
			json_t *ev = json_pack("{s:i, s:i, s:s}", "uid", (int)cr.uid, "pid",
			                       (int)cr.pid, "reason", why);
			if (ev && u->ctl.n_refused_total > AUDIT_REFUSED)
				json_object_set_new(ev, "further_refusals",
				                    json_string("not logged in this session"));
			rd_audit(u->s->audit, "control_refused", ev);
		}
		bool room = why ? u->ctl.n_refused < MAX_REFUSED : u->ctl.n_clients < MAX_CLIENTS;
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
			u->ctl.n_refused++;
		else
			u->ctl.n_clients++;
		cl->next = u->ctl.clients;
		u->ctl.clients = cl;
		sup_watch(u, fd, &cl->src);
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

/* runnerd ps: the sandboxes of this session that are still there, their command running or
 * ended with processes of theirs left. */
static json_t *sandboxes_json(struct sup *u)
{
	json_t *list = json_array();
	struct sup_procs procs = sup_read_procs();
	for (struct cmd *c = u->cmds; c; c = c->next) {
		if (!sup_cmd_live(c))
			continue;
		json_t *argv = json_array();
		for (size_t o = 0; c->argv && o < c->argv_len; o += strlen(c->argv + o) + 1)
			json_array_append_new(argv, rd_json_bytes(c->argv + o));
		const struct run *r = &c->run;
		json_t *e =
		    json_pack("{s:I, s:o, s:o, s:b, s:s, s:I, s:f, s:o}", "id", (json_int_t)c->id,
		              "path", rd_json_bytes(c->path), "argv", argv, "argv_truncated",
		              c->argv_cut, "state", r->status_known ? "ended" : "running",
		              "processes", (json_int_t)sup_procs_below(&procs, r->sb.reaper),
		              "age_s", sup_ms_since(&r->start) / 1000.0, "rule",
		              c->rule >= 0 ? json_integer(c->rule) : json_null());
		if (e && r->status_known)
			json_object_set_new(
			    e, WIFEXITED(r->status) ? "status" : "signal",
			    WIFEXITED(r->status)
			        ? json_integer(WEXITSTATUS(r->status))
			        : json_string(sigabbrev_np(WTERMSIG(r->status)) ?: "?"));
		if (e)
			json_array_append_new(list, e);
	}
	free(procs.p);
	return list;
}

static json_t *pending_json(struct sup *u)
{
	json_t *list = json_array();
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (struct cmd *c = u->cmds; c; c = c->next) {
		if (c->ask.state != ASK_PENDING)
			continue;
		const struct req *q = c->ask.req;
		/* Bounded: at most 2 KiB of argv in all, each string cut at 512 bytes, so that one
		 * caller's argv cannot make the reply too large to send. */
		json_t *argv = json_array();
		size_t bytes = 0;
		bool cut = false, long_path = false;
		for (size_t i = 0; i < q->strs.argc && bytes < 2048; i++) {
			bytes += strnlen(q->strs.argv[i], 512) + 1;
			json_array_append_new(argv, bounded(q->strs.argv[i], 512, &cut));
		}
		const char *cwd = sup_req_cwd(q);
		unsigned secs = q->rule->ask_timeout_s;
		double waited = sup_ms_since(&c->ask.asked) / 1000.0;
		json_t *e =
		    json_pack("{s:I, s:i, s:o, s:o, s:o, s:b, s:o, s:I, s:I, s:f, s:f}", "id",
		              (json_int_t)c->id, "tid", (int)c->tid, "path",
		              bounded(q->path, 1024, &long_path), "resolved",
		              bounded(q->tg.resolved, 1024, &long_path), "argv", argv,
		              "argv_truncated", cut || json_array_size(argv) < q->strs.argc, "cwd",
		              bounded(cwd, 1024, &long_path), "rule", (json_int_t)q->rule->index,
		              "asked_at", (json_int_t)c->ask.asked_wall, "waited_s", waited,
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

static json_t *answer(struct sup *u, const struct client *cl, json_t *req, bool approve)
{
	if (u->killed_by[0])
		return error_reply("session %s was ended by runnerd kill from %s: nothing waits "
		                   "for an answer",
		                   u->s->session, u->killed_by);
	json_t *idj = json_object_get(req, "id");
	if (!json_is_integer(idj) || json_integer_value(idj) <= 0)
		return error_reply("\"id\" must be a positive integer");
	uint64_t id = (uint64_t)json_integer_value(idj);
	for (struct cmd *c = u->cmds; c; c = c->next) {
		if (c->id != id || c->ask.state != ASK_PENDING)
			continue;
		struct answerer by = {.via = BY_SOCKET, .uid = cl->cred.uid, .pid = cl->cred.pid};
		comm_of(cl->cred.pid, by.comm);
		if (sup_ask_answer(u, c, approve ? ANSWER_APPROVE : ANSWER_DENY, &by, NULL) < 0)
			return error_reply("request %llu: %s", (unsigned long long)id,
			                   sup_ask_answered_what(u, id));
		return json_pack("{s:b, s:I, s:s}", "ok", true, "id", (json_int_t)id, "answer",
		                 approve ? "approve" : "deny");
	}
	const char *what = sup_ask_answered_what(u, id);
	if (what)
		return error_reply("request %llu was already answered (%s); this answer is refused",
		                   (unsigned long long)id, what);
	return error_reply("no request %llu waits for an answer in this session",
	                   (unsigned long long)id);
}

/* runnerd kill: first no exec (the listener closed: ENOSYS), no approval and no sandbox; then
 * no process of the agent's. Again while the agent has not been reaped (a kill that missed
 * it); refused once it has. */
static json_t *kill_session(struct sup *u, const struct client *cl)
{
	if (u->killed_by[0] && u->agent_done)
		return error_reply("session %s is ending already: runnerd kill from %s",
		                   u->s->session, u->killed_by);
	char comm[17];
	comm_of(cl->cred.pid, comm);
	snprintf(u->killed_by, sizeof(u->killed_by), "uid %u, pid %d (%s)", (unsigned)cl->cred.uid,
	         (int)cl->cred.pid, comm);
	if (u->listener >= 0) {
		close(u->listener);
		u->listener = -1;
	}
	sup_ask_session_end(u);
	size_t boxes = sup_cmd_kill_for(u, "runnerd kill");
	long procs = sup_cmd_kill_agent(u);
	rd_audit(u->s->audit, "session_kill",
	         json_pack("{s:i, s:i, s:s, s:I, s:I}", "by_uid", (int)cl->cred.uid, "by_pid",
	                   (int)cl->cred.pid, "by_comm", comm, "sandboxes", (json_int_t)boxes,
	                   "processes", (json_int_t)procs));
	if (procs < 0) {
		fprintf(stderr,
		        "runnerd: session %s: runnerd kill from %s: /proc could not be read: "
		        "SIGKILL to the agent and %zu sandbox%s only\n",
		        u->s->session, u->killed_by, boxes, boxes == 1 ? "" : "es");
		return error_reply("session %s: /proc could not be read: SIGKILL to the agent and "
		                   "%zu sandbox%s only (runnerd ps shows what is left)",
		                   u->s->session, boxes, boxes == 1 ? "" : "es");
	}
	fprintf(stderr,
	        "runnerd: session %s killed by runnerd kill from %s: SIGKILL to %ld process%s "
	        "of the agent's and %zu sandbox%s\n",
	        u->s->session, u->killed_by, procs, procs == 1 ? "" : "es", boxes,
	        boxes == 1 ? "" : "es");
	return json_pack("{s:b, s:s, s:I, s:I}", "ok", true, "session", u->s->session, "processes",
	                 (json_int_t)procs, "sandboxes", (json_int_t)boxes);
}

void sup_control_client(struct sup *u, struct client *cl)
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
	else if (op && strcmp(op, "ps") == 0)
		out =
		    json_pack("{s:b, s:s, s:i, s:s, s:s, s:o, s:i, s:b, s:f, s:I, s:I, s:o}", "ok",
		              true, "session", u->s->session, "pid", (int)getpid(), "profile",
		              u->s->prof->name, "where", u->s->where ? u->s->where : "", "agent",
		              rd_json_bytes(u->s->agent_path ? u->s->agent_path : ""), "agent_pid",
		              (int)u->s->agent.pid, "agent_running", !u->agent_done, "uptime_s",
		              sup_ms_since(&u->started_at) / 1000.0, "commands_started",
		              (json_int_t)u->n_started, "sandboxes_live",
		              (json_int_t)sup_cmd_live_count(u), "sandboxes", sandboxes_json(u));
	else if (op && (strcmp(op, "approve") == 0 || strcmp(op, "deny") == 0))
		out = answer(u, cl, req, strcmp(op, "approve") == 0);
	else if (op && strcmp(op, "kill") == 0)
		out = kill_session(u, cl);
	else
		out =
		    error_reply("unknown request (\"op\" must be \"pending\", \"ps\", \"approve\", "
		                "\"deny\" or \"kill\")");
	json_decref(req);
	reply(cl->fd, out);
	if (u->remote_kill_owed) {
		u->remote_kill_owed = false;
		(void)!write(u->s->remote.kill_fd, "k", 1);
	}
	drop_client(u, cl);
}

int sup_control_open(struct sup *u)
{
	struct control *ctl = &u->ctl;
	ctl->fd = u->s->control_fd;
	ctl->timer = -1;
	if (ctl->fd < 0)
		return 0;
	ctl->src = (struct src){.type = SRC_CONTROL};
	sup_watch(u, ctl->fd, &ctl->src);
	ctl->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ctl->timer < 0)
		return -errno;
	ctl->timer_src = (struct src){.type = SRC_CLIENT_TIMER};
	sup_watch(u, ctl->timer, &ctl->timer_src);
	return 0;
}
