/* The reaper: pid 1 of every sandbox, and the command it starts. It runs in a child of runnerd
 * (a clone of the zygote, runnerd-zygote, or of runnerd itself), and from then on hears from
 * runnerd only through the fds it was given. */
#include "lib/fdpass.h"
#include "lib/raw_syscall.h"
#include "lib/strv.h"
#include "lib/stub_proto.h"
#include "lib/syscalls.h"
#include "sandbox/dircache.h"
#include "sandbox/launch_internal.h"
#include "sandbox/view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>

/* Set by the command's side (before its exec, in the memory it shares with the reaper) when it
 * gives up: its end is then runnerd's to report, with the reason it wrote to the setup pipe. */
static volatile int command_failed;

/* A container's seccomp filters (rd_confine), oldest first: every command loads them last. */
static const struct sock_fprog *kept_filters;
static size_t n_kept_filters;

/* The agent's AppArmor profile (rd_confine): every command execs under it. "" or NULL: none. */
static const char *kept_apparmor;

void rd_reaper_keep_confine(const struct sock_fprog *filters, size_t n, const char *apparmor)
{
	kept_filters = filters;
	n_kept_filters = n;
	kept_apparmor = apparmor;
}

/* The command's next exec under the AppArmor profile (its onexec label: what libapparmor's
 * aa_change_onexec writes). The reaper is unconfined, which may change to any profile, also
 * under no_new_privs. */
static int apparmor_onexec(const char *profile)
{
	char buf[300];
	int n = snprintf(buf, sizeof(buf), "exec %s", profile);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	int fd = open("/proc/self/attr/apparmor/exec", O_WRONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = open("/proc/self/attr/exec", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, buf, (size_t)n);
	int e = w == n ? 0 : w < 0 ? errno : EIO;
	close(fd);
	return -e;
}

static _Noreturn void fail(int fd, int stage, const char *what, int e)
{
	command_failed = 1;
	struct setup_msg m = {.stage = stage, .err = e};
	snprintf(m.what, sizeof(m.what), "%s", what);
	ssize_t r = write(fd, &m, sizeof(m));
	(void)r;
	_exit(stage == STAGE_EXEC ? 127 : 126);
}

/* The kernel's struct sigaction on x86_64 and arm64 (not glibc's). */
struct k_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* The bounding set (needs CAP_SETPCAP) and the ambient set emptied, by the reaper: the command
 * inherits both, and drops its process sets itself. Every capability the kernel knows, up to
 * its first EINVAL, not just those of the headers runnerd was built with. */
static int drop_caps_bounding(void)
{
	for (unsigned long c = 0;; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past the kernel's last capability */
			return -errno;
		}
	if (cap_reset_ambient() < 0)
		return -errno;
	return 0;
}

/* The signals in `which` get `handler` (SIG_DFL or SIG_IGN, which need no restorer). Raw
 * rt_sigaction: glibc refuses its two internal signals (32, 33), whose dispositions the caller
 * may still have inherited as ignored. */
static void set_dispositions(uint64_t which, __sighandler_t handler)
{
	for (int sig = 1; sig <= 64; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || !(which & (1ULL << (sig - 1))))
			continue;
		struct k_sigaction ksa = {.handler = handler};
		syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(uint64_t));
	}
}

/* A caller's fd that cannot be given its number: one above runnerd's own fd limit (the caller
 * may hold one, from before its limit was lowered) is named, with what to do about it. */
static _Noreturn void fail_placing(int err_fd, int target, int e)
{
	struct rlimit l;
	char what[96];
	if (e == EBADF && getrlimit(RLIMIT_NOFILE, &l) == 0 && (rlim_t)target >= l.rlim_max) {
		snprintf(what, sizeof(what),
		         "the caller's fd %d is above runnerd's hard fd limit, %llu (ulimit -Hn)",
		         target, (unsigned long long)l.rlim_max);
		fail(err_fd, STAGE_SETUP, what, EMFILE);
	}
	fail(err_fd, STAGE_SETUP, "placing the caller's fds", e);
}

/* Closes the numbers in [lo, end) but those in keep (of which -1 is none). Raw: also used
 * where the reaper shares errno with the command (raw_syscall.h). */
static void close_but(uint64_t lo, uint64_t end, const int *keep, size_t n_keep)
{
	while (lo < end) {
		uint64_t next = end;
		for (size_t k = 0; k < n_keep; k++)
			if (keep[k] >= 0 && (uint64_t)keep[k] >= lo && (uint64_t)keep[k] < next)
				next = (uint64_t)keep[k];
		if (next > lo)
			sys3(SYS_close_range, (unsigned)lo, (unsigned)(next - 1), 0);
		lo = next + 1;
	}
}

#define ALL_FDS ((uint64_t)UINT_MAX + 1)

/* Runs in a CLONE_VM child of the reaper (shared memory, a stack of its own, separate fd
 * table, signal handlers, cwd and credentials) while the reaper goes on: no allocation, and
 * of glibc's state only errno, which the reaper leaves alone meanwhile; what it needs was
 * prepared by the reaper, which changes none of it. Raw set*id syscalls: glibc's wrappers
 * would broadcast to threads it believes the (shared) process has. */
/* A process group of the plan's own for a command whose caller led neither its group nor its
 * session (RD_PGRP_MEMBER), in a sandbox that ran a command before. The first plan's command
 * is a member of pid 1's group; but a group is reachable after its members' end: a command
 * that arms F_SETOWN (or FIOSETOWN, SIOCSPGRP) with pid 1's group and O_ASYNC on an fd it
 * shares with its caller (an inherited pipe) has the kernel signal that group on the fd's
 * every read, whatever signal it chose, SIGKILL and SIGSTOP too. Pid 1 is spared (the kernel
 * forces no signal on a namespace's init, and the reaper takes the others); a later command
 * in its group would not be. So a later plan's command joins a group made for it: its leader,
 * a child that makes the group and exits at once, is reaped once the command has joined, so
 * that the command is in the group without leading it (a setsid() of its own still works,
 * as without runnerd) and nothing of it is left for ps to show. The group ends with its last
 * member. Exit signal 0: no SIGCHLD, and wait4 of the command's own children (without
 * __WCLONE) never takes it. */
static _Alignas(16) char group_stack[16384];

static int group_start(void *arg)
{
	(void)arg;
	return sys2(SYS_setpgid, 0, 0) == 0 ? 0 : 1;
}

static int join_own_group(void)
{
	pid_t leader =
	    clone(group_start, group_stack + sizeof(group_stack), CLONE_VM | CLONE_VFORK, NULL);
	if (leader < 0)
		return -errno;
	int st = 0, e = 0;
	if (setpgid(0, leader) < 0)
		e = errno;
	if (wait4(leader, &st, __WCLONE, NULL) != leader)
		e = e ? e : errno;
	if (!e && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		e = EPERM;
	return -e;
}

static _Noreturn void command_main(const struct rd_launch_plan *p, int err_fd, int *hi,
                                   const size_t *order, cap_t empty, int tty, bool again,
                                   bool cwd_shadow)
{
	/* Dispositions as after the caller's exec: what it ignored stays ignored. Every other
	 * one is the default already (the reaper's, set_dispositions). */
	set_dispositions(p->h.inh.sig_ignored, SIG_IGN);

	/* The caller's fds at their numbers, in place: a number taken by the fd another one comes
	 * from, or by one the setup still needs (the error pipe, the cwd, the file to exec), is
	 * moved out of the way first, to the lowest free number (which may be moved again later).
	 * So at most one fd more than the caller's and ours is open at any time, and none above
	 * the caller's: a caller near its fd limit, or with an fd above it, still has its exec.
	 * src[i] is where fds[i] is now (several may share one: the terminal's slave); the three
	 * after them are the setup's own, wanted at no number in particular. */
	int *src = hi;
	size_t n = p->h.n_fds;
	for (size_t i = 0; i < n; i++)
		src[i] = p->fds[i].fd;
	src[n] = err_fd;
	src[n + 1] = p->cwd_fd;
	src[n + 2] = p->h.exec_via == RD_EXEC_OWN ? p->own_exec_fd : -1;
	for (size_t i = n; i < n + 3; i++)
		if (src[i] >= 0 && fcntl(src[i], F_SETFD, FD_CLOEXEC) < 0)
			fail(err_fd, STAGE_SETUP, "placing the caller's fds", errno);
	for (size_t i = 0; i < n; i++) {
		int t = p->fds[i].target;
		if (src[i] == t) {
			if (fcntl(t, F_SETFD, 0) < 0)
				fail(src[n], STAGE_SETUP, "placing the caller's fds", errno);
			continue;
		}
		int away = -1;
		for (size_t j = i + 1; j < n + 3; j++)
			if (src[j] == t) {
				if (away < 0 && (away = fcntl(t, F_DUPFD_CLOEXEC, 0)) < 0)
					fail(src[n], STAGE_SETUP, "placing the caller's fds",
					     errno);
				src[j] = away;
			}
		if (dup2(src[i], t) < 0)
			fail_placing(src[n], t, errno);
		src[i] = t;
	}
	err_fd = src[n];
	int cwd = src[n + 1];
	int exec_fd = p->h.exec_via == RD_EXEC_CWD      ? AT_FDCWD
	              : p->h.exec_via == RD_EXEC_TARGET ? p->h.exec_fd
	                                                : src[n + 2];
	/* Every number but the targets and the setup's own is closed (order: the targets in
	 * ascending order, sorted by the reaper); the setup's are closed by the exec. */
	uint64_t from = 0;
	for (size_t k = 0; k < n; k++) {
		unsigned t = (unsigned)p->fds[order[k]].target;
		close_but(from, t, src + n, 3);
		from = (uint64_t)t + 1;
	}
	close_but(from, ALL_FDS, src + n, 3);
	/* The caller's cwd by its path, looked up in the sandbox's own mounts: entered by the fd
	 * alone, from runnerd's mount namespace, the kernel would report it "(unreachable)" (musl's
	 * getcwd fails). A directory that was removed (no path leads to it) is an empty one. A
	 * directory that is still there but that its path does not lead to in the sandbox is
	 * hidden from the command (under a mask, in the machine's /dev, on a file system mounted
	 * after the session started): its fd would open it to the command through ".". */
	struct stat cwd_st, here;
	if (fstat(cwd, &cwd_st) < 0)
		fail(err_fd, STAGE_SETUP, "the caller's cwd", errno);
	/* A shadow directory (view.h) is the sandbox's own stand-in for the caller's: entered. */
	if (!p->cwd_path[0] || chdir(p->cwd_path) < 0 || stat(".", &here) < 0 ||
	    (!cwd_shadow && (cwd_st.st_dev != here.st_dev || cwd_st.st_ino != here.st_ino))) {
		if (cwd_st.st_nlink != 0)
			fail(err_fd, STAGE_SETUP,
			     "the caller's cwd is hidden in the sandbox (under a mask, in the "
			     "machine's /dev, or mounted after the session started)",
			     EACCES);
		/* Removed: an empty directory of the sandbox's own stands for it. Its fd is of
		 * runnerd's mount namespace, whose ".." leads to the machine's mounts, unmasked
		 * and writable. */
		if (chdir(RD_VIEW_EMPTY_DIR) < 0)
			fail(err_fd, STAGE_SETUP, "entering the caller's cwd (removed)", errno);
	}
	if (p->h.pgrp_mode == RD_PGRP_SESSION && setsid() < 0)
		fail(err_fd, STAGE_SETUP, "setsid", errno);
	if (p->h.pgrp_mode == RD_PGRP_OWN && setpgid(0, 0) < 0)
		fail(err_fd, STAGE_SETUP, "setpgid", errno);
	int r;
	bool own_group = p->h.pgrp_mode == RD_PGRP_OWN;
	if (p->h.pgrp_mode == RD_PGRP_MEMBER && again) {
		if ((r = join_own_group()) < 0)
			fail(err_fd, STAGE_SETUP, "joining a process group of its own", -r);
		own_group = true;
	}
	/* Its terminal: the controlling terminal of its own session, or its group the foreground
	 * of the sandbox's session (whose leader, the reaper, took the terminal). Every signal is
	 * still blocked here, so SIGTTOU does not stop a group that is not in the foreground. */
	if (tty >= 0 && p->h.pgrp_mode == RD_PGRP_SESSION && ioctl(tty, TIOCSCTTY, 0) < 0)
		fail(err_fd, STAGE_SETUP, "taking its terminal", errno);
	pid_t group = (pid_t)syscall(SYS_getpgid, 0);
	if (tty >= 0 && own_group && ioctl(tty, TIOCSPGRP, &group) < 0)
		fail(err_fd, STAGE_SETUP, "taking the foreground of its terminal", errno);

	/* The bounding set is empty already: the reaper's, dropped before the plan came. */
	/* With runnerd's ids alone mapped, setgroups is denied (the map was written without
	 * privilege); the caller's groups are runnerd's, which the command inherits. */
	if (!p->h.single_ids && syscall(SYS_setgroups, p->h.n_groups, p->groups) < 0)
		fail(err_fd, STAGE_SETUP, "setting the caller's groups", errno);
	if (syscall(SYS_setresgid, p->h.inh.gid[0], p->h.inh.gid[1], p->h.inh.gid[2]) < 0)
		fail(err_fd, STAGE_SETUP, "setting the caller's gids", errno);
	if (syscall(SYS_setresuid, p->h.inh.uid[0], p->h.inh.uid[1], p->h.inh.uid[2]) < 0)
		fail(err_fd, STAGE_SETUP, "setting the caller's uids", errno);
	/* The container's AppArmor profile, at the exec below, as the container's processes. */
	if (kept_apparmor && kept_apparmor[0] && (r = apparmor_onexec(kept_apparmor)) < 0)
		fail(err_fd, STAGE_SETUP, "putting the command under the agent's AppArmor profile",
		     -r);
	if (cap_set_proc(empty) < 0)
		fail(err_fd, STAGE_SETUP, "dropping capabilities", errno);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(err_fd, STAGE_SETUP, "setting no_new_privs", errno);
	if (p->filter) {
		struct sock_fprog prog = {.len = (unsigned short)p->h.filter_len,
		                          .filter = (struct sock_filter *)p->filter};
		if (rd_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			fail(err_fd, STAGE_SETUP, "loading the command's seccomp filter", errno);
	}
	/* The container's own filters, whatever the rule says of ours: its confinement, which
	 * the command keeps as the agent does. */
	for (size_t i = 0; i < n_kept_filters; i++)
		if (rd_seccomp(SECCOMP_SET_MODE_FILTER, 0, (void *)&kept_filters[i]) < 0)
			fail(err_fd, STAGE_SETUP, "loading the container's seccomp filter", errno);
	umask(p->h.inh.umask);
	/* The caller's rlimits, with a rule's caps applied. One we cannot set (raising a hard
	 * limit needs privilege we dropped) stays runnerd's, never zero; but a limit left above
	 * what was asked would drop a cap, so that stops the command. */
	for (int res = 0; res < RLIM_NLIMITS; res++) {
		struct rlimit now;
		const struct rlimit *want = &p->h.inh.rlim[res];
		if (!p->h.inh.have_rlim[res] || setrlimit(res, want) == 0)
			continue;
		if (getrlimit(res, &now) < 0 || now.rlim_cur > want->rlim_cur ||
		    now.rlim_max > want->rlim_max)
			fail(err_fd, STAGE_SETUP, "lowering a resource limit",
			     errno ? errno : EPERM);
	}

	/* The file the decision was made on, still under this name or fd? A rename in between,
	 * or another thread of the caller dup2()ing over the fd number it exec's, must not swap
	 * in another program (and with it the rule's grants). */
	if (p->h.expect_ino) {
		struct stat st;
		if (fstatat(exec_fd, p->exec_path, &st,
		            p->h.exec_flags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) < 0 ||
		    st.st_dev != p->h.expect_dev || st.st_ino != p->h.expect_ino)
			fail(err_fd, STAGE_SETUP,
			     "the file changed between the decision and the exec", EAGAIN);
	}
	/* The mask, exactly, for the same reason: glibc's sigprocmask drops 32 and 33. */
	uint64_t mask = p->h.inh.sig_blocked;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, sizeof(mask));
	rd_execveat(exec_fd, p->exec_path, p->argv, p->envp, p->h.exec_flags);
	fail(err_fd, STAGE_EXEC, "exec", errno);
}

struct command_args {
	const struct rd_launch_plan *p;
	int err_fd;
	int *hi;             /* room for the fds' places while they move */
	const size_t *order; /* the fds' indices, by target number */
	cap_t empty;
	int tty;         /* the target number of the command's terminal, or -1 */
	bool again;      /* the sandbox ran a command before */
	bool cwd_shadow; /* the caller's cwd is a shadow directory of the view's */
};

static int command_start(void *arg)
{
	const struct command_args *a = arg;
	command_main(a->p, a->err_fd, a->hi, a->order, a->empty, a->tty, a->again, a->cwd_shadow);
}

/* The command's stack until its exec: mapped ahead of time, touched only as used. */
#define COMMAND_STACK (256 * 1024)

/* Receive up to want fds in one packet, led by their count; returns how many came, or -1. */
static int recv_fds(int sock, int *fds, int want)
{
	uint32_t count = 0;
	size_t got = 0;
	if (rd_recv_buf_fds(sock, &count, sizeof(count), fds, (size_t)want, &got, 0) !=
	        sizeof(count) ||
	    count != got)
		return -1;
	return (int)count;
}

/* The first packet of a plan, which holds the plan itself unless it is large; the plan's
 * pointers point into it from then on. */
static _Alignas(16) char plan_buf[PLAN_INLINE_MAX];

/* What the plan's pointers point into besides plan_buf: its memfd mapped, and the arena
 * rd_plan_unpack made; released once the command has ended, before the sandbox takes another
 * plan. */
static void *plan_map, *plan_arena;
static size_t plan_map_size;

static void release_plan(void)
{
	if (plan_map)
		munmap(plan_map, plan_map_size);
	free(plan_arena);
	plan_map = plan_arena = NULL;
}

/* In the reaper: the plan runnerd sent (sandbox/plan.h), in its first packet or the mapped
 * memfd, with its fds. A sandbox that ran a command before (again) finds in its queue, ahead
 * of the plan, any mark runnerd sent for that command after its end: skipped, but for the
 * session's end. Its setup pipe comes with the plan: until then, a failure is told by the
 * exit alone. */
static void receive_plan(int sock, int err_fd, struct rd_launch_plan *p, bool again)
{
	int first[FDS_PER_MSG];
	size_t nfirst = 0, k = 0;
	ssize_t len;
	uint32_t mark;
	while ((len = rd_recv_buf_fds(sock, plan_buf, sizeof(plan_buf), first, FDS_PER_MSG, &nfirst,
	                              0)) == sizeof(mark) &&
	       nfirst == 0 && again) {
		memcpy(&mark, plan_buf, sizeof(mark));
		if (mark == RD_REAPER_END_MARK)
			_exit(0);
	}
	if (len < (ssize_t)sizeof(uint32_t) || nfirst < 1)
		fail(err_fd, STAGE_SETUP, "receiving the plan", EPROTO);
	const char *blob = plan_buf;
	size_t size = (size_t)len;
	if (len == sizeof(uint32_t)) {
		/* Too large for a packet: in a memfd, the first fd. */
		struct stat st;
		uint32_t zero;
		memcpy(&zero, plan_buf, sizeof(zero));
		if (zero != 0 || fstat(first[0], &st) < 0)
			fail(err_fd, STAGE_SETUP, "receiving the plan", EPROTO);
		size = (size_t)st.st_size;
		blob = mmap(NULL, size, PROT_READ, MAP_PRIVATE, first[0], 0);
		if (blob == MAP_FAILED)
			fail(err_fd, STAGE_SETUP, "mapping the plan", errno);
		plan_map = (void *)blob;
		plan_map_size = size;
		close(first[k++]);
	}
	if (rd_plan_unpack(blob, size, p, &plan_arena) < 0)
		fail(err_fd, STAGE_SETUP, "receiving the plan", EPROTO);
	/* An fd that did not come stops here rather than anywhere later. */
	size_t lead = rd_plan_lead_fds(&p->h);
	if (nfirst - k < lead || nfirst - k - lead > p->h.n_fds)
		fail(err_fd, STAGE_SETUP, "receiving the plan", EPROTO);
	p->cwd_fd = first[k++];
	if (p->h.has_stub_ctl)
		p->stub_ctl_fd = first[k++];
	if (p->h.exec_via == RD_EXEC_OWN)
		p->own_exec_fd = first[k++];
	if (p->h.has_setup_fd)
		p->setup_fd = first[k++];
	/* The first plan's setup pipe is the sandbox's own; a later one's comes with it. */
	if (p->h.has_setup_fd)
		err_fd = p->setup_fd;
	if (!p->h.has_setup_fd != !again)
		fail(err_fd, STAGE_SETUP, "receiving the plan", EPROTO);
	struct rd_fd_map *fds = (struct rd_fd_map *)p->fds;
	uint32_t got = 0;
	while (k < nfirst)
		fds[got++].fd = first[k++];
	while (got < p->h.n_fds) {
		int chunk[FDS_PER_MSG];
		int cnt = recv_fds(sock, chunk, FDS_PER_MSG);
		if (cnt <= 0)
			fail(err_fd, STAGE_SETUP, "receiving the caller's fds", EPROTO);
		for (int i = 0; i < cnt && got < p->h.n_fds; i++)
			fds[got++].fd = chunk[i];
	}
}

/* A rule's rlimit caps (the sandbox keys of type RD_BOX_RLIMIT): the command gets the lower of
 * the caller's limit and the cap; a limit the caller's could not be read counts as infinite. */
static void cap_rlimits(struct rd_plan_head *h)
{
	for (size_t k = 0; k < RD_BOX_NKEYS; k++) {
		uint64_t cap = h->box.v[k];
		if (rd_box_keys[k].type != RD_BOX_RLIMIT || !cap)
			continue;
		int res = rd_box_keys[k].resource;
		struct rlimit *l = &h->inh.rlim[res];
		if (!h->inh.have_rlim[res])
			*l = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY};
		if (l->rlim_cur > cap)
			l->rlim_cur = cap;
		if (l->rlim_max > cap)
			l->rlim_max = cap;
		h->inh.have_rlim[res] = true;
	}
}

/* Is st, found at a masked path just after its mask was mounted, that mask: the view's empty
 * directory (empty) or the null device? */
static bool is_mask(const struct stat *st, const struct stat *empty)
{
	if (S_ISCHR(st->st_mode))
		return major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
	return st->st_dev == empty->st_dev && st->st_ino == empty->st_ino;
}

/* Whether an exception lies in the masked directory path ("!" entries of masks, runnerd's
 * rd_mask_list). */
static bool exceptions_in(const char *path, char *const *masks, size_t n_masks)
{
	for (size_t i = 0; i < n_masks; i++)
		if (masks[i][0] == '!' && rd_path_within(masks[i] + 1, path) &&
		    strcmp(masks[i] + 1, path) != 0)
			return true;
	return false;
}

/* A masked directory with exceptions: a read-only tmpfs of its own over it, holding only the
 * exceptions, each the real one bound in. An exception is taken before the mask covers it,
 * found without a symlink on the way (a command may have planted one to show another path);
 * one that is missing, or has a symlink, is left out. Returns the new mount's root fd, or -1
 * with errno. dir: an O_PATH fd of the directory. */
static int mask_with_exceptions(int dir, const char *path, char *const *masks, size_t n_masks)
{
	size_t plen = strlen(path);
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	int mnt = -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", "64k", 0) == 0 &&
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	int e = errno;
	close(fs);
	if (mnt < 0) {
		errno = e;
		return -1;
	}
	for (size_t i = 0; i < n_masks; i++) {
		const char *x = masks[i] + 1;
		if (masks[i][0] != '!' || !rd_path_within(x, path) || !x[plen])
			continue;
		const char *rel = x + plen + 1;
		struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
		                       .resolve = RESOLVE_NO_SYMLINKS};
		int real = rd_openat2(dir, rel, &how);
		struct stat st;
		if (real < 0 || fstat(real, &st) < 0 || S_ISLNK(st.st_mode)) {
			if (real >= 0)
				close(real);
			continue;
		}
		int tree = open_tree(
		    real, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
		close(real);
		if (tree < 0)
			continue;
		/* Its mount point, and the directories on the way, in the tmpfs. */
		char buf[PATH_MAX];
		int r = snprintf(buf, sizeof(buf), "%s", rel) < (int)sizeof(buf) ? 0 : -1;
		for (char *c = buf; r == 0 && (c = strchr(c, '/')); c++) {
			*c = '\0';
			if (mkdirat(mnt, buf, 0755) < 0 && errno != EEXIST)
				r = -1;
			*c = '/';
		}
		if (r == 0) {
			if (S_ISDIR(st.st_mode))
				r = mkdirat(mnt, buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
			else
				r = mknodat(mnt, buf, S_IFREG | 0644, 0) < 0 && errno != EEXIST ? -1
				                                                                : 0;
		}
		if (r == 0)
			r = move_mount(tree, "", mnt, buf, MOVE_MOUNT_F_EMPTY_PATH);
		e = errno;
		close(tree);
		if (r < 0) {
			close(mnt);
			errno = e;
			return -1;
		}
	}
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(mnt, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0 ||
	    move_mount(mnt, "", dir, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		e = errno;
		close(mnt);
		errno = e;
		return -1;
	}
	return mnt;
}

/* Secret stores out of sight, in this mount namespace only. A mask that cannot be put in
 * place stops the command: it never runs with a secret it was meant not to see.
 *
 * seen (a spare's preset, else NULL) records what each path was when it was decided on, for
 * runnerd's check before the spare is used: absent, from the same stat that skipped it (a
 * file that appears later must not pass as what was there), or the mask itself, confirmed
 * after the mount (a path swapped under the mount must not pass either). */
static void apply_masks(char *const *masks, size_t n_masks, int err_fd, struct preset_seen *seen)
{
	struct stat empty;
	if (n_masks && stat(RD_VIEW_EMPTY_DIR, &empty) < 0)
		fail(err_fd, STAGE_SETUP, RD_VIEW_EMPTY_DIR, errno);
	struct rd_dircache dirs = {0};
	for (size_t i = 0; i < n_masks; i++) {
		const char *path = masks[i];
		/* An exception: made with the mask of its directory. */
		if (path[0] == '!') {
			if (seen)
				seen[i].absent = 1;
			continue;
		}
		/* In a directory that is missing: nothing there to hide (dircache.h). */
		if (rd_dircache_get(&dirs, path) == 1) {
			if (seen)
				seen[i].absent = 1;
			continue;
		}
		/* The very file at the path, not where a symlink there leads: a command may plant
		 * one at a masked path that did not exist when the session started (one that did
		 * is masked where it led then, runnerd's pin). A symlink, a path that cannot be
		 * reached (a loop, a directory no one may search), or none: nothing to hide. The
		 * mount goes on what was opened, by /proc/self/fd, so that nothing swapped in
		 * between is covered instead. */
		int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd < 0 && errno != ENOENT && errno != ENOTDIR && errno != ELOOP &&
		    errno != EACCES)
			fail(err_fd, STAGE_SETUP, path, errno);
		size_t dlen = rd_dircache_dirlen(path);
		if (fd < 0 && errno == ENOENT && rd_dircache_get(&dirs, path) < 0 &&
		    rd_dircache_worth(masks, n_masks, i, dlen)) {
			char dir[4096];
			if (dlen && dlen < sizeof(dir)) {
				memcpy(dir, path, dlen);
				dir[dlen] = '\0';
				int d = open(dir, O_PATH | O_CLOEXEC);
				rd_dircache_put(&dirs, path, d < 0 && errno == ENOENT);
				if (d >= 0)
					close(d);
			}
		}
		if (fd < 0 || fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			if (seen)
				seen[i].absent = 1;
			continue;
		}
		char at[32];
		snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
		int r, e, own = -1;
		struct stat own_st;
		if (S_ISDIR(st.st_mode) && exceptions_in(path, masks, n_masks)) {
			own = mask_with_exceptions(fd, path, masks, n_masks);
			r = own < 0 || fstat(own, &own_st) < 0 ? -1 : 0;
		} else {
			r = mount(S_ISDIR(st.st_mode) ? RD_VIEW_EMPTY_DIR : "/dev/null", at, NULL,
			          MS_BIND, NULL);
		}
		e = errno;
		close(fd);
		if (own >= 0)
			close(own);
		/* A spare: gone between the open and the mount, so recorded absent; if it comes
		 * back, runnerd's check finds it (its directory is watched) and does not use this
		 * spare. Only if the path itself is gone: masking with exceptions looks up names
		 * inside it, and one of those gone (no watch sees in there) must not leave the
		 * directory unmasked in a spare taken for masked. */
		if (r < 0 && seen && (e == ENOENT || e == ENOTDIR) && lstat(path, &st) < 0 &&
		    (errno == ENOENT || errno == ENOTDIR)) {
			seen[i].absent = 1;
			continue;
		}
		if (r < 0) {
			char what[96];
			snprintf(what, sizeof(what), "masking %s", path);
			fail(err_fd, STAGE_SETUP, what, e);
		}
		if (!seen)
			continue;
		if (stat(path, &st) < 0 ||
		    (own < 0 ? !is_mask(&st, &empty)
		             : st.st_dev != own_st.st_dev || st.st_ino != own_st.st_ino)) {
			char what[96];
			snprintf(what, sizeof(what), "%s changed while it was masked", path);
			fail(err_fd, STAGE_SETUP, what, ESTALE);
		}
		seen[i] = (struct preset_seen){.dev = st.st_dev, .ino = st.st_ino};
	}
}

/* network "none": a network namespace of the sandbox's own, where only the loopback
 * interface exists; it is brought up so that programs that talk to themselves still work. */
static void no_network(int err_fd)
{
	if (unshare(CLONE_NEWNET) < 0)
		fail(err_fd, STAGE_SETUP, "creating a network namespace", errno);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		fail(err_fd, STAGE_SETUP, "reading lo's flags", errno);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		fail(err_fd, STAGE_SETUP, "bringing lo up", errno);
	close(s);
}

static int preset_send(int sock, const struct preset_seen *seen, uint32_t n, int root)
{
	struct iovec iov[2] = {{.iov_base = &n, .iov_len = sizeof(n)},
	                       {.iov_base = (void *)seen, .iov_len = sizeof(*seen) * n}};
	return rd_send_fds(sock, iov, 2, &root, 1, 0);
}

/* In a spare's reaper, before any plan: the masks and network most commands get, then
 * no_new_privs and the command filter on the reaper itself, which the command inherits. The
 * filter may refuse mount and new namespaces ("strict"), so it comes after everything that
 * needs them; what the reaper does afterwards (vfork, set*id, capset, prctl, prlimit,
 * setsid, setpgid, dup2, execveat, rt_sigtimedwait, wait4, kill) it allows. */
static struct preset_seen *apply_preset(const struct rd_sandbox_preset *pre, int plan_fd,
                                        int err_fd)
{
	struct preset_seen *seen = calloc(pre->n_masks + 1, sizeof(*seen));
	if (!seen)
		fail(err_fd, STAGE_SETUP, "out of memory", ENOMEM);
	apply_masks(pre->masks, pre->n_masks, err_fd, seen);
	if (pre->net_none)
		no_network(err_fd);
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		fail(err_fd, STAGE_SETUP, "opening the sandbox's root", errno);
	if (pre->filter) {
		struct sock_fprog prog = {.len = pre->filter_len,
		                          .filter = (struct sock_filter *)pre->filter};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			fail(err_fd, STAGE_SETUP, "setting no_new_privs", errno);
		if (rd_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			fail(err_fd, STAGE_SETUP, "loading the command's seccomp filter", errno);
	}
	/* Sent last: a report means every step above went through. */
	if (preset_send(plan_fd, seen, (uint32_t)pre->n_masks, root) < 0)
		fail(err_fd, STAGE_SETUP, "reporting the preset", errno);
	close(root);
	return seen; /* sent again with each later plan's wait (reset) */
}

static bool same_strings(char *const *a, char *const *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

bool rd_sandbox_preset_fits(const struct rd_sandbox_preset *pre, const struct rd_launch_plan *p)
{
	bool net_none = rd_box_is(&p->h.box, RD_BOX_NETWORK, RD_NET_NONE);
	/* A rule's own view, the layers taken off, or git's own git go in before the masks, which
	 * a spare has placed already. */
	if (p->h.n_write || p->h.n_protect || p->h.no_layers || p->h.n_gates)
		return false;
	if (net_none != pre->net_none || p->h.n_masks != pre->n_masks ||
	    !same_strings(p->masks, pre->masks, p->h.n_masks))
		return false;
	if (!p->filter || !pre->filter)
		return !p->filter && !pre->filter;
	return p->h.filter_len == pre->filter_len &&
	       memcmp(p->filter, pre->filter, sizeof(*p->filter) * p->h.filter_len) == 0;
}

/* The command's end, to runnerd and then to the stub (if runnerd gave us its control socket
 * and the command started: a command that failed before its exec is runnerd's to report).
 * runnerd first, so that when the stub has gone, runnerd finds why. If the stub cannot be
 * told (its queue full), a second report says so, and runnerd tells it. */
static uint32_t report_end(const struct rd_launch_plan *p, int status_fd, int st, bool timed_out,
                           bool stub_stopped, bool reusable)
{
	bool tell = p->h.has_stub_ctl && !command_failed;
	struct rd_reaper_report rep = {.status = st};
	if (stub_stopped)
		rep.flags |= RD_REPORT_STUB_STOPPED;
	/* Anything left (every orphan of the namespace is pid 1's child by now: the kernel
	 * reparents a process's children before it tells its parent of its end)? */
	siginfo_t si;
	if (sys5(SYS_waitid, P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, 0) == 0)
		rep.flags |= RD_REPORT_LEFT;
	else if (reusable && !command_failed)
		rep.flags |= RD_REPORT_REUSE;
	if (timed_out)
		rep.flags |= RD_REPORT_TIMEOUT;
	struct rd_stub_msg m = {.type = RD_STUB_EXIT, .value = timed_out ? 124 << 8 : st};
	/* A stopped stub reads the end only once runnerd wakes it, which runnerd does on this
	 * report: the end goes to it first, so that the wake-up finds it queued. (A stub gone,
	 * EPIPE, needs telling no more.) */
	if (tell && stub_stopped) {
		tell = false;
		if (send(p->stub_ctl_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0 ||
		    errno == EPIPE || errno == ECONNRESET)
			rep.flags |= RD_REPORT_STUB_TOLD;
	} else if (tell) {
		rep.flags |= RD_REPORT_STUB_TOLD;
	}
	if (write(status_fd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(1);
	if (tell && send(p->stub_ctl_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    errno != EPIPE && errno != ECONNRESET) {
		rep.flags &= ~(uint32_t)RD_REPORT_STUB_TOLD;
		if (write(status_fd, &rep, sizeof(rep)) != sizeof(rep))
			_exit(1);
	}
	return rep.flags;
}

/* What the stub was told of the command's stops (told: the signal it stopped by, 0 for
 * running) and what it should be told (want). */
struct stub_state {
	int told, want;
	int last_sig; /* the signal of the command's last stop */
};

/* Is the command stopped by a signal (state T in /proc/PID/stat)? Read when wait4 says it
 * stopped or went on: the order of those reports is not the order of the events (a stop
 * reported before a continuation that came before it). The file is opened at the first such
 * report, not before (a command that never stops costs nothing), and kept in *fd: the pid
 * stays the command's until the reaper reaps it. Raw calls: the reaper may share its memory
 * and errno with the command still, before its exec. */
static bool is_stopped(pid_t child, int *fd)
{
	char buf[512];
	if (*fd < 0) {
		char path[32] = "/proc/", digits[12];
		int nd = 0, at = 6;
		for (unsigned v = (unsigned)child; v || !nd; v /= 10)
			digits[nd++] = (char)('0' + v % 10);
		while (nd)
			path[at++] = digits[--nd];
		memcpy(path + at, "/stat", 6);
		*fd = (int)sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	}
	long n = *fd >= 0 ? sys4(SYS_pread64, *fd, (long)buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *close_paren = NULL;
	for (long i = 0; i < n; i++)
		if (buf[i] == ')')
			close_paren = buf + i;
	return close_paren && close_paren + 2 < buf + n && close_paren[2] == 'T';
}

/* The command stopped, or went on after a stop: the stub stops by the same signal
 * (RD_STUB_STOPPED), so that its caller sees its child stopped, or goes on
 * (RD_STUB_CONTINUED). A stopped stub reads nothing: runnerd, told on the status pipe, sends it
 * SIGCONT. One message a change, so that the stub's queue holds what changed, not every stop;
 * one that does not fit now is sent later (the reaper's loop tries again). */
static void sync_stub(const struct rd_launch_plan *p, int status_fd, struct stub_state *s)
{
	if (s->want == s->told)
		return;
	if (!p->h.has_stub_ctl || command_failed) {
		s->told = s->want;
		return;
	}
	if (s->want && s->told) {
		s->told = s->want; /* another stop while stopped: the stub is stopped already */
		return;
	}
	struct rd_stub_msg m = {.type = s->want ? RD_STUB_STOPPED : RD_STUB_CONTINUED,
	                        .value = s->want};
	long r = sys6(SYS_sendto, p->stub_ctl_fd, (long)&m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL,
	              0, 0);
	if (r == -EAGAIN)
		return;
	bool woke = s->told && !s->want;
	s->told = s->want;
	struct rd_reaper_report rep = {.flags = RD_REPORT_CONTINUED};
	if (woke && r == sizeof(m))
		sys3(SYS_write, status_fd, &rep, sizeof(rep));
}

/* A terminal of the sandbox's own for a caller whose fds 0 to 2 hold one: a pseudo-terminal of
 * the sandbox's devpts instance, with the caller's modes and window size. Every fd of the
 * caller on its terminal becomes the slave, so the caller's terminal itself never enters the
 * sandbox; the master and the caller's terminal go to the stub, which relays between them
 * (RD_STUB_PTY). The slave is the controlling terminal of the reaper's session, or, for a
 * command that leads a session of its own, of that one (command_main). Returns the lowest
 * target number of the slave. */
static int setup_tty(struct rd_launch_plan *p, int pts_err, int err_fd)
{
	if (pts_err)
		fail(err_fd, STAGE_SETUP, "a terminal of its own: mounting devpts on /dev/pts",
		     pts_err);
	if (!p->h.has_stub_ctl)
		fail(err_fd, STAGE_SETUP, "a terminal of its own: no stub to relay it", EPROTO);
	int unlock = 0, master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0)
		fail(err_fd, STAGE_SETUP, "a terminal of its own: /dev/ptmx", errno);
	int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0 || tcsetattr(slave, TCSANOW, &p->h.tty_modes) < 0 ||
	    ioctl(master, TIOCSWINSZ, &p->h.tty_size) < 0)
		fail(err_fd, STAGE_SETUP, "a terminal of its own: its slave", errno);
	/* The caller's fds on its terminal (told by TIOCGDEV: an fd opened as /dev/tty is on it
	 * too): one that reads, fd 0 first, for what is typed; one that writes, fd 1 first, then
	 * 2, for what the command writes (the caller may hold its terminal read-only on fd 0).
	 * The others are closed; every one of them becomes the slave. */
	struct rd_fd_map *fds = (struct rd_fd_map *)p->fds;
	int in = -1, out = -1, any = -1, in_rank = INT_MAX, out_rank = INT_MAX, target = -1;
	bool input = false;
	for (size_t i = 0; i < p->h.n_fds; i++) {
		unsigned dev;
		int fd = fds[i].fd, t = fds[i].target;
		if (ioctl(fd, TIOCGDEV, &dev) < 0 || dev != p->h.tty_rdev)
			continue;
		int acc = fcntl(fd, F_GETFL) & O_ACCMODE;
		bool reads = acc == O_RDONLY || acc == O_RDWR,
		     writes = acc == O_WRONLY || acc == O_RDWR;
		int ir = t == 0 ? 0 : t + 1, orank = t == 1 ? 0 : t == 2 ? 1 : t + 2;
		if (any < 0)
			any = fd;
		if (reads && ir < in_rank)
			in = fd, in_rank = ir;
		if (writes && orank < out_rank)
			out = fd, out_rank = orank;
		if (t == 0 && reads)
			input = p->h.tty_input;
	}
	if (any < 0)
		fail(err_fd, STAGE_SETUP, "a terminal of its own: no fd on the caller's terminal",
		     EPROTO);
	if (in < 0)
		in = out >= 0 ? out : any;
	if (out < 0)
		out = in;
	for (size_t i = 0; i < p->h.n_fds; i++) {
		unsigned dev;
		int fd = fds[i].fd;
		if (fd == slave || ioctl(fd, TIOCGDEV, &dev) < 0 || dev != p->h.tty_rdev)
			continue;
		if (fd != in && fd != out)
			close(fd);
		fds[i].fd = slave;
		if (target < 0 || fds[i].target < target)
			target = fds[i].target;
	}
	if (p->h.pgrp_mode != RD_PGRP_SESSION && ioctl(slave, TIOCSCTTY, 0) < 0)
		fail(err_fd, STAGE_SETUP, "a terminal of its own: taking it", errno);
	struct rd_stub_msg m = {.type = RD_STUB_PTY, .value = input};
	int pass[3] = {master, in, out};
	int r = rd_send_buf_fds(p->stub_ctl_fd, &m, sizeof(m), pass, 3, MSG_DONTWAIT);
	if (r < 0)
		fail(err_fd, STAGE_SETUP, "a terminal of its own: handing it to the stub", -r);
	close(master);
	close(in);
	if (out != in)
		close(out);
	return target;
}

/* One plan, from its coming to its command's end. Returns only when the command ended alone and
 * the sandbox can take another plan (RD_REPORT_REUSE): nothing of the command is left, its fds
 * and the plan's memory are released. Else pid 1 exits when the sandbox ends. again: the
 * sandbox ran a command before, whose setup pipe err_fd was. */
static void run_plan(int plan_fd, int err_fd, int status_fd, const struct rd_sandbox_preset *preset,
                     const struct rd_view_paths *paths, struct rd_view_error *view, int pts_err,
                     void *stack_top, bool again)
{
	int r;
	struct rd_launch_plan plan;
	receive_plan(plan_fd, err_fd, &plan, again);
	if (again)
		err_fd = plan.setup_fd;
	/* Kept: runnerd's marks come on it (launch.h). */
	cap_rlimits(&plan.h);
	if (preset) {
		/* runnerd sends a plan here only if it fits; a plan that did not would run without
		 * what it asks for. Already in place: nothing of it to do again. */
		if (!rd_sandbox_preset_fits(preset, &plan))
			fail(err_fd, STAGE_SETUP,
			     "the plan does not fit the sandbox made ahead of time", EPROTO);
		plan.h.n_masks = 0;
		plan.filter = NULL;
	}
	const struct rd_launch_plan *p = &plan;
	/* A rule's own writable roots and protected paths, before the masks: a root made writable
	 * with what is mounted under it would take a mask's read-only flag with it. */
	if (p->h.n_write || p->h.n_protect) {
		struct rd_view_paths rule = {.write = p->write,
		                             .n_write = p->h.n_write,
		                             .protect = p->protect,
		                             .n_protect = p->h.n_protect};
		if ((r = rd_view_rule(view, paths, &rule)) < 0)
			fail(err_fd, STAGE_SETUP, view->what, -r);
	}
	if (p->h.no_layers && (r = rd_view_no_layers(view, paths)) < 0)
		fail(err_fd, STAGE_SETUP, view->what, -r);
	if (p->h.n_gates && (r = rd_view_git_gate(view, p->gates, p->h.n_gates, p->h.git_real)) < 0)
		fail(err_fd, STAGE_SETUP, view->what, -r);
	apply_masks(p->masks, p->h.n_masks, err_fd, NULL);
	if (!preset && rd_box_is(&p->h.box, RD_BOX_NETWORK, RD_NET_NONE))
		no_network(err_fd);
	int tty = -1;
	if (p->h.has_tty)
		tty = setup_tty(&plan, pts_err, err_fd);
	/* Another plan may come once the command has ended alone, if nothing of this one stays
	 * in the sandbox: the preset's view (a rule's own would), the preset's filter (which
	 * refuses keyctl: the keyrings of the sandbox's user namespace outlive the command), no
	 * terminal (its session's, pid 1's, until the stub closes the master); and, at the end,
	 * no process left, whatever the sandbox's lifetime (report_end). */
	bool reusable = preset && preset->filter && !p->h.has_tty && p->h.has_stub_ctl;
	/* Every signal blocked and taken with rt_sigtimedwait: blocked signals are queued even
	 * for pid 1, which otherwise drops signals it has no handler for. Raw: glibc's sigset
	 * calls leave out 32 and 33, which the caller's command may be sent too. */
	uint64_t all = ~0ULL;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all));
	int *hi = calloc(p->h.n_fds + 3, sizeof(int));
	size_t *order = calloc(p->h.n_fds + 1, sizeof(size_t));
	cap_t empty = cap_init();
	if (!hi || !order || !empty)
		fail(err_fd, STAGE_SETUP, "out of memory", ENOMEM);
	/* By target number, for the command to close what lies between them. The plan's fds are
	 * the caller's in /proc order, ascending already; an insertion sort is linear then. */
	for (size_t i = 0; i < p->h.n_fds; i++) {
		size_t j = i;
		for (; j > 0 && p->fds[order[j - 1]].target > p->fds[i].target; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	bool cwd_shadow = false;
	for (size_t i = 0; paths && p->cwd_path && i < paths->n_shadow; i++)
		cwd_shadow = cwd_shadow || strcmp(paths->shadow[i], p->cwd_path) == 0;
	struct command_args a = {p, err_fd, hi, order, empty, tty, again, cwd_shadow};
	pid_t child = clone(command_start, stack_top, CLONE_VM | SIGCHLD, &a);
	if (child < 0)
		fail(err_fd, STAGE_SETUP, "starting the command", errno);
	/* At once, not after the command's exec: the setup pipe's EOF, which tells runnerd that
	 * the exec went through, and the caller's pipes' EOF must not wait until the reaper gets a
	 * CPU again (which, as the command runs, can be its end). */
	/* From here until the command has exec'd, only raw system calls (raw_syscall.h): glibc's
	 * set errno, which the command's side shares and reads after each of its failed calls. */
	int left[] = {plan_fd, status_fd, p->h.has_stub_ctl ? p->stub_ctl_fd : -1};
	close_but(0, ALL_FDS, left, 3);
	int stat_fd = -1; /* the command's /proc/PID/stat, once it has stopped (is_stopped) */

	bool timed_out = false, main_done = false;
	bool to_the_end = rd_box_is(&p->h.box, RD_BOX_LIFETIME, RD_LIFETIME_SESSION);
	struct stub_state stub = {0};
	for (;;) {
		/* A stop or go the stub could not be told yet (its queue full) is tried again in
		 * a moment. */
		struct timespec retry = {0, 20 * 1000 * 1000};
		int sig = (int)sys4(SYS_rt_sigtimedwait, &all, 0,
		                    stub.want != stub.told ? &retry : NULL, sizeof(all));
		if (stub.want != stub.told)
			sync_stub(p, status_fd, &stub);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			/* Only runnerd's marks are acted on, read on every signal: no signal is
			 * trusted itself, whoever seems to send it (a process of the sandbox can
			 * signal its pid 1, a zeroed siginfo past RLIMIT_SIGPENDING looks like one
			 * from outside), and runnerd's waking SIGTERM may have merged with one
			 * from inside. */
			uint32_t mark;
			while (sys6(SYS_recvfrom, plan_fd, (long)&mark, sizeof(mark), MSG_DONTWAIT,
			            0, 0) == sizeof(mark)) {
				int pass = (mark & RD_REAPER_SIGNAL_MASK) == RD_REAPER_SIGNAL_MARK
				               ? (int)(mark & ~RD_REAPER_SIGNAL_MASK)
				               : 0;
				if (mark == RD_REAPER_KILL_MARK && !main_done) {
					sys2(SYS_kill, child, SIGKILL);
					reusable = false;
				}
				if (mark == RD_REAPER_TIMEOUT_MARK && !main_done)
					timed_out = true;
				/* The sandbox's end (a timeout, the session's end) goes to every
				 * process of it, background ones too. */
				if (mark == RD_REAPER_TIMEOUT_MARK || mark == RD_REAPER_END_MARK) {
					sys2(SYS_kill, -1, SIGTERM);
					reusable = false;
				}
				if (!pass)
					continue;
				/* A SIGCONT is the stub's: it went on (its caller sent it the
				 * SIGCONT it passed on), whatever it was last told, and so does the
				 * command. It goes to every process, as a shell's fg to a whole
				 * stopped job; so does, once the command has ended, whatever the
				 * stub passes on. The rest is the command's. */
				if (pass == SIGCONT)
					stub.told = stub.want = 0;
				bool everyone = pass == SIGCONT || main_done;
				sys2(SYS_kill, everyone ? -1 : child, pass);
			}
			continue;
		}
		int st;
		long w;
		while ((w = sys4(SYS_wait4, -1, &st, WNOHANG | WUNTRACED | WCONTINUED, 0)) > 0) {
			if (w == child && (WIFSTOPPED(st) || WIFCONTINUED(st))) {
				if (WIFSTOPPED(st))
					stub.last_sig = WSTOPSIG(st);
				stub.want = is_stopped(child, &stat_fd) ? stub.last_sig : 0;
				sync_stub(p, status_fd, &stub);
			} else if (w == child) {
				uint32_t said = report_end(p, status_fd, st, timed_out,
				                           stub.told != 0, reusable && !timed_out);
				main_done = true;
				/* A stub not told the end (its queue full) waits for runnerd to
				 * tell it, which runnerd does when pid 1 has gone. */
				if ((said & RD_REPORT_REUSE) && (said & RD_REPORT_STUB_TOLD)) {
					if (stat_fd >= 0)
						close(stat_fd);
					close(p->stub_ctl_fd);
					free(hi);
					free(order);
					cap_free(empty);
					release_plan();
					return;
				}
				stub.want = stub.told; /* nothing more to tell it */
				/* "lifetime": "command": pid 1 exits, and the kernel kills the
				 * rest. */
				if (!to_the_end)
					_exit(0);
			}
		}
		/* The command has ended and nothing of the sandbox is left (every orphan of
		 * the pid namespace is pid 1's child): the sandbox's end. */
		if (main_done && w == -ECHILD)
			_exit(0);
	}
}

/* What a process of the sandbox can change of its pid 1 without any capability, being of the
 * same uid (prlimit, setpriority, sched_setaffinity, sched_setattr with its utilization
 * clamps, ioprio_set, its oom_score_adj, coredump_filter and its session's autogroup in /proc,
 * its cgroup where one is delegated to the user), and a later command would inherit: taken
 * before the first plan, compared after each command. A cgroup file longer than the buffer is
 * compared by its first KiB. */
struct self_state {
	struct rlimit rlim[RLIM_NLIMITS];
	int nice, ioprio;
	unsigned char sched[128]; /* sched_getattr: policy, priorities, utilization clamps */
	cpu_set_t cpus;
	char oom[16], autogroup[64], coredump[16], cgroup[1024];
};

static void read_small(const char *path, char *buf, size_t size)
{
	memset(buf, 0, size);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, size - 1);
	(void)n;
	close(fd);
}

static void take_state(struct self_state *st)
{
	memset(st, 0, sizeof(*st));
	for (int res = 0; res < RLIM_NLIMITS; res++)
		getrlimit(res, &st->rlim[res]);
	errno = 0;
	st->nice = getpriority(PRIO_PROCESS, 0);
	syscall(SYS_sched_getattr, 0, st->sched, (unsigned)sizeof(st->sched), 0);
	st->ioprio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	sched_getaffinity(0, sizeof(st->cpus), &st->cpus);
	read_small("/proc/self/oom_score_adj", st->oom, sizeof(st->oom));
	read_small("/proc/self/autogroup", st->autogroup, sizeof(st->autogroup));
	read_small("/proc/self/coredump_filter", st->coredump, sizeof(st->coredump));
	read_small("/proc/self/cgroup", st->cgroup, sizeof(st->cgroup));
}

static struct self_state first_state;

/* After a command that ended alone (run_plan returned): the sandbox as it was before its plan,
 * then RD_REPORT_IDLE. Its processes are gone; what could still carry anything of theirs to
 * the next command is the sandbox's own: the signals they queued for pid 1 (taken here, at most
 * a few: more and the sandbox ends), what they changed of pid 1 itself (self_state: the
 * sandbox ends) and the IPC namespace (System V objects, POSIX message queues: a new one). Mounts
 * they cannot change (no capability in the sandbox's user namespace; /dev and the masks are
 * read-only, /dev/shm and the writable roots are the session's, shared by every sandbox anyway),
 * the masks are where they were (runnerd looks again before the next plan, as for any spare), and
 * the keyrings are the filter's to refuse. Any doubt ends the sandbox: runnerd then makes another,
 * as after any command. */
static void reset(int plan_fd, int status_fd, const struct rd_sandbox_preset *preset,
                  const struct preset_seen *seen)
{
	uint64_t all = ~0ULL;
	struct timespec now = {0, 0};
	int taken = 0;
	while (sys4(SYS_rt_sigtimedwait, &all, 0, &now, sizeof(all)) > 0)
		if (++taken > 64)
			_exit(0);
	struct self_state now_state;
	take_state(&now_state);
	if (memcmp(&now_state, &first_state, sizeof(now_state)) != 0)
		_exit(0);
	if (unshare(CLONE_NEWIPC) < 0)
		_exit(0);
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || preset_send(plan_fd, seen, (uint32_t)preset->n_masks, root) < 0)
		_exit(0);
	close(root);
	struct rd_reaper_report idle = {.flags = RD_REPORT_IDLE};
	if (write(status_fd, &idle, sizeof(idle)) != sizeof(idle))
		_exit(0);
}

/* pid 1 of the sandbox. Made ahead of time (a spare, while runnerd is idle): it holds nothing
 * of runnerd's, sets up the namespace, then waits for a plan. It forks the command, forwards
 * every signal runnerd sends it, reaps whatever the command leaves behind, and reports the
 * command's wait status. When it exits, the kernel kills everything left in the namespace. */
unsigned rd_reaper_parent_setup(void)
{
	set_dispositions(~0ULL, SIG_DFL);
	return RD_INHERIT_DISPOSITIONS | (drop_caps_bounding() == 0 ? RD_INHERIT_BOUNDING : 0);
}

_Noreturn void rd_reaper_main(int go_fd, int plan_fd, int err_fd, int status_fd,
                              const struct rd_sandbox_preset *preset, unsigned inherited,
                              const struct rd_view_paths *paths)
{
	/* Dies with runnerd; a reaper that could outlive it must not run at all. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(1);
	/* Nothing of runnerd's stays open here: the listener, other commands' sockets and fds.
	 * Close every gap between the four fds kept, in ascending order. */
	int keep[] = {go_fd, plan_fd, err_fd, status_fd};
	close_but(0, ALL_FDS, keep, 4);
	char go;
	if (read(go_fd, &go, 1) != 1)
		_exit(1); /* runnerd gave up on us, or died before PDEATHSIG was armed */
	close(go_fd);
	/* Not dumpable: nothing inside can read this process's memory or /proc files. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fail(err_fd, STAGE_SETUP, "making the reaper non-dumpable", errno);
	/* A session of its own, and so a process group: every group a command can be in is one
	 * of the sandbox's, so kill(0, ...) and kill(-PGID, ...) reach nothing outside it. */
	if (setsid() < 0)
		fail(err_fd, STAGE_SETUP, "starting the sandbox's session", errno);
	/* What every command gets, done before the plan comes (off the exec path): default
	 * dispositions, which the command only sets apart for what its caller ignores; and an
	 * empty capability bounding set, which the command inherits. The reaper keeps its own
	 * effective capabilities for the mounts. A zygote may have done either for all its
	 * reapers (rd_reaper_parent_setup). */
	if (!(inherited & RD_INHERIT_DISPOSITIONS))
		set_dispositions(~0ULL, SIG_DFL);
	int r = inherited & RD_INHERIT_BOUNDING ? 0 : drop_caps_bounding();
	if (r < 0)
		fail(err_fd, STAGE_SETUP, "dropping the capability bounding set", -r);
	/* The command's stack, below a guard page that stops an overflow from reaching the
	 * reaper's memory. */
	char *stack = mmap(NULL, COMMAND_STACK, PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED || mprotect(stack, 4096, PROT_NONE) < 0)
		fail(err_fd, STAGE_SETUP, "mapping the command's stack", errno);
	void *stack_top = stack + COMMAND_STACK;
	/* The command's view (sandbox/view.h): the session's part, unless the zygote made it;
	 * a fresh /proc of the new pid namespace (no ancestor's environ to read); the sandbox's
	 * part, whose devpts instance makes the command's terminal. */
	struct rd_view_error view;
	if (!(inherited & RD_INHERIT_VIEW) && (r = rd_view_session(&view, paths, false)) < 0)
		fail(err_fd, STAGE_SETUP, view.what, -r);
	rd_view_shadow_forget();
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail(err_fd, STAGE_SETUP, "mounting /proc", errno);
	if ((r = rd_view_sandbox(&view, inherited & RD_ROOT_IDS)) < 0)
		fail(err_fd, STAGE_SETUP, view.what, -r);
	int pts_err = view.pts_err;
	struct preset_seen *seen = preset ? apply_preset(preset, plan_fd, err_fd) : NULL;
	take_state(&first_state);
	for (bool again = false;; again = true) {
		run_plan(plan_fd, again ? -1 : err_fd, status_fd, preset, paths, &view, pts_err,
		         stack_top, again);
		/* The command ended alone: the sandbox waits for another plan, as it was. */
		reset(plan_fd, status_fd, preset, seen);
	}
}
