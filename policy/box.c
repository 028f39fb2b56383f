#include "policy/box.h"

#include <stdlib.h>

const struct rd_box_key rd_box_keys[RD_BOX_NKEYS] = {
#define RD_BOX_ROW(id, ...) [RD_BOX_##id] = {__VA_ARGS__},
    RD_BOX_KEYS(RD_BOX_ROW)
#undef RD_BOX_ROW
};

const char *rd_box_word(enum rd_box_id k, uint64_t v)
{
	const struct rd_box_key *key = &rd_box_keys[k];
	if (key->type != RD_BOX_WORD || v == 0 || v > ARRAY_SIZE(key->words))
		return NULL;
	return key->words[v - 1];
}

struct rd_box_opts rd_box_merge(const struct rd_box *const *levels, size_t n)
{
	struct rd_box_opts o = {{0}};
	for (size_t k = 0; k < RD_BOX_NKEYS; k++) {
		if (rd_box_keys[k].type == RD_BOX_PATHS)
			continue;
		for (size_t i = 0; i < n && !o.v[k]; i++)
			if (levels[i])
				o.v[k] = levels[i]->v[k];
		if (!o.v[k])
			o.v[k] = rd_box_keys[k].dflt;
	}
	return o;
}

void rd_box_free(struct rd_box *b)
{
	for (size_t k = 0; k < RD_BOX_NKEYS; k++)
		rd_strv_free(&b->list[k]);
}
