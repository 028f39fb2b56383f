/* The error convention of every runnerd library: functions return 0 or -errno and, when there
 * is something to say, fill a caller-owned struct rd_error. Only the top level prints. */
#ifndef RD_ERROR_H
#define RD_ERROR_H

#include "lib/util.h"

#include <stddef.h>

#define RD_ERROR_MAX_MESSAGES 20

struct rd_error {
	int err;        /* positive errno of the first error, 0 if none */
	size_t n;       /* messages recorded, including any that did not fit */
	char msg[4096]; /* one message per line, newline-separated, no trailing newline */
};

/* Record a message (appended on a new line when one is already there) and return -err. */
int rd_error_set(struct rd_error *e, int err, const char *fmt, ...) _printf_(3, 4);

/* Prefix every recorded message with a context, e.g. a file name. */
void rd_error_prefix(struct rd_error *e, const char *fmt, ...) _printf_(2, 3);

void rd_error_clear(struct rd_error *e);

#endif
