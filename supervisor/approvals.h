/* Approvals: the commands an "ask" rule holds until an operator answers. The caller already runs
 * the stub, which waits; approved, the command runs from the plan held since the trap; denied,
 * timed out or withdrawn, the stub tells the caller why (one line on its stderr) and exits 126.
 * One answer wins: the first ends the ask, a later one is refused with what the first was. */
#ifndef RD_SUP_APPROVALS_H
#define RD_SUP_APPROVALS_H

#include "supervisor/core.h"

/* Approvals that may wait at once; one more is refused with EACCES. */
#define RD_MAX_PENDING 64

/* How an ask ended. */
enum ask_answer { ANSWER_APPROVE, ANSWER_DENY, ANSWER_TIMEOUT, ANSWER_WITHDRAWN };

/* Hold c's command, whose plan q becomes c's, until the answer (c's timer counts
 * ask_timeout_s already): audited as pending. */
void sup_ask_hold(struct sup *u, struct cmd *c, struct req *q);

/* The end of an ask, from whichever source: audited, then the command runs or the stub tells
 * the caller why not. 1: done as given; -1: an approval that did not run the command (the audit
 * could not be written, or the launch failed); 0: it was not pending. May free c. */
int sup_ask_answer(struct sup *u, struct cmd *c, enum ask_answer a, const struct answerer *by,
                   const char *reason);

/* A pending ask's stub said something: a signal to its caller (which withdraws the ask if the
 * signal would have ended the command), or it is gone. */
void sup_ask_ctl(struct sup *u, struct cmd *c);

/* A pending ask's timer fired: no answer in time denies. */
void sup_ask_timer(struct sup *u, struct cmd *c);

/* The agent has exited: every ask still pending is withdrawn. */
void sup_ask_session_end(struct sup *u);

/* How request id was answered, if it is still remembered; NULL if not. */
const char *sup_ask_answered_what(struct sup *u, uint64_t id);

/* The oldest pending ask, or NULL. */
struct cmd *sup_ask_oldest(struct sup *u);

#endif
