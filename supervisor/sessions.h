/* Sessions side by side. A session's commands can write where its writable roots are, which
 * may hold another session's workspace (one started in the home, and one in a project of it;
 * two in /tmp): there they can write the other one's .git/hooks and .git/config, which that
 * session holds read-only to its own commands only, and its granted git would run them with its
 * secret. So each session lists where its commands can write, in a file of the user's control
 * directory (masked in every sandbox), and a grant's check counts those places of every other
 * live session of the user as where commands can write. */
#ifndef RD_SUP_SESSIONS_H
#define RD_SUP_SESSIONS_H

#include "supervisor/core.h"

/* s's entry in dir/sessions (dir: the user's control directory): its writable roots (the
 * caches, written through layers of its own, and its /dev/shm left out), protected paths,
 * protected paths that were missing at the start, and workspace. Its path in *out (malloc'd),
 * for sup_sessions_unlist. 0 or -errno. */
int sup_sessions_list(const char *dir, const struct rd_session *s, char **out);

/* The entry written by sup_sessions_list, removed (path NULL: none). */
void sup_sessions_unlist(const char *path);

/* The other live sessions of the user, read again (those whose runnerd is gone are left out,
 * and their entries removed). */
void sup_sessions_load(struct sup *u);

/* Where path lies for commands of another session (loaded by sup_sessions_load) to write:
 * the writable root, with that session's runnerd and workspace, as text for a refusal (valid
 * until the next call); NULL if nowhere. */
const char *sup_sessions_writable(struct sup *u, const char *path);

/* The live sessions of the user listed in dir (a control directory's sessions/), into pe (its
 * old ones freed), as sup_sessions_load; sup_sessions_peers_free frees them (u->pe too). */
void sup_sessions_read(const char *dir, struct peers *pe);
void sup_sessions_peers_free(struct peers *pe);

#endif
