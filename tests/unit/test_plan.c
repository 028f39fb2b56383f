/* Unit tests of the launch plan's wire form (sandbox/plan.c): what rd_plan_pack lays out,
 * concatenated as the socket or the memfd would carry it, must come back from rd_plan_unpack
 * field for field, its strings and arrays pointing into the blob; and a blob that is cut
 * short or whose head is wrong must stop at -EPROTO, with nothing allocated. */
/* cmocka needs these first, in this order */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include "sandbox/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every field of the head is compared one by one below (check_head); a new one must be added
 * there and given a value in full_plan(). The size says when that is due. The sandbox keys'
 * values are compared key by key, whatever keys there are: a new key changes nothing here. */
#if defined(__x86_64__) || defined(__aarch64__)
_Static_assert(sizeof(struct rd_plan_head) - sizeof(struct rd_box_opts) == 488,
               "struct rd_plan_head changed: update full_plan() and check_head()");
#endif

/* ---- plans ---------------------------------------------------------------------------- */

static char long_arg[5000], long_env[3000];

static char *argv_full[] = {"/usr/bin/env",     "", "--name=värde", long_arg,
                            "\xff\xfe\x80\x01", "", "last",         NULL};
static char *envp_full[] = {"PATH=/usr/bin:/bin", "EMPTY=", "",  "LANG=C.UTF-8",
                            "ÜNICODE=ünïcødé ✓",  long_env, NULL};
static char *masks_full[] = {"/home/u/.ssh", "/etc/shadow", "/tmp/a dir/with spaces", NULL};
static char *write_full[] = {"/home/u/.config/gh", NULL};
static char *protect_full[] = {"/work/p/Makefile", "/work/p/.npmrc", NULL};
static char *gates_full[] = {"/usr/lib/git-core/git", "/usr/libexec/git-core/git", NULL};
static const struct rd_fd_map fds_full[] = {{.fd = 7, .target = 3},
                                            {.fd = 8, .target = 0},
                                            {.fd = 9, .target = 1023},
                                            {.fd = 10, .target = 2}};
static const gid_t groups_full[] = {0, 4, 27, 1000, 65534, 4294967294u};
static const struct sock_filter filter_full[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 59, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static size_t count(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* A value in every field of the head, none of them 0 or the field's first value. */
static struct rd_launch_plan full_plan(void)
{
	memset(long_arg, 'a', sizeof(long_arg) - 1);
	memcpy(long_arg, "--long=", 7);
	memset(long_env, 'e', sizeof(long_env) - 1);
	memcpy(long_env, "LONG=", 5);
	struct rd_launch_plan p;
	memset(&p, 0, sizeof(p));
	struct rd_plan_head *h = &p.h;
	h->size = 0xdeadbeef; /* rd_plan_pack's to fill in */
	h->exec_via = RD_EXEC_OWN;
	h->exec_fd = 17;
	h->exec_flags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW;
	h->inh.uid[0] = 1000;
	h->inh.uid[1] = 1001;
	h->inh.uid[2] = 4294967294u;
	h->inh.gid[0] = 100;
	h->inh.gid[1] = 101;
	h->inh.gid[2] = 102;
	h->inh.umask = 027;
	h->inh.sig_blocked = 0x8000000000000201ull;
	h->inh.sig_ignored = 0x0000000100001000ull;
	for (int i = 0; i < RLIM_NLIMITS; i++) {
		h->inh.rlim[i].rlim_cur = (rlim_t)i * 1000 + 1;
		h->inh.rlim[i].rlim_max = i % 3 ? (rlim_t)i * 2000 + 2 : RLIM_INFINITY;
		h->inh.have_rlim[i] = i % 2;
	}
	h->pgrp_mode = RD_PGRP_SESSION;
	h->has_tty = 1;
	h->tty_input = 1;
	h->tty_rdev = 0x8801;
	h->tty_modes.c_iflag = 0x1234;
	h->tty_modes.c_lflag = 0x8a3b;
	h->tty_modes.c_cc[VINTR] = 3;
	h->tty_modes.c_ispeed = B38400;
	h->tty_size = (struct winsize){.ws_row = 43, .ws_col = 132, .ws_xpixel = 1, .ws_ypixel = 2};
	h->expect_dev = 0xfedcba9876543210ull;
	h->expect_ino = 0x123456789abcdef0ull;
	h->single_ids = 1;
	h->has_stub_ctl = 1;
	for (int k = 0; k < RD_BOX_NKEYS; k++)
		h->box.v[k] = ((uint64_t)k << 40) + 7 * (uint64_t)k + 1;
	h->argc = (uint32_t)count(argv_full);
	h->envc = (uint32_t)count(envp_full);
	h->n_masks = (uint32_t)count(masks_full);
	h->n_write = (uint32_t)count(write_full);
	h->n_protect = (uint32_t)count(protect_full);
	h->n_gates = (uint32_t)count(gates_full);
	h->n_fds = ARRAY_SIZE(fds_full);
	h->n_groups = ARRAY_SIZE(groups_full);
	h->filter_len = ARRAY_SIZE(filter_full);
	p.exec_path = "/usr/bin/ënv";
	p.cwd_path = "/home/dév/project";
	p.argv = argv_full;
	p.envp = envp_full;
	p.masks = masks_full;
	p.write = write_full;
	p.protect = protect_full;
	p.gates = gates_full;
	p.fds = fds_full;
	p.groups = groups_full;
	p.filter = filter_full;
	/* Not part of the data: they travel as fds, and unpack leaves them -1. */
	p.cwd_fd = 5;
	p.stub_ctl_fd = 6;
	p.own_exec_fd = 11;
	return p;
}

/* The blob as the sandbox gets it: the iovecs one after the other, in a buffer of exactly that
 * size (ASan sees any read past it), 8-byte aligned as malloc's are. */
static char *concat(const struct rd_plan_blob *b, size_t *size)
{
	size_t n = 0;
	for (size_t i = 0; i < b->n_iov; i++)
		n += b->iov[i].iov_len;
	assert_int_equal(n, b->size);
	char *buf = malloc(n ? n : 1);
	assert_non_null(buf);
	assert_int_equal((uintptr_t)buf % 8, 0);
	size_t o = 0;
	for (size_t i = 0; i < b->n_iov; i++) {
		/* An empty array's base may be NULL, which memcpy may not be given (writev may). */
		if (b->iov[i].iov_len)
			memcpy(buf + o, b->iov[i].iov_base, b->iov[i].iov_len);
		o += b->iov[i].iov_len;
	}
	*size = n;
	return buf;
}

/* ---- comparison ----------------------------------------------------------------------- */

static void check_head(const struct rd_plan_head *want, const struct rd_plan_head *got)
{
	assert_int_equal(got->size, sizeof(struct rd_plan_head));
	assert_int_equal(got->exec_via, want->exec_via);
	assert_int_equal(got->exec_fd, want->exec_fd);
	assert_int_equal(got->exec_flags, want->exec_flags);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(got->inh.uid[i], want->inh.uid[i]);
		assert_int_equal(got->inh.gid[i], want->inh.gid[i]);
	}
	assert_int_equal(got->inh.umask, want->inh.umask);
	assert_int_equal(got->inh.sig_blocked, want->inh.sig_blocked);
	assert_int_equal(got->inh.sig_ignored, want->inh.sig_ignored);
	for (int i = 0; i < RLIM_NLIMITS; i++) {
		assert_int_equal(got->inh.rlim[i].rlim_cur, want->inh.rlim[i].rlim_cur);
		assert_int_equal(got->inh.rlim[i].rlim_max, want->inh.rlim[i].rlim_max);
		assert_int_equal(got->inh.have_rlim[i], want->inh.have_rlim[i]);
	}
	assert_int_equal(got->pgrp_mode, want->pgrp_mode);
	assert_int_equal(got->has_tty, want->has_tty);
	assert_int_equal(got->tty_input, want->tty_input);
	assert_int_equal(got->tty_rdev, want->tty_rdev);
	assert_memory_equal(&got->tty_modes, &want->tty_modes, sizeof(want->tty_modes));
	assert_memory_equal(&got->tty_size, &want->tty_size, sizeof(want->tty_size));
	assert_int_equal(got->expect_dev, want->expect_dev);
	assert_int_equal(got->expect_ino, want->expect_ino);
	assert_int_equal(got->single_ids, want->single_ids);
	assert_int_equal(got->has_stub_ctl, want->has_stub_ctl);
	for (int k = 0; k < RD_BOX_NKEYS; k++)
		assert_int_equal(got->box.v[k], want->box.v[k]);
	assert_int_equal(got->argc, want->argc);
	assert_int_equal(got->envc, want->envc);
	assert_int_equal(got->n_masks, want->n_masks);
	assert_int_equal(got->n_write, want->n_write);
	assert_int_equal(got->n_protect, want->n_protect);
	assert_int_equal(got->n_gates, want->n_gates);
	assert_int_equal(got->n_fds, want->n_fds);
	assert_int_equal(got->n_groups, want->n_groups);
	assert_int_equal(got->filter_len, want->filter_len);
}

static bool in_blob(const void *p, const char *blob, size_t size)
{
	return (const char *)p >= blob && (const char *)p < blob + size;
}

static void check_strings(char *const *want, char *const *got, uint32_t n, const char *blob,
                          size_t size)
{
	assert_non_null(got);
	for (uint32_t i = 0; i < n; i++) {
		assert_non_null(got[i]);
		assert_string_equal(got[i], want[i]);
		/* Left in place: out points into the blob. */
		assert_true(in_blob(got[i], blob, size));
	}
	assert_null(got[n]);
}

/* got, unpacked from blob, is want; sent is want's head as it should travel. */
static void check_plan(const struct rd_launch_plan *want, const struct rd_plan_head *sent,
                       const struct rd_launch_plan *got, const char *blob, size_t size)
{
	check_head(sent, &got->h);
	assert_non_null(got->exec_path);
	assert_string_equal(got->exec_path, want->exec_path);
	assert_true(in_blob(got->exec_path, blob, size));
	assert_non_null(got->cwd_path);
	assert_string_equal(got->cwd_path, want->cwd_path ? want->cwd_path : "");
	assert_true(in_blob(got->cwd_path, blob, size));
	check_strings(want->argv, got->argv, sent->argc, blob, size);
	check_strings(want->envp, got->envp, sent->envc, blob, size);
	check_strings(want->masks, got->masks, sent->n_masks, blob, size);
	check_strings(want->write, got->write, sent->n_write, blob, size);
	check_strings(want->protect, got->protect, sent->n_protect, blob, size);
	check_strings(want->gates, got->gates, sent->n_gates, blob, size);
	for (uint32_t i = 0; i < sent->n_fds; i++) {
		/* The fds come apart, after the plan: only their numbers are in it. */
		assert_int_equal(got->fds[i].target, want->fds[i].target);
		assert_int_equal(got->fds[i].fd, -1);
	}
	for (uint32_t i = 0; i < sent->n_groups; i++)
		assert_int_equal(got->groups[i], want->groups[i]);
	if (sent->filter_len) {
		assert_true(in_blob(got->filter, blob, size));
		assert_memory_equal(got->filter, want->filter,
		                    sent->filter_len * sizeof(struct sock_filter));
	} else {
		assert_null(got->filter);
	}
	assert_int_equal(got->cwd_fd, -1);
	assert_int_equal(got->stub_ctl_fd, -1);
	assert_int_equal(got->own_exec_fd, -1);
}

/* Pack p, concatenate, unpack, compare. */
static void round_trip(const struct rd_launch_plan *p)
{
	/* The head travels as the builder left it, but for its size and, without a filter, the
	 * filter's length. */
	struct rd_plan_head sent = p->h;
	sent.size = sizeof(struct rd_plan_head);
	if (!p->filter)
		sent.filter_len = 0;
	struct rd_plan_blob b;
	assert_int_equal(rd_plan_pack(p, &b), 0);
	check_head(&sent, &b.h);
	/* The head, the two arrays, the fd numbers, exec_path, cwd_path, then one iovec a
	 * string. */
	assert_int_equal(b.n_iov, 6 + (size_t)p->h.argc + p->h.envc + p->h.n_masks + p->h.n_write +
	                              p->h.n_protect + p->h.n_gates);
	size_t size;
	char *blob = concat(&b, &size);
	struct rd_launch_plan out;
	void *arena = NULL;
	assert_int_equal(rd_plan_unpack(blob, size, &out, &arena), 0);
	assert_non_null(arena);
	check_plan(p, &sent, &out, blob, size);
	free(arena);
	free(blob);
	rd_plan_blob_free(&b);
	assert_null(b.iov);
	assert_null(b.targets);
}

/* ---- round trips ---------------------------------------------------------------------- */

static void test_full_round_trip(void **state)
{
	(void)state;
	struct rd_launch_plan p = full_plan();
	round_trip(&p);
}

/* Nothing in any array, no filter: what the builder left in filter_len does not travel. */
static void test_empty_round_trip(void **state)
{
	(void)state;
	struct rd_launch_plan p;
	memset(&p, 0, sizeof(p));
	p.h.exec_via = RD_EXEC_CWD;
	p.h.filter_len = 3;
	p.exec_path = "";
	struct rd_plan_blob b;
	assert_int_equal(rd_plan_pack(&p, &b), 0);
	assert_int_equal(b.h.filter_len, 0);
	assert_int_equal(b.size, sizeof(struct rd_plan_head) + 2); /* exec_path and cwd_path: "" */
	rd_plan_blob_free(&b);
	round_trip(&p);
}

/* More strings than IOV_MAX, as launch.c's memfd path writes in chunks, and each list with
 * an empty string at both ends. */
static void test_many_strings_round_trip(void **state)
{
	(void)state;
	enum { N = 1500 };
	static char *argv[N + 1], *envp[N + 1], *masks[4];
	static char bufs[N][24];
	for (int i = 0; i < N; i++) {
		if (i % 7)
			snprintf(bufs[i], sizeof(bufs[i]), "s%d", i);
		argv[i] = envp[N - 1 - i] = bufs[i];
	}
	masks[0] = "";
	masks[1] = "/m";
	masks[2] = "";
	struct rd_launch_plan p = full_plan();
	p.argv = argv;
	p.envp = envp;
	p.masks = masks;
	p.h.argc = p.h.envc = N;
	p.h.n_masks = 3;
	p.h.exec_via = RD_EXEC_TARGET;
	round_trip(&p);
}

/* ---- malformed blobs ------------------------------------------------------------------ */

/* A prefix of a good blob, every length short of the whole, in a buffer of that exact size:
 * each boundary (inside the head, between the arrays, between two strings, before a string's
 * NUL) is among them. None may be taken for a plan. */
static void test_truncated(void **state)
{
	(void)state;
	struct rd_launch_plan p = full_plan();
	struct rd_plan_blob b;
	assert_int_equal(rd_plan_pack(&p, &b), 0);
	size_t size;
	char *blob = concat(&b, &size);
	int bad = 0;
	for (size_t n = 0; n < size; n++) {
		char *cut = malloc(n ? n : 1);
		assert_non_null(cut);
		memcpy(cut, blob, n);
		struct rd_launch_plan out;
		void *arena = (void *)1;
		int r = rd_plan_unpack(cut, n, &out, &arena);
		if (r == 0)
			free(arena);
		if (r != -EPROTO || arena) {
			print_error("cut at %zu of %zu: %d, arena %p\n", n, size, r, arena);
			bad++;
		}
		free(cut);
	}
	free(blob);
	rd_plan_blob_free(&b);
	if (bad)
		fail_msg("%d truncated blobs not refused", bad);
}

/* A good blob with one thing wrong. */
struct bad_blob {
	const char *name;
	size_t off;   /* a uint32_t/int32_t of the head to overwrite, */
	uint32_t val; /* with this */
	bool set;
	bool unterminated; /* or: the blob's last NUL replaced */
};

#define HEAD(field, v)                                                                             \
	.off = offsetof(struct rd_plan_head, field), .val = (uint32_t)(v), .set = true

static const struct bad_blob bad_blobs[] = {
    {"h.size 0", HEAD(size, 0)},
    {"h.size one short", HEAD(size, sizeof(struct rd_plan_head) - 1)},
    {"h.size one more", HEAD(size, sizeof(struct rd_plan_head) + 1)},
    {"h.size of another build's larger head", HEAD(size, sizeof(struct rd_plan_head) + 8)},
    {"exec_via past RD_EXEC_OWN", HEAD(exec_via, RD_EXEC_OWN + 1)},
    {"exec_via negative", HEAD(exec_via, -1)},
    {"exec_via INT32_MAX", HEAD(exec_via, INT32_MAX)},
    /* Over the caps: refused on the head alone. */
    {"argc over its cap", HEAD(argc, (1u << 24) + 1)},
    {"envc over its cap", HEAD(envc, (1u << 24) + 1)},
    {"n_masks over its cap", HEAD(n_masks, (1u << 16) + 1)},
    {"n_write over its cap", HEAD(n_write, (1u << 12) + 1)},
    {"n_protect over its cap", HEAD(n_protect, (1u << 12) + 1)},
    {"n_gates over its cap", HEAD(n_gates, 17)},
    {"n_fds over its cap", HEAD(n_fds, (1u << 20) + 1)},
    {"n_groups over its cap", HEAD(n_groups, (1u << 17) + 1)},
    {"filter_len over BPF_MAXINSNS", HEAD(filter_len, BPF_MAXINSNS + 1)},
    {"argc UINT32_MAX", HEAD(argc, UINT32_MAX)},
    {"n_fds UINT32_MAX", HEAD(n_fds, UINT32_MAX)},
    /* Within the caps, more than the blob holds. */
    {"filter_len BPF_MAXINSNS", HEAD(filter_len, BPF_MAXINSNS)},
    {"n_groups at its cap", HEAD(n_groups, 1u << 17)},
    {"n_fds at its cap", HEAD(n_fds, 1u << 20)},
    {"argc at its cap", HEAD(argc, 1u << 24)},
    {"one argv string more than there are", HEAD(argc, 8)},
    {"one mask more than there are", HEAD(n_masks, 4)},
    {"the last string without its NUL", .unterminated = true},
    /* Counts that move strings from one list to the next, or leave some over. */
    {"one mask fewer than there are", HEAD(n_masks, 2)},
    {"no env strings: theirs read as masks, the rest left over", HEAD(envc, 0)},
    {"no argv strings: theirs read as env, the rest left over", HEAD(argc, 0)},
};

static void test_bad_blobs(void **state)
{
	(void)state;
	struct rd_launch_plan p = full_plan();
	/* The rows' counts are this plan's plus one. */
	assert_int_equal(p.h.argc, 7);
	assert_int_equal(p.h.n_masks, 3);
	struct rd_plan_blob b;
	assert_int_equal(rd_plan_pack(&p, &b), 0);
	size_t size;
	char *good = concat(&b, &size);
	int bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(bad_blobs); i++) {
		const struct bad_blob *c = &bad_blobs[i];
		char *blob = malloc(size);
		assert_non_null(blob);
		memcpy(blob, good, size);
		if (c->set)
			memcpy(blob + c->off, &c->val, sizeof(c->val));
		if (c->unterminated) {
			assert_int_equal(blob[size - 1], '\0');
			blob[size - 1] = 'x';
		}
		struct rd_launch_plan out;
		void *arena = (void *)1;
		int r = rd_plan_unpack(blob, size, &out, &arena);
		if (r == 0)
			free(arena);
		if (r != -EPROTO || arena) {
			print_error("%s: %d, arena %p; want -EPROTO, NULL\n", c->name, r, arena);
			bad++;
		}
		free(blob);
	}
	/* The good blob itself, for contrast. */
	struct rd_launch_plan out;
	void *arena;
	assert_int_equal(rd_plan_unpack(good, size, &out, &arena), 0);
	free(arena);
	free(good);
	rd_plan_blob_free(&b);
	if (bad)
		fail_msg("%d bad blobs not refused (see above)", bad);
}

/* ---- rd_plan_lead_fds ----------------------------------------------------------------- */

static void test_lead_fds(void **state)
{
	(void)state;
	static const struct {
		uint8_t has_stub_ctl;
		int32_t exec_via;
		uint8_t has_setup_fd;
		size_t want; /* the cwd, the stub's control socket, runnerd's exec fd, the setup
		                pipe */
	} cases[] = {
	    {0, RD_EXEC_CWD, 0, 1},
	    {1, RD_EXEC_CWD, 0, 2},
	    {0, RD_EXEC_TARGET, 0, 1},
	    {1, RD_EXEC_TARGET, 0, 2},
	    {0, RD_EXEC_OWN, 0, 2},
	    {1, RD_EXEC_OWN, 0, 3},
	    {1, RD_EXEC_CWD, 1, 3},
	    {1, RD_EXEC_OWN, 1, 4},
	    /* A flag byte: any value but 0 is one fd. */
	    {255, RD_EXEC_OWN, 0, 3},
	    {1, RD_EXEC_CWD, 255, 3},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rd_plan_head h = {.has_stub_ctl = cases[i].has_stub_ctl,
		                         .exec_via = cases[i].exec_via,
		                         .has_setup_fd = cases[i].has_setup_fd};
		if (rd_plan_lead_fds(&h) != cases[i].want)
			fail_msg(
			    "has_stub_ctl %u exec_via %d has_setup_fd %u: %zu lead fds, want %zu",
			    cases[i].has_stub_ctl, cases[i].exec_via, cases[i].has_setup_fd,
			    rd_plan_lead_fds(&h), cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_round_trip),
	    cmocka_unit_test(test_empty_round_trip),
	    cmocka_unit_test(test_many_strings_round_trip),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_bad_blobs),
	    cmocka_unit_test(test_lead_fds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
