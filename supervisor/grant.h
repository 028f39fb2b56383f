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

/* For q's rule, when it grants a secret: what the program would read that commands could
 * have written. Refused (the errno, and why, naming the path and the fix) while a protected
 * path missing at the session's start is there (rd_session.missing), or when the caller's
 * cwd is in a git repository whose hooks or configuration commands can write (one a command
 * made; a .git file; a .git/commondir). The repository's top goes to q->git_top. */
int sup_grant_reads(struct sup *u, struct req *q, char *why, size_t n);

/* For q's rule, when it grants a secret, q->env made the program's own: PATH without its
 * directories that lie where commands can write (a project's venv, ./node_modules/.bin),
 * GIT_ALLOW_PROTOCOL that lets git reach no local repository (whose hooks a command may have
 * written; git runs them with the secret), git's settings (GIT_CONFIG_PARAMETERS), and for
 * git itself the repository its check took (GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR). And
 * q->gates: the gits of git's exec paths, which the sandbox covers with one that runs only in
 * that repository (sandbox/view.c, git_gate), for every granted command.
 * Returns 0, -ENOMEM, or the errno to refuse the exec with and why: there is no /bin/sh for
 * runnerd's gits, or no git in the exec path to cover. */
int sup_grant_env(struct sup *u, struct req *q, char *why, size_t n);

void sup_grants_free(struct sup *u);

#endif
