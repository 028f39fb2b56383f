/* A list of strings (names, globs, paths), owned, NULL-terminated when not empty. */
#ifndef RD_STRV_H
#define RD_STRV_H

#include <stddef.h>

struct rd_strv {
	char **v;
	size_t n;
};

void rd_strv_free(struct rd_strv *s);

#endif
