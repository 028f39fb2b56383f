/* Unit tests of rd_task_parse_status (intercept/task.c): what a trapped task's
 * /proc/PID/status says of its thread group, credentials, umask, signals and groups, which its
 * command inherits. Synthetic texts laid out as fs/proc/array.c writes them (a tab after the
 * colon, four ids on Uid/Gid: real, effective, saved, fs; groups each followed by a space;
 * signal sets as 16 hex digits, bit n-1 for signal n), some with the layout bent; and this
 * process's own status, read live, against what the libc says of it. */
/* cmocka needs these first, in this order */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include "intercept/task.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- texts ---------------------------------------------------------------------------- */

/* One line each, as the kernel writes them; a case leaves out or replaces the line it is
 * about. */
#define NAME   "Name:\tbash\n"
#define UMASK  "Umask:\t0027\n"
#define STATE  "State:\tS (sleeping)\n"
#define TGID   "Tgid:\t4242\n"
#define PIDS   "Ngid:\t0\nPid:\t4243\nPPid:\t1\nTracerPid:\t0\n"
#define UID    "Uid:\t1000\t1001\t1002\t1003\n"
#define GID    "Gid:\t100\t101\t102\t103\n"
#define FDSIZE "FDSize:\t64\n"
#define GROUPS "Groups:\t4 27 100 1000 \n"
#define NS     "NStgid:\t4242\nNSpid:\t4243\nNSpgid:\t4242\nNSsid:\t4000\n"
#define VM     "VmPeak:\t    8000 kB\nVmSize:\t    7980 kB\nThreads:\t2\nSigQ:\t0/63000\n"
#define PND    "SigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n"
#define SIGBLK "SigBlk:\t0000000000010002\n"
#define SIGIGN "SigIgn:\t0000000000384004\n"
#define SIGCGT "SigCgt:\t000000004b813efb\n"
#define CAPS   "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nNoNewPrivs:\t0\n"

/* The text with line X replaced: the lines in the kernel's order. */
#define STATUS_WITH(name, umask, tgid, uid, gid, groups, sigblk, sigign)                           \
	name umask STATE tgid PIDS uid gid FDSIZE groups NS VM PND sigblk sigign SIGCGT CAPS

#define STATUS STATUS_WITH(NAME, UMASK, TGID, UID, GID, GROUPS, SIGBLK, SIGIGN)

/* What STATUS says. */
#define WANT_IDS                                                                                   \
	.tgid = 4242, .uid = {1000, 1001, 1002}, .gid = {100, 101, 102}, .umask = 027,             \
	.blk = 0x10002, .ign = 0x384004

struct scase {
	const char *name;
	const char *text;
	int r; /* 0 or -EPROTO */
	pid_t tgid;
	uid_t uid[3];
	gid_t gid[3];
	mode_t umask;
	uint64_t blk, ign;
	size_t n_groups;
	gid_t groups[8];
};

#define FAILS .r = -EPROTO

static const struct scase cases[] = {
    {"the kernel's layout", STATUS, WANT_IDS, .n_groups = 4, .groups = {4, 27, 100, 1000}},
    {"no groups: a tab and a space, as the kernel writes it",
     STATUS_WITH(NAME, UMASK, TGID, UID, GID, "Groups:\t \n", SIGBLK, SIGIGN), WANT_IDS},
    {"no groups, nothing after the colon",
     STATUS_WITH(NAME, UMASK, TGID, UID, GID, "Groups:\n", SIGBLK, SIGIGN), WANT_IDS},
    {"one group, no trailing space",
     STATUS_WITH(NAME, UMASK, TGID, UID, GID, "Groups:\t0\n", SIGBLK, SIGIGN), WANT_IDS,
     .n_groups = 1},
    {"groups apart by tabs and runs of spaces",
     STATUS_WITH(NAME, UMASK, TGID, UID, GID, "Groups:  \t 5\t\t6   7 \t\n", SIGBLK, SIGIGN),
     WANT_IDS, .n_groups = 3, .groups = {5, 6, 7}},
    {"the largest ids",
     STATUS_WITH(NAME, "Umask:\t0777\n", "Tgid:\t2147483647\n",
                 "Uid:\t4294967295\t4294967294\t0\t0\n", "Gid:\t0\t4294967295\t65534\t0\n",
                 "Groups:\t4294967295 65534 0 \n", "SigBlk:\tffffffffffffffff\n",
                 "SigIgn:\t8000000000000001\n"),
     .tgid = 2147483647, .uid = {4294967295u, 4294967294u, 0}, .gid = {0, 4294967295u, 65534},
     .umask = 0777, .blk = UINT64_MAX, .ign = 0x8000000000000001ull, .n_groups = 3,
     .groups = {4294967295u, 65534, 0}},
    {"spaces where the kernel puts tabs",
     STATUS_WITH(NAME, "Umask:   0027\n", "Tgid:  4242\n", "Uid: 1000  1001 1002   1003\n",
                 "Gid:\t 100 \t101 102\t103\n", "Groups: 4   27 100 1000\n",
                 "SigBlk:    0000000000010002\n", "SigIgn: 384004\n"),
     WANT_IDS, .n_groups = 4, .groups = {4, 27, 100, 1000}},
    {"no tab at all after the colons",
     STATUS_WITH(NAME, "Umask:0027\n", "Tgid:4242\n", "Uid:1000 1001 1002 1003\n",
                 "Gid:100 101 102 103\n", "Groups:4 27 100 1000\n", "SigBlk:10002\n",
                 "SigIgn:0000000000384004\n"),
     WANT_IDS, .n_groups = 4, .groups = {4, 27, 100, 1000}},
    /* The fields are looked up by name at the start of a line, wherever they are. */
    {"fields in another order", SIGIGN GROUPS GID UID TGID UMASK SIGBLK NAME STATE, WANT_IDS,
     .n_groups = 4, .groups = {4, 27, 100, 1000}},
    {"a line whose name only starts like a wanted one",
     "Tgidx:\t1\nUidMap:\t5 5 5 5\nSigBlkX:\tffff\n" STATUS, WANT_IDS, .n_groups = 4,
     .groups = {4, 27, 100, 1000}},
    {"the first of two lines of the same name",
     STATUS_WITH(NAME, UMASK, TGID, UID, GID, GROUPS, SIGBLK, SIGIGN) "Tgid:\t1\n", WANT_IDS,
     .n_groups = 4, .groups = {4, 27, 100, 1000}},
    {"Groups the last line, without its newline", TGID UID GID UMASK SIGBLK SIGIGN "Groups:\t8 9",
     WANT_IDS, .n_groups = 2, .groups = {8, 9}},

    /* Not a status text this parser knows: refused as a whole, nothing half-filled. */
    {"empty", "", FAILS},
    {"no Tgid", STATUS_WITH(NAME, UMASK, "", UID, GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"no Uid", STATUS_WITH(NAME, UMASK, TGID, "", GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"no Gid", STATUS_WITH(NAME, UMASK, TGID, UID, "", GROUPS, SIGBLK, SIGIGN), FAILS},
    /* Umask is 4.7+; runnerd needs it. */
    {"no Umask", STATUS_WITH(NAME, "", TGID, UID, GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"no SigBlk", STATUS_WITH(NAME, UMASK, TGID, UID, GID, GROUPS, "", SIGIGN), FAILS},
    {"no SigIgn", STATUS_WITH(NAME, UMASK, TGID, UID, GID, GROUPS, SIGBLK, ""), FAILS},
    {"no Groups", STATUS_WITH(NAME, UMASK, TGID, UID, GID, "", SIGBLK, SIGIGN), FAILS},
    {"Uid with three ids",
     STATUS_WITH(NAME, UMASK, TGID, "Uid:\t1\t2\t3\n", GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"Gid with one id", STATUS_WITH(NAME, UMASK, TGID, UID, "Gid:\t1\n", GROUPS, SIGBLK, SIGIGN),
     FAILS},
    {"Tgid not a number",
     STATUS_WITH(NAME, UMASK, "Tgid:\tbash\n", UID, GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"Umask not octal", STATUS_WITH(NAME, "Umask:\t9\n", TGID, UID, GID, GROUPS, SIGBLK, SIGIGN),
     FAILS},
    {"Umask empty", STATUS_WITH(NAME, "Umask:\t\n", TGID, UID, GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"SigBlk not hex", STATUS_WITH(NAME, UMASK, TGID, UID, GID, GROUPS, "SigBlk:\tzz\n", SIGIGN),
     FAILS},
    {"a name in another case",
     STATUS_WITH(NAME, UMASK, "tgid:\t4242\n", UID, GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"a name without its colon",
     STATUS_WITH(NAME, UMASK, "Tgid\t4242\n", UID, GID, GROUPS, SIGBLK, SIGIGN), FAILS},
    {"a name indented",
     STATUS_WITH(NAME, UMASK, " Tgid:\t4242\n", UID, GID, GROUPS, SIGBLK, SIGIGN), FAILS},
};

/* ---- the table ------------------------------------------------------------------------ */

#define SENTINEL_TGID  (-7)
#define SENTINEL_UMASK 01777

static void sentinel_task(struct rd_task *t)
{
	memset(t, 0, sizeof(*t));
	t->tid = 4321;
	t->tgid = SENTINEL_TGID;
	t->inh.umask = SENTINEL_UMASK;
	t->inh.uid[0] = t->inh.gid[0] = 77;
	t->pidfd = t->cwd_fd = -1;
}

static int run_case(const struct scase *c)
{
	struct rd_task t;
	sentinel_task(&t);
	struct rd_error err = {0};
	int r = rd_task_parse_status(c->text, &t, &err);
	int bad = 0;
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			print_error("%s: ", c->name);                                              \
			print_error(__VA_ARGS__);                                                  \
			print_error("\n");                                                         \
			bad++;                                                                     \
		}                                                                                  \
	} while (0)
	CHECK(r == c->r, "returned %d (%s), want %d", r, err.msg, c->r);
	if (c->r < 0) {
		CHECK(err.err == -c->r, "err.err %d", err.err);
		CHECK(strcmp(err.msg, "task 4321: unexpected /proc status format") == 0,
		      "message \"%s\"", err.msg);
		CHECK(t.tgid == SENTINEL_TGID && t.inh.umask == SENTINEL_UMASK &&
		          t.inh.uid[0] == 77 && t.inh.gid[0] == 77 && !t.groups && !t.n_groups,
		      "the task was written to before the text was known good");
	} else if (r == 0) {
		CHECK(err.n == 0, "message \"%s\" on success", err.msg);
		CHECK(t.tgid == c->tgid, "tgid %d, want %d", t.tgid, c->tgid);
		for (int i = 0; i < 3; i++) {
			CHECK(t.inh.uid[i] == c->uid[i], "uid[%d] %u, want %u", i, t.inh.uid[i],
			      c->uid[i]);
			CHECK(t.inh.gid[i] == c->gid[i], "gid[%d] %u, want %u", i, t.inh.gid[i],
			      c->gid[i]);
		}
		CHECK(t.inh.umask == c->umask, "umask %#o, want %#o", t.inh.umask, c->umask);
		CHECK(t.inh.sig_blocked == c->blk, "sig_blocked %#llx, want %#llx",
		      (unsigned long long)t.inh.sig_blocked, (unsigned long long)c->blk);
		CHECK(t.inh.sig_ignored == c->ign, "sig_ignored %#llx, want %#llx",
		      (unsigned long long)t.inh.sig_ignored, (unsigned long long)c->ign);
		CHECK(t.n_groups == c->n_groups, "%zu groups, want %zu", t.n_groups, c->n_groups);
		for (size_t i = 0; i < t.n_groups && i < c->n_groups; i++)
			CHECK(t.groups[i] == c->groups[i], "groups[%zu] %u, want %u", i,
			      t.groups[i], c->groups[i]);
		/* Parsing is all it does: the tid and the fds are the caller's. */
		CHECK(t.tid == 4321 && t.pidfd == -1 && t.cwd_fd == -1, "tid or fds touched");
	}
#undef CHECK
	rd_task_free(&t);
	return bad;
}

static void test_table(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		bad += run_case(&cases[i]);
	if (bad)
		fail_msg("%d mismatches in the table (see above)", bad);
}

/* ---- many groups ---------------------------------------------------------------------- */

/* A status whose Groups line has n groups (gid 100000 + i), then the lines that follow it. */
static char *status_with_groups(size_t n)
{
	size_t size = 512 + 12 * n;
	char *s = malloc(size);
	assert_non_null(s);
	size_t o = (size_t)snprintf(s, size, "%s", TGID UID GID UMASK "Groups:\t");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(s + o, size - o, "%zu ", 100000 + i);
	snprintf(s + o, size - o, "%s", "\n" NS SIGBLK SIGIGN);
	return s;
}

/* Around each doubling of the parser's array, up to NGROUPS_MAX (65536, the kernel's cap and
 * RD_MAX_GROUPS); one more than that is not a status the kernel writes. */
static void test_many_groups(void **state)
{
	(void)state;
	static const struct {
		size_t n;
		int r;
	} counts[] = {
	    {15, 0},   {16, 0},   {17, 0},    {32, 0},    {33, 0},
	    {1000, 0}, {4096, 0}, {65535, 0}, {65536, 0}, {65537, -ENOMEM},
	};
	for (size_t k = 0; k < ARRAY_SIZE(counts); k++) {
		char *text = status_with_groups(counts[k].n);
		struct rd_task t;
		sentinel_task(&t);
		struct rd_error err = {0};
		int r = rd_task_parse_status(text, &t, &err);
		if (r != counts[k].r)
			fail_msg("%zu groups: %d (%s), want %d", counts[k].n, r, err.msg,
			         counts[k].r);
		if (r == 0) {
			assert_int_equal(t.n_groups, counts[k].n);
			for (size_t i = 0; i < t.n_groups; i++)
				if (t.groups[i] != 100000 + i)
					fail_msg("%zu groups: groups[%zu] %u", counts[k].n, i,
					         t.groups[i]);
			assert_int_equal(t.tgid, 4242);
			assert_int_equal(t.inh.sig_ignored, 0x384004);
		} else {
			assert_non_null(strstr(err.msg, "too many groups"));
			assert_null(t.groups);
		}
		rd_task_free(&t);
		free(text);
	}
}

/* rd_task_open reads the whole status file: with hundreds of groups it runs past a page, and
 * what follows the Groups line (SigIgn, here) must still be read. Root only (setgroups). */
static void test_open_many_groups(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	int ready[2], done[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(done), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static gid_t gids[600];
		for (size_t i = 0; i < ARRAY_SIZE(gids); i++)
			gids[i] = (gid_t)(100000 + i);
		signal(SIGUSR1, SIG_IGN);
		char b;
		close(done[1]);
		if (setgroups(ARRAY_SIZE(gids), gids) < 0 || write(ready[1], "r", 1) != 1 ||
		    read(done[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(done[0]);
	char b;
	assert_int_equal(read(ready[0], &b, 1), 1);
	struct rd_task t;
	struct rd_error err = {0};
	int r = rd_task_open(pid, &t, &err);
	close(done[1]);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	if (r < 0)
		fail_msg("rd_task_open: %s", err.msg);
	assert_int_equal(t.n_groups, 600);
	assert_int_equal(t.groups[599], 100599);
	assert_true(t.inh.sig_ignored & (1ull << (SIGUSR1 - 1)));
	rd_task_free(&t);
}

/* Parsed again (a task read a second time), the groups are replaced, not leaked or added to
 * (ASan's leak check sees the first list). */
static void test_parse_again(void **state)
{
	(void)state;
	struct rd_task t;
	sentinel_task(&t);
	struct rd_error err = {0};
	assert_int_equal(rd_task_parse_status(STATUS, &t, &err), 0);
	assert_int_equal(t.n_groups, 4);
	assert_int_equal(rd_task_parse_status(STATUS_WITH(NAME, UMASK, "Tgid:\t9\n", UID, GID,
	                                                  "Groups:\t3 \n", SIGBLK, SIGIGN),
	                                      &t, &err),
	                 0);
	assert_int_equal(t.tgid, 9);
	assert_int_equal(t.n_groups, 1);
	assert_int_equal(t.groups[0], 3);
	/* A bad text leaves the task as it was. */
	assert_int_equal(rd_task_parse_status("Tgid:\t1\n", &t, &err), -EPROTO);
	assert_int_equal(t.tgid, 9);
	assert_int_equal(t.n_groups, 1);
	rd_task_free(&t);
}

/* ---- this process's own status -------------------------------------------------------- */

static char *read_text(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	size_t size = 1 << 20, o = 0;
	char *buf = malloc(size);
	assert_non_null(buf);
	ssize_t n;
	while ((n = read(fd, buf + o, size - 1 - o)) > 0)
		o += (size_t)n;
	assert_true(n == 0);
	buf[o] = '\0';
	close(fd);
	return buf;
}

/* Set some state the kernel then reports (a umask, blocked and ignored signals), read
 * /proc/self/status, and compare each field with what the libc reports of the same. Holds
 * for root and for anyone else. */
static void test_own_status(void **state)
{
	(void)state;
	mode_t old_umask = umask(0027);
	/* Exactly these blocked: glibc keeps its internal signals (32, 33) out of any mask. */
	sigset_t block, old_block;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGRTMIN + 2);
	assert_int_equal(sigprocmask(SIG_SETMASK, &block, &old_block), 0);
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_usr2, old_pipe;
	assert_int_equal(sigaction(SIGUSR2, &ign, &old_usr2), 0);
	assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);

	char *text = read_text("/proc/self/status");
	struct rd_task t;
	sentinel_task(&t);
	struct rd_error err = {0};
	int r = rd_task_parse_status(text, &t, &err);

	/* What the libc says, read while the state above holds. */
	uint64_t want_ign = 0;
	for (int sig = 1; sig <= 64; sig++) {
		/* The kernel's own answer, for 32 and 33 too, which glibc keeps to itself (its
		 * sigaction refuses them) and which a parent may have ignored before our exec. */
		struct {
			void (*handler)(int);
			unsigned long flags;
			void (*restorer)(void);
			uint64_t mask;
		} ka;
		if (syscall(SYS_rt_sigaction, sig, NULL, &ka, sizeof(uint64_t)) == 0 &&
		    ka.handler == SIG_IGN)
			want_ign |= 1ull << (sig - 1);
	}
	uid_t u[3];
	gid_t g[3];
	assert_int_equal(getresuid(&u[0], &u[1], &u[2]), 0);
	assert_int_equal(getresgid(&g[0], &g[1], &g[2]), 0);
	int n_groups = getgroups(0, NULL);
	assert_true(n_groups >= 0);
	gid_t *groups = calloc((size_t)n_groups + 1, sizeof(*groups));
	assert_non_null(groups);
	assert_int_equal(getgroups(n_groups, groups), n_groups);

	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(SIGUSR2, &old_usr2, NULL);
	sigprocmask(SIG_SETMASK, &old_block, NULL);
	umask(old_umask);

	if (r != 0)
		fail_msg("%s\n---\n%s", err.msg, text);
	assert_int_equal(t.tgid, getpid());
	for (int i = 0; i < 3; i++) {
		assert_int_equal(t.inh.uid[i], u[i]);
		assert_int_equal(t.inh.gid[i], g[i]);
	}
	assert_int_equal(t.inh.umask, 0027);
	assert_int_equal(t.inh.sig_blocked, (1ull << (SIGUSR1 - 1)) | (1ull << (SIGRTMIN + 2 - 1)));
	assert_true(t.inh.sig_ignored & (1ull << (SIGUSR2 - 1)));
	assert_true(t.inh.sig_ignored & (1ull << (SIGPIPE - 1)));
	assert_int_equal(t.inh.sig_ignored, want_ign);
	assert_int_equal(t.n_groups, (size_t)n_groups);
	for (int i = 0; i < n_groups; i++)
		assert_int_equal(t.groups[i], groups[i]);
	free(groups);
	free(text);
	rd_task_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_many_groups),
	    cmocka_unit_test(test_open_many_groups),
	    cmocka_unit_test(test_parse_again),
	    cmocka_unit_test(test_own_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
