/* One trapped exec, as four phases: read (what the caller asks for, copied), decide (the rule,
 * the env, the audit line), seize (ptrace, the caller's state, the masks, the plan), then launch
 * or ask. Each phase returns what became of the exec; one finisher turns that into the answer
 * the caller gets, which differs before and after the seize. */
#include "supervisor/exec.h"
#include "intercept/launcher.h"
#include "lib/stub_proto.h"
#include "policy/glob.h"
#include "policy/rules.h"
#include "supervisor/approvals.h"
#include "supervisor/command.h"
#include "supervisor/grant.h"
#include "supervisor/handoff.h"
#include "supervisor/masks.h"
#include "supervisor/sessions.h"
#include "supervisor/spare.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

enum outcome {
	GO_ON,  /* to the next phase */
	HANDED, /* the caller is on its way to the stub (or gone with its handoff): no answer */
	GONE,   /* the caller went away before the decision: no answer */
	MISS,   /* answer err, logged with -v only: a miss of an execvp PATH search */
	ANSWER, /* answer err, nothing logged: the caller's own error (a bad pointer, E2BIG) */
	REFUSE, /* answer err, audited ("refused") and logged: runnerd will not run it */
	FAILED, /* the command could not start: audited (its own exec's errno, or runnerd's) */
	AGENT,  /* one of the agent's own programs: the call goes on as the agent's (audited) */
};

struct exec {
	const struct seccomp_notif *n;
	uint64_t id;
	pid_t tid;
	struct req *q;  /* until a held ask takes it */
	struct cmd *c;  /* from the seize on, until its handoff links it */
	bool seized;    /* ptrace'd: the answer goes through sup_release */
	bool audited;   /* its "exec" audit line is written */
	int err;        /* the errno the caller's exec gets */
	int exec_errno; /* FAILED: the command's own exec's errno, or 0 for runnerd's failure */
	char why[sizeof(((struct rd_error *)0)->msg)];
	/* From the notification. */
	uint64_t path_addr, argv_addr, envp_addr;
	int dirfd, flags;
	struct rlimit nofile;
	enum rd_action action;
};

static enum outcome refuse(struct exec *x, int e, const char *fmt, ...) _printf_(3, 4);
static enum outcome refuse(struct exec *x, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->why, sizeof(x->why), fmt, ap);
	va_end(ap);
	x->err = e;
	return REFUSE;
}

/* A refusal of this exec and every later one (EPERM: a mask can no longer be kept), said on
 * stderr once. */
static enum outcome refuse_from_now(struct sup *u, struct exec *x, const char *fmt, ...)
    _printf_(3, 4);
static enum outcome refuse_from_now(struct sup *u, struct exec *x, const char *fmt, ...)
{
	char what[sizeof(x->why)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	refuse(x, EPERM, "%s; commands are refused until runnerd is restarted", what);
	if (!u->mk.warned)
		fprintf(stderr, "runnerd: %s\n", x->why);
	u->mk.warned = true;
	return REFUSE;
}

static enum outcome answer(struct exec *x, enum outcome o, int e)
{
	x->err = e;
	return o;
}

/* Is the trapped call still waiting for its answer? A caller killed meanwhile is not: its
 * notification is gone, and what failed on the way failed because it went. */
static bool still_waiting(struct sup *u, const struct exec *x)
{
	return ioctl(u->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &x->n->id) == 0;
}

/* The caller must live in runnerd's root and mount namespace: the sandbox is cut from
 * runnerd's view, and resolving a path in one view to run it in another would be wrong. */
static bool same_view(struct sup *u, pid_t tid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/root", tid);
	if (stat(p, &st) < 0 || st.st_dev != u->root_st.st_dev || st.st_ino != u->root_st.st_ino)
		return false;
	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", tid);
	return stat(p, &st) == 0 && st.st_ino == u->mntns;
}

/* runnerd's file system credentials while it resolves a path as the caller would. */
struct as_caller {
	bool on;
	gid_t groups[NGROUPS_MAX];
	int n_groups;
	cap_t caps;
};

/* Where runnerd is not the caller's user (runnerd serve, root of the machine, for a
 * container's process), look as the caller: its effective uid and gid for the file system,
 * its supplementary groups, and no capability that overrides file permissions (a container's
 * root does not have the machine's; for a uid other than 0 the kernel drops them anyway). The
 * kernel walks the path again with the caller's credentials only for a script: a binary runs
 * from runnerd's fd, so a directory the caller cannot search must stop it here. Per thread. 0,
 * or -errno (runnerd as it was). */
static int look_as_caller(struct sup *u, const struct rd_task *t, struct as_caller *a)
{
	a->on = false;
	if (!u->s->remote.on && t->inh.uid[1] == u->euid && t->inh.gid[1] == u->egid)
		return 0;
	if (t->n_groups > NGROUPS_MAX)
		return -EINVAL;
	a->n_groups = getgroups(NGROUPS_MAX, a->groups);
	if (a->n_groups < 0)
		return -errno;
	a->caps = cap_get_proc();
	if (!a->caps)
		return -errno;
	cap_t less = cap_dup(a->caps);
	static const cap_value_t dac[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH};
	int r = less && cap_set_flag(less, CAP_EFFECTIVE, 2, dac, CAP_CLEAR) == 0 &&
	                cap_set_proc(less) == 0
	            ? 0
	            : -errno;
	cap_free(less);
	if (r == 0 && syscall(SYS_setgroups, t->n_groups, t->groups) < 0)
		r = -errno;
	if (r < 0) {
		(void)cap_set_proc(a->caps);
		cap_free(a->caps);
		return r;
	}
	setfsgid(t->inh.gid[1]);
	setfsuid(t->inh.uid[1]);
	a->on = true;
	return 0;
}

static void look_as_runnerd(struct as_caller *a)
{
	if (!a->on)
		return;
	setfsuid(geteuid());
	setfsgid(getegid());
	(void)syscall(SYS_setgroups, a->n_groups, a->groups);
	(void)cap_set_proc(a->caps);
	cap_free(a->caps);
	a->on = false;
}

/* Phase 1: what the caller asks for, copied out of its memory; then the notification is
 * checked to be still valid, and only the copy is used from then on. */
static enum outcome phase_read(struct sup *u, struct exec *x)
{
	const struct seccomp_data *d = &x->n->data;
	struct req *q = x->q;
	struct rd_error err = {0};
	if (!rd_arch_native(d))
		return refuse(x, EPERM, "32-bit (i386 or x32) exec is not supported");
	bool at = rd_arch_is_execveat(d);
	x->path_addr = d->args[at ? 1 : 0];
	x->argv_addr = d->args[at ? 2 : 1];
	x->envp_addr = d->args[at ? 3 : 2];
	x->dirfd = at ? (int)d->args[0] : AT_FDCWD;
	x->flags = at ? (int)d->args[4] : 0;
	struct rd_mem mem = {rd_mem_read_task, (void *)(intptr_t)x->tid};

	int r = rd_read_path(&mem, x->path_addr, &q->path, &q->plen);
	if (r < 0) /* EFAULT, ENAMETOOLONG: the caller's own error, as the kernel would say it */
		return answer(x, ANSWER, r == -ESRCH ? ENOENT : -r);
	if (rd_task_open(x->tid, &q->t, &err) < 0)
		return refuse(x, EPERM, "%s", err.msg);
	struct as_caller as;
	if ((r = look_as_caller(u, &q->t, &as)) < 0)
		return refuse(x, EPERM, "cannot take the caller's credentials to look at %s: %s",
		              q->path, strerror(-r));
	enum rd_resolve_outcome o =
	    rd_resolve(&q->t, x->dirfd, q->path, x->flags, &q->tg, &r, &err);
	look_as_runnerd(&as);
	switch (o) {
	case RD_RESOLVED:
		break;
	case RD_RESOLVE_MISS:
		/* One PATH entry of an execvp search, say: answered, not audited. */
		return answer(x, MISS, r);
	case RD_RESOLVE_REFUSED:
		/* runnerd would not resolve it as the caller (a magic link, "..") or could not
		 * look (its cwd). */
		return refuse(x, r, "%s", err.msg);
	}
	/* After the misses (nine a spawn, for a PATH search): for them it changes nothing. */
	if (!same_view(u, x->tid))
		return refuse(x, EPERM,
		              "the caller has its own root or mount namespace, which runnerd does "
		              "not support");
	struct rlimit stack =
	    rd_task_rlimit(&q->t, RLIMIT_STACK, (struct rlimit){RLIM_INFINITY, RLIM_INFINITY});
	x->nofile = rd_task_rlimit(&q->t, RLIMIT_NOFILE, (struct rlimit){1024, 1024});
	/* The kernel copies the filename first: "/dev/fd/N[/path]" for an fd-relative exec. */
	size_t fname = (x->dirfd == AT_FDCWD || q->path[0] == '/') ? q->plen + 1 : q->plen + 1 + 20;
	size_t limit = rd_exec_arg_limit(stack.rlim_cur);
	r = fname < limit ? rd_read_strings(&mem, x->argv_addr, x->envp_addr, 8, limit - fname,
	                                    &q->strs, &err)
	                  : -E2BIG;
	if (r < 0)
		return answer(x, ANSWER, -r);
	/* An error of the caller's own making is answered above; a caller gone is answered by
	 * no one. Only the copy taken before ID_VALID is ever used. */
	if (!still_waiting(u, x))
		return GONE;
	return GO_ON;
}

static json_t *name_json(const char *entry, size_t len)
{
	char *name = strndup(entry, len);
	json_t *j = name ? rd_json_bytes(name) : NULL;
	free(name);
	return j;
}

static json_t *json_env(const struct rd_env_result *env)
{
	json_t *a = json_array();
	for (size_t i = 0; i < env->n_verdicts; i++) {
		const struct rd_env_verdict *v = &env->verdicts[i];
		json_t *o = json_pack("{s:o, s:b, s:s}", "name",
		                      v->name_len ? name_json(v->entry, v->name_len) : json_null(),
		                      "passed", v->passed, "reason", rd_env_reason_str(v->reason));
		/* The name whose value it held, never a value. */
		if (o && v->holds)
			json_object_set_new(o, "holds", name_json(v->holds, v->holds_len));
		if (o && v->rewritten)
			json_object_set_new(o, "userinfo_removed", json_true());
		if (o && v->pinned)
			json_object_set_new(o, "start_value", json_true());
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *rule_json(const struct rd_rule *rule)
{
	return rule ? json_integer((json_int_t)rule->index) : json_null();
}

static bool agent_file(const struct rd_agent_files *a, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < a->n_files; i++)
		if (a->files[i].dev == dev && a->files[i].ino == ino)
			return true;
	return false;
}

/* Whether no entry on the way to the directory dir (absolute, without symlinks) is one a
 * command could replace. */
static bool dir_fixed(const struct rd_view_paths *v, const char *dir)
{
	char prefix[PATH_MAX];
	size_t len = strlen(dir);
	if (len >= sizeof(prefix))
		return false;
	memcpy(prefix, dir, len + 1);
	for (size_t at = 1; at <= len; at++) {
		if (prefix[at] != '/' && prefix[at] != '\0')
			continue;
		char c = prefix[at];
		prefix[at] = '\0';
		if (rd_view_entry_replaceable(v, prefix))
			return false;
		prefix[at] = c;
	}
	return true;
}

/* Whether where path leads is fixed until the kernel walks it again (an agent exec goes on with
 * CONTINUE, and an interpreter opens its script by name): no directory entry on the way,
 * symlinks followed, is one a command could replace (v: where the commands of any rule
 * write). A relative path starts at cwd (its path; NULL: unknown). The kernel takes ".." from
 * a directory, not from its name: climbing out of cwd, cwd itself must be fixed. */
static bool walk_fixed(const struct rd_view_paths *v, const char *cwd, const char *path)
{
	char cur[PATH_MAX], rest[PATH_MAX], entry[PATH_MAX], target[PATH_MAX];
	if ((path[0] != '/' && !cwd) ||
	    snprintf(cur, sizeof(cur), "%s", path[0] == '/' ? "/" : cwd) >= (int)sizeof(cur) ||
	    snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return false;
	int links = 0;
	size_t below = 0;               /* entries walked down from cwd, each found fixed */
	bool from_cwd = path[0] != '/'; /* cur is cwd or below it */
	for (char *p = rest; *p;) {
		char *name = p + strspn(p, "/");
		size_t n = strcspn(name, "/");
		p = name + n;
		if (n == 0 || (n == 1 && name[0] == '.'))
			continue;
		if (n == 2 && name[0] == '.' && name[1] == '.') {
			if (from_cwd && below == 0) {
				if (!dir_fixed(v, cwd))
					return false;
				from_cwd = false;
			}
			below -= below > 0;
			char *up = strrchr(cur, '/');
			up[up == cur] = '\0';
			continue;
		}
		/* /proc and /dev/fd name the looker's own process and fds: runnerd's here, the
		 * caller's when the kernel walks it (/proc/self/cwd/..). Never fixed. */
		if (snprintf(entry, sizeof(entry), "%s/%.*s", strcmp(cur, "/") ? cur : "", (int)n,
		             name) >= (int)sizeof(entry) ||
		    strcmp(entry, "/proc") == 0 || strcmp(entry, "/dev/fd") == 0 ||
		    rd_view_entry_replaceable(v, entry))
			return false;
		ssize_t len = readlink(entry, target, sizeof(target) - 1);
		if (len < 0 && errno != EINVAL)
			return false;
		if (len < 0) { /* not a symlink */
			memcpy(cur, entry, strlen(entry) + 1);
			below++;
			continue;
		}
		/* A symlink: its target, then what was left, from its directory or from "/". */
		if (++links > 40 || (size_t)len + strlen(p) >= sizeof(rest))
			return false;
		memmove(rest + len, p, strlen(p) + 1);
		memcpy(rest, target, (size_t)len);
		if (target[0] == '/') {
			strcpy(cur, "/");
			from_cwd = false;
		}
		p = rest;
	}
	return true;
}

/* Does q's environment hold no variable of env.hard_deny (NODE_OPTIONS, LD_PRELOAD, ...), nor
 * one the profile guards (agent.env_guard: OPENSSL_CONF, the base URLs, ...), with a value the
 * agent did not have at its start? Such a value may come from a file commands wrote, which the
 * agent loaded (Qwen Code starts itself again after loading a project's .env; a guarded name
 * it never replaces, so a changed one did not come from the agent's own loading): the program
 * would run code of a command's, or send its key elsewhere. Said once. */
static bool env_as_started(struct sup *u, const struct req *q)
{
	for (size_t i = 0; i < q->strs.envc; i++) {
		const char *e = q->strs.envp[i], *eq = strchr(e, '=');
		if (!eq || !eq[1])
			continue;
		_cleanup_free_ char *name = strndup(e, (size_t)(eq - e));
		if (!name)
			return false; /* out of memory: a command, not the agent */
		bool guarded = false;
		for (size_t k = 0; !guarded && k < u->s->prof->agent_env_guard.n; k++)
			guarded = strcmp(u->s->prof->agent_env_guard.v[k], name) == 0;
		if (!guarded && !rd_glob_match_any(&u->s->cfg->env.hard_deny, name))
			continue;
		bool had = false;
		for (char *const *a = u->s->agent_env; !had && a && *a; a++)
			had = strcmp(*a, e) == 0;
		if (had)
			continue;
		if (!u->env_note_said) {
			u->env_note_said = true;
			fprintf(
			    stderr,
			    "runnerd: the agent started one of its own programs again with %s, "
			    "which it did not have at its start (from a file a command could "
			    "write, such as a project .env?): it runs as a command, without the "
			    "agent's key\n",
			    name);
		}
		return false;
	}
	return true;
}

/* One of the agent's own programs (supervisor.h, rd_agent_files), started by the agent:
 * - one of the files, by another program (codex.js starting Codex's binary), or by itself
 *   again with a first argument of the profile's agent.self_exec (Codex's own helpers): a
 *   command line the model chose, which an agent may run without a shell, is not the agent;
 * - the agent's interpreter started by itself again, given only the options the profile
 *   allows and then the agent's script or a file (Gemini CLI's larger heap);
 * and reached by paths no command can change (walk_fixed). Its execs are the agent's: the
 * call goes on with CONTINUE, which re-reads its arguments from the caller's memory, which
 * only the agent can write (the threat model trusts it with its own memory), and walks the
 * path again; a sandboxed command's execs are never trapped, so none comes here. */
static bool agent_program(struct sup *u, struct req *q, int dirfd)
{
	const struct rd_agent_files *a = &u->s->agent_files;
	const struct rd_profile *prof = u->s->prof;
	bool file = agent_file(a, q->tg.dev, q->tg.ino);
	bool interp = a->interp.ino && q->tg.dev == a->interp.dev && q->tg.ino == a->interp.ino;
	if (!file && !interp)
		return false;
	char exe[64];
	struct stat self;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", q->t.tid);
	if (stat(exe, &self) < 0)
		return false;
	bool again = self.st_dev == q->tg.dev && self.st_ino == q->tg.ino;
	size_t i = 1, argc = q->strs.argc;
	char *const *argv = q->strs.argv;
	if (file && again && !(argc > 1 && rd_glob_match_any(&prof->agent_self_exec, argv[1])))
		return false;
	if (!file && !again)
		return false;
	for (; !file && i < argc && argv[i][0] == '-'; i++)
		if (!rd_glob_match_any(&prof->agent_interp_opts, argv[i]))
			return false;
	/* A relative path from another directory than cwd (execveat's dirfd): not walked here. */
	if (q->path[0] != '/' && dirfd != AT_FDCWD)
		return false;
	struct rd_error err = {0};
	char cwd_buf[PATH_MAX], link[64];
	const char *cwd = NULL;
	if (rd_task_cwd(&q->t, &err) == 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", q->t.cwd_fd);
		ssize_t n = readlink(link, cwd_buf, sizeof(cwd_buf) - 1);
		if (n > 0 && cwd_buf[0] == '/') {
			cwd_buf[n] = '\0';
			cwd = cwd_buf;
		}
	}
	if (strcmp(q->path, "/proc/self/exe") != 0 && !walk_fixed(&u->s->any_rule, cwd, q->path))
		return false;
	if (!env_as_started(u, q))
		return false;
	if (file)
		return true;
	struct stat st;
	if (i >= argc || !walk_fixed(&u->s->any_rule, cwd, argv[i]) ||
	    fstatat(argv[i][0] == '/' ? AT_FDCWD : q->t.cwd_fd, argv[i], &st, 0) < 0)
		return false;
	return (st.st_dev == a->script.dev && st.st_ino == a->script.ino) ||
	       agent_file(a, st.st_dev, st.st_ino);
}

/* Phase 2: the first rule that matches (else commands.default), the command's env, and the
 * audit line, written before anything runs. */
/* execs_per_second: one token an exec, the bucket refilled at that rate and holding at most
 * one second's worth. */
static bool rate_allows(struct sup *u)
{
	struct rate *r = &u->rate;
	if (!r->per_s)
		return true;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	r->tokens +=
	    ((double)(now.tv_sec - r->at.tv_sec) + (double)(now.tv_nsec - r->at.tv_nsec) / 1e9) *
	    (double)r->per_s;
	r->at = now;
	if (r->tokens > (double)r->per_s)
		r->tokens = (double)r->per_s;
	if (r->tokens < 1.0)
		return false;
	r->tokens -= 1.0;
	return true;
}

/* A grant's check that found a place where another session's commands can write says so
 * after its own words ("commands can write" is this session's commands, else). */
static const char *peer_said(const struct sup *u)
{
	return u->pe.hit ? "; there: " : "";
}

static const char *peer_why(const struct sup *u)
{
	return u->pe.hit ? u->pe.why : "";
}

/* The exec event could not be written: no exec goes unrecorded. */
static enum outcome audit_failed(struct sup *u, struct exec *x)
{
	if (!u->s->audit->over)
		return refuse(x, EPERM, "the audit log cannot be written");
	refuse(x, EPERM,
	       "this session's audit log reached audit.max_session_bytes (%zu bytes): commands "
	       "are refused until the session ends",
	       u->s->audit->max);
	if (!u->warned_audit)
		fprintf(stderr, "runnerd: %s\n", x->why);
	u->warned_audit = true;
	return REFUSE;
}

static enum outcome phase_decide(struct sup *u, struct exec *x)
{
	if (agent_program(u, x->q, x->dirfd)) {
		struct req *q = x->q;
		sup_log(u, "exec %llu: %s is the agent's own program: it runs as the agent",
		        (unsigned long long)x->id, q->tg.resolved ? q->tg.resolved : q->path);
		if (rd_audit_on(u->s->audit) &&
		    rd_audit(u->s->audit, "exec",
		             json_pack("{s:I, s:i, s:o, s:o, s:o, s:s}", "id", (json_int_t)x->id,
		                       "tid", x->tid, "path", rd_json_bytes(q->path), "resolved",
		                       rd_json_bytes(q->tg.resolved), "argv",
		                       rd_json_strv(q->strs.argv, q->strs.argc), "action",
		                       "agent")) < 0)
			return audit_failed(u, x);
		return AGENT;
	}
	struct req *q = x->q;
	struct rd_error err = {0};
	struct rd_exec_subject subject = {q->path, q->tg.resolved, q->strs.argv, q->strs.argc};
	const struct rd_rule *rule = q->rule = rd_rule_match(u->s->prof, &subject);
	x->action = rule ? rule->action : u->s->prof->commands_default;
	int r = rd_env_build_known(&u->s->cfg->env, u->s->prof, RD_ENV_COMMAND, rule, q->strs.envp,
	                           &u->s->secrets, &q->env, &err);
	if (r < 0)
		return refuse(x, -r, "%s", err.msg);
	/* A rule that grants a secret: the program gets it, not what the caller would have it
	 * run, nor a configuration the caller chose (docs/configuration.md, "Grants"). Nothing
	 * to check for a command that is denied anyway. */
	if (rule && x->action != RD_ACTION_DENY) {
		/* Where the other sessions of the user have their commands write, as of now. */
		if (rule->grants_secret)
			sup_sessions_load(u);
		const char *root = NULL;
		if (rule->grants_secret && !rule->sha256.n &&
		    !(root = rd_view_writable_root(&u->s->any_rule, q->tg.resolved)))
			root = sup_sessions_writable(u, q->tg.resolved);
		if (root)
			return refuse(
			    x, EACCES,
			    "commands.rules[%zu] grants a secret to %s, which lies where "
			    "commands can write (%s): a command could have put it there; "
			    "grant a program outside the writable roots, or pin it by sha256",
			    rule->index, q->tg.resolved, root);
		const char *why =
		    rule->grants_secret
		        ? rd_grant_argv_refused(q->tg.resolved, q->strs.argv, q->strs.argc)
		        : NULL;
		if (why)
			return refuse(x, EACCES,
			              "commands.rules[%zu] grants a secret to %s: refused, for %s",
			              rule->index, q->tg.resolved, why);
		/* The file itself: one the agent could have replaced is refused, a pinned one
		 * runs as the bytes that matched the pin. */
		char why_file[sizeof(x->why)];
		r = sup_grant_target(u, q, why_file, sizeof(why_file));
		if (r)
			return refuse(x, r, "%s", why_file);
		if (rule->grants_secret &&
		    rd_env_pin_start(&q->env, &rd_grant_pinned_names, u->s->agent_env) < 0)
			return refuse(x, ENOMEM, "out of memory");
		r = sup_grant_reads(u, q, why_file, sizeof(why_file));
		if (r)
			return refuse(x, r, "%s%s%s", why_file, peer_said(u), peer_why(u));
		r = sup_grant_env(u, q, why_file, sizeof(why_file));
		if (r < 0)
			return refuse(x, ENOMEM, "out of memory");
		if (r)
			return refuse(x, r, "%s%s%s", why_file, peer_said(u), peer_why(u));
	}
	/* The agent's own process exec'ing (bash -c 'exec cmd', a wrapper script) hands the
	 * agent itself over to the sandbox; worth knowing when reading the log. */
	bool is_agent = q->t.tgid == u->s->agent.pid;
	if (is_agent)
		sup_log(u,
		        "exec %llu: the agent's own process exec'd %s: it continues as a sandboxed "
		        "command, its own execs no longer intercepted",
		        (unsigned long long)x->id, q->path);
	if (rd_audit_on(u->s->audit) &&
	    rd_audit(u->s->audit, "exec",
	             json_pack("{s:I, s:i, s:o, s:o, s:o, s:o, s:o, s:s, s:b}", "id",
	                       (json_int_t)x->id, "tid", x->tid, "path", rd_json_bytes(q->path),
	                       "resolved", rd_json_bytes(q->tg.resolved), "argv",
	                       rd_json_strv(q->strs.argv, q->strs.argc), "env", json_env(&q->env),
	                       "rule", rule_json(rule), "action", rd_action_str(x->action),
	                       "caller_is_agent", is_agent)) < 0)
		return audit_failed(u, x);
	x->audited = rd_audit_on(u->s->audit);
	if (x->action == RD_ACTION_DENY) {
		rd_audit(u->s->audit, "decision",
		         json_pack("{s:I, s:o, s:s}", "id", (json_int_t)x->id, "rule",
		                   rule_json(rule), "action", "deny"));
		if (!rule)
			return refuse(x, EACCES, "commands.default is deny");
		return refuse(x, EACCES, "commands.rules[%zu] denies it", rule->index);
	}
	if (x->action == RD_ACTION_ASK && u->ctl.fd < 0 && u->tty.fd < 0)
		/* Cannot happen with a profile loaded by rd_cmd_run, which opens the control
		 * socket for every profile with an "ask" rule; fail closed all the same. */
		return refuse(x, EACCES, "no way to ask for approval");
	/* Background processes keep their sandboxes: bounded, so that a session cannot pile
	 * them up. EAGAIN, as fork(2) says when a limit on processes is reached. */
	size_t live = sup_cmd_live_count(u);
	if (live >= u->max_sandboxes) {
		refuse(x, EAGAIN,
		       "this session has %zu sandboxes left by commands and their background "
		       "processes, the most its max_sandboxes allows: commands fail with EAGAIN "
		       "until some end (runnerd ps lists them)",
		       live);
		if (!u->warned_full)
			fprintf(stderr, "runnerd: %s\n", x->why);
		u->warned_full = true;
		return REFUSE;
	}
	if (!rate_allows(u)) {
		refuse(x, EAGAIN,
		       "this session starts commands faster than its execs_per_second (%llu) "
		       "allows: commands fail with EAGAIN until the rate drops",
		       (unsigned long long)u->rate.per_s);
		if (!u->rate.warned)
			fprintf(stderr, "runnerd: %s\n", x->why);
		u->rate.warned = true;
		return REFUSE;
	}
	const struct rd_inherit *h = &q->t.inh;
	uid_t eu = geteuid();
	gid_t eg = getegid();
	if (!u->full_ids && (h->uid[0] != eu || h->uid[1] != eu || h->uid[2] != eu ||
	                     h->gid[0] != eg || h->gid[1] != eg || h->gid[2] != eg))
		return refuse(
		    x, EPERM,
		    "the caller's uid or gid differs from runnerd's, which an unprivileged "
		    "runnerd cannot reproduce");
	return GO_ON;
}

/* The caller's terminal, if any of its fds is on one (the first of fds 0 to 2 that is, else
 * the first other, so that no fd of it, however opened, reaches the command): the command
 * gets one of its own, with the same modes and size (sandbox/plan.h). */
static void caller_tty(const struct rd_task *t, struct rd_plan_head *h)
{
	int best = -1;
	unsigned best_dev = 0, in_dev = 0;
	bool in_tty = false;
	for (size_t i = 0; i < t->n_fds; i++) {
		unsigned dev;
		if (ioctl(t->fds[i].fd, TIOCGDEV, &dev) < 0)
			continue; /* not a terminal (ENOTTY): one call for each of those */
		if (t->fds[i].target == 0) {
			in_tty = true;
			in_dev = dev;
		}
		if (best < 0 || (t->fds[i].target <= 2 && t->fds[best].target > 2)) {
			best = (int)i;
			best_dev = dev;
		}
	}
	if (best < 0)
		return;
	/* A terminal whose modes cannot be read is replaced all the same (its own terminal
	 * with zeroed modes): it must not reach the command. */
	if (tcgetattr(t->fds[best].fd, &h->tty_modes) < 0)
		h->tty_modes = (struct termios){0};
	if (ioctl(t->fds[best].fd, TIOCGWINSZ, &h->tty_size) < 0)
		h->tty_size = (struct winsize){0};
	h->tty_rdev = best_dev;
	h->tty_input = in_tty && in_dev == best_dev;
	h->has_tty = 1;
}

/* From the caller's state and the decision to the launch plan. */
static int build_plan(struct sup *u, struct req *q)
{
	struct rd_task *t = &q->t;
	struct rd_target *tg = &q->tg;
	q->map = calloc(t->n_fds + 1, sizeof(*q->map));
	if (!q->map)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_fds; i++)
		q->map[i] = (struct rd_fd_map){.fd = t->fds[i].fd, .target = t->fds[i].target};
	q->box = rd_box_resolve(u->s->cfg, u->s->prof, q->rule);
	const struct rd_bpf *filter = rd_cmd_filter(u->s, &q->box);
	q->plan = (struct rd_launch_plan){
	    .h =
	        {
	            .exec_via = tg->exec_fd == AT_FDCWD ? RD_EXEC_CWD
	                        : tg->exec_fd_is_target ? RD_EXEC_TARGET
	                                                : RD_EXEC_OWN,
	            .exec_fd = tg->exec_fd_is_target ? tg->exec_fd : -1,
	            .exec_flags = tg->exec_flags,
	            .inh = t->inh,
	            .pgrp_mode = t->sid == t->tgid    ? RD_PGRP_SESSION
	                         : t->pgid == t->tgid ? RD_PGRP_OWN
	                                              : RD_PGRP_MEMBER,
	            .expect_dev = tg->dev,
	            .expect_ino = tg->ino,
	            .single_ids = !u->full_ids,
	            .no_layers = q->rule && q->rule->grants_secret && u->s->view.n_layers,
	            .git_real = q->git_real,
	            .box = q->box,
	            .argc = (uint32_t)q->strs.argc,
	            .envc = (uint32_t)q->env.n_env,
	            .n_masks = (uint32_t)q->masks.n,
	            .n_write = (uint32_t)q->write.n,
	            .n_protect = (uint32_t)q->protect.n,
	            .n_gates = (uint32_t)q->gates.n,
	            .n_fds = (uint32_t)t->n_fds,
	            .n_groups = (uint32_t)t->n_groups,
	            .filter_len = filter ? filter->len : 0,
	        },
	    .exec_path = tg->exec_path,
	    .cwd_path = t->cwd_path ? t->cwd_path : "",
	    .argv = q->strs.argv,
	    .envp = q->env.envp,
	    .masks = q->masks.v,
	    .write = q->write.v,
	    .protect = q->protect.v,
	    .gates = q->gates.v,
	    .fds = q->map,
	    .groups = t->groups,
	    .filter = filter ? filter->insns : NULL,
	    .cwd_fd = t->cwd_fd,
	    .stub_ctl_fd = -1,
	    .own_exec_fd = tg->exec_fd_is_target || tg->exec_fd == AT_FDCWD ? -1 : tg->exec_fd,
	    .setup_fd = -1,
	};
	caller_tty(t, &q->plan.h);
	return 0;
}

/* Phase 3: the caller seized (a task that cannot be traced never starts a command), its state
 * taken, the masks checked, the plan built. */
static enum outcome phase_seize(struct sup *u, struct exec *x)
{
	struct req *q = x->q;
	struct rd_error err = {0};
	int r = rd_handoff_seize(x->tid);
	if (r < 0 && !still_waiting(u, x))
		return refuse(x, EPERM, "the caller went away before it could be seized");
	if (r < 0) {
		if (!u->warned_ptrace)
			fprintf(
			    stderr,
			    "runnerd: cannot ptrace the agent's processes (%s): every command "
			    "fails with EPERM. Is the agent already traced, or ptrace forbidden "
			    "(kernel.yama.ptrace_scope = 3)?\n",
			    strerror(-r));
		u->warned_ptrace = true;
		return refuse(x, EPERM, "the caller cannot be traced");
	}
	x->seized = true;
	if (rd_task_snapshot(&q->t, &err) < 0) {
		int e = sup_resource_errno(err.err);
		refuse(x, e ? e : EPERM, "%s", err.msg);
		if (e && still_waiting(u, x))
			sup_say_once(u, x->id, q->path, x->why, e);
		return REFUSE;
	}
	rd_target_bind(&q->t, &q->tg);
	const char *home = sup_masks_home(u, q->t.inh.uid[0]);
	if (!home)
		return refuse(x, EPERM,
		              "the caller's uid has no home directory in the password database, so "
		              "~/ masks cannot be placed");
	if (sup_masks_for(u, q->rule, home, &q->masks) < 0 ||
	    rd_rule_view_lists(u->s->cfg, u->s->prof, q->rule, u->s->any_rule.protect,
	                       u->s->any_rule.n_protect, home, q->t.inh.uid[0], &q->write,
	                       &q->protect) < 0)
		return refuse(x, EPERM, "out of memory");
	/* A protected path missing in a rule's own root could be made there by the command. */
	for (size_t i = 0; i < q->protect.n; i++) {
		struct stat st;
		const char *p = q->protect.v[i];
		if (rd_strv_within(&q->write, p) && lstat(p, &st) < 0 && errno == ENOENT)
			return refuse(
			    x, EACCES,
			    "commands.rules[%zu] makes %s writable, where the protected "
			    "path %s is missing: the command could create it; create it, or "
			    "narrow the rule's \"write\"",
			    q->rule->index, rd_strv_within(&q->write, p), p);
	}
	const char *moved = sup_masks_tampered(u, &q->masks);
	if (moved)
		return refuse_from_now(u, x,
		                       "the masked path %s has moved or changed since the session "
		                       "started",
		                       moved);
	const char *gone = rd_shadow_watch_gone(&u->sp.shadow);
	if (gone)
		return refuse_from_now(
		    u, x,
		    "the directory %s, which commands see as the session holds it "
		    "for the masked paths in it, was removed or moved during the "
		    "session",
		    gone);
	/* A grant run where a command could have made the repository or configuration it reads
	 * (a .git/config with hooks, aliases, fsmonitor in /tmp): only the workspace's are
	 * protected. */
	const char *cwd = q->t.cwd_path, *ws = u->s->workspace;
	const char *at = NULL;
	if (q->rule && q->rule->grants_secret && cwd) {
		/* This session's roots but its workspace; another session's, the workspace too:
		 * none of its paths are protected from those commands (supervisor/sessions.h). */
		at = rd_view_writable_root(&u->s->any_rule, cwd);
		if (at && ws && rd_path_within(cwd, ws))
			at = NULL;
		if (!at)
			at = sup_sessions_writable(u, cwd);
	}
	if (at)
		return refuse(
		    x, EACCES,
		    "commands.rules[%zu] grants a secret to %s, run in %s, where commands "
		    "can write (%s): a command could have made the configuration it reads "
		    "there; run it in the workspace %s",
		    q->rule->index, q->tg.resolved, cwd, at, ws ? ws : "(unknown)");
	/* Inside, the path leads to the mask, and the directory's fd would show the command what
	 * the mask hides. */
	const char *over = rd_strv_within(&q->masks, q->t.cwd_path);
	if (over)
		return refuse(x, EACCES,
		              "the caller's working directory %s is hidden from commands (the mask "
		              "%s)",
		              q->t.cwd_path, over);
	if (build_plan(u, q) < 0 || !(x->c = sup_cmd_new(x->id, x->tid, q->t.tgid, q->path)))
		return refuse(x, ENOMEM, "out of memory");
	struct cmd *c = x->c;
	sup_cmd_keep_argv(c, q->strs.argv, q->strs.argc);
	/* The kernel names a process after the last component of the path it exec'd (after the
	 * file's own name, for an exec by fd): so the stub, and the command, are named. */
	const char *name = q->path[0] ? q->path : q->tg.resolved ? q->tg.resolved : "";
	const char *slash = strrchr(name, '/');
	snprintf(c->comm, sizeof(c->comm), "%s", slash ? slash + 1 : name);
	c->rule = q->rule ? (long)q->rule->index : -1;
	c->run.kill_grace_s = (unsigned)q->box.v[RD_BOX_KILL_GRACE_S];
	c->run.timeout_s = (unsigned)q->box.v[RD_BOX_TIMEOUT_S];
	c->ho.argv_addr = x->argv_addr;
	c->ho.empty_path = x->path_addr + q->plen;
	/* Where the control socket goes in the caller (and the stub finds it). */
	c->ho.ctl_target = RD_STUB_CONTROL_FD(x->nofile.rlim_cur);
	return GO_ON;
}

/* Was fd free in the caller at the snapshot (above every fd it had open)? A thread of the
 * caller could still take it before the ADDFD that puts something there, and would lose that
 * file: a known window (docs/threat-model.md). */
static bool caller_fd_free(const struct req *q, int fd)
{
	return fd > 3 && fd > q->t.max_fd;
}

/* The stub's number in the caller: just below the control fd when that one is free. */
static int stub_want_fd(const struct cmd *c, const struct req *q)
{
	return caller_fd_free(q, c->ho.ctl_target - 1) ? c->ho.ctl_target - 1 : -1;
}

/* Phase 4, "allow": the command starts in its sandbox, and its caller is handed to the stub,
 * while the command starts where the control fd's place in the caller is free (pipelined),
 * else once its exec went through. */
static enum outcome phase_launch(struct sup *u, struct exec *x)
{
	struct req *q = x->q;
	struct cmd *c = x->c;
	struct rd_error err = {0};
	if (rd_audit_on(u->s->audit))
		rd_audit(u->s->audit, "decision",
		         json_pack("{s:I, s:o, s:s}", "id", (json_int_t)x->id, "rule",
		                   rule_json(q->rule), "action", "allow"));
	int r = sup_make_ctl(c);
	if (r < 0) {
		int e = sup_resource_errno(-r);
		refuse(x, e ? e : EPERM, "cannot make the stub's control socket: %s", strerror(-r));
		if (e)
			sup_say_once(u, x->id, q->path, x->why, e);
		return REFUSE;
	}
	q->plan.h.has_stub_ctl = true;
	q->plan.stub_ctl_fd = c->run.ctl_fd;
	bool granted = q->rule && q->rule->grants_secret;
	sup_cmd_read_ends(u, !granted);
	r = sup_spare_start(u, c, &q->plan, granted, &err);
	/* The stub goes in while the sandbox sets up: an ADDFD waits for the caller to install
	 * the fd itself. If the command's exec then fails, a pipelined handoff closes it again;
	 * otherwise the caller keeps this O_CLOEXEC fd until its next exec. */
	if (r == 0 && rd_handoff_add_stub(u->listener, x->n->id, u->s->stub_fd, stub_want_fd(c, q),
	                                  &c->ho.stub_in_task, &err) < 0) {
		rd_sandbox_destroy(&c->run.sb);
		r = -EPERM;
	}
	if (r == 0 && caller_fd_free(q, c->ho.ctl_target)) {
		if (sup_handoff_pipelined(u, c, x->n->id, &err) == 0) {
			u->n_started++;
			sup_spare_make(u);
			return HANDED;
		}
		rd_sandbox_destroy(&c->run.sb);
		r = -EPERM;
	}
	if (r == 0)
		r = rd_sandbox_wait_exec(&c->run.sb, &x->exec_errno, &err);
	if (r == 0)
		r = sup_cmd_started(u, c, &err);
	if (r < 0) {
		snprintf(x->why, sizeof(x->why), "%s", err.msg);
		return answer(x, FAILED, sup_launch_errno(x->exec_errno, err.err));
	}
	sup_handoff_begin(u, c, x->n->id);
	u->n_started++;
	/* The next command's sandbox, now: this one's command is already running, and what its
	 * caller waits for is its end, not the rest of this handoff. */
	sup_spare_make(u);
	return HANDED;
}

/* Phase 4, "ask": the caller is handed to the stub now, the plan is held for the answer. A
 * vfork caller (Node, CPython) gets its parent back at once; the loop goes on serving. */
static enum outcome phase_ask(struct sup *u, struct exec *x)
{
	struct req *q = x->q;
	struct cmd *c = x->c;
	struct rd_error err = {0};
	if (u->ap.n_pending >= RD_MAX_PENDING)
		return refuse(x, EACCES, "too many approvals are pending already");
	if (sup_arm_timer(u, c, q->rule->ask_timeout_s) < 0)
		return refuse(x, EPERM, "cannot arm the approval's timeout");
	if (rd_handoff_add_stub(u->listener, x->n->id, u->s->stub_fd, stub_want_fd(c, q),
	                        &c->ho.stub_in_task, &err) < 0)
		return refuse(x, EPERM, "%s", err.msg);
	sup_ask_hold(u, c, q);
	x->q = NULL; /* c's now */
	sup_handoff_begin(u, c, x->n->id);
	u->n_started++;
	return HANDED;
}

/* The one place an exec's answer is chosen. */
static void finish(struct sup *u, struct exec *x, enum outcome o)
{
	const char *path = x->q && x->q->path ? x->q->path : x->c ? x->c->path : NULL;
	/* What failed after the decision because the caller went (it was killed mid-way): no
	 * answer, no word on stderr, and the audit says so rather than that runnerd refused. */
	if ((o == REFUSE || o == FAILED) && !still_waiting(u, x)) {
		if (x->audited)
			rd_audit(u->s->audit, "gone",
			         json_pack("{s:I, s:i, s:o}", "id", (json_int_t)x->id, "tid",
			                   x->tid, "reason", rd_json_bytes(x->why)));
		o = GONE;
	}
	switch (o) {
	case AGENT:
		if (rd_notif_reply(u->listener, x->n->id, 0, true) < 0)
			sup_log(u, "exec %llu: the agent's program went before its answer",
			        (unsigned long long)x->id);
		break;
	case GO_ON:
	case HANDED:
	case GONE:
		break;
	case MISS:
		sup_log(u, "exec %llu (task %d) %s: %s", (unsigned long long)x->id, x->tid, path,
		        sup_errno_name(x->err));
		sup_reply(u, x->n->id, x->err);
		break;
	case ANSWER:
		sup_reply(u, x->n->id, x->err);
		break;
	case REFUSE:
		sup_audit_refusal(u, x->id, x->tid, path, x->err, x->why);
		sup_log(u, "exec %llu (task %d, %s) refused with %s: %s", (unsigned long long)x->id,
		        x->tid, path ? path : "?", sup_errno_name(x->err), x->why);
		if (x->seized)
			sup_release(u, x->tid, x->n->id, x->err);
		else
			sup_reply(u, x->n->id, x->err);
		break;
	case FAILED:
		sup_audit_launch_failure(u, x->id, x->tid, path, x->exec_errno, x->err, x->why);
		sup_release(u, x->tid, x->n->id, x->err);
		break;
	}
	if (o != HANDED && x->c)
		sup_cmd_discard(u, x->c);
	sup_req_free(x->q);
}

void sup_exec(struct sup *u, const struct seccomp_notif *n)
{
	struct exec x = {.n = n, .id = ++u->next_id, .tid = (pid_t)n->pid, .q = sup_req_new()};
	if (!x.q) {
		sup_reply(u, n->id, ENOMEM);
		return;
	}
	enum outcome o = phase_read(u, &x);
	if (o == GO_ON)
		o = phase_decide(u, &x);
	if (o == GO_ON)
		o = phase_seize(u, &x);
	if (o == GO_ON)
		o = x.action == RD_ACTION_ASK ? phase_ask(u, &x) : phase_launch(u, &x);
	finish(u, &x, o);
}
