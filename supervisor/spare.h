/* Spare sandboxes: made while runnerd is idle, with what most commands get put in place ahead of
 * time (a preset), so that an exec only hands one its plan; and the zygote that clones them. */
#ifndef RD_SUP_SPARE_H
#define RD_SUP_SPARE_H

#include "supervisor/core.h"

/* Start the zygote (or say why there is none) and watch it. */
void sup_spare_setup(struct sup *u);

/* How long until a spare is owed: 0 now, -1 never (there is one, or one is being made). */
long sup_spare_wait_ms(const struct sup *u);

/* Make the next spare sandbox if there is none. */
void sup_spare_make(struct sup *u);

/* The zygote's socket is readable: a spare asked of it is ready (or the zygote is gone). */
void sup_spare_ready(struct sup *u);

/* A child of runnerd exited: the zygote, or the spare's reaper? Then handled, and true. */
bool sup_spare_reaped(struct sup *u, pid_t pid);

/* c's command ended alone and its sandbox's pid 1 waits for another plan (RD_REPORT_IDLE):
 * the sandbox becomes a spare again if a place is free and nothing speaks against it, else it
 * is destroyed (its pid 1 then reaped as c's). */
void sup_spare_return(struct sup *u, struct cmd *c);

/* How long after its command's end a sandbox may take to come back before runnerd stops waiting
 * for it (a pid 1 stopped from outside, SIGSTOP by another process of the user's, would hold
 * it). */
#define RD_BACK_MS 100

/* A command whose sandbox is on its way back (its pid 1 puts it back and then says so), to be
 * the next spare; NULL if none. */
struct cmd *sup_spare_coming_back(const struct sup *u);

/* No sandbox is ready or asked for. */
bool sup_spare_none_ready(const struct sup *u);

/* Give c the spare for plan, if its preset fits, or a sandbox of its own; the command is on its
 * way (rd_sandbox_start). The ends the reapers wrote must have been read (sup_cmd_read_ends):
 * a command that has ended with nothing left is not beside c. granted: a rule grants the command a
 * secret, which it gets in a sandbox no command has been in. Returns 0 or -errno with err set. */
int sup_spare_start(struct sup *u, struct cmd *c, const struct rd_launch_plan *plan, bool granted,
                    struct rd_error *err);

/* The session is over: the spare and the zygote go. */
void sup_spare_teardown(struct sup *u);

#endif
