/* Unit tests of the exec request reader (intercept/reader.c) against a fake address space of
 * mapped regions, whose reads stop short at a region's end (even when the next region
 * follows on) and return 0 at an unmapped address, the way process_vm_readv does; and once
 * against a real forked child through process_vm_readv. The expected errnos are the kernel's
 * (fs/exec.c do_execveat_common, getname). */
/* cmocka needs these first, in this order */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
// clang-format on

#include "intercept/reader.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB      (1024u * 1024)
#define BIGLIMIT ((size_t)2 * MiB)

/* ---- the fake address space ------------------------------------------------------------ */

struct region {
	uint64_t addr;
	size_t len;
	unsigned char *bytes;
};

struct fake {
	struct region r[16];
	size_t n;
	size_t calls;
	size_t fail_from; /* the call (1-based) from which reads fail with -fail_err */
	int fail_err;
};

static ssize_t fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	f->calls++;
	if (f->fail_err && f->calls >= f->fail_from)
		return -f->fail_err;
	for (size_t i = 0; i < f->n; i++) {
		const struct region *r = &f->r[i];
		if (addr >= r->addr && addr - r->addr < r->len) {
			size_t n = r->len - (size_t)(addr - r->addr);
			if (n > len)
				n = len;
			memcpy(buf, r->bytes + (addr - r->addr), n);
			return (ssize_t)n;
		}
	}
	return 0;
}

static struct fake *fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	return f;
}

static void fake_free(struct fake *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->r[i].bytes);
	free(f);
}

static struct region *fake_map(struct fake *f, uint64_t addr, size_t len)
{
	assert_true(f->n < ARRAY_SIZE(f->r));
	struct region *r = &f->r[f->n++];
	r->addr = addr;
	r->len = len;
	r->bytes = calloc(1, len);
	assert_non_null(r->bytes);
	return r;
}

static struct rd_mem fake_mem(struct fake *f)
{
	return (struct rd_mem){.read = fake_read, .ctx = f};
}

/* Write s and its NUL at off; returns its address. */
static uint64_t put_str(struct region *r, size_t off, const char *s)
{
	size_t n = strlen(s) + 1;
	assert_true(off + n <= r->len);
	memcpy(r->bytes + off, s, n);
	return r->addr + off;
}

static void put_ptr(struct region *r, size_t off, uint64_t p, unsigned int psz)
{
	assert_true(off + psz <= r->len);
	if (psz == 8) {
		memcpy(r->bytes + off, &p, 8);
	} else {
		uint32_t p32 = (uint32_t)p;
		memcpy(r->bytes + off, &p32, 4);
	}
}

/* Write n pointers and the NULL after them at off; returns the array's address. */
static uint64_t put_array(struct region *r, size_t off, const uint64_t *p, size_t n,
                          unsigned int psz)
{
	for (size_t i = 0; i < n; i++)
		put_ptr(r, off + i * psz, p[i], psz);
	put_ptr(r, off + n * psz, 0, psz);
	return r->addr + off;
}

/* One region laid out the way exec leaves a stack: the argv array, the envp array, then the
 * strings, argv's first. */
static void lay_out(struct fake *f, uint64_t base, const char *const *argv, size_t argc,
                    const char *const *envp, size_t envc, unsigned int psz, uint64_t *argv_addr,
                    uint64_t *envp_addr)
{
	size_t size = (argc + envc + 2) * psz, off;
	uint64_t *p = calloc(argc + envc + 1, sizeof(*p));

	assert_non_null(p);
	for (size_t i = 0; i < argc; i++)
		size += strlen(argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		size += strlen(envp[i]) + 1;
	struct region *r = fake_map(f, base, size);
	off = (argc + envc + 2) * psz;
	for (size_t i = 0; i < argc + envc; i++) {
		const char *s = i < argc ? argv[i] : envp[i - argc];
		p[i] = put_str(r, off, s);
		off += strlen(s) + 1;
	}
	*argv_addr = put_array(r, 0, p, argc, psz);
	*envp_addr = put_array(r, (argc + 1) * psz, p + argc, envc, psz);
	free(p);
}

static size_t sum_bytes(const char *const *v, size_t n)
{
	size_t b = 0;
	for (size_t i = 0; i < n; i++)
		b += strlen(v[i]) + 1;
	return b;
}

static void expect_strv(char *const *got, const char *const *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_string_equal(got[i], want[i]);
	assert_null(got[n]);
}

/* Read with a fresh error and check that a failure leaves *out empty. */
static int read_strings(struct fake *f, uint64_t argv, uint64_t envp, unsigned int psz,
                        size_t limit, struct rd_strings *s, struct rd_error *err)
{
	struct rd_mem mem = fake_mem(f);
	rd_error_clear(err);
	int r = rd_read_strings(&mem, argv, envp, psz, limit, s, err);
	if (r < 0) {
		assert_null(s->argv);
		assert_null(s->envp);
		assert_null(s->arena);
		assert_int_equal(s->argc + s->envc + s->bytes, 0);
		assert_int_equal(err->err, -r);
	} else {
		assert_int_equal(err->n, 0);
	}
	return r;
}

static const char *const ARGV3[] = {"/bin/ls", "-l", ""};
static const char *const ENVP3[] = {"PATH=/usr/bin:/bin", "HOME=/home/agent", "EMPTY="};

/* ---- argv and envp ---------------------------------------------------------------------- */

static void test_normal(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	uint64_t a, e;

	lay_out(f, 0x7ffd0000, ARGV3, 3, ENVP3, 3, 8, &a, &e);
	assert_int_equal(read_strings(f, a, e, 8, BIGLIMIT, &s, &err), 0);
	assert_int_equal(s.argc, 3);
	assert_int_equal(s.envc, 3);
	expect_strv(s.argv, ARGV3, 3);
	expect_strv(s.envp, ENVP3, 3);
	assert_int_equal(s.bytes, sum_bytes(ARGV3, 3) + sum_bytes(ENVP3, 3));
	assert_non_null(s.arena);
	assert_ptr_equal(s.arena, s.argv);
	rd_strings_free(&s);
	assert_null(s.arena);
	rd_strings_free(&s);
	fake_free(f);
}

static void test_compat_pointers(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	uint64_t a, e;
	size_t strs = sum_bytes(ARGV3, 3) + sum_bytes(ENVP3, 3);

	lay_out(f, 0xffff0000, ARGV3, 3, ENVP3, 3, 4, &a, &e);
	assert_int_equal(read_strings(f, a, e, 4, BIGLIMIT, &s, &err), 0);
	expect_strv(s.argv, ARGV3, 3);
	expect_strv(s.envp, ENVP3, 3);
	rd_strings_free(&s);
	/* 4-byte arrays, but the kernel charges its own 8-byte pointers. */
	assert_int_equal(read_strings(f, a, e, 4, 6 * 8 + strs, &s, &err), 0);
	rd_strings_free(&s);
	assert_int_equal(read_strings(f, a, e, 4, 6 * 8 + strs - 1, &s, &err), -E2BIG);
	assert_int_equal(read_strings(f, a, e, 2, BIGLIMIT, &s, &err), -EINVAL);
	fake_free(f);
}

static void test_null_arrays(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	uint64_t a, e;

	assert_int_equal(read_strings(f, 0, 0, 8, BIGLIMIT, &s, &err), 0);
	assert_int_equal(s.argc + s.envc + s.bytes, 0);
	assert_null(s.argv[0]);
	assert_null(s.envp[0]);
	rd_strings_free(&s);

	lay_out(f, 0x10000, ARGV3, 0, ENVP3, 3, 8, &a, &e);
	assert_int_equal(read_strings(f, 0, e, 8, BIGLIMIT, &s, &err), 0);
	assert_int_equal(s.argc, 0);
	assert_null(s.argv[0]);
	expect_strv(s.envp, ENVP3, 3);
	rd_strings_free(&s);
	/* An array holding only its NULL is as empty as a NULL array. */
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), 0);
	assert_int_equal(s.argc + s.envc, 0);
	rd_strings_free(&s);
	fake_free(f);
}

static void test_bad_array(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	uint64_t a, e;

	lay_out(f, 0x10000, ARGV3, 3, ENVP3, 3, 8, &a, &e);
	assert_int_equal(read_strings(f, 0xdead0000, e, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_non_null(strstr(err.msg, "argv: bad address"));
	assert_int_equal(read_strings(f, a, 0xdead0000, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_non_null(strstr(err.msg, "envp: bad address"));

	/* An array that runs into unmapped memory before its NULL, one that ends mid-pointer. */
	struct region *r = fake_map(f, 0x20000, 4096);
	uint64_t p[2] = {a, a};
	for (size_t i = 0; i < 512; i++)
		put_ptr(r, i * 8, 0x10000 + 64, 8);
	assert_int_equal(read_strings(f, 0x20000, e, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_non_null(strstr(err.msg, "argv: bad address at pointer 512"));
	assert_int_equal(read_strings(f, a, 0x20000 + 4, 8, BIGLIMIT, &s, &err), -EFAULT);

	/* Counting comes before any string: a bad envp array beats a bad argv string. */
	r = fake_map(f, 0x30000, 64);
	p[1] = 0xbad00000;
	uint64_t bad_argv = put_array(r, 0, p, 2, 8);
	assert_int_equal(read_strings(f, bad_argv, 0xdead0000, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_non_null(strstr(err.msg, "envp: bad address"));
	fake_free(f);
}

static void test_bad_string(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	struct region *r = fake_map(f, 0x40000, 4096);
	uint64_t good = put_str(r, 1024, "GOOD=1"), bad = 0x50000, big;
	char *long_str = malloc(RD_MAX_ARG_STRLEN + 1);

	assert_non_null(long_str);
	memset(long_str, 'y', RD_MAX_ARG_STRLEN);
	long_str[RD_MAX_ARG_STRLEN] = '\0';
	struct region *lr = fake_map(f, 0x100000, RD_MAX_ARG_STRLEN + 1);
	big = put_str(lr, 0, long_str);
	free(long_str);

	uint64_t av[3] = {good, bad, good}, ev[3] = {good, good, bad};
	uint64_t a = put_array(r, 0, av, 3, 8), e = put_array(r, 64, ev, 3, 8);
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "argv[1]: bad address");
	assert_int_equal(read_strings(f, 0, e, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "envp[2]: bad address");
	/* envp is copied first, so its error wins. */
	assert_int_equal(read_strings(f, a, e, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "envp[2]: bad address");

	/* Each array is copied from its last string down: of two bad strings the last fails,
	 * and a bad last string beats a too long first one (and the other way round). */
	uint64_t two_bad[3] = {bad, good, bad + 8}, long_then_bad[2] = {big, bad};
	uint64_t bad_then_long[2] = {bad, big};
	a = put_array(r, 128, two_bad, 3, 8);
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "argv[2]: bad address");
	a = put_array(r, 192, long_then_bad, 2, 8);
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "argv[1]: bad address");
	a = put_array(r, 256, bad_then_long, 2, 8);
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "argv[1]: string exceeds 131072"));
	fake_free(f);
}

static void test_string_edges(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	struct region *arr = fake_map(f, 0x1000, 4096);
	struct region *r = fake_map(f, 0x8000, 4096);
	/* Ends exactly at the region's end, with nothing mapped after it. */
	uint64_t edge = put_str(r, 4096 - 6, "E=end");
	/* Crosses into the next region, which the fake serves in a second read. */
	struct region *r1 = fake_map(f, 0xa000, 4096), *r2 = fake_map(f, 0xb000, 4096);
	struct region *r3 = fake_map(f, 0x20000, 4096);

	memcpy(r1->bytes + 4096 - 10, "SPLIT=ssss", 10);
	uint64_t split = r1->addr + 4096 - 10;
	put_str(r2, 0, "tail");
	memset(r3->bytes + 4000, 'z', 96); /* no NUL before the unmapped page */
	uint64_t runs_off = r3->addr + 4000;

	uint64_t v[2] = {split, edge};
	uint64_t e = put_array(arr, 0, v, 2, 8);
	assert_int_equal(read_strings(f, 0, e, 8, BIGLIMIT, &s, &err), 0);
	assert_string_equal(s.envp[0], "SPLIT=sssstail");
	assert_string_equal(s.envp[1], "E=end");
	rd_strings_free(&s);

	v[0] = runs_off;
	e = put_array(arr, 64, v, 1, 8);
	assert_int_equal(read_strings(f, 0, e, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "envp[0]: bad address");

	/* A batched read starting at a lower, unmapped string (or stopped by a hole before the
	 * string wanted) must not make a good string fail. */
	struct region *r4 = fake_map(f, 0x28000, 4096);
	uint64_t after_hole = put_str(r4, 16, "AFTER=hole");
	uint64_t w[3] = {0x7000, r3->addr + 100, after_hole};
	put_str(r3, 100, "BEFORE=hole");
	e = put_array(arr, 128, w + 1, 2, 8);
	assert_int_equal(read_strings(f, 0, e, 8, BIGLIMIT, &s, &err), 0);
	assert_string_equal(s.envp[0], "BEFORE=hole");
	assert_string_equal(s.envp[1], "AFTER=hole");
	rd_strings_free(&s);
	w[1] = edge;
	e = put_array(arr, 192, w, 2, 8);
	assert_int_equal(read_strings(f, 0, e, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "envp[0]: bad address");
	assert_int_equal(read_strings(f, e, 0, 8, BIGLIMIT, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "argv[0]: bad address");
	fake_free(f);
}

static void test_max_strlen(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	struct region *arr = fake_map(f, 0x1000, 4096);
	struct region *r = fake_map(f, 0x100000, RD_MAX_ARG_STRLEN + 8192);
	struct region *exact = fake_map(f, 0x200000, RD_MAX_ARG_STRLEN);
	struct region *short_r = fake_map(f, 0x400000, 100000);
	uint64_t v[1];

	/* strlen 131071 fits with its NUL, 131072 does not. */
	memset(r->bytes, 'a', RD_MAX_ARG_STRLEN - 1);
	v[0] = r->addr;
	uint64_t a = put_array(arr, 0, v, 1, 8);
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), 0);
	assert_int_equal(strlen(s.argv[0]), RD_MAX_ARG_STRLEN - 1);
	assert_int_equal(s.bytes, RD_MAX_ARG_STRLEN);
	rd_strings_free(&s);
	r->bytes[RD_MAX_ARG_STRLEN - 1] = 'a';
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), -E2BIG);
	assert_string_equal(err.msg, "argv[0]: string exceeds 131072 bytes");

	/* Too long is decided on the 131072 bytes alone: what follows need not be mapped. */
	memset(exact->bytes, 'b', exact->len);
	v[0] = exact->addr;
	a = put_array(arr, 64, v, 1, 8);
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), -E2BIG);
	/* Unmapped before that many bytes is a bad address. */
	memset(short_r->bytes, 'c', short_r->len);
	v[0] = short_r->addr;
	a = put_array(arr, 128, v, 1, 8);
	assert_int_equal(read_strings(f, a, 0, 8, BIGLIMIT, &s, &err), -EFAULT);
	fake_free(f);
}

static void test_total_limit(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	uint64_t a, e;
	size_t strs = sum_bytes(ARGV3, 3) + sum_bytes(ENVP3, 3);
	size_t ptrs = 6 * 8;

	lay_out(f, 0x10000, ARGV3, 3, ENVP3, 3, 8, &a, &e);
	assert_int_equal(read_strings(f, a, e, 8, ptrs + strs, &s, &err), 0);
	assert_int_equal(s.bytes, strs);
	rd_strings_free(&s);
	assert_int_equal(read_strings(f, a, e, 8, ptrs + strs - 1, &s, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "exceed the limit of"));
	/* Pointers alone over the limit fail before any string is read. */
	f->calls = 0;
	assert_int_equal(read_strings(f, a, e, 8, ptrs - 1, &s, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "pointers"));
	assert_int_equal(f->calls, 2);
	/* Exactly the pointers passes that check; the first string copied then fails. */
	assert_int_equal(read_strings(f, a, e, 8, ptrs, &s, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "envp[2]"));
	fake_free(f);
}

static void test_limit_order(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	struct region *r = fake_map(f, 0x10000, 8192);
	uint64_t big = r->addr + 1024, small = put_str(r, 512, "S=1");

	memset(r->bytes + 1024, 'x', 4000);
	/* envp[1] is copied first and is already over the limit: E2BIG, though envp[0] and
	 * argv[0] are bad. */
	uint64_t ev[2] = {0xbad000, big}, av[1] = {0xbad000};
	uint64_t e = put_array(r, 0, ev, 2, 8), a = put_array(r, 64, av, 1, 8);
	assert_int_equal(read_strings(f, a, e, 8, 4000, &s, &err), -E2BIG);
	/* Within the limit, the bad envp[0] comes next. */
	assert_int_equal(read_strings(f, a, e, 8, 8000, &s, &err), -EFAULT);
	assert_string_equal(err.msg, "envp[0]: bad address");

	/* argc 0 still costs one pointer, and the kernel's "" one byte. */
	uint64_t one[1] = {small};
	e = put_array(r, 128, one, 1, 8);
	assert_int_equal(read_strings(f, 0, e, 8, 2 * 8 + 4 + 1, &s, &err), 0);
	assert_int_equal(s.bytes, 4);
	rd_strings_free(&s);
	assert_int_equal(read_strings(f, 0, e, 8, 2 * 8 + 4, &s, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "the empty argv[0] exceeds"));
	assert_int_equal(read_strings(f, 0, e, 8, 2 * 8 - 1, &s, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "pointers"));
	/* With an argv of one, the same pointer count and no extra byte. */
	assert_int_equal(read_strings(f, e, 0, 8, 8 + 4, &s, &err), 0);
	rd_strings_free(&s);
	fake_free(f);
}

static void test_shared_strings(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	struct region *r = fake_map(f, 0x10000, 4096);
	uint64_t str = put_str(r, 2000, "KEY=value");
	/* The same string twice, and a pointer into its middle: each counts in full. */
	uint64_t v[4] = {str, str + 4, str, str + 9};
	uint64_t e = put_array(r, 0, v, 4, 8);
	const char *want[4] = {"KEY=value", "value", "KEY=value", ""};

	assert_int_equal(read_strings(f, e, e, 8, BIGLIMIT, &s, &err), 0);
	expect_strv(s.argv, want, 4);
	expect_strv(s.envp, want, 4);
	assert_int_equal(s.bytes, 2 * sum_bytes(want, 4));
	rd_strings_free(&s);
	fake_free(f);
}

static void test_array_split(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	/* An array whose second pointer straddles two adjacent regions. */
	struct region *r1 = fake_map(f, 0x10000, 4096), *r2 = fake_map(f, 0x11000, 4096);
	uint64_t s0 = put_str(r2, 100, "A=1"), s1 = put_str(r2, 200, "B=2");
	unsigned char p[8];

	put_ptr(r1, 4096 - 12, s0, 8);
	memcpy(p, &s1, 8);
	memcpy(r1->bytes + 4096 - 4, p, 4);
	memcpy(r2->bytes, p + 4, 4);
	assert_int_equal(read_strings(f, 0, r1->addr + 4096 - 12, 8, BIGLIMIT, &s, &err), 0);
	assert_int_equal(s.envc, 2);
	assert_string_equal(s.envp[0], "A=1");
	assert_string_equal(s.envp[1], "B=2");
	rd_strings_free(&s);
	fake_free(f);
}

static void test_task_gone(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	uint64_t a, e;
	char *path = (char *)1;
	size_t len = 1;

	lay_out(f, 0x10000, ARGV3, 3, ENVP3, 3, 8, &a, &e);
	for (size_t from = 1; from <= 3; from++) {
		f->calls = 0;
		f->fail_from = from;
		f->fail_err = ESRCH;
		assert_int_equal(read_strings(f, a, e, 8, BIGLIMIT, &s, &err), -ESRCH);
	}
	struct rd_mem mem = fake_mem(f);
	assert_int_equal(rd_read_path(&mem, a, &path, &len), -ESRCH);
	assert_null(path);
	assert_int_equal(len, 0);
	fake_free(f);
}

/* ---- how many reads ---------------------------------------------------------------------- */

static char **make_env(size_t n)
{
	char **v = calloc(n, sizeof(*v));
	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		assert_true(asprintf(&v[i], "VARIABLE_%zu=some value of %zu bytes", i, i * 7) > 0);
	return v;
}

static void free_env(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void test_read_count(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_strings s;
	struct rd_error err;
	uint64_t a, e;
	char **env = make_env(100);

	lay_out(f, 0x7ffe0010, ARGV3, 3, (const char *const *)env, 100, 8, &a, &e);
	assert_int_equal(read_strings(f, a, e, 8, BIGLIMIT, &s, &err), 0);
	expect_strv(s.envp, (const char *const *)env, 100);
	print_message("reads for 3 argv + 100 envp strings on one stack: %zu\n", f->calls);
	assert_true(f->calls <= 4);
	rd_strings_free(&s);
	fake_free(f);

	/* argv on the heap, each string in its own malloc-like slot of a size class; envp
	 * strings interleaved over three spans, as Go's allocator leaves them. */
	f = fake_new();
	struct region *heap = fake_map(f, 0x555555550000, 64 * 1024);
	struct region *span[3] = {fake_map(f, 0xc000010000, 16384),
	                          fake_map(f, 0xc000020000, 16384),
	                          fake_map(f, 0xc000030000, 16384)};
	uint64_t av[3], ev[100];
	for (size_t i = 0; i < 3; i++)
		av[i] = put_str(heap, 4096 + i * 48, ARGV3[i]);
	for (size_t i = 0; i < 100; i++)
		ev[i] = put_str(span[i % 3], (i / 3) * 64, env[i]);
	a = put_array(heap, 0, av, 3, 8);
	e = put_array(heap, 1024, ev, 100, 8);
	assert_int_equal(read_strings(f, a, e, 8, BIGLIMIT, &s, &err), 0);
	expect_strv(s.argv, ARGV3, 3);
	expect_strv(s.envp, (const char *const *)env, 100);
	print_message("reads with argv on the heap and envp over three spans: %zu\n", f->calls);
	assert_true(f->calls <= 6);
	rd_strings_free(&s);
	fake_free(f);
	free_env(env, 100);

	/* A big environment: 2000 strings over ~80 KiB. */
	f = fake_new();
	env = make_env(2000);
	lay_out(f, 0x7ff000000000, ARGV3, 3, (const char *const *)env, 2000, 8, &a, &e);
	assert_int_equal(read_strings(f, a, e, 8, BIGLIMIT, &s, &err), 0);
	expect_strv(s.envp, (const char *const *)env, 2000);
	print_message("reads for 2000 envp strings: %zu\n", f->calls);
	assert_true(f->calls <= 12);
	rd_strings_free(&s);
	fake_free(f);
	free_env(env, 2000);
}

/* ---- the path ------------------------------------------------------------------------------ */

static void test_path(void **state)
{
	(void)state;
	struct fake *f = fake_new();
	struct rd_mem mem = fake_mem(f);
	struct region *r = fake_map(f, 0x10000, 3 * 4096);
	struct region *r2 = fake_map(f, 0x10000 + 3 * 4096, 4096);
	char *path = NULL;
	size_t len = 99;

	uint64_t p = put_str(r, 0, "/usr/bin/env");
	assert_int_equal(rd_read_path(&mem, p, &path, &len), 0);
	assert_string_equal(path, "/usr/bin/env");
	assert_int_equal(len, 12);
	free(path);
	p = put_str(r, 100, "");
	assert_int_equal(rd_read_path(&mem, p, &path, &len), 0);
	assert_string_equal(path, "");
	assert_int_equal(len, 0);
	free(path);
	assert_int_equal(rd_read_path(&mem, 0, &path, &len), -EFAULT);
	assert_null(path);

	/* 4095 bytes and the NUL fit, and may run into the next region. */
	memset(r->bytes + 8192, 'p', 4096);
	memset(r2->bytes, 'q', 4096);
	r2->bytes[99] = '\0';
	assert_int_equal(rd_read_path(&mem, r->addr + 8192 + 100, &path, &len), 0);
	assert_int_equal(len, 4095);
	assert_int_equal(strlen(path), 4095);
	free(path);
	/* 4096 without a NUL is too long, whatever follows (here: nothing mapped). */
	assert_int_equal(rd_read_path(&mem, r->addr + 8192 + 99, &path, &len), -ENAMETOOLONG);
	r2->bytes[99] = 'q';
	assert_int_equal(rd_read_path(&mem, r2->addr, &path, &len), -ENAMETOOLONG);
	assert_int_equal(rd_read_path(&mem, r2->addr + 1, &path, &len), -EFAULT);
	assert_null(path);
	fake_free(f);
}

static void test_arg_limit(void **state)
{
	(void)state;
	assert_int_equal(rd_exec_arg_limit(8 * MiB), 2 * MiB);
	assert_int_equal(rd_exec_arg_limit(RLIM_INFINITY), 6 * MiB);
	assert_int_equal(rd_exec_arg_limit(24 * MiB), 6 * MiB);
	assert_int_equal(rd_exec_arg_limit(100 * 1024), 128 * 1024);
	assert_int_equal(rd_exec_arg_limit(0), 128 * 1024);
	assert_int_equal(rd_exec_arg_limit(4 * MiB + 4), MiB + 1);
}

/* ---- a real task --------------------------------------------------------------------------- */

#define REAL_ENVC 100
static const char EDGE[] = "EDGE=this string ends on the last byte of its page";

struct counted {
	pid_t pid;
	size_t calls;
};

static ssize_t counted_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct counted *c = ctx;
	c->calls++;
	return rd_mem_read_task((void *)(intptr_t)c->pid, addr, buf, len);
}

static char *big_string(void)
{
	char *big = malloc(20001);
	assert_non_null(big);
	memcpy(big, "BIG=", 4);
	memset(big + 4, 'x', 19996);
	big[20000] = '\0';
	return big;
}

static _Noreturn void real_child(int fd)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m =
	    mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char *argv[] = {"/bin/echo", "hello", "", NULL};
	char **env = make_env(REAL_ENVC);
	char *envp[REAL_ENVC + 3];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(60);
	if (m == MAP_FAILED || mprotect(m + pg, (size_t)pg, PROT_NONE) < 0)
		_exit(1);
	memcpy(m + pg - sizeof(EDGE), EDGE, sizeof(EDGE));
	for (size_t i = 0; i < REAL_ENVC; i++)
		envp[i] = env[i];
	envp[REAL_ENVC] = m + pg - sizeof(EDGE);
	envp[REAL_ENVC + 1] = big_string();
	envp[REAL_ENVC + 2] = NULL;
	uint64_t addrs[3] = {(uintptr_t)argv, (uintptr_t)envp, (uintptr_t)argv[0]};
	if (write(fd, addrs, sizeof(addrs)) != (ssize_t)sizeof(addrs))
		_exit(1);
	for (;;)
		pause();
}

static void test_real_process(void **state)
{
	(void)state;
	int fds[2];
	uint64_t addrs[3];
	struct rd_strings s;
	struct rd_error err;
	char *path = NULL;
	size_t len;

	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		real_child(fds[1]);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], addrs, sizeof(addrs));
	close(fds[0]);
	assert_int_equal(n, sizeof(addrs));

	struct counted c = {.pid = pid};
	struct rd_mem mem = {.read = counted_read, .ctx = &c};
	rd_error_clear(&err);
	int r =
	    rd_read_strings(&mem, addrs[0], addrs[1], 8, rd_exec_arg_limit(8 * MiB) - 10, &s, &err);
	if (r == -EPERM || r == -ENOSYS) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		skip();
	}
	assert_int_equal(r, 0);
	static const char *const argv[] = {"/bin/echo", "hello", ""};
	char **env = make_env(REAL_ENVC);
	char *big = big_string();
	expect_strv(s.argv, argv, 3);
	for (size_t i = 0; i < REAL_ENVC; i++)
		assert_string_equal(s.envp[i], env[i]);
	assert_string_equal(s.envp[REAL_ENVC], EDGE);
	assert_string_equal(s.envp[REAL_ENVC + 1], big);
	assert_null(s.envp[REAL_ENVC + 2]);
	print_message("reads (process_vm_readv calls) for a real task with 3 + %d strings: %zu\n",
	              REAL_ENVC + 2, c.calls);
	free(big);
	free_env(env, REAL_ENVC);
	rd_strings_free(&s);
	assert_int_equal(rd_read_path(&mem, addrs[2], &path, &len), 0);
	assert_string_equal(path, "/bin/echo");
	free(path);

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(rd_read_path(&mem, addrs[2], &path, &len), -ESRCH);
	assert_int_equal(rd_read_strings(&mem, addrs[0], addrs[1], 8, BIGLIMIT, &s, &err), -ESRCH);
	assert_int_equal(err.err, ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normal),      cmocka_unit_test(test_compat_pointers),
	    cmocka_unit_test(test_null_arrays), cmocka_unit_test(test_bad_array),
	    cmocka_unit_test(test_bad_string),  cmocka_unit_test(test_string_edges),
	    cmocka_unit_test(test_max_strlen),  cmocka_unit_test(test_total_limit),
	    cmocka_unit_test(test_limit_order), cmocka_unit_test(test_shared_strings),
	    cmocka_unit_test(test_array_split), cmocka_unit_test(test_task_gone),
	    cmocka_unit_test(test_read_count),  cmocka_unit_test(test_path),
	    cmocka_unit_test(test_arg_limit),   cmocka_unit_test(test_real_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
