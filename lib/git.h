/* What git takes from a repository's files, read as git reads them. */
#ifndef RD_GIT_H
#define RD_GIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* Does the file path name (not followed), relative to dirfd (or AT_FDCWD), hold a HEAD as
 * git takes one: "ref: refs/..." or an object name (40 or 64 hex digits)? Its text, when
 * text is not NULL, goes there (NUL-terminated, at most size - 1 bytes). */
bool rd_git_head_valid(int dirfd, const char *path, char *text, size_t size);

/* Is dir shaped as a bare repository, which git takes where it finds no .git first: a HEAD
 * (a file or a symlink), and objects and refs that the caller may search, as git tests them? */
bool rd_git_bare_shaped(const char *dir);

/* Does the file name, relative to dirfd, hold what `git init` writes in a repository's config,
 * and nothing more: a [core] section of its own keys, each 0, 1, true or false, and no control
 * character (git reads past one)? It names nothing git runs. */
bool rd_git_init_config(int dirfd, const char *name);

/* Does the file name, relative to dirfd, hold only what git init and git clone write (and a
 * user's name and email, a submodule's core.worktree): the [core] keys above, a remote's url
 * and refspecs, a branch's upstream, with no quote, escape, comment or control character?
 * Nothing there names a program git runs, or a file it reads. */
bool rd_git_config_inert(int dirfd, const char *name);

/* Does the .gitmodules at path have git go into a submodule where runnerd's settings say
 * not to: a submodule's "ignore" other than all, or its "fetchRecurseSubmodules" other than
 * false (each overrides diff.ignoreSubmodules and fetch.recurseSubmodules), a line with
 * either key that is not read here as git reads it, or a control character git would read
 * past? false if there is no such file. */
bool rd_git_modules_enter(const char *path);

/* Does the configuration text buf (len bytes) turn extensions.worktreeConfig on, so that git
 * reads config.worktree too? Read to refuse rather than let through: false only where each
 * line that names the key is one of its own (after a section header line of its own), a
 * plain false, no, off or 0, as git reads it, and no control character git would read past is
 * there; a comment line (# or ;) names nothing. */
bool rd_git_worktree_config_on(const char *buf, size_t len);

/* The git directory that the .git at dotgit names, as git takes it, into gd: itself (a
 * directory, or a symlink to one, resolved), or the directory a .git file names ("gitdir:
 * DIR", relative to dotgit's directory, trailing newlines off), also through a symlink to such
 * a file. false if it names none, or it does not fit. */
bool rd_git_dir_of(const char *dotgit, char *gd, size_t n);

/* The common directory of the git directory gd, as git takes it, into common (real path):
 * the one its "commondir" file names (relative to gd), else gd itself. false if that cannot
 * be read or resolved, or it does not fit. */
bool rd_git_common_dir(const char *gd, char *common, size_t n);

/* A git program at dir/git (len bytes of dir, absolute): its real path into real (PATH_MAX
 * bytes) and its stat into st, where that is a regular file one may execute; else false. */
bool rd_git_prog_at(const char *dir, size_t len, char *real, struct stat *st);

#endif
