/* libFuzzer harness: whatever jansson accepts must be indexed, with every jansson value found at
 * the pointer config code would build for it, at a position that starts that kind of value. */
#include "policy/jsonpos.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

struct walk {
	const struct rd_jsonpos *idx;
	const char *text;
	size_t len, seen;
};

/* The byte at line:col, counted the way jansson does. */
static const char *char_at(const char *text, size_t len, int line, int col)
{
	int l = 1, c = 1;
	for (size_t i = 0; i < len; i++) {
		bool lead = ((unsigned char)text[i] & 0xC0) != 0x80;
		if (l == line && c == col && lead)
			return &text[i];
		if (text[i] == '\n') {
			l++;
			c = 1;
		} else if (lead) {
			c++;
		}
	}
	return NULL;
}

static size_t depth(json_t *v)
{
	size_t max = 0, d, i;
	const char *k;
	json_t *m;
	if (json_is_object(v)) {
		json_object_foreach(v, k, m)
		{
			d = depth(m);
			max = d > max ? d : max;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			d = depth(m);
			max = d > max ? d : max;
		}
	} else {
		return 0;
	}
	return max + 1;
}

static void walk(struct walk *w, json_t *v, char *path, size_t size, bool member)
{
	static const char first[] = {
	    [JSON_OBJECT] = '{', [JSON_ARRAY] = '[', [JSON_STRING] = '"', [JSON_INTEGER] = '0',
	    [JSON_REAL] = '0',   [JSON_TRUE] = 't',  [JSON_FALSE] = 'f',  [JSON_NULL] = 'n',
	};
	size_t plen = strlen(path), i;
	const char *c, *k;
	int line, col;
	json_t *m;
	CHECK(rd_jsonpos_find(w->idx, path, false, &line, &col));
	c = char_at(w->text, w->len, line, col);
	CHECK(c);
	if (first[json_typeof(v)] == '0')
		CHECK(*c == '-' || (*c >= '0' && *c <= '9'));
	else
		CHECK(*c == first[json_typeof(v)]);
	CHECK(rd_jsonpos_find(w->idx, path, true, &line, &col));
	c = char_at(w->text, w->len, line, col);
	CHECK(c && (!member || *c == '"'));
	w->seen++;
	if (json_is_object(v)) {
		json_object_foreach(v, k, m)
		{
			CHECK(rd_jsonpos_append(path, size, k) == 0);
			walk(w, m, path, size, true);
			path[plen] = '\0';
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			CHECK(rd_jsonpos_append_index(path, size, i) == 0);
			walk(w, m, path, size, false);
			path[plen] = '\0';
		}
	}
}

static void check(const char *text, size_t size)
{
	struct rd_jsonpos idx;
	json_error_t je;
	int r = rd_jsonpos_index(text, size, &idx);
	/* JSON_DECODE_ANY only widens what is cross-checked; the trees are otherwise the same. */
	json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);

	CHECK(r == 0 || r == -EINVAL);
	CHECK(r == 0 || (idx.v == NULL && idx.n == 0));
	if (root && memchr(text, '\0', size)) {
		/* jansson drops a NUL byte that directly follows a number or literal ("[1\0]" loads
		 * as [1]); that is not JSON, but the text without the NULs must then be indexed. */
		char *copy = malloc(size), *p = copy;
		CHECK(r == -EINVAL && copy);
		for (size_t i = 0; i < size; i++)
			if (text[i])
				*p++ = text[i];
		check(copy, (size_t)(p - copy));
		free(copy);
	} else if (root && depth(root) > 1024) {
		/* jansson nests up to 2048 deep, the index deliberately stops at 1024 */
		CHECK(r == -EINVAL);
	} else if (root) {
		/* A pointer is at most 2 bytes per input byte ("[" -> "/0", "~" -> "~0"). */
		size_t cap = 2 * size + 64;
		char *path = calloc(1, cap);
		struct walk w = {&idx, text, size, 0};
		CHECK(r == 0 && path);
		walk(&w, root, path, cap, false);
		CHECK(w.seen == idx.n);
		free(path);
	}
	json_decref(root);
	rd_jsonpos_free(&idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check((const char *)data, size);
	return 0;
}
