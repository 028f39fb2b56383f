/* A list of strings (names, globs, paths), owned, NULL-terminated when not empty. */
#ifndef RD_STRV_H
#define RD_STRV_H

#include <stdbool.h>
#include <stddef.h>

struct rd_strv {
	char **v;
	size_t n;
};

void rd_strv_free(struct rd_strv *s);

/* Append str, taken (freed if it cannot be: str NULL is taken as out of memory). Returns 0 or
 * -ENOMEM. */
int rd_strv_take(struct rd_strv *s, char *str);

/* Append a copy of str. Returns 0 or -ENOMEM. */
int rd_strv_add(struct rd_strv *s, const char *str);

/* Is str one of s's strings? */
bool rd_strv_contains(const struct rd_strv *s, const char *str);

/* Is the absolute path root itself, or under it ("/" holds every one)? */
bool rd_path_within(const char *path, const char *root);

/* The first of the paths in l that path is within (rd_path_within); NULL if none, or if path
 * is NULL. */
const char *rd_strv_within(const struct rd_strv *l, const char *path);

#endif
