/* Glob patterns as runnerd's config uses them: fnmatch(3) syntax, validated up front so that
 * a typo is a config error rather than a pattern that silently matches nothing. */
#ifndef RD_GLOB_H
#define RD_GLOB_H

#include <stdbool.h>
#include <stddef.h>

enum rd_glob_kind {
	RD_GLOB_ENV_NAME, /* environment variable names: no '=' */
	RD_GLOB_PATH,     /* executable paths (FNM_PATHNAME is not used: '*' crosses '/') */
	RD_GLOB_ARG,      /* one argv element; "**" alone means "any number of further args" */
	RD_MASK_PATH,     /* not a glob: an absolute path, "~/..." or "${NAME}..." (a literal,
	                   * checked here too) */
	RD_PROTECT_PATH,  /* RD_MASK_PATH, or one with a "/" at its end: a directory, made
	                   * (empty) when it is missing (sandbox.protect) */
};

/* True when the pattern has a wildcard, bracket or escape, so it is not an exact name. */
bool rd_glob_is_pattern(const char *pat);

/* NULL when the pattern is valid, else a static message saying what is wrong. */
const char *rd_glob_check(const char *pat, enum rd_glob_kind kind);

bool rd_glob_match(const char *pat, const char *s);

struct rd_strv;
/* The first pattern of l (may be NULL) that matches s, or NULL. */
const char *rd_glob_match_any(const struct rd_strv *l, const char *s);

/* The length of the "${NAME}" a mask path starts with, else 0. */
size_t rd_mask_var_len(const char *path);

#endif
