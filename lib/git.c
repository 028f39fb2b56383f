#include "lib/git.h"
#include "lib/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool rd_git_head_valid(int dirfd, const char *path, char *text, size_t size)
{
	char buf[256];
	_cleanup_close_ int fd =
	    openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	size_t hex = strspn(buf, "0123456789abcdef");
	bool ok = strncmp(buf, "ref: refs/", 10) == 0 ||
	          ((hex == 40 || hex == 64) && (buf[hex] == '\n' || buf[hex] == '\0'));
	if (ok && text && size)
		snprintf(text, size, "%s", buf);
	return ok;
}

bool rd_git_bare_shaped(const char *dir)
{
	/* As git's is_git_directory() tests a directory: a HEAD, and objects and refs it may
	 * search (access X_OK: an executable file passes too). HEAD's content is not read: one
	 * git would not take today may be rewritten tomorrow. */
	const char *top = strcmp(dir, "/") ? dir : "";
	char sub[4096];
	struct stat st;
	snprintf(sub, sizeof(sub), "%s/HEAD", top);
	if (lstat(sub, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
		return false;
	snprintf(sub, sizeof(sub), "%s/objects", top);
	if (access(sub, X_OK) < 0)
		return false;
	snprintf(sub, sizeof(sub), "%s/refs", top);
	return access(sub, X_OK) == 0;
}
