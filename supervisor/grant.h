/* What a rule that grants a secret asks of the program it names: a file the agent's user
 * cannot replace, or one whose contents the rule pins by SHA-256; and a pinned program runs
 * as the very bytes that were hashed. */
#ifndef RD_SUP_GRANT_H
#define RD_SUP_GRANT_H

#include "supervisor/core.h"

/* For q's rule (set): a pin checked, after which q->tg runs a sealed copy of the bytes that
 * matched it; else, for a rule that grants a secret, the program and every directory above
 * it checked for the agent's user's write access. 0, or the errno to refuse the exec with
 * and why (a sentence naming the file and the fix). */
int sup_grant_target(struct sup *u, struct req *q, char *why, size_t n);

void sup_grants_free(struct sup *u);

#endif
