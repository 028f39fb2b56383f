#include "filter.h"
#include "syscalls.h"

#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

int rd_filter_build(struct rd_filter *f, struct rd_error *err)
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
	if (r < 0) {
		seccomp_release(ctx);
		return rd_error_set(err, -r, "building the exec filter: %s", strerror(-r));
	}

	/* libseccomp 2.5.4 cannot load with WAIT_KILLABLE_RECV, so export the BPF and load it
	 * with seccomp(2) ourselves. */
	_cleanup_close_ int mfd = memfd_create("runnerd-filter", MFD_CLOEXEC);
	if (mfd < 0) {
		seccomp_release(ctx);
		return rd_error_set(err, errno, "memfd_create: %s", strerror(errno));
	}
	r = seccomp_export_bpf(ctx, mfd);
	seccomp_release(ctx);
	if (r < 0)
		return rd_error_set(err, -r, "seccomp_export_bpf: %s", strerror(-r));
	off_t size = lseek(mfd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter) != 0 ||
	    size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return rd_error_set(err, EINVAL, "exported filter has a bad size (%lld)",
		                    (long long)size);
	f->insns = malloc((size_t)size);
	if (!f->insns)
		return rd_error_set(err, ENOMEM, "out of memory");
	if (pread(mfd, f->insns, (size_t)size, 0) != size) {
		rd_filter_free(f);
		return rd_error_set(err, EIO, "reading the exported filter failed");
	}
	f->len = (unsigned short)(size / sizeof(struct sock_filter));
	return 0;
}

int rd_filter_load(const struct rd_filter *f)
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

void rd_filter_free(struct rd_filter *f)
{
	free(f->insns);
	f->insns = NULL;
	f->len = 0;
}
