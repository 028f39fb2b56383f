/* cmocka needs these first, in this order */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "policy/dotenv.h"

#include <stdlib.h>
#include <string.h>

/* The value text gives name, read from a malloc'd copy of exactly its length (ASan sees any
 * over-read); NULL if none. */
static char *value_of(const char *text, const char *name)
{
	size_t len = strlen(text);
	char *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, text, len);
	char *v = NULL;
	int r = rd_dotenv_value(copy, len, name, &v);
	free(copy);
	assert_true(r == 0 || r == 1);
	assert_true((r == 1) == (v != NULL));
	return v;
}

static void expect(const char *text, const char *name, const char *want)
{
	char *v = value_of(text, name);
	if (!want) {
		if (v)
			fail_msg("%s: %s gave \"%s\", expected none", text, name, v);
		return;
	}
	if (!v)
		fail_msg("%s: %s gave none, expected \"%s\"", text, name, want);
	assert_string_equal(v, want);
	free(v);
}

/* Each expectation below is what dotenv 16 (npm), which Gemini CLI and Qwen Code bundle, gives
 * for the same text. */
static void test_plain(void **state)
{
	(void)state;
	expect("A=1\n", "A", "1");
	expect("A=1", "A", "1");
	expect("  A = spaced value  \n", "A", "spaced value");
	expect("export A=1\n", "A", "1");
	expect("A: 1\n", "A", "1");
	expect("A:1\n", "A", NULL); /* ':' wants a blank after it */
	expect("A=\n", "A", "");
	expect("A=  # only a comment\n", "A", "");
	expect("A=x # comment\n", "A", "x");
	expect("A=x#y\n", "A", "x");
	expect("# A=1\n", "A", NULL);
	expect("B=1\n", "A", NULL);
	expect("AB=1\n", "A", NULL);
	expect("A.b-c=1\n", "A.b-c", "1");
	expect("A=1\nA=2\n", "A", "2"); /* the last one wins */
	expect("A=1\r\nB=2\r\n", "B", "2");
	expect("A=1\rB=2\r", "B", "2");
	expect("garbage line\nA=1\n", "A", "1");
	expect("A=\nB=1\n", "A", "");
}

static void test_quoted(void **state)
{
	(void)state;
	expect("A=\"x # not a comment\"\n", "A", "x # not a comment");
	expect("A='single'\n", "A", "single");
	expect("A=`back`\n", "A", "back");
	expect("A=\"a\\nb\"\n", "A", "a\nb");
	expect("A='a\\nb'\n", "A", "a\\nb");
	expect("A=\"line one\nline two\"\nB=2\n", "A", "line one\nline two");
	expect("A=\"line one\nline two\"\nB=2\n", "B", "2");
	expect("A=\"x\"  # comment\n", "A", "x");
	expect("A=\"esc\\\"aped\"\n", "A", "esc\\\"aped");
	expect("A=\"x\"y\n", "A", "\"x\"y");
	expect("A=\"unclosed\nB=2\n", "A", "\"unclosed");
	expect("A=\"unclosed\nB=2\n", "B", "2");
	expect("A=\"\"\n", "A", "");
}

static int count(const char *name, size_t name_len, const char *value, void *ctx)
{
	(void)name;
	(void)name_len;
	(void)value;
	(*(int *)ctx)++;
	return 0;
}

static int stop(const char *name, size_t name_len, const char *value, void *ctx)
{
	(void)name;
	(void)name_len;
	(void)value;
	(*(int *)ctx)++;
	return 7;
}

static void test_each(void **state)
{
	(void)state;
	const char *text = "A=1\n\n# c\nexport B='2'\nC: 3\nnot one\n";
	int n = 0;
	assert_int_equal(rd_dotenv_each(text, strlen(text), count, &n), 0);
	assert_int_equal(n, 3);
	n = 0;
	assert_int_equal(rd_dotenv_each(text, strlen(text), stop, &n), 7);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(rd_dotenv_each("", 0, count, &n), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain),
	    cmocka_unit_test(test_quoted),
	    cmocka_unit_test(test_each),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
