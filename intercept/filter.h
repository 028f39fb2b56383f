/* The seccomp filter the agent runs under: every execve and execveat, on every x86 entry
 * point (x86_64, x32, i386), becomes a user notification for runnerd. */
#ifndef RD_FILTER_H
#define RD_FILTER_H

#include "lib/bpf.h"
#include "lib/error.h"

#include <stdbool.h>

/* Generate the BPF program with libseccomp (in runnerd, before forking the launcher); free it
 * with rd_bpf_free. */
int rd_filter_build(struct rd_bpf *f, bool no_tty_inject, struct rd_error *err) _wur_;

/* Load it in the calling (single-threaded) process with NEW_LISTENER | WAIT_KILLABLE_RECV and
 * no_new_privs. Returns the listener fd or -errno. Async-signal-safe: called in a fork. */
int rd_filter_load(const struct rd_bpf *f);

#endif
