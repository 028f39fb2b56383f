#ifndef RD_DOTENV_H
#define RD_DOTENV_H
#include <stdbool.h>
#include <stddef.h>

/* A ".env" file's variables, read as the dotenv package of npm (16.x) reads them, which Gemini
 * CLI and Qwen Code load at their start: "NAME=value" or "NAME: value" lines, "export " before
 * the name allowed; a value in '', "" or `` quotes may span lines ("" turns \n and \r into the
 * characters); an unquoted one ends at '#' and is trimmed; a line that is no such entry is
 * skipped; the last entry of a name wins. */

/* Calls fn for each entry of text (len bytes, need not be NUL-terminated) in order: name is
 * not terminated (name_len bytes), value is (a scratch copy, valid during the call). Returns
 * 0, -ENOMEM, or what fn returned when it was not 0 (which stops the walk). */
int rd_dotenv_each(const char *text, size_t len,
                   int (*fn)(const char *name, size_t name_len, const char *value, void *ctx),
                   void *ctx);

/* The value the file gives name (its last entry), malloc'd, in *value: 1; 0 if it gives none;
 * -ENOMEM. */
int rd_dotenv_value(const char *text, size_t len, const char *name, char **value);

#endif
