/* Unit tests of rd_resolve (intercept/resolve.c): where a trapped exec points, seen as the
 * caller sees it. The caller is this test process itself (rd_task_open on our own tid), so
 * its fds, cwd and /proc/self are ours and every answer can be checked against the file tree
 * built in setup; and then a child that runs another binary, in another cwd, with another file
 * at a given fd number, to show that "self", the cwd and the fds are the caller's and not
 * runnerd's. The expected errnos are those the kernel's own execve/execveat gives for the
 * same path (fs/exec.c do_open_execat: EACCES for anything not a regular file or without an
 * exec bit, ELOOP for AT_SYMLINK_NOFOLLOW on a symlink, EINVAL for unknown flags), and
 * runnerd's own refusals where it cannot follow a /proc magic link as the caller. */
/* cmocka needs these first, in this order */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include "intercept/resolve.h"
#include "intercept/task.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the fixture: a file tree, fds on it, a child ------------------------------------- */

static struct {
	char dir[PATH_MAX]; /* the tree's root, symlink-free (readlink of our fds names it so) */
	char self[PATH_MAX];
	struct rd_task t;
	int elf_fd;      /* O_RDONLY on dir/elf */
	int elf_path_fd; /* O_PATH on dir/elf */
	int sub_fd;      /* O_PATH on dir/sub */
	int unused_fd;   /* a number no fd has */
	int saved_stdin; /* fd 0 is dir/elf during the tests, for "/dev/stdin" */
	int saved_cwd;   /* the tests run in dir */
	pid_t child;     /* a process of ours that is not the caller */
	/* The other caller: a copy of sleep run in dir/sub, with dir/elf at fd KEPT_FD, where
	 * we have dir/script. */
	pid_t other;
	struct rd_task ot;
	char other_exe[PATH_MAX + 16];
	int kept_fd;
} fx = {.elf_fd = -1,
        .elf_path_fd = -1,
        .sub_fd = -1,
        .saved_stdin = -1,
        .saved_cwd = -1,
        .kept_fd = -1};

#define KEPT_FD 200

/* Whose view a table is resolved in. */
struct caller {
	struct rd_task *t;
	const char *exe; /* what its /proc/self/exe is */
};
static const struct caller *cur;

static int copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	char buf[65536];
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	int r = (in < 0 || out < 0 || n < 0) ? -1 : fchmod(out, mode);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return r;
}

static int write_file(const char *to, const char *text, mode_t mode)
{
	int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int r = (n == (ssize_t)strlen(text) && fchmod(fd, mode) == 0) ? 0 : -1;
	close(fd);
	return r;
}

/* The other caller, once it has exec'd (the CLOEXEC pipe reads EOF then). */
static int start_other(void)
{
	snprintf(fx.other_exe, sizeof(fx.other_exe), "%s/sleeper", fx.dir);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fx.other = fork();
	if (fx.other < 0)
		return -1;
	if (fx.other == 0) {
		/* Gone with us, even if setup stops half-way and teardown never runs. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int e = 0;
		/* dup2 leaves the new fd without FD_CLOEXEC: it survives the exec. */
		if (chdir("sub") < 0 || dup2(fx.elf_path_fd, KEPT_FD) < 0)
			e = errno;
		else
			execl(fx.other_exe, "sleeper", "1000", (char *)NULL);
		e = e ? e : errno;
		if (write(p[1], &e, sizeof(e)) < 0)
			_exit(126);
		_exit(127);
	}
	close(p[1]);
	int e = 0;
	ssize_t n = read(p[0], &e, sizeof(e));
	close(p[0]);
	if (n != 0)
		fprintf(stderr, "starting %s: %s\n", fx.other_exe, strerror(e));
	return n == 0 ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/rd-resolve-XXXXXX";
	if (!mkdtemp(tmpl) || !realpath(tmpl, fx.dir))
		return -1;
	ssize_t n = readlink("/proc/self/exe", fx.self, sizeof(fx.self) - 1);
	if (n <= 0)
		return -1;
	fx.self[n] = '\0';
	fx.saved_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fx.saved_cwd < 0 || chdir(fx.dir) < 0 || mkdir("sub", 0755) < 0)
		return -1;
	/* The ELF and the non-executable file are the same bytes: only the mode tells them
	 * apart. Copies, not symlinks to /bin/true, so that the resolved path is in dir. */
	if (copy_file("/bin/true", "elf", 0755) < 0 ||
	    copy_file("/bin/sleep", "sleeper", 0755) < 0 ||
	    copy_file("/bin/true", "sub/elf", 0755) < 0 ||
	    copy_file("/bin/true", "plain", 0644) < 0 ||
	    write_file("script", "#!/bin/sh\nexit 0\n", 0755) < 0 ||
	    write_file("sub/tool", "#!/bin/sh\nexit 0\n", 0755) < 0)
		return -1;
	if (symlink("elf", "link") < 0 || symlink("chain2", "chain1") < 0 ||
	    symlink("link", "chain2") < 0 || symlink("loop2", "loop1") < 0 ||
	    symlink("loop1", "loop2") < 0 || symlink("script", "slink") < 0 ||
	    symlink("/proc/self/exe", "toself") < 0)
		return -1;
	fx.elf_fd = open("elf", O_RDONLY | O_CLOEXEC);
	fx.elf_path_fd = open("elf", O_PATH | O_CLOEXEC);
	fx.sub_fd = open("sub", O_PATH | O_DIRECTORY | O_CLOEXEC);
	fx.saved_stdin = fcntl(0, F_DUPFD_CLOEXEC, 3);
	if (fx.elf_fd < 0 || fx.elf_path_fd < 0 || fx.sub_fd < 0 || fx.saved_stdin < 0 ||
	    dup2(fx.elf_fd, 0) < 0)
		return -1;
	fx.unused_fd = 900;
	while (fcntl(fx.unused_fd, F_GETFD) >= 0)
		fx.unused_fd++;
	int script = open("script", O_PATH | O_CLOEXEC);
	fx.kept_fd = script < 0 ? -1 : dup3(script, KEPT_FD, O_CLOEXEC);
	if (script >= 0)
		close(script);
	if (fx.kept_fd != KEPT_FD)
		return -1;
	fx.child = fork();
	if (fx.child < 0)
		return -1;
	if (fx.child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	if (start_other() < 0)
		return -1;
	struct rd_error err = {0};
	if (rd_task_open(gettid(), &fx.t, &err) < 0 || rd_task_cwd(&fx.t, &err) < 0 ||
	    rd_task_open(fx.other, &fx.ot, &err) < 0 || rd_task_cwd(&fx.ot, &err) < 0) {
		fprintf(stderr, "rd_task_open: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pid_t kids[] = {fx.child, fx.other};
	for (size_t i = 0; i < ARRAY_SIZE(kids); i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
	rd_task_free(&fx.t);
	rd_task_free(&fx.ot);
	if (fx.saved_stdin >= 0)
		dup2(fx.saved_stdin, 0);
	int fds[] = {fx.elf_fd, fx.elf_path_fd, fx.sub_fd, fx.saved_stdin, fx.kept_fd};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (fx.saved_cwd >= 0 && fchdir(fx.saved_cwd) == 0)
		close(fx.saved_cwd);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
	return fx.dir[0] ? system(cmd) : 0;
}

/* How many fds we have open: a case must leave it as it found it once its target is freed. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* "@" is the tree's root; "$E" the number of the O_RDONLY fd of dir/elf, "$O" of its O_PATH
 * fd, "$D" of dir/sub's, "$N" an fd number not open, "$K" KEPT_FD, "$S" the caller's pid, "$T" its
 * tid, "$R" ours (runnerd's, as it were), "$C" the pid of a child that is neither. */
static void expand(const char *tmpl, char *out, size_t size)
{
	size_t o = 0;
	for (const char *p = tmpl; *p; p++) {
		char num[24];
		const char *ins = NULL;
		if (*p == '@') {
			ins = fx.dir;
		} else if (*p == '$') {
			int v = 0;
			switch (*++p) {
			case 'E':
				v = fx.elf_fd;
				break;
			case 'O':
				v = fx.elf_path_fd;
				break;
			case 'D':
				v = fx.sub_fd;
				break;
			case 'N':
				v = fx.unused_fd;
				break;
			case 'S':
				v = cur->t->tgid;
				break;
			case 'T':
				v = cur->t->tid;
				break;
			case 'K':
				v = KEPT_FD;
				break;
			case 'R':
				v = getpid();
				break;
			case 'C':
				v = fx.child;
				break;
			default:
				fail_msg("bad template %s", tmpl);
			}
			snprintf(num, sizeof(num), "%d", v);
			ins = num;
		}
		if (ins)
			o += (size_t)snprintf(out + o, size - o, "%s", ins);
		else if (o < size)
			out[o++] = *p;
		assert_true(o < size);
	}
	out[o] = '\0';
}

/* ---- the table ------------------------------------------------------------------------ */

enum dirfd_kind { AT_CWD, AT_SUB, AT_ELF, AT_ELF_OPATH, AT_UNUSED, AT_KEPT };

/* How a resolved target is to be exec'd. */
enum via {
	NONE,
	BY_FD,        /* runnerd's fd on the very file: execveat(fd, "", AT_EMPTY_PATH) */
	BY_CALLER_FD, /* the same, the fd being a copy of the caller's fd caller_fd */
	BY_NAME,      /* execveat(AT_FDCWD, the caller's own string): a script keeps its name */
	BY_NAME_AT,   /* execveat(a copy of the caller's dirfd, its own relative string) */
};

struct rcase {
	const char *name;
	const char *path; /* template, see expand() */
	enum dirfd_kind dirfd;
	int flags;
	enum rd_resolve_outcome outcome;
	int e;              /* the errno of a miss or a refusal */
	enum via via;       /* resolved: how */
	const char *target; /* resolved: the file's path (template), "SELF" for the caller's exe */
	bool bound;         /* caller_fd is among t->fds: rd_target_bind switches to it */
};

#define MISS(err)    .outcome = RD_RESOLVE_MISS, .e = (err)
#define REFUSED(err) .outcome = RD_RESOLVE_REFUSED, .e = (err)
#define OK(v, tg)    .outcome = RD_RESOLVED, .via = (v), .target = (tg)

static const struct rcase cases[] = {
    /* Plain paths. */
    {"absolute ELF runs by fd", "@/elf", OK(BY_FD, "@/elf")},
    {"absolute script keeps its name", "@/script", OK(BY_NAME, "@/script")},
    {"a doubled slash is folded for the lookup, the script's name is the caller's string",
     "@//script", OK(BY_NAME, "@/script")},
    {"\"..\" outside /proc is the kernel's to walk", "@/sub/../elf", OK(BY_FD, "@/elf")},
    {"missing file", "@/missing", MISS(ENOENT)},
    {"missing directory component", "@/missing/elf", MISS(ENOENT)},
    {"a directory is not executable", "@/sub", MISS(EACCES)},
    {"a directory with a trailing slash", "@/sub/", MISS(EACCES)},
    {"a file without an exec bit, ELF bytes or not", "@/plain", MISS(EACCES)},
    {"an ELF as a directory component", "@/elf/x", MISS(ENOTDIR)},
    {"a plain file as a directory component", "@/plain/x", MISS(ENOTDIR)},
    {"an ELF with a trailing slash", "@/elf/", MISS(ENOTDIR)},
    {"an ELF with a trailing \"/.\": the kernel's ENOTDIR, not folded away", "@/elf/.",
     MISS(ENOTDIR)},
    {"AT_EMPTY_PATH with a path is a plain lookup", "@/elf", .flags = AT_EMPTY_PATH,
     OK(BY_FD, "@/elf")},
    {"unknown flag", "@/elf", .flags = 0x8000, MISS(EINVAL)},
    {"AT_SYMLINK_FOLLOW is not an execveat flag", "@/elf", .flags = AT_SYMLINK_FOLLOW,
     MISS(EINVAL)},

    /* Symlinks. */
    {"symlink to the ELF: the target is what it points to", "@/link", OK(BY_FD, "@/elf")},
    {"a chain of symlinks", "@/chain1", OK(BY_FD, "@/elf")},
    {"symlink to a script keeps the link's name", "@/slink", OK(BY_NAME, "@/script")},
    {"AT_SYMLINK_NOFOLLOW on a symlink", "@/link", .flags = AT_SYMLINK_NOFOLLOW, MISS(ELOOP)},
    {"AT_SYMLINK_NOFOLLOW on a script goes on to the sandbox's exec", "@/script",
     .flags = AT_SYMLINK_NOFOLLOW, OK(BY_NAME, "@/script")},
    {"symlink loop", "@/loop1", MISS(ELOOP)},
    /* runnerd would follow the magic link as itself, not as the caller. */
    {"a symlink outside /proc into /proc/self/exe", "@/toself", REFUSED(EPERM)},

    /* Relative paths: against the caller's cwd (dir) or its dirfd (execveat). */
    {"relative ELF against the cwd", "elf", OK(BY_FD, "@/elf")},
    {"relative ./ELF against the cwd", "./elf", OK(BY_FD, "@/elf")},
    {"relative script against the cwd keeps its name", "script", OK(BY_NAME, "@/script")},
    {"relative name that only the dirfd has, against the cwd", "tool", MISS(ENOENT)},
    {"relative script against a dirfd keeps the dirfd copy", "tool", AT_SUB,
     OK(BY_NAME_AT, "@/sub/tool")},
    {"the same, the caller keeping its dirfd: the command uses its number", "tool", AT_SUB,
     OK(BY_NAME_AT, "@/sub/tool"), .bound = true},
    {"relative ELF against a dirfd runs by fd", "elf", AT_SUB, OK(BY_FD, "@/sub/elf")},
    {"an absolute path ignores the dirfd", "@/elf", AT_SUB, OK(BY_FD, "@/elf")},
    {"an absolute script ignores the dirfd", "@/script", AT_SUB, OK(BY_NAME, "@/script")},
    {"relative path against an fd that is not open", "tool", AT_UNUSED, MISS(EBADF)},
    {"relative path against a file fd", "tool", AT_ELF, MISS(ENOTDIR)},

    /* Empty paths: execveat(fd, "", AT_EMPTY_PATH) is fexecve. */
    {"empty path without AT_EMPTY_PATH", "", MISS(ENOENT)},
    {"empty path without AT_EMPTY_PATH, with a good fd", "", AT_ELF, MISS(ENOENT)},
    {"fexecve of an O_RDONLY fd", "", AT_ELF, AT_EMPTY_PATH, OK(BY_CALLER_FD, "@/elf")},
    {"fexecve of an O_PATH fd the caller keeps", "", AT_ELF_OPATH, AT_EMPTY_PATH,
     OK(BY_CALLER_FD, "@/elf"), .bound = true},
    {"fexecve of a directory fd", "", AT_SUB, AT_EMPTY_PATH, MISS(EACCES)},
    {"fexecve of the cwd", "", AT_CWD, AT_EMPTY_PATH, MISS(EACCES)},
    {"fexecve of an fd that is not open", "", AT_UNUSED, AT_EMPTY_PATH, MISS(EBADF)},

    /* The caller's fd by name: the sandbox has another /proc, so these become the fd. */
    {"/dev/fd/N", "/dev/fd/$E", OK(BY_CALLER_FD, "@/elf")},
    {"/dev/fd/N, the caller keeping N", "/dev/fd/$E", OK(BY_CALLER_FD, "@/elf"), .bound = true},
    {"/dev//fd/N is folded to the same", "/dev//fd/$O", OK(BY_CALLER_FD, "@/elf")},
    {"/proc/self/fd/N", "/proc/self/fd/$E", OK(BY_CALLER_FD, "@/elf")},
    {"/proc/thread-self/fd/N", "/proc/thread-self/fd/$E", OK(BY_CALLER_FD, "@/elf")},
    {"/dev/stdin is fd 0", "/dev/stdin", OK(BY_CALLER_FD, "@/elf")},
    {"/dev/fd/N of a directory", "/dev/fd/$D", MISS(EACCES)},
    {"/dev/fd/N of a script runs by fd", "/dev/fd/$K", OK(BY_CALLER_FD, "@/script")},
    {"/dev/fd/N not open: by name, nothing there", "/dev/fd/$N", MISS(ENOENT)},
    {"/proc/self/fd/N not open: by name, nothing there", "/proc/self/fd/$N", MISS(ENOENT)},
    {"/dev/fd/DIRFD/NAME: the caller's dirfd, as /proc/self/fd/DIRFD/NAME", "/dev/fd/$D/tool",
     OK(BY_FD, "@/sub/tool")},

    /* The caller's own /proc/PID: its magic links are followed as the caller's. */
    {"/proc/self/exe is the caller's binary", "/proc/self/exe", OK(BY_FD, "SELF")},
    {"/proc//self/exe is folded to the same", "/proc//self/exe", OK(BY_FD, "SELF")},
    {"/proc/./self/exe is folded to the same", "/proc/./self/exe", OK(BY_FD, "SELF")},
    {"/proc/self/./exe is folded to the same", "/proc/self/./exe", OK(BY_FD, "SELF")},
    {"/proc/thread-self/exe", "/proc/thread-self/exe", OK(BY_FD, "SELF")},
    {"/proc/PID/exe with the caller's pid", "/proc/$S/exe", OK(BY_FD, "SELF")},
    {"/proc/PID/task/TID/exe with the caller's ids", "/proc/$S/task/$T/exe", OK(BY_FD, "SELF")},
    {"/proc/self/cwd/NAME: the caller's cwd, then a plain lookup", "/proc/self/cwd/elf",
     OK(BY_FD, "@/elf")},
    /* Under /proc the file is run by fd even when it is a script: the sandbox, in its own
     * /proc, could not name it. */
    {"/proc/self/fd/DIRFD/NAME: the caller's dirfd, then a plain lookup", "/proc/self/fd/$D/tool",
     OK(BY_FD, "@/sub/tool")},
    {"/proc/self/exe with AT_SYMLINK_NOFOLLOW", "/proc/self/exe", .flags = AT_SYMLINK_NOFOLLOW,
     MISS(ELOOP)},
    {"/proc/self/exe/ names a directory that is not", "/proc/self/exe/", MISS(ENOTDIR)},
    {"/proc/self/exe/. the same", "/proc/self/exe/.", MISS(ENOTDIR)},
    /* "/proc/PID/.." would be runnerd's /proc (and "self" there runnerd). */
    {"\"..\" under /proc", "/proc/self/../self/exe", REFUSED(EPERM)},
    {"\"..\" right after /proc/", "/proc/../proc/self/exe", REFUSED(EPERM)},
    /* Only the first magic link is the caller's: past /proc/self/root, "self" is runnerd. */
    {"a second magic link past the first", "/proc/self/root/proc/self/exe", REFUSED(EPERM)},
    {"a symlink into /proc/self/exe past the caller's cwd", "/proc/self/cwd/toself",
     REFUSED(EPERM)},
    {"a plain file of /proc/self is not executable", "/proc/self/status", MISS(EACCES)},
    /* Another process's /proc/PID: runnerd's /proc and the caller's may be of different pid
     * namespaces, so "/proc/PID" is not known to be the same process for both. Its magic
     * links are not followed (RESOLVE_NO_MAGICLINKS gives ELOOP); runnerd then checks
     * whether the path opens at all when followed, and since it does (the child is ours,
     * same credentials, so ptrace-read access is granted), the answer is a refusal, not
     * a miss the caller's exec would not have had. */
    {"/proc/PID/exe of another process", "/proc/$C/exe", REFUSED(EPERM)},
    {"/proc/PID/cwd/NAME of another process", "/proc/$C/cwd/elf", REFUSED(EPERM)},
    {"/proc/PID/fd/N of another process", "/proc/$C/fd/$E", REFUSED(EPERM)},
};

static const char *outcome_name(enum rd_resolve_outcome o)
{
	return o == RD_RESOLVED ? "RESOLVED" : o == RD_RESOLVE_MISS ? "MISS" : "REFUSED";
}

static int dirfd_of(enum dirfd_kind k)
{
	switch (k) {
	case AT_CWD:
		return AT_FDCWD;
	case AT_SUB:
		return fx.sub_fd;
	case AT_ELF:
		return fx.elf_fd;
	case AT_ELF_OPATH:
		return fx.elf_path_fd;
	case AT_UNUSED:
		return fx.unused_fd;
	case AT_KEPT:
		return KEPT_FD;
	}
	return -1;
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			print_error("%s: %s: ", c->name, path);                                    \
			print_error(__VA_ARGS__);                                                  \
			print_error("\n");                                                         \
			bad++;                                                                     \
		}                                                                                  \
	} while (0)

/* Does fd name the file at path (same dev and ino)? */
static bool same_file(int fd, const char *path)
{
	struct stat a, b;
	return fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int check_resolved(const struct rcase *c, const char *path, int dirfd,
                          const struct rd_target *tg)
{
	int bad = 0;
	char want[PATH_MAX];
	if (strcmp(c->target, "SELF") == 0)
		snprintf(want, sizeof(want), "%s", cur->exe);
	else
		expand(c->target, want, sizeof(want));
	CHECK(tg->resolved && strcmp(tg->resolved, want) == 0, "resolved \"%s\", want \"%s\"",
	      tg->resolved ? tg->resolved : "(null)", want);
	struct stat st;
	CHECK(stat(want, &st) == 0 && st.st_dev == tg->dev && st.st_ino == tg->ino,
	      "dev:ino %lu:%lu is not %s's", (unsigned long)tg->dev, (unsigned long)tg->ino, want);
	bool by_fd = c->via == BY_FD || c->via == BY_CALLER_FD;
	if (by_fd) {
		CHECK(tg->exec_path && strcmp(tg->exec_path, "") == 0 &&
		          tg->exec_flags == AT_EMPTY_PATH,
		      "exec_path \"%s\" flags %#x, want \"\" and AT_EMPTY_PATH",
		      tg->exec_path ? tg->exec_path : "(null)", tg->exec_flags);
		/* The very file the decision was made on. */
		CHECK(same_file(tg->own_fd, want), "own_fd %d is not an fd of %s", tg->own_fd,
		      want);
	} else {
		/* The caller's own string, unfolded: $0 and the interpreter's argument. */
		CHECK(tg->exec_path == path, "exec_path \"%s\" is not the caller's string",
		      tg->exec_path ? tg->exec_path : "(null)");
		CHECK(tg->exec_flags == (c->flags & AT_SYMLINK_NOFOLLOW), "exec_flags %#x",
		      tg->exec_flags);
	}
	/* The caller's fd the target copies: the dirfd, or N of "/dev/fd/N" (0 for /dev/stdin). */
	int caller = -1;
	if (c->via == BY_NAME_AT || (c->via == BY_CALLER_FD && !path[0]))
		caller = dirfd;
	else if (c->via == BY_CALLER_FD)
		caller = strcmp(path, "/dev/stdin") == 0 ? 0 : atoi(strrchr(path, '/') + 1);
	CHECK(tg->caller_fd == caller, "caller_fd %d, want %d", tg->caller_fd, caller);
	if (c->bound) {
		CHECK(tg->exec_fd == caller && tg->exec_fd_is_target,
		      "bound: exec_fd %d (target %d), want the caller's %d", tg->exec_fd,
		      tg->exec_fd_is_target, caller);
		return bad;
	}
	CHECK(!tg->exec_fd_is_target, "exec_fd_is_target with the caller_fd not kept");
	switch (c->via) {
	case BY_FD:
	case BY_CALLER_FD:
		CHECK(tg->exec_fd == tg->own_fd, "exec_fd %d, want own_fd %d", tg->exec_fd,
		      tg->own_fd);
		break;
	case BY_NAME:
		CHECK(tg->exec_fd == AT_FDCWD, "exec_fd %d, want AT_FDCWD", tg->exec_fd);
		break;
	case BY_NAME_AT: {
		/* runnerd's copy of the caller's dirfd, which it closes after the launch. */
		char sub[PATH_MAX + 8];
		snprintf(sub, sizeof(sub), "%s/sub", fx.dir);
		CHECK(tg->exec_fd == tg->own_fd && same_file(tg->own_fd, sub) &&
		          tg->own_fd != dirfd,
		      "exec_fd %d own_fd %d, want own_fd, a copy of the dirfd", tg->exec_fd,
		      tg->own_fd);
		break;
	}
	case NONE:
		break;
	}
	return bad;
}

static int run_case(const struct rcase *c)
{
	int bad = 0;
	char path[PATH_MAX];
	expand(c->path, path, sizeof(path));
	int dirfd = dirfd_of(c->dirfd);
	int before = count_fds();

	struct rd_target tg;
	struct rd_error err = {0};
	int e = -1;
	enum rd_resolve_outcome o = rd_resolve(cur->t, dirfd, path, c->flags, &tg, &e, &err);
	CHECK(o == c->outcome, "%s (errno %d, %s), want %s", outcome_name(o), e, err.msg,
	      outcome_name(c->outcome));
	CHECK(e == c->e, "errno %d (%s), want %d (%s)", e, strerror(e), c->e, strerror(c->e));
	/* A miss says nothing (the caller's exec fails as the kernel's would); a refusal says
	 * why, for the audit. */
	if (o == RD_RESOLVE_REFUSED)
		CHECK(err.n > 0 && err.err == e, "a refusal without its reason (err %d)", err.err);
	else
		CHECK(err.n == 0, "unexpected message \"%s\"", err.msg);

	if (o == RD_RESOLVED && c->outcome == RD_RESOLVED) {
		/* The fds the caller keeps across its exec (rd_task_snapshot's), faked: some
		 * other numbers, and the one the target copies when the case says so. */
		struct rd_fd_copy kept[] = {{.target = 1, .fd = -1},
		                            {.target = fx.unused_fd + 1, .fd = -1},
		                            {.target = -1, .fd = -1}};
		if (c->bound)
			kept[2].target = tg.caller_fd;
		cur->t->fds = kept;
		cur->t->n_fds = ARRAY_SIZE(kept);
		rd_target_bind(cur->t, &tg);
		cur->t->fds = NULL;
		cur->t->n_fds = 0;
		bad += check_resolved(c, path, dirfd, &tg);
	}
	rd_target_free(&tg);
	CHECK(tg.own_fd == -1 && tg.caller_fd == -1 && !tg.resolved, "not reset by free");
	int after = count_fds();
	CHECK(after == before, "%d fds open before, %d after rd_target_free", before, after);
	return bad;
}

static void test_table(void **state)
{
	(void)state;
	static struct caller self;
	self = (struct caller){&fx.t, fx.self};
	cur = &self;
	int bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		bad += run_case(&cases[i]);
	if (bad)
		fail_msg("%d mismatches in the table (see above)", bad);
}

/* The same paths from the other caller: its binary, its cwd (dir/sub), its fd KEPT_FD (dir/elf
 * where ours is dir/script). Each row would resolve otherwise as runnerd (this process). */
static const struct rcase other_cases[] = {
    {"/proc/self/exe is the caller's binary, not runnerd's", "/proc/self/exe", OK(BY_FD, "SELF")},
    {"/proc/thread-self/exe", "/proc/thread-self/exe", OK(BY_FD, "SELF")},
    {"/proc/PID/exe with the caller's pid", "/proc/$S/exe", OK(BY_FD, "SELF")},
    {"/proc/PID/exe with runnerd's pid is another process", "/proc/$R/exe", REFUSED(EPERM)},
    {"a relative script against the caller's cwd", "tool", OK(BY_NAME, "@/sub/tool")},
    {"a relative ELF against the caller's cwd", "elf", OK(BY_FD, "@/sub/elf")},
    {"a name only runnerd's cwd has", "script", MISS(ENOENT)},
    {"/proc/self/cwd/NAME", "/proc/self/cwd/tool", OK(BY_FD, "@/sub/tool")},
    {"/dev/fd/N is the caller's fd N", "/dev/fd/$K", OK(BY_CALLER_FD, "@/elf")},
    {"/proc/self/fd/N is the caller's fd N", "/proc/self/fd/$K", OK(BY_CALLER_FD, "@/elf")},
    {"fexecve of the caller's fd N", "", AT_KEPT, AT_EMPTY_PATH, OK(BY_CALLER_FD, "@/elf"),
     .bound = true},
    {"fexecve of an fd only runnerd has", "", AT_ELF, AT_EMPTY_PATH, MISS(EBADF)},
    {"a dirfd only runnerd has", "tool", AT_SUB, MISS(EBADF)},
};

static void test_other_caller(void **state)
{
	(void)state;
	static struct caller other;
	other = (struct caller){&fx.ot, fx.other_exe};
	cur = &other;
	int bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(other_cases); i++)
		bad += run_case(&other_cases[i]);
	if (bad)
		fail_msg("%d mismatches in the table (see above)", bad);
}

/* ---- focused tests -------------------------------------------------------------------- */

/* pid 1 is nobody's caller here. Its exe link is not followed as the caller's either way;
 * whether the answer is a refusal or a miss depends on whether runnerd may read the link at
 * all: root may (the followed probe opens, so it is a refusal, EPERM); anyone else gets the
 * kernel's EACCES from proc_pid_get_link before RESOLVE_NO_MAGICLINKS is even looked at,
 * which is what the caller's own exec would get too. */
static void test_proc_pid1(void **state)
{
	(void)state;
	if (fx.t.tgid == 1)
		skip();
	char buf[PATH_MAX];
	bool readable = readlink("/proc/1/exe", buf, sizeof(buf)) > 0;
	int why = errno;
	struct rd_target tg;
	struct rd_error err = {0};
	int e;
	enum rd_resolve_outcome o = rd_resolve(&fx.t, AT_FDCWD, "/proc/1/exe", 0, &tg, &e, &err);
	if (readable) {
		assert_int_equal(o, RD_RESOLVE_REFUSED);
		assert_int_equal(e, EPERM);
		assert_non_null(strstr(err.msg, "/proc magic link"));
	} else {
		assert_int_equal(why, EACCES);
		assert_int_equal(o, RD_RESOLVE_MISS);
		assert_int_equal(e, EACCES);
	}
	rd_target_free(&tg);
}

/* The messages name the path and the reason: they go to the audit log as they are. */
static void test_refusal_messages(void **state)
{
	(void)state;
	static const struct {
		const char *path, *says;
	} want[] = {
	    {"/proc/self/../self/exe", "/proc/self/../self/exe: runnerd does not resolve \"..\""},
	    {"/proc/self/root/proc/self/exe", "/proc/self/root/proc/self/exe leads through a "
	                                      "/proc magic link"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		struct rd_target tg;
		struct rd_error err = {0};
		int e;
		assert_int_equal(rd_resolve(&fx.t, AT_FDCWD, want[i].path, 0, &tg, &e, &err),
		                 RD_RESOLVE_REFUSED);
		if (!strstr(err.msg, want[i].says))
			fail_msg("%s: message \"%s\" lacks \"%s\"", want[i].path, err.msg,
			         want[i].says);
		rd_target_free(&tg);
	}
}

/* rd_target_bind switches only to a number the caller keeps, and leaves by-name and own-fd
 * targets alone even when some fd of the caller has the same number as runnerd's copy. */
static void test_bind_only_kept(void **state)
{
	(void)state;
	struct rd_target tg;
	struct rd_error err = {0};
	int e;
	assert_int_equal(rd_resolve(&fx.t, AT_FDCWD, "elf", 0, &tg, &e, &err), RD_RESOLVED);
	int own = tg.own_fd;
	struct rd_fd_copy kept[] = {{.target = own, .fd = -1}, {.target = -1, .fd = -1}};
	fx.t.fds = kept;
	fx.t.n_fds = ARRAY_SIZE(kept);
	rd_target_bind(&fx.t, &tg);
	fx.t.fds = NULL;
	fx.t.n_fds = 0;
	assert_int_equal(tg.exec_fd, own);
	assert_false(tg.exec_fd_is_target);
	rd_target_free(&tg);
}

/* The cwd fd is opened on demand and then kept: a second relative lookup does not open
 * another. */
static void test_cwd_opened_once(void **state)
{
	(void)state;
	struct rd_task t;
	struct rd_error err = {0};
	assert_int_equal(rd_task_open(gettid(), &t, &err), 0);
	assert_int_equal(t.cwd_fd, -1);
	struct rd_target tg;
	int e;
	assert_int_equal(rd_resolve(&t, AT_FDCWD, "script", 0, &tg, &e, &err), RD_RESOLVED);
	int cwd = t.cwd_fd;
	assert_true(cwd >= 0);
	rd_target_free(&tg);
	assert_int_equal(rd_resolve(&t, AT_FDCWD, "elf", 0, &tg, &e, &err), RD_RESOLVED);
	assert_int_equal(t.cwd_fd, cwd);
	rd_target_free(&tg);
	rd_task_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),          cmocka_unit_test(test_other_caller),
	    cmocka_unit_test(test_proc_pid1),      cmocka_unit_test(test_refusal_messages),
	    cmocka_unit_test(test_bind_only_kept), cmocka_unit_test(test_cwd_opened_once),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
