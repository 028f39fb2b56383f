#include "lib/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void rd_error_clear(struct rd_error *e)
{
	e->err = 0;
	e->n = 0;
	e->msg[0] = '\0';
}

int rd_error_set(struct rd_error *e, int err, const char *fmt, ...)
{
	if (err < 0)
		err = -err;
	if (err == 0)
		err = EINVAL;
	if (!e)
		return -err;
	if (e->n == 0) {
		e->err = err;
		e->msg[0] = '\0';
	}
	e->n++;
	if (e->n > RD_ERROR_MAX_MESSAGES)
		return -err;

	size_t len = strlen(e->msg);
	size_t room = sizeof(e->msg) - len;
	if (len > 0 && room > 1) {
		e->msg[len++] = '\n';
		e->msg[len] = '\0';
		room--;
	}
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(e->msg + len, room, fmt, ap);
	va_end(ap);
	if (w >= 0 && (size_t)w >= room && sizeof(e->msg) > 4)
		memcpy(e->msg + sizeof(e->msg) - 4, "...", 4);
	return -err;
}

void rd_error_prefix(struct rd_error *e, const char *fmt, ...)
{
	if (!e || e->n == 0)
		return;
	char prefix[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);

	char out[sizeof(e->msg)];
	size_t o = 0;
	const char *line = e->msg;
	while (*line && o + 1 < sizeof(out)) {
		const char *nl = strchr(line, '\n');
		size_t ll = nl ? (size_t)(nl - line) : strlen(line);
		int w = snprintf(out + o, sizeof(out) - o, "%s%s%.*s", o ? "\n" : "", prefix,
		                 (int)ll, line);
		if (w < 0 || (size_t)w >= sizeof(out) - o) {
			o = sizeof(out) - 1;
			break;
		}
		o += (size_t)w;
		line = nl ? nl + 1 : line + ll;
	}
	out[o] = '\0';
	memcpy(e->msg, out, o + 1);
}
