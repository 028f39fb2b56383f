/* The command's view of the machine: the kernel's knobs read-only and a /dev of its own, the
 * session's part made once by the zygote, the sandbox's part by each sandbox's pid 1 (view.h).
 * See docs/architecture.md, "The command's view". */
#include "sandbox/view.h"
#include "lib/git.h"
#include "lib/strv.h"
#include "lib/syscalls.h"
#include "lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Written, these reach the whole machine, not the sandbox: core_pattern and the other
 * sysctls (a root command's write to core_pattern would have the kernel run its program as
 * root of the machine), sysrq, interrupt affinities, the buses' settings, the file systems'
 * (nfsd's exports), ACPI's, SCSI's (/proc/scsi/scsi removes a disk) and sound's. The kernel
 * checks them by file mode and uid alone, which the machine's root passes in any user
 * namespace. Container runtimes make the same ones read-only or mask them. One the kernel
 * lacks costs a lookup. */
static const char *const proc_readonly[] = {
    "/proc/sys", "/proc/sysrq-trigger", "/proc/irq",  "/proc/bus",
    "/proc/fs",  "/proc/acpi",          "/proc/scsi", "/proc/asound",
};

/* Read by the machine's root, these show the machine beyond the sandbox's pid namespace: its
 * timers with the pids and names of the processes that set them, its scheduler's view of every
 * task, the kernel's memory, every user's keys. /dev/null goes over each where the sandbox's
 * uid 0 is the machine's root, as container runtimes mask them. Not in other sandboxes: there
 * the files' modes refuse the first four, /proc/keys lists the user's own keys alone, and a
 * file covered in /proc makes the kernel refuse every /proc a command's own sandbox (bwrap,
 * Claude Code's, Codex's) mounts (mount_too_revealing() accepts mounts on empty directories
 * only). */
static const char *const proc_hidden[] = {
    "/proc/timer_list", "/proc/sched_debug", "/proc/timer_stats", "/proc/latency_stats",
    "/proc/kcore",      "/proc/keys",        "/proc/key-users",
};

/* The device nodes a command gets, bound from the machine's /dev: nothing in them reaches
 * another process or a disk. /dev/tty is the command's own terminal, if it has one. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

static const struct {
	const char *name, *target;
} dev_links[] = {
    {"ptmx", "pts/ptmx"},          {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"},
    {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
};

static int set_readonly(const char *path, unsigned flags)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	return mount_setattr(AT_FDCWD, path, flags, &a, sizeof(a)) < 0 ? -errno : 0;
}

/* path, found without a symlink on the way (a command could have planted one to turn a mount
 * elsewhere): an O_PATH fd, or -errno (-ELOOP for a symlink). */
static int open_nofollow(const char *path)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	int fd = rd_openat2(AT_FDCWD, path, &how);
	return fd >= 0 ? fd : -errno;
}

static bool absent(int e)
{
	return e == -ENOENT || e == -ENOTDIR;
}

/* The tree at fd (with what is mounted under it) bound on itself, read-only when readonly: by
 * fd, so that what a command swaps in on the path meanwhile is not what is mounted over. */
static int rebind(int fd, bool readonly)
{
	int tree =
	    open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	int r = tree < 0 ? -errno : 0;
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	if (r == 0 && readonly &&
	    mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
		r = -errno;
	if (r == 0 &&
	    move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		r = -errno;
	if (tree >= 0)
		close(tree);
	return r;
}

/* path, and every mount under it, read-only: bound on itself, so that only this view of it
 * changes (it may be a mount's root or not). A path that is not there is nothing to protect;
 * one with a symlink on the way: -ELOOP. */
static int readonly_tree(const char *path)
{
	int fd = open_nofollow(path);
	if (fd < 0)
		return absent(fd) ? 0 : fd;
	int r = rebind(fd, true);
	close(fd);
	return r;
}

/* What runnerd's two gits share (git_shim, git_gate): */
/* - their refusal, on stderr, with git's status for a usage error; */
#define SH_REFUSE                                                                                  \
	"refuse() {\n"                                                                             \
	"\techo \"runnerd: git: $*; run git there without the secret\" >&2\n"                      \
	"\texit 128\n"                                                                             \
	"}\n"
/* - git's options before the subcommand whose value is the next argument (but -c, -C); */
#define SH_VALUE_OPTS "--namespace | --super-prefix | --config-env | --attr-source | --shallow-file"
/* - the environment the real git gets: no module of the directory it works in for a Python
 *   program git runs (python3 -m NAME, a filter as nbstripout installs it: the work tree is the
 *   commands' to write), no shell escape from git's pager (supervisor/grant.c sets the same
 *   for a granted git). */
#define SH_SAFE_ENV "export PYTHONSAFEPATH=1 LESSSECURE=1\n"

/* git for a program a rule grants a secret (RD_VIEW_BIN_DIR; supervisor/grant.c sets what it
 * reads). Where git is to work (the directory it runs in, then each -C), known by where it
 * is, not by a name a command may rename:
 * - at or under RUNNERD_GIT_TOP (the work tree runnerd checked; with none, the writable root
 *   the program started in, which no command can rename it out of), it tells git that
 *   repository (RUNNERD_GIT_DIR, _WORK_TREE, _COMMON_DIR), so that a .git/commondir or a
 *   nearer .git a command made after the check is not taken; where a .git is there now
 *   between that directory and the top (another repository, or one made since: a command's,
 *   the program's own git init), it refuses, as git would take a configuration commands
 *   can write;
 * - elsewhere, it refuses in a writable root of commands (RUNNERD_GIT_ROOTS, one a line), and
 *   where the repository git would find there is a .git file or has a commondir (a worktree
 *   whose git directory commands may write); else it runs git as it is (the user's other
 *   repositories).
 * A clone is refused (commands can write the new repository's configuration while git makes
 * and reads it: a smudge filter, a credential helper), and so are --git-dir, --work-tree,
 * --bare and --exec-path=DIR (and GIT_EXEC_PATH is unset: git would run its own programs from
 * where the program says, unchecked), and the subcommands and long options a
 * granted git is refused (a submodule's configuration is the commands' to write); init runs
 * unpinned. Then the real git (RUNNERD_GIT), with PYTHONSAFEPATH=1: a Python program git
 * runs (a filter, "python3 -m nbstripout") imports no module of the work tree, where git runs
 * it. */
static const char git_shim[] =
    "#!/bin/sh\n"
    "# runnerd: git for a program a rule grants a secret\n"
    "# Is $1 (up to any =) a prefix of the long option $2, of at least $3 characters?\n"
    "lo() {\n"
    "\tn=${1%%=*}\n"
    "\t[ ${#n} -ge \"$3\" ] || return 1\n"
    "\tcase $2 in \"$n\"*) return 0 ;; esac\n"
    "\treturn 1\n"
    "}\n" SH_REFUSE
    "# A merge strategy is a program, git-merge-NAME: with a /, one of the work tree's.\n"
    "strategy_ok() {\n"
    "\tcase $1 in */*) refuse \"a merge strategy with a / is refused for a program that\" \\\n"
    "\t\t\"holds a secret\" ;;\n"
    "\tesac\n"
    "}\n"
    "if [ -z \"${RUNNERD_GIT-}\" ]; then\n"
    "\techo 'runnerd: git: RUNNERD_GIT is not set (this git is for granted programs)' >&2\n"
    "\texit 127\n"
    "fi\n"
    "# runnerd sets both; a program that took one away would have git checked by nothing.\n"
    "[ -n \"${RUNNERD_GIT_DIR-}\" ] || refuse \"RUNNERD_GIT_DIR is not set\"\n"
    "# Where git finds its own programs: its own (git sets it for what it runs, as it would\n"
    "# find it unset); one a program names would hold programs of its choosing.\n"
    "unset GIT_EXEC_PATH\n"
    "# GIT_DIR, GIT_WORK_TREE and GIT_COMMON_DIR, set by the program, name a repository\n"
    "# runnerd did not check, as --git-dir would; the three this git set (a hook's git) pass,\n"
    "# all three as they were (one alone, git would take the rest from where it names).\n"
    "if [ -n \"${GIT_DIR+1}${GIT_WORK_TREE+1}${GIT_COMMON_DIR+1}\" ]; then\n"
    "\tfor v in GIT_DIR GIT_WORK_TREE GIT_COMMON_DIR; do\n"
    "\t\teval \"is=\\${$v+1}:\\${$v-} was=\\${RUNNERD_$v+1}:\\${RUNNERD_$v-}\"\n"
    "\t\t[ \"$is\" = \"$was\" ] || refuse \"$v names a repository runnerd did not\" \\\n"
    "\t\t\t\"check for this program, which holds a secret\"\n"
    "\tdone\n"
    "fi\n"
    "here=$(pwd -P && echo .) || exit 128\n"
    "here=${here%??}\n"
    "skip= cdir= sub=\n"
    "for a do\n"
    "\tif [ -n \"$cdir\" ]; then\n"
    "\t\tcase $a in /*) to=$a ;; *) to=$here/$a ;; esac\n"
    "\t\there=$(cd -P \"$to\" 2>/dev/null && pwd -P && echo .) || refuse \"cannot change to "
    "$a\"\n"
    "\t\there=${here%??} cdir=\n"
    "\t\tcontinue\n"
    "\tfi\n"
    "\tif [ -n \"$skip\" ]; then skip=; continue; fi\n"
    "\tcase $a in\n"
    "\t-C) cdir=1 ;;\n"
    "\t--git-dir | --git-dir=* | --work-tree | --work-tree=* | --bare | --exec-path=*)\n"
    "\t\trefuse \"$a names a repository runnerd did not check for this program,\" \\\n"
    "\t\t\t\"which holds a secret\" ;;\n"
    "\t-c | " SH_VALUE_OPTS ")\n"
    "\t\tskip=1 ;;\n"
    "\t-*) ;;\n"
    "\t*) sub=$a; break ;;\n"
    "\tesac\n"
    "done\n"
    "if [ \"$sub\" = clone ]; then\n"
    "\trefuse \"a clone by a program that holds a secret is refused: commands can write\" \\\n"
    "\t\t\"the new repository's configuration while git makes it and reads it again\"\n"
    "fi\n"
    "# What a granted git is refused (policy/rules.c, rd_grant_argv_refused): subcommands that\n"
    "# run a command they are given, take a repository from their arguments, go into\n"
    "# submodules or on with a todo commands can write; options that do the like.\n"
    "case $sub in\n"
    "submodule | submodule--helper | bisect | bisect--helper | filter-branch | difftool | \\\n"
    "\tmergetool | send-email | daemon | instaweb | merge-index | remote-ext | receive-pack | "
    "\\\n"
    "\tupload-pack | upload-archive | fetch-pack | send-pack | http-backend | shell | \\\n"
    "\trebase | cherry-pick | revert | am)\n"
    "\trefuse \"git $sub is refused for a program that holds a secret, as for a granted git\" "
    ";;\n"
    "esac\n"
    "after= merge= strategy=\n"
    "for a do\n"
    "\tif [ -z \"$after\" ]; then\n"
    "\t\t[ \"$a\" = \"$sub\" ] && after=1\n"
    "\t\tcontinue\n"
    "\tfi\n"
    "\t[ -z \"$strategy\" ] || strategy_ok \"$a\"\n"
    "\tstrategy=\n"
    "\tcase $a in\n"
    "\t--) break ;;\n"
    "\t--no-rebase) merge=1 ;;\n"
    "\t-[!-]*r*) [ \"$sub\" != pull ] || merge= ;;\n"
    "\t--*)\n"
    "\t\t# git takes any prefix of a long option that names it alone: each is refused\n"
    "\t\t# from the shortest git takes, as in rd_grant_argv_refused.\n"
    "\t\tv=${a#*=}\n"
    "\t\t[ \"$v\" != \"$a\" ] || v=\n"
    "\t\t! lo \"$a\" --rebase 5 || [ \"$sub\" != pull ] || merge=\n"
    "\t\tfor o in --receive-pack:4 --upload-pack:4 --exec:4 --template:4 --extcmd:4 \\\n"
    "\t\t\t--tree-filter:4 --index-filter:4 --smtp-server:4 --config:5 \\\n"
    "\t\t\t--open-files-in-pager:4 --recursive:9; do\n"
    "\t\t\t! lo \"$a\" \"${o%:*}\" \"${o#*:}\" || refuse \"$a is refused for a program\" \\\n"
    "\t\t\t\t\"that holds a secret, as for a granted git\"\n"
    "\t\tdone\n"
    "\t\tif { lo \"$a\" --recurse-submodules 5 && [ \"$v\" != no ]; } ||\n"
    "\t\t\t{ lo \"$a\" --ignore-submodules 10 && [ -n \"$v\" ] && [ \"$v\" != all ]; } ||\n"
    "\t\t\t{ lo \"$a\" --submodule 6 && [ \"$v\" != short ]; }; then\n"
    "\t\t\trefuse \"$a goes into submodules, refused for a program that holds a secret\"\n"
    "\t\tfi\n"
    "\t\tif lo \"$a\" --strategy 6 && { [ \"$sub\" = merge ] || [ \"$sub\" = pull ]; }; then\n"
    "\t\t\tcase $a in *=*) strategy_ok \"$v\" ;; *) strategy=1; continue ;; esac\n"
    "\t\tfi\n"
    "\t\t;;\n"
    "\tesac\n"

    "\tcase $sub:$a in\n"
    "\tmerge:-s | pull:-s) strategy=1 ;;\n"
    "\tmerge:-[!-]*s*/* | pull:-[!-]*s*/* | \\\n"
    "\t\tls-remote:-u* | ls-remote:-[!-]*u* | grep:-O* | grep:-[!-]*O*)\n"
    "\t\trefuse \"$a is refused for a program that holds a secret, as for a granted git\" ;;\n"
    "\tesac\n"
    "done\n"
    "if [ \"$sub\" = pull ] && [ -z \"$merge\" ]; then\n"
    "\trefuse \"git pull may rebase (its todo is a file commands can write); pass\" \\\n"
    "\t\t\"--no-rebase, or pull where no secret is granted\"\n"
    "fi\n"
    "top=${RUNNERD_GIT_TOP%/}\n"
    "d=$here\n"
    "case $here/ in\n"
    "\"$top\"/*)\n"
    "\twhile ! { [ -n \"${RUNNERD_GIT_WORK_TREE-}\" ] && [ \"$d\" = \"$top\" ]; }; do\n"
    "\t\tif [ -e \"$d/.git\" ] || [ -L \"$d/.git\" ]; then\n"
    "\t\t\trefuse \"$d/.git lies between here and the repository runnerd checked\" \\\n"
    "\t\t\t\t\"for this program, which holds a secret\" \\\n"
    "\t\t\t\t\"(${RUNNERD_GIT_WORK_TREE:-none}): another repository, or one made\" \\\n"
    "\t\t\t\t\"since, whose configuration commands can write\"\n"
    "\t\tfi\n"
    "\t\t[ -n \"$d\" ] || break\n"
    "\t\td=${d%/*}\n"
    "\tdone\n"
    "\tif [ \"$sub\" != init ]; then\n"
    "\t\texport GIT_DIR=\"$RUNNERD_GIT_DIR\"\n"
    "\t\t[ -z \"${RUNNERD_GIT_WORK_TREE-}\" ] || export "
    "GIT_WORK_TREE=\"$RUNNERD_GIT_WORK_TREE\"\n"
    "\t\t[ -z \"${RUNNERD_GIT_COMMON_DIR-}\" ] || export "
    "GIT_COMMON_DIR=\"$RUNNERD_GIT_COMMON_DIR\"\n"
    "\tfi\n"
    "\t;;\n"
    "*)\n"
    "\tif [ \"$sub\" != init ]; then\n"
    "\t\tset -f\n"
    "\t\tIFS='\n"
    "'\n"
    "\t\tfor r in $RUNNERD_GIT_ROOTS; do\n"
    "\t\t\tcase $here/ in\n"
    "\t\t\t\"${r%/}\"/*)\n"
    "\t\t\t\trefuse \"git would work in $here, where commands can write, outside\" \\\n"
    "\t\t\t\t\t\"the repository runnerd checked for this program, which holds a\" \\\n"
    "\t\t\t\t\t\"secret (${RUNNERD_GIT_WORK_TREE:-none})\" ;;\n"
    "\t\t\tesac\n"
    "\t\tdone\n"
    "\t\tunset IFS\n"
    "\t\tset +f\n"
    "\t\twhile :; do\n"
    "\t\t\tif [ -e \"$d/.git\" ] || [ -L \"$d/.git\" ]; then\n"
    "\t\t\t\tif [ -L \"$d/.git\" ] || [ ! -d \"$d/.git\" ] || [ -e \"$d/.git/commondir\" ]; "
    "then\n"
    "\t\t\t\t\trefuse \"$d/.git names a git directory elsewhere, which commands\" \\\n"
    "\t\t\t\t\t\t\"may write, for this program, which holds a secret\"\n"
    "\t\t\t\tfi\n"
    "\t\t\t\tbreak\n"
    "\t\t\tfi\n"
    "\t\t\t[ -n \"$d\" ] || break\n"
    "\t\t\td=${d%/*}\n"
    "\t\tdone\n"
    "\tfi\n"
    "\t;;\n"
    "esac\n"
    "# git works where the checks above looked: in $here, not at each -C's name again, which\n"
    "# a command could turn elsewhere before git starts.\n"
    "skip= cdir= past=\n"
    "for a do\n"
    "\tshift\n"
    "\tif [ -n \"$past\" ]; then set -- \"$@\" \"$a\"; continue; fi\n"
    "\tif [ -n \"$cdir\" ]; then cdir=; continue; fi\n"
    "\tif [ -n \"$skip\" ]; then skip=; set -- \"$@\" \"$a\"; continue; fi\n"
    "\tcase $a in\n"
    "\t-C) cdir=1; continue ;;\n"
    "\t-c | " SH_VALUE_OPTS ")\n"
    "\t\tskip=1 ;;\n"
    "\t-*) ;;\n"
    "\t*) past=1 ;;\n"
    "\tesac\n"
    "\tset -- \"$@\" \"$a\"\n"
    "done\n"
    "cd -- \"$here\" || exit 128\n" SH_SAFE_ENV "exec \"$RUNNERD_GIT\" \"$@\"\n";

/* git's own git (RD_VIEW_GIT_GATE), over the git of its exec path in the view of a command a
 * rule grants a secret: what git runs for itself (a fetch's remote helper, a gc, the status
 * of a submodule, a hook's git, a built-in by its dashed name) finds it first on the PATH git
 * sets. It runs the real git (RUNNERD_GIT) only where that git is told the repository runnerd
 * checked, as runnerd told the git it granted: GIT_DIR as it was, which git passes on to what
 * it runs there, and GIT_COMMON_DIR as runnerd set it or left it, since git never sets it
 * itself (a git told the same GIT_DIR without it reads a commondir a command may have written
 * since: a submodule's lazy fetch, its git directory named the checked one by a command).
 * Elsewhere git would take a configuration commands may write: a submodule's (git tells its
 * git GIT_DIR=.git there), whose filter git runs with the secret, entered by a .gitmodules a
 * command put in the index; a linked worktree's. A git told none of the three (a hook's,
 * which cleared them to work in another repository) goes to git_shim, which takes the
 * checked repository at or under its top and refuses one commands can write elsewhere.
 * Where runnerd pinned no repository (git init; one the agent's environment names), git runs
 * none of its own. As git_shim, it refuses --exec-path=DIR, unsets GIT_EXEC_PATH (git sets
 * its own for what it runs), and sets PYTHONSAFEPATH=1. */
static const char git_gate[] =
    "#!/bin/sh\n"
    "# runnerd: git's own git, for a command a rule grants a secret\n" SH_REFUSE
    "[ -n \"${RUNNERD_GIT-}\" ] ||\n"
    "\trefuse \"runnerd found no git for this program on its PATH to keep in a repository\"\n"
    "# A built-in run by its dashed name (git-rev-parse, a link to git): its subcommand.\n"
    "name=${0##*/}\n"
    "case $name in gate) ;; git-[a-z]*) set -- \"${name#git-}\" \"$@\" ;; esac\n"
    "unset GIT_EXEC_PATH\n"
    "# A git cleared of them (a hook that works in another repository clears them, as\n"
    "# githooks(5) says) is judged as a granted program's git is.\n"
    "if [ -z \"${GIT_DIR+1}${GIT_WORK_TREE+1}${GIT_COMMON_DIR+1}\" ]; then\n"
    "\texec \"" RD_VIEW_BIN_DIR "/git\" \"$@\"\n"
    "fi\n"
    "# git never sets GIT_COMMON_DIR itself: one taken away (another repository's git, a\n"
    "# submodule's lazy fetch) would have git read a commondir a command wrote since.\n"
    "if [ -z \"${RUNNERD_GIT_DIR-}\" ] || [ \"${GIT_DIR-}\" != \"$RUNNERD_GIT_DIR\" ] ||\n"
    "\t[ \"${GIT_COMMON_DIR+1}:${GIT_COMMON_DIR-}\" != \\\n"
    "\t\t\"${RUNNERD_GIT_COMMON_DIR+1}:${RUNNERD_GIT_COMMON_DIR-}\" ]; then\n"
    "\trefuse \"git would run git for itself in a repository other than the one runnerd\" \\\n"
    "\t\t\"checked (GIT_DIR ${GIT_DIR-unset} in $PWD; a submodule, another worktree), whose\" \\\n"
    "\t\t\"configuration commands may write\"\n"
    "fi\n"
    "skip=\n"
    "for a do\n"
    "\tif [ -n \"$skip\" ]; then skip=; continue; fi\n"
    "\tcase $a in\n"
    "\t--git-dir | --git-dir=* | --work-tree | --work-tree=* | --bare | --exec-path=*)\n"
    "\t\trefuse \"$a names a repository runnerd did not check\" ;;\n"
    "\t-c | -C | " SH_VALUE_OPTS ")\n"
    "\t\tskip=1 ;;\n"
    "\t-*) ;;\n"
    "\t*) break ;;\n"
    "\tesac\n"
    "done\n" SH_SAFE_ENV "exec \"$RUNNERD_GIT\" \"$@\"\n";

/* The script text at path, mode 0755. */
static int write_script(const char *path, const char *text, size_t len)
{
	int f = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (f < 0)
		return -errno;
	ssize_t w = write(f, text, len);
	int r = w == (ssize_t)len ? 0 : w < 0 ? -errno : -EIO;
	if (close(f) < 0 && r == 0)
		r = -errno;
	if (r == 0 && fchmodat(AT_FDCWD, path, 0755, 0) < 0)
		r = -errno;
	return r;
}

/* RD_VIEW_BIN_DIR: a tmpfs of its own (/dev's is noexec), with git_shim as git and git_gate,
 * read-only. */
static int make_bin(struct rd_view_error *e)
{
	e->what = RD_VIEW_BIN_DIR;
	if (mkdir(RD_VIEW_BIN_DIR, 0755) < 0 ||
	    mount("tmpfs", RD_VIEW_BIN_DIR, "tmpfs", MS_NOSUID | MS_NODEV,
	          "mode=0755,size=32k,nr_inodes=8") < 0)
		return -errno;
	e->what = RD_VIEW_BIN_DIR "/git";
	int r = write_script(RD_VIEW_BIN_DIR "/git", git_shim, sizeof(git_shim) - 1);
	if (r == 0) {
		e->what = RD_VIEW_GIT_GATE;
		r = write_script(RD_VIEW_GIT_GATE, git_gate, sizeof(git_gate) - 1);
	}
	/* Where a sandbox binds the real git (rd_view_git_gate). */
	if (r == 0) {
		e->what = RD_VIEW_GIT_REAL;
		r = mkdir(RD_VIEW_BIN_DIR "/real", 0755) < 0 ||
		            mknod(RD_VIEW_GIT_REAL, S_IFREG, 0) < 0
		        ? -errno
		        : 0;
	}
	if (r == 0) {
		e->what = "making " RD_VIEW_BIN_DIR " read-only";
		r = set_readonly(RD_VIEW_BIN_DIR, 0);
	}
	return r;
}

static int make_dev(struct rd_view_error *e)
{
	enum { N = sizeof(dev_nodes) / sizeof(dev_nodes[0]) };
	int fds[N];
	/* The machine's nodes, held before a tmpfs covers them. */
	for (int i = 0; i < N; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/dev/%s", dev_nodes[i]);
		fds[i] = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	int r = 0;
	e->what = "mounting a tmpfs on /dev";
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          "mode=0755,size=64k,nr_inodes=64") < 0) {
		r = -errno;
		goto out;
	}
	for (int i = 0; i < N; i++) {
		struct stat st;
		/* Absent on this machine (a container may have no /dev/tty), or not a device:
		 * the command has none either. */
		if (fds[i] < 0 || fstat(fds[i], &st) < 0 || !S_ISCHR(st.st_mode))
			continue;
		char p[32], from[32];
		snprintf(p, sizeof(p), "/dev/%s", dev_nodes[i]);
		snprintf(from, sizeof(from), "/proc/self/fd/%d", fds[i]);
		int f = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		e->what = p;
		if (f < 0 || close(f) < 0 || mount(from, p, NULL, MS_BIND, NULL) < 0) {
			r = -errno;
			goto out;
		}
	}
	for (size_t i = 0; i < sizeof(dev_links) / sizeof(dev_links[0]); i++) {
		char p[32];
		snprintf(p, sizeof(p), "/dev/%s", dev_links[i].name);
		e->what = p;
		if (symlink(dev_links[i].target, p) < 0) {
			r = -errno;
			goto out;
		}
	}
	/* Where each sandbox mounts its own devpts instance, which /dev/ptmx (the link above)
	 * opens in, and the session's tmpfs for POSIX shared memory; and the empty directory
	 * that masks a directory (view.h). */
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {{"/dev/pts", 0755}, {"/dev/shm", 01777}, {RD_VIEW_EMPTY_DIR, 0555}};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		e->what = dirs[i].path;
		if (mkdir(dirs[i].path, dirs[i].mode) < 0 ||
		    chmod(dirs[i].path, dirs[i].mode) < 0) {
			r = -errno;
			goto out;
		}
	}
	/* POSIX shared memory (shm_open) of the session's own: none of the machine's. */
	e->what = "mounting a tmpfs on /dev/shm";
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777") <
	    0) {
		r = -errno;
		goto out;
	}
	if ((r = make_bin(e)) < 0)
		goto out;
	/* Nothing more is made in /dev itself: its tmpfs read-only (not what is mounted on it). */
	e->what = "making /dev read-only";
	r = set_readonly("/dev", 0);
out:
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

/* Every mount point, in mountinfo's order, after 'r' (read-only before the view was made) or
 * 'w'. A writable root never makes a read-only one writable: in a user namespace of its own the
 * kernel locks them so (MNT_LOCK_READONLY on the copy); in the machine's, where runnerd serve's
 * zygote makes the view, nothing would, and an engine's ":ro" volume inside the workspace
 * became writable to commands. Taken by rd_view_session, before it makes everything
 * read-only. */
static struct rd_strv all_mounts;

/* Did the writable root path lie on a mount that was read-only before the view (the deepest
 * mount point at or above it; of two at one point, the later, mounted over the other)? Such a
 * root stays read-only: an engine's read-only volume or root file system (--read-only) holding
 * the workspace became writable to commands in the machine's user namespace, where nothing
 * locks it. */
static bool on_ro_mount(const char *path)
{
	size_t best = 0;
	bool ro = false;
	for (size_t i = 0; i < all_mounts.n; i++) {
		const char *m = all_mounts.v[i] + 1;
		size_t n = strlen(m);
		if (rd_path_within(path, m) && n >= best) {
			best = n;
			ro = all_mounts.v[i][0] == 'r';
		}
	}
	return ro;
}

/* mountinfo's escapes (\040 for a space, ...) decoded in place. */
static void unescape(char *s)
{
	char *out = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

static int take_mounts(void)
{
	rd_strv_free(&all_mounts);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int r = 0;
	while (r == 0 && getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS ... */
		char *field[6], *save = NULL;
		int n = 0;
		for (char *t = strtok_r(line, " ", &save); t && n < 6;
		     t = strtok_r(NULL, " ", &save))
			field[n++] = t;
		if (n < 6)
			continue;
		bool ro = strncmp(field[5], "ro", 2) == 0 && (!field[5][2] || field[5][2] == ',');
		unescape(field[4]);
		char *tagged = NULL;
		if (asprintf(&tagged, "%c%s", ro ? 'r' : 'w', field[4]) < 0) {
			r = -ENOMEM;
			break;
		}
		r = rd_strv_add(&all_mounts, tagged);
		free(tagged);
	}
	free(line);
	fclose(f);
	return r;
}

/* The writable root path, bound on itself and made writable again, with what is mounted under
 * it (each mount that was read-only stays so: all_mounts). Found without
 * a symlink on the way: a path a command could have changed into a symlink (in /tmp, say)
 * must not make another directory writable. A path that is not there, or has a symlink: left
 * as it is (read-only). */
static int writable_tree(const char *path)
{
	int fd = open_nofollow(path);
	if (fd < 0) /* not there, or a symlink on the way: left read-only */
		return absent(fd) || fd == -ELOOP || fd == -EACCES ? 0 : fd;
	/* A copy of the tree there, made writable while detached, then put over it. */
	int tree =
	    open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	int r = tree < 0 ? -errno : 0;
	struct mount_attr a = {.attr_clr = MOUNT_ATTR_RDONLY};
	if (r == 0 && mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0) {
		/* A mount under it that the machine has read-only: this one alone, then. */
		r = errno == EPERM && mount_setattr(tree, "", AT_EMPTY_PATH, &a, sizeof(a)) == 0
		        ? 0
		        : -errno;
	}
	if (r == 0 &&
	    move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		r = -errno;
	if (tree >= 0)
		close(tree);
	close(fd);
	/* Read-only again, each where it is: one shadowed by another mount since (EINVAL: not a
	 * mount's root any more) or gone is out of reach already. */
	for (size_t i = 0; r == 0 && i < all_mounts.n; i++)
		if (all_mounts.v[i][0] == 'r' && rd_path_within(all_mounts.v[i] + 1, path)) {
			int e = set_readonly(all_mounts.v[i] + 1, AT_SYMLINK_NOFOLLOW);
			if (e < 0 && e != -EINVAL && !absent(e))
				r = e;
		}
	return r;
}

const char *rd_view_writable_root(const struct rd_view_paths *v, const char *path)
{
	for (size_t i = 0; i < v->n_protect; i++)
		if (rd_path_within(path, v->protect[i]))
			return NULL;
	for (size_t i = 0; i < v->n_write; i++)
		if (rd_path_within(path, v->write[i]))
			return v->write[i];
	/* A cache: written through its layer, as later commands see it. */
	for (size_t i = 0; i < v->n_layers; i++)
		if (rd_path_within(path, v->layers[2 * i]))
			return v->layers[2 * i];
	return NULL;
}

bool rd_view_entry_replaceable(const struct rd_view_paths *v, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash || !rd_view_writable_root(v, path))
		return false;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (!rd_view_writable_root(v, dir))
		return false;
	for (size_t i = 0; i < v->n_protect; i++)
		if (rd_path_within(v->protect[i], path))
			return false; /* bound on itself, on the way to v->protect[i] */
	return true;
}

/* A protected path, read-only, and every directory between its writable root and it bound on
 * itself, so that none can be renamed or removed (a mount point cannot): else renaming .git
 * away and making a new one would leave .git/hooks read-only where no one looks. No symlink
 * there (a command could have planted one to turn the protection elsewhere): -ELOOP. A path
 * that is not there: nothing to protect. pinned (n_pinned) remembers the directories bound. */
static int protect(const struct rd_view_paths *v, const char *path, char **pinned, size_t *n_pinned,
                   size_t max_pinned)
{
	size_t root = 0;
	bool found = false;
	for (size_t i = 0; i < v->n_write; i++) {
		size_t n = strlen(v->write[i]);
		if (n >= root && rd_path_within(path, v->write[i]))
			root = n, found = true;
	}
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (!found || len >= sizeof(buf))
		return 0;
	/* A writable root protected as a whole: read-only again, all of it. */
	if (root == len)
		return readonly_tree(path);
	memcpy(buf, path, len + 1);
	/* A root with a symlink on the way is left read-only (writable_tree): nothing to do. */
	buf[root] = '\0';
	int rfd = open_nofollow(buf);
	if (rfd < 0)
		return absent(rfd) || rfd == -ELOOP || rfd == -EACCES ? 0 : rfd;
	close(rfd);
	buf[root] = path[root];
	for (size_t at = root + 1; at <= len; at++) {
		if (buf[at] != '/' && buf[at] != '\0')
			continue;
		char c = buf[at];
		buf[at] = '\0';
		bool done = false; /* pinned already, for another protected path */
		for (size_t k = 0; c && k < *n_pinned && !done; k++)
			done = strcmp(pinned[k], buf) == 0;
		if (!done) {
			int fd = open_nofollow(buf);
			if (fd < 0)
				return absent(fd) ? 0 : fd;
			int r = rebind(fd, c == '\0');
			close(fd);
			if (r < 0 || c == '\0')
				return r;
			if (*n_pinned < max_pinned && (pinned[*n_pinned] = strdup(buf)))
				(*n_pinned)++;
		}
		buf[at] = c;
	}
	return 0;
}

static bool inert_at(int at, const char *name, int depth, size_t *budget)
{
	struct stat st;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	/* Empty; a hook template of git's (NAME.sample: git runs none); a config as git init
	 * writes it. What a new repository of the agent's holds configures nothing. */
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	size_t blen = strlen(base), nlen = strlen(name);
	bool dotgit_config =
	    depth == 0 && nlen > 12 && strcmp(name + nlen - 12, "/.git/config") == 0;
	if (S_ISREG(st.st_mode))
		return st.st_size == 0 || (blen > 7 && strcmp(base + blen - 7, ".sample") == 0) ||
		       (dotgit_config && rd_git_init_config(at, name));
	if (!S_ISDIR(st.st_mode) || depth > 4)
		return false;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	bool inert = true;
	for (struct dirent *de; inert && (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			inert =
			    (*budget)-- > 0 && inert_at(dirfd(d), de->d_name, depth + 1, budget);
	closedir(d);
	return inert;
}

bool rd_view_inert(const char *path)
{
	size_t budget = 256;
	return inert_at(AT_FDCWD, path, 0, &budget);
}

static size_t layers_alone;
/* Each layer's cache as it is beneath its layer (a detached copy, -1: none), for a shadow that
 * holds the cache as an entry of its own (shadow_build): there a granted command, whose
 * layers come off (rd_view_no_layers), finds the cache, not the shadow's empty mount point. */
static int *layer_under;
static size_t n_layer_under;

size_t rd_view_layers_alone(void)
{
	return layers_alone;
}

/* The cache at path, shown with the layer in dir over it: an overlay (with overlays), or, where
 * overlayfs refuses one or there is to be none, the layer's upper directory alone (writable),
 * counted in layers_alone. A cache that is not there, or has a symlink on the way, stays
 * read-only. */
static int layer(const char *path, const char *dir, bool overlays, int *under)
{
	char upper[PATH_MAX], work[PATH_MAX], opts[3 * PATH_MAX + 64];
	if ((size_t)snprintf(upper, sizeof(upper), "%s/upper", dir) >= sizeof(upper) ||
	    (size_t)snprintf(work, sizeof(work), "%s/work", dir) >= sizeof(work))
		return -ENAMETOOLONG;
	int fd = open_nofollow(path);
	if (fd < 0)
		return absent(fd) || fd == -ELOOP || fd == -EACCES ? 0 : fd;
	if (under)
		*under = open_tree(
		    fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (under && *under < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	/* The options separate paths by ',' and layers by ':': a path with either (or an escape)
	 * gets no overlay. */
	bool plain = overlays && !strpbrk(path, ",:\\") && !strpbrk(dir, ",:\\");
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", path, upper,
	         work);
	/* overlayfs writes its upper and work directories through mounts of its own, cloned from
	 * theirs, which is read-only here like everything else: dir writable for the while (bound
	 * on itself), then out of the commands' reach again. */
	int r = plain ? writable_tree(dir) : 0;
	bool ok =
	    plain && r == 0 && mount("overlay", path, "overlay", MS_NOSUID | MS_NODEV, opts) == 0;
	if (plain && r == 0 && umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		r = -errno;
	if (r == 0 && !ok) {
		layers_alone++;
		int up = open_nofollow(upper);
		int tree =
		    up < 0 ? up
		           : open_tree(up, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		r = tree < 0 ? (up < 0 ? up : -errno) : 0;
		struct mount_attr a = {.attr_clr = MOUNT_ATTR_RDONLY,
		                       .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		if (r == 0 && mount_setattr(tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
			r = -errno;
		if (r == 0 && move_mount(tree, "", fd, "",
		                         MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			r = -errno;
		if (tree >= 0)
			close(tree);
		if (up >= 0)
			close(up);
	}
	close(fd);
	return r;
}

int rd_view_no_layers(struct rd_view_error *e, const struct rd_view_paths *paths)
{
	*e = (struct rd_view_error){0};
	for (size_t i = 0; paths && i < paths->n_layers; i++) {
		/* Not there (a cache that was missing at the start): nothing to take off. */
		if (umount2(paths->layers[2 * i], MNT_DETACH | UMOUNT_NOFOLLOW) < 0 &&
		    errno != EINVAL && errno != ENOENT) {
			e->what = paths->layers[2 * i];
			return -errno;
		}
	}
	return 0;
}

int rd_view_git_gate(struct rd_view_error *e, char *const *gits, size_t n, bool real_first)
{
	*e = (struct rd_view_error){0};
	for (size_t i = 0; i < n; i++) {
		e->what = gits[i];
		int to = open_nofollow(gits[i]), tree = -1, r = 0;
		struct stat st;
		struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
		if (to < 0)
			return to;
		/* A file git runs: not a link, which would be followed to what it names. */
		if (fstat(to, &st) < 0)
			r = -errno;
		else if (!S_ISREG(st.st_mode))
			r = -EINVAL;
		/* The real one, where runnerd's gits run it, before git's own git covers it. */
		if (r == 0 && i == 0 && real_first) {
			int real =
			    open_tree(to, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
			if (real < 0)
				r = -errno;
			int at = r == 0 ? open_nofollow(RD_VIEW_GIT_REAL) : -1;
			if (r == 0 && at < 0)
				r = at;
			if (r == 0 &&
			    (mount_setattr(real, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0 ||
			     move_mount(real, "", at, "",
			                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0))
				r = -errno;
			if (real >= 0)
				close(real);
			if (at >= 0)
				close(at);
		}
		if (r == 0 && (tree = open_tree(AT_FDCWD, RD_VIEW_GIT_GATE,
		                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0)
			r = -errno;
		if (r == 0 && (mount_setattr(tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0 ||
		               move_mount(tree, "", to, "",
		                          MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0))
			r = -errno;
		if (tree >= 0)
			close(tree);
		close(to);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Are the n bytes at s letters or digits (and '_' where under)? */
static bool alnum(const char *s, size_t n, bool under)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || (under && s[i] == '_')))
			return false;
	return true;
}

/* Is name a temporary file's as programs make them in the directory of the file they write:
 * Rust's tempfile (.tmpXXXXXX), Python's mkstemp (tmpXXXXXXXX), GNU sed -i (sedXXXXXX),
 * mktemp (tmp.XXXXXXXXXX), GIO's safe write (.goutputstream-XXXXXX)? */
static bool temporary(const char *name)
{
	size_t n = strlen(name);
	if (strncmp(name, ".tmp", 4) == 0 && name[4])
		return true;
	if (strncmp(name, "tmp", 3) == 0 && n == 11 && alnum(name + 3, 8, true))
		return true;
	if (strncmp(name, "sed", 3) == 0 && n == 9 && alnum(name + 3, 6, false))
		return true;
	if (strncmp(name, "tmp.", 4) == 0 && n == 14 && alnum(name + 4, 10, false))
		return true;
	return strncmp(name, ".goutputstream-", 15) == 0 && name[15];
}

/* What follows a masked file's name in the names its writers give it: NAME.tmp, NAME-XXXX,
 * NAME~, NAME2, NAME___jb_tmp___ (JetBrains' safe write), or nothing. */
static bool after_name(char c)
{
	return !c || c == '.' || c == '-' || c == '~' || c == '_' || (c >= '0' && c <= '9');
}

/* Is name the masked name h (n bytes), or, for a file's (not a directory's: h ends in '/'),
 * one of the names its writers and editors keep its text under beside it: NAME.tmp and the
 * like, .NAME.swp (vim's swap file), .NAME123 (Go's renameio), #NAME# (Emacs's auto-save),
 * .#NAME (Emacs's lock)? */
static bool hidden_name(const char *h, size_t n, const char *name)
{
	if (n && h[n - 1] == '/')
		return strncmp(h, name, n - 1) == 0 && !name[n - 1];
	if (strncmp(h, name, n) == 0 && after_name(name[n]))
		return true;
	if (name[0] == '.' && strncmp(h, name + 1, n) == 0 && after_name(name[n + 1]))
		return true;
	if (name[0] == '#' && strncmp(h, name + 1, n) == 0 && !strcmp(name + n + 1, "#"))
		return true;
	return name[0] == '.' && name[1] == '#' && strncmp(h, name + 2, n) == 0 && !name[n + 2];
}

bool rd_view_hidden(const struct rd_view_paths *v, const char *dir, const char *name, bool is_dir)
{
	size_t len = strlen(dir);
	if (len == 1)
		len = 0; /* "/" */
	bool any = false;
	for (size_t i = 0; i < v->n_hidden; i++) {
		const char *h = v->hidden[i];
		if (strncmp(h, dir, len) != 0 || h[len] != '/')
			continue;
		any = true;
		size_t n = strlen(h + len + 1);
		/* A directory by its name alone: writers' names beside a file are files, and a
		 * directory named like one (a workspace ~/tmpk3j4h5g6, a TMPDIR ~/.tmpdir) is not
		 * theirs. */
		if (is_dir ? strncmp(h + len + 1, name, n - (h[len + n] == '/')) == 0 &&
		                 !name[n - (h[len + n] == '/')]
		           : hidden_name(h + len + 1, n, name))
			return true;
	}
	return any && !is_dir && temporary(name);
}

/* When the session started (rd_view_since_now), or this process's first view did: a regular
 * file of its owner's alone (mode 0600, as mkstemp, sed -i, perl -i and editors make their
 * temporary files) that changed since then in a shadow directory is shown empty there, whatever
 * its name: a command holding such a file's name would read the secret it became once renamed
 * over a masked file. */
static struct timespec shadow_since;

void rd_view_since_now(void)
{
	clock_gettime(CLOCK_REALTIME_COARSE, &shadow_since);
}

struct timespec rd_view_since(void)
{
	return shadow_since;
}

void rd_view_since_set(struct timespec at)
{
	shadow_since = at;
}

/* Was dir/name a file of its owner's alone when the session started (one of v->hidden, after
 * a '=')? Written again during it (git config --global rewrites a 0600 ~/.gitconfig), it is what
 * it was, and shown. */
static bool held_first(const struct rd_view_paths *v, const char *dir, const char *name)
{
	size_t len = strlen(dir);
	if (len == 1)
		len = 0; /* "/" */
	for (size_t i = 0; i < v->n_hidden; i++) {
		const char *h = v->hidden[i];
		if (h[0] == '=' && strncmp(h + 1, dir, len) == 0 && h[1 + len] == '/' &&
		    strcmp(h + 2 + len, name) == 0)
			return true;
	}
	return false;
}

static bool new_private(const struct rd_view_paths *v, const char *dir, const char *name,
                        const struct stat *st)
{
	return shadow_since.tv_sec && S_ISREG(st->st_mode) && !(st->st_mode & 077) &&
	       !held_first(v, dir, name) &&
	       (st->st_ctim.tv_sec > shadow_since.tv_sec ||
	        (st->st_ctim.tv_sec == shadow_since.tv_sec &&
	         st->st_ctim.tv_nsec >= shadow_since.tv_nsec));
}

/* A directory that holds masked files (v->shadow[i]; real: an O_PATH fd of it, beneath any
 * shadow over it), shown as a read-only tmpfs of its own: in it, each entry of the directory,
 * each a mount point for the real one bound there (with what is mounted under it), a symlink
 * copied as it is, and at the names of v->hidden an empty file or directory. A mask bound on a
 * file of the machine's is taken off by the kernel, in every other mount namespace, when the
 * file is renamed over or removed: the agent writing ~/.claude.json again (a new file renamed
 * over the old) left a command's reader running in its sandbox the new file. Here the name
 * lies in the tmpfs, which no rename on the machine reaches. What the directory holds later,
 * runnerd has made again (rd_view_shadow_refresh); what lies deeper is the machine's, live.
 * The new mount's fd, detached, or -errno: -E2BIG past RD_VIEW_SHADOW_MAX entries. */
static int shadow_build(const struct rd_view_paths *v, size_t i, int real, int old)
{
	const char *path = v->shadow[i];
	struct stat dst = {0};
	int dfd = openat(real, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *dir = fdopendir(dfd);
	if (!dir) {
		int e = errno;
		close(dfd);
		return -e;
	}
	int r = fstat(dfd, &dst) < 0 ? -errno : 0, mnt = -1;
	size_t n = 0;
	for (struct dirent *d; r == 0 && (d = readdir(dir));)
		n += strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
	/* Past the most it holds: made again with the names the shadow before held alone (those
	 * gone, or no longer what they were, go; none comes), or not at all. */
	int keep = -1;
	if (r == 0 && n > RD_VIEW_SHADOW_MAX) {
		keep = old >= 0 ? openat(old, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		if (keep < 0)
			r = old >= 0 ? -errno : -E2BIG;
	}
	char opt[32], mode[16], size[32];
	int fs = r == 0 ? fsopen("tmpfs", FSOPEN_CLOEXEC) : -1;
	if (r == 0 && fs < 0)
		r = -errno;
	snprintf(opt, sizeof(opt), "%zu", 2 * n + 16);
	/* A page for each entry (a symlink's target longer than tmpfs keeps in its inode takes
	 * one), and some: a bound, not memory taken. */
	snprintf(size, sizeof(size), "%zu", (n + 16) * 4096);
	/* The directory's mode; and its owner (one this namespace cannot map: the tmpfs's own). */
	snprintf(mode, sizeof(mode), "%o", (unsigned)(dst.st_mode & 07777));
	if (r == 0 &&
	    (fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", opt, 0) < 0 ||
	     fsconfig(fs, FSCONFIG_SET_STRING, "mode", mode, 0) < 0 ||
	     fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	     fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	     (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0))
		r = -errno;
	if (fs >= 0)
		close(fs);
	if (r == 0)
		(void)fchownat(mnt, "", dst.st_uid, dst.st_gid, AT_EMPTY_PATH);
	rewinddir(dir);
	/* An entry that cannot be shown as it is (gone since readdir, turned into another kind,
	 * a name too long) is left out: missing is as far as it goes, never the real one. */
	for (struct dirent *d; r == 0 && (d = readdir(dir));) {
		const char *name = d->d_name;
		struct stat st;
		char target[PATH_MAX], full[PATH_MAX];
		if (!strcmp(name, ".") || !strcmp(name, "..") ||
		    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (keep >= 0 && faccessat(keep, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0))
			continue;
		if (rd_view_hidden(v, path, name, S_ISDIR(st.st_mode)) ||
		    new_private(v, path, name, &st)) {
			if ((S_ISDIR(st.st_mode) ? mkdirat(mnt, name, 0700)
			                         : mknodat(mnt, name, S_IFREG | 0600, 0)) < 0 &&
			    errno == ENOSPC)
				r = -ENOSPC;
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t len = readlinkat(dfd, name, target, sizeof(target) - 1);
			if (len >= 0 && (size_t)len < sizeof(target) - 1) {
				target[len] = '\0';
				if (symlinkat(target, mnt, name) < 0 && errno == ENOSPC)
					r = -ENOSPC;
			}
			continue;
		}
		if ((S_ISDIR(st.st_mode) ? mkdirat(mnt, name, 0755)
		                         : mknodat(mnt, name, S_IFREG | 0644, 0)) < 0) {
			if (errno == ENOSPC)
				r = -ENOSPC;
			continue;
		}
		/* A cache's layer at this very entry: the cache beneath it first (layer_under). */
		snprintf(full, sizeof(full), "%s/%s", strcmp(path, "/") ? path : "", name);
		for (size_t k = 0; S_ISDIR(st.st_mode) && layer_under && k < v->n_layers; k++) {
			if (layer_under[k] < 0 || strcmp(v->layers[2 * k], full) != 0)
				continue;
			int under = open_tree(layer_under[k], "",
			                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
			                          AT_EMPTY_PATH);
			if (under >= 0 &&
			    move_mount(under, "", mnt, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				r = -errno;
			else if (under < 0)
				r = -errno;
			if (under >= 0)
				close(under);
		}
		int tree = r == 0 ? open_tree(dfd, name,
		                              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
		                                  AT_SYMLINK_NOFOLLOW)
		                  : -1;
		struct stat now;
		/* Still the kind of file it was: a mount of another kind on it would fail, or a
		 * symlink bound would be followed. */
		if (tree >= 0 &&
		    (fstat(tree, &now) < 0 || (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT))) {
			close(tree);
			tree = -1;
		}
		if (tree < 0 || move_mount(tree, "", mnt, name, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
			/* EINVAL: a kernel that mounts nothing into a mount not yet attached
			 * (before 6.15), for every entry: no shadow (shadows()), never an empty
			 * one. */
			if (tree >= 0 && errno == EINVAL)
				r = -EINVAL;
			unlinkat(mnt, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
		}
		if (tree >= 0)
			close(tree);
	}
	closedir(dir);
	if (keep >= 0)
		close(keep);
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	if (r == 0 && mount_setattr(mnt, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0)
		r = -errno;
	if (r < 0) {
		if (mnt >= 0)
			close(mnt);
		return r;
	}
	return mnt;
}

/* The shadows of the view this process made (rd_view_session), for rd_view_shadow_refresh:
 * each directory beneath its shadow, and the shadow over it (-1: none, the directory as it
 * is). Close-on-exec: no command gets them (the real directory, its masked files unmasked). */
static const struct rd_view_paths *shadow_view;
static int *shadow_real, *shadow_mnt;

static int shadow_swap(size_t i, int mnt);

/* shadow_view->shadow[i] made again: the new one built, the old one taken off, the new one
 * put on. The caches' layers in it come with it (shadow_build). 0; 1 if it could not be built
 * (past RD_VIEW_SHADOW_MAX entries, a full tmpfs): the old one, or none, stays; -errno if the
 * old one came off and the new one could not go on: the directory is the machine's there. */
static int shadow_put(size_t i)
{
	int mnt = shadow_build(shadow_view, i, shadow_real[i], shadow_mnt[i]);
	return mnt < 0 ? 1 : shadow_swap(i, mnt);
}

/* The shadow mnt in place of shadow i's (closed on an error). */
static int shadow_swap(size_t i, int mnt)
{
	if (shadow_mnt[i] >= 0) {
		char at[32];
		snprintf(at, sizeof(at), "/proc/self/fd/%d", shadow_mnt[i]);
		if (umount2(at, MNT_DETACH) < 0) {
			int e = errno;
			close(mnt);
			return -e;
		}
		close(shadow_mnt[i]);
		shadow_mnt[i] = -1;
	}
	if (move_mount(mnt, "", shadow_real[i], "",
	               MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		int e = errno;
		close(mnt);
		return -e;
	}
	shadow_mnt[i] = mnt;
	return 0;
}

/* The shadows' fds, closed. */
static void shadows_forget(void)
{
	for (size_t i = 0; shadow_view && i < shadow_view->n_shadow; i++) {
		if (shadow_real[i] >= 0)
			close(shadow_real[i]);
		if (shadow_mnt[i] >= 0)
			close(shadow_mnt[i]);
	}
	free(shadow_real);
	free(shadow_mnt);
	shadow_real = shadow_mnt = NULL;
	shadow_view = NULL;
}

/* Each shadow directory of paths, deepest first (a shadow above holds a copy of the one below).
 * One with more than RD_VIEW_SHADOW_MAX entries, or missing, is left as it is. */
static int shadows(struct rd_view_error *e, const struct rd_view_paths *paths)
{
	shadows_forget();
	shadow_view = paths;
	shadow_real = calloc(paths->n_shadow + 1, sizeof(int));
	shadow_mnt = calloc(paths->n_shadow + 1, sizeof(int));
	if (!shadow_real || !shadow_mnt) {
		e->what = "the directories of masked files";
		return -ENOMEM;
	}
	for (size_t i = 0; i < paths->n_shadow; i++)
		shadow_real[i] = shadow_mnt[i] = -1;
	if (!shadow_since.tv_sec)
		rd_view_since_now();
	for (size_t i = 0; i < paths->n_shadow; i++) {
		e->what = paths->shadow[i];
		int fd = open_nofollow(paths->shadow[i]);
		if (fd < 0 && (absent(fd) || fd == -ELOOP || fd == -EACCES))
			continue;
		if (fd < 0)
			return fd;
		shadow_real[i] = fd;
		/* One it cannot build (no memory, no fds) is an error, as any mount of the view's;
		 * past RD_VIEW_SHADOW_MAX entries, it is none, and its masked files are bound on
		 * themselves (docs/threat-model.md). */
		int mnt = shadow_build(paths, i, fd, -1);
		if (mnt == -E2BIG)
			continue;
		/* Before Linux 6.15 nothing is mounted into a mount not yet attached (EINVAL):
		 * there the directory is left as it is, its masked files masked where they are,
		 * and said once. */
		if (mnt == -EINVAL) {
			static bool said;
			if (!said)
				fprintf(
				    stderr,
				    "runnerd: this kernel cannot build the directories of masked "
				    "files in the commands' view (Linux 6.15 can): their masked "
				    "files are masked where they are, and one written again "
				    "there (a new file renamed over it) shows in the sandboxes "
				    "running then\n");
			said = true;
			continue;
		}
		int r = mnt < 0 ? mnt : shadow_swap(i, mnt);
		if (r < 0)
			return r;
	}
	return 0;
}

void rd_view_shadow_forget(void)
{
	for (size_t i = 0; layer_under && i < n_layer_under; i++)
		if (layer_under[i] >= 0)
			close(layer_under[i]);
	free(layer_under);
	layer_under = NULL;
	n_layer_under = 0;
	shadows_forget();
}

int rd_view_shadow_refresh(size_t i)
{
	if (!shadow_view || i >= shadow_view->n_shadow)
		return -EINVAL;
	const char *path = shadow_view->shadow[i];
	for (size_t k = i; k < shadow_view->n_shadow; k++) {
		if (shadow_real[k] < 0 || !rd_path_within(path, shadow_view->shadow[k]))
			continue;
		int r = shadow_put(k);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Is path an entry of one of paths' shadow directories itself (its directory is one)? */
static bool shadow_entry(const struct rd_view_paths *paths, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	for (size_t i = 0; slash && i < paths->n_shadow; i++)
		if (strlen(paths->shadow[i]) == (len ? len : 1) &&
		    strncmp(paths->shadow[i], path, len ? len : 1) == 0)
			return true;
	return false;
}

int rd_view_session(struct rd_view_error *e, const struct rd_view_paths *paths, bool overlays)
{
	*e = (struct rd_view_error){0};
	e->what = "making every mount private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	/* No lists: nowhere writable. */
	static const struct rd_view_paths none;
	if (!paths)
		paths = &none;
	e->what = "reading /proc/self/mountinfo";
	int r = take_mounts();
	if (r < 0)
		return r;
	e->what = "making every mount read-only";
	r = set_readonly("/", AT_RECURSIVE);
	for (size_t i = 0; r == 0 && i < paths->n_write; i++)
		if (!on_ro_mount(paths->write[i]) && (r = writable_tree(paths->write[i])) < 0)
			e->what = paths->write[i];
	char *pinned[64];
	size_t n_pinned = 0;
	for (size_t i = 0; r == 0 && i < paths->n_protect; i++)
		if ((r = protect(paths, paths->protect[i], pinned, &n_pinned, 64)) < 0)
			e->what = paths->protect[i];
	for (size_t k = 0; k < n_pinned; k++)
		free(pinned[k]);
	layers_alone = 0;
	rd_view_shadow_forget();
	layer_under = calloc(paths->n_layers + 1, sizeof(int));
	if (!layer_under) {
		e->what = "the caches' layers";
		return -ENOMEM;
	}
	n_layer_under = paths->n_layers;
	for (size_t i = 0; i < paths->n_layers; i++)
		layer_under[i] = -1;
	for (size_t i = 0; r == 0 && i < paths->n_layers; i++)
		if ((r = layer(paths->layers[2 * i], paths->layers[2 * i + 1], overlays,
		               shadow_entry(paths, paths->layers[2 * i]) ? &layer_under[i]
		                                                         : NULL)) < 0)
			e->what = paths->layers[2 * i];
	/* Then the shadows, which hold what is mounted in their directories by now, layers
	 * too. */
	if (r == 0)
		r = shadows(e, paths);
	if (r < 0)
		return r;
	/* sysfs: written, its files set the machine's devices, power, kernel parameters: read-only
	 * whatever the writable roots say. A mount's root in every namespace that has it, so made
	 * read-only where it is, with what is mounted under it (a bind would leave the writable
	 * tree under it, copied into every sandbox). */
	r = set_readonly("/sys", AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
	if (r == -EINVAL || r == -ENOENT)
		r = readonly_tree("/sys");
	if (r < 0) {
		e->what = "making /sys read-only";
		return r;
	}
	return make_dev(e);
}

int rd_view_rule(struct rd_view_error *e, const struct rd_view_paths *session,
                 const struct rd_view_paths *rule)
{
	static const struct rd_view_paths none;
	*e = (struct rd_view_error){0};
	if (!session)
		session = &none;
	/* Every root, the session's and the rule's, for the protected paths to find theirs. */
	size_t n_all = session->n_write + rule->n_write;
	char **all = calloc(n_all + 1, sizeof(*all));
	if (!all) {
		e->what = "a rule's writable roots";
		return -ENOMEM;
	}
	memcpy(all, session->write, session->n_write * sizeof(*all));
	memcpy(all + session->n_write, rule->write, rule->n_write * sizeof(*all));
	struct rd_view_paths v = {
	    .write = all, .n_write = n_all, .protect = rule->protect, .n_protect = rule->n_protect};
	int r = 0;
	for (size_t i = 0; r == 0 && i < rule->n_write; i++) {
		const char *p = rule->write[i];
		/* Protected as a whole (runnerd adds the other levels' protected paths to the
		 * rule's): read-only. Inside a writable root of the session's already: nothing to
		 * do. */
		/* Nor, whatever runnerd sent, "/" or the kernel's interfaces, made read-only
		 * before this (rd_view_sandbox): a tree made writable takes its mounts along. */
		bool skip = strcmp(p, "/") == 0 || rd_path_within(p, "/proc") ||
		            rd_path_within(p, "/sys") || rd_path_within(p, "/dev");
		for (size_t k = 0; !skip && k < rule->n_protect; k++)
			skip = rd_path_within(p, rule->protect[k]);
		for (size_t k = 0; !skip && k < session->n_write; k++)
			skip = rd_path_within(p, session->write[k]);
		if (!skip && !on_ro_mount(p) && (r = writable_tree(p)) < 0)
			e->what = p;
	}
	char *pinned[64];
	size_t n_pinned = 0;
	for (size_t i = 0; r == 0 && i < rule->n_protect; i++)
		if ((r = protect(&v, rule->protect[i], pinned, &n_pinned, 64)) < 0)
			e->what = rule->protect[i];
	for (size_t k = 0; k < n_pinned; k++)
		free(pinned[k]);
	free(all);
	return r;
}

int rd_view_sandbox(struct rd_view_error *e, bool root_ids)
{
	*e = (struct rd_view_error){0};
	for (size_t i = 0; root_ids && i < sizeof(proc_readonly) / sizeof(proc_readonly[0]); i++) {
		int r = readonly_tree(proc_readonly[i]);
		if (r < 0) {
			e->what = proc_readonly[i];
			return r;
		}
	}
	int null = -1;
	for (size_t i = 0; root_ids && i < sizeof(proc_hidden) / sizeof(proc_hidden[0]); i++) {
		int fd = open_nofollow(proc_hidden[i]), r = 0;
		if (fd < 0 && absent(fd))
			continue;
		if (fd >= 0 && null < 0)
			null =
			    open_tree(AT_FDCWD, "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (fd < 0)
			r = fd;
		else if (null < 0)
			r = -errno;
		else if (move_mount(null, "", fd, "",
		                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
		/* A detached tree moves once: the next file gets a clone of its own. */
		if (null >= 0)
			close(null);
		null = -1;
		if (r < 0) {
			e->what = proc_hidden[i];
			return r;
		}
	}
	/* The command's terminals. Where they cannot be had, a command that needs one fails with
	 * this reason; the rest runs. */
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	          "newinstance,ptmxmode=0666,mode=0620") < 0)
		e->pts_err = errno;
	return 0;
}
