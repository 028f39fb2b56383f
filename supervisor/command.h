/* A command in its sandbox, from its start to its end: its timeout, the stub's messages, the
 * reaper's report of the end, and what the caller is told. */
#ifndef RD_SUP_COMMAND_H
#define RD_SUP_COMMAND_H

#include "supervisor/core.h"

/* The command of c has started (or is about to: its sandbox has the plan): its timeout_s is
 * armed, the one place where it is, or its timer (an ask's) stopped when it has none. A timeout
 * that cannot be armed stops the command: a limit that cannot be kept is not dropped. Returns 0, or
 * -EPERM with err set and the sandbox destroyed. */
int sup_cmd_started(struct sup *u, struct cmd *c, struct rd_error *err);

/* The stub's control socket is readable (a signal to pass on, or the stub is gone), or
 * writable again for an end it had no room for. */
void sup_cmd_ctl(struct sup *u, struct cmd *c);

/* The reaper wrote a report: the command went on after a stop, or ended. */
void sup_cmd_status(struct sup *u, struct cmd *c);
/* Every end a reaper has written and runnerd not yet read, read now: a command's end can reach
 * its caller before runnerd (the reaper tells the stub itself), and the caller's next exec come
 * first in runnerd's loop. Not the end of a command whose exec runnerd has not seen through
 * (sup_cmd_exec_seen). With wait_back, when no sandbox is ready or asked for but one is on its
 * way back (sup_spare_coming_back), waits for it, until RD_BACK_MS after its command's end. */
void sup_cmd_read_ends(struct sup *u, bool wait_back);

/* A stopped stub's wake-up is due again (sup_stub_wake), or no more: the timer stops. Also
 * called when the stub says it is awake. */
void sup_cmd_wake_timer(struct cmd *c);

/* The command's timer fired: SIGTERM, then after the grace SIGKILL. */
void sup_cmd_timer(struct sup *u, struct cmd *c);

/* A child runnerd reaped: one of the commands' reapers? Then handled, and true. */
bool sup_cmd_reaped(struct sup *u, pid_t pid);

/* The agent has exited: every command's end is read if the reaper wrote it, and every sandbox
 * left gets SIGTERM (its command, if it still runs, is audited as killed when it ends). */
void sup_cmd_session_end(struct sup *u);

/* The longest kill_grace_s of the sandboxes left. */
unsigned sup_cmd_grace(const struct sup *u);

/* How many sandboxes are left (sup_cmd_live). */
size_t sup_cmd_live_count(const struct sup *u);

/* SIGKILL to every sandbox left. */
void sup_cmd_kill_all(struct sup *u);

/* SIGKILL to every sandbox left, each command that still runs audited as killed for why.
 * Returns how many. */
size_t sup_cmd_kill_for(struct sup *u, const char *why);

/* runnerd kill: SIGKILL to the agent (its pidfd) and to every process below runnerd that is not
 * one of runnerd's own (the zygote, the spare, the reapers): the agent's processes and orphans,
 * again until none runs. Returns how many were signalled, or -1 if /proc could not be read. */
long sup_cmd_kill_agent(struct sup *u);

#endif
