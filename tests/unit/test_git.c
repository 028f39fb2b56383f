/* cmocka needs these first, in this order */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "lib/git.h"
#include "lib/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check(const char *text, size_t len, bool init, bool inert)
{
	char dir[] = "/tmp/rd-test-git-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[sizeof(dir) + 8];
	snprintf(path, sizeof(path), "%s/config", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	if (rd_git_init_config(AT_FDCWD, path) != init)
		fail_msg("init config %s for:\n%s", init ? "refused" : "taken", text);
	if (rd_git_config_inert(AT_FDCWD, path) != inert)
		fail_msg("inert %s for:\n%s", inert ? "refused" : "taken", text);
	unlink(path);
	rmdir(dir);
}

#define CHECK(text, init, inert) check(text, sizeof(text) - 1, init, inert)

#define CORE                                                                                       \
	"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"               \
	"\tlogallrefupdates = true\n"

/* What git init and git clone write (git 2.39), a user's email, a submodule's worktree:
 * inert; a clone's is not git init's. */
static void test_written_by_git(void **state)
{
	(void)state;
	CHECK(CORE, true, true);
	CHECK(CORE "[remote \"origin\"]\n\turl = /tmp/src\n"
	           "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
	           "[branch \"master\"]\n\tremote = origin\n\tmerge = refs/heads/master\n"
	           "[user]\n\temail = me@example.org\n",
	      false, true);
	CHECK(CORE "\tworktree = ../../../sub\n", false, true);
	CHECK("[CORE]\n\tBare = False\n", true, true);
}

/* Anything that may name a program git runs, or a file it reads, or that is read otherwise
 * than here: not inert. */
static void test_not_inert(void **state)
{
	(void)state;
	CHECK(CORE "\tfsmonitor = touch x\n", false, false);
	CHECK(CORE "\tpager = less\n", false, false);
	CHECK(CORE "\thooksPath = .husky\n", false, false);
	CHECK(CORE "[remote \"o\"]\n\turl = x\n\tuploadpack = sh\n", false, false);
	CHECK(CORE "[alias]\n\tst = !sh\n", false, false);
	CHECK(CORE "[include]\n\tpath = /tmp/x\n", false, false);
	CHECK(CORE "[includeIf \"gitdir:/\"]\n\tpath = /tmp/x\n", false, false);
	CHECK(CORE "[remote.origin]\n\turl = x\n", false, false);
	CHECK(CORE "[remote \"a\\\"b\"]\n\turl = x\n", false, false);
	CHECK(CORE "[user]\n\tname = \"a\" ; x\n", false, false);
	CHECK(CORE "[user]\n\tname = a \\\n\tb\n", false, false);
	CHECK(CORE "\tbare\n", false, false);
	CHECK(CORE "\tbare = yes\n", false, false);
	CHECK("\tbare = false\n", false, false);
	CHECK("", false, false);
	/* git reads past a NUL. */
	static const char nul[] = "[core]\n\tbare = false\n\0[core]\n\tfsmonitor = x\n";
	check(nul, sizeof(nul) - 1, false, false);
}

/* .gitmodules: does a submodule's ignore or fetchRecurseSubmodules have git go into it? */
static void modules(const char *text, size_t len, bool enter)
{
	char dir[] = "/tmp/rd-test-git-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[sizeof(dir) + 12];
	snprintf(path, sizeof(path), "%s/.gitmodules", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	if (rd_git_modules_enter(path) != enter)
		fail_msg("%s for:\n%s", enter ? "let through" : "refused", text);
	unlink(path);
	rmdir(dir);
}

#define MODULES(text, enter) modules(text, sizeof(text) - 1, enter)

static void test_modules(void **state)
{
	(void)state;
	MODULES("[submodule \"a\"]\n\tpath = a\n\turl = ../a\n", false);
	MODULES("[submodule \"a\"]\n\tpath = a\n\tignore = all\n", false);
	MODULES("[submodule \"a\"]\n\tfetchRecurseSubmodules = false\n", false);
	MODULES("[submodule \"a\"]\n\tpath = a\n\tignore = none\n", true);
	MODULES("[submodule \"a\"]\n\tIGNORE=dirty\n", true);
	MODULES("[submodule \"a\"]\n\tfetchRecurseSubmodules\n", true);
	MODULES("[submodule \"a\"]\n\tignore = \"none\"\n", true);
	/* git reads past a NUL, which would end the text here. */
	static const char nul[] = "[submodule \"a\"]\n\tpath = a\n\0\tignore = none\n";
	modules(nul, sizeof(nul) - 1, true);
	assert_false(rd_git_modules_enter("/nonexistent/.gitmodules"));
}

/* extensions.worktreeConfig: does the configuration turn it on (or might it)? */
#define WORKTREE(text, on)                                                                         \
	do {                                                                                       \
		if (rd_git_worktree_config_on(text, sizeof(text) - 1) != (on))                     \
			fail_msg("%s for:\n%s", (on) ? "off" : "on", text);                        \
	} while (0)

static void test_worktree_config(void **state)
{
	(void)state;
	WORKTREE("[core]\n\tbare = false\n", false);
	WORKTREE("[extensions]\n\tworktreeConfig = false\n", false);
	WORKTREE("[extensions]\n\tWorktreeConfig=0\r\n", false);
	WORKTREE("# worktreeConfig = true\n; worktreeconfig\n[core]\n", false);
	WORKTREE("[extensions]\n\tworktreeConfig = true\n", true);
	WORKTREE("[extensions]\n\tworktreeConfig\n", true);
	WORKTREE("[extensions]\n\tworktreeConfig = false\n\tworktreeConfig = yes\n", true);
	/* Not read here as git reads it: taken as on. */
	WORKTREE("[extensions]worktreeConfig = false\n", true);
	WORKTREE("[extensions]\n\tworktreeConfig = false # no\n", true);
	WORKTREE("[extensions]\n\tworktreeConfig = \"false\"\n", true);
	static const char nul[] = "[core]\n\0[extensions]\n\tworktreeConfig = true\n";
	assert_true(rd_git_worktree_config_on(nul, sizeof(nul) - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_written_by_git),
	    cmocka_unit_test(test_not_inert),
	    cmocka_unit_test(test_modules),
	    cmocka_unit_test(test_worktree_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
