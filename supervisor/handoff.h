/* The handoff of a trapped caller to runnerd-stub, whole: interrupt and answer, rewrite the
 * registers at the stop, let the stub's execveat through once the command's exec is known to
 * have gone through, check the new image, detach; or, when the command's exec failed, give the
 * caller its own exec back, failed (intercept/handoff.h has the kernel side of each step). */
#ifndef RD_SUP_HANDOFF_H
#define RD_SUP_HANDOFF_H

#include "supervisor/core.h"

/* The first steps, for a command launched (allow), starting (allow, pipelined: the control
 * socket is in the caller already) or not yet (ask): the control socket goes in and answers the
 * trapped exec, after PTRACE_INTERRUPT. Links c. The rest comes through sup_handoff_tracee. */
void sup_handoff_begin(struct sup *u, struct cmd *c, uint64_t notif_id);

/* Pipelined: the control socket goes in now, before the command's exec is known to have
 * succeeded, so that the caller's interrupt stop and the stub's execveat trap happen while
 * the command starts; then sup_handoff_begin. Only where the control fd's place is free: if
 * the command's exec fails, the caller gets its own exec back. Returns 0 or -errno (nothing
 * linked then). */
int sup_handoff_pipelined(struct sup *u, struct cmd *c, uint64_t notif_id, struct rd_error *err);

/* A notification from a caller in the middle of its handoff: the stub's execveat, or anything
 * else (which aborts the handoff). */
void sup_handoff_notification(struct sup *u, struct cmd *c, const struct seccomp_notif *n);

/* The setup pipe of a pipelined command is readable: its exec went through, or failed. */
void sup_handoff_exec_result(struct sup *u, struct cmd *c);

/* A ptrace stop or the end of a task runnerd traces. */
void sup_handoff_tracee(struct sup *u, pid_t pid, int status);

/* The caller died or did something other than the planned exec: nothing of its command may go
 * on. May free c (it stays readable until the round of events ends). */
void sup_handoff_abort(struct sup *u, struct cmd *c, const char *why);

#endif
