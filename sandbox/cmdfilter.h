/* The seccomp profile of a command: the calls that would let a command reach beyond its
 * sandbox fail with EPERM. Everything else is allowed. With userns (rule "seccomp":
 * "default"), a command may make user namespaces, and others and mounts below them (a sandbox
 * of its own, such as bubblewrap); without ("strict"), no namespace and no mount. */
#ifndef RD_CMDFILTER_H
#define RD_CMDFILTER_H

#include <stdbool.h>

#include "lib/bpf.h"
#include "lib/error.h"

/* Built once with libseccomp when runnerd starts. */
int rd_cmdfilter_build(struct rd_bpf *out, bool userns, struct rd_error *err) _wur_;

#endif
