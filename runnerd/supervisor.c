#include "supervisor.h"
#include "envpolicy.h"
#include "handoff.h"
#include "launch.h"
#include "reader.h"
#include "resolve.h"
#include "rules.h"
#include "stub_proto.h"
#include "syscalls.h"
#include "task.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>

enum src_type { SRC_LISTENER, SRC_SIGNAL, SRC_STATUS, SRC_CTL, SRC_TIMER };

struct src {
	enum src_type type;
	struct cmd *cmd;
};

/* One intercepted exec, from the trap to the stub's exit. */
enum cmd_state {
	C_STOPPING, /* replied -EPERM after PTRACE_INTERRUPT: waiting for the interrupt stop */
	C_RETRAP,   /* registers rewritten: waiting for the stub's execveat to trap */
	C_EXEC,     /* execveat let through: waiting for PTRACE_EVENT_EXEC */
	C_RUNNING,  /* detached: the stub mirrors the command */
	C_ABORTED,  /* the caller died or misbehaved during the handoff */
};

struct cmd {
	struct cmd *next;
	uint64_t id;
	pid_t tid, tgid;
	enum cmd_state state;
	uint64_t empty_path, argv_addr;
	int stub_in_task, ctl_target;
	struct rd_sandbox sb;
	int ctl_fd;
	struct src status_src, ctl_src, timer_src;
	int timer_fd;          /* timeout_s: -1 if none */
	unsigned kill_grace_s; /* from SIGTERM to SIGKILL */
	bool timed_out;        /* SIGTERM sent for the timeout: the caller sees 124 */
	const char *killed; /* why runnerd killed the sandbox, for the audit; NULL if it did not */
	bool reaped, status_known, joined_pgrp;
	int status;
	struct timespec start;
};

struct sup {
	struct rd_session *s;
	int epfd, sigfd, listener;
	bool agent_done;
	int agent_status;
	struct cmd *cmds;
	uint64_t next_id;
	dev_t stub_dev;
	ino_t stub_ino;
	struct seccomp_notif *notif;
	size_t notif_size;
	bool warned_ptrace, warned_ask;
	pid_t sid;
	bool userns;
	struct stat root_st;
	ino_t mntns;
	/* A sandbox made while idle, waiting for the next command: its clone and mounts are
	 * off the exec path. reaper < 0: none. */
	struct rd_sandbox spare;
	bool spare_failed;
	/* The home directory of the last caller uid seen, for "~/" in masks. */
	uid_t home_uid;
	char *home;
	struct src listener_src, signal_src;
};

static void vlog(struct sup *u, const char *fmt, ...) _printf_(2, 3);
static void vlog(struct sup *u, const char *fmt, ...)
{
	if (!u->s->verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "runnerd: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

static const char *errno_name(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

/* The audit line of a refusal: which exec, the errno its caller gets, and why. */
static void audit_refusal(struct sup *u, uint64_t id, pid_t tid, const char *path, int e,
                          const char *why)
{
	rd_audit(u->s->audit, "refused",
	         json_pack("{s:I, s:i, s:s?, s:s, s:i, s:s}", "id", (json_int_t)id, "tid", tid,
	                   "path", path, "errno", errno_name(e), "errno_num", e, "reason", why));
}

/* A refusal: the caller's exec fails with e, one audit line says why. */
static void refuse(struct sup *u, uint64_t notif_id, uint64_t id, pid_t tid, const char *path,
                   int e, const char *why)
{
	audit_refusal(u, id, tid, path, e, why);
	vlog(u, "exec %llu (task %d, %s) refused with %s: %s", (unsigned long long)id, tid,
	     path ? path : "?", errno_name(e), why);
	rd_notif_reply(u->listener, notif_id, -e, false);
}

static struct cmd *find_tid(struct sup *u, pid_t tid)
{
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (c->tid == tid && c->state < C_RUNNING)
			return c;
	return NULL;
}

static void watch(struct sup *u, int fd, struct src *src)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = src};
	if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		fprintf(stderr, "runnerd: epoll_ctl: %s\n", strerror(errno));
		abort(); /* cannot happen with our own fds; never run unwatched */
	}
}

static void unwatch(struct sup *u, int *fd)
{
	if (*fd >= 0) {
		epoll_ctl(u->epfd, EPOLL_CTL_DEL, *fd, NULL);
		close(*fd);
	}
	*fd = -1;
}

static void kill_sandbox(struct cmd *c)
{
	if (!c->reaped && c->sb.reaper_pidfd >= 0)
		rd_pidfd_send_signal(c->sb.reaper_pidfd, SIGKILL, NULL, 0);
}

static void cmd_free_if_done(struct sup *u, struct cmd *c)
{
	if (c->status_known && c->timer_fd >= 0)
		unwatch(u, &c->timer_fd);
	if (!c->reaped || c->status_known == false || c->ctl_fd >= 0 || c->sb.status_fd >= 0)
		return;
	if (c->state != C_RUNNING && c->state != C_ABORTED)
		return;
	for (struct cmd **pp = &u->cmds; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	rd_sandbox_close(&c->sb);
	free(c);
}

/* The caller died or did something other than the planned exec: nothing of its command may
 * go on. */
static void cmd_abort(struct sup *u, struct cmd *c, const char *why)
{
	vlog(u, "exec %llu (task %d): %s", (unsigned long long)c->id, c->tid, why);
	if (c->state < C_RUNNING)
		kill(c->tid, SIGKILL);
	c->state = C_ABORTED;
	c->killed = "its handoff failed";
	kill_sandbox(c);
	rd_audit(
	    u->s->audit, "handoff_failed",
	    json_pack("{s:I, s:i, s:s}", "id", (json_int_t)c->id, "tid", c->tid, "reason", why));
}

/* Give back a task runnerd seized but will not hand off: stop it, answer its exec with e,
 * detach. */
static void release(struct sup *u, pid_t tid, uint64_t notif_id, int e)
{
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	rd_notif_reply(u->listener, notif_id, -e, false);
	int st;
	if (waitpid(tid, &st, __WALL) == tid && WIFSTOPPED(st))
		ptrace(PTRACE_DETACH, tid, 0, 0);
}

static json_t *json_strv(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]) ?: json_string("(not UTF-8)"));
	return a;
}

static json_t *json_env(const struct rd_env_result *env)
{
	json_t *a = json_array();
	for (size_t i = 0; i < env->n_verdicts; i++) {
		const struct rd_env_verdict *v = &env->verdicts[i];
		json_array_append_new(
		    a, json_pack("{s:o, s:b, s:s}", "name",
		                 v->name_len ? json_stringn(v->entry, v->name_len) : json_null(),
		                 "passed", v->passed, "reason", rd_env_reason_str(v->reason)));
	}
	return a;
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

/* The caller's home from the password database: its HOME variable is the caller's to set, and
 * a mask must not move where the caller points it. NULL if the uid has no entry. */
static const char *caller_home(struct sup *u, uid_t uid)
{
	if (u->home && u->home_uid == uid)
		return u->home;
	char buf[4096];
	struct passwd pw, *res = NULL;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res || !res->pw_dir ||
	    res->pw_dir[0] != '/')
		return NULL;
	free(u->home);
	u->home = strdup(res->pw_dir);
	u->home_uid = uid;
	return u->home;
}

static void make_spare(struct sup *u)
{
	struct rd_error err = {0};
	if (u->spare.reaper >= 0 || u->spare_failed)
		return;
	if (rd_sandbox_spare(u->userns, &u->spare, &err) < 0) {
		/* Each exec then makes its own sandbox; say why once. */
		fprintf(stderr, "runnerd: %s\n", err.msg);
		u->spare_failed = true;
	}
}

static void handle_exec(struct sup *u, const struct seccomp_notif *n)
{
	const struct seccomp_data *d = &n->data;
	uint64_t id = ++u->next_id;
	pid_t tid = (pid_t)n->pid;
	struct rd_error err = {0};
	/* Declared before the first goto: cleanup attributes must never see garbage. */
	struct rd_env_result env = {0};
	struct rd_strings strs = {0};
	struct rd_target tg = {.own_fd = -1, .caller_fd = -1};
	_cleanup_free_ struct rd_fd_map *map = NULL;
	struct rd_strv masks = {0};

	if (!rd_arch_native(d)) {
		refuse(u, n->id, id, tid, NULL, EPERM,
		       "32-bit (i386 or x32) exec is not supported");
		return;
	}
	bool at = rd_arch_is_execveat(d);
	uint64_t path_addr = d->args[at ? 1 : 0], argv_addr = d->args[at ? 2 : 1];
	uint64_t envp_addr = d->args[at ? 3 : 2];
	int dirfd = at ? (int)d->args[0] : AT_FDCWD;
	int flags = at ? (int)d->args[4] : 0;
	struct rd_mem mem = {rd_mem_read_task, (void *)(intptr_t)tid};

	_cleanup_free_ char *path = NULL;
	size_t plen = 0;
	int r = rd_read_path(&mem, path_addr, &path, &plen);
	if (r < 0) {
		/* EFAULT, ENAMETOOLONG: the caller's own error, as the kernel would say it. */
		rd_notif_reply(u->listener, n->id, r == -ESRCH ? -ENOENT : r, false);
		return;
	}
	struct rd_task t;
	if (rd_task_open(tid, &t, &err) < 0) {
		refuse(u, n->id, id, tid, path, EPERM, err.msg);
		rd_task_free(&t);
		return;
	}
	if (!same_view(u, tid)) {
		refuse(u, n->id, id, tid, path, EPERM,
		       "the caller has its own root or mount namespace, which runnerd does not "
		       "support");
		rd_task_free(&t);
		return;
	}
	r = rd_resolve(&t, dirfd, path, flags, &tg, &err);
	if (r < 0) {
		/* A miss such as one PATH entry of an execvp search: answered, not audited. */
		vlog(u, "exec %llu (task %d) %s: %s", (unsigned long long)id, tid, path,
		     errno_name(-r));
		rd_notif_reply(u->listener, n->id, r, false);
		rd_target_free(&tg);
		rd_task_free(&t);
		return;
	}

	struct rlimit stack = {RLIM_INFINITY, RLIM_INFINITY}, nofile = {1024, 1024};
	prlimit(t.tgid, RLIMIT_STACK, NULL, &stack);
	prlimit(t.tgid, RLIMIT_NOFILE, NULL, &nofile);
	/* The kernel copies the filename first: "/dev/fd/N[/path]" for an fd-relative exec. */
	size_t fname = (dirfd == AT_FDCWD || path[0] == '/') ? plen + 1 : plen + 1 + 20;
	size_t limit = rd_exec_arg_limit(stack.rlim_cur);
	r = fname < limit
	        ? rd_read_strings(&mem, argv_addr, envp_addr, 8, limit - fname, &strs, &err)
	        : -E2BIG;
	if (r < 0 || ioctl(u->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
		/* An error of the caller's own making, or the caller is gone: either way, no
		 * command. Only the copy taken before ID_VALID is ever used. */
		if (r < 0)
			rd_notif_reply(u->listener, n->id, r, false);
		goto out;
	}

	/* The decision: the first rule that matches, else commands.default. */
	struct rd_exec_subject subject = {path, tg.resolved, strs.argv, strs.argc};
	const struct rd_rule *rule = rd_rule_match(u->s->prof, &subject);
	enum rd_action action = rule ? rule->action : u->s->prof->commands_default;
	r = rd_env_build(&u->s->cfg->env, u->s->prof, RD_ENV_COMMAND, rule, strs.envp, &env, &err);
	if (r < 0) {
		refuse(u, n->id, id, tid, path, -r, err.msg);
		goto out;
	}
	/* The agent's own process exec'ing (bash -c 'exec cmd', a wrapper script) hands the
	 * agent itself over to the sandbox; worth knowing when reading the log. */
	bool is_agent = t.tgid == u->s->agent.pid;
	if (is_agent)
		vlog(u,
		     "exec %llu: the agent's own process exec'd %s: it continues as a sandboxed "
		     "command, its own execs no longer intercepted",
		     (unsigned long long)id, path);
	json_t *ev = json_pack("{s:I, s:i, s:s, s:s?, s:o, s:o, s:o, s:s, s:b}", "id",
	                       (json_int_t)id, "tid", tid, "path", path, "resolved", tg.resolved,
	                       "argv", json_strv(strs.argv, strs.argc), "env", json_env(&env),
	                       "rule", rule ? json_integer((json_int_t)rule->index) : json_null(),
	                       "action", rd_action_str(action), "caller_is_agent", is_agent);
	if (rd_audit(u->s->audit, "exec", ev) < 0) {
		refuse(u, n->id, id, tid, path, EPERM, "the audit log cannot be written");
		goto out_env;
	}
	if (action != RD_ACTION_ALLOW) {
		char why[160];
		if (!rule)
			snprintf(why, sizeof(why), "commands.default is deny");
		else if (action == RD_ACTION_DENY)
			snprintf(why, sizeof(why), "commands.rules[%zu] denies it", rule->index);
		else
			snprintf(why, sizeof(why),
			         "commands.rules[%zu] asks for approval, which this version of "
			         "runnerd cannot obtain: refused",
			         rule->index);
		if (action == RD_ACTION_ASK && !u->warned_ask) {
			fprintf(stderr, "runnerd: %s\n", why);
			u->warned_ask = true;
		}
		refuse(u, n->id, id, tid, path, EACCES, why);
		goto out_env;
	}
	if (u->userns &&
	    (t.uid[0] != geteuid() || t.uid[1] != geteuid() || t.uid[2] != geteuid() ||
	     t.gid[0] != getegid() || t.gid[1] != getegid() || t.gid[2] != getegid())) {
		refuse(u, n->id, id, tid, path, EPERM,
		       "the caller's uid or gid differs from runnerd's, which an unprivileged "
		       "runnerd cannot reproduce");
		goto out_env;
	}

	/* Seize before anything starts: a task that cannot be traced never starts a command. */
	r = rd_handoff_seize(tid);
	if (r < 0) {
		if (!u->warned_ptrace)
			fprintf(
			    stderr,
			    "runnerd: cannot ptrace the agent's processes (%s): every command "
			    "fails with EPERM. Is the agent already traced, or ptrace forbidden "
			    "(kernel.yama.ptrace_scope = 3)?\n",
			    strerror(-r));
		u->warned_ptrace = true;
		refuse(u, n->id, id, tid, path, EPERM, "the caller cannot be traced");
		goto out_env;
	}
	if (rd_task_snapshot(&t, &err) < 0) {
		audit_refusal(u, id, tid, path, EPERM, err.msg);
		release(u, tid, n->id, EPERM);
		goto out_env;
	}
	rd_target_bind(&t, &tg);

	const char *home = caller_home(u, t.uid[0]);
	if (!home || rd_mask_list(u->s->cfg, u->s->prof, rule, home, &masks) < 0) {
		audit_refusal(u, id, tid, path, EPERM,
		              home ? "out of memory"
		                   : "the caller's uid has no home directory "
		                     "in the password database, so ~/ masks "
		                     "cannot be placed");
		release(u, tid, n->id, EPERM);
		goto out_env;
	}
	map = calloc(t.n_fds + 1, sizeof(*map));
	if (!map) {
		release(u, tid, n->id, ENOMEM);
		goto out_env;
	}
	for (size_t i = 0; i < t.n_fds; i++)
		map[i] = (struct rd_fd_map){.fd = t.fds[i].fd, .target = t.fds[i].target};
	struct rd_launch_plan plan = {
	    .exec_fd = tg.exec_fd,
	    .exec_fd_is_target = tg.exec_fd_is_target,
	    .exec_path = tg.exec_path,
	    .exec_flags = tg.exec_flags,
	    .argv = strs.argv,
	    .envp = env.envp,
	    .fds = map,
	    .n_fds = t.n_fds,
	    .cwd_fd = t.cwd_fd,
	    .uid = {t.uid[0], t.uid[1], t.uid[2]},
	    .gid = {t.gid[0], t.gid[1], t.gid[2]},
	    .groups = t.groups,
	    .n_groups = t.n_groups,
	    .umask = t.umask,
	    .sig_ignored = t.sig_ignored,
	    .sig_blocked = t.sig_blocked,
	    .rlim = t.rlim,
	    .have_rlim = t.have_rlim,
	    .pgrp_mode = t.sid == t.tgid    ? RD_PGRP_SESSION
	                 : t.pgid == t.tgid ? RD_PGRP_OWN
	                 : t.sid == u->sid  ? RD_PGRP_JOIN
	                                    : RD_PGRP_OTHER,
	    .join_pgid = t.pgid,
	    .userns = u->userns,
	    .masks = masks.v,
	    .n_masks = masks.n,
	};
	struct rd_box_opts box = rd_box_resolve(u->s->cfg, u->s->prof, rule);
	/* A rule's rlimits are caps: the command gets the lower of the caller's and the rule's. */
	for (int k = 0; k < RD_RLIMITS; k++) {
		if (!box.rlimit[k])
			continue;
		int res = rd_rlimit_resources[k];
		rlim_t cap = (rlim_t)box.rlimit[k];
		if (!t.have_rlim[res])
			t.rlim[res] = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY};
		if (t.rlim[res].rlim_cur > cap)
			t.rlim[res].rlim_cur = cap;
		if (t.rlim[res].rlim_max > cap)
			t.rlim[res].rlim_max = cap;
		t.have_rlim[res] = true;
	}
	plan.net_none = box.network == RD_NET_NONE;
	if (box.seccomp != RD_SECCOMP_NONE) {
		plan.filter = u->s->cmd_filter.insns;
		plan.filter_len = u->s->cmd_filter.len;
	}
	struct cmd *c = calloc(1, sizeof(*c));
	if (!c) {
		release(u, tid, n->id, ENOMEM);
		goto out_env;
	}
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	c->sb = u->spare;
	u->spare = RD_SANDBOX_NONE;
	r = rd_sandbox_start(&plan, &c->sb, &err);
	int exec_errno = 0;
	/* The stub goes in while the sandbox sets up: an ADDFD waits for the caller to install
	 * the fd itself. Below the control fd when that number is free. If the command's exec
	 * then fails, the caller keeps this O_CLOEXEC fd until its next exec. */
	c->ctl_target = RD_STUB_CONTROL_FD(nofile.rlim_cur);
	char probe[64];
	snprintf(probe, sizeof(probe), "/proc/%d/fd/%d", tid, c->ctl_target - 1);
	int want = c->ctl_target > 3 && access(probe, F_OK) < 0 ? c->ctl_target - 1 : -1;
	if (r == 0 && rd_handoff_add_stub(u->listener, n->id, u->s->stub_fd, want, &c->stub_in_task,
	                                  &err) < 0) {
		rd_sandbox_destroy(&c->sb);
		r = -EPERM;
	}
	if (r == 0)
		r = rd_sandbox_wait_exec(&c->sb, &exec_errno, &err);
	if (r < 0) {
		if (exec_errno) {
			/* The command's own exec failed: exactly the caller's errno. */
			rd_audit(u->s->audit, "exec_failed",
			         json_pack("{s:I, s:i, s:s, s:i, s:s}", "id", (json_int_t)id, "tid",
			                   tid, "errno", errno_name(exec_errno), "errno_num",
			                   exec_errno, "reason", err.msg));
			release(u, tid, n->id, exec_errno);
		} else {
			audit_refusal(u, id, tid, path, EPERM, err.msg);
			fprintf(stderr, "runnerd: exec %llu (%s): %s\n", (unsigned long long)id,
			        path, err.msg);
			release(u, tid, n->id, EPERM);
		}
		free(c);
		goto out_env;
	}
	c->id = id;
	c->tid = tid;
	c->tgid = t.tgid;
	c->joined_pgrp = plan.pgrp_mode == RD_PGRP_JOIN;
	c->argv_addr = argv_addr;
	c->empty_path = path_addr + plen;
	c->ctl_fd = -1;

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		audit_refusal(u, id, tid, path, EPERM, strerror(errno));
		rd_sandbox_destroy(&c->sb);
		free(c);
		release(u, tid, n->id, EPERM);
		goto out_env;
	}
	c->ctl_fd = sv[0];
	c->timer_fd = -1;
	c->kill_grace_s = box.kill_grace_s;
	if (box.timeout_s) {
		/* timeout_s: SIGTERM to the sandbox's pid 1 at expiry, SIGKILL after the grace. */
		c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct itimerspec its = {.it_value = {.tv_sec = box.timeout_s}};
		if (c->timer_fd >= 0 && timerfd_settime(c->timer_fd, 0, &its, NULL) == 0) {
			c->timer_src = (struct src){SRC_TIMER, c};
			watch(u, c->timer_fd, &c->timer_src);
		} else {
			/* No timer, no command: a limit that cannot be kept is not dropped. */
			if (c->timer_fd >= 0)
				close(c->timer_fd);
			c->timer_fd = -1;
			audit_refusal(u, id, tid, path, EPERM, "cannot arm the command's timeout");
			close(sv[0]);
			close(sv[1]);
			rd_sandbox_destroy(&c->sb);
			free(c);
			release(u, tid, n->id, EPERM);
			goto out_env;
		}
	}
	c->next = u->cmds;
	u->cmds = c;
	c->status_src = (struct src){SRC_STATUS, c};
	c->ctl_src = (struct src){SRC_CTL, c};
	watch(u, c->sb.status_fd, &c->status_src);
	watch(u, c->ctl_fd, &c->ctl_src);

	/* Interrupt first, then answer (the control socket's ADDFD answers the call): the stop
	 * comes as the exec returns, before any signal is dequeued, so the registers there are
	 * the syscall's. */
	c->state = C_STOPPING;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		rd_notif_reply(u->listener, n->id, -EPERM, false);
		cmd_abort(u, c, "PTRACE_INTERRUPT failed");
	} else if (rd_handoff_send_ctl(u->listener, n->id, sv[1], c->ctl_target, &err) < 0) {
		rd_notif_reply(u->listener, n->id, -EPERM, false);
		cmd_abort(u, c, err.msg);
	}
	close(sv[1]);
	/* The next command's sandbox, now: this one's command is already running, and what its
	 * caller waits for is its end, not the rest of this handoff. */
	make_spare(u);
out_env:
	rd_strv_free(&masks);
	rd_env_result_free(&env);
out:
	rd_strings_free(&strs);
	rd_target_free(&tg);
	rd_task_free(&t);
}

static void handle_notification(struct sup *u)
{
	struct seccomp_notif *n = u->notif;
	memset(n, 0, u->notif_size);
	if (ioctl(u->listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0)
		return; /* ENOENT: the task was interrupted before we got it */
	struct cmd *c = find_tid(u, (pid_t)n->pid);
	if (!c) {
		handle_exec(u, n);
		return;
	}
	if (c->state == C_RETRAP &&
	    rd_arch_is_stub_exec(&n->data, c->stub_in_task, c->empty_path, c->argv_addr)) {
		/* The execveat runnerd set up, checked from registers: the second and last
		 * CONTINUE. The exec event will confirm the image. */
		c->state = C_EXEC;
		if (rd_notif_reply(u->listener, n->id, 0, true) < 0)
			cmd_abort(u, c, "the caller vanished at the stub's exec");
		return;
	}
	rd_notif_reply(u->listener, n->id, -EPERM, false);
	cmd_abort(u, c, "the caller made another exec in the middle of its handoff");
}

static bool is_stub(struct sup *u, pid_t pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	return stat(p, &st) == 0 && st.st_dev == u->stub_dev && st.st_ino == u->stub_ino;
}

static void handle_tracee(struct sup *u, pid_t pid, int st)
{
	int event = st >> 16;
	struct cmd *c = find_tid(u, pid);
	if (!c && WIFSTOPPED(st) && event == PTRACE_EVENT_EXEC) {
		/* A non-leader thread's exec is reported under the thread group id. */
		unsigned long old = 0;
		ptrace(PTRACE_GETEVENTMSG, pid, 0, &old);
		c = find_tid(u, (pid_t)old);
		if (c)
			c->tid = pid;
	}
	if (!c) {
		if (WIFSTOPPED(st))
			ptrace(PTRACE_DETACH, pid, 0, 0);
		return;
	}
	if (!WIFSTOPPED(st)) {
		cmd_abort(u, c, "the caller died during the handoff");
		return;
	}
	struct rd_error err = {0};
	if (event == PTRACE_EVENT_STOP && c->state == C_STOPPING && WSTOPSIG(st) == SIGTRAP) {
		if (rd_arch_rewrite_exec(pid, c->ctl_target, c->stub_in_task, c->empty_path,
		                         c->argv_addr, &err) < 0) {
			cmd_abort(u, c, err.msg);
			return;
		}
		c->state = C_RETRAP;
		ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (event == PTRACE_EVENT_EXEC && c->state == C_EXEC) {
		if (!is_stub(u, pid)) {
			cmd_abort(u, c, "the caller exec'd something other than the stub");
			return;
		}
		c->state = C_RUNNING;
		ptrace(PTRACE_DETACH, pid, 0, 0);
		cmd_free_if_done(u, c);
	} else if (event == 0) {
		/* A signal on its way to the caller: deliver it. */
		ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st));
	} else {
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
}

static void reap(struct sup *u)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);
		if (pid <= 0)
			return;
		/* The agent's own process can be a caller mid-handoff (an agent that is a
		 * script exec's its interpreter): a stop is a ptrace event, not its end. */
		if (pid == u->s->agent.pid && !WIFSTOPPED(st)) {
			u->agent_done = true;
			u->agent_status = st;
			if (find_tid(u, pid))
				handle_tracee(u, pid, st);
			continue;
		}
		bool found = false;
		for (struct cmd *c = u->cmds; c; c = c->next)
			if (c->sb.reaper == pid) {
				c->reaped = found = true;
				cmd_free_if_done(u, c);
				break;
			}
		if (!found)
			handle_tracee(u, pid, st);
	}
}

static void send_exit(struct cmd *c)
{
	struct rd_stub_msg m = {.type = RD_STUB_EXIT, .value = c->status};
	if (c->ctl_fd >= 0)
		send(c->ctl_fd, &m, sizeof(m), MSG_NOSIGNAL);
}

static void handle_status(struct sup *u, struct cmd *c)
{
	int st = 0;
	ssize_t n = read(c->sb.status_fd, &st, sizeof(st));
	if (n == sizeof(st)) {
		c->status = st;
	} else {
		/* The reaper died without a word: killed, as everything in its namespace. */
		c->status = SIGKILL;
	}
	c->status_known = true;
	unwatch(u, &c->sb.status_fd);
	/* A command stopped for its timeout ends, for its caller, as timeout(1) reports it. */
	int real = c->status;
	if (c->timed_out)
		c->status = 124 << 8;
	json_t *f =
	    json_pack("{s:I, s:f}", "id", (json_int_t)c->id, "duration_ms", ms_since(&c->start));
	if (WIFEXITED(real))
		json_object_set_new(f, "status", json_integer(WEXITSTATUS(real)));
	else
		json_object_set_new(f, "signal", json_string(sigabbrev_np(WTERMSIG(real)) ?: "?"));
	if (c->timed_out)
		json_object_set_new(f, "reason", json_string("timeout"));
	else if (c->killed) {
		json_object_set_new(f, "reason", json_string("killed"));
		json_object_set_new(f, "killed_because", json_string(c->killed));
	}
	rd_audit(u->s->audit, "exit", f);
	send_exit(c);
	cmd_free_if_done(u, c);
}

static void handle_timer(struct sup *u, struct cmd *c)
{
	uint64_t ticks;
	if (read(c->timer_fd, &ticks, sizeof(ticks)) != sizeof(ticks) || c->status_known)
		return;
	if (!c->timed_out) {
		c->timed_out = true;
		vlog(u, "exec %llu: timeout, SIGTERM", (unsigned long long)c->id);
		rd_pidfd_send_signal(c->sb.reaper_pidfd, SIGTERM, NULL, 0);
		struct itimerspec its = {.it_value = {.tv_sec = c->kill_grace_s}};
		timerfd_settime(c->timer_fd, 0, &its, NULL);
	} else {
		vlog(u, "exec %llu: still running after the grace, SIGKILL",
		     (unsigned long long)c->id);
		kill_sandbox(c);
	}
}

static void handle_ctl(struct sup *u, struct cmd *c)
{
	struct rd_stub_msg m;
	ssize_t n = recv(c->ctl_fd, &m, sizeof(m), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == sizeof(m) && m.type == RD_STUB_SIGNAL) {
		/* A signal from the terminal already reached a command in the caller's process
		 * group: forwarding it too would deliver it twice. */
		if (c->status_known || (m.code == SI_KERNEL && c->joined_pgrp))
			return;
		rd_pidfd_send_signal(c->sb.reaper_pidfd, m.value, NULL, 0);
		return;
	}
	/* EOF or garbage: the stub is gone (the caller was killed, or it exited after EXIT).
	 * A command whose caller is gone must not run on. */
	unwatch(u, &c->ctl_fd);
	if (!c->status_known) {
		c->killed = "its caller died";
		kill_sandbox(c);
	}
	cmd_free_if_done(u, c);
}

static void handle_signal(struct sup *u)
{
	struct signalfd_siginfo si;
	while (read(u->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(u);
			continue;
		}
		/* From the terminal, the agent (same process group) got it already. */
		if (si.ssi_code != SI_KERNEL && !u->agent_done)
			kill(u->s->agent.pid, (int)si.ssi_signo);
	}
}

static int setup(struct sup *u, struct rd_session *s)
{
	memset(u, 0, sizeof(*u));
	u->s = s;
	u->listener = s->agent.listener;
	u->spare = RD_SANDBOX_NONE;
	u->sid = getsid(0);
	u->userns = geteuid() != 0;
	struct stat st;
	if (fstat(s->stub_fd, &st) < 0 || stat("/", &u->root_st) < 0 ||
	    stat("/proc/self/ns/mnt", &st) < 0)
		return -errno;
	fstat(s->stub_fd, &st);
	u->stub_dev = st.st_dev;
	u->stub_ino = st.st_ino;
	stat("/proc/self/ns/mnt", &st);
	u->mntns = st.st_ino;

	struct seccomp_notif_sizes sizes = {0};
	if (rd_seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		return -errno;
	u->notif_size = sizes.seccomp_notif > sizeof(struct seccomp_notif)
	                    ? sizes.seccomp_notif
	                    : sizeof(struct seccomp_notif);
	u->notif = calloc(1, u->notif_size);
	if (!u->notif)
		return -ENOMEM;

	sigset_t mask;
	sigemptyset(&mask);
	static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(&mask, sigs[i]);
	u->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (u->sigfd < 0 || u->epfd < 0)
		return -errno;
	u->listener_src = (struct src){SRC_LISTENER, NULL};
	u->signal_src = (struct src){SRC_SIGNAL, NULL};
	watch(u, u->listener, &u->listener_src);
	watch(u, u->sigfd, &u->signal_src);
	return 0;
}

int rd_supervise(struct rd_session *s)
{
	struct sup u;
	int r = setup(&u, s);
	if (r < 0) {
		fprintf(stderr, "runnerd: setting up the supervisor: %s\n", strerror(-r));
		kill(s->agent.pid, SIGKILL);
		return 125;
	}
	reap(&u); /* a SIGCHLD may have come before the signalfd existed */
	bool listener_open = true;
	while (!u.agent_done) {
		struct epoll_event evs[32];
		bool want_spare = u.spare.reaper < 0 && !u.spare_failed;
		int n = epoll_wait(u.epfd, evs, 32, want_spare ? 0 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 && want_spare) {
			make_spare(&u);
			continue;
		}
		if (n < 0) {
			fprintf(stderr, "runnerd: epoll_wait: %s\n", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			struct src *src = evs[i].data.ptr;
			switch (src->type) {
			case SRC_LISTENER:
				if (evs[i].events & EPOLLIN)
					handle_notification(&u);
				else if ((evs[i].events & EPOLLHUP) && listener_open) {
					/* No task is left under the filter. */
					epoll_ctl(u.epfd, EPOLL_CTL_DEL, u.listener, NULL);
					listener_open = false;
				}
				break;
			case SRC_SIGNAL:
				handle_signal(&u);
				break;
			case SRC_STATUS:
				handle_status(&u, src->cmd);
				break;
			case SRC_CTL:
				handle_ctl(&u, src->cmd);
				break;
			case SRC_TIMER:
				handle_timer(&u, src->cmd);
				break;
			}
		}
	}
	/* The agent is gone: so is every command it started. */
	for (struct cmd *c = u.cmds; c; c = c->next) {
		if (c->status_known)
			continue;
		kill_sandbox(c);
		rd_audit(s->audit, "exit",
		         json_pack("{s:I, s:f, s:s, s:s}", "id", (json_int_t)c->id, "duration_ms",
		                   ms_since(&c->start), "reason", "killed", "killed_because",
		                   "the agent exited"));
	}
	if (u.spare.reaper >= 0) {
		kill(u.spare.reaper, SIGKILL);
		rd_sandbox_close(&u.spare);
	}
	int st = u.agent_status;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	s->agent_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	json_t *f = json_pack("{s:i}", "exit_code", code);
	if (WIFSIGNALED(st))
		json_object_set_new(f, "signal", json_string(sigabbrev_np(WTERMSIG(st)) ?: "?"));
	rd_audit(s->audit, "session_end", f);
	free(u.notif);
	free(u.home);
	return code;
}
