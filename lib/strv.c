#include "lib/strv.h"

#include <stdlib.h>

void rd_strv_free(struct rd_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}
