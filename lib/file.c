#include "lib/file.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t rd_read_fd(int fd, size_t max, char **out)
{
	size_t cap = 4096, got = 0;
	_cleanup_free_ char *buf = NULL;
	for (;;) {
		if (got + 1 >= cap || !buf) {
			cap = buf ? cap * 2 : cap;
			char *more = realloc(buf, cap);
			if (!more)
				return -ENOMEM;
			buf = more;
		}
		/* One byte more than max may be read: that says it holds more. */
		size_t want = cap - 1 - got;
		if (want > max + 1 - got)
			want = max + 1 - got;
		ssize_t n = read(fd, buf + got, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max)
			return -EFBIG;
	}
	buf[got] = '\0';
	*out = steal_pointer(&buf);
	return (ssize_t)got;
}

ssize_t rd_read_file(const char *path, size_t max, char **out)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	return rd_read_fd(fd, max, out);
}

int rd_own_dir(const char *path, struct rd_error *err)
{
	struct stat st;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return rd_error_set(err, errno, "cannot create %s: %s", path, strerror(errno));
	if (lstat(path, &st) < 0)
		return rd_error_set(err, errno, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return rd_error_set(
		    err, EPERM,
		    "%s must be a directory of uid %u with mode 0700 (it is %s, uid "
		    "%u, mode %04o)",
		    path, (unsigned)geteuid(),
		    S_ISDIR(st.st_mode) ? "a directory" : "not a directory", (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
	return 0;
}

int rd_lock_take(int fd)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	return fcntl(fd, F_OFD_SETLK, &l) < 0 ? -errno : 0;
}

int rd_lock_held(int fd)
{
	struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	if (fcntl(fd, F_OFD_GETLK, &l) < 0)
		return -errno;
	return l.l_type != F_UNLCK;
}
