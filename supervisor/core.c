/* The services of the supervisor's core (core.h): what every handler uses, and nothing that
 * calls a handler. */
#include "supervisor/core.h"
#include "intercept/launcher.h"
#include "lib/fdpass.h"
#include "lib/stub_proto.h"
#include "lib/syscalls.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ptrace.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

void sup_log(struct sup *u, const char *fmt, ...)
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

double sup_ms_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

const char *sup_errno_name(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

void sup_watch(struct sup *u, int fd, struct src *src)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = src};
	if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		fprintf(stderr, "runnerd: epoll_ctl: %s\n", strerror(errno));
		abort(); /* cannot happen with our own fds; never run unwatched */
	}
}

void sup_unwatch(struct sup *u, int *fd)
{
	if (*fd >= 0) {
		epoll_ctl(u->epfd, EPOLL_CTL_DEL, *fd, NULL);
		close(*fd);
	}
	*fd = -1;
}

struct req *sup_req_new(void)
{
	struct req *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->t.pidfd = q->t.cwd_fd = -1;
	q->tg.own_fd = q->tg.caller_fd = -1;
	return q;
}

void sup_req_free(struct req *q)
{
	if (!q)
		return;
	rd_strv_free(&q->masks);
	rd_strv_free(&q->write);
	rd_strv_free(&q->protect);
	rd_strv_free(&q->gates);
	rd_env_result_free(&q->env);
	rd_strings_free(&q->strs);
	rd_target_free(&q->tg);
	rd_task_free(&q->t);
	free(q->map);
	free(q->path);
	free(q->git_top);
	free(q->git_cwd);
	free(q->git_dir);
	free(q->git_common);
	free(q);
}

struct cmd *sup_cmd_new(uint64_t id, pid_t tid, pid_t tgid, const char *path)
{
	struct cmd *c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return NULL;
	}
	c->id = id;
	c->tid = tid;
	c->tgid = tgid;
	c->run.sb = RD_SANDBOX_NONE;
	c->run.ctl_fd = c->run.ctl_peer = c->run.timer_fd = c->run.stub_pidfd = -1;
	c->run.wake_timer = -1;
	clock_gettime(CLOCK_MONOTONIC, &c->run.start);
	return c;
}

void sup_cmd_keep_argv(struct cmd *c, char *const *argv, size_t argc)
{
	size_t len = 0;
	for (size_t i = 0; i < argc && len < RD_CMD_ARGV_KEEP; i++)
		len += strlen(argv[i]) + 1;
	c->argv_cut = len > RD_CMD_ARGV_KEEP;
	if (c->argv_cut)
		len = RD_CMD_ARGV_KEEP;
	if (!(c->argv = malloc(len + 1)))
		return;
	size_t o = 0;
	for (size_t i = 0; i < argc && o < len; i++) {
		size_t n = strlen(argv[i]) + 1;
		memcpy(c->argv + o, argv[i], n <= len - o ? n : len - o);
		o += n;
	}
	c->argv[len] = '\0';
	c->argv_len = len;
}

struct cmd *sup_cmd_find_tid(struct sup *u, pid_t tid)
{
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (c->tid == tid && c->ho.state < H_RUNNING)
			return c;
	return NULL;
}

void sup_cmd_link(struct sup *u, struct cmd *c)
{
	c->next = u->cmds;
	u->cmds = c;
}

static void close_stub_wake(struct sup *u, struct run *r)
{
	sup_unwatch(u, &r->wake_timer);
	if (r->stub_pidfd >= 0)
		close(r->stub_pidfd);
	r->stub_pidfd = -1;
}

void sup_cmd_discard(struct sup *u, struct cmd *c)
{
	/* A sandbox still there is killed; runnerd's loop reaps its pid 1. */
	rd_sandbox_destroy(&c->run.sb);
	sup_close_peer(c);
	if (c->run.timer_fd >= 0)
		sup_unwatch(u, &c->run.timer_fd);
	if (c->run.ctl_fd >= 0)
		close(c->run.ctl_fd);
	close_stub_wake(u, &c->run);
	free(c->argv);
	free(c->path);
	free(c);
}

void sup_cmd_free_if_done(struct sup *u, struct cmd *c)
{
	struct run *r = &c->run;
	if (c->dead)
		return;
	/* The timer stays while the sandbox does: timeout_s ends it, background processes too. */
	if (r->reaped && r->status_known && r->timer_fd >= 0)
		sup_unwatch(u, &r->timer_fd);
	if (!r->reaped || !r->status_known || r->ctl_fd >= 0 || r->sb.status_fd >= 0)
		return;
	if (c->ho.state != H_RUNNING && c->ho.state != H_RETURNED && c->ho.state != H_ABORTED)
		return;
	for (struct cmd **pp = &u->cmds; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	rd_sandbox_close(&r->sb);
	close_stub_wake(u, r);
	sup_req_free(c->ask.req);
	c->ask.req = NULL;
	c->dead = true;
	c->next = u->dead;
	u->dead = c;
}

void sup_free_dead(struct sup *u)
{
	while (u->dead) {
		struct cmd *c = u->dead;
		u->dead = c->next;
		free(c->argv);
		free(c->path);
		free(c);
	}
}

void sup_audit_refusal(struct sup *u, uint64_t id, pid_t tid, const char *path, int e,
                       const char *why)
{
	rd_audit(u->s->audit, "refused",
	         json_pack("{s:I, s:i, s:o, s:s, s:i, s:o}", "id", (json_int_t)id, "tid", tid,
	                   "path", rd_json_bytes(path), "errno", sup_errno_name(e), "errno_num", e,
	                   "reason", rd_json_bytes(why)));
}

int sup_resource_errno(int e)
{
	return e == EAGAIN || e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOSPC ? e : 0;
}

void sup_say_once(struct sup *u, uint64_t id, const char *path, const char *why, int e)
{
	uint64_t bit = e > 0 && e < 64 ? 1ULL << e : 1ULL;
	if (u->said_errnos & bit)
		return;
	u->said_errnos |= bit;
	fprintf(stderr, "runnerd: exec %llu (%s): %s%s\n", (unsigned long long)id, path, why,
	        sup_resource_errno(e) ? " (said once; commands fail with this errno until it "
	                                "passes)"
	                              : " (said once; the audit log has every one)");
}

void sup_audit_launch_failure(struct sup *u, uint64_t id, pid_t tid, const char *path,
                              int exec_errno, int e, const char *why)
{
	if (exec_errno) {
		/* The command's own exec failed: exactly the caller's errno. */
		rd_audit(u->s->audit, "exec_failed",
		         json_pack("{s:I, s:i, s:s, s:i, s:o}", "id", (json_int_t)id, "tid", tid,
		                   "errno", sup_errno_name(exec_errno), "errno_num", exec_errno,
		                   "reason", rd_json_bytes(why)));
		return;
	}
	sup_audit_refusal(u, id, tid, path, e, why);
	sup_say_once(u, id, path, why, e);
}

int sup_launch_errno(int exec_errno, int err)
{
	return exec_errno ? exec_errno : sup_resource_errno(err) ? err : EPERM;
}

void sup_reply(struct sup *u, uint64_t notif_id, int e)
{
	rd_notif_reply(u->listener, notif_id, -e, false);
}

void sup_release(struct sup *u, pid_t tid, uint64_t notif_id, int e)
{
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	rd_notif_reply(u->listener, notif_id, -e, false);
	int st;
	if (waitpid(tid, &st, __WALL) == tid && WIFSTOPPED(st))
		ptrace(PTRACE_DETACH, tid, 0, 0);
}

int sup_make_ctl(struct cmd *c)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	c->run.ctl_fd = sv[0];
	c->run.ctl_peer = sv[1];
	return 0;
}

void sup_close_peer(struct cmd *c)
{
	if (c->run.ctl_peer >= 0)
		close(c->run.ctl_peer);
	c->run.ctl_peer = -1;
}

void sup_stub_exit(struct sup *u, struct cmd *c, int status)
{
	struct run *r = &c->run;
	struct rd_stub_msg e = {.type = RD_STUB_EXIT, .value = status};
	if (r->ctl_fd < 0)
		return;
	r->exit_pending = false;
	if (send(r->ctl_fd, &e, sizeof(e), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
		/* A stub that has stopped once may be stopped now (runnerd is not told each
		 * time): woken, it reads the end; running, it only looks at its queue. */
		sup_stub_wake(u, c, true);
		return;
	}
	if (errno != EAGAIN)
		return;
	/* Its queue is full (a stub stopped, that a flood of stops filled): woken, it reads it,
	 * and the end goes out once there is room. */
	r->exit_pending = true;
	r->exit_status = status;
	sup_stub_wake(u, c, true);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = &r->ctl_src};
	epoll_ctl(u->epfd, EPOLL_CTL_MOD, r->ctl_fd, &ev);
}

bool sup_is_stub(struct sup *u, pid_t pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	return stat(p, &st) == 0 && st.st_dev == u->stub_dev && st.st_ino == u->stub_ino;
}

bool sup_stub_wake_due(const struct run *r)
{
	return r->ctl_fd >= 0 && (r->wake_for_end || r->continued_read < r->continued);
}

void sup_stub_wake(struct sup *u, struct cmd *c, bool for_end)
{
	struct run *r = &c->run;
	if (r->stub_pidfd < 0 || r->ctl_fd < 0)
		return;
	r->wake_for_end |= for_end;
	rd_pidfd_send_signal(r->stub_pidfd, SIGCONT, NULL, 0);
	if (r->wake_timer < 0) {
		r->wake_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (r->wake_timer < 0)
			return;
		r->wake_src = (struct src){.type = SRC_WAKE, .cmd = c};
		sup_watch(u, r->wake_timer, &r->wake_src);
	}
	struct itimerspec its = {.it_value = {0, 20 * 1000 * 1000},
	                         .it_interval = {0, 20 * 1000 * 1000}};
	timerfd_settime(r->wake_timer, 0, &its, NULL);
}

void sup_stub_say_exit(struct sup *u, struct cmd *c, int say_fd, const char *text, int status)
{
	if (c->run.ctl_fd < 0)
		return;
	struct rd_stub_msg m = {.type = RD_STUB_SAY};
	size_t len = strlen(text);
	m.len = (uint32_t)(len < RD_STUB_TEXT_MAX ? len : RD_STUB_TEXT_MAX);
	memcpy(m.text, text, m.len);
	/* The caller's stderr goes with the text, and the stub writes it there. Without it there
	 * is nothing to say, only the exit. */
	if (say_fd >= 0 &&
	    rd_send_buf_fds(c->run.ctl_fd, &m, sizeof(m), &say_fd, 1, MSG_DONTWAIT) < 0)
		sup_log(
		    u, "exec %llu: the stub could not be told why: its queue is full or it is gone",
		    (unsigned long long)c->id);
	sup_stub_exit(u, c, status);
}

int sup_caller_stderr(const struct req *q)
{
	for (size_t i = 0; i < q->t.n_fds; i++)
		if (q->t.fds[i].target == 2)
			return q->t.fds[i].fd;
	return -1;
}

int sup_arm_timer(struct sup *u, struct cmd *c, unsigned secs)
{
	struct run *r = &c->run;
	if (r->timer_fd < 0) {
		r->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (r->timer_fd < 0)
			return -errno;
		r->timer_src = (struct src){.type = SRC_TIMER, .cmd = c};
		sup_watch(u, r->timer_fd, &r->timer_src);
	}
	struct itimerspec its = {.it_value = {.tv_sec = secs}};
	return timerfd_settime(r->timer_fd, 0, &its, NULL) < 0 ? -errno : 0;
}

void sup_kill_sandbox(struct cmd *c)
{
	if (!c->run.reaped && c->run.sb.reaper_pidfd >= 0)
		rd_pidfd_send_signal(c->run.sb.reaper_pidfd, SIGKILL, NULL, 0);
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct sup_proc *)a)->pid, y = ((const struct sup_proc *)b)->pid;
	return (x > y) - (x < y);
}

/* /proc/PID/stat's state, ppid, thread count and start time (fields 3, 4, 20 and 22). */
static int read_stat(pid_t pid, struct sup_proc *out)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	const char *rp = len > 0 ? (buf[len] = 0, strrchr(buf, ')')) : NULL;
	int ppid;
	if (!rp || sscanf(rp,
	                  ") %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
	                  "%ld %*d %llu",
	                  &out->state, &ppid, &out->threads, &out->start) != 4)
		return -1;
	out->pid = pid;
	out->ppid = ppid;
	return 0;
}

int sup_proc_parent(pid_t pid, pid_t *ppid)
{
	struct sup_proc p;
	if (read_stat(pid, &p) < 0)
		return -1;
	*ppid = p.ppid;
	return 0;
}

int sup_proc_start(pid_t pid, unsigned long long *start)
{
	struct sup_proc p;
	if (read_stat(pid, &p) < 0)
		return -1;
	*start = p.start;
	return 0;
}

int sup_proc_state(pid_t pid, char *state)
{
	struct sup_proc p;
	if (read_stat(pid, &p) < 0)
		return -1;
	*state = p.state;
	return 0;
}

bool sup_proc_running(const struct sup_proc *p)
{
	/* A state Z with threads left: its leader exited first, the rest runs on (a zombie alone
	 * counts 1). */
	return p->state != 'X' && (p->state != 'Z' || p->threads > 1);
}

struct sup_procs sup_read_procs(void)
{
	struct sup_procs t = {0};
	size_t cap = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		struct sup_proc one;
		if (read_stat(atoi(e->d_name), &one) < 0)
			continue;
		if (t.n == cap) {
			cap = cap ? 2 * cap : 256;
			struct sup_proc *more = realloc(t.p, cap * sizeof(*t.p));
			if (!more)
				break;
			t.p = more;
		}
		t.p[t.n++] = one;
	}
	if (d)
		closedir(d);
	if (t.n)
		qsort(t.p, t.n, sizeof(*t.p), by_pid);
	return t;
}

pid_t sup_procs_parent(const struct sup_procs *t, pid_t pid)
{
	struct sup_proc key = {.pid = pid};
	const struct sup_proc *at = bsearch(&key, t->p, t->n, sizeof(*t->p), by_pid);
	return at ? at->ppid : 0;
}

long sup_procs_below(const struct sup_procs *t, pid_t reaper)
{
	long count = 0;
	for (size_t i = 0; i < t->n; i++) {
		pid_t up = t->p[i].ppid;
		/* A chain of parents is short; the bound only guards against a table read while
		 * processes came and went. */
		for (int depth = 0; up > 1 && up != reaper && depth < 256; depth++)
			up = sup_procs_parent(t, up);
		count += up == reaper;
	}
	return count;
}
