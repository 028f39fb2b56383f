/* cmocka needs these first, in this order */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "policy/jsonpos.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A literal with its exact length, so that tables can hold embedded NULs. */
#define S(lit)                                                                                     \
	{                                                                                          \
		lit, sizeof(lit) - 1                                                               \
	}

struct pos_case {
	const char *path;
	int key_line, key_col, line, col;
};

/* Indexes text from a malloc'd buffer of exactly len bytes, so that ASan sees any over-read. */
static int index_exact(const char *text, size_t len, struct rd_jsonpos *idx)
{
	char *copy = malloc(len ? len : 1);
	int r;
	assert_non_null(copy);
	memcpy(copy, text, len);
	r = rd_jsonpos_index(copy, len, idx);
	free(copy);
	return r;
}

static void check_positions(const char *text, const struct pos_case *cases, size_t n)
{
	struct rd_jsonpos idx;
	assert_int_equal(index_exact(text, strlen(text), &idx), 0);
	assert_int_equal(idx.n, n);
	for (size_t i = 0; i < n; i++) {
		const struct pos_case *c = &cases[i];
		int line = -1, col = -1;
		if (!rd_jsonpos_find(&idx, c->path, false, &line, &col))
			fail_msg("path \"%s\" not found", c->path);
		if (line != c->line || col != c->col)
			fail_msg("value \"%s\" at %d:%d, want %d:%d", c->path, line, col, c->line,
			         c->col);
		assert_true(rd_jsonpos_find(&idx, c->path, true, &line, &col));
		if (c->key_line && (line != c->key_line || col != c->key_col))
			fail_msg("key \"%s\" at %d:%d, want %d:%d", c->path, line, col, c->key_line,
			         c->key_col);
		/* Entries are in document order, which makes a whole-table comparison exact. */
		assert_string_equal(idx.v[i].path, c->path);
		assert_int_equal(idx.v[i].key_line, c->key_line);
		assert_int_equal(idx.v[i].key_col, c->key_col);
	}
	rd_jsonpos_free(&idx);
	assert_null(idx.v);
	assert_int_equal(idx.n, 0);
}

static void test_nested(void **state)
{
	(void)state;
	static const char text[] = "{\n"
	                           "\t\"commands\": {\n"
	                           "\t\t\"rules\": [\n"
	                           "\t\t\t{\"match\": \"git *\", \"allow\": true},\n"
	                           "\t\t\t{\"match\": [\"a\", \"b\"], \"env\": {\"X\": null}}\n"
	                           "\t\t]\n"
	                           "\t},\n"
	                           "\t\"n\": -1.5e3\n"
	                           "}\n";
	static const struct pos_case cases[] = {
	    {"", 0, 0, 1, 1},
	    {"/commands", 2, 2, 2, 14},
	    {"/commands/rules", 3, 3, 3, 12},
	    {"/commands/rules/0", 0, 0, 4, 4},
	    {"/commands/rules/0/match", 4, 5, 4, 14},
	    {"/commands/rules/0/allow", 4, 23, 4, 32},
	    {"/commands/rules/1", 0, 0, 5, 4},
	    {"/commands/rules/1/match", 5, 5, 5, 14},
	    {"/commands/rules/1/match/0", 0, 0, 5, 15},
	    {"/commands/rules/1/match/1", 0, 0, 5, 20},
	    {"/commands/rules/1/env", 5, 26, 5, 33},
	    {"/commands/rules/1/env/X", 5, 34, 5, 39},
	    {"/n", 8, 2, 8, 7},
	};
	check_positions(text, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_root(void **state)
{
	(void)state;
	static const struct pos_case obj[] = {{"", 0, 0, 3, 2}};
	static const struct pos_case empty_arr[] = {{"", 0, 0, 1, 1}};
	static const struct pos_case scalar[] = {{"", 0, 0, 1, 3}};
	static const struct pos_case str[] = {{"", 0, 0, 1, 1}};
	check_positions("\n\r\n\t{}\n", obj, 1);
	check_positions("[ ]", empty_arr, 1);
	check_positions("  -0.5E+2  ", scalar, 1);
	check_positions("\"\\u00e9\"", str, 1);
}

static void test_multibyte_columns(void **state)
{
	(void)state;
	static const char text[] =
	    "{\"ключ\": \"значение\", \"日本語\": {\"€\": [1, \"😀\", 2]}, \"z\": true}";
	static const struct pos_case cases[] = {
	    {"", 0, 0, 1, 1},
	    {"/ключ", 1, 2, 1, 10},
	    {"/日本語", 1, 22, 1, 29},
	    {"/日本語/€", 1, 30, 1, 35},
	    {"/日本語/€/0", 0, 0, 1, 36},
	    {"/日本語/€/1", 0, 0, 1, 39},
	    {"/日本語/€/2", 0, 0, 1, 44},
	    {"/z", 1, 49, 1, 54},
	};
	check_positions(text, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_crlf(void **state)
{
	(void)state;
	static const char text[] =
	    "{\r\n  \"a\": 1,\r\n\t\"b\":\r\n[true ,\r\n\r\n  \"x\"]\r\n}\r\n";
	static const struct pos_case cases[] = {
	    {"", 0, 0, 1, 1},     {"/a", 2, 3, 2, 8},   {"/b", 3, 2, 4, 1},
	    {"/b/0", 0, 0, 4, 2}, {"/b/1", 0, 0, 6, 3},
	};
	check_positions(text, cases, sizeof(cases) / sizeof(cases[0]));
}

/*
 * jansson reports the column of an invalid token as that of its first character, so a '@' at
 * a value's (or key's) spot must make jansson report exactly the position we index for the
 * valid document, where '@' is replaced by '0' (or removed, in front of a key).
 */
static void test_matches_jansson_columns(void **state)
{
	(void)state;
	static const struct {
		const char *tmpl, *path;
		bool key;
	} cases[] = {
	    {"{\"a\": @}", "/a", false},
	    {"{\"é\": @}", "/é", false},
	    {"{\"éé\": 1,\n\"b\"\t: @}", "/b", false},
	    {"{\"日本\": [\"€€€\",\t@]}", "/日本/1", false},
	    {"{\"a\": \"😀😀\", @\"b\": 1}", "/b", true},
	    {"{\r\n\"a\": 1,\r\n  @\"c\": 2}", "/c", true},
	    {"[{\"k\\u00e9\\ud83d\\ude00\": [[\"\\\"\"], @]}]", "/0/k\xc3\xa9\xf0\x9f\x98\x80/1",
	     false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *at = strchr(cases[i].tmpl, '@');
		size_t pre = (size_t)(at - cases[i].tmpl);
		char valid[256];
		struct rd_jsonpos idx;
		json_error_t je;
		int line, col;
		snprintf(valid, sizeof(valid), "%.*s%s%s", (int)pre, cases[i].tmpl,
		         cases[i].key ? "" : "0", at + 1);
		assert_null(json_loads(cases[i].tmpl, JSON_REJECT_DUPLICATES, &je));
		assert_int_equal(index_exact(valid, strlen(valid), &idx), 0);
		assert_true(rd_jsonpos_find(&idx, cases[i].path, cases[i].key, &line, &col));
		if (line != je.line || col != je.column)
			fail_msg("case %zu: indexed %d:%d, jansson %d:%d (%s)", i, line, col,
			         je.line, je.column, je.text);
		rd_jsonpos_free(&idx);
	}
}

static void test_escaped_keys(void **state)
{
	(void)state;
	static const char text[] = "{\"a/b~c\": 1, \"caf\\u00e9\": 2, \"smile\\ud83d\\ude00\": 3,"
	                           " \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\": 4, \"~01/\": {\"\": 5}, "
	                           "\"\\u002F\\u007e\": 6, \"ß\": 7}";
	static const struct {
		const char *key, *path;
		int col;
	} cases[] = {
	    {"a/b~c", "/a~1b~0c", 11},
	    {"caf\xc3\xa9", "/caf\xc3\xa9", 27},
	    {"smile\xf0\x9f\x98\x80", "/smile\xf0\x9f\x98\x80", 51},
	    {"q\"\\/\b\f\n\r\t", "/q\"\\~1\b\f\n\r\t", 75},
	    {"~01/", "/~001~1", 86},
	    {"/~", "/~1~0", 111},
	    {"ß", "/ß", 119},
	};
	struct rd_jsonpos idx;
	int line, col;
	assert_int_equal(index_exact(text, strlen(text), &idx), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char p[64] = "";
		assert_int_equal(rd_jsonpos_append(p, sizeof(p), cases[i].key), 0);
		assert_string_equal(p, cases[i].path);
		if (!rd_jsonpos_find(&idx, p, false, &line, &col))
			fail_msg("key %zu: \"%s\" not found", i, p);
		assert_int_equal(line, 1);
		assert_int_equal(col, cases[i].col);
	}
	assert_true(rd_jsonpos_find(&idx, "/~001~1/", false, &line, &col));
	assert_int_equal(col, 91);
	rd_jsonpos_free(&idx);
}

static void test_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		size_t len;
	} cases[] = {
	    S(""),
	    S(" \t\r\n"),
	    S("{"),
	    S("["),
	    S("}"),
	    S("]"),
	    S("{]"),
	    S("[}"),
	    S("{\"a\"}"),
	    S("{\"a\":}"),
	    S("{\"a\" 1}"),
	    S("{1: 2}"),
	    S("{a: 1}"),
	    S("{'a': 1}"),
	    S("{\"a\": 1,}"),
	    S("[1,]"),
	    S("[,]"),
	    S("[,1]"),
	    S("[1 2]"),
	    S("[1,,2]"),
	    S("{\"a\": 1 \"b\": 2}"),
	    S("{\"a\": 1}}"),
	    S("[1]]"),
	    S("{\"a\"::1}"),
	    /* trailing garbage */
	    S("[1]x"),
	    S("[1] [2]"),
	    S("{} {}"),
	    S("{}\0"),
	    S("1 2"),
	    S("\"a\" \"b\""),
	    S("{}/"),
	    S("{} // comment"),
	    S("/* c */ {}"),
	    /* literals and numbers */
	    S("tru"),
	    S("truex"),
	    S("nul"),
	    S("nulll"),
	    S("fals"),
	    S("[True]"),
	    S("NaN"),
	    S("Infinity"),
	    S("-Infinity"),
	    S("01"),
	    S("-01"),
	    S("-"),
	    S("[-]"),
	    S("1."),
	    S(".5"),
	    S("1e"),
	    S("1e+"),
	    S("1E-"),
	    S("+1"),
	    S("0x10"),
	    S("1.e5"),
	    S("--1"),
	    S("[1.5.]"),
	    /* unterminated strings */
	    S("\""),
	    S("\"abc"),
	    S("[\"abc]"),
	    S("{\"abc: 1}"),
	    S("\"\\"),
	    S("\"\\\""),
	    /* bad escapes */
	    S("\"\\x\""),
	    S("\"\\a\""),
	    S("\"\\0\""),
	    S("\"\\U0041\""),
	    S("\"\\'\""),
	    S("\"\\\0\""),
	    S("\"\\u\""),
	    S("\"\\u12\""),
	    S("\"\\u12G4\""),
	    S("\"\\u 123\""),
	    S("\"\\u-123\""),
	    S("\"\\u+123\""),
	    S("\"\\u0x12\""),
	    S("\"\\u00\x10\x11\""),
	    S("\"\\u00\xc1\xc2\""),
	    /* bad surrogates */
	    S("\"\\ud83d\""),
	    S("\"\\ud83dx\""),
	    S("\"\\ud83d\\u0041\""),
	    S("\"\\ude00\""),
	    S("\"\\ud83d\\ud83d\""),
	    S("\"\\ud83d\\n\""),
	    S("\"\\ud83d\\u\""),
	    S("{\"\\udfff\": 1}"),
	    /* control characters, raw or NUL, in strings and keys */
	    S("\"a\tb\""),
	    S("\"a\nb\""),
	    S("\"\x01\""),
	    S("\"\x1f\""),
	    S("\"a\0b\""),
	    S("{\"a\rb\": 1}"),
	    S("{\"\\u0000\": 1}"),
	    /* ill-formed UTF-8 */
	    S("\"\xc3\""),
	    S("\"\xc3x\""),
	    S("\"\xc0\x80\""),
	    S("\"\xc1\xbf\""),
	    S("\"\xe0\x80\x80\""),
	    S("\"\xed\xa0\x80\""),
	    S("\"\xf0\x80\x80\x80\""),
	    S("\"\xf4\x90\x80\x80\""),
	    S("\"\xf5\x80\x80\x80\""),
	    S("\"\xf8\x90\x80\x80\""),
	    S("\"\xfc\x84\x80\x80\""),
	    S("\"\xff\""),
	    S("\"\x80\""),
	    S("\"\xe2\x82\""),
	    S("{\"\xe2\x82\": 1}"),
	    /* not JSON whitespace, or no JSON at all */
	    S("[1,\v2]"),
	    S("[\f]"),
	    S("\xc2\xa0[]"),
	    S("\xef\xbb\xbf{}"),
	    S("\0"),
	    S("@"),
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rd_jsonpos idx = {(void *)1, 99};
		int r = index_exact(cases[i].text, cases[i].len, &idx);
		if (r != -EINVAL)
			fail_msg("case %zu (\"%s\") returned %d", i, cases[i].text, r);
		assert_null(idx.v);
		assert_int_equal(idx.n, 0);
	}
	struct rd_jsonpos idx;
	assert_int_equal(rd_jsonpos_index(NULL, 0, &idx), -EINVAL);
}

/* Edge cases that are valid JSON, though jansson may refuse some (\u0000 in a value). */
static void test_valid_edges(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		size_t len;
	} cases[] = {
	    S("0"),
	    S("-0"),
	    S("-0.0e-0"),
	    S("1E+99"),
	    S("123456789012345678901234567890"),
	    S("true"),
	    S("false"),
	    S("null"),
	    S("\"\""),
	    S("[]"),
	    S("{}"),
	    S("[[], {}]"),
	    S("\"\\u0000\""),
	    S("\"\x7f\""),
	    S("\"\xf4\x8f\xbf\xbf\""),
	    S("\"\xef\xbf\xbf\""),
	    S("\"\\uD83D\\uDE00\\uFFFF\\uABCD\""),
	    S("{\"a\":{\"a\":{\"a\":[]}}}"),
	    S(" \t\r\n[ \t\r\n1 \t\r\n, \t\r\n2 \t\r\n] \t\r\n"),
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rd_jsonpos idx;
		int r = index_exact(cases[i].text, cases[i].len, &idx);
		if (r != 0)
			fail_msg("case %zu (\"%s\") returned %d", i, cases[i].text, r);
		rd_jsonpos_free(&idx);
	}
}

static char *nested(size_t depth, const char *open, const char *inner, const char *close)
{
	size_t lo = strlen(open), li = strlen(inner), lc = strlen(close);
	char *s = malloc(depth * (lo + lc) + li + 1), *p = s;
	assert_non_null(s);
	for (size_t i = 0; i < depth; i++, p += lo)
		memcpy(p, open, lo);
	memcpy(p, inner, li);
	p += li;
	for (size_t i = 0; i < depth; i++, p += lc)
		memcpy(p, close, lc);
	*p = '\0';
	return s;
}

static void test_depth(void **state)
{
	(void)state;
	static const struct {
		size_t depth;
		const char *open, *inner, *close;
		size_t values;
		int want;
	} cases[] = {
	    {1000, "[", "", "]", 1000, 0},
	    {1024, "[", "", "]", 1024, 0},
	    {1025, "[", "", "]", 0, -EINVAL},
	    {5000, "[", "", "]", 0, -EINVAL},
	    {1000, "{\"a\":", "0", "}", 1001, 0},
	    {1024, "{\"a\":", "0", "}", 1025, 0},
	    {1025, "{\"a\":", "0", "}", 0, -EINVAL},
	    {512, "[{\"\":", "0", "}]", 1025, 0},
	    {512, "[{\"\":", "[]", "}]", 0, -EINVAL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = nested(cases[i].depth, cases[i].open, cases[i].inner, cases[i].close);
		struct rd_jsonpos idx;
		int r = index_exact(text, strlen(text), &idx);
		if (r != cases[i].want)
			fail_msg("case %zu: depth %zu returned %d", i, cases[i].depth, r);
		assert_int_equal(idx.n, cases[i].values);
		rd_jsonpos_free(&idx);
		free(text);
	}
	/* 2 * 1025 slashes: the deepest pointer is built and found */
	char *text = nested(1024, "[", "", "]"), path[2 * 1024 + 1] = "";
	struct rd_jsonpos idx;
	int line, col;
	assert_int_equal(rd_jsonpos_index(text, strlen(text), &idx), 0);
	for (int i = 0; i < 1023; i++)
		assert_int_equal(rd_jsonpos_append_index(path, sizeof(path), 0), 0);
	assert_true(rd_jsonpos_find(&idx, path, false, &line, &col));
	assert_int_equal(col, 1024);
	rd_jsonpos_free(&idx);
	free(text);
}

/* Every proper prefix of a document is malformed, and none may be read past its end. */
static void test_not_nul_terminated(void **state)
{
	(void)state;
	static const char text[] = "{\"k\\u00e9y\": [1.5e-3, \"v\\ud83d\\ude00\", true, false, "
	                           "null, {\"\": -0}], \"z\": \"\xe2\x82\xac\"}";
	size_t len = strlen(text);
	for (size_t n = 0; n <= len; n++) {
		struct rd_jsonpos idx;
		int r = index_exact(text, n, &idx);
		if (r != (n == len ? 0 : -EINVAL))
			fail_msg("prefix of %zu bytes returned %d", n, r);
		rd_jsonpos_free(&idx);
	}
}

static void test_append(void **state)
{
	(void)state;
	char buf[8] = "/ab";
	assert_int_equal(rd_jsonpos_append(buf, sizeof(buf), "cd"), 0);
	assert_string_equal(buf, "/ab/cd");
	/* "/~0" needs three bytes and a NUL, one more than is left: buf must not change */
	assert_int_equal(rd_jsonpos_append(buf, sizeof(buf), "~"), -ENAMETOOLONG);
	assert_string_equal(buf, "/ab/cd");
	assert_int_equal(rd_jsonpos_append(buf, sizeof(buf), "/x"), -ENAMETOOLONG);
	assert_string_equal(buf, "/ab/cd");
	assert_int_equal(rd_jsonpos_append(buf, sizeof(buf), ""), 0);
	assert_string_equal(buf, "/ab/cd/");
	assert_int_equal(rd_jsonpos_append(buf, sizeof(buf), ""), -ENAMETOOLONG);

	char ibuf[6] = "";
	assert_int_equal(rd_jsonpos_append_index(ibuf, sizeof(ibuf), 12), 0);
	assert_int_equal(rd_jsonpos_append_index(ibuf, sizeof(ibuf), 3), 0);
	assert_string_equal(ibuf, "/12/3");
	assert_int_equal(rd_jsonpos_append_index(ibuf, sizeof(ibuf), 0), -ENAMETOOLONG);
	assert_string_equal(ibuf, "/12/3");

	char big[32] = "";
	assert_int_equal(rd_jsonpos_append_index(big, sizeof(big), SIZE_MAX), 0);
	assert_int_equal(strlen(big), 1 + strlen("18446744073709551615"));

	char full[4] = {'a', 'b', 'c', 'd'}; /* not even NUL-terminated */
	assert_int_equal(rd_jsonpos_append(full, sizeof(full), ""), -ENAMETOOLONG);
	assert_int_equal(rd_jsonpos_append(full, 0, "x"), -ENAMETOOLONG);
}

static void test_find(void **state)
{
	(void)state;
	static const char text[] = "{\"list\": [10, {\"k\": 1}], \"dup\": 1, \"dup\": [2]}";
	struct rd_jsonpos idx;
	int line = 0, col = 0;
	assert_int_equal(index_exact(text, strlen(text), &idx), 0);

	/* at_key on an array element (or the root) falls back to the value */
	assert_true(rd_jsonpos_find(&idx, "/list/0", true, &line, &col));
	assert_int_equal(col, 11);
	assert_true(rd_jsonpos_find(&idx, "/list/1", true, &line, &col));
	assert_int_equal(col, 15);
	assert_true(rd_jsonpos_find(&idx, "", true, &line, &col));
	assert_int_equal(col, 1);
	assert_true(rd_jsonpos_find(&idx, "/list/1/k", true, &line, &col));
	assert_int_equal(col, 16);
	assert_true(rd_jsonpos_find(&idx, "/list", true, &line, &col));
	assert_int_equal(col, 2);

	/* the first of duplicate keys wins */
	assert_true(rd_jsonpos_find(&idx, "/dup", false, &line, &col));
	assert_int_equal(col, 33);
	assert_true(rd_jsonpos_find(&idx, "/dup", true, &line, &col));
	assert_int_equal(col, 26);

	line = col = -7;
	static const char *const unknown[] = {"/list/2", "/list/1/k/0", "/nope",    "list",
	                                      "/",       "/list/",      "/list/00", "/List"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		assert_false(rd_jsonpos_find(&idx, unknown[i], false, &line, &col));
	assert_int_equal(line, -7);
	assert_int_equal(col, -7);
	rd_jsonpos_free(&idx);

	struct rd_jsonpos empty = {0};
	assert_false(rd_jsonpos_find(&empty, "", false, &line, &col));
	rd_jsonpos_free(&empty);
}

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

struct walk {
	const struct rd_jsonpos *idx;
	const char *text;
	size_t len, seen;
};

static void walk(struct walk *w, json_t *v, char *path, size_t size, bool member)
{
	static const char first[] = {
	    [JSON_OBJECT] = '{', [JSON_ARRAY] = '[', [JSON_STRING] = '"', [JSON_INTEGER] = '0',
	    [JSON_REAL] = '0',   [JSON_TRUE] = 't',  [JSON_FALSE] = 'f',  [JSON_NULL] = 'n',
	};
	size_t plen = strlen(path);
	int line, col;
	const char *c;
	if (!rd_jsonpos_find(w->idx, path, false, &line, &col))
		fail_msg("jansson has a value at \"%s\" that is not indexed", path);
	c = char_at(w->text, w->len, line, col);
	assert_non_null(c);
	if (*c != first[json_typeof(v)] &&
	    !(first[json_typeof(v)] == '0' && strchr("-0123456789", *c)))
		fail_msg("\"%s\" at %d:%d starts with '%c'", path, line, col, *c);
	assert_true(rd_jsonpos_find(w->idx, path, true, &line, &col));
	c = char_at(w->text, w->len, line, col);
	assert_true(c && (!member || *c == '"'));
	w->seen++;
	if (json_is_object(v)) {
		const char *k;
		json_t *m;
		json_object_foreach(v, k, m)
		{
			assert_int_equal(rd_jsonpos_append(path, size, k), 0);
			walk(w, m, path, size, true);
			path[plen] = '\0';
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *m;
		json_array_foreach(v, i, m)
		{
			assert_int_equal(rd_jsonpos_append_index(path, size, i), 0);
			walk(w, m, path, size, false);
			path[plen] = '\0';
		}
	}
}

static void test_cross_check_jansson(void **state)
{
	(void)state;
	static const char *const valid[] = {
	    "{}",
	    "[]",
	    "{\"a\": [1, 2.5, -3e2, \"x\", true, false, null, {}, []]}",
	    "{\"commands\": {\"rules\": [{\"match\": \"git *\", \"env\": {\"GIT_*\": \"allow\"}},"
	    " {\"match\": [\"a/b\", \"~c\"]}]}, \"version\": 1}",
	    "\n\r\n\t{ \"\\u00e9t\\u00e9\" : { \"\\ud83d\\ude00\" : [ [ [ \"\\\"\" ] ] ] } }\r\n",
	    "{\"a/b\": {\"~\": {\"~1\": {\"/\": {\"\": {\" \": 0}}}}}}",
	    "{\"\xe6\x97\xa5\": [\"\xe2\x82\xac\", {\"\xf0\x9f\x98\x80\": "
	    "\"\\t\\n\\r\\b\\f\\/\"}]}",
	    "[[[[[[[[[[{\"deep\": [[[[[[[[[[0]]]]]]]]]]}]]]]]]]]]]",
	    "[{\"a\": 1, \"A\": 2, \"a \": 3, \" a\": 4}, {\"a\": 5}, 6e-7, -0, 0.0]",
	};
	static const char *const broken[] = {
	    "{\"a\": [1, 2], \"b\": }",
	    "{\"a\": [1, 2]] }",
	    "[1, 2, 3,]",
	    "{\"a\": \"\\ud83d\"}",
	    "{\"a\": \"x\ty\"}",
	    "{\"a\": 1} trailing",
	    "{\"a\": [true, tru]}",
	    "{\"\xc3\xa9\": \"\xc3\"}",
	    "[\"\\q\"]",
	    "{\"a\": {\"b\": {\"c\": 1}}",
	    "[01]",
	    "{\"a\" 1}",
	};
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		size_t len = strlen(valid[i]);
		struct rd_jsonpos idx;
		json_error_t je;
		json_t *root = json_loadb(valid[i], len, JSON_REJECT_DUPLICATES, &je);
		char path[512] = "";
		if (!root)
			fail_msg("jansson rejects valid case %zu: %s", i, je.text);
		assert_int_equal(index_exact(valid[i], len, &idx), 0);
		struct walk w = {&idx, valid[i], len, 0};
		walk(&w, root, path, sizeof(path), false);
		/* nothing indexed that jansson does not have */
		assert_int_equal(w.seen, idx.n);
		rd_jsonpos_free(&idx);
		json_decref(root);
	}
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		struct rd_jsonpos idx;
		json_error_t je;
		assert_null(json_loads(broken[i], JSON_REJECT_DUPLICATES, &je));
		if (index_exact(broken[i], strlen(broken[i]), &idx) != -EINVAL)
			fail_msg("broken case %zu (%s) indexed; jansson: %s", i, broken[i],
			         je.text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nested),
	    cmocka_unit_test(test_root),
	    cmocka_unit_test(test_multibyte_columns),
	    cmocka_unit_test(test_crlf),
	    cmocka_unit_test(test_matches_jansson_columns),
	    cmocka_unit_test(test_escaped_keys),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_valid_edges),
	    cmocka_unit_test(test_depth),
	    cmocka_unit_test(test_not_nul_terminated),
	    cmocka_unit_test(test_append),
	    cmocka_unit_test(test_find),
	    cmocka_unit_test(test_cross_check_jansson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
