/* cmocka needs these first, in this order */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "lib/file.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A file of len bytes (a pattern with a NUL in it) in a directory of its own: its path. */
static char *file_of(char *dir, size_t len)
{
	assert_non_null(mkdtemp(dir));
	char *path = NULL;
	assert_true(asprintf(&path, "%s/f", dir) > 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	for (size_t i = 0; i < len; i++) {
		char c = (char)(i % 7 == 3 ? '\0' : 'a' + i % 26);
		assert_int_equal(write(fd, &c, 1), 1);
	}
	close(fd);
	return path;
}

static void gone(char *dir, char *path)
{
	unlink(path);
	rmdir(dir);
	free(path);
}

/* Whole, NUL and all, at the limit and past it, across the first buffer's size. */
static void test_sizes(void **state)
{
	(void)state;
	static const size_t lens[] = {0, 1, 4095, 4096, 4097, 20000};
	for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
		char dir[] = "/tmp/rd-test-file-XXXXXX";
		char *path = file_of(dir, lens[i]);
		char *buf = NULL;
		assert_int_equal(rd_read_file(path, lens[i], &buf), (ssize_t)lens[i]);
		assert_int_equal(buf[lens[i]], '\0');
		for (size_t k = 0; k < lens[i]; k++)
			assert_int_equal(buf[k], (char)(k % 7 == 3 ? '\0' : 'a' + k % 26));
		free(buf);
		buf = NULL;
		if (lens[i]) {
			assert_int_equal(rd_read_file(path, lens[i] - 1, &buf), -EFBIG);
			assert_null(buf);
		}
		gone(dir, path);
	}
}

/* A /proc file says it is empty; a missing file; a FIFO without a writer does not block. */
static void test_special(void **state)
{
	(void)state;
	char *buf = NULL;
	ssize_t n = rd_read_file("/proc/self/status", 1 << 16, &buf);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "Pid:"));
	free(buf);
	buf = NULL;
	assert_int_equal(rd_read_file("/nonexistent/x", 10, &buf), -ENOENT);
	char dir[] = "/tmp/rd-test-file-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char fifo[sizeof(dir) + 8];
	snprintf(fifo, sizeof(fifo), "%s/p", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rd_read_file(fifo, 10, &buf), 0);
	free(buf);
	unlink(fifo);
	rmdir(dir);
}

/* A private directory: made 0700 where missing, taken as it is where it is one, refused, with
 * the path and what it is, where it is open to others or no directory (a symlink to one). */
static void test_own_dir(void **state)
{
	(void)state;
	char dir[] = "/tmp/rd-test-own-XXXXXX", path[64], link[64];
	struct rd_error err = {0};
	struct stat st;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d", dir);
	snprintf(link, sizeof(link), "%s/l", dir);
	assert_int_equal(rd_own_dir(path, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(rd_own_dir(path, &err), 0);
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(rd_own_dir(path, &err), -EPERM);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "mode 0755"));
	assert_int_equal(chmod(path, 0700), 0);
	assert_int_equal(symlink(path, link), 0);
	err = (struct rd_error){0};
	assert_int_equal(rd_own_dir(link, &err), -EPERM);
	assert_non_null(strstr(err.msg, "not a directory"));
	snprintf(link + strlen(link), sizeof(link) - strlen(link), "/x/y");
	err = (struct rd_error){0};
	assert_true(rd_own_dir(link, &err) < 0);
	assert_non_null(strstr(err.msg, "cannot create"));
	snprintf(link, sizeof(link), "%s/l", dir);
	unlink(link);
	rmdir(path);
	rmdir(dir);
}

/* A lock that says its holder lives: seen from another open of the file, in this process or
 * another; not let go when another fd of the file is closed; held by a forked child until it
 * exits too; gone with the last fd of its description. */
static void test_lock(void **state)
{
	(void)state;
	char path[] = "/tmp/rd-test-lock-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	int other = open(path, O_RDONLY);
	assert_int_equal(rd_lock_held(other), 0);
	assert_int_equal(rd_lock_take(fd), 0);
	assert_int_equal(rd_lock_held(other), 1);
	int third = open(path, O_RDONLY);
	close(third);
	assert_int_equal(rd_lock_held(other), 1);
	int w = open(path, O_WRONLY);
	assert_int_equal(rd_lock_take(w), -EAGAIN);
	close(w);
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(go[1]);
		_exit(read(go[0], &c, 1) < 0);
	}
	close(go[0]);
	close(fd);
	assert_int_equal(rd_lock_held(other), 1); /* the child's copy holds it */
	close(go[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(rd_lock_held(other), 0);
	close(other);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_special),
	    cmocka_unit_test(test_own_dir),
	    cmocka_unit_test(test_lock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
