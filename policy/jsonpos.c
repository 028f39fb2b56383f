/* Positions of JSON values, so that semantic config errors can be reported as FILE:LINE:COL.
 * jansson forgets positions once a parse succeeds, so this re-scans the same text. It is a
 * strict RFC 8259 recogniser rather than a skimmer that trusts its input, because it also sees
 * arbitrary bytes (fuzzing, or a caller that indexes before jansson has checked the text). */
#include "policy/jsonpos.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds the recursion (two frames per level) whatever the input. jansson allows 2048. */
#define MAX_DEPTH 1024

struct scan {
	const unsigned char *p, *end;
	int line, col; /* position of *p, in jansson's convention */
	struct rd_jsonpos *out;
	size_t cap;
	char *path; /* pointer of the value being scanned, always NUL-terminated */
	size_t plen, pcap;
};

static int parse_value(struct scan *s, int depth, int key_line, int key_col);

static void adv(struct scan *s, size_t n)
{
	while (n--) {
		unsigned char c = *s->p++;
		/* jansson counts characters, not bytes: UTF-8 continuation bytes don't move the
		 * column. Saturate so that absurd inputs cannot overflow the ints. */
		if (c == '\n') {
			s->line += s->line < INT_MAX;
			s->col = 1;
		} else if ((c & 0xC0) != 0x80) {
			s->col += s->col < INT_MAX;
		}
	}
}

static bool at(const struct scan *s, unsigned char c)
{
	return s->p < s->end && *s->p == c;
}

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		adv(s, 1);
}

static size_t digits(struct scan *s)
{
	size_t n = 0;
	for (; s->p < s->end && *s->p >= '0' && *s->p <= '9'; n++)
		adv(s, 1);
	return n;
}

/* Returns buf, maybe moved, with room for need elements; NULL leaves buf as it was. Geometric
 * growth keeps the whole index build linear. */
static void *grow(void *buf, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 32;
	if (need <= *cap)
		return buf;
	while (n < need && n <= SIZE_MAX / 2)
		n *= 2;
	buf = n >= need ? reallocarray(buf, n, elem) : NULL;
	if (buf)
		*cap = n;
	return buf;
}

/* Escapes n bytes per RFC 6901 into dst, or only measures them if dst is NULL. */
static size_t escape(char *dst, const char *b, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		const char *e = b[i] == '~' ? "~0" : b[i] == '/' ? "~1" : NULL;
		if (dst)
			memcpy(dst + len, e ? e : &b[i], e ? 2 : 1);
		len += e ? 2 : 1;
	}
	return len;
}

/* Keys are decoded straight into the path, escaped; raw is for '/' and array indices. */
static int path_put(struct scan *s, const char *b, size_t n, bool raw)
{
	char *p = grow(s->path, &s->pcap, s->plen + 2 * n + 1, 1);
	if (!p)
		return -ENOMEM;
	s->path = p;
	if (raw)
		memcpy(p + s->plen, b, n);
	s->plen += raw ? n : escape(p + s->plen, b, n);
	p[s->plen] = '\0';
	return 0;
}

/* Length of the well-formed UTF-8 sequence at p, or 0. Like jansson, this refuses overlong
 * forms, surrogates and code points above U+10FFFF. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t n = p[0] < 0x80 ? 1 : p[0] < 0xC2 ? 0 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t cp = p[0] & (0x7F >> n);
	if (n < 2)
		return n;
	if (p[0] > 0xF4 || (size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

static int hex4(struct scan *s, uint32_t *out)
{
	static const char hex[] = "0123456789abcdef";
	*out = 0;
	for (int i = 0; i < 4; i++, adv(s, 1)) {
		/* | 0x20 folds A-F to a-f and leaves digits alone; >= '0' keeps 0x10-0x19 out */
		const char *d =
		    s->p < s->end && *s->p >= '0' ? memchr(hex, *s->p | 0x20, 16) : NULL;
		if (!d)
			return -EINVAL;
		*out = *out << 4 | (uint32_t)(d - hex);
	}
	return 0;
}

/* After a backslash; decodes like jansson, surrogate pairs included. */
static int scan_escape(struct scan *s, bool key)
{
	static const char esc[] = "\"\\/bfnrt", dec[] = "\"\\/\b\f\n\r\t";
	static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0};
	unsigned char u[4];
	uint32_t cp, lo;
	size_t n;
	if (!at(s, 'u')) {
		/* memchr, unlike strchr, does not match the terminating NUL */
		const char *e = s->p < s->end ? memchr(esc, *s->p, sizeof(esc) - 1) : NULL;
		if (!e)
			return -EINVAL;
		adv(s, 1);
		return key ? path_put(s, &dec[e - esc], 1, false) : 0;
	}
	adv(s, 1);
	if (hex4(s, &cp) || (cp >= 0xDC00 && cp <= 0xDFFF))
		return -EINVAL;
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u')
			return -EINVAL;
		adv(s, 2);
		if (hex4(s, &lo) || lo < 0xDC00 || lo > 0xDFFF)
			return -EINVAL;
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
	}
	if (!key)
		return 0;
	/* A path is a C string; jansson refuses such keys as well. */
	if (cp == 0)
		return -EINVAL;
	n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	for (size_t i = n - 1; i > 0; i--, cp >>= 6)
		u[i] = (unsigned char)(0x80 | (cp & 0x3F));
	u[0] = (unsigned char)(lead[n] | cp);
	return path_put(s, (char *)u, n, false);
}

/* At the opening quote. A key is decoded onto the path; other strings are only validated. */
static int scan_string(struct scan *s, bool key)
{
	size_t n;
	int r = 0;
	adv(s, 1);
	while (!r) {
		if (s->p == s->end || *s->p < 0x20)
			return -EINVAL;
		if (*s->p == '"') {
			adv(s, 1);
			return 0;
		}
		if (*s->p == '\\') {
			adv(s, 1);
			r = scan_escape(s, key);
		} else if ((n = utf8_len(s->p, s->end))) {
			r = key ? path_put(s, (const char *)s->p, n, false) : 0;
			adv(s, n);
		} else {
			return -EINVAL;
		}
	}
	return r;
}

static int scan_number(struct scan *s)
{
	if (at(s, '-'))
		adv(s, 1);
	/* A leading zero stands alone: a digit after it is then rejected by the caller. */
	if (at(s, '0'))
		adv(s, 1);
	else if (!digits(s))
		return -EINVAL;
	if (at(s, '.')) {
		adv(s, 1);
		if (!digits(s))
			return -EINVAL;
	}
	if (at(s, 'e') || at(s, 'E')) {
		adv(s, 1);
		if (at(s, '+') || at(s, '-'))
			adv(s, 1);
		if (!digits(s))
			return -EINVAL;
	}
	return 0;
}

/* At '{' or '['; depth counts this container. */
static int parse_container(struct scan *s, int depth)
{
	bool obj = *s->p == '{';
	unsigned char close = obj ? '}' : ']';
	size_t plen = s->plen;
	char idx[24];
	int r;
	adv(s, 1);
	skip_ws(s);
	for (size_t i = 0; !at(s, close); i++) {
		int key_line = 0, key_col = 0;
		if (i > 0) {
			if (!at(s, ','))
				return -EINVAL;
			adv(s, 1);
			skip_ws(s);
		}
		if (obj) {
			key_line = s->line;
			key_col = s->col;
			if (!at(s, '"'))
				return -EINVAL;
			if ((r = path_put(s, "/", 1, true)) || (r = scan_string(s, true)))
				return r;
			skip_ws(s);
			if (!at(s, ':'))
				return -EINVAL;
			adv(s, 1);
		} else {
			snprintf(idx, sizeof(idx), "/%zu", i);
			if ((r = path_put(s, idx, strlen(idx), true)))
				return r;
		}
		r = parse_value(s, depth, key_line, key_col);
		if (r)
			return r;
		s->plen = plen;
		s->path[plen] = '\0';
		skip_ws(s);
	}
	adv(s, 1);
	return 0;
}

/* Records the value ahead, then scans it. depth is the number of enclosing containers. */
static int parse_value(struct scan *s, int depth, int key_line, int key_col)
{
	struct rd_jsonpos *o = s->out;
	struct rd_jsonpos_entry *v;
	const char *lit;
	char *path;
	skip_ws(s);
	if (s->p == s->end)
		return -EINVAL;
	v = grow(o->v, &s->cap, o->n + 1, sizeof(*v));
	path = v ? strdup(s->path) : NULL;
	if (v)
		o->v = v;
	if (!path)
		return -ENOMEM;
	v[o->n++] = (struct rd_jsonpos_entry){path, key_line, key_col, s->line, s->col};
	switch (*s->p) {
	case '{':
	case '[':
		return depth < MAX_DEPTH ? parse_container(s, depth + 1) : -EINVAL;
	case '"':
		return scan_string(s, false);
	case 't':
	case 'f':
	case 'n':
		lit = *s->p == 't' ? "true" : *s->p == 'f' ? "false" : "null";
		if ((size_t)(s->end - s->p) < strlen(lit) || memcmp(s->p, lit, strlen(lit)) != 0)
			return -EINVAL;
		adv(s, strlen(lit));
		return 0;
	default:
		return scan_number(s);
	}
}

int rd_jsonpos_index(const char *text, size_t len, struct rd_jsonpos *out)
{
	const unsigned char *p = (const unsigned char *)text;
	struct scan s = {.p = p, .line = 1, .col = 1, .out = out, .pcap = 1};
	int r;
	*out = (struct rd_jsonpos){0};
	if (!text)
		return -EINVAL;
	s.end = p + len;
	s.path = calloc(1, 1); /* the root's pointer is "" */
	r = s.path ? parse_value(&s, 0, 0, 0) : -ENOMEM;
	if (!r)
		skip_ws(&s);
	if (!r && s.p != s.end)
		r = -EINVAL;
	free(s.path);
	if (r)
		rd_jsonpos_free(out);
	return r;
}

bool rd_jsonpos_find(const struct rd_jsonpos *idx, const char *path, bool at_key, int *line,
                     int *col)
{
	/* Entries are in document order, so a duplicate key resolves to its first occurrence. */
	for (size_t i = 0; idx && i < idx->n; i++) {
		const struct rd_jsonpos_entry *e = &idx->v[i];
		if (strcmp(e->path, path) != 0)
			continue;
		at_key = at_key && e->key_line > 0;
		*line = at_key ? e->key_line : e->line;
		*col = at_key ? e->key_col : e->col;
		return true;
	}
	return false;
}

int rd_jsonpos_append(char *buf, size_t size, const char *token)
{
	size_t used = strnlen(buf, size), tlen = strlen(token);
	/* Measured first so that buf is left untouched on failure. */
	if (used == size || size - used < escape(NULL, token, tlen) + 2)
		return -ENAMETOOLONG;
	buf[used] = '/';
	buf[used + 1 + escape(buf + used + 1, token, tlen)] = '\0';
	return 0;
}

int rd_jsonpos_append_index(char *buf, size_t size, size_t index)
{
	char tok[24];
	snprintf(tok, sizeof(tok), "%zu", index);
	return rd_jsonpos_append(buf, size, tok);
}

void rd_jsonpos_free(struct rd_jsonpos *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->n; i++)
		free(idx->v[i].path);
	free(idx->v);
	*idx = (struct rd_jsonpos){0};
}
