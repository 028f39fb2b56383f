#include "lib/strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void rd_strv_free(struct rd_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

int rd_strv_take(struct rd_strv *s, char *str)
{
	char **v = str ? realloc(s->v, (s->n + 2) * sizeof(char *)) : NULL;
	if (!v) {
		free(str);
		return -ENOMEM;
	}
	s->v = v;
	v[s->n++] = str;
	v[s->n] = NULL;
	return 0;
}

int rd_strv_add(struct rd_strv *s, const char *str)
{
	return rd_strv_take(s, strdup(str));
}

bool rd_strv_contains(const struct rd_strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return true;
	return false;
}

bool rd_path_within(const char *path, const char *root)
{
	size_t n = strlen(root);
	return strncmp(path, root, n) == 0 &&
	       (path[n] == '/' || path[n] == '\0' || (n == 1 && root[0] == '/'));
}

const char *rd_strv_within(const struct rd_strv *l, const char *path)
{
	for (size_t i = 0; path && i < l->n; i++)
		if (rd_path_within(path, l->v[i]))
			return l->v[i];
	return NULL;
}
