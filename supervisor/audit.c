#include "supervisor/audit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int rd_audit_open(struct rd_audit *a, const char *path, struct rd_error *err)
{
	a->fd = -1;
	if (!path)
		return 0;
	a->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (a->fd < 0)
		return rd_error_set(err, errno, "%s: cannot open the audit log: %s", path,
		                    strerror(errno));
	return 0;
}

size_t rd_escape_bytes(char *out, size_t n, size_t cap, const char **s, bool fold_spaces)
{
	const char *p = *s;
	while (*p) {
		size_t run = fold_spaces ? strspn(p, " ") : 0;
		char unit[32];
		int w = run > 3 ? snprintf(unit, sizeof(unit), "<%zu spaces>", run)
		        : (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f && *p != '\\'
		            ? snprintf(unit, sizeof(unit), "%c", *p)
		            : snprintf(unit, sizeof(unit), "\\x%02x", (unsigned char)*p);
		if (n + (size_t)w >= cap)
			break; /* no room for this one: *s says where it stopped */
		memcpy(out + n, unit, (size_t)w + 1);
		n += (size_t)w;
		p += run > 3 ? run : 1;
	}
	*s = p;
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
	line[len] = '\n'; /* json_dumps leaves the NUL: replace it, write len + 1 */
	ssize_t w = write(a->fd, line, len + 1);
	free(line);
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
