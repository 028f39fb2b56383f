/* A rule that grants a secret gives it to a program: that must be the program the operator
 * meant, not one the agent's user put there since. The agent itself runs outside the sandbox,
 * with the user's rights, and a prompt-injected agent can write any file its user can: so a
 * granted program must lie where that user cannot write (the file, and every directory above
 * it), or the rule pins its contents by SHA-256. A pinned program runs from a sealed copy of
 * the bytes that were hashed, so that the file cannot change between the check and the exec. */
#include "supervisor/grant.h"
#include "lib/file.h"
#include "lib/git.h"
#include "lib/sha256.h"
#include "policy/rules.h"
#include "supervisor/sessions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* Does runnerd (and with it the agent it started) hold a capability that overrides file
 * permissions? Then every file is the agent's to replace. */
static const char *overriding_cap(void)
{
	static const struct {
		cap_value_t cap;
		const char *name;
	} caps[] = {{CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE"},
	            {CAP_FOWNER, "CAP_FOWNER"},
	            {CAP_CHOWN, "CAP_CHOWN"},
	            {CAP_SETUID, "CAP_SETUID"},
	            {CAP_SYS_ADMIN, "CAP_SYS_ADMIN"}};
	cap_t c = cap_get_proc();
	const char *held = c ? NULL : "(its capabilities cannot be read)";
	for (size_t i = 0; c && !held && i < ARRAY_SIZE(caps); i++) {
		cap_flag_value_t e = CAP_CLEAR, p = CAP_CLEAR;
		if (cap_get_flag(c, caps[i].cap, CAP_EFFECTIVE, &e) < 0 ||
		    cap_get_flag(c, caps[i].cap, CAP_PERMITTED, &p) < 0 || e == CAP_SET ||
		    p == CAP_SET)
			held = caps[i].name;
	}
	cap_free(c);
	return held;
}

/* Can this user replace what path names, given st (its lstat) and, for a directory, the
 * entry below it on the way to the program (child)? */
static bool replaceable(const char *path, const struct stat *st, const struct stat *child)
{
	if (st->st_uid == geteuid())
		return true; /* its owner may chmod it */
	if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0)
		return false;
	/* A sticky directory (/tmp) lets others only add names, not take or swap one they do
	 * not own. */
	return !(child && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) &&
	         child->st_uid != geteuid());
}

/* The first of path and the directories above it that the agent's user can replace, into
 * why; 0, -EAGAIN if path is not the file the decision was made on, or another -errno. */
static int check_replaceable(const char *path, dev_t dev, ino_t ino, char *why, size_t n)
{
	const char *cap = overriding_cap();
	if (cap) {
		snprintf(why, n, "runnerd and the agent hold %s: every file is theirs to replace",
		         cap);
		return 1;
	}
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p) || p[0] != '/')
		return -ENAMETOOLONG;
	struct stat st, child;
	bool first = true;
	for (;;) {
		if (lstat(p, &st) < 0)
			return -errno;
		if (first && (st.st_dev != dev || st.st_ino != ino))
			return -EAGAIN;
		if (!first && !S_ISDIR(st.st_mode))
			return -EAGAIN; /* a symlink now, where the resolved path had a directory */
		if (replaceable(p, &st, first ? NULL : &child)) {
			snprintf(why, n, "%s %s is %s", first ? "the file" : "the directory", p,
			         st.st_uid == geteuid() ? "the agent's user's own"
			                                : "writable by the agent's user");
			return 1;
		}
		if (strcmp(p, "/") == 0)
			return 0;
		char *slash = strrchr(p, '/');
		if (slash == p)
			slash[1] = '\0';
		else
			*slash = '\0';
		child = st;
		first = false;
	}
}

/* The largest program pinned: its copy is memory of runnerd's, outside every sandbox's. */
#define PIN_MAX_BYTES (512L << 20)

/* The sha256 of fd's first size bytes, in hex. 0 or -errno. */
static int hash_fd(int fd, off_t size, char hex[65])
{
	void *map = size ? mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	if (size && map == MAP_FAILED)
		return -errno;
	rd_sha256_hex(map ? map : "", (size_t)size, hex);
	if (map)
		munmap(map, (size_t)size);
	return 0;
}

/* A sealed copy of fd's file and its SHA-256, into memfd and hex. 0 or -errno. */
static int seal_copy(int fd, off_t size, int *memfd, char hex[65])
{
	int m = memfd_create("runnerd-pinned", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (m < 0 && errno == EINVAL)
		m = memfd_create("runnerd-pinned", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0)
		return -errno;
	int r = 0;
	off_t off = 0;
	while (!r && off < size) {
		ssize_t k = sendfile(m, fd, &off, (size_t)(size - off));
		if (k < 0 && errno != EINTR)
			r = -errno;
		else if (k == 0)
			r = -EAGAIN; /* it shrank meanwhile */
	}
	struct stat st;
	if (!r && (fstat(m, &st) < 0 || st.st_size != size))
		r = -EAGAIN;
	if (!r &&
	    fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		r = -errno;
	if (!r) /* hashed after the seals: these bytes, and no others, are what runs */
		r = hash_fd(m, size, hex);
	if (r < 0) {
		close(m);
		return r;
	}
	*memfd = m;
	return 0;
}

/* The program q names, opened and checked to be the file that was resolved, a regular one of
 * at most PIN_MAX_BYTES: its fd (stat in *st), or -errno (-EAGAIN: it changed; -EFBIG). */
static int open_target(const struct req *q, struct stat *st)
{
	/* Non-blocking: a FIFO a command swapped in meanwhile must not hold runnerd. */
	int fd = open(q->tg.resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	int e = fd < 0 || fstat(fd, st) < 0 ? -errno
	        : st->st_dev != q->tg.dev || st->st_ino != q->tg.ino || !S_ISREG(st->st_mode)
	            ? -EAGAIN
	        : st->st_size > PIN_MAX_BYTES ? -EFBIG
	                                      : 0;
	if (e && fd >= 0)
		close(fd);
	return e ? e : fd;
}

static bool same_file(const struct pinned_file *f, const struct stat *st)
{
	return f->memfd >= 0 && f->dev == st->st_dev && f->ino == st->st_ino &&
	       f->size == st->st_size && f->mtime.tv_sec == st->st_mtim.tv_sec &&
	       f->mtime.tv_nsec == st->st_mtim.tv_nsec && f->ctime.tv_sec == st->st_ctim.tv_sec &&
	       f->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* The sealed copy of the program q names, made or kept: its slot, or NULL with -errno in *e. */
static struct pinned_file *pinned_copy(struct sup *u, struct req *q, int *e)
{
	struct stat st;
	int fd = open_target(q, &st);
	*e = fd < 0 ? fd : 0;
	struct pinned_file *f = NULL;
	for (size_t i = 0; !*e && !f && i < RD_PINNED_KEEP; i++)
		if (same_file(&u->pin.f[i], &st))
			f = &u->pin.f[i];
	if (!*e && !f) {
		int m = -1;
		char hex[65];
		*e = seal_copy(fd, st.st_size, &m, hex);
		if (!*e) {
			f = &u->pin.f[u->pin.next++ % RD_PINNED_KEEP];
			if (f->memfd >= 0)
				close(f->memfd);
			*f = (struct pinned_file){.dev = st.st_dev,
			                          .ino = st.st_ino,
			                          .size = st.st_size,
			                          .mtime = st.st_mtim,
			                          .ctime = st.st_ctim,
			                          .memfd = m};
			memcpy(f->hex, hex, sizeof(hex));
		}
	}
	if (fd >= 0)
		close(fd);
	return f;
}

/* The target becomes the sealed copy: exec'd by fd, whatever the caller's path named. */
static int run_copy(struct req *q, const struct pinned_file *f)
{
	struct stat st;
	int fd = fcntl(f->memfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		return e;
	}
	if (q->tg.own_fd >= 0)
		close(q->tg.own_fd);
	q->tg.own_fd = q->tg.exec_fd = fd;
	q->tg.exec_fd_is_target = false;
	q->tg.caller_fd = -1;
	q->tg.exec_path = "";
	q->tg.exec_flags = AT_EMPTY_PATH;
	q->tg.dev = st.st_dev;
	q->tg.ino = st.st_ino;
	return 0;
}

static int pinned(struct sup *u, struct req *q, char *why, size_t n)
{
	const struct rd_rule *r = q->rule;
	int e;
	struct pinned_file *f = pinned_copy(u, q, &e);
	if (!f) {
		snprintf(why, n, "commands.rules[%zu] pins %s by sha256, which cannot be read: %s",
		         r->index, q->tg.resolved,
		         e == -EAGAIN  ? "it changed while it was read"
		         : e == -EFBIG ? "it is larger than the 512 MiB runnerd copies"
		                       : strerror(-e));
		return e == -EAGAIN ? EAGAIN : EACCES;
	}
	bool match = false;
	for (size_t i = 0; !match && i < r->sha256.n; i++)
		match = strcmp(r->sha256.v[i], f->hex) == 0;
	if (!match) {
		snprintf(why, n,
		         "commands.rules[%zu] pins %s by sha256, and its sha256 is now %s: if this "
		         "is the program you meant (an update), pin that",
		         r->index, q->tg.resolved, f->hex);
		return EACCES;
	}
	char head[2] = {0, 0};
	if (pread(f->memfd, head, sizeof(head), 0) == 2 && head[0] == '#' && head[1] == '!') {
		snprintf(why, n,
		         "commands.rules[%zu] pins %s by sha256, and it is a script (#!): a pin "
		         "holds for a compiled program; its interpreter reads the script by path",
		         r->index, q->tg.resolved);
		return EACCES;
	}
	e = run_copy(q, f);
	if (e < 0) {
		snprintf(why, n, "commands.rules[%zu]: the sealed copy of %s: %s", r->index,
		         q->tg.resolved, strerror(-e));
		return EPERM;
	}
	return 0;
}

int sup_grant_target(struct sup *u, struct req *q, char *why, size_t n)
{
	const struct rd_rule *r = q->rule;
	if (!r || !q->tg.resolved)
		return 0;
	if (r->sha256.n)
		return pinned(u, q, why, n);
	if (!r->grants_secret)
		return 0;
	char how[PATH_MAX + 128];
	int w = check_replaceable(q->tg.resolved, q->tg.dev, q->tg.ino, how, sizeof(how));
	if (w == 0) {
		/* Exec'd by the path that was checked, not the caller's: a script's interpreter
		 * opens it again by the name it was exec'd by, which may be a symlink the agent
		 * can turn elsewhere meanwhile. */
		if (q->tg.own_fd >= 0)
			close(q->tg.own_fd);
		q->tg.own_fd = q->tg.caller_fd = -1;
		q->tg.exec_fd = AT_FDCWD;
		q->tg.exec_fd_is_target = false;
		q->tg.exec_path = q->tg.resolved;
		q->tg.exec_flags = 0;
		return 0;
	}
	if (w < 0) {
		snprintf(why, n,
		         "commands.rules[%zu] grants a secret to %s, whose directories cannot be "
		         "checked: %s",
		         r->index, q->tg.resolved,
		         w == -EAGAIN ? "it changed while it was checked" : strerror(-w));
		return w == -EAGAIN ? EAGAIN : EACCES;
	}
	/* The pin of the file as it is now, to compare with a trusted source's, as the agent may
	 * have replaced it already: hashed in place, no copy kept for a refusal. */
	struct stat st;
	char hex[65] = "(not read)";
	int fd = open_target(q, &st);
	if (fd >= 0) {
		if (hash_fd(fd, st.st_size, hex) < 0)
			snprintf(hex, sizeof(hex), "(not read)");
		close(fd);
	}
	snprintf(why, n,
	         "commands.rules[%zu] grants a secret to %s, which the agent could have replaced "
	         "(%s): install it where the agent's user cannot write, or pin it in the rule "
	         "(\"sha256\"): its sha256 is now %s; pin that only if it is the one its "
	         "publisher gives",
	         r->index, q->tg.resolved, how, hex);
	return EACCES;
}

void sup_grants_free(struct sup *u)
{
	for (size_t i = 0; i < RD_PINNED_KEEP; i++)
		if (u->pin.f[i].memfd >= 0)
			close(u->pin.f[i].memfd);
}

/* The view any rule's command may write in (the session's, with the agent's files). */
static const struct rd_view_paths *any_view(struct sup *u)
{
	return &u->s->any_rule;
}

/* Where commands can write at path: in a writable root of any rule's view, or at or under a
 * protected path that was missing at the session's start (rd_session.missing), which nothing
 * holds, so that a command may have made it since; or where another live session's commands
 * can (as sup_sessions_load found them for this exec). That root or path; NULL. */
static const char *writable(struct sup *u, const char *path)
{
	const char *root = rd_view_writable_root(any_view(u), path);
	for (size_t k = 0; !root && u->s->missing && k < u->s->missing->n; k++)
		if (rd_path_within(path, u->s->missing->v[k]))
			root = u->s->missing->v[k];
	/* Or where another session's commands can (supervisor/sessions.h). */
	return root ? root : sup_sessions_writable(u, path);
}

/* Is q's program git? */
static bool is_git(const struct req *q)
{
	const char *res = q->tg.resolved, *slash = res ? strrchr(res, '/') : NULL;
	return slash && strcmp(slash + 1, "git") == 0;
}

/* Was path one of the protected paths missing at the session's start (rd_session.missing),
 * which a command may have made since, and make or take away at any time? */
static bool missing_at_start(const struct sup *u, const char *path)
{
	for (size_t k = 0; u->s->missing && k < u->s->missing->n; k++)
		if (strcmp(u->s->missing->v[k], path) == 0)
			return true;
	return false;
}

/* Whether git (a .git directory) stays where it is until a granted git has started, in every
 * command's view, so that no command can rename it away and put a repository of its own in
 * its place between the check and git's start: outside the writable roots; on the way to a
 * protected path there at the start (protect() in sandbox/view.c binds every directory from
 * the deepest writable root down to it); or a writable root of the session's own (bound on
 * itself) whose directory is one too, or read-only (the workspace's .git: a mount point in a
 * mount point, neither of which can be renamed; a root of one rule's view alone is no mount
 * in the others'). */
static bool held_in_place(struct sup *u, const char *git)
{
	const struct rd_view_paths *v = any_view(u), *own = &u->s->view;
	if (!rd_view_writable_root(v, git))
		return true;
	for (size_t i = 0; i < v->n_protect; i++) {
		if (!rd_path_within(v->protect[i], git))
			continue;
		/* A protected path missing at the start bound nothing on its way. */
		if (!missing_at_start(u, v->protect[i]))
			return true;
	}
	char up[PATH_MAX];
	const char *slash = strrchr(git, '/');
	if (!slash || (size_t)snprintf(up, sizeof(up), "%.*s",
	                               slash == git ? 1 : (int)(slash - git), git) >= sizeof(up))
		return false;
	bool root = false, up_root = !rd_view_writable_root(v, up);
	for (size_t i = 0; i < own->n_write; i++) {
		root = root || strcmp(own->write[i], git) == 0;
		up_root = up_root || strcmp(own->write[i], up) == 0;
	}
	return root && up_root;
}

/* How much of a git configuration file runnerd reads: a larger one is refused. */
enum { CONFIG_MAX = 1 << 20 };

/* Does the configuration of the common directory common have git read a config.worktree
 * (extensions.worktreeConfig)? Read to refuse rather than let through
 * (rd_git_worktree_config_on); true where it cannot be read whole. */
static bool reads_worktree_config(const char *common)
{
	char p[PATH_MAX + 16];
	_cleanup_free_ char *buf = NULL;
	snprintf(p, sizeof(p), "%s/config", common);
	ssize_t len = rd_read_file(p, CONFIG_MAX, &buf);
	if (len < 0)
		return len != -ENOENT;
	return rd_git_worktree_config_on(buf, (size_t)len);
}

/* The value of NAME in q's environment, or NULL. */
static const char *env_of(const struct req *q, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < q->env.n_env; i++)
		if (strncmp(q->env.envp[i], name, len) == 0 && q->env.envp[i][len] == '=')
			return q->env.envp[i] + len + 1;
	return NULL;
}

/* Could a command decide what git reads at path (absolute) between this check and git's start?
 * Where resolving path, as the kernel does, meets a writable root: the file itself, or a part
 * that is missing there (a command can make it), or a symbolic link that lies there (a command
 * can turn it elsewhere); or a link runnerd cannot follow (a loop, one too long). True, with
 * the place into where (n bytes; where may be NULL, n 0). A part that is missing outside the
 * writable roots ends it: nothing is read there, and no command can make it. */
static bool path_open(struct sup *u, const char *path, char *where, size_t n)
{
	char cur[PATH_MAX] = "", next[PATH_MAX], target[PATH_MAX];
	char rest[2 * PATH_MAX + 2], joined[2 * PATH_MAX + 2];
	snprintf(where, n, "%s", path);
	if ((size_t)snprintf(rest, sizeof(rest), "%s", path) >= PATH_MAX)
		return true;
	for (int links = 0;;) {
		char *part = rest + strspn(rest, "/");
		size_t len = strcspn(part, "/");
		if (!len)
			break;
		bool dot = len == 1 && part[0] == '.', dotdot = len == 2 && !strncmp(part, "..", 2);
		/* ".." from a directory in a writable root: a command can make that a link after
		 * this check, and the kernel would go up from where it leads. */
		if (dotdot && cur[0] && writable(u, cur))
			return true;
		if (dotdot && strrchr(cur, '/'))
			*strrchr(cur, '/') = '\0';
		bool fits = dot || dotdot ||
		            (size_t)snprintf(next, sizeof(next), "%s/%.*s", cur, (int)len, part) <
		                sizeof(next);
		memmove(rest, part + len, strlen(part + len) + 1);
		if (!fits)
			return true;
		if (dot || dotdot)
			continue;
		struct stat st;
		if (lstat(next, &st) < 0) {
			snprintf(where, n, "%s", next);
			return writable(u, next) != NULL;
		}
		if (!S_ISLNK(st.st_mode)) {
			strcpy(cur, next);
			continue;
		}
		ssize_t tl = readlink(next, target, sizeof(target) - 1);
		snprintf(where, n, "%s", next);
		if (++links > 40 || tl <= 0 || writable(u, next))
			return true;
		target[tl] = '\0';
		if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", target, rest) >= sizeof(rest))
			return true;
		strcpy(rest, joined);
		if (target[0] == '/')
			cur[0] = '\0';
	}
	snprintf(where, n, "%s", cur[0] ? cur : "/");
	return writable(u, cur[0] ? cur : "/") != NULL;
}

/* A file that git's configuration at file includes (include.path, includeIf.*.path, as git
 * resolves them: "~/" from home, a relative one from file's directory) that lies where commands
 * can write, or is missing there (a command can make it), or includes more: into bad (n
 * bytes), true. The file read up to 1 MiB, a line at a time; a value with a quote or escape
 * git would read otherwise counts as bad too (whole, as a check that cannot miss one). */
static bool includes_writable(struct sup *u, const char *file, const char *home, bool nested,
                              char *bad, size_t n)
{
	_cleanup_free_ char *buf = NULL;
	ssize_t got = rd_read_file(file, CONFIG_MAX, &buf);
	if (got == -ENOENT)
		return false;
	if (got < 0) {
		snprintf(bad, n, "%s (which cannot be read whole)", file);
		return true;
	}
	size_t len = (size_t)got;
	/* What this reading does not follow as git would: a NUL (git reads past it), a lone
	 * carriage return, a line continued with a backslash. */
	bool odd = memchr(buf, '\0', len) != NULL;
	for (size_t i = 0; !odd && i < len; i++)
		odd = (buf[i] == '\r' && buf[i + 1] != '\n') ||
		      (buf[i] == '\\' && (buf[i + 1] == '\n' || buf[i + 1] == '\r'));
	if (odd) {
		snprintf(bad, n, "%s (a configuration runnerd does not read as git does)", file);
		return true;
	}
	bool in_include = false;
	char *start = buf + (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0);
	for (char *line = start, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *c = line + strspn(line, " \t\r");
		/* Headers, several on a line too ("[core][include]path=x"). */
		while (*c == '[') {
			size_t k = strcspn(c + 1, " \t\"]");
			in_include = (k == 7 && strncasecmp(c + 1, "include", 7) == 0) ||
			             (k == 9 && strncasecmp(c + 1, "includeif", 9) == 0);
			char *end = strchr(c, ']');
			if (!end)
				break;
			c = end + 1 + strspn(end + 1, " \t\r");
		}
		if (!in_include || strncasecmp(c, "path", 4) != 0)
			continue;
		c += 4 + strspn(c + 4, " \t");
		if (*c != '=')
			continue;
		c += 1 + strspn(c + 1, " \t");
		size_t vl = strcspn(c, "#;\r");
		while (vl && (c[vl - 1] == ' ' || c[vl - 1] == '\t'))
			vl--;
		c[vl] = '\0';
		if (nested || strpbrk(c, "\"\\") || (c[0] == '~' && c[1] != '/')) {
			snprintf(bad, n,
			         "%s (an include git would read otherwise, or in an include)",
			         file);
			return true;
		}
		char path[PATH_MAX], real[PATH_MAX], where[PATH_MAX];
		const char *slash = strrchr(file, '/');
		if (strncmp(c, "~/", 2) == 0)
			snprintf(path, sizeof(path), "%s/%s", home ? home : "", c + 2);
		else if (c[0] == '/')
			snprintf(path, sizeof(path), "%s", c);
		else
			snprintf(path, sizeof(path), "%.*s/%s", slash ? (int)(slash - file) : 0,
			         file, c);
		if (path_open(u, path, where, sizeof(where)))
			return snprintf(bad, n,
			                "%s, which leads through %s, where commands can write",
			                path, where) >= 0; /* (cut short where both are long) */
		if (realpath(path, real) && includes_writable(u, real, home, true, bad, n))
			return true;
	}
	return false;
}

/* For a .git that is a file (a linked worktree's, a submodule's): the directory it names (gd)
 * and that one's common directory (common), whose configuration, hooks and commondir git
 * reads, judged as the check judges a .git directory's; NULL, or what makes it one a command
 * could have turned (a worktree outside the workspace whose .git/worktrees/NAME/commondir, in
 * the workspace, a command rewrote to name a repository of its own). */
static const char *linked_repo(struct sup *u, const char *git, char *gd, char *common)
{
	char named[PATH_MAX], p[PATH_MAX + 32];
	if (!rd_git_dir_of(git, named, sizeof(named)) || !realpath(named, gd))
		return "is a file that names no git directory runnerd can follow";
	if (!rd_git_common_dir(gd, common, PATH_MAX))
		return "names a git directory whose commondir runnerd cannot follow";
	snprintf(p, sizeof(p), "%s/config", common);
	if (writable(u, p))
		return "names a repository whose configuration commands can write";
	snprintf(p, sizeof(p), "%s/hooks", common);
	if (writable(u, p))
		return "names a repository whose hooks commands can write";
	/* (The git directory itself may be a command's to swap, as .git/worktrees/NAME: git is
	 * told its common directory, and takes from it HEAD, the index, the logs, a
	 * config.worktree where the configuration says so (below), and refs, which git 2.39's
	 * files backend finds by its commondir file, not GIT_COMMON_DIR: data commands can
	 * write anyway, and nothing git runs.) */
	if (!held_in_place(u, common))
		return "names a common git directory that lies where commands can write, and is "
		       "not held in place";
	snprintf(p, sizeof(p), "%s/config.worktree", gd);
	if (reads_worktree_config(common) && writable(u, p))
		return "names a git directory whose config.worktree commands can write";
	return NULL;
}

/* What the hook at path (a file that leads nowhere commands can write) runs from where they
 * can, into buf (n bytes), with the fix in *fix, or NULL: a file on its #! line (the
 * interpreter, or a word after it: sh ./x, env -S ./x) by a relative path (git runs hooks in
 * the top of the work tree) or one that leads where commands can write (a bare name is looked
 * up on the pinned PATH); the hook manager that wrote it, which runs what the work tree's
 * configuration or node_modules names (the pre-commit framework's .pre-commit-config.yaml,
 * lefthook.yml, husky's .husky/, overcommit's .overcommit.yml, simple-git-hooks', yorkie's);
 * or a hook larger than runnerd reads. A hook that runs a file of the work tree by its own
 * code otherwise is not seen. */
static const char *hook_runs(struct sup *u, const char *path, const char *name, char *buf, size_t n,
                             const char **fix)
{
	static const char *const managers[] = {"pre-commit.com", "lefthook", "husky",
	                                       "overcommit",     "yorkie",   "simple-git-hooks",
	                                       "node_modules"};
	char text[65536], word[PATH_MAX], where[PATH_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t len = fd < 0 ? -1 : read(fd, text, sizeof(text));
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (len < 0 || (size_t)len == sizeof(text)) {
		if (len < 0)
			snprintf(buf, n, "has a hook, %s, runnerd cannot read (%s)", name,
			         strerror(e));
		else
			snprintf(buf, n, "has a hook, %s, larger than runnerd reads (64 KiB)",
			         name);
		*fix = "grant git only for subcommands that run no hook (match.args)";
		return buf;
	}
	text[len] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(managers); i++)
		if (memmem(text, (size_t)len, managers[i], strlen(managers[i]))) {
			snprintf(buf, n,
			         "has a hook, %s, of a hook manager (%s), which runs what the work "
			         "tree's configuration names",
			         name, managers[i]);
			*fix = "grant git only for subcommands that run no hook (match.args), or "
			       "take the hook manager out of that repository";
			return buf;
		}
	if (len < 2 || text[0] != '#' || text[1] != '!')
		return NULL;
	/* Each word of the #! line: the interpreter, and what the kernel passes it (env -S
	 * splits that again). */
	size_t line = strcspn(text, "\n");
	for (size_t at = 2; at < line;) {
		at += strspn(text + at, " \t\r");
		size_t wl = strcspn(text + at, " \t\r\n");
		if (!wl)
			break;
		snprintf(word, sizeof(word), "%.*s", (int)wl, text + at);
		at += wl;
		/* "-S./x", an option with a path after it: the path. */
		const char *w = word[0] == '-' ? word + strspn(word, "-") : word;
		if (w[0] == '-' || !strchr(w, '/'))
			w = strchr(w, '/');
		if (!w || (w[0] == '/' && !path_open(u, w, where, sizeof(where))))
			continue;
		snprintf(buf, n,
		         "has a hook, %s, whose #! line names %s, %s where commands can write",
		         name, word, w[0] != '/' ? "found in the work tree," : "which leads");
		*fix = "name the interpreter and what it runs outside the writable roots, by "
		       "absolute paths";
		return buf;
	}
	return NULL;
}

/* A hook in hooks (a repository's .git/hooks, protected) that runs what commands can write:
 * a symlink into the work tree, as projects install their hooks (.git/hooks/pre-commit ->
 * ../../scripts/pre-commit), which git follows and runs; a hard link (a name of the file may
 * lie in the work tree); or what hook_runs finds. What it says into buf (n bytes), with the
 * fix in *fix, or NULL if none. Templates (NAME.sample) git never runs. */
static const char *hook_open(struct sup *u, const char *hooks, char *buf, size_t n,
                             const char **fix)
{
	*fix = "put the hook's own file in .git/hooks (a link into the work tree runs what "
	       "commands write), or grant git only for subcommands that run no hook";
	DIR *d = opendir(hooks);
	if (!d && (errno == ENOENT || errno == ENOTDIR))
		return NULL;
	if (!d) {
		snprintf(buf, n, "has hooks runnerd cannot list (%s)", strerror(errno));
		return buf;
	}
	const char *what = NULL;
	size_t seen = 0;
	for (;;) {
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e) {
			if (errno) {
				snprintf(buf, n, "has hooks runnerd cannot list (%s)",
				         strerror(errno));
				what = buf;
			}
			break;
		}
		size_t len = strlen(e->d_name);
		char hook[PATH_MAX], where[PATH_MAX] = "";
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    (len > 7 && strcmp(e->d_name + len - 7, ".sample") == 0))
			continue;
		bool fits =
		    (size_t)snprintf(hook, sizeof(hook), "%s/%s", hooks, e->d_name) < sizeof(hook);
		if (++seen > 1024 || !fits) {
			snprintf(buf, n, "has %s than runnerd looks at",
			         fits ? "more hooks (1024)" : "a hook with a longer path");
			what = buf;
		} else if (path_open(u, hook, where, sizeof(where))) {
			snprintf(buf, n,
			         "has a hook, %s, that leads through %s, where commands can write",
			         e->d_name, where);
			what = buf;
		} else if (stat(hook, &st) < 0 || !S_ISREG(st.st_mode)) {
			/* Nothing git runs (gone since, or not a file). */
		} else if (st.st_nlink > 1) {
			snprintf(buf, n,
			         "has a hook, %s, with %ju names (a hard link: one may lie where "
			         "commands can write)",
			         e->d_name, (uintmax_t)st.st_nlink);
			what = buf;
		} else if (st.st_mode & 0111) {
			/* (git runs none that is not executable: a pre-commit.legacy the
			 * framework set aside, a README.) */
			what = hook_runs(u, hook, e->d_name, buf, n, fix);
		}
		if (what)
			break;
	}
	closedir(d);
	return what;
}

/* The git repository git would take for a command in dir: the nearest .git at or above it
 * (or a directory shaped as a bare repository on the way). Refused (why) when commands could
 * have written what git runs or reads from there. */
static int check_repo(struct sup *u, struct req *q, const char *dir, char *why, size_t n)
{
	const struct rd_rule *r = q->rule;
	char cur[PATH_MAX], git[PATH_MAX + 8];
	if (snprintf(cur, sizeof(cur), "%s", dir) >= (int)sizeof(cur))
		return 0;
	for (;;) {
		struct stat st;
		char sub[PATH_MAX + 32];
		/* A directory shaped as a bare repository (HEAD, objects, refs), which git takes
		 * where no .git it would take is found first: one commands could have made. */
		const char *top = strcmp(cur, "/") ? cur : "";
		snprintf(sub, sizeof(sub), "%s/HEAD", top);
		if (rd_git_bare_shaped(cur) && writable(u, sub)) {
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to a command run in %s, which "
			    "is shaped as a bare git repository (HEAD, objects, refs) where "
			    "commands can write: git may take it, with a configuration of a "
			    "command's; run the command elsewhere",
			    r->index, cur);
			return EACCES;
		}
		snprintf(git, sizeof(git), "%s/.git", top);
		if (lstat(git, &st) == 0) {
			const char *what = NULL;
			bool is_dir = S_ISDIR(st.st_mode);
			char gd[PATH_MAX + 8], common[PATH_MAX + 8], hookwhat[2 * PATH_MAX + 128];
			const char *hookfix = NULL;
			snprintf(gd, sizeof(gd), "%s", git);
			snprintf(common, sizeof(common), "%s", git);
			if (!is_dir) {
				if (writable(u, git))
					what = "is a file (or symlink) commands can write, which "
					       "names the repository git takes";
				else
					what = linked_repo(u, git, gd, common);
			} else {
				if (!held_in_place(u, git))
					what = "lies where commands can write, and is not held in "
					       "place: a command could put a repository of its own "
					       "there between this check and git's start";
				/* By where they lead, too (a hooks directory that is a link
				 * into /tmp, of a repository outside the writable roots). */
				static const char *const inside[] = {"hooks", "config"};
				for (size_t i = 0; !what && i < ARRAY_SIZE(inside); i++) {
					snprintf(sub, sizeof(sub), "%s/%s", git, inside[i]);
					if (path_open(u, sub, NULL, 0))
						what =
						    i == 0
						        ? "has hooks that commands can write"
						        : "has a configuration commands can write";
				}
				snprintf(sub, sizeof(sub), "%s/hooks", git);
				if (!what)
					what =
					    hook_open(u, sub, hookwhat, sizeof(hookwhat), &hookfix);
				snprintf(sub, sizeof(sub), "%s/commondir", git);
				if (!what && lstat(sub, &st) == 0)
					what = "has a commondir, which names another repository's "
					       "hooks and configuration";
				/* A config.worktree git reads that is missing: protected, but a
				 * missing one cannot be held, and a command can make it between
				 * this check and git's start. */
				snprintf(sub, sizeof(sub), "%s/config.worktree", git);
				bool wt = !what && reads_worktree_config(git);
				if (wt && (lstat(sub, &st) < 0 || missing_at_start(u, sub)))
					what = "has git read a .git/config.worktree "
					       "(extensions.worktreeConfig) that is missing, which "
					       "commands could make; make it (empty) before the "
					       "session";
				/* And one that is there, where commands can write (a repository
				 * whose hooks and config alone are protected). */
				else if (wt && writable(u, sub))
					what =
					    "has git read a .git/config.worktree "
					    "(extensions.worktreeConfig) that commands can write; "
					    "protect it (sandbox.protect)";
			}
			/* What the configuration includes (a project's include.path of a file in
			 * the work tree). */
			char inc[PATH_MAX + 128], incwhat[PATH_MAX + 256];
			snprintf(sub, sizeof(sub), "%s/config", is_dir ? git : common);
			if (!what &&
			    includes_writable(u, sub, env_of(q, "HOME"), false, inc, sizeof(inc))) {
				snprintf(incwhat, sizeof(incwhat),
				         "has a configuration that includes %s", inc);
				what = incwhat;
			}
			/* And its config.worktree's (extensions.worktreeConfig), where there is
			 * one. */
			snprintf(sub, sizeof(sub), "%s/config.worktree", gd);
			if (!what && lstat(sub, &st) == 0 &&
			    includes_writable(u, sub, env_of(q, "HOME"), false, inc, sizeof(inc))) {
				snprintf(incwhat, sizeof(incwhat),
				         "has a config.worktree that includes %s", inc);
				what = incwhat;
			}
			/* The work tree's .gitmodules, which commands can write: a submodule's
			 * ignore or fetchRecurseSubmodules there overrides the settings that keep
			 * a granted git out of submodules. */
			snprintf(sub, sizeof(sub), "%s/.gitmodules", top);
			if (!what && rd_git_modules_enter(sub))
				what =
				    "has a .gitmodules that has git go into a submodule (ignore "
				    "other than all, fetchRecurseSubmodules), whose configuration "
				    "and hooks commands can write";
			/* A HEAD git would not take: it would look further up, at what commands
			 * may have made (the workspace as a bare repository). */
			snprintf(sub, sizeof(sub), "%s/HEAD", gd);
			if (!what && !rd_git_head_valid(AT_FDCWD, sub, NULL, 0))
				what =
				    "has a HEAD git would not take, so that it would look further "
				    "up";
			q->git_top_dir = is_dir;
			if (!what && (!(q->git_top = strdup(cur)) || !(q->git_dir = strdup(gd)) ||
			              !(q->git_common = strdup(common)))) {
				snprintf(why, n,
				         "out of memory checking a granted command's repository");
				return ENOMEM;
			}
			if (!what)
				return 0;
			/* The fix: where hooks or a configuration commands write are the cause,
			 * protecting them (as the workspace's are); else another place. */
			bool protectable = strstr(what, "hooks that") ||
			                   strstr(what, "a configuration") ||
			                   strstr(what, "not held in place");
			const char *fix =
			    what == hookwhat ? hookfix
			    : protectable
			        ? "protect that repository's .git/hooks/ and .git/config "
			          "(sandbox.protect) from the session's start, or run the "
			          "command elsewhere"
			        : "run the command elsewhere, or where no secret is granted";
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to a command run in the git "
			    "repository %s%s%s%s, which %s: a command could have put code there "
			    "that git would run with the secret; %s",
			    r->index, git, is_dir ? "" : " (its common directory ",
			    is_dir ? "" : common, is_dir ? "" : ")", what, fix);
			return EACCES;
		}
		if (errno != ENOENT && errno != ENOTDIR) {
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to a command run in %s, where "
			    "%s cannot be looked at (%s), so its git repository cannot be checked",
			    r->index, dir, git, strerror(errno));
			return EACCES;
		}
		char *slash = strrchr(cur, '/');
		if (!slash || strcmp(cur, "/") == 0)
			return 0;
		slash[slash == cur] = '\0';
	}
}

/* The files of git's global configuration for q's environment, as git takes them:
 * GIT_CONFIG_GLOBAL, else ~/.gitconfig and $XDG_CONFIG_HOME/git/config (or
 * ~/.config/git/config), each absolute. Returns how many (at most 2); *relative is set where
 * HOME or XDG_CONFIG_HOME is not absolute (git then reads from the directory it works in). */
static size_t global_files(const struct req *q, char files[2][PATH_MAX], bool *relative)
{
	const char *home = env_of(q, "HOME"), *xdg = env_of(q, "XDG_CONFIG_HOME");
	const char *global = env_of(q, "GIT_CONFIG_GLOBAL");
	size_t k = 0;
	*relative = !global && ((home && home[0] != '/') || (xdg && xdg[0] != '/'));
	if (global) {
		if (global[0] == '/')
			snprintf(files[k++], PATH_MAX, "%s", global);
		return k;
	}
	if (home && home[0] == '/')
		snprintf(files[k++], PATH_MAX, "%s/.gitconfig", home);
	if (xdg && xdg[0] == '/')
		snprintf(files[k++], PATH_MAX, "%s/git/config", xdg);
	else if (home && home[0] == '/')
		snprintf(files[k++], PATH_MAX, "%s/.config/git/config", home);
	return k;
}

/* git's global configuration as the granted program's git reads it (~/.gitconfig,
 * $XDG_CONFIG_HOME/git/config, by their real paths: a symlink into a dotfiles repository in
 * the workspace, as stow makes them): refused (why) where it lies where commands can write,
 * or includes what does, else 0, with what was found in q->global_open and global_there for
 * global_config. One look: what it finds cannot change before git starts (a file there that
 * no command can reach, one missing where none can make it); one a command could make is left
 * out, whether it is there by then or not. */
static int global_config_writable(struct sup *u, struct req *q, char *why, size_t n)
{
	const char *home = env_of(q, "HOME");
	char files[2][PATH_MAX];
	bool relative;
	size_t k = global_files(q, files, &relative);
	for (size_t i = 0; i < k; i++) {
		char real[PATH_MAX], inc[PATH_MAX + 128];
		struct stat st;
		/* A link that leads nowhere: where it leads, a command may make the file. */
		bool there = realpath(files[i], real) != NULL;
		if (!there && lstat(files[i], &st) == 0) {
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to %s, whose git would read the "
			    "global configuration %s, a symlink that leads nowhere runnerd can "
			    "follow (a command could make what it names); remove it or make its "
			    "target",
			    q->rule->index, q->tg.resolved ? q->tg.resolved : q->path, files[i]);
			return EACCES;
		}
		/* Missing: one a command could make (where it can write, or a part on the way is
		 * missing there, or under a protected path missing at the start) is left out for
		 * git (global_config), were it there when git starts. */
		if (!there) {
			q->global_open[i] = path_open(u, files[i], NULL, 0);
			continue;
		}
		/* The file, and every link on the way to it (one a command can turn elsewhere
		 * after this check: a dotfiles repository of the workspace's, as stow makes them,
		 * whose link leads on outside). */
		char where[PATH_MAX];
		if (path_open(u, files[i], where, sizeof(where))) {
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to %s, whose git would read the "
			    "global configuration %s, which leads through %s, where commands can "
			    "write (a core.sshCommand there runs with the secret); keep it out of "
			    "the writable roots, or protect it (sandbox.protect)",
			    q->rule->index, q->tg.resolved ? q->tg.resolved : q->path, files[i],
			    where);
			return EACCES;
		}
		/* Read through the link, an include resolved from where git finds the file. */
		if (includes_writable(u, files[i], home, false, inc, sizeof(inc))) {
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to %s, whose git would read the "
			    "global configuration %s, which includes %s (a core.sshCommand there "
			    "runs with the secret); keep it out of the writable roots",
			    q->rule->index, q->tg.resolved ? q->tg.resolved : q->path, files[i],
			    inc);
			return EACCES;
		}
		q->global_there[i] = true;
	}
	return 0;
}

int sup_grant_reads(struct sup *u, struct req *q, char *why, size_t n)
{
	const struct rd_rule *r = q->rule;
	if (!r || !r->grants_secret)
		return 0;
	for (size_t i = 0; u->s->missing && i < u->s->missing->n; i++) {
		struct stat st;
		const char *p = u->s->missing->v[i];
		/* An inert one configures nothing, as it is now; but a command can still write it
		 * (it is held read-only from the next session on), and git would read hooks and
		 * configuration there after this check: none counts as inert inside a .git. */
		if (lstat(p, &st) < 0 || (!strstr(p, "/.git/") && rd_view_inert(p)))
			continue;
		snprintf(why, n,
		         "commands.rules[%zu] grants a secret to %s, and %s was made during this "
		         "session where commands could write it (it is protected, but was missing "
		         "at the start): the program could read it; check it, then start a new "
		         "session",
		         r->index, q->tg.resolved ? q->tg.resolved : q->path, p);
		return EACCES;
	}
	/* The caller's cwd, where the command runs (not snapshotted yet). */
	struct rd_error err = {0};
	char cwd[PATH_MAX], link[64];
	ssize_t len = -1;
	if (rd_task_cwd(&q->t, &err) == 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", q->t.cwd_fd);
		len = readlink(link, cwd, sizeof(cwd) - 1);
	}
	if (len <= 0 || cwd[0] != '/') {
		snprintf(
		    why, n,
		    "commands.rules[%zu] grants a secret to %s, run in a directory that cannot "
		    "be named (%s), so its git repository cannot be checked",
		    r->index, q->tg.resolved ? q->tg.resolved : q->path,
		    err.msg[0] ? err.msg : "not reachable from runnerd");
		return EACCES;
	}
	cwd[len] = '\0';
	int g = global_config_writable(u, q, why, n);
	if (g)
		return g;
	if (!(q->git_cwd = strdup(cwd))) {
		snprintf(why, n, "out of memory checking a granted command's repository");
		return ENOMEM;
	}
	return check_repo(u, q, cwd, why, n);
}

/* Does q's environment name a repository (GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR: the
 * agent's own, from its start)? */
static bool names_repo(const struct req *q)
{
	for (size_t i = 0; i < q->env.n_env; i++) {
		const char *e = q->env.envp[i];
		if (strncmp(e, "GIT_DIR=", 8) == 0 || strncmp(e, "GIT_WORK_TREE=", 14) == 0 ||
		    strncmp(e, "GIT_COMMON_DIR=", 15) == 0)
			return true;
	}
	return false;
}

/* The git a granted program that is not git would find first in dir (an entry of its PATH,
 * kept): its real path, if that is a program outside the writable roots; NULL if none, or
 * -ENOMEM in *e. *own says whether the agent's user could replace it (check_replaceable). */
static char *git_in(struct sup *u, const char *dir, bool *own, int *e)
{
	char real[PATH_MAX], why[PATH_MAX + 128];
	struct stat st;
	if (!rd_git_prog_at(dir, strlen(dir), real, &st) || writable(u, real))
		return NULL;
	*own = check_replaceable(real, st.st_dev, st.st_ino, why, sizeof(why)) != 0;
	char *r = strdup(real);
	if (!r)
		*e = -ENOMEM;
	return r;
}

/* A granted git takes the repository its check took, not one a command made since: a
 * .git/commondir written after the check (git would take hooks and configuration from the
 * directory it names), or a .git between the cwd and the checked top. GIT_DIR, GIT_WORK_TREE
 * and GIT_COMMON_DIR say which, or, with none found, GIT_DIR=/dev/null: no repository (as
 * git would have found; a bare one is refused anyway by safe.bareRepository=explicit). Not
 * for init, which makes the repository GIT_DIR names (clone is refused); not where the agent
 * started with one of the three (its own, kept by rd_grant_pinned_names). git hands them to its
 * hooks and aliases, as githooks(5) says it may: a hook that works in another repository clears
 * them first. Both get them as RUNNERD_GIT_DIR and so on too (with RUNNERD_GIT_TOP and
 * RUNNERD_GIT_ROOTS), for runnerd's gits (sandbox/view.c): git's own git, which runs the real
 * git (RUNNERD_GIT) only where git passes the same on, and for a granted program that is not
 * git, the git of RD_VIEW_BIN_DIR, first on its PATH, which tells the real git the repository
 * where the program started, but not where git clones, inits or is told another (git clone
 * refuses a GIT_WORK_TREE that is there; gh runs it). For a .git file, the directory it names
 * and its common directory, as the check took them. Returns 0 or -ENOMEM. */
static int pin_git_dir(struct sup *u, struct req *q, bool makes, const char *real_git)
{
	bool git = is_git(q);
	if ((git && makes) || (!git && !real_git) || names_repo(q))
		return 0;
	/* As RUNNERD_*, for runnerd's git and git's own git (sandbox/view.c), and for git itself
	 * as they are (git passes them on to what it runs in that repository). */
	_cleanup_free_ char *dir = NULL, *tree = NULL, *common = NULL, *at = NULL;
	if (q->git_top ? asprintf(&dir, "RUNNERD_GIT_DIR=%s", q->git_dir) < 0 ||
	                     asprintf(&tree, "RUNNERD_GIT_WORK_TREE=%s", q->git_top) < 0 ||
	                     asprintf(&common, "RUNNERD_GIT_COMMON_DIR=%s", q->git_common) < 0
	               : asprintf(&dir, "RUNNERD_GIT_DIR=/dev/null") < 0)
		return -ENOMEM;
	/* Where runnerd's git pins: the work tree; with none, the writable root of the session
	 * the program starts in (a mount, which no command can rename a directory out of), or
	 * where it starts, outside them. */
	const char *area = q->git_top;
	if (!area && q->git_cwd)
		area = rd_view_writable_root(&u->s->view, q->git_cwd);
	if (!area)
		area = q->git_cwd ? q->git_cwd : "/";
	if (asprintf(&at, "RUNNERD_GIT_TOP=%s", area) < 0)
		return -ENOMEM;
	/* And where commands can write (every rule's roots too, and those of the user's other
	 * live sessions, supervisor/sessions.h), one a line. */
	const struct rd_view_paths *v = any_view(u);
	_cleanup_free_ char *roots = NULL;
	size_t roots_len = 0;
	FILE *f = open_memstream(&roots, &roots_len);
	if (!f)
		return -ENOMEM;
	fputs("RUNNERD_GIT_ROOTS=", f);
	const char *sep = "";
	for (size_t i = 0; i < v->n_write; i++, sep = "\n")
		fprintf(f, "%s%s", sep, v->write[i]);
	/* An ended session writes nothing now (sup_sessions_writable judges its changes). */
	for (size_t p = 0; p < u->pe.n; p++) {
		const struct rd_strv *lists[] = {&u->pe.v[p].write, &u->pe.v[p].missing};
		for (size_t l = 0; !u->pe.v[p].ended && l < ARRAY_SIZE(lists); l++)
			for (size_t i = 0; i < lists[l]->n; i++, sep = "\n")
				fprintf(f, "%s%s", sep, lists[l]->v[i]);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	const char *const puts[] = {dir, tree, common, at, roots};
	for (size_t i = 0; i < ARRAY_SIZE(puts); i++)
		if (puts[i] &&
		    (rd_env_put(&q->env, puts[i]) < 0 ||
		     (git && i < 3 && rd_env_put(&q->env, puts[i] + sizeof("RUNNERD_") - 1) < 0)))
			return -ENOMEM;
	return 0;
}

/* s quoted as git quotes GIT_CONFIG_PARAMETERS: in ', with ' as '\''; appended to o. */
static char *quoted(char *o, const char *s)
{
	*o++ = '\'';
	for (const char *c = s; *c; c++)
		o = *c == '\'' ? stpcpy(o, "'\\''") : (*o = *c, o + 1);
	*o++ = '\'';
	*o = '\0';
	return o;
}

/* git's global configuration, ~/.gitconfig and $XDG_CONFIG_HOME/git/config, where one was
 * missing at the check and commands could make it (global_config_writable: a home in a
 * writable root, protected, but a missing file cannot be held, and one made between the check
 * and git's start would be read; missing by the path as git resolves it, a ~/.config that is
 * a link into the workspace, git/config missing there): git is told the one that is there
 * (GIT_CONFIG_GLOBAL), or none (/dev/null), which is what it would have read at the check.
 * Not where the agent set GIT_CONFIG_GLOBAL itself, but for a relative one, which git would
 * read in the directory it works in, or one missing where commands could make it: none,
 * then. */
static int global_config(struct req *q)
{
	char files[2][PATH_MAX];
	bool open;
	size_t n = global_files(q, files, &open);
	/* A relative GIT_CONFIG_GLOBAL: git reads it from the directory it works in, the
	 * commands' to write; an absolute one missing where a command could make it (one there
	 * that leads where commands can write was refused): none, for either. */
	if (env_of(q, "GIT_CONFIG_GLOBAL"))
		return !n || q->global_open[0]
		           ? (rd_env_put(&q->env, "GIT_CONFIG_GLOBAL=/dev/null") < 0 ? -ENOMEM : 0)
		           : 0;
	if (open)
		n = 0;
	const char *there = NULL;
	for (size_t i = 0; i < n; i++) {
		if (q->global_there[i])
			there = there ? there : files[i];
		open = open || q->global_open[i];
	}
	if (!open)
		return 0;
	_cleanup_free_ char *e = NULL;
	if (asprintf(&e, "GIT_CONFIG_GLOBAL=%s", there ? there : "/dev/null") < 0)
		return -ENOMEM;
	return rd_env_put(&q->env, e) < 0 ? -ENOMEM : 0;
}

/* Where the git at real (a real path: PREFIX/bin/git) finds the git it runs for itself (a
 * fetch's remote helper, a gc, a submodule's status): its exec path, compiled in,
 * PREFIX/lib/git-core (Debian's) or PREFIX/libexec/git-core (git's own default), which git puts
 * first on its children's PATH; and those of /usr and /usr/local, for a real that is a wrapper
 * of another git, or for a granted program that finds none on its PATH (real NULL: it may run
 * one by its full path). Each git there goes to q->gates, which the sandbox covers with git's
 * own git (sandbox/view.c, git_gate), and RUNNERD_GIT=real to q->env (without one, git's own
 * git runs nothing). For a program (not git itself), its git too, first: covered as well, and
 * bound at RD_VIEW_GIT_REAL, where runnerd's gits run it (RUNNERD_GIT names that, q->git_real),
 * so that the program's git by its full path meets them; with no git found on its PATH,
 * /usr/bin/git and /usr/local/bin/git, which git's own git then refuses to run. 0, -ENOMEM, or
 * EACCES and why: for a real, none there (runnerd could hold nothing git runs for itself);
 * beside real, a link (the cover would go over what it leads to); for git itself, real itself;
 * one where commands can write; a program's git that is no file runnerd can cover. */
static int gate_gits(struct sup *u, struct req *q, const char *real, bool program, char *why,
                     size_t n)
{
	const char *prog = q->tg.resolved ? q->tg.resolved : q->path;
	q->git_real = false;
	/* One the environment names (not hard-denied in this configuration) is not covered. */
	if (env_of(q, "GIT_EXEC_PATH")) {
		snprintf(why, n,
		         "commands.rules[%zu] grants a secret to %s with GIT_EXEC_PATH in its "
		         "environment, where git would find the git it runs for itself, which "
		         "runnerd does not cover; keep GIT_EXEC_PATH in hard_deny",
		         q->rule->index, prog);
		return EACCES;
	}
	/* Beside real, then where distributions and git's own install put it (real may be a
	 * wrapper, or a git of its own: those cover the git it runs). */
	static const char *const execs[] = {
	    "/lib/git-core",         "/libexec/git-core",       "/usr/lib/git-core",
	    "/usr/libexec/git-core", "/usr/local/lib/git-core", "/usr/local/libexec/git-core"};
	char prefix[PATH_MAX] = "", got[PATH_MAX];
	if (real)
		snprintf(prefix, sizeof(prefix), "%s", real);
	for (int up = 0; real && up < 2; up++) {
		char *slash = strrchr(prefix, '/');
		if (slash)
			*slash = '\0';
	}
	rd_strv_free(&q->gates);
	/* A program's git itself, and the usual ones (a program may hard-code /usr/bin/git with
	 * another git first on its PATH): a git it runs by its full path meets git's own git,
	 * which hands it to runnerd's git (where runnerd found one: run from RD_VIEW_GIT_REAL) or
	 * runs nothing. Not the usual ones where the program's git is a script (a wrapper of
	 * one of them: runnerd's git would run it, and it the covered one, for ever). */
	static const char *const bins[] = {NULL, "/usr/bin/git", "/usr/local/bin/git"};
	bool wrapper = false;
	if (program && real) {
		char head[4] = {0};
		int fd = open(real, O_RDONLY | O_CLOEXEC);
		wrapper = fd < 0 || read(fd, head, sizeof(head)) != sizeof(head) ||
		          memcmp(head, "\177ELF", 4) != 0;
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = real ? 0 : 1; program && i < (wrapper ? 1 : ARRAY_SIZE(bins)); i++) {
		struct stat st;
		if (!realpath(i ? bins[i] : real, got) || stat(got, &st) < 0 ||
		    !S_ISREG(st.st_mode)) {
			if (i)
				continue;
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to %s, which runs git %s, and "
			    "runnerd cannot cover that file: it keeps git in the repository the "
			    "grant's check took",
			    q->rule->index, prog, real);
			return EACCES;
		}
		bool listed = false;
		for (size_t k = 0; k < q->gates.n; k++)
			listed = listed || strcmp(q->gates.v[k], got) == 0;
		if (!listed && rd_strv_add(&q->gates, got) < 0)
			return -ENOMEM;
		q->git_real = real != NULL;
	}
	bool exec_path = false; /* a git found in an exec path (not the program's own) */
	for (size_t i = real ? 0 : 2; i < ARRAY_SIZE(execs); i++) {
		char g[PATH_MAX + 32];
		struct stat st;
		bool beside = i < 2, listed = false;
		snprintf(g, sizeof(g), "%s%s/git", beside ? prefix : "", execs[i]);
		const char *what = NULL;
		char err[128];
		if (lstat(g, &st) < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			snprintf(err, sizeof(err), "cannot be looked at (%s)", strerror(errno));
			what = err;
		} else if (S_ISLNK(st.st_mode)) {
			/* Not this git's (a distribution's own git may link it): none of its. */
			if (!beside)
				continue;
			what = "is a symlink, which runnerd cannot cover without covering what it "
			       "leads to";
		} else if (!S_ISREG(st.st_mode) || !realpath(g, got)) {
			what = "is not a file runnerd can cover";
		} else if (!program && real && strcmp(got, real) == 0) {
			what = "is the git the rule grants the secret to";
		} else if (writable(u, got)) {
			what = "lies where commands can write";
		}
		if (what) {
			snprintf(
			    why, n,
			    "commands.rules[%zu] grants a secret to %s, whose git's own git %s %s: "
			    "git would run it for itself with the secret; install git where its "
			    "exec path holds a git of its own",
			    q->rule->index, prog, g, what);
			return EACCES;
		}
		for (size_t k = 0; k < q->gates.n; k++)
			listed = listed || strcmp(q->gates.v[k], got) == 0;
		if (!listed && rd_strv_add(&q->gates, got) < 0)
			return -ENOMEM;
		exec_path = true;
	}
	if (!real)
		return 0;
	if (!exec_path) {
		snprintf(
		    why, n,
		    "commands.rules[%zu] grants a secret to %s, and runnerd finds no git in the "
		    "exec path of git %s (%s/lib/git-core, %s/libexec/git-core, or those of "
		    "/usr and /usr/local), which it covers with one that runs only in the "
		    "repository it checked (a submodule's git would take a configuration "
		    "commands can write)",
		    q->rule->index, prog, real, prefix, prefix);
		return EACCES;
	}
	_cleanup_free_ char *e = NULL;
	if (asprintf(&e, "RUNNERD_GIT=%s", q->git_real ? RD_VIEW_GIT_REAL : real) < 0 ||
	    rd_env_put(&q->env, e) < 0)
		return -ENOMEM;
	return 0;
}

int sup_grant_env(struct sup *u, struct req *q, char *why, size_t n)
{
	if (!q->rule || !q->rule->grants_secret)
		return 0;
	const char *path = NULL;
	for (size_t i = 0; i < q->env.n_env; i++)
		if (strncmp(q->env.envp[i], "PATH=", 5) == 0)
			path = q->env.envp[i] + 5;
	/* The git a program that is not git finds on that PATH (pin_git_dir): the first that
	 * the agent's user cannot replace, else the first (which the program would run
	 * anyway: as root, every file is the agent's to replace). Never one a caller names. */
	rd_env_drop_prefix(&q->env, "RUNNERD_GIT");
	_cleanup_free_ char *real_git = NULL, *own_git = NULL;
	bool other = !is_git(q) && !names_repo(q);
	if (path) {
		_cleanup_free_ char *out =
		    malloc(strlen(path) + sizeof(RD_VIEW_BIN_DIR) + sizeof(RD_VIEW_EMPTY_DIR) + 6);
		if (!out)
			return -ENOMEM;
		char *o = stpcpy(out, "PATH=");
		char *first = o;
		for (const char *e = path; *e;) {
			size_t len = strcspn(e, ":");
			char dir[PATH_MAX];
			/* Relative and empty entries are the cwd's: dropped too. */
			bool keep = len && e[0] == '/' && len < sizeof(dir);
			if (keep) {
				memcpy(dir, e, len);
				dir[len] = '\0';
				/* As git would reach it, a part at a time (a symlink on the way
				 * may lead into a writable root, or lie in one, which a command
				 * can turn after this check); one that is not there, or cannot be
				 * followed, is left out. */
				keep = access(dir, F_OK) == 0 && !writable(u, dir) &&
				       !path_open(u, dir, NULL, 0);
			}
			if (keep) {
				if (o[-1] != '=')
					*o++ = ':';
				memcpy(o, e, len);
				o += len;
			}
			if (keep && other && !real_git) {
				bool own = false;
				int err = 0;
				char *g = git_in(u, dir, &own, &err);
				if (err)
					return err;
				if (g && !own)
					real_git = g;
				else if (g && !own_git)
					own_git = g;
				else
					free(g);
			}
			e += len + (e[len] == ':');
		}
		*o = '\0';
		/* A directory left out for another session's commands is no refusal to explain. */
		u->pe.hit = false;
		if (!real_git)
			real_git = steal_pointer(&own_git);
		/* None kept: an empty PATH has execvp, bash and Python search the cwd. */
		if (!real_git && !*first)
			strcpy(first, RD_VIEW_EMPTY_DIR);
		/* runnerd's git first, for a program that is not git. */
		if (real_git) {
			size_t len = strlen(first);
			memmove(first + sizeof(RD_VIEW_BIN_DIR), first, len + 1);
			memcpy(first, RD_VIEW_BIN_DIR, sizeof(RD_VIEW_BIN_DIR) - 1);
			first[sizeof(RD_VIEW_BIN_DIR) - 1] = len ? ':' : '\0';
		}
		if (rd_env_put(&q->env, out) < 0)
			return -ENOMEM;
	}
	/* git itself, or the real git runnerd's git runs for a program: git's own git over its
	 * exec path. Their scripts need /bin/sh: without it, git would run what it runs for
	 * itself unchecked, and a program that searches PATH on, the real git told nothing. */
	const char *runs = is_git(q) ? q->tg.resolved : real_git;
	if (runs && access("/bin/sh", X_OK) < 0) {
		snprintf(why, n,
		         "commands.rules[%zu] grants a secret to %s, which runs git %s, and there "
		         "is no /bin/sh for runnerd's git, which keeps git in the repository the "
		         "grant's check took: refused",
		         q->rule->index, q->tg.resolved ? q->tg.resolved : q->path, runs);
		return EACCES;
	}
	int r = gate_gits(u, q, runs, !is_git(q), why, n);
	if (r)
		return r;
	if (global_config(q) < 0)
		return -ENOMEM;
	/* And git goes into no other repository of the workspace's (a submodule, a gitlink to
	 * one a command made: its configuration's fsmonitor would run), runs no fsmonitor,
	 * takes hooks from the repository's own .git/hooks, whatever core.hooksPath says (one
	 * that points into the workspace takes hooks commands can write), and takes no bare
	 * repository it is not told of (a command that garbles .git/HEAD after the check would
	 * have it take the workspace as one of the command's). */
	static const char params[] =
	    "GIT_CONFIG_PARAMETERS='core.fsmonitor'='false' 'submodule.recurse'='false' "
	    "'diff.ignoreSubmodules'='all' 'status.submoduleSummary'='false' "
	    "'fetch.recurseSubmodules'='false' 'push.recurseSubmodules'='no' "
	    "'safe.bareRepository'='explicit'";
	/* The hooks: by an absolute path, the checked repository's .git/hooks, protected (a
	 * relative one names the hooks of the repository git works in, as a clone's new one,
	 * which a command can write before git runs post-checkout there; one the configuration
	 * names, as husky's .husky/_, runs files of the work tree that commands write); none for
	 * git init (clone is refused), in no repository, or one whose .git is a file. */
	const char *sub = rd_git_subcommand(q->strs.argv, q->strs.argc);
	bool makes = is_git(q) && sub && (strcmp(sub, "init") == 0 || strcmp(sub, "init-db") == 0);
	if (pin_git_dir(u, q, makes, real_git) < 0)
		return -ENOMEM;
	const char *top = q->git_top && strcmp(q->git_top, "/") ? q->git_top : "";
	_cleanup_free_ char *hooks = NULL;
	if (q->git_top && q->git_top_dir && !makes ? asprintf(&hooks, "%s/.git/hooks", top) < 0
	                                           : !(hooks = strdup("/dev/null")))
		return -ENOMEM;
	_cleanup_free_ char *all = malloc(sizeof(params) + 4 * strlen(hooks) + 20);
	if (!all)
		return -ENOMEM;
	quoted(stpcpy(stpcpy(all, params), " 'core.hooksPath'="), hooks);
	if (rd_env_put(&q->env, all) < 0)
		return -ENOMEM;
	/* Nor a repository above the one its check took, where a command could have made one
	 * since (with HEAD garbled in between, git would look further up). */
	char *slash = q->git_top ? strrchr(q->git_top, '/') : NULL;
	if (slash && slash != q->git_top) {
		_cleanup_free_ char *ceiling = NULL;
		if (asprintf(&ceiling, "GIT_CEILING_DIRECTORIES=%.*s", (int)(slash - q->git_top),
		             q->git_top) < 0 ||
		    rd_env_put(&q->env, ceiling) < 0)
			return -ENOMEM;
	}
	/* No module of the directory it works in for a Python program git runs (a filter,
	 * "python3 -m nbstripout", run in the top of the work tree, the commands' to write), and
	 * no shell escape from git's pager; runnerd's git sets them for a program's git. */
	if (is_git(q) && (rd_env_put(&q->env, "PYTHONSAFEPATH=1") < 0 ||
	                  rd_env_put(&q->env, "LESSSECURE=1") < 0))
		return -ENOMEM;
	return rd_env_put(&q->env, "GIT_ALLOW_PROTOCOL=https:http:ssh:git");
}
