/* libFuzzer harness for the exec request reader: the input lays out a small fake address space
 * (regions that may touch, so reads stop short inside contiguous memory), writes argv and envp
 * arrays into it (or points at raw bytes), and picks the limit. rd_read_strings and
 * rd_read_path must then agree exactly, errno and every byte, with a plain byte-at-a-time model
 * of the kernel (count, count, pointer limit, envp then argv from the last string down). */
#include "intercept/reader.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define NREG   4
#define MAXSTR 64
#define MAXPTR 65536 /* raw arrays: a region's worth of non-NULL pointers */

struct region {
	uint64_t addr;
	size_t len;
	unsigned char *bytes;
};

struct space {
	struct region r[NREG];
	size_t n;
	size_t calls, fail_at; /* fail_at: the call that returns -ESRCH, 0 for none */
};

struct input {
	const uint8_t *p;
	size_t left;
};

static uint64_t take(struct input *in, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		v = v << 8 | (in->left ? *in->p : 0);
		if (in->left) {
			in->p++;
			in->left--;
		}
	}
	return v;
}

static const struct region *find(const struct space *s, uint64_t addr)
{
	for (size_t i = 0; i < s->n; i++)
		if (addr >= s->r[i].addr && addr - s->r[i].addr < s->r[i].len)
			return &s->r[i];
	return NULL;
}

static ssize_t space_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct space *s = ctx;
	const struct region *r = find(s, addr);

	if (s->fail_at && ++s->calls >= s->fail_at)
		return -ESRCH;
	if (!r)
		return 0;
	size_t n = r->len - (size_t)(addr - r->addr);
	n = n < len ? n : len;
	memcpy(buf, r->bytes + (addr - r->addr), n);
	return (ssize_t)n;
}

/* The model reads one byte at a time; the last byte of the address space is never mapped. */
static int byte_at(const struct space *s, uint64_t addr, unsigned char *c)
{
	const struct region *r = addr == UINT64_MAX ? NULL : find(s, addr);
	if (r)
		*c = r->bytes[addr - r->addr];
	return r != NULL;
}

static int model_count(const struct space *s, uint64_t base, unsigned int psz, uint64_t *ptrs,
                       size_t *n)
{
	const struct region *r = NULL;

	*n = 0;
	for (uint64_t i = 0, at = base; base; i++, at += psz) {
		uint64_t p = 0;
		if (at < base || at > UINT64_MAX - psz)
			return -EFAULT;
		if (r && r->len >= psz &&
		    at - r->addr <= r->len - psz) { /* the same region: skip the lookups */
			memcpy(&p, r->bytes + (at - r->addr), psz);
		} else {
			for (unsigned int b = 0; b < psz; b++) {
				unsigned char c;
				if (!byte_at(s, at + b, &c))
					return -EFAULT;
				p |= (uint64_t)c << (8 * b);
			}
			r = find(s, at);
		}
		if (!p)
			break;
		CHECK(*n < MAXPTR);
		ptrs[(*n)++] = p;
	}
	return 0;
}

/* strnlen_user(str, max): the length with the NUL, -E2BIG, or -EFAULT. Byte by byte in
 * effect, a region at a time for speed. */
static long model_strlen(const struct space *s, uint64_t str, size_t max)
{
	for (size_t k = 0; k < max;) {
		const struct region *r =
		    str + k < str || str + k == UINT64_MAX ? NULL : find(s, str + k);
		if (!r)
			return -EFAULT;
		size_t off = (size_t)(str + k - r->addr), n = r->len - off;
		n = n < max - k ? n : max - k;
		const unsigned char *z = memchr(r->bytes + off, 0, n);
		if (z)
			return (long)(k + (size_t)(z - (r->bytes + off))) + 1;
		k += n;
	}
	return -E2BIG;
}

/* The model's bytes at addr, which it has already found readable. */
static void check_bytes(const struct space *s, uint64_t addr, const char *got, size_t len)
{
	for (size_t k = 0; k < len;) {
		const struct region *r = find(s, addr + k);
		CHECK(r);
		size_t off = (size_t)(addr + k - r->addr), n = r->len - off;
		n = n < len - k ? n : len - k;
		CHECK(memcmp(r->bytes + off, got + k, n) == 0);
		k += n;
	}
}

static int model(const struct space *s, uint64_t argv, uint64_t envp, unsigned int psz,
                 size_t limit, uint64_t *ptrs, size_t *argc, size_t *envc, size_t *lens)
{
	int r = model_count(s, argv, psz, ptrs, argc);
	if (r == 0)
		r = model_count(s, envp, psz, ptrs + *argc, envc);
	if (r < 0)
		return r;
	size_t nptr = ((*argc ? *argc : 1) + *envc) * 8, total = 0;
	if (nptr > limit)
		return -E2BIG;
	for (size_t k = 0; k < *argc + *envc; k++) {
		size_t i = k < *envc ? *argc + *envc - 1 - k : *argc - 1 - (k - *envc);
		long len = model_strlen(s, ptrs[i], RD_MAX_ARG_STRLEN);
		if (len < 0)
			return (int)len;
		if ((size_t)len > limit - nptr - total)
			return -E2BIG;
		lens[i] = (size_t)len;
		total += (size_t)len;
	}
	if (*argc == 0 && total == limit - nptr)
		return -E2BIG;
	return 0;
}

/* A region: its length (a few around RD_MAX_ARG_STRLEN), its gap to the one before (0: they
 * touch), its bytes from the input, then runs of one byte (long strings) and NULs. */
static void map_region(struct space *s, struct input *in, uint64_t *next)
{
	struct region *r = &s->r[s->n++];
	uint64_t len_raw = take(in, 2), gap = take(in, 1);

	r->len = len_raw & 0x8000 ? RD_MAX_ARG_STRLEN - 64 + (len_raw & 127) : 1 + len_raw % 6000;
	r->addr = *next + (gap == 0 ? 0 : gap * 256 + (gap & 7));
	*next = r->addr + r->len;
	r->bytes = malloc(r->len);
	CHECK(r->bytes);
	size_t own = in->left < r->len / 2 ? in->left : r->len / 2;
	memcpy(r->bytes, in->p, own);
	in->p += own;
	in->left -= own;
	memset(r->bytes + own, 'A' + (int)(gap % 26), r->len - own);
	for (int k = (int)take(in, 1) % 4; k > 0; k--)
		r->bytes[take(in, 3) % r->len] = '\0';
}

/* An address: mostly inside a region (near its end, often), sometimes unmapped. */
static uint64_t pick(const struct space *s, struct input *in)
{
	uint64_t v = take(in, 2);
	if ((v & 0xc000) == 0xc000)
		return (v & 1) ? 0x7000 : UINT64_MAX - (v & 15);
	const struct region *r = &s->r[(v >> 12) % s->n];
	size_t off = (v & 0x800) ? r->len - 1 - (v & 0x7ff) % r->len : (v & 0x7ff) % r->len;
	return r->addr + off;
}

/* Write an array of count picked pointers and its NULL at a picked address, as far as the
 * region it lands in goes. */
static uint64_t put_array(struct space *s, struct input *in, unsigned int psz)
{
	uint64_t base = pick(s, in);
	size_t count = take(in, 1) % MAXSTR;
	const struct region *r = find(s, base);

	for (size_t i = 0; r && i <= count; i++) {
		uint64_t p = i < count ? pick(s, in) : 0;
		for (unsigned int b = 0; b < psz; b++) {
			uint64_t at = base + i * psz + b;
			if (at - r->addr < r->len)
				r->bytes[at - r->addr] = (unsigned char)(p >> (8 * b));
		}
	}
	return base;
}

static void check_path(struct space *s, const struct rd_mem *mem, uint64_t addr)
{
	char *path = NULL;
	size_t len = 7;
	int r = rd_read_path(mem, addr, &path, &len);
	long want = model_strlen(s, addr, RD_PATH_MAX);

	if (s->fail_at && r == -ESRCH) {
		CHECK(path == NULL && len == 0);
	} else if (want < 0) {
		CHECK(r == (want == -E2BIG ? -ENAMETOOLONG : want));
		CHECK(path == NULL && len == 0);
	} else {
		CHECK(r == 0 && len == (size_t)want - 1 && strlen(path) == len);
		check_bytes(s, addr, path, len);
	}
	free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct space s = {0};
	uint64_t flags = take(&in, 1), next = 0x10000 + take(&in, 1) * 8;
	unsigned int psz = flags & 1 ? 4 : 8;
	size_t limit = flags & 8 ? rd_exec_arg_limit(8u << 20) : (size_t)take(&in, 2) * 8;
	static uint64_t ptrs[2 * MAXPTR];
	static size_t lens[2 * MAXPTR];

	for (size_t i = 0, n = 1 + take(&in, 1) % NREG; i < n; i++)
		map_region(&s, &in, &next);
	uint64_t argv = flags & 2 ? 0 : flags & 16 ? pick(&s, &in) : put_array(&s, &in, psz);
	uint64_t envp = flags & 4 ? 0 : flags & 16 ? pick(&s, &in) : put_array(&s, &in, psz);
	uint64_t path = pick(&s, &in);
	s.fail_at = flags & 32 ? take(&in, 1) % 8 + 1 : 0;

	struct rd_mem mem = {space_read, &s};
	struct rd_strings out;
	struct rd_error err = {0};
	size_t argc = 0, envc = 0;
	int want = model(&s, argv, envp, psz, limit, ptrs, &argc, &envc, lens);
	int r = rd_read_strings(&mem, argv, envp, psz, limit, &out, &err);

	if (r < 0) {
		CHECK(!out.argv && !out.envp && !out.arena && out.argc + out.envc + out.bytes == 0);
		CHECK(err.err == -r && err.n > 0);
	}
	CHECK(r == want || (s.fail_at && r == -ESRCH));
	if (r == 0) {
		size_t bytes = 0;
		CHECK(out.argv[out.argc] == NULL && out.envp[out.envc] == NULL);
		CHECK(out.envp == out.argv + out.argc + 1 && (void *)out.argv == out.arena);
		for (size_t i = 0; i < out.argc + out.envc; i++) {
			const char *str = i < out.argc ? out.argv[i] : out.envp[i - out.argc];
			CHECK(str != NULL);
			bytes += strlen(str) + 1;
			CHECK(strlen(str) + 1 == lens[i]);
			check_bytes(&s, ptrs[i], str, lens[i]);
		}
		CHECK(bytes == out.bytes);
		CHECK(out.argc == argc && out.envc == envc);
		rd_strings_free(&out);
	}
	check_path(&s, &mem, path);
	for (size_t i = 0; i < s.n; i++)
		free(s.r[i].bytes);
	return 0;
}
