/* The sandbox keys: the settings of a command's sandbox, which runner.json's "sandbox", a
 * profile's "commands" and each of its rules may set. Each is declared once, as a row of
 * RD_BOX_KEYS; the loader's parser and its lists of known keys, the merge of the three levels,
 * the launch plan (which carries the merged values to the sandbox) and explain all read the
 * table. A new key is one row here plus its use. */
#ifndef RD_BOX_H
#define RD_BOX_H

#include "lib/strv.h"
#include "lib/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

enum rd_box_type {
	RD_BOX_WORD,    /* one of .words, stored as its index + 1 */
	RD_BOX_SECONDS, /* a positive number of seconds, at most .max */
	RD_BOX_COUNT,   /* a positive integer, at most .max */
	RD_BOX_RLIMIT,  /* a positive integer: a cap on the rlimit .resource */
	RD_BOX_PATHS,   /* exact paths (absolute, "~/...", "${NAME}...", "{workspace}..."): the
	                 * levels' lists add up */
};

/* Where a key may be set. */
enum {
	RD_IN_SANDBOX = 1,  /* runner.json "sandbox" */
	RD_IN_COMMANDS = 2, /* a profile's "commands" */
	RD_IN_RULE = 4,     /* one of its "rules" */
	RD_IN_ALL = 7,
};

struct rd_box_key {
	const char *name;
	const char *group; /* the object it sits in ("rlimits"), or NULL */
	enum rd_box_type type;
	unsigned where;        /* RD_IN_* */
	const char *words[4];  /* RD_BOX_WORD */
	uint64_t max;          /* RD_BOX_SECONDS, RD_BOX_COUNT */
	const char *max_words; /* how long max is, for the message (NULL: the number says it) */
	int resource;          /* RD_BOX_RLIMIT: RLIMIT_* */
	uint64_t dflt;         /* what applies when no level sets it (0: nothing) */
};

/* The table. A number's value 0 is "not set": the next level down decides (rule, then
 * commands, then sandbox, then .dflt). For RD_BOX_WORD keys the value is the word's index + 1,
 * whose names are below. Paths are lists; mask and unmask have their own merge (rd_mask_list). */
#define RD_BOX_KEYS(X)                                                                             \
	X(MASK, .name = "mask", .type = RD_BOX_PATHS, .where = RD_IN_ALL)                          \
	X(UNMASK, .name = "unmask", .type = RD_BOX_PATHS, .where = RD_IN_COMMANDS)                 \
	X(WRITE, .name = "write", .type = RD_BOX_PATHS, .where = RD_IN_ALL)                        \
	X(PROTECT, .name = "protect", .type = RD_BOX_PATHS, .where = RD_IN_ALL)                    \
	X(CACHE, .name = "cache", .type = RD_BOX_PATHS, .where = RD_IN_SANDBOX | RD_IN_COMMANDS)   \
	X(PLACEHOLDER, .name = "placeholder", .type = RD_BOX_PATHS,                                \
	  .where = RD_IN_SANDBOX | RD_IN_COMMANDS)                                                 \
	X(SECCOMP, .name = "seccomp", .type = RD_BOX_WORD, .where = RD_IN_ALL,                     \
	  .words = {"default", "none", "strict"}, .dflt = RD_SECCOMP_DEFAULT)                      \
	X(NETWORK, .name = "network", .type = RD_BOX_WORD, .where = RD_IN_ALL,                     \
	  .words = {"host", "none"}, .dflt = RD_NET_HOST)                                          \
	X(TIMEOUT_S, .name = "timeout_s", .type = RD_BOX_SECONDS, .where = RD_IN_ALL,              \
	  .max = 86400 * 365, .max_words = "a year")                                               \
	X(KILL_GRACE_S, .name = "kill_grace_s", .type = RD_BOX_SECONDS, .where = RD_IN_ALL,        \
	  .max = 3600, .max_words = "an hour", .dflt = 5)                                          \
	X(LIFETIME, .name = "lifetime", .type = RD_BOX_WORD, .where = RD_IN_ALL,                   \
	  .words = {"session", "command"}, .dflt = RD_LIFETIME_SESSION)                            \
	X(MAX_SANDBOXES, .name = "max_sandboxes", .type = RD_BOX_COUNT,                            \
	  .where = RD_IN_SANDBOX | RD_IN_COMMANDS, .max = 4096, .dflt = 128)                       \
	X(EXECS_PER_SECOND, .name = "execs_per_second", .type = RD_BOX_COUNT,                      \
	  .where = RD_IN_SANDBOX | RD_IN_COMMANDS, .max = 100000)                                  \
	X(NOFILE, .name = "nofile", .group = "rlimits", .type = RD_BOX_RLIMIT, .where = RD_IN_ALL, \
	  .resource = RLIMIT_NOFILE)                                                               \
	X(NPROC, .name = "nproc", .group = "rlimits", .type = RD_BOX_RLIMIT, .where = RD_IN_ALL,   \
	  .resource = RLIMIT_NPROC)                                                                \
	X(AS, .name = "as", .group = "rlimits", .type = RD_BOX_RLIMIT, .where = RD_IN_ALL,         \
	  .resource = RLIMIT_AS)                                                                   \
	X(CPU, .name = "cpu", .group = "rlimits", .type = RD_BOX_RLIMIT, .where = RD_IN_ALL,       \
	  .resource = RLIMIT_CPU)                                                                  \
	X(FSIZE, .name = "fsize", .group = "rlimits", .type = RD_BOX_RLIMIT, .where = RD_IN_ALL,   \
	  .resource = RLIMIT_FSIZE)

/* The words' values. */
enum { RD_SECCOMP_DEFAULT = 1, RD_SECCOMP_NONE = 2, RD_SECCOMP_STRICT = 3 };
enum { RD_NET_HOST = 1, RD_NET_NONE = 2 };
/* How long a sandbox lives: until its last process has exited (background processes live on
 * after the command), or until its command has (its pid 1 exits, and the kernel kills the
 * rest). */
enum { RD_LIFETIME_SESSION = 1, RD_LIFETIME_COMMAND = 2 };

enum rd_box_id {
#define RD_BOX_ID(id, ...) RD_BOX_##id,
	RD_BOX_KEYS(RD_BOX_ID)
#undef RD_BOX_ID
	    RD_BOX_NKEYS
};

extern const struct rd_box_key rd_box_keys[RD_BOX_NKEYS];

/* The keys as one level sets them. */
struct rd_box {
	uint64_t v[RD_BOX_NKEYS];          /* 0: not set here */
	struct rd_strv list[RD_BOX_NKEYS]; /* RD_BOX_PATHS keys */
};

/* The values a command gets, every level merged: plain data, sent to the sandbox as it is. */
struct rd_box_opts {
	uint64_t v[RD_BOX_NKEYS];
};

/* Is the word key k set to word (its index + 1)? */
static inline bool rd_box_is(const struct rd_box_opts *o, enum rd_box_id k, uint64_t word)
{
	return o->v[k] == word;
}

/* The word of a word key's value, or NULL for 0 (not set) or a value out of range. */
const char *rd_box_word(enum rd_box_id k, uint64_t v);

/* Merge: each value from the first level that sets it, highest first (NULL levels skipped),
 * else the key's default. Path keys are left 0. */
struct rd_box_opts rd_box_merge(const struct rd_box *const *levels, size_t n);

void rd_box_free(struct rd_box *b);

#endif
