#include "lib/bpf.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

int rd_bpf_export(void *ctx, struct rd_bpf *out, struct rd_error *err)
{
	memset(out, 0, sizeof(*out));
	_cleanup_close_ int mfd = memfd_create("runnerd-bpf", MFD_CLOEXEC);
	if (mfd < 0)
		return rd_error_set(err, errno, "memfd_create: %s", strerror(errno));
	int r = seccomp_export_bpf(ctx, mfd);
	if (r < 0)
		return rd_error_set(err, -r, "seccomp_export_bpf: %s", strerror(-r));
	off_t size = lseek(mfd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter) != 0 ||
	    size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return rd_error_set(err, EINVAL, "exported filter has a bad size (%lld)",
		                    (long long)size);
	out->insns = malloc((size_t)size);
	if (!out->insns)
		return rd_error_set(err, ENOMEM, "out of memory");
	if (pread(mfd, out->insns, (size_t)size, 0) != size) {
		rd_bpf_free(out);
		return rd_error_set(err, EIO, "reading the exported filter failed");
	}
	out->len = (unsigned short)(size / sizeof(struct sock_filter));
	return 0;
}

int rd_seccomp_deny_tty_inject(void *ctx)
{
	/* TIOCSTI pushes input into a terminal, which whoever reads it runs; TIOCLINUX can do
	 * the same on a console. The kernel takes the request as 32 bits, so compare only those
	 * (high bits must not slip by). */
	static const unsigned long tty_inject[] = {TIOCSTI, TIOCLINUX};
	int r = 0;
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(tty_inject); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
		                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, tty_inject[i]));
	return r;
}

void rd_bpf_free(struct rd_bpf *b)
{
	free(b->insns);
	b->insns = NULL;
	b->len = 0;
}
