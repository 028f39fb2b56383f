/* Reading an exec request out of a trapped task (see reader.h). Which errno the task sees
 * depends on the order the kernel checks things in, so that order is followed to the letter;
 * the memory reads are batched because this runs on every exec the agent makes. */
#include "intercept/reader.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define PAGE      4096u
#define WIN       (64u * 1024) /* string bytes fetched per read */
#define PTR_CHUNK 4096u        /* pointer-array bytes per read: 512 native pointers */
/* bprm_stack_limits charges sizeof(void *) of the (64-bit) kernel per pointer, even for a
 * 32-bit task whose arrays hold 4-byte pointers. */
#define KERNEL_PTR 8u

_Static_assert(WIN < RD_MAX_ARG_STRLEN, "a window never proves a string too long");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a 4-byte pointer is the low half");

ssize_t rd_mem_read_task(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t tid = (pid_t)(intptr_t)ctx;
	size_t done = 0;

	if (len > UINT64_MAX - addr)
		len = (size_t)(UINT64_MAX - addr);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		struct iovec local = {(char *)buf + done, len - done};
		struct iovec remote = {(void *)(uintptr_t)(addr + done), len - done};
		ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EFAULT)
			return -errno;
		if (n <= 0)
			break;
		done += (size_t)n;
		/* The kernel stops short only at a page it cannot pin, so asking again at a page
		 * boundary would just fail; callers that need the next byte ask for it, and only
		 * a read returning 0 there makes it unreadable. */
		if (((addr + done) & (PAGE - 1)) == 0)
			break;
	}
	return (ssize_t)done;
}

size_t rd_exec_arg_limit(uint64_t rlimit_stack_cur)
{
	uint64_t limit = 8u * 1024 * 1024 / 4 * 3; /* _STK_LIM / 4 * 3 */

	limit = rlimit_stack_cur / 4 < limit ? rlimit_stack_cur / 4 : limit;
	return limit < RD_MAX_ARG_STRLEN ? RD_MAX_ARG_STRLEN : (size_t)limit; /* ARG_MAX floor */
}

/* One read through the callback, kept inside the address space so that addr + len never
 * wraps (the last byte is never user memory) and a callback that over-reports is an error. */
static ssize_t rd(const struct rd_mem *mem, uint64_t addr, void *buf, size_t len)
{
	if (len > UINT64_MAX - addr)
		len = (size_t)(UINT64_MAX - addr);
	if (len == 0)
		return 0;
	ssize_t n = mem->read(mem->ctx, addr, buf, len);
	return n > (ssize_t)len ? -EIO : n;
}

struct slot {
	uint64_t addr;
	size_t off; /* into the string area */
	size_t len; /* with the NUL; 0 until copied */
};

struct ent {
	uint64_t addr;
	size_t idx;
};

struct job {
	const struct rd_mem *mem;
	struct slot *slot; /* argv, then envp */
	size_t n, nalloc;
	struct ent *ent; /* the slots by address, to take neighbours from one read */
	char *win;
	char *arena; /* the pointer arrays (hdr bytes), then the string bytes */
	size_t hdr, used, cap;
	size_t limit, ptrs, budget; /* budget: limit - ptrs, for the strings */
	bool eager; /* copy a read's other strings too, until that could outgrow budget */
};

static int push(struct job *j, uint64_t addr)
{
	if (j->n == j->nalloc) {
		struct slot *s = realloc(j->slot, (j->nalloc + 32) * 2 * sizeof(*s));
		if (!s)
			return -ENOMEM;
		j->slot = s;
		j->nalloc = (j->nalloc + 32) * 2;
	}
	j->slot[j->n++] = (struct slot){addr, 0, 0};
	return 0;
}

/* count(): walk the array to its NULL whatever the limit, since a later bad pointer is
 * EFAULT, not E2BIG; keep at most store_max addresses (more cannot pass the limit). */
static int count_array(struct job *j, uint64_t base, unsigned int psz, size_t store_max,
                       const char *name, size_t *count, struct rd_error *err)
{
	unsigned char buf[PTR_CHUNK];
	size_t have = 0, cnt = 0;
	uint64_t pos = base;

	*count = 0;
	if (base == 0)
		return 0;
	for (;;) {
		ssize_t r = rd(j->mem, pos, buf + have, sizeof(buf) - have);
		if (r <= 0)
			return rd_error_set(err, r ? (int)r : EFAULT, "%s: %s at pointer %zu", name,
			                    r ? strerror((int)-r) : "bad address", cnt);
		pos += (uint64_t)r;
		have += (size_t)r;
		size_t o = 0;
		for (; have - o >= psz; o += psz) {
			uint64_t p = 0;
			memcpy(&p, buf + o, psz);
			if (p == 0) {
				*count = cnt;
				return 0;
			}
			if (cnt >= RD_MAX_ARG_STRINGS)
				return rd_error_set(err, E2BIG, "%s: more than %d strings", name,
				                    RD_MAX_ARG_STRINGS);
			cnt++;
			if (j->n < store_max && push(j, p) < 0)
				return rd_error_set(err, ENOMEM, "%s: out of memory", name);
		}
		memmove(buf, buf + o, have - o);
		have -= o;
	}
}

/* Where the next string goes, with room for extra bytes; NULL when out of memory. */
static char *room(struct job *j, size_t extra)
{
	if (j->used + extra > j->cap) {
		size_t cap = 2 * j->cap > j->used + extra ? 2 * j->cap : j->used + extra;
		char *a = realloc(j->arena, j->hdr + cap);
		if (!a)
			return NULL;
		j->arena = a;
		j->cap = cap;
	}
	return j->arena + j->hdr + j->used;
}

/* strnlen_user and strncpy_from_user: the string is good when its NUL comes within max bytes
 * that are all readable, too long (-E2BIG) when max bytes are readable without one, EFAULT
 * otherwise. src holds the first m (< max) bytes; the rest is read straight into the arena. */
static int finish(struct job *j, struct slot *s, const char *src, size_t m, size_t max)
{
	char *dst = room(j, m);
	size_t got = 0;

	if (!dst)
		return -ENOMEM;
	memcpy(dst, src, m);
	for (;;) {
		const char *z = memchr(dst + got, '\0', m);
		if (z) {
			*s = (struct slot){s->addr, j->used, (size_t)(z - dst) + 1};
			j->used += s->len;
			return 0;
		}
		if ((got += m) >= max)
			return -E2BIG;
		m = max - got < WIN ? max - got : WIN;
		if (!(dst = room(j, got + m)))
			return -ENOMEM;
		ssize_t r = rd(j->mem, s->addr + got, dst + got, m);
		if (r <= 0)
			return r < 0 ? (int)r : -EFAULT;
		m = (size_t)r;
	}
}

/* Copy every string that ends inside the window. Starts are visited in address order, so
 * the NUL found for one start is reused until a start passes it: one pass over the bytes.
 * Stops for good once the copies would outgrow what the kernel could accept. */
static int extract(struct job *j, size_t e, uint64_t ws, size_t n)
{
	size_t z = 0;
	bool known = false;

	for (; e < j->n && j->ent[e].addr - ws < n; e++) {
		struct slot *s = &j->slot[j->ent[e].idx];
		size_t o = (size_t)(j->ent[e].addr - ws);
		if (s->len)
			continue;
		if (!known || z < o) {
			const char *p = memchr(j->win + o, '\0', n - o);
			z = p ? (size_t)(p - j->win) : n;
			known = true;
		}
		if (z == n)
			return 0;
		if (j->used + (z - o + 1) > j->budget) {
			j->eager = false;
			return 0;
		}
		if (finish(j, s, j->win + o, z - o + 1, RD_MAX_ARG_STRLEN) < 0)
			return -ENOMEM;
	}
	return 0;
}

static size_t lower_bound(const struct job *j, uint64_t addr)
{
	size_t lo = 0, hi = j->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (j->ent[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Fetch slot i with one read that also covers its neighbours. The kernel copies the last
 * string first and callers lay strings out upwards, so the read starts at the lowest string
 * from which WIN bytes still reach the end of i's page, and stops a page past the highest
 * string it can cover. If a hole stops that read short of i, i is read on its own. */
static int load(struct job *j, size_t i)
{
	uint64_t a = j->slot[i].addr, pa = a & ~(uint64_t)(PAGE - 1);
	uint64_t lowest = pa > WIN - PAGE ? pa - (WIN - PAGE) : 0;
	size_t e = lower_bound(j, lowest);
	uint64_t ws = j->ent[e].addr;
	size_t ub = lower_bound(j, ws > UINT64_MAX - WIN ? UINT64_MAX : ws + WIN);
	uint64_t hi = ub > 0 && j->ent[ub - 1].addr > a ? j->ent[ub - 1].addr : a;
	uint64_t span = (hi - ws) + (2 * PAGE - (hi & (PAGE - 1)));
	ssize_t n = rd(j->mem, ws, j->win, span < WIN ? (size_t)span : WIN);

	if (n < 0)
		return (int)n;
	if ((uint64_t)n <= a - ws)
		return finish(j, &j->slot[i], "", 0, RD_MAX_ARG_STRLEN);
	if (j->eager && extract(j, e, ws, (size_t)n) < 0)
		return -ENOMEM;
	if (j->slot[i].len)
		return 0;
	return finish(j, &j->slot[i], j->win + (a - ws), (size_t)n - (size_t)(a - ws),
	              RD_MAX_ARG_STRLEN);
}

int rd_read_path(const struct rd_mem *mem, uint64_t addr, char **path, size_t *len)
{
	struct job j = {.mem = mem, .arena = malloc(RD_PATH_MAX), .cap = RD_PATH_MAX};
	struct slot s = {addr, 0, 0};
	int r = j.arena ? finish(&j, &s, "", 0, RD_PATH_MAX) : -ENOMEM;

	*path = r < 0 ? NULL : j.arena;
	*len = r < 0 ? 0 : s.len - 1;
	if (r < 0)
		free(j.arena);
	return r == -E2BIG ? -ENAMETOOLONG : r;
}

static int cmp_ent(const void *x, const void *y)
{
	uint64_t a = ((const struct ent *)x)->addr, b = ((const struct ent *)y)->addr;
	return (a > b) - (a < b);
}

/* copy_strings(envp), then copy_strings(argv), each from its last string down. */
static int copy_strings(struct job *j, size_t argc, size_t envc, size_t *bytes,
                        struct rd_error *err)
{
	size_t total = 0;

	for (size_t k = 0; k < j->n; k++) {
		size_t i = k < envc ? argc + envc - 1 - k : argc - 1 - (k - envc);
		const char *name = i < argc ? "argv" : "envp";
		size_t idx = i < argc ? i : i - argc;
		struct slot *s = &j->slot[i];
		int r = s->len ? 0 : load(j, i);

		if (r < 0)
			return rd_error_set(err, r, "%s[%zu]: %s", name, idx,
			                    r == -EFAULT  ? "bad address"
			                    : r == -E2BIG ? "string exceeds 131072 bytes"
			                                  : strerror(-r));
		if (s->len > j->budget - total)
			return rd_error_set(
			    err, E2BIG,
			    "argv and envp: %zu bytes exceed the limit of %zu at %s[%zu]",
			    j->ptrs + total + s->len, j->limit, name, idx);
		total += s->len;
	}
	/* With no argv the kernel then copies "" as argv[0], which needs its one byte too. */
	if (argc == 0 && total == j->budget)
		return rd_error_set(err, E2BIG,
		                    "argv and envp: the empty argv[0] exceeds the limit of %zu",
		                    j->limit);
	*bytes = total;
	return 0;
}

int rd_read_strings(const struct rd_mem *mem, uint64_t argv_addr, uint64_t envp_addr,
                    unsigned int ptr_size, size_t limit, struct rd_strings *out,
                    struct rd_error *err)
{
	struct job j = {.mem = mem, .eager = true};
	size_t argc, envc, bytes = 0;
	int r;

	*out = (struct rd_strings){0};
	if (ptr_size != 4 && ptr_size != 8)
		return rd_error_set(err, EINVAL, "pointer size %u: must be 4 or 8", ptr_size);
	size_t store_max = limit / KERNEL_PTR + 1;
	r = count_array(&j, argv_addr, ptr_size, store_max, "argv", &argc, err);
	if (r == 0)
		r = count_array(&j, envp_addr, ptr_size, store_max, "envp", &envc, err);
	if (r < 0)
		goto out;

	/* bprm_stack_limits, less the filename the caller took off limit: the kernel's
	 * "limit <= pointers" and "filename does not fit" together are "limit < pointers". */
	j.limit = limit;
	j.ptrs = ((argc ? argc : 1) + envc) * KERNEL_PTR; /* both counts are below 2^31 */
	if (j.ptrs > limit) {
		r = rd_error_set(err, E2BIG,
		                 "argv and envp: %zu bytes of pointers exceed the limit of %zu",
		                 j.ptrs, limit);
		goto out;
	}
	j.budget = limit - j.ptrs;
	j.hdr = (argc + envc + 2) * sizeof(char *);
	j.cap = 4096;
	j.arena = malloc(j.hdr + j.cap);
	j.ent = malloc(j.n * sizeof(*j.ent) + WIN);
	r = j.arena && j.ent ? 0 : rd_error_set(err, ENOMEM, "argv and envp: out of memory");
	if (r < 0)
		goto out;
	j.win = (char *)(j.ent + j.n);
	for (size_t i = 0; i < j.n; i++)
		j.ent[i] = (struct ent){j.slot[i].addr, i};
	qsort(j.ent, j.n, sizeof(*j.ent), cmp_ent);
	r = copy_strings(&j, argc, envc, &bytes, err);
	if (r < 0)
		goto out;

	char **v = (char **)(void *)j.arena, *strs = j.arena + j.hdr;
	for (size_t i = 0; i < j.n; i++)
		v[i < argc ? i : i + 1] = strs + j.slot[i].off;
	v[argc] = NULL;
	v[argc + envc + 1] = NULL;
	*out = (struct rd_strings){v, argc, v + argc + 1, envc, bytes, steal_pointer(&j.arena)};
out:
	free(j.arena);
	free(j.ent);
	free(j.slot);
	return r;
}

void rd_strings_free(struct rd_strings *s)
{
	if (!s)
		return;
	free(s->arena);
	*s = (struct rd_strings){0};
}
