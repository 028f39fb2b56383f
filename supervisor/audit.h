/* The audit log: JSONL, one object per line, appended with one write(2) per event, written
 * before the decision it records takes effect, fsync'd at session end. Env names and
 * reasons only: a value is never written. */
#ifndef RD_AUDIT_H
#define RD_AUDIT_H

#include "lib/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct rd_audit {
	int fd; /* -1: no audit file */
	/* audit.max_session_bytes: what this session may write (0: no bound), and has written.
	 * An "exec" event past it is not written (-ENOSPC: the exec is refused), nor any
	 * "refused" after; the first such writes an "audit_limit" event. Other events, which
	 * follow an exec admitted before, are written. */
	size_t max, written;
	bool over;
};

/* The bound for a session that starts with no audit.max_session_bytes. */
#define RD_AUDIT_MAX_SESSION_BYTES ((size_t)256 << 20)

int rd_audit_open(struct rd_audit *a, const char *path, struct rd_error *err) _wur_;

/* Is there an audit file? Events on the exec path are built only then. */
static inline bool rd_audit_on(const struct rd_audit *a)
{
	return a->fd >= 0;
}

/* Append {"ts": ..., "event": name, ...fields}; takes ownership of fields. fields NULL (a
 * json_pack that failed) is an error, never an event with its details missing. Returns 0 or
 * -errno; the caller refuses the exec it was about to allow. */
int rd_audit(struct rd_audit *a, const char *event, json_t *fields);

/* Append the caller's bytes *s, escaped, to out (n bytes used of cap, kept NUL-terminated):
 * printable ASCII but the backslash as it is, any other byte as \xNN, and with fold_spaces a
 * run of more than three spaces as "<N spaces>". Stops where the next piece would not fit, with
 * *s at the first byte not written: *s pointing at the NUL means all of it. Returns the new n. */
size_t rd_escape_bytes(char *out, size_t n, size_t cap, const char **s, bool fold_spaces);

/* The same for one word of a command line (an argv entry), as a shell would read it back:
 * as it is if it holds only letters, digits and _@%+=:,./-, else in single quotes (a quote
 * in it as '\''), so that where each word ends is seen. A word cut short has no closing
 * quote. */
size_t rd_escape_word(char *out, size_t n, size_t cap, const char **s, bool fold_spaces);

/* A JSON string for bytes that may not be UTF-8 (paths, argv, env names are the caller's):
 * valid UTF-8 as it is, any other byte as the four characters \xNN. Never NULL but on OOM. */
json_t *rd_json_bytes(const char *s);

/* A JSON array of rd_json_bytes strings, for an argv. */
json_t *rd_json_strv(char *const *v, size_t n);

void rd_audit_close(struct rd_audit *a);

#endif
