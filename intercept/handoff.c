#include "intercept/handoff.h"

#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>

int rd_handoff_seize(pid_t tid)
{
	if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL) < 0)
		return -errno;
	return 0;
}

int rd_handoff_add_stub(int listener, uint64_t id, int stub_fd, int want_fd, int *stub_fd_in_task,
                        struct rd_error *err)
{
	struct seccomp_notif_addfd a = {
	    .id = id,
	    .flags = want_fd >= 0 ? SECCOMP_ADDFD_FLAG_SETFD : 0,
	    .srcfd = (uint32_t)stub_fd,
	    .newfd = want_fd >= 0 ? (uint32_t)want_fd : 0,
	    .newfd_flags = O_CLOEXEC,
	};
	int fd = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	if (fd < 0)
		return rd_error_set(err, errno, "injecting the stub: %s", strerror(errno));
	*stub_fd_in_task = fd;
	return 0;
}

int rd_handoff_answer(int listener, uint64_t id, int64_t val)
{
	struct seccomp_notif_resp resp = {.id = id, .val = val};
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 ? -errno : 0;
}

int rd_handoff_trace_syscalls(pid_t tid)
{
	long opts = PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD;
	return ptrace(PTRACE_SETOPTIONS, tid, 0, opts) < 0 ? -errno : 0;
}

int rd_handoff_send_ctl(int listener, uint64_t id, int ctl_fd, int ctl_target, bool send,
                        struct rd_error *err)
{
	/* SETFD replaces whatever the task had at ctl_target: runnerd has already copied every
	 * fd the command inherits, and the task is about to become the stub. */
	struct seccomp_notif_addfd c = {
	    .id = id,
	    .flags = SECCOMP_ADDFD_FLAG_SETFD | (send ? SECCOMP_ADDFD_FLAG_SEND : 0),
	    .srcfd = (uint32_t)ctl_fd,
	    .newfd = (uint32_t)ctl_target,
	    .newfd_flags = 0,
	};
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &c) < 0)
		return rd_error_set(err, errno, "injecting the control socket at fd %d: %s",
		                    ctl_target, strerror(errno));
	return 0;
}
