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
	static const char *const bare[] = {"HEAD", "objects", "refs"};
	const char *top = strcmp(dir, "/") ? dir : "";
	size_t shaped = 0;
	for (size_t i = 0; i < ARRAY_SIZE(bare); i++) {
		char sub[4096];
		struct stat st;
		snprintf(sub, sizeof(sub), "%s/%s", top, bare[i]);
		shaped +=
		    lstat(sub, &st) == 0 &&
		    (i == 0 ? S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) : !S_ISREG(st.st_mode));
	}
	return shaped == ARRAY_SIZE(bare);
}
