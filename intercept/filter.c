#include "intercept/filter.h"
#include "lib/syscalls.h"

#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

int rd_filter_build(struct rd_bpf *f, bool no_tty_inject, struct rd_error *err)
{
	static const uint32_t arches[] = {SCMP_ARCH_X86_64, SCMP_ARCH_X32, SCMP_ARCH_X86};
	memset(f, 0, sizeof(*f));
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return rd_error_set(err, ENOMEM, "seccomp_init failed");
	int r = 0;
	/* The compat entry points are trapped too, not left open: runnerd answers a 32-bit exec
	 * itself (it refuses it, with an audit line), which a kill in the filter could not. */
	for (size_t i = 1; i < ARRAY_SIZE(arches) && r == 0; i++)
		r = seccomp_arch_add(ctx, arches[i]);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execve), 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execveat), 0);
	/* With --prompt, runnerd reads answers from the terminal the agent shares: the agent
	 * must not be able to type one. */
	if (r == 0 && no_tty_inject)
		r = rd_seccomp_deny_tty_inject(ctx);
	if (r < 0) {
		seccomp_release(ctx);
		return rd_error_set(err, -r, "building the exec filter: %s", strerror(-r));
	}

	/* libseccomp 2.5.4 cannot load with WAIT_KILLABLE_RECV, so export the BPF and load it
	 * with seccomp(2) ourselves. */
	r = rd_bpf_export(ctx, f, err);
	seccomp_release(ctx);
	return r;
}

int rd_filter_load(const struct rd_bpf *f)
{
	struct sock_fprog prog = {.len = f->len, .filter = f->insns};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* WAIT_KILLABLE_RECV: once runnerd has received a notification, only a fatal signal
	 * ends the wait. Without it Go's SIGURG preemption restarts the trapped execve forever,
	 * each restart a new notification id. */
	int fd = rd_seccomp(
	    SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
	return fd < 0 ? -errno : fd;
}
