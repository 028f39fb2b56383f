#include "policy/dotenv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\f' || c == '\v';
}

static bool name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

/* Whether what follows p on its line is blanks and at most a comment. */
static bool rest_empty(const char *p, const char *end)
{
	while (p < end && blank(*p))
		p++;
	return p == end || *p == '\n' || *p == '#';
}

static const char *line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return nl ? nl : end;
}

/* The value of one entry, from v (v_len bytes, as matched) into out (room for v_len + 1):
 * trimmed, outer quotes taken off, \n and \r made characters in "" quotes. */
static void finish_value(const char *v, size_t v_len, char *out)
{
	while (v_len && (blank(*v) || *v == '\n'))
		v++, v_len--;
	while (v_len && (blank(v[v_len - 1]) || v[v_len - 1] == '\n'))
		v_len--;
	char quote = v_len ? v[0] : '\0';
	if (v_len >= 2 && (quote == '\'' || quote == '"' || quote == '`') && v[v_len - 1] == quote)
		v++, v_len -= 2;
	size_t o = 0;
	for (size_t i = 0; i < v_len; i++) {
		if (quote == '"' && v[i] == '\\' && i + 1 < v_len &&
		    (v[i + 1] == 'n' || v[i + 1] == 'r')) {
			out[o++] = v[i + 1] == 'n' ? '\n' : '\r';
			i++;
			continue;
		}
		out[o++] = v[i];
	}
	out[o] = '\0';
}

int rd_dotenv_each(const char *text, size_t len,
                   int (*fn)(const char *name, size_t name_len, const char *value, void *ctx),
                   void *ctx)
{
	/* Line ends made "\n", as dotenv does first. */
	char *buf = malloc(len + 1);
	char *scratch = malloc(len + 1);
	if (!buf || !scratch) {
		free(buf);
		free(scratch);
		return -ENOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\r') {
			buf[n++] = '\n';
			if (i + 1 < len && text[i + 1] == '\n')
				i++;
		} else {
			buf[n++] = text[i];
		}
	}
	const char *p = buf, *end = buf + n;
	int r = 0;
	while (r == 0 && p < end) {
		const char *eol = line_end(p, end);
		const char *q = p;
		while (q < eol && blank(*q))
			q++;
		if (eol - q > 7 && memcmp(q, "export", 6) == 0 && blank(q[6])) {
			q += 6;
			while (q < eol && blank(*q))
				q++;
		}
		const char *name = q;
		while (q < eol && name_char(*q))
			q++;
		size_t name_len = (size_t)(q - name);
		const char *s = q;
		while (s < eol && blank(*s))
			s++;
		bool sep = false;
		if (name_len && s < eol && *s == '=')
			q = s + 1, sep = true;
		else if (name_len && q < eol && *q == ':' && q + 1 < eol && blank(q[1]))
			q = q + 1, sep = true;
		if (!sep) {
			p = eol + (eol < end);
			continue;
		}
		/* A quoted value: to its first quote not after a backslash, which only blanks
		 * and a comment may follow on that line; else the value runs to '#' or the line's
		 * end. */
		const char *v = q, *v_end = NULL, *next = NULL;
		const char *o = q;
		while (o < eol && blank(*o))
			o++;
		if (o < eol && (*o == '\'' || *o == '"' || *o == '`')) {
			char quote = *o;
			const char *c = o + 1;
			while (c < end && *c != quote)
				c += *c == '\\' && c + 1 < end && c[1] == quote ? 2 : 1;
			if (c < end && rest_empty(c + 1, end)) {
				v_end = c + 1;
				next = line_end(c + 1, end);
			}
		}
		if (!v_end) {
			v_end = q;
			while (v_end < eol && *v_end != '#')
				v_end++;
			next = eol;
		}
		finish_value(v, (size_t)(v_end - v), scratch);
		r = fn(name, name_len, scratch, ctx);
		p = next + (next < end);
	}
	explicit_bzero(buf, n);
	explicit_bzero(scratch, len + 1);
	free(buf);
	free(scratch);
	return r;
}

struct find {
	const char *name;
	char *value;
	bool oom;
};

static int take(const char *name, size_t name_len, const char *value, void *ctx)
{
	struct find *f = ctx;
	if (strlen(f->name) != name_len || memcmp(f->name, name, name_len) != 0)
		return 0;
	char *copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	if (f->value) {
		explicit_bzero(f->value, strlen(f->value));
		free(f->value);
	}
	f->value = copy;
	return 0;
}

int rd_dotenv_value(const char *text, size_t len, const char *name, char **value)
{
	struct find f = {.name = name};
	int r = rd_dotenv_each(text, len, take, &f);
	if (r < 0) {
		free(f.value);
		return r;
	}
	*value = f.value;
	return f.value != NULL;
}
