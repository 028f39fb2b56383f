/* BPF programs for seccomp(2), built with libseccomp and exported so that runnerd can load
 * them itself (libseccomp 2.5.4 cannot load with the flags runnerd needs). */
#ifndef RD_BPF_H
#define RD_BPF_H

#include "lib/error.h"
#include "lib/util.h"

#include <linux/filter.h>
#include <stddef.h>

struct rd_bpf {
	struct sock_filter *insns;
	unsigned short len;
};

/* Export a libseccomp context (scmp_filter_ctx) as BPF, to load with seccomp(2) ourselves. */
int rd_bpf_export(void *ctx, struct rd_bpf *out, struct rd_error *err) _wur_;

void rd_bpf_free(struct rd_bpf *b);

/* Add to a libseccomp context: EPERM for TIOCSTI and TIOCLINUX, typing into a terminal.
 * Returns libseccomp's result (0 or -errno). */
int rd_seccomp_deny_tty_inject(void *ctx);

#endif
