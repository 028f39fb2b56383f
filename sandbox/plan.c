#include "sandbox/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t rd_plan_lead_fds(const struct rd_plan_head *h)
{
	return 1 + (h->has_stub_ctl != 0) + (h->exec_via == RD_EXEC_OWN) + (h->has_setup_fd != 0);
}

void rd_plan_blob_free(struct rd_plan_blob *b)
{
	free(b->iov);
	free(b->targets);
	b->iov = NULL;
	b->targets = NULL;
}

int rd_plan_pack(const struct rd_launch_plan *p, struct rd_plan_blob *b)
{
	*b = (struct rd_plan_blob){.h = p->h};
	struct rd_plan_head *h = &b->h;
	h->size = sizeof(*h);
	if (!p->filter)
		h->filter_len = 0;
	size_t n =
	    4 + 2 + (size_t)h->argc + h->envc + h->n_masks + h->n_write + h->n_protect + h->n_gates;
	b->iov = calloc(n, sizeof(*b->iov));
	b->targets = calloc(h->n_fds + 1, sizeof(int));
	if (!b->iov || !b->targets) {
		rd_plan_blob_free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->n_fds; i++)
		b->targets[i] = p->fds[i].target;
	size_t k = 0;
	struct iovec *iov = b->iov;
	iov[k++] = (struct iovec){h, sizeof(*h)};
#define RD_PLAN_ARRAY(name, len, type)                                                             \
	iov[k++] = (struct iovec){(void *)p->name, sizeof(type) * h->len};
	RD_PLAN_ARRAYS(RD_PLAN_ARRAY)
#undef RD_PLAN_ARRAY
	iov[k++] = (struct iovec){b->targets, sizeof(int) * h->n_fds};
	iov[k++] = (struct iovec){(void *)p->exec_path, strlen(p->exec_path) + 1};
	const char *cwd = p->cwd_path ? p->cwd_path : "";
	iov[k++] = (struct iovec){(void *)cwd, strlen(cwd) + 1};
#define RD_PLAN_STRS(name, len)                                                                    \
	for (uint32_t i = 0; i < h->len; i++)                                                      \
		iov[k++] = (struct iovec){p->name[i], strlen(p->name[i]) + 1};
	RD_PLAN_STRINGS(RD_PLAN_STRS)
#undef RD_PLAN_STRS
	b->n_iov = k;
	for (size_t i = 0; i < k; i++)
		b->size += iov[i].iov_len;
	return 0;
}

/* Take the next len elements of size each off [*at, end); NULL if they are not there. */
static const void *take(const char **at, const char *end, size_t len, size_t size)
{
	if (len > (size_t)(end - *at) / (size ? size : 1))
		return NULL;
	const void *p = *at;
	*at += len * size;
	return p;
}

/* The next n NUL-terminated strings off [*at, end) into v (NULL-terminated). */
static int take_strings(const char **at, const char *end, uint32_t n, char **v)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *nul = *at < end ? memchr(*at, '\0', (size_t)(end - *at)) : NULL;
		if (!nul)
			return -EPROTO;
		v[i] = (char *)*at;
		*at = nul + 1;
	}
	v[n] = NULL;
	return 0;
}

int rd_plan_unpack(const void *blob, size_t size, struct rd_launch_plan *out, void **arena)
{
	*arena = NULL;
	const char *at = blob, *end = at + size;
	const struct rd_plan_head *h = take(&at, end, 1, sizeof(*h));
	if (!h || h->size != sizeof(*h) || h->argc > (1u << 24) || h->envc > (1u << 24) ||
	    h->n_masks > (1u << 16) || h->n_write > (1u << 12) || h->n_protect > (1u << 12) ||
	    h->n_gates > 16 || h->n_fds > (1u << 20) || h->n_groups > (1u << 17) ||
	    h->filter_len > BPF_MAXINSNS ||
	    (h->exec_via != RD_EXEC_CWD && h->exec_via != RD_EXEC_TARGET &&
	     h->exec_via != RD_EXEC_OWN))
		return -EPROTO;
	*out = (struct rd_launch_plan){
	    .h = *h, .cwd_fd = -1, .stub_ctl_fd = -1, .own_exec_fd = -1, .setup_fd = -1};
	/* One allocation: the fd map, then the pointer lists, each NULL-terminated. */
	size_t n_ptrs = (size_t)h->argc + 1 + h->envc + 1 + h->n_masks + 1 + h->n_write + 1 +
	                h->n_protect + 1 + h->n_gates + 1;
	char *mem = calloc(1, sizeof(struct rd_fd_map) * (h->n_fds + 1) + sizeof(char *) * n_ptrs);
	if (!mem)
		return -ENOMEM;
	struct rd_fd_map *fds = (struct rd_fd_map *)mem;
	char **ptrs = (char **)(mem + sizeof(struct rd_fd_map) * (h->n_fds + 1));
	int r = 0;
#define RD_PLAN_TAKE(name, len, type)                                                              \
	if (r == 0 && !(out->name = take(&at, end, h->len, sizeof(type))))                         \
		r = -EPROTO;
	RD_PLAN_ARRAYS(RD_PLAN_TAKE)
#undef RD_PLAN_TAKE
	const int *targets = r == 0 ? take(&at, end, h->n_fds, sizeof(int)) : NULL;
	char *two[3];
	if (!targets || take_strings(&at, end, 2, two) < 0)
		r = -EPROTO;
	out->exec_path = r == 0 ? two[0] : NULL;
	out->cwd_path = r == 0 ? two[1] : NULL;
#define RD_PLAN_UNSTR(name, len)                                                                   \
	if (r == 0) {                                                                              \
		r = take_strings(&at, end, h->len, ptrs);                                          \
		out->name = ptrs;                                                                  \
		ptrs += h->len + 1;                                                                \
	}
	RD_PLAN_STRINGS(RD_PLAN_UNSTR)
#undef RD_PLAN_UNSTR
	/* Every byte accounted for: counts that moved strings from one list to the next, or left
	 * some over, do not add up. */
	if (r == 0 && at != end)
		r = -EPROTO;
	if (r < 0) {
		free(mem);
		return r;
	}
	if (!h->filter_len)
		out->filter = NULL;
	for (uint32_t i = 0; i < h->n_fds; i++)
		fds[i] = (struct rd_fd_map){.fd = -1, .target = targets[i]};
	out->fds = fds;
	*arena = mem;
	return 0;
}
