/* The seccomp profile of a command (rule "seccomp": "default"): the calls that would let a
 * command reach beyond its sandbox fail with EPERM. Everything else is allowed. */
#ifndef RD_CMDFILTER_H
#define RD_CMDFILTER_H

#include "lib/bpf.h"
#include "lib/error.h"

/* Built once with libseccomp when runnerd starts. */
int rd_cmdfilter_build(struct rd_bpf *out, struct rd_error *err) _wur_;

#endif
