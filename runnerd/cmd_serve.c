/* runnerd serve [--config F] --profile P [--allow-profile Q ...] [--socket PATH]: the daemon.
 * It listens on a unix socket that containers get mounted; runnerd-intercept, inside one,
 * asks it to start an agent (lib/serve_proto.h). Each connection is a session of its own, in a
 * process of its own (a session's load or failure never stalls another's execs):
 *
 *   runnerd serve ── fork ──> session (host namespaces): the peer's credentials, pidfd and
 *   request; the host's part of the session (config, profile, audit, helpers, filters); the
 *   container's seccomp filters; its cgroups; then setns into its namespaces (not its user
 *   namespace, nor a rootful engine's pid namespace) ── fork ──> supervisor: the agent's part
 *   of the session and the loop, as runnerd -- AGENT runs them. For a rootful engine's
 *   container it stays outside the container's pid namespace, in a copy of its mount namespace
 *   with the machine's /proc, and so do its zygote and sandboxes: no process of the container
 *   can trace or signal a process of runnerd's, root of the machine. For a rootless one's it
 *   enters the container's pid and user namespaces, as the container's root.
 *
 * The session process waits for the supervisor, and signals the agent for runnerd kill (an
 * agent that is the container's pid 1 ignores signals from inside its pid namespace). Both die
 * with the daemon (PDEATHSIG): the agent's execs then fail with ENOSYS, as when runnerd
 * dies. */
#include "intercept/launcher.h"
#include "lib/fdpass.h"
#include "lib/serve_proto.h"
#include "lib/syscalls.h"
#include "lib/util.h"
#include "runnerd/serve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>

extern char **environ;

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif

#define MAX_ALLOWED 32

struct serve {
	struct rd_cli *cli;
	const char *socket;
	const char *allowed[MAX_ALLOWED];
	size_t n_allowed;
};

/* Refuse the client's session: said in the daemon's log and to the client. */
static int refuse(int sock, int e, const char *fmt, ...) _printf_(3, 4);
static int refuse(int sock, int e, const char *fmt, ...)
{
	char msg[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "runnerd serve: %s\n", msg);
	rd_agent_refuse_remote(sock, e, msg);
	return 125;
}

/* The namespaces a session joins, in the order it joins them (the mount namespace first: it
 * sets the root and working directory). */
static const char *const ns_names[RD_SERVE_NS] = {"mnt", "pid", "net", "ipc", "uts", "cgroup"};

static bool same_file(int a, int b)
{
	struct stat x, y;
	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_ino == y.st_ino &&
	       x.st_dev == y.st_dev;
}

/* The client's namespaces, opened now and kept (ss->ns) so that the session joins exactly
 * these, opened while pidfd says the client still runs (no pid reused in between). Each is owned
 * by the client's user namespace, which is either the machine's (a rootful engine's) or a child
 * of it (a rootless engine's: *userns, else -1); a user namespace deeper down is one the client
 * or its container made, and a session would follow it into namespaces whose mounts it
 * controls. Returns 0, or -1 with why. */
static int take_namespaces(pid_t pid, int pidfd, int ns[RD_SERVE_NS], int *userns, char *why,
                           size_t n)
{
	char p[64];
	*userns = -1;
	_cleanup_close_ int self = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	snprintf(p, sizeof(p), "/proc/%d/ns/user", pid);
	_cleanup_close_ int user = open(p, O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < RD_SERVE_NS; i++) {
		snprintf(p, sizeof(p), "/proc/%d/ns/%s", pid, ns_names[i]);
		ns[i] = open(p, O_RDONLY | O_CLOEXEC);
	}
	struct pollfd alive = {.fd = pidfd, .events = POLLIN};
	if (self < 0 || user < 0 || poll(&alive, 1, 0) != 0) {
		snprintf(why, n, "the client (pid %d) is gone", (int)pid);
		return -1;
	}
	bool host = same_file(user, self);
	_cleanup_close_ int parent = host ? -1 : ioctl(user, NS_GET_PARENT);
	if (!host && (parent < 0 || !same_file(parent, self))) {
		snprintf(why, n,
		         "the agent runs in a user namespace inside another (one it or its "
		         "container made): runnerd serve runs commands for containers of a rootful "
		         "engine, or of a rootless one, not below them");
		return -1;
	}
	/* (A rootless engine may leave the container in a namespace of the machine's, such as
	 * its cgroup namespace on cgroup v1: one the client cannot have made either.) */
	bool own = true;
	for (size_t i = 0; own && i < RD_SERVE_NS; i++) {
		int owner = ns[i] < 0 ? -1 : ioctl(ns[i], NS_GET_USERNS);
		own = owner >= 0 && (same_file(owner, user) || same_file(owner, self));
		if (owner >= 0)
			close(owner);
	}
	if (!own) {
		snprintf(
		    why, n,
		    "the agent runs in namespaces of another user namespace than its own (ones "
		    "it made): runnerd serve joins only a container's own");
		return -1;
	}
	if (!host)
		*userns = steal_fd(&user);
	return 0;
}

/* Does the client's capability bounding set hold cap (/proc/PID/status)? -1: unknown. */
static int bounding_has(pid_t pid, int cap)
{
	char p[64], buf[4096];
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[len > 0 ? len : 0] = '\0';
	const char *b = strstr(buf, "\nCapBnd:\t");
	if (!b)
		return -1;
	unsigned long long v = strtoull(b + 9, NULL, 16);
	return (int)((v >> cap) & 1);
}

/* Does a process of the client's pid namespace (pidns, an fd of it; client, its pid) hold cap
 * in its bounding set: 1, else 0, -1 if that cannot be told. Every process, not the client's
 * alone: a container started with the capability runs the client with it dropped
 * (CAP_SETPCAP is an engine's default), and a process beside it would still trace the
 * supervisor. A process whose namespaces root may not read (EACCES: in a Landlock domain
 * runnerd serve is not in, say) is none of a container's, whose processes the machine's root
 * reads; the client must be among those found. */
static int container_has(int pidns, pid_t client, int cap)
{
	struct stat want;
	if (fstat(pidns, &want) < 0)
		return -1;
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	int r = 0;
	bool seen = false;
	for (struct dirent *e; r == 0 && (e = readdir(d));) {
		char p[300];
		struct stat st;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/ns/pid", e->d_name);
		if (stat(p, &st) < 0) {
			if (errno != ENOENT && errno != ESRCH && errno != EACCES)
				r = -1;
			continue;
		}
		if (st.st_ino != want.st_ino || st.st_dev != want.st_dev)
			continue;
		pid_t pid = (pid_t)atoi(e->d_name);
		seen = seen || pid == client;
		int has = bounding_has(pid, cap);
		/* -1: it ended between the two reads, or cannot be read */
		if (has < 0) {
			snprintf(p, sizeof(p), "/proc/%s", e->d_name);
			has = access(p, F_OK) == 0 ? -1 : 0;
		}
		r = has;
	}
	closedir(d);
	return r == 0 && !seen ? -1 : r;
}

/* /proc/PID/attr/NAME, its first line, into out ("" if none); -errno if unreadable. */
static int read_attr(pid_t pid, const char *name, char *out, size_t n)
{
	char p[64];
	out[0] = '\0';
	snprintf(p, sizeof(p), "/proc/%d/attr/%s", pid, name);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, out, n - 1) : -1;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (len < 0)
		return -e;
	out[len] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* The AppArmor profile the client runs under, which each command is put under at its exec
 * (docker's and podman's default profiles for a container, say): its name, without the mode,
 * into aa ("" for none, or unconfined). A label of another LSM (SELinux, Smack), which runnerd
 * does not carry over, or an AppArmor label it cannot name to the kernel again (a stack, a
 * policy namespace), is refused: the commands would run without it. Returns 0, or -1 with
 * why. */
static int agent_label(pid_t pid, char *aa, size_t n, char *why, size_t wn)
{
	char cur[256], own[256];
	aa[0] = '\0';
	/* EINVAL: no LSM that labels processes; ENOENT: no AppArmor. */
	int r = read_attr(pid, "current", cur, sizeof(cur));
	int ra = read_attr(pid, "apparmor/current", own, sizeof(own));
	if (r < 0 && r != -EINVAL && r != -ENOENT) {
		snprintf(why, wn, "reading the agent's LSM label: %s", strerror(-r));
		return -1;
	}
	if (ra < 0 && ra != -ENOENT && ra != -EINVAL) {
		snprintf(why, wn, "reading the agent's AppArmor label: %s", strerror(-ra));
		return -1;
	}
	if (r == 0 && cur[0] && (ra < 0 || strcmp(cur, own) != 0)) {
		snprintf(
		    why, wn,
		    "the agent runs under the LSM label %s, which runnerd serve cannot put its "
		    "commands under (it carries AppArmor's over, no other LSM's): refused rather "
		    "than run them without it",
		    cur);
		return -1;
	}
	if (ra < 0 || !own[0] || strcmp(own, "unconfined") == 0)
		return 0;
	/* "NAME (enforce)", "NAME (complain)" */
	char *mode = strrchr(own, ' ');
	if (mode && mode[1] == '(' && mode[strlen(mode) - 1] == ')')
		*mode = '\0';
	if (!own[0] || own[0] == ':' || strstr(own, "//&") || strlen(own) >= n ||
	    strcmp(own, "unconfined") == 0) {
		snprintf(
		    why, wn,
		    "the agent runs under the AppArmor label %s, which runnerd serve cannot put "
		    "its commands under (a stack, or a policy namespace's): refused rather than "
		    "run them without it",
		    own);
		return -1;
	}
	snprintf(aa, n, "%s", own);
	return 0;
}

/* The client's seccomp filters (the container's, as the engine gave them), oldest first, read
 * while it waits for our answer: seized, stopped, read (PTRACE_SECCOMP_GET_FILTER) and let go.
 * Returns how many, or -errno. */
static long container_filters(pid_t pid, struct rd_bpf **out)
{
	*out = NULL;
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0)
		return -errno;
	int st, e = 0;
	pid_t w = 0;
	/* Its stop within 5 s (a client that cannot stop, in a vfork, say, does not hold this
	 * session's process for ever). */
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) == 0)
		for (int i = 0; i < 5000 && (w = waitpid(pid, &st, __WALL | WNOHANG)) == 0; i++)
			usleep(1000);
	if (w != pid) {
		e = w == 0 ? ETIMEDOUT : errno ? errno : ESRCH;
		ptrace(PTRACE_DETACH, pid, 0, 0);
		return -e;
	}
	struct rd_bpf *f = NULL;
	long n = 0;
	for (;; n++) {
		long len = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)n, NULL);
		if (len < 0) {
			/* ENOENT past the last; EINVAL: no filter at all */
			if (errno != ENOENT && !(errno == EINVAL && n == 0))
				e = errno;
			break;
		}
		struct rd_bpf *more = realloc(f, (size_t)(n + 1) * sizeof(*f));
		struct sock_filter *insns =
		    len > 0 && len <= BPF_MAXINSNS ? calloc((size_t)len, sizeof(*insns)) : NULL;
		if (!more || !insns) {
			free(more ? more : f);
			free(insns);
			f = NULL;
			e = ENOMEM;
			break;
		}
		f = more;
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)n, insns) != len) {
			e = errno ? errno : EIO;
			free(insns);
			break;
		}
		f[n] = (struct rd_bpf){.insns = insns, .len = (unsigned short)len};
	}
	ptrace(PTRACE_DETACH, pid, 0, 0);
	if (e) {
		for (long i = 0; f && i < n; i++)
			free(f[i].insns);
		free(f);
		return -e;
	}
	/* Index 0 is the newest: reverse, so that they load in the order they were loaded. */
	for (long i = 0; i < n / 2; i++) {
		struct rd_bpf t = f[i];
		f[i] = f[n - 1 - i];
		f[n - 1 - i] = t;
	}
	*out = f;
	return n;
}

/* Where the client runs, for runnerd ps: its container's ID, from its cgroup ("in container
 * 1234567890ab"); else, in a user namespace of its own, whose (a rootless engine on cgroup v1
 * gives its containers no cgroup of their own); else its cgroup. */
static char *where_of(pid_t pid, int userns)
{
	char p[64], buf[4096];
	snprintf(p, sizeof(p), "/proc/%d/cgroup", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (char *s = buf; *s; s++) {
		size_t hex = strspn(s, "0123456789abcdef");
		if (hex == 64) {
			char *w = NULL;
			return asprintf(&w, "in container %.12s%s", s,
			                userns >= 0 ? " (rootless)" : "") < 0
			           ? NULL
			           : w;
		}
		s += hex ? hex - 1 : 0;
	}
	char *w = NULL;
	uid_t owner;
	if (userns >= 0 && ioctl(userns, NS_GET_OWNER_UID, &owner) == 0)
		return asprintf(&w, "in container (rootless, of uid %u)", (unsigned)owner) < 0
		           ? NULL
		           : w;
	char *last = strrchr(buf, ':');
	if (last)
		last[strcspn(last, "\n")] = '\0';
	return asprintf(&w, "on the host, cgroup %s", last ? last + 1 : "?") < 0 ? NULL : w;
}

/* Is every controller of the comma list ctrl in the mount options opts? */
static bool has_controllers(const char *opts, const char *ctrl)
{
	char *o = strdup(opts), *c = strdup(ctrl);
	bool all = o && c;
	for (char *save = NULL, *t = all ? strtok_r(c, ",", &save) : NULL; t && all;
	     t = strtok_r(NULL, ",", &save)) {
		bool found = false;
		for (const char *s = o; s && !found;) {
			size_t len = strcspn(s, ",");
			found = len == strlen(t) && strncmp(s, t, len) == 0;
			s = s[len] ? s + len + 1 : NULL;
		}
		all = found;
	}
	free(o);
	free(c);
	return all;
}

/* Where the hierarchy of a /proc/PID/cgroup line (id, controllers) is mounted on the host,
 * at its root, into out; false if it is not. */
static bool hierarchy_mount(const char *id, const char *ctrl, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	bool found = false;
	bool v2 = strcmp(id, "0") == 0 && !*ctrl;
	while (f && !found && fgets(line, sizeof(line), f)) {
		char root[PATH_MAX], point[PATH_MAX], type[64], opts[1024];
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", type, opts) != 2 || strcmp(root, "/") != 0)
			continue;
		if (v2 ? strcmp(type, "cgroup2") == 0
		       : strcmp(type, "cgroup") == 0 && has_controllers(opts, ctrl))
			found = (size_t)snprintf(out, n, "%s", point) < n;
	}
	if (f)
		fclose(f);
	return found;
}

/* Join every cgroup the client is in (the container's), each hierarchy's: what the session's
 * supervisor starts, the zygote, every sandbox and command, is then the container's, under its
 * limits and counted in them. Returns 0, or -1 with why. */
static int join_cgroups(pid_t pid, char *why, size_t n)
{
	char p[64], buf[8192];
	snprintf(p, sizeof(p), "/proc/%d/cgroup", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : 0, got = 0;
	/* Whole: a line cut short would name an ancestor of the container's cgroup. */
	while (fd >= 0 && len < (ssize_t)sizeof(buf) - 1 &&
	       (got = read(fd, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += got;
	if (fd >= 0)
		close(fd);
	if (len <= 0 || got < 0 || len == (ssize_t)sizeof(buf) - 1) {
		snprintf(why, n, "cannot read %s whole: %s", p,
		         len == (ssize_t)sizeof(buf) - 1 ? "too long"
		                                         : strerror(errno ? errno : EIO));
		return -1;
	}
	buf[len] = '\0';
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		const char *ctrl = c1 + 1, *path = c2 + 1;
		char mnt[PATH_MAX], procs[2 * PATH_MAX];
		if (!hierarchy_mount(l, ctrl, mnt, sizeof(mnt))) {
			snprintf(why, n,
			         "the cgroup hierarchy %s (%s) of the agent is not mounted here", l,
			         *ctrl ? ctrl : "cgroup2");
			return -1;
		}
		snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", mnt, path);
		int cfd = open(procs, O_WRONLY | O_CLOEXEC);
		if (cfd < 0 || write(cfd, "0", 1) != 1) {
			snprintf(why, n, "joining the agent's cgroup %.300s: %s", procs,
			         strerror(errno));
			if (cfd >= 0)
				close(cfd);
			return -1;
		}
		close(cfd);
	}
	return 0;
}

/* In a rootless engine's container: into its user namespace, as its root (whatever the map
 * makes of uid 0: the user who runs the engine, or one of its subordinate ids), holding every
 * capability there and none on the machine. The mounts of the container's mount namespace are
 * then not locked to the session (it is their owner's), so that its zygote may mount a fresh
 * /proc under the engine's covered one, which a user namespace of runnerd's own may not; and
 * every id of the container is mapped, as the commands need. Called after the other
 * namespaces were joined as root of the machine, before anything of the container's is read.
 * Returns 0, or -1, said to the client. */
static int become_container_root(struct rd_serve_session *ss)
{
	const char *step = "dropping the supplementary groups";
	if (setgroups(0, NULL) == 0 && (step = "joining the agent's user namespace") &&
	    setns(ss->userns, CLONE_NEWUSER) == 0 &&
	    (step = "becoming root of the container's user namespace (is uid 0 mapped?)") &&
	    setresgid(0, 0, 0) == 0 && setresuid(0, 0, 0) == 0) {
		/* A change of ids clears both: set again, and the parent still there (outside
		 * the container's pid namespace, it is pid 0 here; once gone, this process is an
		 * orphan of the container's)? */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != 0 ||
		    prctl(PR_SET_DUMPABLE, 0) < 0)
			_exit(125);
		close(ss->userns);
		ss->userns = -1;
		ss->rootless = true;
		return 0;
	}
	return refuse(ss->sock, errno, "%s: %s", step, strerror(errno)), -1;
}

int rd_serve_enter(struct rd_serve_session *ss)
{
	char why[512];
	pid_t host_pid = ss->pid;
	/* The session's control socket, to remove from the host when it ends. */
	_cleanup_close_ int ctl_dir = -1;
	const char *ctl_name = NULL;
	if (ss->control_path) {
		_cleanup_free_ char *dir = strdup(ss->control_path);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash) {
			*slash = '\0';
			ctl_dir = open(*dir ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			ctl_name = strrchr(ss->control_path, '/') + 1;
		}
	}
	if (join_cgroups(host_pid, why, sizeof(why)) < 0)
		return refuse(ss->sock, EPERM, "%s", why), -1;
	/* Under the container's limits from here on, not the daemon's. */
	if (ss->waiting_fd >= 0) {
		close(ss->waiting_fd);
		ss->waiting_fd = -1;
	}
	/* The namespaces checked when the session began (ss->ns), not the client's now: it may
	 * have made others since. A rootful engine's container: all but its pid namespace.
	 * Every process of runnerd's there is root of the machine, and stays outside it, where
	 * no process of the container can trace or signal it, whatever capabilities an engine's
	 * exec gives one (the sandboxes' pid namespaces are made under the machine's). A rootless
	 * engine's: its pid namespace too, which the supervisor enters as the container's root
	 * (no privilege on the machine). */
	for (size_t i = 0; i < RD_SERVE_NS; i++)
		if ((i != RD_SERVE_NS_PID || ss->userns >= 0) && setns(ss->ns[i], 0) < 0)
			return refuse(ss->sock, errno, "joining the agent's %s namespace: %s",
			              ns_names[i], strerror(errno)),
			       -1;
	int kp[2];
	if (pipe2(kp, O_CLOEXEC) < 0)
		return refuse(ss->sock, errno, "pipe: %s", strerror(errno)), -1;
	pid_t child = fork();
	if (child < 0)
		return refuse(ss->sock, errno, "fork: %s", strerror(errno)), -1;
	if (child == 0) {
		close(kp[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0)
			_exit(125);
		if (ss->userns >= 0 && become_container_root(ss) < 0)
			_exit(125);
		/* Outside the container's pid namespace, with its files: a mount namespace of
		 * its own, a copy of the container's, with a /proc of the machine's pid namespace
		 * (the pids runnerd sees, in notifications and from fork) over the container's. */
		if (ss->userns < 0 &&
		    (unshare(CLONE_NEWNS) < 0 ||
		     mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		     mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)) {
			refuse(ss->sock, errno,
			       "a /proc of the machine's in the container's view: %s",
			       strerror(errno));
			_exit(125);
		}
		ss->kill_fd = kp[1];
		struct ucred cr = {0};
		socklen_t len = sizeof(cr);
		if (getsockopt(ss->sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0) {
			refuse(ss->sock, ESRCH,
			       "runnerd-intercept is not in the pid namespace of the container it "
			       "runs in");
			_exit(125);
		}
		/* Its pid, uid and gid as the supervisor sees them: the machine's pid and ids for
		 * a rootful engine's container; the container's for a rootless one's (its user
		 * namespace's ids). */
		ss->pid = cr.pid;
		ss->uid = cr.uid;
		ss->gid = cr.gid;
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/cwd", cr.pid);
		int cwd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cwd < 0 || fchdir(cwd) < 0) {
			refuse(ss->sock, errno, "entering the agent's working directory: %s",
			       strerror(errno));
			_exit(125);
		}
		close(cwd);
		environ = ss->env;
		return 0;
	}
	/* Outside the container's pid namespace, until the supervisor ends: the agent's SIGKILL
	 * on its byte. */
	close(kp[1]);
	close(ss->sock);
	int st = 0;
	struct pollfd pf = {.fd = kp[0], .events = POLLIN};
	for (;;) {
		pid_t w = waitpid(child, &st, WNOHANG);
		if (w == child)
			break;
		if (poll(&pf, 1, 200) > 0) {
			char b;
			ssize_t r = read(kp[0], &b, 1);
			if (r == 1)
				rd_pidfd_send_signal(ss->pidfd, b == 's' ? SIGSTOP : SIGKILL, NULL,
				                     0);
			else
				pf.fd = -1; /* EOF: the supervisor is ending */
		}
	}
	if (ctl_dir >= 0 && ctl_name)
		unlinkat(ctl_dir, ctl_name, 0);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* One connection, in a process of its own; waiting_fd is held until it joins the container's
 * cgroups (the daemon counts it waiting until then). */
static int session(struct serve *sv, int sock, int waiting_fd)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return 125;
	signal(SIGCHLD, SIG_DFL);
	struct ucred cr = {0};
	socklen_t len = sizeof(cr);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0)
		return refuse(sock, EPROTO, "cannot read the client's credentials");
	/* The peer's own pidfd where the kernel has it (6.5): no pid to be reused in between. */
	int pidfd = -1;
	len = sizeof(pidfd);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = errno == ENOPROTOOPT ? rd_pidfd_open(cr.pid, 0) : -1;
	if (pidfd < 0)
		return refuse(sock, errno, "the client (pid %d) is gone", (int)cr.pid);

	struct timeval tv = {.tv_sec = 10};
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct rd_serve_hello h;
	int fds[2] = {-1, -1};
	size_t n_fds = 0;
	ssize_t n = rd_recv_buf_fds(sock, &h, sizeof(h), fds, 2, &n_fds, 0);
	int block = fds[0];
	/* The client's stderr, if it sent it: a file it may write, and nothing else. */
	int client_stderr = -1;
	if (n_fds == 2) {
		int fl = fcntl(fds[1], F_GETFL);
		if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && !(fl & O_PATH))
			client_stderr = fds[1];
		else
			close(fds[1]);
	}
	struct stat st;
	/* Sealed: the strings checked are the strings used. */
	int seals = n_fds >= 1 ? fcntl(block, F_GET_SEALS) : -1;
	if (n != sizeof(h) || h.magic != RD_SERVE_MAGIC || n_fds < 1 || fstat(block, &st) < 0 ||
	    seals < 0 ||
	    (seals & (F_SEAL_WRITE | F_SEAL_SHRINK)) != (F_SEAL_WRITE | F_SEAL_SHRINK) ||
	    (uint64_t)st.st_size > RD_SERVE_MAX_BLOCK || h.argc == 0 || h.argc > 1u << 20 ||
	    h.envc > 1u << 20)
		return refuse(sock, EPROTO, "the request is not one of runnerd-intercept's");
	if (h.version != RD_SERVE_VERSION)
		return refuse(sock, EPROTO,
		              "runnerd-intercept speaks version %u, runnerd serve %u: install the "
		              "client of the daemon's version",
		              h.version, RD_SERVE_VERSION);
	h.profile[sizeof(h.profile) - 1] = '\0';
	char *m =
	    st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, block, 0) : NULL;
	close(block);
	if (m == MAP_FAILED)
		return refuse(sock, errno, "mmap: %s", strerror(errno));
	char *p = m, *end = m + st.st_size;
	char **argv = rd_serve_strings(&p, end, h.argc);
	char **env = argv ? rd_serve_strings(&p, end, h.envc) : NULL;
	if (!env)
		return refuse(sock, EPROTO, "the request's argv and environment do not add up");

	/* Only what the daemon can keep: a container's own namespaces, no LSM label it would not
	 * carry over. */
	int ns[RD_SERVE_NS], userns = -1;
	char why[512];
	if (take_namespaces(cr.pid, pidfd, ns, &userns, why, sizeof(why)) < 0)
		return refuse(sock, EPERM, "%s", why);
	/* A client on the host itself (the daemon's own pid and mount namespaces): there is no
	 * container to join, and runnerd runs there without a daemon. */
	_cleanup_close_ int own_pid = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int own_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (own_pid >= 0 && own_mnt >= 0 && ns[RD_SERVE_NS_MNT] >= 0 && ns[RD_SERVE_NS_PID] >= 0 &&
	    same_file(ns[RD_SERVE_NS_PID], own_pid) && same_file(ns[RD_SERVE_NS_MNT], own_mnt))
		return refuse(sock, EPERM,
		              "the client runs on the host, not in a container: runnerd serve "
		              "runs the agents of containers; on the host, start the agent with "
		              "runnerd itself (runnerd --profile NAME -- AGENT)");
	/* A rootless engine's supervisor runs in the container's pid namespace, as its root; a
	 * rootful one's processes stay outside it, but read the container's files and the agent's
	 * memory: a process of the container that may trace any process, or mount, is refused
	 * all the same. */
	int can_trace = container_has(ns[RD_SERVE_NS_PID], cr.pid, CAP_SYS_PTRACE);
	int can_admin = can_trace ? 0 : container_has(ns[RD_SERVE_NS_PID], cr.pid, CAP_SYS_ADMIN);
	if (can_trace != 0 || can_admin != 0)
		return refuse(sock, EPERM,
		              "the container %s: its processes could take over runnerd serve's "
		              "supervisor, which runs among them with more privilege (root of the "
		              "machine, or of a rootless container's user namespace); start it "
		              "without (no --privileged, no --cap-add), or run runnerd inside it "
		              "(docs/containers.md, Recipes)",
		              can_trace < 0 || can_admin < 0
		                  ? "has capabilities runnerd cannot read"
		              : can_trace ? "may hold CAP_SYS_PTRACE"
		                          : "may hold CAP_SYS_ADMIN");
	char apparmor[256];
	if (agent_label(cr.pid, apparmor, sizeof(apparmor), why, sizeof(why)) < 0)
		return refuse(sock, EPERM, "%s", why);
	const char *profile = h.profile[0] ? h.profile : sv->cli->profile;
	bool allowed = strcmp(profile, sv->cli->profile) == 0;
	for (size_t i = 0; !allowed && i < sv->n_allowed; i++)
		allowed = strcmp(profile, sv->allowed[i]) == 0;
	if (!allowed || strchr(profile, '/'))
		return refuse(sock, EPERM,
		              "profile %s is not allowed here: runnerd serve takes --profile %s%s "
		              "(and those of --allow-profile)",
		              profile, sv->cli->profile, sv->n_allowed ? "" : " alone");
	struct rd_bpf *filters = NULL;
	long nf = container_filters(cr.pid, &filters);
	if (nf < 0)
		return refuse(sock, (int)-nf,
		              "reading the container's seccomp filters of the agent (pid %d): %s",
		              (int)cr.pid, strerror((int)-nf));
	char *where = where_of(cr.pid, userns);
	fprintf(stderr,
	        "runnerd serve: pid %d (uid %u) %s: profile %s, %ld seccomp filter%s kept%s%s\n",
	        (int)cr.pid, (unsigned)cr.uid, where ? where : "", profile, nf, nf == 1 ? "" : "s",
	        apparmor[0] ? ", AppArmor profile " : "", apparmor);

	struct rd_cli cli = *sv->cli;
	cli.profile = profile;
	cli.prompt = false;
	struct rd_serve_session ss = {
	    .sock = sock,
	    .pidfd = pidfd,
	    .uid = cr.uid,
	    .gid = cr.gid,
	    .argc = (int)h.argc,
	    .argv = argv,
	    .env = env,
	    .filters = filters,
	    .n_filters = (size_t)nf,
	    .where = where,
	    .pid = cr.pid,
	    .kill_fd = -1,
	    .waiting_fd = waiting_fd,
	    .stderr_fd = client_stderr,
	};
	memcpy(ss.ns, ns, sizeof(ns));
	ss.userns = userns;
	snprintf(ss.apparmor, sizeof(ss.apparmor), "%s", apparmor);
	return rd_cmd_run_served(&cli, &ss);
}

/* Connections that have not joined their container yet are the daemon's to bear: a process
 * of root's each, in the daemon's cgroup, waiting up to 10 s for a request and 5 s for the
 * client's stop. At most MAX_WAITING at once, and MAX_WAITING_UID of one uid or of one pid
 * namespace (a container's root connects as any uid it likes): beyond the first, further
 * connections wait in the listen queue; beyond the second, the connection is refused at once,
 * saying so, so that one user or one container cannot hold the daemon from everyone else. Each
 * session's process holds the write end of a pipe until it has joined the container's cgroups (or
 * ends): its EOF frees the place. */
#define MAX_WAITING     32
#define MAX_WAITING_UID 8

struct waiting {
	int fd; /* the pipe's read end; -1: a free place */
	uid_t uid;
	ino_t pidns; /* the peer's pid namespace (0: it could not be read: all such count as one) */
};

static int serve_loop(struct serve *sv, int lfd)
{
	struct waiting w[MAX_WAITING];
	struct pollfd pf[MAX_WAITING + 1];
	for (size_t i = 0; i < MAX_WAITING; i++)
		w[i].fd = -1;
	for (;;) {
		size_t n = 0, free_at = MAX_WAITING;
		for (size_t i = 0; i < MAX_WAITING; i++) {
			if (w[i].fd >= 0)
				pf[n++] = (struct pollfd){.fd = w[i].fd, .events = POLLIN};
			else if (free_at == MAX_WAITING)
				free_at = i;
		}
		/* The listener only while a place is free. */
		if (free_at < MAX_WAITING)
			pf[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "runnerd serve: poll: %s\n", strerror(errno));
			return 1;
		}
		for (size_t k = 0; k < n; k++)
			for (size_t i = 0; pf[k].revents && pf[k].fd != lfd && i < MAX_WAITING; i++)
				if (w[i].fd == pf[k].fd) {
					close(w[i].fd);
					w[i].fd = -1;
				}
		if (free_at == MAX_WAITING || !(pf[n - 1].revents & POLLIN))
			continue;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			fprintf(stderr, "runnerd serve: accept: %s\n", strerror(errno));
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				sleep(1);
				continue;
			}
			return 1;
		}
		struct ucred cr = {0};
		socklen_t len = sizeof(cr);
		size_t of_uid = 0;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
			close(fd);
			continue;
		}
		char ns_path[64];
		struct stat ns;
		snprintf(ns_path, sizeof(ns_path), "/proc/%d/ns/pid", (int)cr.pid);
		ino_t pidns = stat(ns_path, &ns) == 0 ? ns.st_ino : 0;
		size_t of_ns = 0;
		for (size_t i = 0; i < MAX_WAITING; i++) {
			of_uid += w[i].fd >= 0 && w[i].uid == cr.uid;
			of_ns += w[i].fd >= 0 && w[i].pidns == pidns;
		}
		if (of_uid >= MAX_WAITING_UID) {
			refuse(fd, EAGAIN,
			       "uid %u has %zu connections waiting to start a session already: try "
			       "again when one has started",
			       (unsigned)cr.uid, of_uid);
			close(fd);
			continue;
		}
		if (of_ns >= MAX_WAITING_UID) {
			refuse(fd, EAGAIN,
			       "the client's container (pid namespace %llu) has %zu connections "
			       "waiting to start a session already: try again when one has started",
			       (unsigned long long)pidns, of_ns);
			close(fd);
			continue;
		}
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0) {
			refuse(fd, errno, "pipe: %s", strerror(errno));
			close(fd);
			continue;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(lfd);
			close(p[0]);
			for (size_t i = 0; i < MAX_WAITING; i++)
				if (w[i].fd >= 0)
					close(w[i].fd);
			_exit(session(sv, fd, p[1]));
		}
		close(p[1]);
		if (pid < 0) {
			refuse(fd, errno, "fork: %s", strerror(errno));
			close(p[0]);
		} else {
			w[free_at] = (struct waiting){.fd = p[0], .uid = cr.uid, .pidns = pidns};
		}
		close(fd);
	}
}

/* A socket handed over by systemd (LISTEN_FDS), else -1. */
static int activated_socket(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds || atoi(pid) != getpid() || atoi(fds) != 1)
		return -1;
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "runnerd serve: --socket %s: too long for a socket path\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct stat st;
	/* A socket left by an earlier daemon is replaced; anything else there is not ours. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	/* Any local user and container may ask: each gets commands run as itself, in its own
	 * namespaces, with less than it has (docs/containers.md). */
	mode_t old = umask(0111);
	int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 64) < 0) {
		fprintf(stderr, "runnerd serve: listening on %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int rd_cmd_serve(struct rd_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
	                                     {"allow-profile", required_argument, NULL, 'A'},
	                                     {NULL, 0, NULL, 0}};
	struct serve sv = {.cli = cli, .socket = RD_SERVE_SOCKET};
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c == 's')
			sv.socket = optarg;
		else if (c == 'A' && sv.n_allowed < MAX_ALLOWED)
			sv.allowed[sv.n_allowed++] = optarg;
		else {
			fprintf(stderr,
			        "usage: runnerd [--config F] --profile P serve [--socket PATH] "
			        "[--allow-profile Q ...]\n");
			return 2;
		}
	}
	if (!cli->profile) {
		fprintf(stderr, "runnerd serve: --profile is required (the profile of every "
		                "session that asks for none)\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "runnerd serve: must run as root: it reads the callers of other "
		                "users and containers, and joins containers' namespaces\n");
		return 1;
	}
	/* Every profile it may take, checked now rather than at a container's first start. */
	struct rd_config cfg = {0};
	if (rd_cli_load_config(cli, &cfg) < 0)
		return 1;
	for (size_t i = 0; i <= sv.n_allowed; i++) {
		struct rd_profile prof = {0};
		struct rd_error err = {0};
		if (rd_profile_load(&cfg, i ? sv.allowed[i - 1] : cli->profile, &prof, &err) < 0) {
			rd_cli_print_error(&err);
			rd_config_free(&cfg);
			return 1;
		}
		rd_profile_free(&prof);
	}
	rd_config_free(&cfg);
	int lfd = activated_socket();
	if (lfd < 0 && (lfd = listen_on(sv.socket)) < 0)
		return 1;
	/* Sessions are reaped as they end. */
	signal(SIGCHLD, SIG_IGN);
	fprintf(stderr, "runnerd serve: listening on %s (profile %s)\n", sv.socket, cli->profile);
	return serve_loop(&sv, lfd);
}
