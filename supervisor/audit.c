#include "supervisor/audit.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int rd_audit_open(struct rd_audit *a, const char *path, struct rd_error *err)
{
	a->fd = -1;
	a->written = 0;
	a->over = false;
	if (!path)
		return 0;
	a->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (a->fd < 0)
		return rd_error_set(err, errno, "%s: cannot open the audit log: %s", path,
		                    strerror(errno));
	return 0;
}

/* One piece of the caller's bytes at p, as shown: a folded run of spaces, a byte as it is or
 * as \xNN, or, inside single quotes, a quote as '\''. Returns the bytes of p it stands for. */
static size_t unit_of(const char *p, bool fold_spaces, bool quoted, char unit[32])
{
	size_t run = fold_spaces ? strspn(p, " ") : 0;
	if (run > 3) {
		snprintf(unit, 32, "<%zu spaces>", run);
		return run;
	}
	unsigned char c = (unsigned char)*p;
	if (quoted && c == '\'')
		snprintf(unit, 32, "'\\''");
	else if (c >= 0x20 && c < 0x7f && c != '\\')
		snprintf(unit, 32, "%c", c);
	else
		snprintf(unit, 32, "\\x%02x", c);
	return 1;
}

static size_t escape(char *out, size_t n, size_t cap, const char **s, bool fold_spaces, bool quoted)
{
	const char *p = *s;
	while (*p) {
		char unit[32];
		size_t used = unit_of(p, fold_spaces, quoted, unit);
		size_t w = strlen(unit);
		if (n + w >= cap)
			break; /* no room for this one: *s says where it stopped */
		memcpy(out + n, unit, w + 1);
		n += w;
		p += used;
	}
	*s = p;
	return n;
}

size_t rd_escape_bytes(char *out, size_t n, size_t cap, const char **s, bool fold_spaces)
{
	return escape(out, n, cap, s, fold_spaces, false);
}

/* A word a shell would take as it is: no quoting needed to tell where it ends. */
static bool plain_word(const char *a)
{
	if (!*a)
		return false;
	for (; *a; a++)
		if (!isalnum((unsigned char)*a) && !strchr("_@%+=:,./-", *a))
			return false;
	return true;
}

size_t rd_escape_word(char *out, size_t n, size_t cap, const char **s, bool fold_spaces)
{
	if (plain_word(*s))
		return escape(out, n, cap, s, fold_spaces, false);
	if (n + 2 >= cap)
		return n;
	out[n++] = '\'';
	out[n] = '\0';
	/* Room kept for the closing quote, which goes in once all of the word has. */
	n = escape(out, n, cap - 1, s, fold_spaces, true);
	if (!**s) {
		out[n++] = '\'';
		out[n] = '\0';
	}
	return n;
}

json_t *rd_json_strv(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, rd_json_bytes(v[i]));
	return a;
}

json_t *rd_json_bytes(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	/* Not UTF-8: keep every byte, escaping those that are not printable ASCII. */
	size_t cap = 4 * strlen(s) + 1;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	buf[0] = '\0';
	rd_escape_bytes(buf, 0, cap, &s, false);
	j = json_string(buf);
	free(buf);
	return j;
}

int rd_audit(struct rd_audit *a, const char *event, json_t *fields)
{
	if (!fields)
		return -EINVAL;
	if (a->fd < 0) {
		json_decref(fields);
		return 0;
	}
	bool bounded = strcmp(event, "exec") == 0 || strcmp(event, "refused") == 0;
	if (bounded && a->over) {
		json_decref(fields);
		return -ENOSPC;
	}
	json_t *o = json_object();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char when[64];
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + n, sizeof(when) - n, ".%06ldZ", ts.tv_nsec / 1000);
	json_object_set_new(o, "ts", json_string(when));
	json_object_set_new(o, "event", json_string(event));
	json_object_update(o, fields);
	json_decref(fields);
	char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!line)
		return -ENOMEM;
	size_t len = strlen(line);
	if (bounded && a->max && a->written + len + 1 > a->max) {
		free(line);
		a->over = true;
		(void)rd_audit(a, "audit_limit",
		               json_pack("{s:I, s:I}", "max_session_bytes", (json_int_t)a->max,
		                         "written", (json_int_t)a->written));
		return -ENOSPC;
	}
	line[len] = '\n'; /* json_dumps leaves the NUL: replace it, write len + 1 */
	ssize_t w = write(a->fd, line, len + 1);
	free(line);
	if (w > 0)
		a->written += (size_t)w;
	return w == (ssize_t)(len + 1) ? 0 : (w < 0 ? -errno : -EIO);
}

void rd_audit_close(struct rd_audit *a)
{
	if (a->fd >= 0) {
		fsync(a->fd);
		close(a->fd);
	}
	a->fd = -1;
}
