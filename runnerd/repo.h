/* The workspace's repository as the user's git sees it, outside any sandbox. */
#ifndef RD_REPO_H
#define RD_REPO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "lib/strv.h"
#include "supervisor/audit.h"

/* The git runnerd runs itself, outside any sandbox (rd_repo_hooks_dir, rd_repo_end): the
 * first on PATH (runnerd's own environment, at the session's start) that lies outside write
 * (the session's writable roots and every rule's own: a ./node_modules/.bin, a project's venv
 * or a rule's ~/go/bin on PATH is where a command could put a git of its own, which runnerd
 * would run with the user's rights, and the next session at its start), else /usr/bin/git or
 * /bin/git, found by its real path; it is given git's own configuration variables, XDG_CONFIG_HOME
 * and HOME (home where that environment has none) and a plain PATH, none of the operator's other
 * variables, which hold secrets. Said on stderr when there is none: the checks that ask git are
 * skipped. */
void rd_repo_find_git(const struct rd_strv *write, const char *home);

/* Where the user's git takes the hooks of the repository at workspace (core.hooksPath from
 * any of git's configuration files, or .git/hooks): an absolute path, malloc'd; NULL when
 * workspace is in no repository, git is not there, or out of memory. Asks git itself
 * ("git rev-parse --git-path hooks", which reads configuration and runs nothing of the
 * repository's): the one rd_repo_find_git found, as the user. */
char *rd_repo_hooks_dir(const char *workspace);

/* Move the file path (absolute) aside, in its directory, to a name of its own that no
 * command can guess ahead (PATH.runnerd-RANDOM, never replacing anything): 0 with the new
 * path in aside, or -errno (ENOENT: it is gone). */
int rd_move_aside(const char *path, char *aside, size_t n);

/* The workspace's repository at the session's start, for rd_repo_end. */
struct rd_repo_start {
	char head[256];   /* .git/HEAD's text, when .git is a directory and git takes it */
	bool bare_shaped; /* the workspace itself shaped as a bare repository */
	bool had_git;     /* the workspace's .git was there (of whatever kind) */
	/* The modes of .git, .git/objects and .git/refs (0: not a directory there). */
	mode_t modes[3];
	struct timespec when;
};

void rd_repo_start(const char *workspace, struct rd_repo_start *start);

/* At the session's end: a .git/HEAD that git no longer takes (a command garbled it, so that
 * the user's git would look further up: at the workspace as a bare repository of the
 * command's) is moved aside under a free name and HEAD written again as it was at the start;
 * .git, .git/objects and .git/refs get their modes back (one git may not search is skipped
 * as well); a workspace shaped as a bare repository since the start has its HEAD moved
 * aside, so that git cannot take it; a .git that is a file (gitdir: elsewhere) made during
 * the session is moved aside, as it names a repository a command made; each repository
 * entered in the index as a gitlink (a submodule, or one a command made) whose configuration
 * was made or changed during the session, which the user's git status in the workspace reads
 * (and runs its core.fsmonitor), beyond what git clone and submodule write; and each other
 * repository inside the workspace (or bare repository's shape) made or changed during the
 * session with a hook or a configuration that names what git runs: moved aside when it was
 * made during the session (its .git, or HEAD), named when it was there before. Each on stderr and
 * in the audit log ("git_head_restored", "bare_repository_made", "gitlink_config",
 * "repository_made"). */
void rd_repo_end(const char *workspace, const struct rd_repo_start *start, struct rd_audit *audit);

#endif
