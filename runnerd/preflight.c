#include "runnerd/preflight.h"

#include "lib/syscalls.h"
#include "sandbox/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum engine { HOST, PODMAN, DOCKER, OTHER_CONTAINER };

/* What a probe reports through its pipe: the step that failed (0: none) and the errno. */
struct outcome {
	int step;
	int err;
};

static const char *const names[RD_PROBE_COUNT] = {
    [RD_PROBE_USERNS] = "a user namespace",
    [RD_PROBE_SANDBOX] = "a sandbox (new user, pid, mount and IPC namespaces, runnerd's uid "
                         "and gid maps, a fresh /proc)",
    [RD_PROBE_PTRACE] = "ptrace of a child",
    [RD_PROBE_VM_READV] = "process_vm_readv of a child",
    [RD_PROBE_PIDFD_GETFD] = "pidfd_getfd of a child's fd",
    [RD_PROBE_LISTENER] = "a seccomp listener (SECCOMP_FILTER_FLAG_NEW_LISTENER)",
};

enum sandbox_step {
	S_USERNS = 1,
	S_MAPS,
	S_NAMESPACES,
	S_FORK,
	S_PRIVATE,
	S_PROC,
};

static const char *const sandbox_steps[] = {
    [S_USERNS] = "unshare(CLONE_NEWUSER)",
    [S_MAPS] = "writing its uid and gid maps",
    [S_NAMESPACES] = "unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)",
    [S_FORK] = "starting pid 1 of the new pid namespace",
    [S_PRIVATE] = "making its mounts private",
    [S_PROC] = "mounting a fresh /proc",
};

/* A probe that died without a word: step DIED, err its signal. */
enum { DIED = -2 };

/* A sysctl's number, or -1 when it is not there (not this kernel's) or unreadable. */
static long sysctl_value(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

static size_t proc_covers(char *buf, size_t size);

/* The root a container engine gives: an overlay (or fuse-overlayfs) mount on /. */
static bool overlay_root(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[4096];
	bool yes = false;
	while (!yes && fgets(line, sizeof(line), f)) {
		char at[4096], *sep = strstr(line, " - ");
		yes = sscanf(line, "%*s %*s %*s %*s %4095s", at) == 1 && strcmp(at, "/") == 0 &&
		      sep &&
		      (strncmp(sep + 3, "overlay ", 8) == 0 || strncmp(sep + 3, "fuse.", 5) == 0);
	}
	fclose(f);
	return yes;
}

/* The engine's own marks (/run/.containerenv, /.dockerenv, the cgroup's name, systemd's and
 * Kubernetes' files; runnerd's environment is scrubbed by now); a /.dockerenv
 * alone (an image that became a machine) counts only with the root or /proc a container has. */
static enum engine which_engine(void)
{
	char covers[64];
	if (access("/run/.containerenv", F_OK) == 0 || file_has("/proc/self/cgroup", "libpod"))
		return PODMAN;
	if (file_has("/proc/self/cgroup", "docker") ||
	    (access("/.dockerenv", F_OK) == 0 &&
	     (overlay_root() || proc_covers(covers, sizeof(covers)) > 0)))
		return DOCKER;
	if (file_has("/proc/self/cgroup", "kubepods") ||
	    file_has("/proc/self/cgroup", "containerd") ||
	    access("/run/systemd/container", F_OK) == 0 ||
	    access("/var/run/secrets/kubernetes.io", F_OK) == 0)
		return OTHER_CONTAINER;
	return HOST;
}

static const char *engine_name(enum engine e)
{
	static const char *const n[] = {"on this host", "in a podman container",
	                                "in a docker container", "in a container"};
	return n[e];
}

/* A seccomp filter on runnerd itself (a container's profile), as /proc/self/status tells. */
static bool seccomp_filtered(void)
{
	return file_has("/proc/self/status", "Seccomp:\t2");
}

static bool has_cap(cap_value_t cap)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;
	if (caps && cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) < 0)
		v = CAP_CLEAR;
	cap_free(caps);
	return v == CAP_SET;
}

/* The mounts that cover parts of /proc (a container runtime's /proc/kcore, /proc/keys, ...),
 * comma-separated into buf; binfmt_misc, on its own empty directory, covers nothing. */
static size_t proc_covers(char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t n = 0, len = 0;
	buf[0] = 0;
	if (!f)
		return 0;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		char at[4096];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", at) != 1 ||
		    strncmp(at, "/proc/", 6) != 0 || strcmp(at, "/proc/sys/fs/binfmt_misc") == 0)
			continue;
		n++;
		if (n <= 4 && len + strlen(at) + 3 < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", at);
		else if (n == 5 && len + 5 < size)
			len += (size_t)snprintf(buf + len, size - len, ", ...");
	}
	fclose(f);
	return n;
}

/* Start fn in a child of its own, its outcome to come through the pipe *rfd. The child holds
 * nothing of runnerd's but that pipe (not the control socket, not the terminal), and dies with
 * runnerd. */
static pid_t start_child(void (*fn)(int out), int *rfd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		if (dup2(p[1], 3) < 0)
			_exit(1);
		rd_close_range(4, ~0U, 0);
		fn(3);
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* Its outcome, by the deadline (then it is killed: ETIMEDOUT). One that dies without a word
 * failed at step DIED, with its signal, or EPROTO. */
static struct outcome finish_child(pid_t pid, int rfd, const struct timespec *deadline)
{
	struct outcome o = {.step = -1, .err = ETIMEDOUT};
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (deadline->tv_sec - now.tv_sec) * 1000 +
		          (deadline->tv_nsec - now.tv_nsec) / 1000000;
		struct pollfd pfd = {.fd = rfd, .events = POLLIN};
		int r = poll(&pfd, 1, ms > 0 ? (int)ms : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		ssize_t n = read(rfd, &o, sizeof(o));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(o))
			o = (struct outcome){.step = DIED, .err = 0};
		break;
	}
	close(rfd);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (o.step == DIED)
		o.err = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	return o;
}

static void say(int out, int step, int err)
{
	struct outcome o = {step, err};
	if (write(out, &o, sizeof(o)) != sizeof(o))
		_exit(1);
}

static void probe_userns(int out)
{
	int r = unshare(CLONE_NEWUSER);
	say(out, r < 0 ? S_USERNS : 0, r < 0 ? errno : 0);
}

/* As runnerd makes a sandbox: a child in a user namespace of its own, whose maps this process
 * writes from outside as runnerd does (every id to itself with CAP_SETUID and CAP_SETGID,
 * else its own), new pid, mount and IPC namespaces, and in pid 1 a fresh /proc. */
static void probe_sandbox(int out)
{
	int ready[2], go[2];
	if (pipe(ready) < 0 || pipe(go) < 0)
		return say(out, S_FORK, errno);
	pid_t child = fork();
	if (child < 0)
		return say(out, S_FORK, errno);
	if (child > 0) {
		close(ready[1]);
		close(go[0]);
		char c;
		/* Nothing to read: the child said why it could not (its user namespace). */
		if (read(ready[0], &c, 1) == 1) {
			int r = rd_write_id_maps(child, rd_sandbox_can_map_all_ids());
			if (r < 0)
				say(out, S_MAPS, -r);
			else if (write(go[1], "g", 1) != 1)
				say(out, S_FORK, errno);
		}
		close(go[1]);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		return;
	}
	close(ready[0]);
	close(go[1]);
	char c;
	if (unshare(CLONE_NEWUSER) < 0)
		return say(out, S_USERNS, errno);
	if (write(ready[1], "u", 1) != 1 || read(go[0], &c, 1) != 1)
		return; /* the maps failed, said by the parent */
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) < 0)
		return say(out, S_NAMESPACES, errno);
	pid_t pid = fork();
	if (pid < 0)
		return say(out, S_FORK, errno);
	if (pid > 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return say(out, S_PRIVATE, errno);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return say(out, S_PROC, errno);
	say(out, 0, 0);
}

static volatile unsigned long probe_word = 0x72756e6e657264UL;

/* Try one call on a child that only waits (on its fd 0, a pipe this probe holds the other end
 * of: it exits with the probe), as runnerd's calls reach the agent's children. */
static void probe_on_target(int out, int (*call)(pid_t target))
{
	int p[2];
	if (pipe(p) < 0)
		return say(out, -1, errno);
	pid_t parent = getpid(), t = fork();
	if (t < 0)
		return say(out, -1, errno);
	if (t == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent ||
		    dup2(p[0], 0) < 0)
			_exit(1);
		rd_close_range(1, ~0U, 0);
		char c;
		while (read(0, &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	int e = call(t);
	kill(t, SIGKILL);
	while (waitpid(t, NULL, 0) < 0 && errno == EINTR)
		;
	say(out, e ? 1 : 0, e);
}

static int try_ptrace(pid_t t)
{
	return ptrace(PTRACE_SEIZE, t, 0, PTRACE_O_EXITKILL) < 0 ? errno : 0;
}

static int try_vm_readv(pid_t t)
{
	unsigned long got = 0;
	struct iovec local = {&got, sizeof(got)}, remote = {(void *)&probe_word, sizeof(got)};
	ssize_t n = process_vm_readv(t, &local, 1, &remote, 1, 0);
	return n < 0 ? errno : (got == probe_word ? 0 : EIO);
}

/* The target's fd 0. */
static int try_pidfd_getfd(pid_t t)
{
	int pidfd = rd_pidfd_open(t, 0);
	return pidfd < 0 || rd_pidfd_getfd(pidfd, 0, 0) < 0 ? errno : 0;
}

static void probe_ptrace(int out)
{
	probe_on_target(out, try_ptrace);
}

static void probe_vm_readv(int out)
{
	probe_on_target(out, try_vm_readv);
}

static void probe_pidfd_getfd(int out)
{
	probe_on_target(out, try_pidfd_getfd);
}

static void probe_listener(int out)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {.len = 1, .filter = &allow};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return say(out, 1, errno);
	int fd = rd_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	say(out, fd < 0, fd < 0 ? errno : 0);
}

static void set(struct rd_probe_result *r, const char *fix, const char *fmt, ...) _printf_(3, 4);
static void set(struct rd_probe_result *r, const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->cause, sizeof(r->cause), fmt, ap);
	va_end(ap);
	snprintf(r->fix, sizeof(r->fix), "%s", fix);
}

static void why_userns(struct rd_probe_result *r, enum engine eng)
{
	long max = sysctl_value("/proc/sys/user/max_user_namespaces");
	long clone = sysctl_value("/proc/sys/kernel/unprivileged_userns_clone");
	if (max == 0)
		set(r,
		    "as root on the host: sysctl -w user.max_user_namespaces=15000 (and the same "
		    "in "
		    "/etc/sysctl.d to keep it)",
		    "user namespaces are turned off: user.max_user_namespaces is 0");
	else if (r->err == ENOSPC)
		set(r, "end some of this user's namespaces, or raise user.max_user_namespaces",
		    "the limit of user namespaces (user.max_user_namespaces = %ld) is reached",
		    max);
	else if (clone == 0 && !has_cap(CAP_SYS_ADMIN))
		set(r,
		    "as root on the host: sysctl -w kernel.unprivileged_userns_clone=1 (and in "
		    "/etc/sysctl.d)",
		    "unprivileged user namespaces are turned off "
		    "(kernel.unprivileged_userns_clone = 0)");
	else if (eng == DOCKER && seccomp_filtered())
		set(r,
		    "start the container with --security-opt "
		    "seccomp=/usr/share/runnerd/docker/seccomp.json, the profile runnerd's package "
		    "installs on the host for docker (or seccomp=unconfined): runnerd's own filter "
		    "still confines every command (docs/containers.md)",
		    "docker's default seccomp profile refuses new namespaces (unshare, clone with "
		    "CLONE_NEWUSER) to a container without CAP_SYS_ADMIN");
	else if (eng != HOST && seccomp_filtered())
		set(r,
		    "start the container with a seccomp profile that allows unshare and clone with "
		    "CLONE_NEWUSER, or --security-opt seccomp=unconfined (docs/containers.md)",
		    "the container's seccomp profile refuses user namespaces "
		    "(unshare(CLONE_NEWUSER): "
		    "%s)",
		    strerror(r->err));
	else if (seccomp_filtered())
		set(r, "run runnerd where user namespaces are allowed",
		    "a seccomp filter on runnerd refuses user namespaces (unshare(CLONE_NEWUSER): "
		    "%s)",
		    strerror(r->err));
	else
		set(r, "see docs/containers.md", "unshare(CLONE_NEWUSER): %s", strerror(r->err));
}

static void why_sandbox(struct rd_probe_result *r, int step, enum engine eng)
{
	long aa = sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	char covers[400];
	if (step == S_USERNS) {
		why_userns(r, eng);
		return;
	}
	if (step == S_PROC && r->err == EPERM && proc_covers(covers, sizeof(covers)) > 0) {
		const char *fix =
		    eng == PODMAN ? "start the container with --security-opt unmask=/proc/* "
		                    "(docs/containers.md)"
		    : eng == DOCKER
		        ? "start the container with --security-opt systempaths=unconfined "
		          "(docs/containers.md)"
		    : eng == OTHER_CONTAINER
		        ? "let the container's /proc be uncovered (Kubernetes: "
		          "securityContext.procMount: Unmasked) (docs/containers.md)"
		        : "unmount what covers parts of /proc";
		set(r, fix,
		    "the kernel refuses a fresh /proc in a user namespace while mounts cover parts "
		    "of /proc (%s)%s",
		    covers, eng != HOST ? ": the container runtime put them there" : "");
		return;
	}
	if (step == S_MAPS && r->err == EPERM && rd_sandbox_can_map_all_ids()) {
		set(r,
		    "run runnerd as a user other than root in the container (--user), where it "
		    "maps its own uid and gid alone (docs/containers.md)",
		    "runnerd has CAP_SETUID and CAP_SETGID, so it maps every uid and gid to "
		    "itself, but its own user namespace does not have them all (the root of a "
		    "rootless container, which has only the ids the engine maps)");
		return;
	}
	if (aa == 1 && !has_cap(CAP_SYS_ADMIN)) {
		set(r,
		    "load an AppArmor profile for runnerd that allows user namespaces "
		    "(\"userns,\", "
		    "as Ubuntu ships one for bwrap), or as root: sysctl -w "
		    "kernel.apparmor_restrict_unprivileged_userns=0",
		    "AppArmor lets only programs with a profile that allows it use a user "
		    "namespace "
		    "(kernel.apparmor_restrict_unprivileged_userns = 1): %s: %s",
		    sandbox_steps[step], strerror(r->err));
		return;
	}
	set(r, "see docs/containers.md", "%s: %s",
	    step > 0 && step <= S_PROC ? sandbox_steps[step] : "the probe", strerror(r->err));
}

/* ptrace, process_vm_readv and pidfd_getfd: the same access check (ptrace's, with the real
 * credentials), and the same Yama and seccomp causes. Docker's default profile allows the first
 * two (kernels 4.8 and later), pidfd_getfd only with CAP_SYS_PTRACE. */
static void why_trace(struct rd_probe_result *r, const char *call, enum engine eng)
{
	long yama = sysctl_value("/proc/sys/kernel/yama/ptrace_scope");
	if (r->err == ENOSYS && !seccomp_filtered())
		set(r, "run runnerd on Linux 5.9 or later", "this kernel has no %s", call);
	else if (yama == 3)
		set(r,
		    "set kernel.yama.ptrace_scope = 1 in /etc/sysctl.d on the host and reboot (3 "
		    "cannot be undone while it runs)",
		    "Yama forbids %s to every process until the next boot "
		    "(kernel.yama.ptrace_scope = 3)",
		    call);
	else if (yama == 2 && !has_cap(CAP_SYS_PTRACE))
		set(r,
		    "as root on the host: sysctl -w kernel.yama.ptrace_scope=1 (and in "
		    "/etc/sysctl.d)",
		    "Yama allows %s only to processes with CAP_SYS_PTRACE "
		    "(kernel.yama.ptrace_scope = 2)",
		    call);
	else if (eng == DOCKER && seccomp_filtered() && !has_cap(CAP_SYS_PTRACE) &&
	         strcmp(call, "pidfd_getfd") == 0)
		set(r,
		    "start the container with --security-opt "
		    "seccomp=/usr/share/runnerd/docker/seccomp.json, the profile runnerd's package "
		    "installs on the host for docker (or seccomp=unconfined): runnerd's own filter "
		    "still confines every command (docs/containers.md)",
		    "docker's default seccomp profile allows %s only to a container with "
		    "CAP_SYS_PTRACE",
		    call);
	else if (eng != HOST && seccomp_filtered())
		set(r,
		    "start the container with a seccomp profile that allows it, or --security-opt "
		    "seccomp=unconfined (docs/containers.md)",
		    "the container's seccomp profile refuses %s (%s)", call, strerror(r->err));
	else if (seccomp_filtered())
		set(r, "run runnerd without that filter, or with one that allows it",
		    "a seccomp filter on runnerd refuses %s (%s)", call, strerror(r->err));
	else
		set(r, "see docs/containers.md", "%s: %s", call, strerror(r->err));
}

int rd_preflight_start(struct rd_preflight *pf)
{
	static void (*const probes[RD_PROBE_COUNT])(int) = {
	    [RD_PROBE_USERNS] = probe_userns,           [RD_PROBE_SANDBOX] = probe_sandbox,
	    [RD_PROBE_PTRACE] = probe_ptrace,           [RD_PROBE_VM_READV] = probe_vm_readv,
	    [RD_PROBE_PIDFD_GETFD] = probe_pidfd_getfd, [RD_PROBE_LISTENER] = probe_listener,
	};
	memset(pf, 0, sizeof(*pf));
	for (int i = 0; i < RD_PROBE_COUNT; i++)
		pf->r[i].name = names[i];
	for (int i = 0; i < RD_PROBE_COUNT; i++) {
		pf->pid[i] = start_child(probes[i], &pf->fd[i]);
		if (pf->pid[i] < 0) {
			int e = errno;
			while (--i >= 0) {
				kill(pf->pid[i], SIGKILL);
				close(pf->fd[i]);
				while (waitpid(pf->pid[i], NULL, 0) < 0 && errno == EINTR)
					;
			}
			return -e;
		}
	}
	return 0;
}

/* Each probe takes a few ms; one stuck (a call that blocks under some filter or LSM) is given
 * up after this long, as failed. */
#define PROBES_TIMEOUT_S 10

size_t rd_preflight_finish(struct rd_preflight *pf)
{
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += PROBES_TIMEOUT_S;
	struct outcome o[RD_PROBE_COUNT];
	for (int i = 0; i < RD_PROBE_COUNT; i++) {
		o[i] = finish_child(pf->pid[i], pf->fd[i], &deadline);
		pf->failed += o[i].step != 0;
	}
	/* Worked out only when needed: the host or container it ran in. */
	enum engine eng = pf->failed ? which_engine() : HOST;
	pf->where = pf->failed ? engine_name(eng) : NULL;
	for (int i = 0; i < RD_PROBE_COUNT; i++) {
		struct rd_probe_result *r = &pf->r[i];
		if (o[i].step == 0)
			continue;
		r->err = o[i].err ? o[i].err : EPROTO;
		if (o[i].step == DIED && o[i].err == 0) {
			r->err = EPROTO;
			set(r, "see docs/containers.md", "the probe ended without an answer");
			continue;
		}
		if (o[i].step == DIED) {
			r->err = EPROTO;
			set(r,
			    o[i].err == SIGSYS ? "run runnerd where a seccomp filter does not kill "
			                         "these calls (docs/containers.md)"
			                       : "see docs/containers.md",
			    "the probe died of signal %d (%s)%s", o[i].err, strsignal(o[i].err),
			    o[i].err == SIGSYS ? ": a seccomp filter on runnerd kills the call"
			                       : "");
			continue;
		}
		if (o[i].step == -1 && o[i].err == ETIMEDOUT) {
			set(r, "see docs/containers.md", "no answer in %d s", PROBES_TIMEOUT_S);
			continue;
		}
		switch (i) {
		case RD_PROBE_USERNS:
			why_userns(r, eng);
			break;
		case RD_PROBE_SANDBOX:
			why_sandbox(r, o[i].step, eng);
			break;
		case RD_PROBE_PTRACE:
			why_trace(r, "ptrace", eng);
			break;
		case RD_PROBE_VM_READV:
			why_trace(r, "process_vm_readv", eng);
			break;
		case RD_PROBE_PIDFD_GETFD:
			why_trace(r, "pidfd_getfd", eng);
			break;
		default:
			set(r, "run runnerd on Linux 5.9 or later, where seccomp is allowed",
			    "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER): "
			    "%s",
			    strerror(r->err));
		}
	}
	return pf->failed;
}

const char *rd_preflight_where(struct rd_preflight *pf)
{
	if (!pf->where)
		pf->where = engine_name(which_engine());
	return pf->where;
}

size_t rd_preflight_run(struct rd_preflight *pf)
{
	int r = rd_preflight_start(pf);
	if (r < 0) {
		pf->where = engine_name(which_engine());
		pf->r[RD_PROBE_USERNS].err = -r;
		set(&pf->r[RD_PROBE_USERNS], "see the error", "starting the probes: %s",
		    strerror(-r));
		return pf->failed = 1;
	}
	return rd_preflight_finish(pf);
}

int rd_preflight_error(const struct rd_preflight *pf, struct rd_error *err)
{
	for (int i = 0; i < RD_PROBE_COUNT; i++) {
		const struct rd_probe_result *r = &pf->r[i];
		if (r->err)
			return rd_error_set(err, r->err,
			                    "cannot sandbox commands %s: %s. Fix: %s. (\"runnerd "
			                    "check --system\" tries each thing runnerd needs)",
			                    pf->where, r->cause, r->fix);
	}
	return 0;
}
