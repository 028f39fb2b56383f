/* runnerd [--config F] --profile P [--audit FILE] [-v] -- AGENT [ARGS...]: run the agent under
 * the exec filter and supervise every command it starts. */
#include "intercept/filter.h"
#include "intercept/launcher.h"
#include "lib/file.h"
#include "lib/passwd.h"
#include "lib/syscalls.h"
#include "policy/envpolicy.h"
#include "policy/rules.h"
#include "runnerd/agent_env.h"
#include "runnerd/agent_path.h"
#include "runnerd/cli.h"
#include "runnerd/preflight.h"
#include "runnerd/repo.h"
#include "runnerd/serve.h"
#include "supervisor/audit.h"
#include "supervisor/sessions.h"
#include "supervisor/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

extern char **environ;

/* /proc/PID/environ shows the original env block (env_start..env_end of /proc/PID/stat), not
 * environ: clearenv() alone would hide nothing. Zero the block in place. A sandbox's reaper is
 * a clone of runnerd-zygote, which has no environment; but without the zygote, runnerd forks
 * reapers itself, and this keeps /proc/1/environ inside those sandboxes empty too. */
static int scrub_environ(void)
{
	char buf[2048];
	_cleanup_close_ int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
	if (!p)
		return -EIO;
	/* After ")": field 3 is the state; arg_start, arg_end, env_start and env_end are fields
	 * 48 to 51. */
	unsigned long arg_start = 0, arg_end = 0, start = 0, end = 0;
	int field = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
		field++;
		if (field == 48)
			arg_start = strtoul(tok, NULL, 10);
		else if (field == 49)
			arg_end = strtoul(tok, NULL, 10);
		else if (field == 50)
			start = strtoul(tok, NULL, 10);
		else if (field == 51)
			end = strtoul(tok, NULL, 10);
	}
	if (!start || end <= start || !arg_start || arg_end <= arg_start)
		return -EIO;
	explicit_bzero((void *)start, end - start);
	/* The command line too, all but argv[0]: it holds the agent's arguments, which a
	 * sandbox's pid 1 forked from runnerd (without the zygote) would otherwise show in
	 * /proc/1/cmdline. Called
	 * once the arguments are parsed and copied. */
	size_t first = strnlen((const char *)arg_start, arg_end - arg_start) + 1;
	if (first < arg_end - arg_start)
		explicit_bzero((void *)(arg_start + first), arg_end - arg_start - first);
	static char *empty[] = {NULL};
	environ = empty;
	return 0;
}

/* A helper program of runnerd's (name): next to the binary, or in ../libexec/runnerd/. */
static char *helper_path(const char *name)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	*slash = '\0';
	char *cand = NULL;
	static const char *const rel[] = {"", "../libexec/runnerd/"};
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
		if (asprintf(&cand, "%s/%s%s", exe, rel[i], name) < 0)
			return NULL;
		if (access(cand, F_OK) == 0)
			return cand;
		free(cand);
	}
	return NULL;
}

/* One of runnerd's helper programs, opened read-only from next to the binary: refused if
 * others could have rewritten it (it runs outside any sandbox). Its size in *size. */
static int open_helper(const char *name, off_t *size, struct rd_error *err)
{
	_cleanup_free_ char *path = helper_path(name);
	if (!path)
		return rd_error_set(err, ENOENT,
		                    "%s not found next to the runnerd binary (nor in "
		                    "../libexec/runnerd/): reinstall runnerd",
		                    name);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return rd_error_set(err, errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()))
		return rd_error_set(err, EPERM,
		                    "%s: must be a regular file owned by root or by you and not "
		                    "writable by others",
		                    path);
	*size = st.st_size;
	return steal_fd(&fd);
}

/* The stub runs inside every caller, outside any sandbox: what callers exec must be exactly
 * what runnerd read at startup. A command could otherwise rewrite the file (the caller's own
 * user may own it) between two handoffs, and dev+ino would not notice. So the stub is copied
 * into a memfd sealed against every change, reopened read-only (an exec refuses a file that
 * is open for writing), and that is what runnerd injects and checks at each exec event. The
 * copy is only as good as the file: one that others could have rewritten before runnerd
 * started is refused. */
static int open_stub(struct rd_error *err)
{
	off_t size = 0;
	_cleanup_close_ int src = open_helper("runnerd-stub", &size, err);
	if (src < 0)
		return src;
	if (size <= 0 || size > (1 << 20))
		return rd_error_set(err, EINVAL, "runnerd-stub: not a plausible stub");
	_cleanup_close_ int mfd = memfd_create("runnerd-stub", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return rd_error_set(err, errno, "memfd_create: %s", strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(src, buf, sizeof(buf))) > 0)
		if (write(mfd, buf, (size_t)n) != n)
			return rd_error_set(err, EIO, "copying the stub: %s", strerror(errno));
	if (n < 0)
		return rd_error_set(err, errno, "reading runnerd-stub: %s", strerror(errno));
	if (fchmod(mfd, 0555) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return rd_error_set(err, errno, "sealing the stub: %s", strerror(errno));
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", mfd);
	int ro = open(self, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		return rd_error_set(err, errno, "reopening the stub: %s", strerror(errno));
	return ro;
}

/* runnerd-zygote, which clones the sandboxes' reapers (sandbox/zygote.h): -1 if it is not
 * there, and then runnerd forks each sandbox itself. It runs outside any sandbox, with
 * runnerd's credentials, exec'd once at startup from this fd. */
static int open_zygote(struct rd_error *err)
{
	off_t size;
	return open_helper("runnerd-zygote", &size, err);
}

/* The agent died by a signal: so does runnerd, so that whoever started runnerd sees what it
 * would have seen without it. No core file: the crash was the agent's, not ours. */
static void die_by(int sig)
{
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(sig, SIG_DFL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
}

static void session_id(char out[33])
{
	uint8_t b[16] = {0};
	if (getrandom(b, sizeof(b), 0) != sizeof(b)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		memcpy(b, &ts, sizeof(ts) < sizeof(b) ? sizeof(ts) : sizeof(b));
	}
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* mkdir -p, each missing directory with mode. */
static int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		if (!(*s = c))
			return 0;
	}
}

/* Should the missing writable root p (under home) be made, as its tool would make it: one in
 * a tool's directory that exists (~/.cargo/registry where ~/.cargo is), or the caches almost
 * every tool uses (~/.cache, the XDG cache directory, and ~/.npm). A tool the user never ran
 * gets nothing made in the home. */
static bool make_root(const char *home, const char *p)
{
	const char *top = p + strlen(home) + 1;
	size_t n = strcspn(top, "/");
	if ((n == 6 && strncmp(top, ".cache", 6) == 0) || (n == 4 && strncmp(top, ".npm", 4) == 0))
		return true;
	_cleanup_free_ char *dir = strndup(p, (size_t)(top - p) + n);
	struct stat st;
	return dir && top[n] && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whose session it is: runnerd's own user, or for runnerd serve the client's, whose home is
 * looked up in the container's /etc/passwd alone (lib/passwd.h). */
static struct {
	uid_t uid;
	gid_t gid;
	bool served;
	char home[4096];
} who;

/* The lock on this session's layers (make_layers), held while it lives; -1: none. */
static int layers_lock = -1;

/* Every rule's own writable roots (protect: what stays read-only in them), appended to write.
 * 0 or -ENOMEM. */
static int rule_writes(const struct rd_config *cfg, const struct rd_profile *prof,
                       const struct rd_strv *protect, struct rd_strv *write)
{
	int r = 0;
	for (size_t i = 0; r == 0 && who.home[0] && i < prof->n_rules; i++) {
		const struct rd_rule *rule = &prof->rules[i];
		if (!rule->box.list[RD_BOX_WRITE].n)
			continue;
		struct rd_strv w = {0}, p = {0};
		r = rd_rule_view_lists(cfg, prof, rule, protect->v, protect->n, who.home, who.uid,
		                       &w, &p);
		for (size_t k = 0; r == 0 && k < w.n; k++)
			r = rd_strv_add(write, w.v[k]);
		rd_strv_free(&w);
		rd_strv_free(&p);
	}
	return r;
}

/* Where the commands of any rule may write: the session's roots and every rule's own, with
 * what stays read-only in all of them (the session's protected paths and the agent's files,
 * which every rule's view keeps read-only too). Appended to write and protect. */
static int any_rule_view(const struct rd_config *cfg, const struct rd_profile *prof,
                         const struct rd_view_paths *session, const struct rd_strv *agent_paths,
                         struct rd_strv *write, struct rd_strv *protect)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < session->n_protect; i++)
		r = rd_strv_add(protect, session->protect[i]);
	for (size_t i = 0; r == 0 && i < agent_paths->n; i++)
		r = rd_strv_add(protect, agent_paths->v[i]);
	for (size_t i = 0; r == 0 && i < session->n_write; i++)
		r = rd_strv_add(write, session->write[i]);
	/* The caches, which commands write through their layers: what lies there may be a
	 * command's, to the commands after it. */
	for (size_t i = 0; r == 0 && i < session->n_layers; i++)
		r = rd_strv_add(write, session->layers[2 * i]);
	/* The session's own /dev/shm, which every sandbox shares (sandbox/view.c). */
	if (r == 0)
		r = rd_strv_add(write, "/dev/shm");
	if (r == 0)
		r = rule_writes(cfg, prof, protect, write);
	return r;
}

/* What the user's other live sessions hold read-only to their commands (their protected
 * paths: the .git/hooks and .git/config of their workspaces, ...), held read-only to this
 * one's too where its writable roots hold them: else a command of this session could write
 * the hooks a granted git of theirs runs, once it has checked them (supervisor/sessions.h).
 * Appended to protect. Read under the start's lock (sup_sessions_start). */
static int peers_protect(const struct rd_strv *write, struct rd_strv *protect)
{
	struct peers pe = {0};
	sup_sessions_read(NULL, &pe);
	int r = -pe.err;
	for (size_t p = 0; r == 0 && p < pe.n; p++)
		for (size_t i = 0; r == 0 && !pe.v[p].ended && i < pe.v[p].protect.n; i++) {
			const char *path = pe.v[p].protect.v[i];
			if (rd_strv_within(write, path) && !rd_strv_within(protect, path))
				r = rd_strv_add(protect, path);
		}
	sup_sessions_peers_free(&pe);
	return r;
}

/* path's directory entries but "." and "..", counted; -errno if it cannot be read. */
static long count_entries(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	long n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static size_t depth(const char *path)
{
	size_t n = 0;
	for (; *path; path++)
		n += *path == '/';
	return n;
}

static int deeper_first(const void *a, const void *b)
{
	size_t x = depth(*(char *const *)a), y = depth(*(char *const *)b);
	return (x < y) - (x > y);
}

/* For a masked path m that is not there: the real path of the nearest directory above it that
 * is, in dir; *own: that directory is m's own. 0, or -1 where none is (or it is "/"). */
static int missing_parent(const char *m, char dir[PATH_MAX], bool *own)
{
	char up[PATH_MAX];
	struct stat st;
	snprintf(up, sizeof(up), "%s", m);
	*own = true;
	for (char *slash; (slash = strrchr(up, '/')) && slash != up; *own = false) {
		*slash = '\0';
		if (stat(up, &st) == 0)
			return S_ISDIR(st.st_mode) && realpath(up, dir) && strcmp(dir, "/") ? 0
			                                                                    : -1;
		if (errno != ENOENT)
			return -1;
	}
	return -1;
}

/* The directories of the session's masked paths that the view holds as its own (view.h,
 * shadow; the masks no rule adds): of its files and directories, and for a masked path missing
 * at the start, the nearest directory above it that is there. Those in the caller's home,
 * read-only to every command (in no writable root of the session's or of any rule's, nor a
 * cache), not under a masked directory, with at most RD_VIEW_SHADOW_MAX entries (runnerd says
 * so of one with more); in shadow, deepest first. In hidden, the masked files in them, with no
 * exception inside (a masked file that is a symlink at the start: where it leads, as the mask
 * is pinned), and the masked directories by their name alone. */
static int shadow_lists(const struct rd_config *cfg, const struct rd_profile *prof,
                        const struct rd_view_paths *view, const struct rd_view_paths *any,
                        const char *env_home, struct rd_strv *shadow, struct rd_strv *hidden)
{
	char home[PATH_MAX], other[PATH_MAX];
	struct rd_strv masks = {0}, big = {0}; /* big: the directories too large to hold */
	/* The home of the password database, and the HOME runnerd started with, where the agent's
	 * tools keep their files when it is another (a container's ENV HOME, a CI's): "~/" masks
	 * go under both (rd_mask_list). Not "/": its entries are the machine's. */
	if (!who.home[0] || !realpath(who.home, home) || strcmp(home, "/") == 0)
		home[0] = '\0';
	if (!env_home || env_home[0] != '/' || !realpath(env_home, other) ||
	    strcmp(other, "/") == 0)
		other[0] = '\0';
	if (!home[0] && !other[0])
		return 0;
	if (rd_mask_list(cfg, prof, NULL, who.home, who.uid, &masks) < 0)
		return -ENOMEM;
	int r = 0;
	/* First the files, which make their directories shadows; then every other masked path
	 * in one of those, hidden there too (one made later is not shown). */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; r == 0 && i < masks.n; i++) {
			const char *m = masks.v[i];
			struct stat st;
			char dir[PATH_MAX], file[PATH_MAX * 2];
			bool directory = false;
			if (m[0] != '/')
				continue;
			/* Where the mask goes: a symlink's target (pinned), else the path in its
			 * directory's real path. */
			int at = lstat(m, &st);
			if (at < 0 && errno == ENOENT) {
				/* Nothing yet: made during the session (a login beside it), it
				 * would show in the sandboxes running then, were the directory it
				 * is made in theirs. So its nearest directory that is there is a
				 * shadow; the name itself hidden in it, if that is its own
				 * directory. */
				bool own;
				if (pass == 1 || missing_parent(m, dir, &own) < 0)
					continue;
				const char *name = strrchr(m, '/') + 1;
				snprintf(file, sizeof(file), "%s/%s", strcmp(dir, "/") ? dir : "",
				         own ? name : ".");
				/* Whether a file or a directory will be made is not known: hidden
				 * as a file's name, which hides a directory by that name alone
				 * (rd_view_hidden). */
			} else if (at == 0 && S_ISLNK(st.st_mode)) {
				if (!realpath(m, file) || stat(file, &st) < 0 ||
				    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
					continue;
				directory = S_ISDIR(st.st_mode);
			} else {
				/* A file or a directory makes its directory a shadow: a mount on
				 * either is taken off, in the sandboxes running, when it is removed
				 * or renamed over (a store set up anew: rm -rf ~/.aws, aws
				 * configure). A socket, or what runnerd cannot look at: its mask
				 * alone, unless another makes its directory a shadow (below,
				 * hidden). */
				bool there = lstat(m, &st) == 0,
				     regular = there && S_ISREG(st.st_mode);
				directory = there && S_ISDIR(st.st_mode);
				if (!regular && !directory && pass == 0)
					continue;
				const char *slash = strrchr(m, '/');
				char up[PATH_MAX];
				snprintf(up, sizeof(up), "%.*s", slash == m ? 1 : (int)(slash - m),
				         m);
				if (!realpath(up, dir))
					continue;
				snprintf(file, sizeof(file), "%s/%s", strcmp(dir, "/") ? dir : "",
				         slash + 1);
			}
			const char *slash = strrchr(file, '/');
			snprintf(dir, sizeof(dir), "%.*s", slash == file ? 1 : (int)(slash - file),
			         file);
			/* In the home as the mask names it, wherever a symlink on the way leads
			 * (a dotfiles manager's ~/.config): there it is held, unless "/". */
			bool in = (home[0] &&
			           (rd_path_within(dir, home) || rd_path_within(m, who.home))) ||
			          (other[0] &&
			           (rd_path_within(dir, other) || rd_path_within(m, env_home)));
			bool skip = !in || strcmp(dir, "/") == 0 ||
			            rd_view_writable_root(view, dir) ||
			            rd_view_writable_root(any, dir) || stat(dir, &st) < 0 ||
			            !S_ISDIR(st.st_mode);
			for (size_t k = 0; !skip && k < masks.n; k++) {
				const char *o = masks.v[k];
				struct stat ost;
				if (o[0] == '!' && rd_path_within(o + 1, file))
					skip = true; /* an exception inside: the mask knows it */
				else if (o[0] == '/' && rd_path_within(dir, o) &&
				         stat(o, &ost) == 0 && S_ISDIR(ost.st_mode))
					skip = true; /* under a masked directory */
			}
			if (skip)
				continue;
			bool listed = rd_strv_contains(shadow, dir);
			if (!listed && pass == 1)
				continue;
			if (!listed) {
				/* Judged once: said once. */
				if (rd_strv_contains(&big, dir))
					continue;
				long n = count_entries(dir);
				if (n < 0)
					continue;
				if (n > RD_VIEW_SHADOW_MAX) {
					r = rd_strv_add(&big, dir);
					fprintf(stderr,
					        "runnerd: %s holds %ld entries, more than the %d "
					        "runnerd holds in the commands' view: its masked "
					        "files are masked where they are, and one written "
					        "there later (made, or renamed over) shows in "
					        "the sandboxes running then\n",
					        dir, n, RD_VIEW_SHADOW_MAX);
					continue;
				}
				r = rd_strv_add(shadow, dir);
			}
			/* A directory's name alone (sandbox/view.h, rd_view_hidden). */
			size_t flen = strlen(file);
			if (flen >= 2 && strcmp(file + flen - 2, "/.") == 0)
				continue; /* a directory on its way, made later: no name hidden */
			if (directory && flen + 1 < sizeof(file))
				memcpy(file + flen, "/", 2);
			if (r == 0 && !rd_strv_contains(hidden, file))
				r = rd_strv_add(hidden, file);
		}
	/* And every directory above a shadow, up to the home: one removed and made again (rm -rf
	 * ~/.docker, then a login) takes the zygote's shadow with it, and a command running then
	 * would see the new one where its directory above is the real one. runnerd refuses the
	 * commands after (rd_shadow_watch_gone); the running ones keep the directory as it was. */
	for (size_t i = 0; r == 0 && i < shadow->n; i++) {
		char up[PATH_MAX];
		snprintf(up, sizeof(up), "%s", shadow->v[i]);
		for (char *slash; r == 0 && (slash = strrchr(up, '/')) && slash != up;) {
			*slash = '\0';
			bool in = (home[0] && rd_path_within(up, home)) ||
			          (other[0] && rd_path_within(up, other));
			if (!in || rd_view_writable_root(view, up) ||
			    rd_view_writable_root(any, up) || rd_strv_contains(&big, up))
				break;
			if (rd_strv_contains(shadow, up))
				continue;
			long n = count_entries(up);
			if (n < 0 || n > RD_VIEW_SHADOW_MAX)
				break;
			r = rd_strv_add(shadow, up);
		}
	}
	rd_strv_free(&masks);
	rd_strv_free(&big);
	/* Deepest first: a shadow above holds a copy of the one below. */
	if (r == 0 && shadow->n)
		qsort(shadow->v, shadow->n, sizeof(*shadow->v), deeper_first);
	/* The files of their owner's alone there now, after a '=': one written again during the
	 * session is shown as it is then, where a new one is shown empty (view.c, new_private). */
	for (size_t i = 0; r == 0 && i < shadow->n; i++) {
		DIR *d = opendir(shadow->v[i]);
		for (struct dirent *e; r == 0 && d && (e = readdir(d));) {
			struct stat st;
			char *held = NULL;
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode) || (st.st_mode & 077))
				continue;
			if (asprintf(&held, "=%s/%s", strcmp(shadow->v[i], "/") ? shadow->v[i] : "",
			             e->d_name) < 0)
				r = -ENOMEM;
			else
				r = rd_strv_take(hidden, held);
		}
		if (d)
			closedir(d);
	}
	return r;
}

static int make_layers(const struct rd_strv *caches, const struct rd_strv *write,
                       const char *session, struct rd_strv *layers, char **layers_dir);
static int remove_path(const char *path);

/* A protected path that is missing, made: a directory (empty), or an empty file (a
 * placeholder), whose own directory is made too if that is missing where the one above it is
 * there. No symlink on the way, nothing replaced; what cannot be made stays missing. */
static void make_missing(const char *path, bool dir)
{
	_cleanup_free_ char *up = strdup(path);
	char *slash = up ? strrchr(up, '/') : NULL;
	if (!slash || slash == up)
		return;
	*slash = '\0';
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	                       .resolve = RESOLVE_NO_SYMLINKS};
	int fd = rd_openat2(AT_FDCWD, up, &how);
	char *above = strrchr(up, '/');
	if (fd < 0 && errno == ENOENT && !dir && above && above != up) {
		*above = '\0';
		int afd = rd_openat2(AT_FDCWD, up, &how);
		*above = '/';
		if (afd >= 0 && mkdirat(afd, above + 1, 0755) == 0)
			fd = openat(afd, above + 1, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (afd >= 0)
			close(afd);
	}
	if (fd < 0)
		return;
	int f =
	    dir ? mkdirat(fd, slash + 1, 0755)
	        : openat(fd, slash + 1, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (!dir && f >= 0)
		close(f);
	close(fd);
}

/* Where commands may write (sandbox/view.h), for this session: the config's lists for this
 * user, and runnerd's own files read-only again if they lie in a writable root. A writable
 * root or cache that is missing under the home is made when make_root says so, so that its
 * tool finds it; a missing protected directory or placeholder is made (make_missing), so that
 * no command can make it; the caches get their layers (make_layers). One with a symlink on the
 * way stays read-only, and runnerd says so. The protected paths still missing go to missing. */
static int view_lists(const struct rd_config *cfg, const struct rd_profile *prof,
                      const char *workspace, const char *session, struct rd_strv *write,
                      struct rd_strv *protect, struct rd_strv *missing, struct rd_strv *layers,
                      char **layers_dir, struct rd_error *err)
{
	if (!who.home[0])
		return rd_error_set(err, ENOENT,
		                    "uid %u has no home directory in the password database%s, so "
		                    "\"~/\" paths of write and protect mean nothing",
		                    (unsigned)who.uid,
		                    who.served ? " (the container's /etc/passwd)" : "");
	const char *home = who.home;
	struct rd_strv notes = {0};
	__attribute__((cleanup(rd_strv_free))) struct rd_strv dirs = {0};
	__attribute__((cleanup(rd_strv_free))) struct rd_strv caches = {0};
	__attribute__((cleanup(rd_strv_free))) struct rd_strv files = {0};
	if (rd_view_lists(cfg, prof, home, who.uid, write, protect, &dirs, &files, &caches,
	                  &notes) < 0)
		return rd_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < notes.n; i++)
		fprintf(stderr, "runnerd: %s\n", notes.v[i]);
	rd_strv_free(&notes);
	/* A workspace whose .git is a file (a worktree's, a submodule's): the file names the
	 * repository git takes, hooks and all, so it stays read-only too. */
	_cleanup_free_ char *dotgit = NULL;
	struct stat gst;
	if (asprintf(&dotgit, "%s/.git", strcmp(workspace, "/") ? workspace : "") > 0 &&
	    lstat(dotgit, &gst) == 0 && !S_ISDIR(gst.st_mode) && rd_strv_within(write, dotgit) &&
	    !rd_strv_within(protect, dotgit) && rd_strv_add(protect, dotgit) < 0)
		return rd_error_set(err, ENOMEM, "out of memory");
	if (!write->n)
		fprintf(stderr,
		        "runnerd: %s sets no sandbox.write (nor the profile commands.write): "
		        "commands can write nowhere\n",
		        cfg->path);
	/* The workspace's .git, and its objects and refs, each a writable root of its own,
	 * bound on itself: a mount point cannot be renamed or removed, so no command can make git
	 * skip .git (which it does without objects or refs) and take, further up, a repository of
	 * the command's. Written in as before. */
	static const char *const pinned[] = {"", "/objects", "/refs"};
	for (size_t i = 0; dotgit && rd_strv_within(write, dotgit) && i < ARRAY_SIZE(pinned); i++) {
		_cleanup_free_ char *d = NULL;
		struct stat pst;
		if (asprintf(&d, "%s%s", dotgit, pinned[i]) < 0)
			return rd_error_set(err, ENOMEM, "out of memory");
		if (lstat(d, &pst) == 0 && S_ISDIR(pst.st_mode) && rd_strv_add(write, d) < 0)
			return rd_error_set(err, ENOMEM, "out of memory");
	}
	/* Where the user's git takes the workspace repository's hooks, when that lies where
	 * commands can write and is not protected (husky's core.hooksPath, .husky/_, which it
	 * keeps out of git status): commands write it through a layer of the session's, as they
	 * write the caches, so that nothing they put there runs in the user's git outside, and
	 * husky's own install still works. Made, empty, when missing. (runnerd serve: the
	 * container's git is not the host's to run.) */
	if (!who.served) {
		/* Not a git any rule's commands could have put there either (a rule that may
		 * write ~/go/bin, on PATH before /usr/bin). */
		__attribute__((cleanup(rd_strv_free))) struct rd_strv any = {0};
		for (size_t i = 0; i < write->n; i++)
			if (rd_strv_add(&any, write->v[i]) < 0)
				return rd_error_set(err, ENOMEM, "out of memory");
		if (rule_writes(cfg, prof, protect, &any) < 0)
			return rd_error_set(err, ENOMEM, "out of memory");
		rd_repo_find_git(&any, home);
	}
	_cleanup_free_ char *hooks = who.served ? NULL : rd_repo_hooks_dir(workspace);
	if (hooks && (!rd_strv_within(write, hooks) || rd_strv_within(protect, hooks) ||
	              rd_strv_within(&caches, hooks))) {
		free(hooks);
		hooks = NULL;
	}
	if (hooks) {
		make_missing(hooks, true);
		if (rd_strv_add(&caches, hooks) < 0)
			return rd_error_set(err, ENOMEM, "out of memory");
		/* And each directory between its writable root and it bound on itself, so that
		 * none can be renamed away with the layer and made anew (as for a protected
		 * path). */
		const char *root = rd_strv_within(write, hooks);
		size_t rlen = root ? strlen(root) : 0;
		for (char *s = hooks + rlen; root && (s = strchr(s + 1, '/'));) {
			*s = '\0';
			struct stat hst;
			int r = lstat(hooks, &hst) == 0 && S_ISDIR(hst.st_mode) &&
			                !rd_strv_within(protect, hooks)
			            ? rd_strv_add(write, hooks)
			            : 0;
			*s = '/';
			if (r < 0)
				return rd_error_set(err, ENOMEM, "out of memory");
		}
	}
	/* runnerd serve is root of the machine: the directories it makes for a client are made
	 * with the client's own rights, and are the client's (a symlink the client planted on
	 * the way takes them nowhere it could not write itself). */
	if (who.served) {
		setfsgid(who.gid);
		setfsuid(who.uid);
	}
	size_t home_len = strlen(home);
	for (size_t i = 0; i < write->n; i++) {
		const char *p = write->v[i];
		if (strncmp(p, home, home_len) == 0 && p[home_len] == '/' && access(p, F_OK) < 0 &&
		    errno == ENOENT && make_root(home, p))
			(void)mkdir_p(p, 0700);
		struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
		int fd = rd_openat2(AT_FDCWD, p, &how);
		if (fd >= 0)
			close(fd);
		else if (errno == ELOOP)
			fprintf(
			    stderr,
			    "runnerd: write %s: a symlink on the way, which a command could have "
			    "planted: commands cannot write there (name the real path in "
			    "\"write\")\n",
			    p);
	}
	for (size_t i = 0; i < caches.n; i++) {
		const char *p = caches.v[i];
		if (strncmp(p, home, home_len) == 0 && p[home_len] == '/' && access(p, F_OK) < 0 &&
		    errno == ENOENT && make_root(home, p))
			(void)mkdir_p(p, 0700);
	}
	/* Without layers (a read-only home, as a --read-only container's) the caches stay
	 * read-only: commands that write them fail, and runnerd says why. */
	int lr = make_layers(&caches, write, session, layers, layers_dir);
	if (lr < 0 && *layers_dir) {
		(void)remove_path(*layers_dir);
		free(*layers_dir);
		*layers_dir = NULL;
	}
	if (lr == -ENOMEM) {
		if (who.served) {
			setfsuid(geteuid());
			setfsgid(getegid());
		}
		return rd_error_set(err, ENOMEM, "out of memory");
	}
	if (lr < 0) {
		fprintf(stderr,
		        "runnerd: the caches' layers cannot be made under %s/.local/state/runnerd "
		        "(%s): the caches stay read-only to commands\n",
		        home, strerror(-lr));
		rd_strv_free(layers);
		*layers = (struct rd_strv){0};
	}
	/* Hooks that got no layer (no layers at all, a symlink on the way) are read-only. */
	bool layered = false;
	for (size_t i = 0; hooks && i < layers->n; i += 2)
		layered = layered || strcmp(layers->v[i], hooks) == 0;
	if (hooks && !layered) {
		fprintf(stderr,
		        "runnerd: git takes the workspace's hooks from %s, where commands could "
		        "write: it is read-only to them this session\n",
		        hooks);
		if (rd_strv_add(protect, hooks) < 0)
			return rd_error_set(err, ENOMEM, "out of memory");
	}
	/* A protected directory (written with a "/" at its end) that is missing is made, empty,
	 * where the directory above it is there: git's hooks where .git is a directory, an
	 * agent's project configuration (.codex, .gemini, ...); and a placeholder, empty (0 bytes:
	 * it sets nothing), as Claude Code's own sandbox makes its own. No command can make them
	 * then, and git shows no empty directory as a change. */
	for (size_t i = 0; i < dirs.n; i++)
		make_missing(dirs.v[i], true);
	for (size_t i = 0; i < files.n; i++)
		make_missing(files.v[i], false);
	/* And a rule's own protected directories, which hold in its command's sandbox only: a
	 * rule that keeps npm's install scripts out of {workspace}/.github/ must find it there,
	 * else the command could make it. */
	for (size_t i = 0; i < prof->n_rules; i++) {
		const struct rd_strv *l = &prof->rules[i].box.list[RD_BOX_PROTECT];
		for (size_t k = 0; k < l->n; k++) {
			_cleanup_free_ char *d = rd_box_path(l->v[k], home, who.uid);
			size_t n = d ? strlen(d) : 0;
			if (n < 2 || d[n - 1] != '/')
				continue;
			d[n - 1] = '\0';
			/* In a root of the session's, or of the rule's own. */
			bool in = d[0] == '/' && rd_strv_within(write, d);
			const struct rd_strv *w = &prof->rules[i].box.list[RD_BOX_WRITE];
			for (size_t j = 0; !in && d[0] == '/' && j < w->n; j++) {
				_cleanup_free_ char *root = rd_box_path(w->v[j], home, who.uid);
				in = root && rd_path_within(d, root);
			}
			if (in)
				make_missing(d, true);
		}
	}
	if (who.served) {
		setfsuid(geteuid());
		setfsgid(getegid());
	}
	/* runnerd's own install (the directories of its binaries) and configuration (its config
	 * file, not the directory: that may be a project's, and its profiles). */
	_cleanup_free_ char *stub = helper_path("runnerd-stub");
	_cleanup_free_ char *zygote = helper_path("runnerd-zygote");
	const char *own[] = {"/proc/self/exe", stub, zygote, cfg->path, cfg->profiles_dir};
	/* (runnerd serve: those are the host's, out of a container's sight.) */
	for (size_t i = 0; !who.served && i < ARRAY_SIZE(own); i++) {
		_cleanup_free_ char *real = own[i] ? realpath(own[i], NULL) : NULL;
		struct stat st;
		if (real && own[i] != cfg->path && stat(real, &st) == 0 && !S_ISDIR(st.st_mode))
			*strrchr(real, '/') = '\0';
		/* Also outside the session's roots: a rule's own root may hold it. */
		if (real && *real && !rd_strv_within(protect, real) &&
		    rd_strv_add(protect, real) < 0)
			return rd_error_set(err, ENOMEM, "out of memory");
	}
	/* A protected path that is missing cannot be held read-only: a command may create it (a
	 * .mcp.json, a ~/.bash_profile, the .git/hooks of a repository it makes). runnerd looks
	 * again before each grant and when the session ends (report_created). Said at the start
	 * too, where the directory above it is there, when the home is writable (a workspace at
	 * or above it), where those are many and the fix is plain. */
	_cleanup_free_ char *listed = NULL;
	size_t mlen = 0;
	bool home_writable = rd_strv_within(write, home) != NULL;
	for (size_t i = 0; i < protect->n; i++) {
		struct stat st;
		const char *p = protect->v[i];
		if (!rd_strv_within(write, p))
			continue;
		/* A symlink where a path is held read-only cannot be held (a command may have
		 * planted it to turn the path elsewhere): no sandbox could be made, so no session
		 * starts. */
		int l = lstat(p, &st);
		if (l == 0 && S_ISLNK(st.st_mode))
			return rd_error_set(
			    err, ELOOP,
			    "%s is a symlink, where runnerd holds a path read-only "
			    "(sandbox.protect): a command may have planted it; remove "
			    "it, or protect the path it leads to",
			    p);
		if (l == 0 || errno != ENOENT)
			continue;
		if (rd_strv_add(missing, p) < 0)
			return rd_error_set(err, ENOMEM, "out of memory");
		_cleanup_free_ char *dir = strdup(p);
		if (!dir)
			return rd_error_set(err, ENOMEM, "out of memory");
		*strrchr(dir, '/') = '\0';
		if (!home_writable || stat(*dir ? dir : "/", &st) < 0)
			continue;
		char *more = realloc(listed, mlen + strlen(p) + 3);
		if (!more)
			return rd_error_set(err, ENOMEM, "out of memory");
		listed = more;
		mlen += (size_t)sprintf(listed + mlen, "%s%s", mlen ? ", " : "", p);
	}
	if (listed)
		fprintf(stderr,
		        "runnerd: protected but missing, inside a writable root, so commands can "
		        "create them: %s (create them, or start runnerd in the project rather than "
		        "above it)\n",
		        listed);
	return 0;
}

static int remove_tree(int at, const char *name);

/* The caches' layers (sandbox/view.h): for each cache there (found without a symlink on the
 * way), a directory of this session's under ~/.local/state/runnerd/layers with "upper" and
 * "work" in it, into layers as the pair (cache, directory); *layers_dir the session's
 * directory, removed when the session ends (remove_layers). Layers of runnerd sessions that
 * are gone are removed first. A cache that holds the layers' directory gets none: it stays
 * read-only, and runnerd says so. Returns 0 or -errno. */
static int make_layers(const struct rd_strv *caches, const struct rd_strv *write,
                       const char *session, struct rd_strv *layers, char **layers_dir)
{
	if (!caches->n)
		return 0;
	_cleanup_free_ char *top = NULL;
	if (asprintf(&top, "%s/.local/state/runnerd/layers", who.home) < 0)
		return -ENOMEM;
	int r = mkdir_p(top, 0700);
	if (r < 0)
		return r;
	/* Those of sessions that are gone: "PID-SESSION", beside PID-SESSION.lock, which its
	 * runnerd holds while it lives (lib/file.h, rd_lock_take): its pid may be of another pid
	 * namespace (a container that shares the home), where it names another process here. A
	 * directory with no lock beside it (made by a runnerd before these locks) goes by its
	 * pid. */
	_cleanup_close_ int tfd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = tfd < 0 ? NULL : fdopendir(dup(tfd));
	for (struct dirent *de; d && (de = readdir(d));) {
		char *end, lock[NAME_MAX + 8];
		long pid = strtol(de->d_name, &end, 10);
		size_t len = strlen(de->d_name);
		/* (A lock being taken, ".lock.new", is left: one lost to a crash is 0 bytes.) */
		if (pid <= 0 || *end != '-' || (len > 4 && !strcmp(de->d_name + len - 4, ".new")))
			continue;
		if (len > 5 && strcmp(de->d_name + len - 5, ".lock") == 0) {
			int fd = openat(tfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			int held = fd < 0 ? -errno : rd_lock_held(fd);
			if (fd >= 0)
				close(fd);
			snprintf(lock, sizeof(lock), "%.*s", (int)(len - 5), de->d_name);
			if (held == 0 && remove_tree(tfd, lock) == 0)
				(void)unlinkat(tfd, de->d_name, 0);
			continue;
		}
		snprintf(lock, sizeof(lock), "%s.lock", de->d_name);
		if (faccessat(tfd, lock, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		    kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			(void)remove_tree(tfd, de->d_name);
	}
	if (d)
		closedir(d);
	_cleanup_free_ char *lock = NULL, *taking = NULL;
	if (asprintf(layers_dir, "%s/%d-%s", top, (int)getpid(), session) < 0 ||
	    asprintf(&lock, "%s.lock", *layers_dir) < 0 || asprintf(&taking, "%s.new", lock) < 0)
		return -ENOMEM;
	/* Held before it has its name, and before the directory is made: no one ever finds the
	 * lock there and not held, nor the directory without it. */
	layers_lock = open(taking, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (layers_lock < 0)
		return -errno;
	if ((r = rd_lock_take(layers_lock)) < 0 || (r = rename(taking, lock) < 0 ? -errno : 0) < 0)
		return r;
	if (mkdir(*layers_dir, 0700) < 0)
		return -errno;
	for (size_t i = 0; i < caches->n; i++) {
		const char *p = caches->v[i];
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		                       .resolve = RESOLVE_NO_SYMLINKS};
		int fd = rd_openat2(AT_FDCWD, p, &how);
		if (fd < 0) {
			if (errno == ELOOP)
				fprintf(stderr,
				        "runnerd: cache %s: a symlink on the way, which a command "
				        "could "
				        "have planted: it stays read-only (name the real path in "
				        "\"cache\")\n",
				        p);
			continue;
		}
		close(fd);
		if (rd_path_within(*layers_dir, p) || rd_strv_within(write, *layers_dir)) {
			fprintf(
			    stderr,
			    "runnerd: cache %s holds runnerd's layers (%s), or commands can write "
			    "them: it stays read-only\n",
			    p, *layers_dir);
			continue;
		}
		_cleanup_free_ char *dir = NULL, *upper = NULL, *work = NULL;
		if (asprintf(&dir, "%s/%zu", *layers_dir, layers->n / 2) < 0 ||
		    asprintf(&upper, "%s/upper", dir) < 0 || asprintf(&work, "%s/work", dir) < 0)
			return -ENOMEM;
		if (mkdir(dir, 0700) < 0 || mkdir(upper, 0700) < 0 || mkdir(work, 0700) < 0)
			return -errno;
		if (rd_strv_add(layers, p) < 0 || rd_strv_add(layers, dir) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* name in dirfd and all under it, as its owner may: a directory it cannot read (overlayfs
 * leaves its work directory mode 0) is given its owner's rights first. */
static int remove_tree(int at, const char *name)
{
	if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(at, name, 0700, 0) == 0)
		fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			(void)remove_tree(dirfd(d), de->d_name);
	closedir(d);
	return unlinkat(at, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* path (absolute) and all under it (remove_tree). */
static int remove_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *up = slash ? strndup(path, (size_t)(slash - path)) : NULL;
	if (!up)
		return -ENOMEM;
	_cleanup_close_ int fd =
	    open(*up ? up : "/", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : remove_tree(fd, slash + 1);
}

/* The session's layers, when it ends: what commands wrote to the caches goes with them. */
static void remove_layers(const char *layers_dir)
{
	if (!layers_dir)
		return;
	if (who.served) {
		setfsgid(who.gid);
		setfsuid(who.uid);
	}
	int r = remove_path(layers_dir);
	if (r < 0)
		fprintf(stderr, "runnerd: removing the caches' layers %s: %s\n", layers_dir,
		        strerror(-r));
	/* Its lock, once they are gone (else the next session removes them). */
	_cleanup_free_ char *lock = NULL;
	if (r == 0 && asprintf(&lock, "%s.lock", layers_dir) > 0)
		(void)unlink(lock);
	if (layers_lock >= 0)
		close(layers_lock);
	layers_lock = -1;
	if (who.served) {
		setfsuid(geteuid());
		setfsgid(getegid());
	}
}

/* The protected paths that were missing when the session started (view_lists) and are there
 * now: a command may have made one (or the agent, which runnerd cannot tell apart), and what
 * runs later outside the sandbox reads it. Said on stderr and in the audit log, once, when the
 * session ends. One in a .git directory (a commondir, which turns git to another repository's
 * hooks) is moved aside as well, to NAME.runnerd-RANDOM: only git writes there, and git
 * makes no such file in a repository's own .git. */
static void report_created(const struct rd_strv *missing, struct rd_audit *audit)
{
	for (size_t i = 0; i < missing->n; i++) {
		struct stat st;
		const char *p = missing->v[i];
		if (lstat(p, &st) < 0 || rd_view_inert(p))
			continue;
		char aside_buf[PATH_MAX + 64];
		const char *aside = NULL;
		bool in_git = strstr(p, "/.git/") != NULL;
		/* A name of its own, that no command could take first. */
		int mr = in_git ? rd_move_aside(p, aside_buf, sizeof(aside_buf)) : 0;
		bool moved = in_git && mr == 0;
		if (moved)
			aside = aside_buf;
		errno = -mr;
		if (in_git && !moved) {
			fprintf(
			    stderr,
			    "runnerd: %s was made during this session, where commands could write "
			    "it, and cannot be moved aside (%s): remove it before git runs in that "
			    "repository again; git takes hooks or configuration from it\n",
			    p, strerror(errno));
		} else if (in_git) {
			fprintf(
			    stderr,
			    "runnerd: %s was made during this session, where commands could write "
			    "it, and git takes hooks or configuration from it: moved aside to %s "
			    "(check it, and move it back if it is yours)\n",
			    p, aside);
		} else {
			fprintf(
			    stderr,
			    "runnerd: %s was made during this session, where commands could write "
			    "it; it is read-only to commands from the next session on: check it "
			    "before an agent or a tool reads it\n",
			    p);
		}
		(void)rd_audit(audit, "protected_created",
		               json_pack("{s:o, s:o}", "path", rd_json_bytes(p), "moved_to",
		                         aside ? rd_json_bytes(aside) : json_null()));
	}
}

/* The agent's env: the agent level of the policy, plus runnerd's own session variables
 * (replacing any the operator's shell had); and in *secrets what it stripped as secrets, whose
 * values no command gets under any name. Copies: the source block is about to be zeroed. */
static char **agent_env(const struct rd_config *cfg, const struct rd_profile *prof,
                        const char *session, struct rd_strv *secrets, struct rd_error *err)
{
	struct rd_env_result res;
	if (rd_env_build(&cfg->env, prof, RD_ENV_AGENT, NULL, environ, &res, err) < 0)
		return NULL;
	if (rd_env_secret_entries(&res, secrets) < 0) {
		rd_env_result_free(&res);
		rd_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	char **out = calloc(res.n_env + 3, sizeof(char *));
	size_t n = 0;
	bool ok = out != NULL;
	for (size_t i = 0; ok && i < res.n_env; i++) {
		if (strncmp(res.envp[i], "RUNNERD_SESSION=", 16) == 0 ||
		    strncmp(res.envp[i], "RUNNERD_PROFILE=", 16) == 0)
			continue;
		ok = (out[n++] = strdup(res.envp[i])) != NULL;
	}
	if (ok)
		ok = asprintf(&out[n++], "RUNNERD_SESSION=%s", session) >= 0 &&
		     asprintf(&out[n++], "RUNNERD_PROFILE=%s", prof->name) >= 0;
	rd_env_result_free(&res);
	if (!ok) {
		rd_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	return out;
}

/* --prompt reads answers from the terminal, where a command can type with TIOCSTI unless its
 * seccomp profile refuses that or the kernel allows it only to CAP_SYS_ADMIN. A command under
 * "seccomp": "none" could then answer an ask: refuse the combination. */
static int prompt_injectable(const struct rd_config *cfg, const struct rd_profile *prof,
                             struct rd_error *err)
{
	char v = '1';
	int fd = open("/proc/sys/dev/tty/legacy_tiocsti", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &v, 1) != 1)
			v = '1';
		close(fd);
	}
	if (v == '0')
		return 0;
	for (size_t i = 0; i <= prof->n_rules; i++) {
		const struct rd_rule *r = i < prof->n_rules ? &prof->rules[i] : NULL;
		if (r ? r->action == RD_ACTION_DENY : prof->commands_default == RD_ACTION_DENY)
			continue;
		struct rd_box_opts box = rd_box_resolve(cfg, prof, r);
		if (!rd_box_is(&box, RD_BOX_SECCOMP, RD_SECCOMP_NONE))
			continue;
		if (r)
			return rd_error_set(
			    err, EPERM,
			    "--prompt: commands.rules[%zu] of profile %s runs commands "
			    "with \"seccomp\": \"none\", which could type an answer "
			    "into the terminal (TIOCSTI; dev.tty.legacy_tiocsti is not "
			    "0): answer with runnerd approve instead",
			    r->index, prof->name);
		return rd_error_set(
		    err, EPERM,
		    "--prompt: profile %s runs commands with \"seccomp\": \"none\", "
		    "which could type an answer into the terminal (TIOCSTI; "
		    "dev.tty.legacy_tiocsti is not 0): answer with runnerd approve "
		    "instead",
		    prof->name);
	}
	return 0;
}

static void free_env(char **env)
{
	for (char **e = env; e && *e; e++) {
		explicit_bzero(*e, strlen(*e));
		free(*e);
	}
	free(env);
}

/* runnerd -- AGENT, or with ss one session of runnerd serve (runnerd/serve.h). */
static int run(struct rd_cli *cli, int argc, char **argv, struct rd_serve_session *ss)
{
	struct rd_config cfg = {0};
	struct rd_profile prof = {0};
	struct rd_error err = {0};
	struct rd_audit audit = {.fd = -1};
	struct rd_bpf filter = {0};
	struct rd_repo_start repo_start = {0};
	struct rd_session s = {.cfg = &cfg,
	                       .prof = &prof,
	                       .audit = &audit,
	                       .stub_fd = -1,
	                       .zygote_fd = -1,
	                       .control_fd = -1,
	                       .tty_fd = -1};
	char *control_dir = NULL;
	char **env = NULL;
	struct rd_strv secrets = {0}, write = {0}, protect = {0}, missing = {0}, layers = {0},
	               agent_paths = {0}, any_write = {0}, any_protect = {0}, shadow = {0},
	               hidden = {0};
	char *workspace = NULL, *layers_dir = NULL;
	struct sup_listed listed = {.fd = -1};
	int start_lock[SUP_SESSIONS_BASES] = {-1, -1}; /* held until this session is listed */
	char *agent = NULL;
	char **agent_argv = NULL;
	char *launched = NULL;
	int ret = 125;
	struct rd_preflight pf;
	bool probing = false; /* pf's probes started, not waited for */

	if (argc < 1) {
		fprintf(stderr, "runnerd: no agent to run after \"--\"\n");
		return 2;
	}
	if (!cli->profile) {
		fprintf(stderr, "runnerd: --profile is required to run an agent (see runnerd check "
		                "for the profiles)\n");
		return 2;
	}
	bool started = false; /* runnerd serve: the client was told to start the agent */
	if (rd_cli_load_config(cli, &cfg) < 0) {
		if (ss)
			rd_agent_refuse_remote(
			    ss->sock, EINVAL,
			    "the host's runnerd configuration does not load (see "
			    "runnerd serve's log)");
		return 125;
	}
	if (rd_profile_load(&cfg, cli->profile, &prof, &err) < 0)
		goto fail;
	char *session = s.session;
	session_id(session);
	const struct rd_rule *asks = NULL;
	for (size_t i = 0; !asks && i < prof.n_rules; i++)
		if (prof.rules[i].action == RD_ACTION_ASK)
			asks = &prof.rules[i];
	/* The control socket: for approvals, and for runnerd ps. A profile that asks cannot do
	 * without it; any other session runs on without, and says so. */
	if (!(control_dir = rd_control_dir(&err)) ||
	    (s.control_fd = rd_control_listen(control_dir, session, &s.control_path, &err)) < 0) {
		if (asks) {
			rd_error_prefix(
			    &err,
			    "profile %s asks for approval (commands.rules[%zu]), but no "
			    "control socket can be made: ",
			    prof.name, asks->index);
			goto fail;
		}
		fprintf(stderr, "runnerd: runnerd ps will not list this session: %s\n", err.msg);
		rd_error_clear(&err);
	}
	if (cli->prompt && prompt_injectable(&cfg, &prof, &err) < 0)
		goto fail;
	if (cli->prompt) {
		s.tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (s.tty_fd < 0) {
			rd_error_set(
			    &err, errno,
			    "--prompt: cannot open /dev/tty (%s): runnerd has no controlling "
			    "terminal to ask on",
			    strerror(errno));
			goto fail;
		}
	}
	/* What runnerd needs of the kernel, tried before the agent exists (the probes run while
	 * runnerd goes on with its start): where a sandbox cannot be made (a container's
	 * defaults, a sysctl), one message with the cause and the fix, rather than every command
	 * failing later. */
	int pr = ss ? 1 : rd_preflight_start(&pf);
	probing = pr == 0;
	if (pr < 0) {
		rd_error_set(&err, -pr, "cannot start the checks of what runnerd needs: %s",
		             strerror(-pr));
		goto fail;
	}
	/* Before the scrub: --audit's value lives in the argument block it zeroes. */
	if (rd_audit_open(&audit, cli->audit ? cli->audit : cfg.audit_path, &err) < 0)
		goto fail;
	audit.max =
	    cfg.audit_max_session_bytes ? cfg.audit_max_session_bytes : RD_AUDIT_MAX_SESSION_BYTES;
	if ((s.stub_fd = open_stub(&err)) < 0)
		goto fail;
	if ((s.zygote_fd = open_zygote(&err)) < 0 && ss)
		goto fail; /* runnerd serve's sessions need it (sandbox/zygote.h) */
	if (s.zygote_fd < 0) {
		fprintf(stderr, "runnerd: %s; runnerd forks each sandbox itself\n", err.msg);
		rd_error_clear(&err);
	}
	if (rd_filter_build(&filter, cli->prompt, &err) < 0 ||
	    rd_cmdfilter_build(&s.cmd_filter, true, &err) < 0 ||
	    rd_cmdfilter_build(&s.cmd_filter_strict, false, &err) < 0)
		goto fail;
	/* runnerd serve: everything of the host's is at hand; the rest is the container's. */
	if (ss) {
		ss->control_path = s.control_path;
		/* Here, from the machine's /proc: the container's is the container's to forge. */
		if (scrub_environ() < 0) {
			rd_error_set(&err, EIO, "cannot scrub its own environment block");
			goto fail;
		}
		if (rd_serve_enter(ss) < 0) {
			started = true; /* told already */
			goto out;
		}
	}
	who.served = ss != NULL;
	who.uid = ss ? ss->uid : getuid();
	who.gid = ss ? ss->gid : getgid();
	if (rd_home_of(who.uid, who.served, who.home, sizeof(who.home)) < 0)
		who.home[0] = '\0';
	if (!(workspace = rd_cli_workspace(ss ? &(struct rd_cli){0} : cli, &cfg, who.home, &err)))
		goto fail;
	if (rd_cli_expand_masks(&cfg, &prof, workspace) < 0)
		goto out;
	if (view_lists(&cfg, &prof, workspace, session, &write, &protect, &missing, &layers,
	               &layers_dir, &err) < 0)
		goto fail;
	/* Where the user's sessions are listed, and this one's start held apart from the
	 * others' until it is listed there (supervisor/sessions.h). Not for runnerd serve's:
	 * its paths are the container's. */
	if (!ss && sup_sessions_start(start_lock, &s.sessions_dir, &err) < 0) {
		rd_error_prefix(&err, "cannot start a session the user's other sessions know of: ");
		goto fail;
	}
	int peers_r = ss ? 0 : peers_protect(&write, &protect);
	if (peers_r < 0) {
		rd_error_set(&err, -peers_r,
		             "cannot read the list of the user's other runnerd sessions (%s): what "
		             "their commands must not write is not known",
		             strerror(-peers_r));
		goto fail;
	}
	/* (runnerd serve: the container's repository is left as it is.) */
	if (!ss)
		rd_repo_start(workspace, &repo_start);
	rd_view_since_now();
	s.view = (struct rd_view_paths){write.v,      write.n, protect.v, protect.n, layers.v,
	                                layers.n / 2, NULL,    0,         NULL,      0};
	s.missing = &missing;
	s.workspace = workspace;
	const char *over = workspace ? rd_strv_within(&protect, workspace) : NULL;
	if (over && rd_strv_within(&write, workspace))
		fprintf(stderr,
		        "runnerd: the workspace %s lies in the protected path %s: commands cannot "
		        "write it\n",
		        workspace, over);
	agent = rd_agent_which(argv[0], getenv("PATH"));
	if (!agent) {
		fprintf(stderr, "runnerd: %s: command not found\n", argv[0]);
		ret = 127;
		goto out;
	}
	agent_argv = calloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; agent_argv && i < argc; i++)
		if (!(agent_argv[i] = strdup(argv[i])))
			goto out;
	launched = agent_argv ? strdup(agent) : NULL;
	if (!launched ||
	    rd_agent_resolve_env_shebang(&agent, &agent_argv, getenv("PATH"), &err) < 0)
		goto fail;
	/* The agent's own programs, which run as the agent when it starts them. */
	struct rd_strv notes = {0};
	if (rd_agent_take_files(launched, agent, &prof, &s.view, &s.agent_files, &agent_paths,
	                        &notes) < 0 ||
	    any_rule_view(&cfg, &prof, &s.view, &agent_paths, &any_write, &any_protect) < 0) {
		rd_strv_free(&notes);
		rd_error_set(&err, ENOMEM, "out of memory taking the agent's own programs");
		goto fail;
	}
	s.any_rule = (struct rd_view_paths){
	    any_write.v, any_write.n, any_protect.v, any_protect.n, NULL, 0, NULL, 0, NULL, 0};
	if (shadow_lists(&cfg, &prof, &s.view, &s.any_rule, ss ? NULL : getenv("HOME"), &shadow,
	                 &hidden) < 0) {
		rd_error_set(&err, ENOMEM, "out of memory listing the directories of masked files");
		goto fail;
	}
	s.view.shadow = shadow.v;
	s.view.n_shadow = shadow.n;
	s.view.hidden = hidden.v;
	s.view.n_hidden = hidden.n;
	/* Where this session's commands can write, for the other sessions of the user to know
	 * (supervisor/sessions.h); and where theirs are. Without its entry, the other sessions'
	 * grants would take what this one's commands write for the user's own: it does not
	 * start. */
	if (!ss) {
		int lr = sup_sessions_list(s.sessions_dir, &s, &listed);
		if (lr < 0) {
			rd_error_set(&err, -lr,
			             "cannot list this session in %s (%s%s): the other sessions of "
			             "the user would not know where its commands can write",
			             s.sessions_dir, strerror(-lr),
			             lr == -EINVAL ? ": a writable root or protected path has a "
			                             "newline in its name"
			                           : "");
			goto fail;
		}
		s.sessions_self = strrchr(listed.path, '/') + 1;
		sup_sessions_unlock(start_lock);
	}
	for (size_t i = 0; i < notes.n; i++)
		fprintf(stderr, "runnerd: %s\n", notes.v[i]);
	rd_strv_free(&notes);
	if (!(env = agent_env(&cfg, &prof, session, &secrets, &err)))
		goto fail;
	/* What the agent would take from a file commands can write (runnerd/agent_env.h). */
	{
		_cleanup_free_ char *cwd = getcwd(NULL, 0);
		if (rd_agent_env_guard(&prof, &s.any_rule, cwd, ss != NULL, who.uid, &env, &notes) <
		    0) {
			rd_strv_free(&notes);
			rd_error_set(&err, ENOMEM, "out of memory reading the agent's env files");
			goto fail;
		}
		for (size_t i = 0; i < notes.n; i++)
			fprintf(stderr, "runnerd: %s\n", notes.v[i]);
		rd_strv_free(&notes);
	}
	s.secrets = (struct rd_env_secrets){(const char *const *)secrets.v, secrets.n};
	s.agent_env = env;
	/* Approvals, before the scrub (XDG_RUNTIME_DIR) and before the agent: a profile that
	 * asks and has no way to be answered does not start. */
	if (!ss)
		rd_control_dirs(s.control_dirs);
	/* Each exists from now on, so that its mask is in place for every command, and pinned:
	 * a command started before another session makes one must not find it unmasked. */
	for (size_t i = 0; i < RD_CONTROL_DIRS && s.control_dirs[i]; i++)
		if (mkdir(s.control_dirs[i], 0700) < 0 && errno != EEXIST && errno != ENOENT &&
		    errno != EACCES && cli->verbose)
			fprintf(stderr, "runnerd: %s: %s\n", s.control_dirs[i], strerror(errno));
	if (ss) {
		static char *none[] = {NULL};
		environ = none; /* the client's, used */
	} else if (scrub_environ() < 0) {
		fprintf(stderr,
		        "runnerd: cannot scrub its own environment block; refusing to run\n");
		goto out;
	}
	probing = false;
	if (!ss && rd_preflight_finish(&pf) > 0) {
		rd_preflight_error(&pf, &err);
		goto fail;
	}
	s.where = ss ? ss->where : rd_preflight_where(&pf);
	s.agent_path = agent;

	size_t n_args = 0;
	while (agent_argv[n_args])
		n_args++;
	if (rd_audit(&audit, "session_start",
	             json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:o, s:i}", "session", session,
	                       "profile", prof.name, "config", rd_json_bytes(cfg.path),
	                       "config_sha256", cfg.sha256, "profile_sha256", prof.sha256, "agent",
	                       rd_json_bytes(agent), "argv", rd_json_strv(agent_argv, n_args),
	                       "pid", getpid())) < 0) {
		rd_error_set(&err, EIO, "cannot write the audit log");
		goto fail;
	}

	/* Many fd copies may be open at once while commands start. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* The signals the loop takes through a signalfd are blocked before the agent exists, so
	 * none is lost; the agent gets the mask runnerd started with. */
	sigset_t block;
	rd_supervise_signals(&block);
	sigprocmask(SIG_BLOCK, &block, &s.orig_mask);
	s.verbose = cli->verbose;
	if (cli->verbose)
		fprintf(stderr, "runnerd: session %s, profile %s, agent %s\n", session, prof.name,
		        agent);
	if (asks)
		fprintf(stderr,
		        "runnerd: commands that need approval wait for \"runnerd approve ID\" "
		        "(see \"runnerd pending\")%s\n",
		        s.tty_fd >= 0 ? " or an answer here" : "");
	/* Every process the agent starts stays runnerd's descendant, even one whose parent exits
	 * (it is reparented here, and reaped by the loop): the control socket refuses runnerd's
	 * descendants, and a double fork must not make an agent process a stranger. */
	if (!ss && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		rd_error_set(&err, errno, "cannot become a child subreaper: %s", strerror(errno));
		goto fail;
	}
	/* env is kept: s.agent_env, for the commands that a rule grants a secret. */
	int r;
	if (ss) {
		s.remote.on = true;
		s.remote.kill_fd = ss->kill_fd;
		s.remote.rootless = ss->rootless;
		struct stat nst;
		if (fstat(ss->ns[RD_SERVE_NS_MNT], &nst) == 0)
			s.remote.mntns = nst.st_ino;
		if (fstat(ss->ns[RD_SERVE_NS_PID], &nst) == 0)
			s.remote.pidns = nst.st_ino;
		s.confine = (struct rd_confine){.host_userns = true,
		                                .filters = ss->filters,
		                                .n_filters = ss->n_filters,
		                                .apparmor = ss->apparmor,
		                                .enter_mntns = !ss->rootless,
		                                .mntns = ss->ns[RD_SERVE_NS_MNT]};
		started = true;
		r = rd_agent_start_remote(ss->sock, ss->pid, agent, agent_argv, env, &filter,
		                          &s.agent, &err);
		s.agent.pidfd = ss->pidfd;
	} else {
		r = rd_agent_start(agent, agent_argv, env, &filter, &s.orig_mask, &s.agent, &err);
	}
	if (r < 0) {
		ret = r == -ENOENT ? 127 : 126;
		goto fail;
	}
	/* runnerd serve: from here on, what the session says is for the agent's user, on the
	 * client's stderr (the daemon's log has the session's start). */
	if (ss && ss->stderr_fd >= 0) {
		fflush(stderr);
		(void)dup2(ss->stderr_fd, STDERR_FILENO);
		close(ss->stderr_fd);
		ss->stderr_fd = -1;
	}
	ret = rd_supervise(&s);
	report_created(&missing, &audit);
	if (!ss)
		rd_repo_end(workspace, &repo_start, &audit);
	goto out;
fail:
	rd_cli_print_error(&err);
out:
	/* The caches' layers go with the session, one that did not start too. */
	remove_layers(layers_dir);
	if (ss && !started)
		rd_agent_refuse_remote(
		    ss->sock, err.err ? err.err : EPERM,
		    err.msg[0] ? err.msg : "runnerd serve could not start it (see its log)");
	if (probing)
		rd_preflight_finish(&pf);
	free_env(env);
	rd_strv_free(&secrets);
	rd_strv_free(&write);
	rd_strv_free(&protect);
	rd_strv_free(&missing);
	rd_strv_free(&layers);
	free(layers_dir);
	rd_strv_free(&agent_paths);
	rd_strv_free(&any_write);
	rd_strv_free(&any_protect);
	rd_strv_free(&shadow);
	rd_strv_free(&hidden);
	free(workspace);
	free(agent);
	for (char **a = agent_argv; a && *a; a++)
		free(*a);
	free(agent_argv);
	free(launched);
	free(s.agent_files.files);
	rd_bpf_free(&filter);
	rd_bpf_free(&s.cmd_filter);
	rd_bpf_free(&s.cmd_filter_strict);
	if (s.stub_fd >= 0)
		close(s.stub_fd);
	if (s.zygote_fd >= 0)
		close(s.zygote_fd);
	rd_audit_close(&audit);
	sup_sessions_unlock(start_lock);
	sup_sessions_unlist(&listed);
	free(s.sessions_dir);
	if (s.control_path)
		unlink(s.control_path);
	free(s.control_path);
	free(control_dir);
	if (s.control_fd >= 0)
		close(s.control_fd);
	if (s.tty_fd >= 0)
		close(s.tty_fd);
	for (size_t i = 0; i < RD_CONTROL_DIRS; i++)
		free(s.control_dirs[i]);
	rd_profile_free(&prof);
	rd_config_free(&cfg);
	if (s.agent_signal)
		die_by(s.agent_signal);
	return ret;
}

int rd_cmd_run(struct rd_cli *cli, int argc, char **argv)
{
	return run(cli, argc, argv, NULL);
}

int rd_cmd_run_served(struct rd_cli *cli, struct rd_serve_session *ss)
{
	return run(cli, ss->argc, ss->argv, ss);
}
