/* runnerd pending [--json] | approve ID | deny ID: answer the "ask" rules of the running
 * sessions of this user, through their control sockets (supervisor/control.c). An ID is
 * SESSION-N as pending prints it (SESSION: any unique prefix of the session id), or N alone
 * when one session is running. */
#include "runnerd/cli.h"
#include "supervisor/supervisor.h"

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SHOWN_SESSION 8 /* hex digits of the session id in an ID */
#define MAX_SESSIONS  256

struct session_sock {
	char id[64]; /* the socket's name without ".sock" */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* The sessions' sockets in dir, after the *n already in out. */
static int list_dir(const char *dir, struct session_sock *out, size_t max, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT || errno == EACCES || errno == ENOTDIR ? 0 : -errno;
	struct dirent *e;
	while ((e = readdir(d)) && *n < max) {
		size_t len = strlen(e->d_name);
		if (len < 6 || len - 5 >= sizeof(out->id) || strcmp(e->d_name + len - 5, ".sock"))
			continue;
		struct session_sock *s = &out[*n];
		snprintf(s->id, sizeof(s->id), "%.*s", (int)(len - 5), e->d_name);
		bool seen = false;
		for (size_t i = 0; i < *n; i++)
			seen = seen || strcmp(out[i].id, s->id) == 0;
		if (seen || (size_t)snprintf(s->path, sizeof(s->path), "%s/%s", dir, e->d_name) >=
		                sizeof(s->path))
			continue;
		(*n)++;
	}
	closedir(d);
	return 0;
}

/* The sessions' sockets in every directory where this user's may be (a session started
 * without XDG_RUNTIME_DIR puts its own elsewhere than one with it). Stale ones are among them:
 * connecting tells. A directory that cannot be read is said on stderr, and the others are
 * still listed. 0, or the first -errno. */
static int list_sessions(struct session_sock *out, size_t max, size_t *n)
{
	char *dirs[RD_CONTROL_DIRS];
	int r = 0;
	*n = 0;
	rd_control_dirs(dirs);
	for (size_t i = 0; i < RD_CONTROL_DIRS; i++) {
		int e = dirs[i] ? list_dir(dirs[i], out, max, n) : 0;
		if (e < 0)
			fprintf(stderr, "runnerd: %s: %s\n", dirs[i], strerror(-e));
		if (r == 0)
			r = e;
		free(dirs[i]);
	}
	return r;
}

/* A connection to the session's socket, or -1 with a message on stderr; *stale: its runnerd
 * is gone (no one listens), which says nothing. */
static int connect_session(const struct session_sock *s, bool *stale)
{
	*stale = false;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	*stale = errno == ECONNREFUSED || errno == ENOENT;
	if (!*stale)
		fprintf(stderr, "runnerd: %s: %s\n", s->path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* One request, one reply; NULL with a message on stderr if the session cannot be asked. */
static json_t *ask_session(const struct session_sock *s, json_t *req, bool *stale)
{
	int fd = connect_session(s, stale);
	if (fd < 0) {
		json_decref(req);
		return NULL;
	}
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	json_t *rep = NULL;
	struct pollfd p = {fd, POLLIN, 0};
	if (text && buf && send(fd, text, strlen(text), MSG_NOSIGNAL) >= 0 &&
	    poll(&p, 1, 10000) == 1) {
		ssize_t n = recv(fd, buf, cap, MSG_TRUNC);
		json_error_t jerr;
		if (n > 0 && (size_t)n <= cap)
			rep = json_loadb(buf, (size_t)n, 0, &jerr);
	}
	if (!rep)
		fprintf(stderr, "runnerd: session %s did not answer\n", s->id);
	free(text);
	free(buf);
	close(fd);
	return rep;
}

/* The caller's bytes, for a terminal: nothing but printable ASCII reaches it. */
static void print_safe(const char *s)
{
	/* Not only C0: C1 controls (a CSI or an OSC in UTF-8) and bidi overrides are bytes
	 * above 0x7f, so every byte outside printable ASCII is shown as \xNN. */
	while (s && *s) {
		char buf[512];
		fwrite(buf, 1, rd_escape_bytes(buf, 0, sizeof(buf), &s, false), stdout);
	}
}

static void print_argv(json_t *e)
{
	size_t k;
	json_t *a;
	printf("\n    $");
	json_array_foreach(json_object_get(e, "argv"), k, a)
	{
		/* Each word as a shell would read it back, so that where it ends is seen. */
		const char *w = json_string_value(a) ?: "";
		size_t cap = 4 * strlen(w) + 3;
		char *buf = malloc(cap);
		if (!buf)
			break;
		buf[0] = '\0';
		rd_escape_word(buf, 0, cap, &w, false);
		printf(" %s", buf);
		free(buf);
	}
	if (json_is_true(json_object_get(e, "argv_truncated")))
		printf(" ...");
}

static void print_pending(const char *sid, json_t *list)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		printf("%.*s-%lld  %3.0fs left  rule %lld  ", SHOWN_SESSION, sid,
		       (long long)json_integer_value(json_object_get(e, "id")),
		       json_real_value(json_object_get(e, "expires_in_s")),
		       (long long)json_integer_value(json_object_get(e, "rule")));
		print_safe(json_string_value(json_object_get(e, "resolved")));
		print_argv(e);
		printf("\n    cwd ");
		print_safe(json_string_value(json_object_get(e, "cwd")));
		const char *d = json_string_value(json_object_get(e, "description"));
		if (d) {
			printf("; rule: ");
			print_safe(d);
		}
		printf("\n");
	}
}

static void print_session(const char *sid, json_t *rep)
{
	printf("session %.*s  profile ", SHOWN_SESSION, sid);
	print_safe(json_string_value(json_object_get(rep, "profile")));
	const char *where = json_string_value(json_object_get(rep, "where"));
	if (where && *where) {
		printf("  ");
		print_safe(where);
	}
	printf("  runnerd pid %lld  agent ",
	       (long long)json_integer_value(json_object_get(rep, "pid")));
	print_safe(json_string_value(json_object_get(rep, "agent")));
	printf(" pid %lld%s  up %.0fs  %lld command%s started, %lld sandbox%s alive\n",
	       (long long)json_integer_value(json_object_get(rep, "agent_pid")),
	       json_is_false(json_object_get(rep, "agent_running")) ? " (exited)" : "",
	       json_real_value(json_object_get(rep, "uptime_s")),
	       (long long)json_integer_value(json_object_get(rep, "commands_started")),
	       json_integer_value(json_object_get(rep, "commands_started")) == 1 ? "" : "s",
	       (long long)json_integer_value(json_object_get(rep, "sandboxes_live")),
	       json_integer_value(json_object_get(rep, "sandboxes_live")) == 1 ? "" : "es");
}

static void print_sandboxes(const char *sid, json_t *list)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		printf("%.*s-%lld  ", SHOWN_SESSION, sid,
		       (long long)json_integer_value(json_object_get(e, "id")));
		const char *state = json_string_value(json_object_get(e, "state"));
		json_t *st = json_object_get(e, "status"), *sig = json_object_get(e, "signal");
		long long procs = json_integer_value(json_object_get(e, "processes"));
		if (state && strcmp(state, "ended") == 0 && st)
			printf("ended (status %lld), ", (long long)json_integer_value(st));
		else if (state && strcmp(state, "ended") == 0)
			printf("ended (SIG%s), ", json_string_value(sig) ?: "?");
		else
			printf("running, ");
		printf("%lld process%s%s  %.0fs  ", procs, procs == 1 ? "" : "es",
		       state && strcmp(state, "ended") == 0 ? " left" : "",
		       json_real_value(json_object_get(e, "age_s")));
		json_t *rule = json_object_get(e, "rule");
		if (json_is_integer(rule))
			printf("rule %lld  ", (long long)json_integer_value(rule));
		print_safe(json_string_value(json_object_get(e, "path")));
		print_argv(e);
		printf("\n");
	}
}

/* runnerd pending, runnerd ps: what the sessions of this user answer to op, the list under
 * key in each reply. */
static int list_all(const char *op, const char *key, bool as_json)
{
	struct session_sock ss[MAX_SESSIONS];
	size_t n;
	/* What can be read is listed; a directory that could not be is said, and the exit
	 * status is 1. (approve and deny, below, need every session to pick one.) */
	int ret = list_sessions(ss, MAX_SESSIONS, &n) < 0 ? 1 : 0;
	json_t *all = json_array();
	size_t waiting = 0;
	for (size_t i = 0; i < n; i++) {
		bool stale;
		json_t *rep = ask_session(&ss[i], json_pack("{s:s}", "op", op), &stale);
		if (!rep) {
			ret = stale ? ret : 1;
			continue;
		}
		if (!json_is_true(json_object_get(rep, "ok"))) {
			fprintf(stderr, "runnerd: session %s: %s\n", ss[i].id,
			        json_string_value(json_object_get(rep, "error")) ?: "refused");
			ret = 1;
		} else if (as_json) {
			json_array_append(all, rep);
		} else {
			json_t *list = json_object_get(rep, key);
			/* ps: every session is listed, with its sandboxes or none */
			waiting += strcmp(op, "ps") == 0 ? 1 : json_array_size(list);
			if (strcmp(op, "ps") == 0)
				print_session(ss[i].id, rep);
			if (strcmp(op, "ps") == 0)
				print_sandboxes(ss[i].id, list);
			else
				print_pending(ss[i].id, list);
		}
		json_decref(rep);
	}
	if (as_json) {
		char *text = json_dumps(all, JSON_INDENT(2));
		if (text)
			puts(text);
		free(text);
	} else if (!waiting) {
		const char *none = strcmp(op, "ps") == 0 ? "no session of this user is running"
		                                         : "no command is waiting for approval";
		if (strcmp(op, "ps") == 0 && ret)
			none = "no session of this user answered";
		printf("%s%s\n", none,
		       ret && strcmp(op, "ps") != 0 ? " in the sessions that answered" : "");
	}
	json_decref(all);
	return ret;
}

/* A session's refusal, said on stderr: 1. */
static int refused(json_t *rep)
{
	fprintf(stderr, "runnerd: %s\n",
	        json_string_value(json_object_get(rep, "error")) ?: "refused");
	json_decref(rep);
	return 1;
}

/* The live session among ss whose ID starts with the len bytes of prefix (len 0: any), and in
 * *matches how many there are: the one only if *matches is 1. A stale socket is no session:
 * connecting tells, so that a prefix (or none) finds the live one. */
static const struct session_sock *live_session(const struct session_sock *ss, size_t n,
                                               const char *prefix, size_t len, size_t *matches)
{
	const struct session_sock *match = NULL;
	*matches = 0;
	for (size_t i = 0; i < n; i++) {
		if (len && strncmp(ss[i].id, prefix, len) != 0)
			continue;
		bool stale;
		int fd = connect_session(&ss[i], &stale);
		if (fd < 0 && stale)
			continue;
		if (fd >= 0)
			close(fd);
		match = &ss[i];
		(*matches)++;
	}
	return match;
}

static int answer(const char *op, const char *id)
{
	const char *dash = strrchr(id, '-');
	const char *num = dash ? dash + 1 : id;
	char *end;
	errno = 0;
	long long v = strtoll(num, &end, 10);
	if (!*num || *end || errno || v <= 0) {
		fprintf(stderr,
		        "runnerd: \"%s\" is not a request ID (SESSION-N, as runnerd pending "
		        "prints it)\n",
		        id);
		return 2;
	}
	struct session_sock ss[MAX_SESSIONS];
	size_t n;
	if (list_sessions(ss, MAX_SESSIONS, &n) < 0)
		return 1;
	size_t prefix = dash ? (size_t)(dash - id) : 0, matches;
	const struct session_sock *match = live_session(ss, n, id, prefix, &matches);
	if (matches != 1) {
		if (matches == 0)
			fprintf(stderr, "runnerd: no running session %s%.*s\n",
			        prefix ? "matches " : "found", (int)prefix, id);
		else
			fprintf(stderr,
			        "runnerd: %zu sessions are running%s: name one, as in "
			        "SESSION-%lld (see runnerd pending)\n",
			        matches, prefix ? " with that prefix" : "", v);
		return 1;
	}
	bool stale;
	json_t *rep =
	    ask_session(match, json_pack("{s:s, s:I}", "op", op, "id", (json_int_t)v), &stale);
	if (!rep)
		return 1;
	if (!json_is_true(json_object_get(rep, "ok")))
		return refused(rep);
	printf("%s %.*s-%lld\n", strcmp(op, "approve") == 0 ? "approved" : "denied", SHOWN_SESSION,
	       match->id, v);
	json_decref(rep);
	return 0;
}

/* runnerd kill SESSION: the one running session whose ID starts with SESSION. */
static int kill_session(const char *sid)
{
	if (!*sid) {
		fprintf(stderr, "runnerd kill: an empty SESSION names no session (runnerd ps lists "
		                "them)\n");
		return 2;
	}
	struct session_sock ss[MAX_SESSIONS];
	size_t n, matches;
	if (list_sessions(ss, MAX_SESSIONS, &n) < 0)
		return 1;
	const struct session_sock *match = live_session(ss, n, sid, strlen(sid), &matches);
	if (matches != 1) {
		if (matches == 0)
			fprintf(stderr,
			        "runnerd: no running session of this user starts with %s "
			        "(runnerd ps lists them)\n",
			        sid);
		else
			fprintf(stderr,
			        "runnerd: %zu running sessions start with %s: give more of the ID "
			        "(runnerd ps lists them)\n",
			        matches, sid);
		return 1;
	}
	bool stale;
	json_t *rep = ask_session(match, json_pack("{s:s}", "op", "kill"), &stale);
	if (!rep)
		return 1;
	if (!json_is_true(json_object_get(rep, "ok")))
		return refused(rep);
	long long procs = json_integer_value(json_object_get(rep, "processes"));
	long long boxes = json_integer_value(json_object_get(rep, "sandboxes"));
	printf("killed session %.*s: SIGKILL to %lld process%s of the agent's and %lld sandbox%s\n",
	       SHOWN_SESSION, match->id, procs, procs == 1 ? "" : "es", boxes,
	       boxes == 1 ? "" : "es");
	json_decref(rep);
	return 0;
}

int rd_cmd_answer(struct rd_cli *cli, int argc, char **argv)
{
	(void)cli;
	const char *op = argv[0];
	bool as_json = false;
	const char *id = NULL;
	for (int i = 1; i < argc; i++) {
		bool lists = strcmp(op, "pending") == 0 || strcmp(op, "ps") == 0;
		if (lists && strcmp(argv[i], "--json") == 0)
			as_json = true;
		else if (!lists && !id && argv[i][0] != '-')
			id = argv[i];
		else {
			fprintf(stderr, "runnerd %s: unexpected argument \"%s\"\n", op, argv[i]);
			return 2;
		}
	}
	if (strcmp(op, "kill") == 0 && !id) {
		fprintf(stderr, "runnerd kill: which session? (runnerd kill SESSION; runnerd ps "
		                "lists them)\n");
		return 2;
	}
	if (strcmp(op, "kill") == 0)
		return kill_session(id);
	if (strcmp(op, "pending") != 0 && strcmp(op, "ps") != 0 && !id) {
		fprintf(stderr,
		        "runnerd %s: which request? (runnerd %s ID; runnerd pending lists "
		        "them)\n",
		        op, op);
		return 2;
	}
	return strcmp(op, "pending") == 0 ? list_all("pending", "pending", as_json)
	       : strcmp(op, "ps") == 0    ? list_all("ps", "sandboxes", as_json)
	                                  : answer(op, id);
}
