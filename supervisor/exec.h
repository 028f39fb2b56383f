/* One trapped exec, from the notification to the start of its handoff. */
#ifndef RD_SUP_EXEC_H
#define RD_SUP_EXEC_H

#include "supervisor/core.h"

/* Read it, decide, seize and snapshot the caller, then launch the command or hold it for an
 * answer; or refuse it. Every path ends in one answer to the caller (or in its handoff). */
void sup_exec(struct sup *u, const struct seccomp_notif *n);

#endif
