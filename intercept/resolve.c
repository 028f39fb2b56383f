#include "intercept/resolve.h"
#include "lib/syscalls.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_target(const struct rd_task *t, int fd)
{
	for (size_t i = 0; i < t->n_fds; i++)
		if (t->fds[i].target == fd)
			return true;
	return false;
}

void rd_target_free(struct rd_target *tg)
{
	if (tg->own_fd >= 0)
		close(tg->own_fd);
	free(tg->resolved);
	memset(tg, 0, sizeof(*tg));
	tg->own_fd = tg->caller_fd = -1;
}

void rd_target_bind(const struct rd_task *t, struct rd_target *tg)
{
	/* An fd the caller keeps across exec is the command's at the same number: exec'ing
	 * that one lets a script's interpreter open /dev/fd/N as it would have. */
	if (tg->caller_fd >= 0 && is_target(t, tg->caller_fd)) {
		tg->exec_fd = tg->caller_fd;
		tg->exec_fd_is_target = true;
	}
}

/* The kernel's answer for a file it would refuse before reading a byte of it. */
static int check_file(int fd, struct rd_target *out)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -ELOOP; /* AT_SYMLINK_NOFOLLOW on a symlink */
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (!(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
		return -EACCES;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	char link[64], buf[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	/* Rules match the resolved path, and the audit names it: without it (whole), no exec. */
	ssize_t n = readlink(link, buf, sizeof(buf));
	if (n <= 0 || n >= (ssize_t)sizeof(buf))
		return n < 0 ? -errno : -ENAMETOOLONG;
	buf[n] = '\0';
	out->resolved = strdup(buf);
	return out->resolved ? 0 : -ENOMEM;
}

/* Whether the file starts as an ELF binary does (read through runnerd's own O_PATH fd). */
static bool is_elf(int opath_fd)
{
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", opath_fd);
	_cleanup_close_ int fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	unsigned char m[4];
	return fd >= 0 && pread(fd, m, sizeof(m), 0) == (ssize_t)sizeof(m) &&
	       memcmp(m,
	              "\x7f"
	              "ELF",
	              4) == 0;
}

/* "/dev/fd/N", "/proc/self/fd/N", "/proc/thread-self/fd/N", "/dev/stdin" ...: the caller's
 * fd N, which the sandbox (fresh /proc, other pid) cannot name by that path. */
static int caller_fd_path(const char *path)
{
	static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/",
	                                       "/proc/thread-self/fd/"};
	if (strcmp(path, "/dev/stdin") == 0)
		return 0;
	if (strcmp(path, "/dev/stdout") == 0)
		return 1;
	if (strcmp(path, "/dev/stderr") == 0)
		return 2;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t l = strlen(prefixes[i]);
		const char *n = path + l;
		if (strncmp(path, prefixes[i], l) == 0 && *n &&
		    strspn(n, "0123456789") == strlen(n) && strlen(n) < 10)
			return atoi(n);
	}
	return -1;
}

/* In "/proc/PID[/task/TID]/ENTRY[/N]/...", where the entry ends: past ENTRY, and past N for
 * "fd" and "map_files". That much is the caller's own magic link; what follows is not. */
static size_t proc_entry_end(const char *p)
{
	const char *s = p + strlen("/proc/");
	s += strspn(s, "0123456789");
	if (strncmp(s, "/task/", 6) == 0)
		s += 6 + strspn(s + 6, "0123456789");
	if (*s != '/')
		return strlen(p);
	const char *entry = ++s;
	s += strcspn(s, "/");
	if (*s == '/' && ((s - entry == 2 && strncmp(entry, "fd", 2) == 0) ||
	                  (s - entry == 9 && strncmp(entry, "map_files", 9) == 0)))
		s += 1 + strcspn(s + 1, "/");
	return (size_t)(s - p);
}

/* Does the path have a ".." component? */
static bool has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return true;
	return false;
}

static int exec_caller_fd(struct rd_task *t, int fd, struct rd_target *out)
{
	if (fd == AT_FDCWD)
		return -EACCES; /* the cwd is a directory */
	int copy = rd_task_getfd(t, fd);
	if (copy < 0)
		return copy;
	out->own_fd = copy;
	int r = check_file(copy, out);
	if (r < 0)
		return r;
	out->exec_fd = copy;
	out->caller_fd = fd;
	out->exec_path = "";
	out->exec_flags = AT_EMPTY_PATH;
	return 0;
}

/* A miss (r: -errno, or 0 for none): the caller's exec fails with that errno, as the kernel's
 * would, and nothing else is said. */
static enum rd_resolve_outcome done(int r, int *e)
{
	*e = -r;
	return r < 0 ? RD_RESOLVE_MISS : RD_RESOLVED;
}

/* Not a miss: runnerd will not run it (r: -errno, err says why). */
static enum rd_resolve_outcome refused(int r, int *e)
{
	*e = -r;
	return RD_RESOLVE_REFUSED;
}

enum rd_resolve_outcome rd_resolve(struct rd_task *t, int dirfd, const char *path, int flags,
                                   struct rd_target *out, int *e, struct rd_error *err)
{
	*e = 0;
	memset(out, 0, sizeof(*out));
	out->own_fd = out->caller_fd = -1;
	if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return done(-EINVAL, e);
	if (path[0] == '\0')
		return done((flags & AT_EMPTY_PATH) ? exec_caller_fd(t, dirfd, out) : -ENOENT, e);
	/* "/proc//self" and "/proc/./self" name what "/proc/self" does: fold them first, so the
	 * translation below cannot be sidestepped. (The path runs as the caller gave it.) A "/."
	 * at the end stays: it makes the kernel check that what it names is a directory. */
	const char *given = path; /* what the sandbox execs by name: the caller's own string */
	char norm[RD_TRANSLATED_MAX];
	if (path[0] == '/') {
		size_t o = 0;
		for (const char *p = path; *p && o + 1 < sizeof(norm);) {
			if (p[0] == '/' && (p[1] == '/' || (p[1] == '.' && p[2] == '/'))) {
				p += p[1] == '/' ? 1 : 2;
				continue;
			}
			norm[o++] = *p++;
		}
		norm[o] = '\0';
		path = norm; /* RD_PATH_MAX < RD_TRANSLATED_MAX: it always fits */
	}
	int cfd = caller_fd_path(path);
	if (cfd >= 0) {
		/* By name, an fd that is not open is a name that does not exist. */
		int r = exec_caller_fd(t, cfd, out);
		return done(r == -EBADF ? -ENOENT : r, e);
	}
	/* "/dev/fd/N/NAME" is "/proc/self/fd/N/NAME" (/dev/fd is a link to it): the caller's. */
	char dev_fd[RD_TRANSLATED_MAX];
	if (strncmp(path, "/dev/fd/", 8) == 0) {
		snprintf(dev_fd, sizeof(dev_fd), "/proc/self/fd/%s", path + 8);
		path = dev_fd;
	}

	/* Any other /proc path: runnerd opens it where the caller would ("self" being the
	 * caller), since the sandbox's /proc is of another pid namespace. Magic links (exe, fd/N,
	 * root, cwd) are followed only under the caller's own /proc/PID, which names the same
	 * objects for runnerd as for the caller; and no "..": "/proc/PID/../self" would be
	 * runnerd's own self. */
	int base = AT_FDCWD;
	_cleanup_close_ int base_fd = -1;
	char proc_path[RD_TRANSLATED_MAX];
	const char *open_path = path;
	bool via_proc = false, magic_ok = false;
	if (strncmp(path, "/proc/", 6) == 0) {
		const char *rest = path + 6;
		if (has_dotdot(rest))
			return refused(
			    rd_error_set(err, EPERM,
			                 "%s: runnerd does not resolve \"..\" under /proc "
			                 "as the caller",
			                 path),
			    e);
		char own[16];
		int ol = snprintf(own, sizeof(own), "%d", t->tgid);
		int w;
		magic_ok = true;
		if (strncmp(rest, "self", 4) == 0 && (rest[4] == '/' || !rest[4]))
			w = snprintf(proc_path, sizeof(proc_path), "/proc/%d%s", t->tgid, rest + 4);
		else if (strncmp(rest, "thread-self", 11) == 0 && (rest[11] == '/' || !rest[11]))
			w = snprintf(proc_path, sizeof(proc_path), "/proc/%d/task/%d%s", t->tgid,
			             t->tid, rest + 11);
		else {
			w = snprintf(proc_path, sizeof(proc_path), "%s", path);
			magic_ok =
			    strncmp(rest, own, (size_t)ol) == 0 && (rest[ol] == '/' || !rest[ol]);
		}
		if (w < 0 || (size_t)w >= sizeof(proc_path))
			return done(-ENAMETOOLONG, e);
		open_path = proc_path;
		via_proc = true;
		/* Only the first magic link is the caller's: in "/proc/self/root/proc/self/exe"
		 * the second "self" would be runnerd. What follows it is looked up from there with
		 * no magic link allowed. */
		size_t cut = magic_ok ? proc_entry_end(proc_path) : 0;
		if (cut && proc_path[cut]) {
			proc_path[cut] = '\0';
			struct open_how entry = {.flags = O_PATH | O_CLOEXEC};
			base = base_fd = rd_openat2(AT_FDCWD, proc_path, &entry);
			if (base_fd < 0)
				return done(-errno, e);
			/* "/proc/self/exe/": the entry itself, which must then be a directory. */
			open_path = proc_path[cut + 1] ? proc_path + cut + 1 : ".";
			magic_ok = false;
		}
	} else if (path[0] != '/') {
		if (dirfd == AT_FDCWD) {
			int r = rd_task_cwd(t, err);
			if (r < 0)
				return refused(r,
				               e); /* runnerd could not look where the caller is */
			base = t->cwd_fd;
		} else {
			base = base_fd = rd_task_getfd(t, dirfd);
			if (base_fd < 0)
				return done(base_fd, e);
		}
	}

	int of = O_PATH | O_CLOEXEC | ((flags & AT_SYMLINK_NOFOLLOW) ? O_NOFOLLOW : 0);
	/* Outside the caller's own /proc/PID, no magic link may be crossed (a symlink to
	 * /proc/self/exe, say): runnerd would follow it as itself, not as the caller. */
	struct open_how how = {.flags = (uint64_t)of,
	                       .resolve = magic_ok ? 0 : RESOLVE_NO_MAGICLINKS};
	int fd = rd_openat2(base, open_path, &how);
	if (fd < 0 && errno == ELOOP && !magic_ok) {
		int probe = openat(base, open_path, of);
		if (probe >= 0) {
			close(probe);
			return refused(rd_error_set(err, EPERM,
			                            "%s leads through a /proc magic link runnerd "
			                            "cannot resolve as the caller",
			                            path),
			               e);
		}
		errno = ELOOP;
	}
	if (fd < 0)
		return done(-errno, e);
	out->own_fd = fd;
	int r = check_file(fd, out);
	if (r < 0)
		return done(r, e);
	/* A binary runs from the very file the decision was made on: by its fd, so no rename
	 * between now and the sandbox's exec can swap it. A script must keep its name (its
	 * interpreter opens it, and $0 is that name): the sandbox checks dev+ino just before. */
	if (via_proc || is_elf(fd)) {
		out->exec_fd = fd;
		out->exec_path = "";
		out->exec_flags = AT_EMPTY_PATH;
		return RD_RESOLVED;
	}
	if (path[0] == '/' || dirfd == AT_FDCWD) {
		/* The sandbox sits in the caller's cwd: the same path names the same file. */
		out->exec_fd = AT_FDCWD;
	} else {
		/* Keep the dirfd copy: the sandbox resolves the path against it. */
		close(fd);
		out->own_fd = out->exec_fd = steal_fd(&base_fd);
		out->caller_fd = dirfd;
	}
	out->exec_path = given;
	out->exec_flags = flags & AT_SYMLINK_NOFOLLOW;
	return RD_RESOLVED;
}
