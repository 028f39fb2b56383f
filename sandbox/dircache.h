/* Which directories of a list of paths are missing: most masked paths are missing, in
 * directories that are missing too (the stores of the agents one does not use), and one
 * lookup of such a directory answers for every path in it. The directories are the paths'
 * own strings (dir names the first len bytes of one), so the cache lives no longer than the
 * list. Header-only: the reaper (in the static zygote too) and runnerd's check of a spare
 * both use it. */
#ifndef RD_SANDBOX_DIRCACHE_H
#define RD_SANDBOX_DIRCACHE_H

#include <stdbool.h>
#include <string.h>

#define RD_DIRCACHE_N 32

struct rd_dircache {
	struct {
		const char *dir;
		size_t len;
		bool missing;
	} d[RD_DIRCACHE_N];
	size_t n;
};

/* The length of path's directory (0: it has none in the string). */
static inline size_t rd_dircache_dirlen(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? (size_t)(slash - path) : 0;
}

/* 1: path lies in a directory known to be missing; 0: its own directory is known to be
 * there; -1: not known. */
static inline int rd_dircache_get(const struct rd_dircache *c, const char *path)
{
	size_t dlen = rd_dircache_dirlen(path);
	for (size_t k = 0; dlen && k < c->n; k++) {
		size_t l = c->d[k].len;
		if (c->d[k].missing && l <= dlen && strncmp(c->d[k].dir, path, l) == 0 &&
		    path[l] == '/')
			return 1;
		if (!c->d[k].missing && l == dlen && strncmp(c->d[k].dir, path, l) == 0)
			return 0;
	}
	return -1;
}

/* Is the directory of paths[i] (its first dlen bytes) that of a later path, or above one? Only
 * then is a lookup of it worth making: it answers for nothing else. */
static inline bool rd_dircache_worth(char *const *paths, size_t n, size_t i, size_t dlen)
{
	for (size_t j = i + 1; j < n; j++)
		if (strncmp(paths[j], paths[i], dlen) == 0 && paths[j][dlen] == '/')
			return true;
	return false;
}

/* Record whether path's directory is missing (when there is room). No fd is kept: the check
 * runs while runnerd holds a caller's fds, near its limit maybe. */
static inline void rd_dircache_put(struct rd_dircache *c, const char *path, bool missing)
{
	size_t dlen = rd_dircache_dirlen(path);
	if (dlen && c->n < RD_DIRCACHE_N)
		c->d[c->n++] = (typeof(c->d[0])){path, dlen, missing};
}

#endif
