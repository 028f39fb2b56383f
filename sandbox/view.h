/* The command's view of the machine (view.c), in two parts. The session's part is the same for
 * every sandbox: the zygote makes it once, in a mount namespace of its own, and every sandbox
 * it clones starts from a copy of it. The sandbox's part is made by each sandbox's pid 1, in
 * its own mount namespace, before any plan. A sandbox that runnerd forks itself (no zygote)
 * makes both. */
#ifndef RD_SANDBOX_VIEW_H
#define RD_SANDBOX_VIEW_H

#include <stdbool.h>
#include <stddef.h>

struct rd_view_error {
	const char *what; /* the step that failed */
	int pts_err;      /* why /dev/pts could not be mounted (0: it was) */
};

/* An empty, read-only directory of the view's own /dev: bound over a masked directory (a bind,
 * not a tmpfs of its own for each mask). */
#define RD_VIEW_EMPTY_DIR "/dev/.empty"

/* A directory of the view's own, read-only, where the programs runnerd puts in every command's
 * view live: git for a program a rule grants a secret, first on its PATH (supervisor/grant.c),
 * which tells git the repository runnerd checked where that program started; and git's own
 * git (RD_VIEW_GIT_GATE). Not under /dev's tmpfs: that one is noexec. */
#define RD_VIEW_BIN_DIR "/dev/.runnerd"

/* And git's own git there, which runs the real git only in the repository runnerd checked
 * (rd_view_git_gate). */
#define RD_VIEW_GIT_GATE RD_VIEW_BIN_DIR "/gate"

/* And the git runnerd's gits run for a program that is not git, bound there (rd_view_git_gate)
 * where the program's git itself is covered by git's own git: so that a git the program runs by
 * its full path (/usr/bin/git) meets runnerd's checks too. Named git: git takes a program
 * named git-NAME for its built-in NAME. */
#define RD_VIEW_GIT_REAL RD_VIEW_BIN_DIR "/real/git"

/* Where commands may write (absolute paths, each once): everything else is read-only. */
struct rd_view_paths {
	char *const *write; /* the writable roots */
	size_t n_write;
	char *const *protect; /* read-only again, inside the writable roots */
	size_t n_protect;
	/* Caches, written through a layer of the session's: layers[2 * i] the cache (outside the
	 * writable roots), layers[2 * i + 1] the layer's directory, which holds its "upper" and
	 * "work" directories. Commands see the cache with what they wrote over it; the cache
	 * itself is never written. */
	char *const *layers;
	size_t n_layers;
	/* Directories that hold masked files, read-only to commands, deepest first: each shown as
	 * a read-only tmpfs of its own holding what the directory held when the view was made
	 * (rd_view_session, rd_view_shadow_refresh), and in it, at the names of hidden, an empty
	 * file or directory (see view.c, shadow_build). */
	char *const *shadow;
	size_t n_shadow;
	/* Masked paths in those directories: there, never the real ones; a directory's with a
	 * '/' after it (its name alone is hidden: no writer puts a directory's text beside it).
	 * And, after a '=', the files of their owner's alone (0600) that those directories held
	 * at the session's start: one written again is shown (view.c, new_private). */
	char *const *hidden;
	size_t n_hidden;
};

/* Is dir/name (dir one of v->shadow) hidden in its shadow: one of v->hidden, or, for a file,
 * named as the writers of such a file name what they make beside it while they write it again
 * (NAME.tmp.X, NAME.lock, NAME-PID.tmp, NAME.new, NAME.backup, NAME~, docker's NAME12345: a
 * name that goes on with '.', '-', '~' or a digit; the same after a '.', as Go's renameio's
 * .NAME123 and vim's swap file .NAME.swp), or as Emacs names its auto-save and lock (#NAME#,
 * .#NAME), or as libraries name a temporary file in the directory of the file they write
 * (.tmpXXXXXX, tmpXXXXXXXX)? Those hold the secret too, or will, a moment later. A directory
 * (is_dir) is hidden by its own name alone: ~/.aws does not hide ~/.aws-sam, nor does a
 * masked ~/.env hide a workspace ~/.env-project or a temporary name a TMPDIR ~/.tmpdir. */
bool rd_view_hidden(const struct rd_view_paths *v, const char *dir, const char *name, bool is_dir);

/* The most entries a shadow directory may hold: each is a mount that every sandbox copies. */
#define RD_VIEW_SHADOW_MAX 512

/* The writable root of v that path (absolute, without symlinks) lies in, where commands can
 * write it: not at or under a protected path; or the cache whose layer commands write. NULL if
 * none. */
const char *rd_view_writable_root(const struct rd_view_paths *v, const char *path);

/* Whether a command could replace the directory entry path (absolute, its directory without
 * symlinks): the directory is where commands can write, and the entry is neither protected nor
 * one of the directories the view binds on themselves on the way to a protected path (a mount
 * point cannot be renamed or removed). */
bool rd_view_entry_replaceable(const struct rd_view_paths *v, const char *path);

/* Is what path names (not followed) inert: an empty regular file, a hook template of git's
 * (NAME.sample), a config as git init writes it, or a directory whose entries, at most 256 in
 * all and 4 levels deep, are each inert? Such is what Claude Code's sandbox leaves where it
 * holds paths read-only (0-byte placeholders), and what a plain git init makes: it configures
 * nothing. */
bool rd_view_inert(const char *path);

/* In a mount namespace of the caller's own (its mounts are changed): every mount private, so
 * that nothing mounted on the machine later reaches a sandbox, nor the other way; every mount
 * read-only but the writable roots of paths (each bound on itself, found without following a
 * symlink on the way: one that has a symlink is left read-only) and in them the protected paths
 * read-only again; /sys read-only; a /dev of a few device nodes, read-only, a tmpfs of the
 * session's own on /dev/shm, and /dev/pts empty for each sandbox's own. paths NULL: nowhere
 * writable. A writable root that is itself protected is read-only. The caches through their
 * layers: overlays where this view is the one every sandbox copies (overlays: the zygote's),
 * else each layer's upper directory alone, which sandboxes may share (two overlays on one upper
 * directory at once are undefined). Returns 0, or -errno with e->what naming the step. */
int rd_view_session(struct rd_view_error *e, const struct rd_view_paths *paths, bool overlays);

/* The session starts now: a file of its owner's alone (0600) that a shadow directory gains or
 * changes from now on is shown empty there (sandbox/view.c). runnerd calls it before it forks
 * anything, and tells the zygote its time (rd_view_since, rd_view_since_set): the zygote,
 * exec'd and started later, would take the agent's first files for older than the session. */
void rd_view_since_now(void);
struct timespec rd_view_since(void);
void rd_view_since_set(struct timespec at);

/* The view made by rd_view_session in this process (the zygote's): its shadow directory
 * shadow[i] made again from what the directory holds now, and each shadow directory above it
 * (which holds a copy of it). One that cannot be made again (past RD_VIEW_SHADOW_MAX entries)
 * stays as it was. Returns 0, or -errno where a directory is left as it is on the machine
 * (the old shadow off, the new one not on): the view is then not to be used. */
int rd_view_shadow_refresh(size_t i);

/* What rd_view_session kept for rd_view_shadow_refresh, closed: in a sandbox that made its own
 * view, whose command must hold no fd of a directory beneath its shadow (its masked files
 * there unmasked). */
void rd_view_shadow_forget(void);

/* How many of the session's layers rd_view_session could not make as overlays (overlayfs
 * refused: a layer on an overlay file system, a path with ',' or ':'): those caches show the
 * layer alone, the cache's own files out of sight. 0 until rd_view_session ran. */
size_t rd_view_layers_alone(void);

/* In a sandbox's own mount namespace, a copy of the session's view: each layer of paths taken
 * off, the caches read-only as they are (for a command a rule grants a secret, which reads
 * nothing other commands wrote there). Returns 0, or -errno with e->what naming the cache. */
int rd_view_no_layers(struct rd_view_error *e, const struct rd_view_paths *paths);

/* In a sandbox's own mount namespace, a copy of the session's view (session: its lists), before
 * any mask: a rule's own writable roots made so (except one that a protected path of the rule
 * covers, or that lies in a session's root already), and its protected paths read-only, as
 * rd_view_session does them (runnerd adds the session's protected paths in the rule's roots).
 * Returns 0, or -errno with e->what naming the path. */
int rd_view_rule(struct rd_view_error *e, const struct rd_view_paths *session,
                 const struct rd_view_paths *rule);

/* In a sandbox's own mount namespace, a copy of the session's view: RD_VIEW_GIT_GATE over each of
 * gits (the git of a git's exec path, where that git finds the git it runs for itself; found
 * without a symlink on the way, a regular file), read-only. real_first: gits[0] is the git
 * runnerd's gits run, bound at RD_VIEW_GIT_REAL before it is covered. Returns 0, or -errno
 * with e->what naming the path. */
int rd_view_git_gate(struct rd_view_error *e, char *const *gits, size_t n, bool real_first);

/* In a sandbox's own mount namespace, a copy of the session's view, after its fresh /proc is
 * mounted: with root_ids (the sandbox's uid 0 is the machine's root, whom the kernel lets
 * write its knobs by uid alone), /proc's knobs read-only; its own devpts instance on
 * /dev/pts. Returns 0, or -errno with e->what naming the step. A devpts instance
 * that cannot be mounted is not an error here: e->pts_err says why, for a command that needs a
 * terminal. */
int rd_view_sandbox(struct rd_view_error *e, bool root_ids);

#endif
