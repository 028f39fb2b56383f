#include "lib/git.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The keys that name nothing git runs or reads elsewhere, by section, as git init and git
 * clone write them (and a user's name): "*" takes any value, else a boolean or a number. A
 * section with a subsection ([remote "origin"]) is "remote.*". */
static const struct {
	const char *section, *key;
	bool any;
} inert_keys[] = {
    {"core", "repositoryformatversion", false},
    {"core", "filemode", false},
    {"core", "bare", false},
    {"core", "logallrefupdates", false},
    {"core", "ignorecase", false},
    {"core", "precomposeunicode", false},
    {"core", "symlinks", false},
    {"core", "worktree", true},
    {"remote.*", "url", true},
    {"remote.*", "pushurl", true},
    {"remote.*", "fetch", true},
    {"remote.*", "push", true},
    {"remote.*", "tagopt", true},
    {"remote.*", "prune", false},
    {"remote.*", "mirror", false},
    {"branch.*", "remote", true},
    {"branch.*", "pushremote", true},
    {"branch.*", "merge", true},
    {"branch.*", "rebase", false},
    {"submodule.*", "url", true},
    {"submodule.*", "active", false},
    {"user", "name", true},
    {"user", "email", true},
    {"extensions", "objectformat", true},
    {"init", "defaultbranch", true},
    {"core", "sparsecheckout", false},
    {"core", "sparsecheckoutcone", false},
    {"extensions", "worktreeconfig", false},
    {"extensions", "partialclone", true},
    {"remote.*", "promisor", false},
    {"remote.*", "partialclonefilter", true},
    {"pull", "rebase", true},
    {"pull", "ff", true},
    {"push", "default", true},
    {"push", "autosetupremote", false},
    {"fetch", "prune", false},
};

static bool plain_value(const char *v)
{
	return strcmp(v, "0") == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 ||
	       strcasecmp(v, "false") == 0;
}

/* A section header as inert_keys names it: "[core]" is "core", "[remote "x"]" is "remote.*"
 * (the subsection without a quote or a backslash in it); false for another form. */
static bool section_name(const char *line, char *out, size_t n)
{
	size_t len = strlen(line);
	if (len < 3 || line[len - 1] != ']')
		return false;
	const char *name = line + 1, *q = strchr(name, '"');
	size_t nlen = q ? (size_t)(q - name) : len - 2;
	while (nlen && name[nlen - 1] == ' ')
		nlen--;
	if (!nlen || nlen + 3 > n ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") < nlen)
		return false;
	if (q) {
		const char *end = strchr(q + 1, '"');
		if (!end || end[1] != ']' || end[2] || strcspn(q + 1, "\\") < (size_t)(end - q - 1))
			return false;
	}
	snprintf(out, n, "%.*s%s", (int)nlen, name, q ? ".*" : "");
	return true;
}

/* A NUL or another control character but tab and line ends: git reads past one, which
 * would end a line, or the text, here. */
static bool has_control(const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\t' && buf[i] != '\n' &&
		    buf[i] != '\r')
			return true;
	return false;
}

static bool config_inert(int at, const char *name, bool init_only)
{
	char buf[8192];
	int fd = openat(at, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0 || n == (ssize_t)sizeof(buf) - 1)
		return false;
	if (has_control(buf, (size_t)n))
		return false;
	buf[n] = '\0';
	char section[64] = "";
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
			if (!section_name(line, section, sizeof(section)) ||
			    (init_only && strcasecmp(section, "core") != 0))
				return false;
			core = core || strcasecmp(section, "core") == 0;
			continue;
		}
		char *eq = strchr(line, '=');
		if (!section[0] || !eq)
			return false;
		char *k = line, *v = eq + 1;
		*eq = '\0';
		for (char *e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = '\0';
		v += strspn(v, " \t");
		/* A quote, an escape or a comment: read as git reads them, or not at all. */
		if (strpbrk(v, "\"\\;#"))
			return false;
		bool known = false;
		for (size_t i = 0; !known && i < ARRAY_SIZE(inert_keys); i++)
			known = strcasecmp(section, inert_keys[i].section) == 0 &&
			        strcasecmp(k, inert_keys[i].key) == 0 &&
			        (inert_keys[i].any ? !init_only : plain_value(v));
		if (!known)
			return false;
	}
	return core;
}

bool rd_git_init_config(int at, const char *name)
{
	return config_inert(at, name, true);
}

bool rd_git_config_inert(int at, const char *name)
{
	return config_inert(at, name, false);
}

bool rd_git_modules_enter(const char *path)
{
	char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return false;
	if (n == (ssize_t)sizeof(buf) - 1 || has_control(buf, (size_t)n))
		return true;
	buf[n] = '\0';
	for (char *line = buf, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t");
		char *eq = strchr(line, '=');
		size_t klen = eq ? strcspn(line, " \t=") : strcspn(line, " \t\r");
		bool ignore = klen == 6 && strncasecmp(line, "ignore", 6) == 0;
		bool fetch = klen == 22 && strncasecmp(line, "fetchRecurseSubmodules", 22) == 0;
		if (!ignore && !fetch)
			continue;
		/* A value as git would read it, or none taken: no quote, escape or comment. */
		const char *v = eq ? eq + 1 : "true";
		v += strspn(v, " \t");
		size_t vlen = strcspn(v, " \t\r");
		if (strpbrk(v, "\"\\;#") || v[vlen + strspn(v + vlen, " \t\r")])
			return true;
		if (ignore ? !(vlen == 3 && strncasecmp(v, "all", 3) == 0)
		           : !((vlen == 5 && strncasecmp(v, "false", 5) == 0) ||
		               (vlen == 2 && strncasecmp(v, "no", 2) == 0) ||
		               (vlen == 3 && strncasecmp(v, "off", 3) == 0) ||
		               (vlen == 1 && v[0] == '0')))
			return true;
	}
	return false;
}

bool rd_git_worktree_config_on(const char *buf, size_t len)
{
	if (has_control(buf, len))
		return true;
	for (const char *line = buf, *end = buf + len; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		const char *next = line + n + 1;
		while (n && (*line == ' ' || *line == '\t'))
			line++, n--;
		bool named = false;
		for (size_t i = 0; !named && i + 14 <= n; i++)
			named = strncasecmp(line + i, "worktreeconfig", 14) == 0;
		if (named && *line != '#' && *line != ';') {
			/* The key alone at the line's start, = and a plain false value: off. */
			const char *v = line + 14, *e = line + n;
			if (strncasecmp(line, "worktreeconfig", 14) != 0)
				return true;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			if (v == e || *v++ != '=')
				return true;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
				e--;
			size_t vl = (size_t)(e - v);
			if (!((vl == 5 && strncasecmp(v, "false", 5) == 0) ||
			      (vl == 2 && strncasecmp(v, "no", 2) == 0) ||
			      (vl == 3 && strncasecmp(v, "off", 3) == 0) || (vl == 1 && *v == '0')))
				return true;
		}
		line = next;
	}
	return false;
}

bool rd_git_dir_of(const char *dotgit, char *gd, size_t n)
{
	struct stat st;
	if (stat(dotgit, &st) < 0)
		return false;
	if (S_ISDIR(st.st_mode)) {
		char real[PATH_MAX];
		return realpath(dotgit, real) && (size_t)snprintf(gd, n, "%s", real) < n;
	}
	char buf[PATH_MAX + 16];
	_cleanup_close_ int fd =
	    S_ISREG(st.st_mode) ? open(dotgit, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (len <= 8 || strncmp(buf, "gitdir: ", 8) != 0)
		return false;
	while (len > 8 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	const char *dir = buf + 8, *slash = strrchr(dotgit, '/');
	return (size_t)(dir[0] == '/'
	                    ? snprintf(gd, n, "%s", dir)
	                    : snprintf(gd, n, "%.*s/%s", (int)(slash - dotgit), dotgit, dir)) < n;
}

bool rd_git_common_dir(const char *gd, char *common, size_t n)
{
	char path[PATH_MAX + 16], buf[PATH_MAX + 2], real[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/commondir", gd) >= sizeof(path))
		return false;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT && realpath(gd, real) &&
		       (size_t)snprintf(common, n, "%s", real) < n;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	/* As git trims it: newlines at its end. */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	if (len <= 0 || (size_t)len >= sizeof(buf) - 1 || memchr(buf, '\0', (size_t)len))
		return false;
	buf[len] = '\0';
	const char *d = buf;
	if ((size_t)(d[0] == '/' ? snprintf(path, sizeof(path), "%s", d)
	                         : snprintf(path, sizeof(path), "%s/%s", gd, d)) >= sizeof(path))
		return false;
	return realpath(path, real) && (size_t)snprintf(common, n, "%s", real) < n;
}

bool rd_git_prog_at(const char *dir, size_t len, char *real, struct stat *st)
{
	char cand[PATH_MAX];
	if (!len || dir[0] != '/' || len + sizeof("/git") > sizeof(cand))
		return false;
	memcpy(cand, dir, len);
	strcpy(cand + len, "/git");
	return realpath(cand, real) && stat(real, st) == 0 && S_ISREG(st->st_mode) &&
	       access(real, X_OK) == 0;
}
