/* Sessions side by side. A session's commands can write where its writable roots are, which
 * may hold another session's workspace (one started in the home, and one in a project of it;
 * two in /tmp): there they can write the other one's .git/hooks and .git/config, which that
 * session holds read-only to its own commands only, and its granted git would run them with its
 * secret. So each session lists where its commands can write, in a file of the user's sessions
 * directory (one per user, masked in every sandbox), and a grant's check counts those places of
 * every other session of the user as where commands can write: a live one's (its runnerd holds
 * a lock on its file, seen from any pid namespace), and an ended one's for what changed while
 * it ran. */
#ifndef RD_SUP_SESSIONS_H
#define RD_SUP_SESSIONS_H

#include "supervisor/core.h"

/* The places that may list the user's sessions, at most. */
#define SUP_SESSIONS_BASES 2

/* A session's start. The places that list the user's sessions: /run/runnerd as root, else
 * /run/user/UID/runnerd where /run/user/UID is the user's, and /tmp/runnerd-UID; each made
 * (0700) where missing, and taken only if it is the user's own 0700 directory. Never by
 * XDG_RUNTIME_DIR: sessions started with different values must see each other; readers read
 * every place (a login makes /run/user/UID, the last logout removes it). Into *dir (malloc'd),
 * the sessions/ of the first place taken, where this session lists itself.
 * From then on, reading the others' protected paths until it has listed itself
 * (sup_sessions_list), the start is held apart from every other's: else each could read the
 * list before the other is in it, and check a grant the other's commands can then write
 * around. Each place's lock, into held (sup_sessions_unlock lets go). 0, or -errno with err
 * set: no place could be taken, or another session has held one for 10 s. */
int sup_sessions_start(int held[SUP_SESSIONS_BASES], char **dir, struct rd_error *err);
void sup_sessions_unlock(int held[SUP_SESSIONS_BASES]);

/* A session's entry: its path, and the fd that holds its lock (live while held). */
struct sup_listed {
	char *path;
	int fd;
};

/* s's entry in dir: its writable roots (the caches, written through layers of its own, and
 * its /dev/shm left out), protected paths, protected paths that were missing at the start, and
 * workspace, into *out, for sup_sessions_unlist. 0 or -errno. */
int sup_sessions_list(const char *dir, const struct rd_session *s, struct sup_listed *out);

/* The entry written by sup_sessions_list, kept as ended (none listed: nothing). */
void sup_sessions_unlist(struct sup_listed *l);

/* The other sessions of the user, live or ended, read again for this exec (u->s's
 * sessions_dir, without its own entry, sessions_self). */
void sup_sessions_load(struct sup *u);

/* Where path lies for commands of another session (loaded by sup_sessions_load) to write:
 * the writable root, with that session's runnerd and workspace, as text for a refusal (valid
 * until the next call); NULL if nowhere. */
const char *sup_sessions_writable(struct sup *u, const char *path);

/* The sessions of the user, in every place that lists them, but self (an entry's name, or
 * NULL), into pe (its old ones freed), as sup_sessions_load; pe->err where they could not be
 * read whole. sup_sessions_peers_free frees them (u->pe too). */
void sup_sessions_read(const char *self, struct peers *pe);
void sup_sessions_peers_free(struct peers *pe);

#endif
