#include "lib/git.h"
#include "lib/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
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

bool rd_git_init_config(int at, const char *name)
{
	static const char *const keys[] = {
	    "repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
	    "precomposeunicode",       "symlinks"};
	char buf[4096];
	int fd = openat(at, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0 || n == (ssize_t)sizeof(buf) - 1)
		return false;
	/* git reads past a NUL or another control character, which would end a line here. */
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\t' && buf[i] != '\n' &&
		    buf[i] != '\r')
			return false;
	buf[n] = '\0';
	bool core = false;
	for (char *line = buf, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t");
		size_t len = strlen(line);
		while (len &&
		       (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!len)
			continue;
		if (line[0] == '[') {
			if (strcasecmp(line, "[core]") != 0)
				return false;
			core = true;
			continue;
		}
		char *eq = strchr(line, '=');
		if (!core || !eq)
			return false;
		char *k = line, *v = eq + 1;
		*eq = '\0';
		for (char *e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = '\0';
		v += strspn(v, " \t");
		bool known = false;
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			known = known || strcasecmp(k, keys[i]) == 0;
		if (!known || (strcmp(v, "0") && strcmp(v, "1") && strcasecmp(v, "true") &&
		               strcasecmp(v, "false")))
			return false;
	}
	return core;
}
