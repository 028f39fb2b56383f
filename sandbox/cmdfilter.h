/* The seccomp profile of a command (rule "seccomp": "default"): the calls that would let a
 * command reach beyond its sandbox fail with EPERM. Everything else is allowed. */
#ifndef RD_CMDFILTER_H
#define RD_CMDFILTER_H

#include "error.h"
#include "util.h"

#include <linux/filter.h>
#include <stddef.h>

struct rd_bpf {
	struct sock_filter *insns;
	unsigned short len;
};

/* Built once with libseccomp when runnerd starts. */
int rd_cmdfilter_build(struct rd_bpf *out, struct rd_error *err) _wur_;

/* Export a libseccomp context (scmp_filter_ctx) as BPF, to load with seccomp(2) ourselves. */
int rd_bpf_export(void *ctx, struct rd_bpf *out, struct rd_error *err) _wur_;

void rd_bpf_free(struct rd_bpf *b);

/* Add to a libseccomp context: EPERM for TIOCSTI and TIOCLINUX, typing into a terminal.
 * Returns libseccomp's result (0 or -errno). */
int rd_seccomp_deny_tty_inject(void *ctx);

#endif
