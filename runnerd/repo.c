#include "runnerd/repo.h"
#include "lib/git.h"
#include "lib/strv.h"
#include "lib/syscalls.h"
#include "lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* rd_repo_find_git's: the git, and the environment it runs in. */
static char *git_prog;
static char **git_env;

/* A git at dir/git (dir absolute, len bytes of it) outside write, by the path as found and its
 * real path: its real path, or NULL. */
static char *git_at(const char *dir, size_t len, const struct rd_strv *write)
{
	char real[PATH_MAX];
	struct stat st;
	if (!rd_git_prog_at(dir, len, real, &st) || rd_strv_within(write, real))
		return NULL;
	char found[PATH_MAX];
	snprintf(found, sizeof(found), "%.*s/git", (int)len, dir);
	return rd_strv_within(write, found) ? NULL : strdup(real);
}

void rd_repo_find_git(const struct rd_strv *write, const char *home)
{
	const char *path = getenv("PATH");
	for (const char *e = path ? path : ""; *e && !git_prog;) {
		size_t len = strcspn(e, ":");
		git_prog = git_at(e, len, write);
		e += len + (e[len] == ':');
	}
	/* Where PATH has none: where Debian's is (posix_spawnp's own default path). */
	static const char *const usual[] = {"/usr/bin", "/bin"};
	for (size_t i = 0; !git_prog && i < ARRAY_SIZE(usual); i++)
		git_prog = git_at(usual[i], strlen(usual[i]), write);
	if (!git_prog) {
		fprintf(
		    stderr,
		    "runnerd: no git outside the writable roots (on PATH, /usr/bin, /bin): the "
		    "hooks the workspace's configuration names (core.hooksPath) are not written "
		    "through a layer of the session's, and its gitlinks are not looked at when "
		    "it ends\n");
		return;
	}
	/* git's own configuration variables (GIT_CONFIG_GLOBAL, GIT_CONFIG_COUNT and its keys, ...)
	 * and HOME as the operator has them, which say where the hooks are; a plain PATH; none
	 * of the operator's other variables, which hold secrets. No trace2 target: one the global
	 * configuration names (trace2.normalTarget) is a file git appends to, with values of the
	 * configuration in it (trace2.configParams), and a configuration a command could write (a
	 * ~/.gitconfig linked into the workspace) would have git, outside any sandbox, append
	 * lines of its choosing to a file of its choosing. */
	static const char *const quiet[] = {"GIT_TRACE2=0", "GIT_TRACE2_EVENT=0",
	                                    "GIT_TRACE2_PERF=0"};
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	if (!(git_env = calloc(n + 3 + ARRAY_SIZE(quiet), sizeof(char *))))
		return;
	n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(quiet); i++)
		if ((git_env[n] = strdup(quiet[i])))
			n++;
	const char *h = getenv("HOME");
	for (char **e = environ; *e; e++)
		if ((strncmp(*e, "GIT_CONFIG", 10) == 0 ||
		     strncmp(*e, "XDG_CONFIG_HOME=", 16) == 0) &&
		    (git_env[n] = strdup(*e)))
			n++; /* copied: runnerd zeroes its environment block before the agent starts
			      */
	if (asprintf(&git_env[n], "PATH=/usr/local/bin:/usr/bin:/bin") > 0)
		n++;
	if (h && h[0] == '/' ? asprintf(&git_env[n], "HOME=%s", h) > 0
	    : home && *home  ? asprintf(&git_env[n], "HOME=%s", home) > 0
	                     : false)
		n++;
	git_env[n] = NULL;
}

/* How long runnerd's own git may take: what commands write can make it wait for ever (a
 * .git/index, or a file the configuration includes, that is a FIFO), and the session's end
 * waits for it. */
enum { GIT_TIMEOUT_MS = 10000 };

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms =
	    (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

/* git -C workspace ARGS..., as the user, stdin and stderr /dev/null, its signals as a new
 * program has them (runnerd blocks some): fn is called with each record of its output (ended
 * by sep, which is replaced by a NUL; a record longer than PATH_MAX + 64 is dropped). One that
 * takes longer than GIT_TIMEOUT_MS is killed, and runnerd says so. Returns whether git ran
 * and exited 0. */
static bool run_git(const char *workspace, char *const args[], char sep,
                    void (*fn)(char *rec, void *ctx), void *ctx)
{
	if (!git_prog || !git_env)
		return false;
	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return false;
	char *argv[16] = {"git", "-C", (char *)workspace};
	size_t n_args = 3;
	for (size_t i = 0; args[i] && n_args < 15; i++)
		argv[n_args++] = args[i];
	argv[n_args] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	pid_t pid = -1;
	if (posix_spawnattr_init(&at) == 0) {
		if (posix_spawn_file_actions_init(&fa) == 0) {
			if (posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
			                                      POSIX_SPAWN_SETSIGDEF |
			                                      POSIX_SPAWN_SETPGROUP) != 0 ||
			    posix_spawnattr_setpgroup(&at, 0) != 0 ||
			    posix_spawnattr_setsigmask(&at, &none) != 0 ||
			    posix_spawnattr_setsigdefault(&at, &all) != 0 ||
			    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) !=
			        0 ||
			    posix_spawn_file_actions_adddup2(&fa, out[1], 1) != 0 ||
			    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) !=
			        0 ||
			    posix_spawn(&pid, git_prog, &fa, &at, argv, git_env) != 0)
				pid = -1;
			posix_spawn_file_actions_destroy(&fa);
		}
		posix_spawnattr_destroy(&at);
	}
	close(out[1]);
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += GIT_TIMEOUT_MS / 1000;
	_cleanup_close_ int pidfd = pid > 0 ? rd_pidfd_open(pid, 0) : -1;
	bool late = false;
	char buf[PATH_MAX + 64];
	size_t n = 0;
	bool dropping = false;
	for (ssize_t r; pid > 0;) {
		struct pollfd pf = {.fd = out[0], .events = POLLIN};
		int p = poll(&pf, 1, (int)ms_left(&deadline));
		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0) {
			late = p == 0;
			break;
		}
		if ((r = read(out[0], buf + n, sizeof(buf) - n)) == 0)
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
		char *rec = buf, *end;
		while ((end = memchr(rec, sep, (size_t)(buf + n - rec)))) {
			*end = '\0';
			if (!dropping)
				fn(rec, ctx);
			dropping = false;
			rec = end + 1;
		}
		n = (size_t)(buf + n - rec);
		memmove(buf, rec, n);
		if (n == sizeof(buf)) {
			n = 0;
			dropping = true;
		}
	}
	close(out[0]);
	/* Its output ended: its exit, within the same time. */
	struct pollfd pe = {.fd = pidfd, .events = POLLIN};
	for (int p;
	     !late && pid > 0 && pidfd >= 0 && (p = poll(&pe, 1, (int)ms_left(&deadline))) <= 0;)
		late = p == 0 || errno != EINTR;
	/* Without a pidfd (out of fds, or a kernel before 5.3): its exit looked for until the
	 * same deadline. */
	int status = 1;
	bool reaped = false;
	while (!late && pid > 0 && pidfd < 0 && !reaped) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		reaped = w == pid || (w < 0 && errno != EINTR);
		late = !reaped && !ms_left(&deadline);
		if (!reaped && !late)
			usleep(1000);
	}
	if (late) {
		/* Its group (it leads one): what it started too, a child still holding its
		 * output. */
		kill(-pid, SIGKILL);
		fprintf(stderr,
		        "runnerd: git %s in %s did not finish within %d s and was stopped: what it "
		        "checks is not checked (is a file of the repository's a FIFO, such as "
		        ".git/index?)\n",
		        args[0][0] == '-' && args[1] && args[2] ? args[2] : args[0], workspace,
		        GIT_TIMEOUT_MS / 1000);
	}
	while (pid > 0 && !reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && !late && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void first_line(char *rec, void *ctx)
{
	char **out = ctx;
	if (!*out && rec[0] == '/')
		*out = strdup(rec);
}

char *rd_repo_hooks_dir(const char *workspace)
{
	char *args[] = {"rev-parse", "--path-format=absolute", "--git-path", "hooks", NULL};
	char *dir = NULL;
	if (!run_git(workspace, args, '\n', first_line, &dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* A gitlink of the index ("160000 OBJECT STAGE\tPATH", git ls-files --stage -z): PATH. */
static void take_gitlink(char *rec, void *ctx)
{
	char *tab = strchr(rec, '\t');
	if (strncmp(rec, "160000 ", 7) == 0 && tab && tab[1])
		(void)rd_strv_add(ctx, tab + 1);
}

/* The gitlinks of the workspace's index. No fsmonitor runs (the index is the commands' to
 * write; the configuration is the user's, protected). */
static void gitlinks(const char *workspace, struct rd_strv *out)
{
	char *args[] = {"-c", "core.fsmonitor=false", "ls-files", "--stage", "-z", NULL};
	*out = (struct rd_strv){0};
	if (!run_git(workspace, args, '\0', take_gitlink, out))
		rd_strv_free(out);
}

/* What git needs of .git to take it, besides HEAD (struct rd_repo_start's modes). */
static const char *const git_dirs[] = {"", "objects", "refs"};

void rd_repo_start(const char *workspace, struct rd_repo_start *start)
{
	*start = (struct rd_repo_start){0};
	char git[PATH_MAX];
	if ((size_t)snprintf(git, sizeof(git), "%s/.git",
	                     strcmp(workspace, "/") ? workspace : "") >= sizeof(git))
		return;
	_cleanup_close_ int dir = open(git, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0 && !rd_git_head_valid(dir, "HEAD", start->head, sizeof(start->head)))
		start->head[0] = '\0';
	start->bare_shaped = rd_git_bare_shaped(workspace);
	struct stat gst;
	start->had_git = lstat(git, &gst) == 0;
	clock_gettime(CLOCK_REALTIME, &start->when);
	for (size_t i = 0; dir >= 0 && i < ARRAY_SIZE(git_dirs); i++) {
		struct stat st;
		if (fstatat(dir, git_dirs[i], &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) == 0 &&
		    S_ISDIR(st.st_mode))
			start->modes[i] = st.st_mode & 07777;
	}
}

static bool after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/* Was path (not followed) made since the start, by its birth time? false where the file
 * system keeps none: the repository is then named, not moved. */
static bool born_after(const char *path, const struct rd_repo_start *start)
{
	struct statx sx;
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) < 0 ||
	    !(sx.stx_mask & STATX_BTIME))
		return false;
	struct timespec b = {sx.stx_btime.tv_sec, sx.stx_btime.tv_nsec};
	return after(&b, &start->when);
}

/* Each gitlink whose repository's configuration was made or changed since the start (its
 * ctime, which no command sets back). The index is listed once, at the end: a start in a
 * large repository pays nothing. */
static void check_gitlinks(const char *workspace, const struct rd_repo_start *start,
                           struct rd_audit *audit)
{
	struct rd_strv now = {0};
	gitlinks(workspace, &now);
	for (size_t i = 0; i < now.n; i++) {
		char path[PATH_MAX], git[PATH_MAX + 8], gd[PATH_MAX + 16], config[PATH_MAX + 32];
		struct stat st;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s",
		                     strcmp(workspace, "/") ? workspace : "",
		                     now.v[i]) >= sizeof(path))
			continue;
		snprintf(git, sizeof(git), "%s/.git", path);
		if (!rd_git_dir_of(git, gd, sizeof(gd)) ||
		    (size_t)snprintf(config, sizeof(config), "%s/config", gd) >= sizeof(config) ||
		    lstat(config, &st) < 0)
			continue;
		/* Made, or changed, and more than git init, clone or submodule write there. */
		if (!after(&st.st_ctim, &start->when) || rd_git_config_inert(AT_FDCWD, config))
			continue;
		/* Made, or changed: its .git made since the start, or not. */
		bool known = !born_after(git, start);
		fprintf(stderr,
		        "runnerd: %s is a repository entered in the workspace's index (a gitlink), "
		        "whose configuration %s was %s during this session, where commands could "
		        "write it: git status in the workspace reads it, and runs what its "
		        "core.fsmonitor names; check it\n",
		        path, config, known ? "changed" : "made");
		(void)rd_audit(audit, "gitlink_config",
		               json_pack("{s:o, s:o, s:b}", "path", rd_json_bytes(path), "config",
		                         rd_json_bytes(config), "new", !known));
	}
	rd_strv_free(&now);
}

/* What in the repository whose git directory is gd (the nested repository's .git, where its
 * .git file points, or a directory shaped as a bare repository) git would run or read from
 * elsewhere, that was made or changed since the start (all of it, when fresh: the repository
 * itself is new): a configuration beyond what git init and git clone write, a hook that is no
 * template (hooks followed, as git follows them), a commondir that names a repository outside
 * the workspace (one inside it is looked at on its own). NULL if none. */
static const char *nested_why(const char *gd, bool fresh, const char *workspace,
                              const struct rd_repo_start *start)
{
	static const char *const configs[] = {"config", "config.worktree"};
	char sub[PATH_MAX + 32];
	struct stat st;
	for (size_t i = 0; i < ARRAY_SIZE(configs); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", gd, configs[i]);
		if (stat(sub, &st) == 0 && (fresh || after(&st.st_ctim, &start->when)) &&
		    !rd_git_config_inert(AT_FDCWD, sub))
			return "a configuration that may name a program git runs (more than git "
			       "init and git clone write)";
	}
	snprintf(sub, sizeof(sub), "%s/commondir", gd);
	if (lstat(sub, &st) == 0 && (fresh || after(&st.st_ctim, &start->when))) {
		char text[PATH_MAX], target[2 * PATH_MAX + 8], real[PATH_MAX];
		_cleanup_close_ int fd = open(sub, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		ssize_t len = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
		if (len > 0) {
			/* As git reads it: trailing newlines off, nothing else. */
			while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
				len--;
			text[len] = '\0';
			len = snprintf(target, sizeof(target), "%s%s%s", text[0] == '/' ? "" : gd,
			               text[0] == '/' ? "" : "/", text) < (int)sizeof(target)
			          ? len
			          : -1;
		}
		if (len <= 0 || !realpath(target, real) || !rd_path_within(real, workspace))
			return "a commondir that names a repository outside the workspace, whose "
			       "hooks and configuration git takes";
	}
	snprintf(sub, sizeof(sub), "%s/hooks", gd);
	if (lstat(sub, &st) == 0 && !S_ISDIR(st.st_mode) &&
	    (fresh || after(&st.st_ctim, &start->when)))
		return "a hooks directory that is a link elsewhere";
	_cleanup_close_ int hfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = hfd < 0 ? NULL : fdopendir(hfd);
	if (d)
		hfd = -1;
	const char *why = NULL;
	for (struct dirent *e; !why && d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    (len > 7 && strcmp(e->d_name + len - 7, ".sample") == 0))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (fresh || after(&st.st_ctim, &start->when)))
			why = "a hook, which git runs";
	}
	if (d)
		closedir(d);
	return why;
}

/* One found: what git would run there, made or changed during the session. One made during
 * the session (fresh) is moved aside (entry: its .git, or a bare shape's HEAD); one that was
 * there before (the user's) is named, not moved: its other keys may be the user's own. */
static void report_nested(const char *repo, const char *entry, const char *why, bool fresh,
                          struct rd_audit *audit)
{
	char moved[PATH_MAX + 64];
	int r = fresh ? rd_move_aside(entry, moved, sizeof(moved)) : 0;
	if (fresh)
		fprintf(stderr,
		        "runnerd: %s is a git repository made during this session, where commands "
		        "could write it, with %s: the user's git there (a shell prompt, an editor) "
		        "would run it; %s%s%s\n",
		        repo, why, r == 0 ? "moved aside to " : "it cannot be moved aside (",
		        r == 0 ? moved : strerror(-r),
		        r == 0 ? " (check it, and move it back if it is yours)" : "): remove it");
	else
		fprintf(
		    stderr,
		    "runnerd: %s is a git repository that was there at the start and was "
		    "changed during this session, where commands could write it: it now has "
		    "%s, which the user's git there (a shell prompt, an editor) would run; check "
		    "it before git runs there\n",
		    repo, why);
	(void)rd_audit(audit, "repository_made",
	               json_pack("{s:o, s:s, s:b, s:o}", "path", rd_json_bytes(entry), "why", why,
	                         "new", fresh, "moved_to",
	                         fresh && r == 0 ? rd_json_bytes(moved) : json_null()));
}

/* A nested repository: its .git at path (a directory, a file "gitdir: DIR", or a symlink to
 * either). */
static void check_nested_one(const char *path, const char *workspace,
                             const struct rd_repo_start *start, struct rd_audit *audit)
{
	struct stat st;
	char gd[PATH_MAX + 16];
	if (lstat(path, &st) < 0)
		return;
	/* Changed (a rename into the workspace, git's own writes there): all of it is judged;
	 * made: moved aside too. */
	bool fresh = after(&st.st_ctim, &start->when), made = born_after(path, start);
	if (!rd_git_dir_of(path, gd, sizeof(gd)))
		return;
	const char *why = nested_why(gd, fresh || made, workspace, start);
	if (why)
		report_nested(path, path, why, made, audit);
}

/* A directory shaped as a bare repository (HEAD, objects, refs), which git takes where it
 * finds no .git: judged as a repository; its HEAD moved aside when it is new. */
static void check_bare_one(const char *dir, const char *workspace,
                           const struct rd_repo_start *start, struct rd_audit *audit)
{
	char head[PATH_MAX + 8];
	struct stat st;
	snprintf(head, sizeof(head), "%s/HEAD", dir);
	if (lstat(head, &st) < 0 || !rd_git_bare_shaped(dir))
		return;
	bool made = born_after(dir, start);
	const char *why =
	    nested_why(dir, made || after(&st.st_ctim, &start->when), workspace, start);
	if (why)
		report_nested(dir, head, why, made, audit);
}

/* The repositories inside the workspace, other than its own: a command can git init or clone
 * one anywhere it may write (or shape a directory as a bare one), with hooks or a
 * configuration (core.fsmonitor) that the user's git runs when it works there, as a shell
 * prompt or an editor's scan of the folder does. The walk takes no symlink, stays on the
 * workspace's file system, goes into no .git, and stops after RD_NESTED_DIRS directories,
 * saying so. */
#define RD_NESTED_DIRS 100000
static void check_nested(const char *workspace, const struct rd_repo_start *start,
                         struct rd_audit *audit)
{
	char own[PATH_MAX + 8];
	snprintf(own, sizeof(own), "%s/.git", strcmp(workspace, "/") ? workspace : "");
	char *roots[] = {(char *)workspace, NULL};
	FTS *f = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR | FTS_NOSTAT | FTS_XDEV, NULL);
	if (!f)
		return;
	size_t dirs = 0;
	for (FTSENT *e; (e = fts_read(f));) {
		bool dotgit = e->fts_level >= 1 && strcmp(e->fts_name, ".git") == 0;
		if (e->fts_info == FTS_D) {
			if (dotgit)
				fts_set(f, e, FTS_SKIP);
			else if (e->fts_level >= 1)
				check_bare_one(e->fts_path, workspace, start, audit);
			if (++dirs > RD_NESTED_DIRS) {
				fprintf(
				    stderr,
				    "runnerd: %s has more than %d directories: git repositories "
				    "commands may have made beyond those were not looked for\n",
				    workspace, RD_NESTED_DIRS);
				break;
			}
		}
		/* The workspace's own .git is looked at on its own (rd_repo_end). */
		if (dotgit && e->fts_info != FTS_DP && strcmp(e->fts_path, own) != 0)
			check_nested_one(e->fts_path, workspace, start, audit);
	}
	fts_close(f);
}

int rd_move_aside(const char *path, char *aside, size_t n)
{
	int e = EEXIST;
	for (int k = 0; k < 8 && e == EEXIST; k++) {
		uint64_t r;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			return -EIO;
		if ((size_t)snprintf(aside, n, "%s.runnerd-%016llx", path, (unsigned long long)r) >=
		    n)
			return -ENAMETOOLONG;
		e = renameat2(AT_FDCWD, path, AT_FDCWD, aside, RENAME_NOREPLACE) == 0 ? 0 : errno;
	}
	return -e;
}

/* HEAD (in git, the repository's .git) moved aside, and written again with text: aside gets
 * where what was there went ("" if nothing was). false, errno set, if it could not be. */
static bool restore_head(const char *git, const char *text, char *aside, size_t n)
{
	char head[PATH_MAX + 8];
	snprintf(head, sizeof(head), "%s/HEAD", git);
	int r = rd_move_aside(head, aside, n);
	if (r == -ENOENT)
		aside[0] = '\0';
	else if (r < 0)
		return errno = -r, false;
	int fd = open(head, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	size_t len = strlen(text);
	bool ok = write(fd, text, len) == (ssize_t)len;
	return close(fd) == 0 && ok;
}

void rd_repo_end(const char *workspace, const struct rd_repo_start *start, struct rd_audit *audit)
{
	char git[PATH_MAX];
	if ((size_t)snprintf(git, sizeof(git), "%s/.git",
	                     strcmp(workspace, "/") ? workspace : "") >= sizeof(git))
		return;
	_cleanup_close_ int dir = open(git, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (start->head[0] && dir >= 0 && !rd_git_head_valid(dir, "HEAD", NULL, 0)) {
		char moved[PATH_MAX + 64] = "";
		bool ok = restore_head(git, start->head, moved, sizeof(moved));
		if (ok)
			fprintf(
			    stderr,
			    "runnerd: %s/HEAD was left in a form git does not take, so that git "
			    "would look further up (at the workspace as a bare repository a "
			    "command could have made): written again as it was at the start%s%s\n",
			    git, moved[0] ? "; what was there is now " : "", moved);
		else
			fprintf(
			    stderr,
			    "runnerd: %s/HEAD was left in a form git does not take, so that git "
			    "would look further up (at the workspace as a bare repository a "
			    "command could have made), and cannot be written again (%s): write "
			    "it before git runs there; it was: %s",
			    git, strerror(errno), start->head);
		(void)rd_audit(audit, "git_head_restored",
		               json_pack("{s:o, s:b, s:o}", "path", rd_json_bytes(git), "restored",
		                         ok, "moved_to",
		                         ok && moved[0] ? rd_json_bytes(moved) : json_null()));
	}
	/* Modes a command changed (it may chmod what it owns): git skips a .git whose objects
	 * or refs it cannot search. */
	for (size_t i = 0; dir >= 0 && i < ARRAY_SIZE(git_dirs); i++) {
		struct stat st;
		if (!start->modes[i] ||
		    fstatat(dir, git_dirs[i], &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0 ||
		    !S_ISDIR(st.st_mode) || (st.st_mode & 07777) == start->modes[i])
			continue;
		bool ok = fchmodat(dir, i ? git_dirs[i] : ".", start->modes[i], 0) == 0;
		fprintf(
		    stderr,
		    "runnerd: %s/%s had its mode changed during this session (%04o, was %04o)%s\n",
		    git, git_dirs[i], (unsigned)(st.st_mode & 07777), (unsigned)start->modes[i],
		    ok ? ": set back" : ": cannot be set back");
	}
	/* A .git that is a file, made during the session (git init --separate-git-dir): it
	 * turns git to a repository a command made, whose hooks and configuration are the
	 * command's; none of the missing protected paths inside .git can be there to see. */
	struct stat gst;
	if (!start->had_git && lstat(git, &gst) == 0 && !S_ISDIR(gst.st_mode)) {
		char moved[PATH_MAX + 64];
		int r = rd_move_aside(git, moved, sizeof(moved));
		fprintf(stderr,
		        "runnerd: %s was made during this session, where commands could write it: "
		        "it names the repository git takes there, one a command made; %s%s\n",
		        git, r == 0 ? "moved aside to " : "it cannot be moved aside: ",
		        r == 0 ? moved : strerror(-r));
		(void)rd_audit(audit, "protected_created",
		               json_pack("{s:o, s:o}", "path", rd_json_bytes(git), "moved_to",
		                         r == 0 ? rd_json_bytes(moved) : json_null()));
	}
	/* The gitlinks first: one whose repository is then moved aside is still named as one. */
	check_gitlinks(workspace, start, audit);
	check_nested(workspace, start, audit);
	if (!start->bare_shaped && rd_git_bare_shaped(workspace)) {
		/* git takes it where it finds no .git it can use first: its HEAD moved aside (a
		 * project's root holds none of its own), it is no repository for git. */
		char head[PATH_MAX + 8], moved[PATH_MAX + 64];
		snprintf(head, sizeof(head), "%s/HEAD", strcmp(workspace, "/") ? workspace : "");
		int r = rd_move_aside(head, moved, sizeof(moved));
		fprintf(
		    stderr,
		    "runnerd: %s was made a bare git repository's shape during this session "
		    "(HEAD, objects, refs), where commands could write: git would take it, with "
		    "its configuration (%s/config), where it finds no .git first; %s%s%s\n",
		    workspace, strcmp(workspace, "/") ? workspace : "",
		    r == 0 ? "its HEAD is moved aside, to " : "its HEAD cannot be moved aside: ",
		    r == 0 ? moved : strerror(-r),
		    r == 0 ? "" : "; remove it before git runs there");
		(void)rd_audit(audit, "bare_repository_made",
		               json_pack("{s:o, s:o}", "path", rd_json_bytes(workspace), "moved_to",
		                         r == 0 ? rd_json_bytes(moved) : json_null()));
	}
}
