/* The exec path of the supervisor: read a trapped exec, decide, launch its command in a
 * sandbox, and start the handoff of its caller to the stub. */
#include "intercept/handoff.h"
#include "intercept/reader.h"
#include "intercept/resolve.h"
#include "intercept/task.h"
#include "lib/stub_proto.h"
#include "lib/syscalls.h"
#include "policy/envpolicy.h"
#include "policy/rules.h"
#include "supervisor/sup_internal.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

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
	         json_pack("{s:I, s:i, s:o, s:s, s:i, s:o}", "id", (json_int_t)id, "tid", tid,
	                   "path", rd_json_bytes(path), "errno", errno_name(e), "errno_num", e,
	                   "reason", rd_json_bytes(why)));
}

/* A refusal: the caller's exec fails with e, one audit line says why. */
static void refuse(struct sup *u, uint64_t notif_id, uint64_t id, pid_t tid, const char *path,
                   int e, const char *why)
{
	audit_refusal(u, id, tid, path, e, why);
	rd_sup_log(u, "exec %llu (task %d, %s) refused with %s: %s", (unsigned long long)id, tid,
	           path ? path : "?", errno_name(e), why);
	rd_notif_reply(u->listener, notif_id, -e, false);
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
		json_array_append_new(
		    a, json_pack("{s:o, s:b, s:s}", "name",
		                 v->name_len ? name_json(v->entry, v->name_len) : json_null(),
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

/* The hidden control directories go on top of the profile's masks: a command that could reach
 * a control socket, this session's or another's, could answer its own "ask". */
static int add_control_masks(struct sup *u, struct rd_strv *m)
{
	char **v = realloc(m->v, (m->n + RD_CONTROL_DIRS + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	for (size_t i = 0; i < RD_CONTROL_DIRS && u->s->control_dirs[i]; i++)
		if (!(m->v[m->n] = strdup(u->s->control_dirs[i])))
			return -ENOMEM;
		else
			m->v[++m->n] = NULL;
	return 0;
}

/* Every mask of a command matched by rule (NULL: none), for a caller whose home is home. */
static int command_masks(struct sup *u, const struct rd_rule *rule, const char *home,
                         struct rd_strv *out)
{
	int r = rd_mask_list(u->s->cfg, u->s->prof, rule, home, u->home_uid, out);
	return r < 0 ? r : add_control_masks(u, out);
}

/* The preset of the next spare: the masks, network and filter of a command that no rule gives
 * masks of its own, for the home of the caller seen last (runnerd's own user's at first).
 * Called only while there is no spare, which is what keeps u->preset unchanged under one.
 * NULL: a plain spare. A plan that does not fit a spare's preset gets a sandbox of its own,
 * made on the exec path; so after such a plan the next spare is a plain one, which fits any
 * plan, until a plan would fit the preset again. */
static const struct rd_sandbox_preset *spare_preset(struct sup *u)
{
	if (u->preset_off || !u->home)
		return NULL;
	if (u->preset_home && strcmp(u->preset_home, u->home) == 0)
		return u->preset_unfit ? NULL : &u->preset;
	rd_strv_free(&u->preset_masks);
	free(u->preset_home);
	u->preset_home = NULL;
	if (command_masks(u, NULL, u->home, &u->preset_masks) < 0)
		return NULL;
	if (!(u->preset_home = strdup(u->home)))
		return NULL;
	struct rd_box_opts box = rd_box_resolve(u->s->cfg, u->s->prof, NULL);
	u->preset = (struct rd_sandbox_preset){
	    .masks = u->preset_masks.v,
	    .n_masks = u->preset_masks.n,
	    .net_none = box.network == RD_NET_NONE,
	};
	if (box.seccomp != RD_SECCOMP_NONE) {
		u->preset.filter = u->s->cmd_filter.insns;
		u->preset.filter_len = u->s->cmd_filter.len;
	}
	return u->preset_unfit ? NULL : &u->preset;
}

void rd_sup_zygote_check(struct sup *u)
{
	if (!u->zygote.lost || u->warned_zygote)
		return;
	u->warned_zygote = true;
	fprintf(stderr, "runnerd: the zygote process is gone; runnerd forks each sandbox itself "
	                "from now on\n");
}

/* A spare could not be made: each exec then makes its own sandbox; say why once. A lost
 * zygote is not such a failure: the next spare is made without it. */
static void spare_failed(struct sup *u, const struct rd_error *err)
{
	if (u->zygote.lost && !u->warned_zygote) {
		rd_sup_zygote_check(u);
		return;
	}
	fprintf(stderr, "runnerd: %s\n", err->msg);
	u->spare_failed = true;
}

void rd_sup_make_spare(struct sup *u)
{
	struct rd_error err = {0};
	if (u->spare.reaper >= 0 || u->spare.pending || u->spare_failed)
		return;
	int r = rd_sandbox_spare_begin(&u->zygote, u->userns, spare_preset(u), &u->spare, &err);
	rd_sup_zygote_check(u);
	if (r < 0)
		spare_failed(u, &err);
}

void rd_sup_spare_ready(struct sup *u)
{
	struct rd_error err = {0};
	char b;
	/* The answer may have been taken already, by an exec that needed the spare. */
	if (u->zygote.fd < 0 || (recv(u->zygote.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
	                         (errno == EAGAIN || errno == EINTR)))
		return;
	if (!u->spare.pending) {
		/* Nothing asked: the zygote is gone (EOF), or says what it must not. */
		rd_zygote_lost(&u->zygote);
		rd_sup_zygote_check(u);
		return;
	}
	if (rd_sandbox_spare_finish(&u->zygote, &u->spare, &err) < 0)
		spare_failed(u, &err);
	rd_sup_zygote_check(u);
}

/* Masks go over paths. A command may rename a masked directory's parent, or put a symlink
 * where a masked path was, and the next command's mask would then miss the secret (or cover
 * something else). So every masked path that exists when the session starts is pinned to its
 * inode; once one has moved or changed, commands are refused: better no command than one
 * that sees what it must not. */
void rd_sup_pin_masks(struct sup *u)
{
	struct rd_strv all = {0};
	const char *home = caller_home(u, getuid());
	const struct rd_profile *prof = u->s->prof;
	if (!home || command_masks(u, NULL, home, &all) < 0)
		return;
	size_t extra = 0;
	for (size_t r = 0; r < prof->n_rules; r++)
		extra += prof->rules[r].mask.n;
	u->pins = calloc(all.n + extra + 1, sizeof(*u->pins));
	for (size_t r = 0; u->pins && r <= prof->n_rules; r++) {
		struct rd_strv list = {0};
		if (r < prof->n_rules) {
			struct rd_config none = {0};
			struct rd_profile bare = {0};
			if (rd_mask_list(&none, &bare, &prof->rules[r], home, getuid(), &list) < 0)
				continue;
		} else {
			list = all;
			all = (struct rd_strv){0};
		}
		for (size_t i = 0; i < list.n; i++) {
			struct stat st;
			if (stat(list.v[i], &st) < 0)
				continue;
			u->pins[u->n_pins++] = (struct pin){
			    .path = strdup(list.v[i]), .dev = st.st_dev, .ino = st.st_ino};
		}
		rd_strv_free(&list);
	}
	rd_strv_free(&all);
}

/* The first pinned mask path that is no longer what it was, or NULL. */
static const char *mask_tampered(struct sup *u, const struct rd_strv *masks)
{
	for (size_t i = 0; i < masks->n; i++)
		for (size_t k = 0; k < u->n_pins; k++) {
			if (!u->pins[k].path || strcmp(u->pins[k].path, masks->v[i]) != 0)
				continue;
			struct stat st;
			if (stat(masks->v[i], &st) < 0 || st.st_dev != u->pins[k].dev ||
			    st.st_ino != u->pins[k].ino)
				return masks->v[i];
		}
	return NULL;
}

void rd_sup_req_free(struct req *q)
{
	if (!q)
		return;
	rd_strv_free(&q->masks);
	rd_env_result_free(&q->env);
	rd_strings_free(&q->strs);
	rd_target_free(&q->tg);
	rd_task_free(&q->t);
	free(q->map);
	free(q->path);
	free(q);
}

static struct req *req_new(void)
{
	struct req *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->t.pidfd = q->t.cwd_fd = -1;
	q->tg.own_fd = q->tg.caller_fd = -1;
	return q;
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
	/* A rule's rlimits are caps: the command gets the lower of the caller's and the rule's. */
	for (int k = 0; k < RD_RLIMITS; k++) {
		if (!q->box.rlimit[k])
			continue;
		int res = rd_rlimit_resources[k];
		rlim_t cap = (rlim_t)q->box.rlimit[k];
		if (!t->have_rlim[res])
			t->rlim[res] = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY};
		if (t->rlim[res].rlim_cur > cap)
			t->rlim[res].rlim_cur = cap;
		if (t->rlim[res].rlim_max > cap)
			t->rlim[res].rlim_max = cap;
		t->have_rlim[res] = true;
	}
	q->plan = (struct rd_launch_plan){
	    .exec_fd = tg->exec_fd,
	    .exec_fd_is_target = tg->exec_fd_is_target,
	    .exec_path = tg->exec_path,
	    .exec_flags = tg->exec_flags,
	    .argv = q->strs.argv,
	    .envp = q->env.envp,
	    .fds = q->map,
	    .n_fds = t->n_fds,
	    .cwd_fd = t->cwd_fd,
	    .uid = {t->uid[0], t->uid[1], t->uid[2]},
	    .gid = {t->gid[0], t->gid[1], t->gid[2]},
	    .groups = t->groups,
	    .n_groups = t->n_groups,
	    .umask = t->umask,
	    .sig_ignored = t->sig_ignored,
	    .sig_blocked = t->sig_blocked,
	    .rlim = t->rlim,
	    .have_rlim = t->have_rlim,
	    .pgrp_mode = t->sid == t->tgid    ? RD_PGRP_SESSION
	                 : t->pgid == t->tgid ? RD_PGRP_OWN
	                 : t->sid == u->sid   ? RD_PGRP_JOIN
	                                      : RD_PGRP_OTHER,
	    .join_pgid = t->pgid,
	    .userns = u->userns,
	    .masks = q->masks.v,
	    .n_masks = q->masks.n,
	    .expect_dev = tg->dev,
	    .expect_ino = tg->ino,
	    .net_none = q->box.network == RD_NET_NONE,
	};
	if (q->box.seccomp != RD_SECCOMP_NONE) {
		q->plan.filter = u->s->cmd_filter.insns;
		q->plan.filter_len = u->s->cmd_filter.len;
	}
	return 0;
}

int rd_sup_arm_timer(struct sup *u, struct cmd *c, unsigned secs)
{
	if (c->timer_fd < 0) {
		c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (c->timer_fd < 0)
			return -errno;
		c->timer_src = (struct src){.type = SRC_TIMER, .cmd = c};
		rd_sup_watch(u, c->timer_fd, &c->timer_src);
	}
	struct itimerspec its = {.it_value = {.tv_sec = secs}};
	return timerfd_settime(c->timer_fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* The plan's sandbox: the spare, if its preset fits the plan (rd_sandbox_start checks, and
 * makes a new one otherwise). */
static int start_sandbox(struct sup *u, struct cmd *c, const struct rd_launch_plan *plan,
                         struct rd_error *err)
{
	if (u->preset_home)
		u->preset_unfit = !rd_sandbox_preset_fits(&u->preset, plan);
	c->sb = u->spare;
	u->spare = RD_SANDBOX_NONE;
	int r = rd_sandbox_start(&u->zygote, plan, &c->sb, err);
	rd_sup_zygote_check(u);
	if (c->sb.preset_use == RD_PRESET_BROKEN && !u->preset_off) {
		fprintf(stderr,
		        "runnerd: the spare sandbox died while setting up masks and the "
		        "command filter ahead of time; each sandbox now sets them up itself\n");
		u->preset_off = true;
	} else if (c->sb.preset_use == RD_PRESET_STALE) {
		rd_sup_log(u,
		           "exec %llu: a masked path changed since the spare sandbox was made: "
		           "a new sandbox for this command",
		           (unsigned long long)c->id);
	}
	return r;
}

int rd_sup_caller_stderr(const struct req *q)
{
	for (size_t i = 0; i < q->t.n_fds; i++)
		if (q->t.fds[i].target == 2)
			return q->t.fds[i].fd;
	return -1;
}

/* The stub's control socket, before the plan: the reaper gets a copy of runnerd's end. */
static int make_ctl(struct cmd *c)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	c->ctl_fd = sv[0];
	c->ctl_peer = sv[1];
	return 0;
}

static void close_peer(struct cmd *c)
{
	if (c->ctl_peer >= 0)
		close(c->ctl_peer);
	c->ctl_peer = -1;
}

/* A command that never reached the loop: its sockets and itself. */
static void cmd_discard(struct cmd *c)
{
	close_peer(c);
	if (c->ctl_fd >= 0)
		close(c->ctl_fd);
	free(c);
}

/* The handoff's first steps, for a command launched (allow), starting (allow, pipelined: the
 * control socket is in the caller already, c->ctl_fd is runnerd's end) or not yet (ask): the
 * control socket, then interrupt and answer. The rest is the loop's (handle_tracee). */
static void begin_handoff(struct sup *u, struct cmd *c, uint64_t notif_id)
{
	struct rd_error err = {0};
	if (c->ctl_fd < 0 && make_ctl(c) < 0) {
		rd_notif_reply(u->listener, notif_id, -EPERM, false);
		c->state = C_STOPPING;
		c->next = u->cmds;
		u->cmds = c;
		rd_sup_cmd_abort(u, c, "cannot make the stub's control socket");
		return;
	}
	c->next = u->cmds;
	u->cmds = c;
	c->ctl_src = (struct src){.type = SRC_CTL, .cmd = c};
	rd_sup_watch(u, c->ctl_fd, &c->ctl_src);
	/* Interrupt first, then answer (the control socket's ADDFD answers the call): the stop
	 * comes as the exec returns, before any signal is dequeued, so the registers there are
	 * the syscall's. */
	c->state = C_STOPPING;
	if (ptrace(PTRACE_INTERRUPT, c->tid, 0, 0) < 0) {
		rd_notif_reply(u->listener, notif_id, -EPERM, false);
		rd_sup_cmd_abort(u, c, "PTRACE_INTERRUPT failed");
	} else if (c->ctl_peer < 0 ? rd_handoff_answer(u->listener, notif_id, c->ctl_target) < 0
	                           : rd_handoff_send_ctl(u->listener, notif_id, c->ctl_peer,
	                                                 c->ctl_target, true, &err) < 0) {
		rd_notif_reply(u->listener, notif_id, -EPERM, false);
		rd_sup_cmd_abort(u, c, err.msg[0] ? err.msg : "the caller vanished at its answer");
	}
	close_peer(c);
}

/* Pipelined: the control socket goes in now, before the command's exec is known to have
 * succeeded, so that the caller's interrupt stop and the stub's execveat trap happen while the
 * command starts. Only where the control fd's place is free: if the command's exec fails, the
 * caller gets its own exec back and runnerd closes what it put in (rd_sup_undo). */
static int start_pipelined(struct sup *u, struct cmd *c, uint64_t notif_id, const char *path,
                           struct rd_error *err)
{
	int r = rd_handoff_send_ctl(u->listener, notif_id, c->ctl_peer, c->ctl_target, false, err);
	if (r < 0 || !(c->path = strdup(path)))
		return r < 0 ? r : rd_error_set(err, ENOMEM, "out of memory");
	close_peer(c);
	c->exec_pending = true;
	c->setup_src = (struct src){.type = SRC_SETUP, .cmd = c};
	rd_sup_watch(u, c->sb.setup_fd, &c->setup_src);
	begin_handoff(u, c, notif_id);
	return 0;
}

/* The audit (and, for runnerd's own failures, stderr) of a command that could not start. */
static void audit_launch_failure(struct sup *u, uint64_t id, pid_t tid, const char *path,
                                 int exec_errno, const char *why)
{
	if (exec_errno) {
		/* The command's own exec failed: exactly the caller's errno. */
		rd_audit(u->s->audit, "exec_failed",
		         json_pack("{s:I, s:i, s:s, s:i, s:o}", "id", (json_int_t)id, "tid", tid,
		                   "errno", errno_name(exec_errno), "errno_num", exec_errno,
		                   "reason", rd_json_bytes(why)));
	} else {
		audit_refusal(u, id, tid, path, EPERM, why);
		fprintf(stderr, "runnerd: exec %llu (%s): %s\n", (unsigned long long)id, path, why);
	}
}

void rd_sup_exec_result(struct sup *u, struct cmd *c)
{
	struct rd_error err = {0};
	int exec_errno = 0;
	/* rd_sandbox_wait_exec closes it (and epoll forgets it); it does not block now. */
	epoll_ctl(u->epfd, EPOLL_CTL_DEL, c->sb.setup_fd, NULL);
	c->exec_pending = false;
	int r = rd_sandbox_wait_exec(&c->sb, &exec_errno, &err);
	if (c->state == C_ABORTED)
		return; /* the caller is gone: so is the sandbox, whatever it said */
	if (r == 0 && c->killed) {
		/* runnerd killed the sandbox meanwhile: its EOF is not a successful exec. */
		rd_error_set(&err, EPERM, "the sandbox was killed: %s", c->killed);
		r = -EPERM;
	}
	if (r == 0 && c->timeout_s && rd_sup_arm_timer(u, c, c->timeout_s) < 0) {
		rd_error_set(&err, EPERM, "cannot arm the command's timeout");
		rd_sandbox_destroy(&c->sb);
		r = -EPERM;
	}
	if (r == 0) {
		if (c->held) {
			c->held = false;
			c->state = C_EXEC;
			if (rd_notif_reply(u->listener, c->held_id, 0, true) < 0)
				rd_sup_cmd_abort(u, c, "the caller vanished at the stub's exec");
		}
		return;
	}
	audit_launch_failure(u, c->id, c->tid, c->path, exec_errno, err.msg);
	c->fail_errno = exec_errno ? exec_errno : EPERM;
	c->sb = RD_SANDBOX_NONE;
	c->reaped = c->status_known = true;
	if (c->timer_fd >= 0)
		rd_sup_unwatch(u, &c->timer_fd);
	rd_sup_unwatch(u, &c->ctl_fd);
	/* Where the caller is: at the stop or still on its way there, it is undone there. */
	if (c->state == C_RETRAP && c->held)
		rd_sup_undo(u, c);
}

static struct cmd *cmd_new(uint64_t id, const struct req *q, uint64_t path_addr, uint64_t argv_addr,
                           const struct rlimit *nofile, pid_t tid)
{
	struct cmd *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	c->id = id;
	c->tid = tid;
	c->tgid = q->t.tgid;
	c->sb = RD_SANDBOX_NONE;
	c->ctl_fd = c->ctl_peer = c->timer_fd = -1;
	c->joined_pgrp = q->plan.pgrp_mode == RD_PGRP_JOIN;
	c->argv_addr = argv_addr;
	c->empty_path = path_addr + q->plen;
	c->kill_grace_s = q->box.kill_grace_s;
	c->timeout_s = q->box.timeout_s;
	/* Where the control socket goes in the caller (and the stub finds it). */
	c->ctl_target = RD_STUB_CONTROL_FD(nofile->rlim_cur);
	return c;
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
	return caller_fd_free(q, c->ctl_target - 1) ? c->ctl_target - 1 : -1;
}

/* action "ask": hand the caller to the stub now, hold the plan, wait for the answer. A vfork
 * caller (Node, CPython) gets its parent back at once; the loop goes on serving. */
static void start_ask(struct sup *u, const struct seccomp_notif *n, struct cmd *c, struct req *q)
{
	struct rd_error err = {0};
	if (u->n_pending >= RD_MAX_PENDING) {
		audit_refusal(u, c->id, c->tid, q->path, EACCES,
		              "too many approvals are pending already");
		release(u, c->tid, n->id, EACCES);
		free(c);
		rd_sup_req_free(q);
		return;
	}
	unsigned secs = q->rule->ask_timeout_s; /* an ask is always a rule's */
	if (rd_sup_arm_timer(u, c, secs) < 0 ||
	    rd_handoff_add_stub(u->listener, n->id, u->s->stub_fd, stub_want_fd(c, q),
	                        &c->stub_in_task, &err) < 0) {
		audit_refusal(u, c->id, c->tid, q->path, EPERM,
		              err.msg[0] ? err.msg : "cannot arm the approval's timeout");
		if (c->timer_fd >= 0)
			rd_sup_unwatch(u, &c->timer_fd);
		release(u, c->tid, n->id, EPERM);
		free(c);
		rd_sup_req_free(q);
		return;
	}
	c->ask = ASK_PENDING;
	c->req = q;
	clock_gettime(CLOCK_MONOTONIC, &c->asked);
	c->asked_wall = time(NULL);
	u->n_pending++;
	rd_audit(u->s->audit, "decision",
	         json_pack("{s:I, s:I, s:s, s:s, s:i}", "id", (json_int_t)c->id, "rule",
	                   (json_int_t)q->rule->index, "action", "ask", "state", "pending",
	                   "ask_timeout_s", (int)secs));
	rd_sup_log(u, "exec %llu (%s): waiting for approval, %u s", (unsigned long long)c->id,
	           q->path, secs);
	begin_handoff(u, c, n->id);
	rd_control_tty_update(u);
}

int rd_sup_launch_approved(struct sup *u, struct cmd *c)
{
	struct req *q = c->req;
	struct rd_error err = {0};
	int exec_errno = 0;
	const char *moved = mask_tampered(u, &q->masks);
	int r;
	if (moved) {
		rd_error_set(&err, EPERM,
		             "the masked path %s has moved or changed since the session started",
		             moved);
		r = -EPERM;
	} else {
		q->plan.has_stub_ctl = c->ctl_fd >= 0;
		q->plan.stub_ctl_fd = c->ctl_fd;
		r = start_sandbox(u, c, &q->plan, &err);
		if (r == 0)
			r = rd_sandbox_wait_exec(&c->sb, &exec_errno, &err);
	}
	if (r == 0 && c->timeout_s && rd_sup_arm_timer(u, c, c->timeout_s) < 0) {
		rd_error_set(&err, EPERM, "cannot arm the command's timeout");
		rd_sandbox_destroy(&c->sb);
		r = -EPERM;
	} else if (r == 0 && !c->timeout_s && c->timer_fd >= 0) {
		rd_sup_unwatch(u, &c->timer_fd);
	}
	if (r < 0) {
		int e = exec_errno ? exec_errno : EPERM;
		audit_refusal(u, c->id, c->tid, q->path, e, err.msg);
		char line[RD_STUB_TEXT_MAX];
		snprintf(line, sizeof(line), "runnerd: %.200s: %.200s\n", q->path,
		         exec_errno ? strerror(exec_errno) : err.msg);
		c->sb = RD_SANDBOX_NONE;
		c->reaped = c->status_known = true;
		rd_sup_stub_say_exit(u, c, rd_sup_caller_stderr(q), line,
		                     (exec_errno == ENOENT ? 127 : 126) << 8);
	} else {
		clock_gettime(CLOCK_MONOTONIC, &c->start);
		rd_sup_make_spare(u);
	}
	rd_sup_req_free(q);
	c->req = NULL;
	rd_sup_cmd_free_if_done(u, c);
	return r < 0 ? -1 : 0;
}

void rd_sup_handle_exec(struct sup *u, const struct seccomp_notif *n)
{
	const struct seccomp_data *d = &n->data;
	uint64_t id = ++u->next_id;
	pid_t tid = (pid_t)n->pid;
	struct rd_error err = {0};
	struct req *q = req_new();

	if (!q) {
		rd_notif_reply(u->listener, n->id, -ENOMEM, false);
		return;
	}
	if (!rd_arch_native(d)) {
		refuse(u, n->id, id, tid, NULL, EPERM,
		       "32-bit (i386 or x32) exec is not supported");
		goto out;
	}
	bool at = rd_arch_is_execveat(d);
	uint64_t path_addr = d->args[at ? 1 : 0], argv_addr = d->args[at ? 2 : 1];
	uint64_t envp_addr = d->args[at ? 3 : 2];
	int dirfd = at ? (int)d->args[0] : AT_FDCWD;
	int flags = at ? (int)d->args[4] : 0;
	struct rd_mem mem = {rd_mem_read_task, (void *)(intptr_t)tid};

	int r = rd_read_path(&mem, path_addr, &q->path, &q->plen);
	if (r < 0) {
		/* EFAULT, ENAMETOOLONG: the caller's own error, as the kernel would say it. */
		rd_notif_reply(u->listener, n->id, r == -ESRCH ? -ENOENT : r, false);
		goto out;
	}
	const char *path = q->path;
	if (rd_task_open(tid, &q->t, &err) < 0) {
		refuse(u, n->id, id, tid, path, EPERM, err.msg);
		goto out;
	}
	r = rd_resolve(&q->t, dirfd, path, flags, &q->tg, &err);
	if (r < 0 && err.n) {
		/* Not a miss: runnerd would not resolve it as the caller (a magic link, "..")
		 * or could not look (its cwd): refused, and audited. */
		refuse(u, n->id, id, tid, path, -r, err.msg);
		goto out;
	}
	if (r < 0) {
		/* A miss such as one PATH entry of an execvp search: answered, not audited. */
		rd_sup_log(u, "exec %llu (task %d) %s: %s", (unsigned long long)id, tid, path,
		           errno_name(-r));
		rd_notif_reply(u->listener, n->id, r, false);
		goto out;
	}
	/* After the misses (nine a spawn, for a PATH search): for them it changes nothing. */
	if (!same_view(u, tid)) {
		refuse(u, n->id, id, tid, path, EPERM,
		       "the caller has its own root or mount namespace, which runnerd does not "
		       "support");
		goto out;
	}

	struct rlimit stack =
	    rd_task_rlimit(&q->t, RLIMIT_STACK, (struct rlimit){RLIM_INFINITY, RLIM_INFINITY});
	struct rlimit nofile = rd_task_rlimit(&q->t, RLIMIT_NOFILE, (struct rlimit){1024, 1024});
	/* The kernel copies the filename first: "/dev/fd/N[/path]" for an fd-relative exec. */
	size_t fname = (dirfd == AT_FDCWD || path[0] == '/') ? q->plen + 1 : q->plen + 1 + 20;
	size_t limit = rd_exec_arg_limit(stack.rlim_cur);
	r = fname < limit
	        ? rd_read_strings(&mem, argv_addr, envp_addr, 8, limit - fname, &q->strs, &err)
	        : -E2BIG;
	if (r < 0 || ioctl(u->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
		/* An error of the caller's own making, or the caller is gone: either way, no
		 * command. Only the copy taken before ID_VALID is ever used. */
		if (r < 0)
			rd_notif_reply(u->listener, n->id, r, false);
		goto out;
	}

	/* The decision: the first rule that matches, else commands.default. */
	struct rd_exec_subject subject = {path, q->tg.resolved, q->strs.argv, q->strs.argc};
	const struct rd_rule *rule = q->rule = rd_rule_match(u->s->prof, &subject);
	enum rd_action action = rule ? rule->action : u->s->prof->commands_default;
	r = rd_env_build(&u->s->cfg->env, u->s->prof, RD_ENV_COMMAND, rule, q->strs.envp, &q->env,
	                 &err);
	if (r < 0) {
		refuse(u, n->id, id, tid, path, -r, err.msg);
		goto out;
	}
	/* The agent's own process exec'ing (bash -c 'exec cmd', a wrapper script) hands the
	 * agent itself over to the sandbox; worth knowing when reading the log. */
	bool is_agent = q->t.tgid == u->s->agent.pid;
	if (is_agent)
		rd_sup_log(
		    u,
		    "exec %llu: the agent's own process exec'd %s: it continues as a sandboxed "
		    "command, its own execs no longer intercepted",
		    (unsigned long long)id, path);
	if (rd_audit_on(u->s->audit) &&
	    rd_audit(u->s->audit, "exec",
	             json_pack("{s:I, s:i, s:o, s:o, s:o, s:o, s:o, s:s, s:b}", "id",
	                       (json_int_t)id, "tid", tid, "path", rd_json_bytes(path), "resolved",
	                       rd_json_bytes(q->tg.resolved), "argv",
	                       rd_json_strv(q->strs.argv, q->strs.argc), "env", json_env(&q->env),
	                       "rule", rule ? json_integer((json_int_t)rule->index) : json_null(),
	                       "action", rd_action_str(action), "caller_is_agent", is_agent)) < 0) {
		refuse(u, n->id, id, tid, path, EPERM, "the audit log cannot be written");
		goto out;
	}
	if (action == RD_ACTION_DENY) {
		char why[160];
		if (!rule)
			snprintf(why, sizeof(why), "commands.default is deny");
		else
			snprintf(why, sizeof(why), "commands.rules[%zu] denies it", rule->index);
		rd_audit(u->s->audit, "decision",
		         json_pack("{s:I, s:o, s:s}", "id", (json_int_t)id, "rule",
		                   rule ? json_integer((json_int_t)rule->index) : json_null(),
		                   "action", "deny"));
		refuse(u, n->id, id, tid, path, EACCES, why);
		goto out;
	}
	if (action == RD_ACTION_ASK && u->control_fd < 0 && u->tty_fd < 0) {
		/* Cannot happen with a profile loaded by rd_cmd_run, which opens the control
		 * socket for every profile with an "ask" rule; fail closed all the same. */
		refuse(u, n->id, id, tid, path, EACCES, "no way to ask for approval");
		goto out;
	}
	if (u->userns &&
	    (q->t.uid[0] != geteuid() || q->t.uid[1] != geteuid() || q->t.uid[2] != geteuid() ||
	     q->t.gid[0] != getegid() || q->t.gid[1] != getegid() || q->t.gid[2] != getegid())) {
		refuse(u, n->id, id, tid, path, EPERM,
		       "the caller's uid or gid differs from runnerd's, which an unprivileged "
		       "runnerd cannot reproduce");
		goto out;
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
		goto out;
	}
	if (rd_task_snapshot(&q->t, &err) < 0) {
		audit_refusal(u, id, tid, path, EPERM, err.msg);
		release(u, tid, n->id, EPERM);
		goto out;
	}
	rd_target_bind(&q->t, &q->tg);

	const char *home = caller_home(u, q->t.uid[0]);
	if (!home || command_masks(u, rule, home, &q->masks) < 0) {
		audit_refusal(u, id, tid, path, EPERM,
		              home ? "out of memory"
		                   : "the caller's uid has no home directory "
		                     "in the password database, so ~/ masks "
		                     "cannot be placed");
		release(u, tid, n->id, EPERM);
		goto out;
	}
	const char *moved = mask_tampered(u, &q->masks);
	if (moved) {
		char why[600];
		snprintf(why, sizeof(why),
		         "the masked path %s has moved or changed since the session started; "
		         "commands are refused until runnerd is restarted",
		         moved);
		if (!u->warned_masks)
			fprintf(stderr, "runnerd: %s\n", why);
		u->warned_masks = true;
		audit_refusal(u, id, tid, path, EPERM, why);
		release(u, tid, n->id, EPERM);
		goto out;
	}
	struct cmd *c = NULL;
	if (build_plan(u, q) < 0 || !(c = cmd_new(id, q, path_addr, argv_addr, &nofile, tid))) {
		release(u, tid, n->id, ENOMEM);
		goto out;
	}
	if (action == RD_ACTION_ASK) {
		start_ask(u, n, c, q);
		return; /* q is c's, or freed */
	}
	if (rd_audit_on(u->s->audit))
		rd_audit(u->s->audit, "decision",
		         json_pack("{s:I, s:o, s:s}", "id", (json_int_t)id, "rule",
		                   rule ? json_integer((json_int_t)rule->index) : json_null(),
		                   "action", "allow"));
	if (make_ctl(c) < 0) {
		audit_refusal(u, id, tid, path, EPERM, "cannot make the stub's control socket");
		release(u, tid, n->id, EPERM);
		free(c);
		goto out;
	}
	q->plan.has_stub_ctl = true;
	q->plan.stub_ctl_fd = c->ctl_fd;
	r = start_sandbox(u, c, &q->plan, &err);
	int exec_errno = 0;
	/* The stub goes in while the sandbox sets up: an ADDFD waits for the caller to install
	 * the fd itself. If the command's exec then fails, a pipelined handoff closes it again
	 * (rd_sup_undo); otherwise the caller keeps this O_CLOEXEC fd until its next exec. */
	if (r == 0 && rd_handoff_add_stub(u->listener, n->id, u->s->stub_fd, stub_want_fd(c, q),
	                                  &c->stub_in_task, &err) < 0) {
		rd_sandbox_destroy(&c->sb);
		r = -EPERM;
	}
	if (r == 0 && caller_fd_free(q, c->ctl_target)) {
		if (start_pipelined(u, c, n->id, path, &err) == 0) {
			rd_sup_make_spare(u);
			goto out;
		}
		rd_sandbox_destroy(&c->sb);
		r = -EPERM;
	}
	if (r == 0)
		r = rd_sandbox_wait_exec(&c->sb, &exec_errno, &err);
	if (r < 0) {
		audit_launch_failure(u, id, tid, path, exec_errno, err.msg);
		release(u, tid, n->id, exec_errno ? exec_errno : EPERM);
		cmd_discard(c);
		goto out;
	}
	/* timeout_s: SIGTERM to the sandbox's pid 1 at expiry, SIGKILL after the grace. No
	 * timer, no command: a limit that cannot be kept is not dropped. */
	if (c->timeout_s && rd_sup_arm_timer(u, c, c->timeout_s) < 0) {
		if (c->timer_fd >= 0)
			rd_sup_unwatch(u, &c->timer_fd);
		audit_refusal(u, id, tid, path, EPERM, "cannot arm the command's timeout");
		rd_sandbox_destroy(&c->sb);
		cmd_discard(c);
		release(u, tid, n->id, EPERM);
		goto out;
	}
	begin_handoff(u, c, n->id);
	/* The next command's sandbox, now: this one's command is already running, and what its
	 * caller waits for is its end, not the rest of this handoff. */
	rd_sup_make_spare(u);
out:
	rd_sup_req_free(q);
}
