/* Unit tests of rd_escape_bytes and rd_escape_word (supervisor/audit.c): how a caller's bytes
 * are shown on a terminal (runnerd pending, runnerd ps, the --prompt question). Nothing but
 * printable ASCII comes out; a backslash is escaped too, so that \xNN is never ambiguous;
 * runs of spaces fold only when asked; a word of a command line is quoted as a shell would
 * read it back whenever it holds anything but letters, digits and _@%+=:,./-; and output cut
 * short by its buffer says where it stopped. */
/* cmocka needs these first, in this order */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include "supervisor/audit.h"

#include <string.h>

struct row {
	const char *in;
	bool fold;
	const char *want;
};

static const struct row bytes_rows[] = {
    {"plain", false, "plain"},
    {"", false, ""},
    {"a b", false, "a b"},
    {"tab\there", false, "tab\\x09here"},
    {"esc\x1b[2J", false, "esc\\x1b[2J"},
    {"back\\slash", false, "back\\x5cslash"},
    {"utf8 \xc3\xa9", false, "utf8 \\xc3\\xa9"},
    {"c1 \xc2\x9b", false, "c1 \\xc2\\x9b"},
    {"x    y", false, "x    y"},
    {"x    y", true, "x<4 spaces>y"},
    {"x   y", true, "x   y"},
    {"quote's", false, "quote's"},
};

static const struct row word_rows[] = {
    {"ls", false, "ls"},
    {"/usr/bin/env", false, "/usr/bin/env"},
    {"--color=auto", false, "--color=auto"},
    {"a,b:c@d%e+f", false, "a,b:c@d%e+f"},
    {"", false, "''"},
    {"a b", false, "'a b'"},
    {"*", false, "'*'"},
    {"$HOME", false, "'$HOME'"},
    {"it's", false, "'it'\\''s'"},
    {"'", false, "''\\'''"},
    {"sleep 3 & echo hi", false, "'sleep 3 & echo hi'"},
    {"new\nline", false, "'new\\x0aline'"},
    {"esc\x1b[2J", false, "'esc\\x1b[2J'"},
    {"back\\slash", false, "'back\\x5cslash'"},
    {"x    y", true, "'x<4 spaces>y'"},
    {"caf\xc3\xa9", false, "'caf\\xc3\\xa9'"},
};

static void t_bytes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bytes_rows) / sizeof(bytes_rows[0]); i++) {
		char out[128] = "";
		const char *s = bytes_rows[i].in;
		size_t n = rd_escape_bytes(out, 0, sizeof(out), &s, bytes_rows[i].fold);
		if (strcmp(out, bytes_rows[i].want) != 0 || n != strlen(out) || *s)
			fail_msg("row %zu: got \"%s\" (n %zu, rest \"%s\"), want \"%s\"", i, out, n,
			         s, bytes_rows[i].want);
	}
}

static void t_word(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(word_rows) / sizeof(word_rows[0]); i++) {
		char out[128] = "";
		const char *s = word_rows[i].in;
		size_t n = rd_escape_word(out, 0, sizeof(out), &s, word_rows[i].fold);
		if (strcmp(out, word_rows[i].want) != 0 || n != strlen(out) || *s)
			fail_msg("row %zu: got \"%s\" (n %zu, rest \"%s\"), want \"%s\"", i, out, n,
			         s, word_rows[i].want);
	}
}

/* Appended after what is there; a buffer too small stops before the piece that would not fit
 * (never half of an \xNN), with *s there, and the output NUL-terminated. */
static void t_cut(void **state)
{
	(void)state;
	char out[8] = "ab";
	const char *s = "c\x01"
	                "d";
	size_t n = rd_escape_bytes(out, 2, sizeof(out), &s, false);
	assert_string_equal(out, "abc\\x01");
	assert_int_equal(n, 7);
	assert_string_equal(s, "d");

	/* A quoted word cut short has no closing quote, so it never looks whole. */
	char w[8] = "";
	s = "a b c d e";
	n = rd_escape_word(w, 0, sizeof(w), &s, false);
	assert_string_equal(w, "'a b c");
	assert_int_equal(n, 6);
	assert_string_equal(s, " d e");

	/* All of the word but no room for its closing quote: cut before its last byte. */
	char q[5] = "";
	s = "a b";
	n = rd_escape_word(q, 0, sizeof(q), &s, false);
	assert_string_equal(q, "'a ");
	assert_string_equal(s, "b");

	/* No room even for the opening quote: nothing, and *s where it was. */
	char z[2] = "";
	s = "a b";
	n = rd_escape_word(z, 0, sizeof(z), &s, false);
	assert_int_equal(n, 0);
	assert_string_equal(z, "");
	assert_string_equal(s, "a b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(t_bytes),
	    cmocka_unit_test(t_word),
	    cmocka_unit_test(t_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
