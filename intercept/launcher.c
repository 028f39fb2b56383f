#include "intercept/launcher.h"
#include "lib/fdpass.h"
#include "lib/serve_proto.h"
#include "lib/syscalls.h"

#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

struct launch_msg {
	int stage; /* 1: loading the filter, 2: exec, 3: dropping capabilities */
	int err;
};

int rd_notif_reply(int listener, uint64_t id, int error, bool continue_call)
{
	struct seccomp_notif_resp resp = {
	    .id = id,
	    .error = continue_call ? 0 : error,
	    .flags = continue_call ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0,
	};
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		return -errno;
	return 0;
}

/* What runnerd may need and an agent never does: CAP_SYS_ADMIN (namespaces and mounts where
 * user namespaces are not to be had) and CAP_SYS_PTRACE (reading a caller where a container's
 * seccomp profile or Yama asks for it). An operator may give a container them for runnerd;
 * the agent does not keep them: not in its effective, permitted, inheritable or ambient sets,
 * and not in its bounding set where runnerd may drop from it. The filter's no_new_privs keeps
 * whatever the agent runs from getting them back. Every other capability stays. */
static int drop_runnerd_caps(void)
{
	static const cap_value_t drop[] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE};
	const int n = (int)(sizeof(drop) / sizeof(drop[0]));
	cap_t c = cap_get_proc();
	if (!c)
		return -errno;
	bool held = false, setpcap = false;
	cap_flag_value_t v;
	for (int i = 0; i < n; i++) {
		for (cap_flag_t f = CAP_EFFECTIVE; f <= CAP_INHERITABLE; f++)
			held = held || (cap_get_flag(c, drop[i], f, &v) == 0 && v == CAP_SET);
		/* The kernel takes a capability out of the ambient set when it leaves the permitted
		 * or inheritable one; lowered first all the same, and checked. */
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, drop[i], 0, 0) == 1 &&
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, drop[i], 0, 0) < 0) {
			int e = errno;
			cap_free(c);
			return -e;
		}
	}
	/* The bounding set only with CAP_SETPCAP; no_new_privs makes it moot for exec anyway. */
	setpcap = cap_get_flag(c, CAP_SETPCAP, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
	for (int i = 0; setpcap && i < n; i++)
		if (prctl(PR_CAPBSET_READ, drop[i], 0, 0, 0) == 1)
			prctl(PR_CAPBSET_DROP, drop[i], 0, 0, 0);
	int r = 0;
	if (held &&
	    (cap_set_flag(c, CAP_EFFECTIVE, n, drop, CAP_CLEAR) < 0 ||
	     cap_set_flag(c, CAP_PERMITTED, n, drop, CAP_CLEAR) < 0 ||
	     cap_set_flag(c, CAP_INHERITABLE, n, drop, CAP_CLEAR) < 0 || cap_set_proc(c) < 0))
		r = -errno;
	cap_free(c);
	return r;
}

static _Noreturn void child(int sock, const char *path, char *const argv[], char *const envp[],
                            const struct rd_bpf *filter, const sigset_t *sigmask)
{
	struct launch_msg m = {.stage = 1};
	/* Dispositions stay as runnerd inherited them (it sets none before this fork): what its
	 * starter ignored (nohup's SIGHUP, a background job's SIGINT) the agent ignores too. */
	sigprocmask(SIG_SETMASK, sigmask, NULL);

	int fd = drop_runnerd_caps();
	if (fd < 0) {
		m.stage = 3;
		m.err = -fd;
		send(sock, &m, sizeof(m), MSG_NOSIGNAL);
		_exit(127);
	}
	fd = rd_filter_load(filter);
	if (fd < 0) {
		m.err = -fd;
		send(sock, &m, sizeof(m), MSG_NOSIGNAL);
		_exit(127);
	}
	m.stage = 0;
	if (rd_send_buf_fds(sock, &m, sizeof(m), &fd, 1, 0) < 0)
		_exit(127);
	close(fd);

	execve(path, argv, envp);
	m.stage = 2;
	m.err = errno;
	send(sock, &m, sizeof(m), MSG_NOSIGNAL);
	_exit(127);
}

int rd_agent_start(const char *path, char *const argv[], char *const envp[],
                   const struct rd_bpf *filter, const sigset_t *sigmask, struct rd_agent *out,
                   struct rd_error *err)
{
	int sv[2];
	out->pid = -1;
	out->pidfd = out->listener = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return rd_error_set(err, errno, "socketpair: %s", strerror(errno));
	_cleanup_close_ int sock = sv[0];
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[1]);
		return rd_error_set(err, errno, "fork: %s", strerror(errno));
	}
	if (pid == 0)
		child(sv[1], path, argv, envp, filter, sigmask);
	close(sv[1]);
	out->pid = pid;

	struct launch_msg m = {0};
	size_t n_fds = 0;
	ssize_t n = rd_recv_buf_fds(sock, &m, sizeof(m), &out->listener, 1, &n_fds, 0);
	int r;
	if (n != sizeof(m) || m.stage != 0 || n_fds != 1) {
		if (n_fds == 1)
			close(out->listener);
		out->listener = -1;
		r = rd_error_set(err, m.err ? m.err : EPROTO, "%s failed: %s",
		                 m.stage == 3
		                     ? "dropping CAP_SYS_ADMIN and CAP_SYS_PTRACE from the "
		                       "agent"
		                     : "loading the exec filter",
		                 m.err ? strerror(m.err) : "the launcher died");
		if (m.err == EINVAL && m.stage != 3)
			rd_error_set(err, EINVAL,
			             "this kernel lacks seccomp user notification with "
			             "WAIT_KILLABLE_RECV (Linux 5.19 or later is needed)");
		goto fail;
	}

	/* The launcher's own execve of the agent is the first notification, from the launcher's
	 * tid, and the only original call ever let through with CONTINUE. */
	struct pollfd pfd = {.fd = out->listener, .events = POLLIN};
	if (poll(&pfd, 1, -1) < 0 || !(pfd.revents & POLLIN)) {
		r = rd_error_set(err, ECHILD, "the launcher died before it could exec the agent");
		goto fail;
	}
	struct seccomp_notif notif;
	memset(&notif, 0, sizeof(notif));
	if (ioctl(out->listener, SECCOMP_IOCTL_NOTIF_RECV, &notif) < 0 || (pid_t)notif.pid != pid) {
		r = rd_error_set(err, EPROTO, "unexpected first exec notification (from %u)",
		                 notif.pid);
		goto fail;
	}
	r = rd_notif_reply(out->listener, notif.id, 0, true);
	if (r < 0) {
		rd_error_set(err, -r, "letting the agent's exec through: %s", strerror(-r));
		goto fail;
	}
	/* EOF: the exec succeeded and closed the launcher's CLOEXEC end. A message: it failed. */
	memset(&m, 0, sizeof(m));
	n = recv(sock, &m, sizeof(m), 0);
	if (n == sizeof(m) && m.stage == 2) {
		r = rd_error_set(err, m.err, "cannot execute %s: %s", path, strerror(m.err));
		goto fail;
	}
	out->pidfd = rd_pidfd_open(pid, 0);
	if (out->pidfd < 0) {
		r = rd_error_set(err, errno, "pidfd_open(agent): %s", strerror(errno));
		goto fail;
	}
	return 0;
fail:
	if (out->listener >= 0)
		close(out->listener);
	out->listener = -1;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	out->pid = -1;
	return r;
}

void rd_agent_refuse_remote(int sock, int e, const char *text)
{
	struct rd_serve_answer a = {.magic = RD_SERVE_MAGIC, .status = (uint32_t)(e ? e : EPERM)};
	snprintf(a.text, sizeof(a.text), "%s", text);
	(void)!rd_send_buf_fds(sock, &a, sizeof(a), NULL, 0, MSG_DONTWAIT);
}

static int put_strings(int fd, char *const *v, size_t *count)
{
	size_t n = 0;
	for (; v && v[n]; n++) {
		size_t len = strlen(v[n]) + 1;
		if (write(fd, v[n], len) != (ssize_t)len)
			return -1;
	}
	*count = n;
	return 0;
}

int rd_agent_start_remote(int sock, pid_t pid, const char *path, char *const argv[],
                          char *const envp[], const struct rd_bpf *filter, struct rd_agent *out,
                          struct rd_error *err)
{
	out->pid = pid;
	out->listener = -1;
	struct rd_serve_answer a = {.magic = RD_SERVE_MAGIC, .filter_len = filter->len};
	size_t argc = 0, envc = 0, one = 0;
	char *const path_v[] = {(char *)path, NULL};
	_cleanup_close_ int block = memfd_create("runnerd-agent", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t flen = sizeof(*filter->insns) * filter->len;
	if (block < 0 || write(block, filter->insns, flen) != (ssize_t)flen ||
	    put_strings(block, path_v, &one) < 0 || put_strings(block, argv, &argc) < 0 ||
	    put_strings(block, envp, &envc) < 0 ||
	    fcntl(block, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return rd_error_set(err, errno ? errno : EIO,
		                    "the agent's start for the client: %s",
		                    strerror(errno ? errno : EIO));
	a.argc = (uint32_t)argc;
	a.envc = (uint32_t)envc;
	int r = rd_send_buf_fds(sock, &a, sizeof(a), &block, 1, 0);
	if (r < 0)
		return rd_error_set(err, -r, "runnerd-intercept (pid %d) is gone: %s", (int)pid,
		                    strerror(-r));
	struct rd_serve_loaded l = {0};
	size_t n_fds = 0;
	ssize_t n = rd_recv_buf_fds(sock, &l, sizeof(l), &out->listener, 1, &n_fds, 0);
	if (n != sizeof(l) || l.magic != RD_SERVE_MAGIC || l.stage != RD_SERVE_STAGE_LOADED ||
	    n_fds != 1) {
		if (n_fds == 1)
			close(out->listener);
		out->listener = -1;
		int e = n == sizeof(l) && l.err > 0 ? l.err : EPROTO;
		return rd_error_set(err, e, "runnerd-intercept (pid %d) %s: %s", (int)pid,
		                    n == sizeof(l) && l.stage == RD_SERVE_STAGE_FILTER
		                        ? "could not load the exec filter"
		                        : "did not hand over its listener",
		                    strerror(e));
	}
	/* The client's execve of the agent: the first notification, from its tid. */
	struct pollfd pfd = {.fd = out->listener, .events = POLLIN};
	struct seccomp_notif notif;
	memset(&notif, 0, sizeof(notif));
	if (poll(&pfd, 1, 30000) <= 0 || !(pfd.revents & POLLIN) ||
	    ioctl(out->listener, SECCOMP_IOCTL_NOTIF_RECV, &notif) < 0 || (pid_t)notif.pid != pid) {
		r = rd_error_set(err, EPROTO,
		                 "runnerd-intercept (pid %d) did not exec the agent as its first "
		                 "call (first notification from %u)",
		                 (int)pid, notif.pid);
		goto fail;
	}
	r = rd_notif_reply(out->listener, notif.id, 0, true);
	if (r < 0) {
		rd_error_set(err, -r, "letting the agent's exec through: %s", strerror(-r));
		goto fail;
	}
	/* EOF: the exec went through and closed the client's CLOEXEC socket. */
	memset(&l, 0, sizeof(l));
	n = recv(sock, &l, sizeof(l), 0);
	if (n == sizeof(l) && l.stage == RD_SERVE_STAGE_EXEC) {
		r = rd_error_set(err, l.err, "runnerd-intercept cannot execute %s: %s", path,
		                 strerror(l.err));
		goto fail;
	}
	return 0;
fail:
	close(out->listener);
	out->listener = -1;
	return r;
}
