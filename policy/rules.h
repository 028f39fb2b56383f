/* Which rule of a profile applies to an exec: first match wins. Pure. */
#ifndef RD_RULES_H
#define RD_RULES_H

#include "policy/policy.h"

#include <stddef.h>
#include <sys/types.h>

/* What is known of the exec: the path as the caller passed it, where it resolved to (after
 * symlinks, in the caller's view; NULL if unknown), and argv. */
struct rd_exec_subject {
	const char *path;
	const char *resolved;
	char *const *argv;
	size_t argc;
};

/* The first rule of prof that matches, or NULL (then commands.default applies).
 *
 * match.path: a pattern with a '/' is matched against the resolved path and the path as
 * given; a pattern without one against their basenames, so "git" and "/usr/bin/g?t" both match
 * /usr/bin/git. For deny and ask rules, argv[0]'s basename is tried too ("sh" matches an exec
 * of /usr/bin/dash named sh, "ls" a busybox applet); never for allow rules, because argv[0] is
 * the caller's to choose and must not earn it a rule's grants.
 *
 * match.args: patterns over argv[1..], one each, in order; the command must have exactly as
 * many arguments, unless the last pattern is "**", which matches any number (zero included)
 * of further arguments. */
const struct rd_rule *rd_rule_match(const struct rd_profile *prof, const struct rd_exec_subject *x);

/* The commands' writable roots (sandbox.write, then commands.write) and the paths that stay
 * read-only inside them (sandbox.protect, commands.protect), with "~/" replaced by home and
 * "{uid}" by uid, each once (after rd_mask_expand_env). Left out, as mounts for nothing: a
 * root inside another, a protected path outside every root; and "/" as a root, with a line in
 * notes saying so. In dirs, the protected paths inside a root that were written with a "/" at
 * their end: directories, which runnerd makes when they are missing. In files, the
 * placeholders (sandbox.placeholder, commands.placeholder) inside a root: protected files,
 * which runnerd makes empty when they are missing (protect has them too). In caches, the caches
 * (sandbox.cache, commands.cache) outside every writable root and every other cache: written
 * through a layer of the session's own. Returns 0 or -ENOMEM. */
int rd_view_lists(const struct rd_config *cfg, const struct rd_profile *prof, const char *home,
                  uid_t uid, struct rd_strv *write, struct rd_strv *protect, struct rd_strv *dirs,
                  struct rd_strv *files, struct rd_strv *caches, struct rd_strv *notes);

/* Why path can be no writable root of a rule ("/", or at or under /proc, /sys or /dev), or
 * NULL. */
const char *rd_write_root_refused(const char *path);

/* A path of a box list (write, protect, mask) as the view takes it: "{uid}" replaced by uid,
 * and a "~/" at its start by home; a "/" at its end kept. malloc'd; NULL on OOM. */
char *rd_box_path(const char *entry, const char *home, uid_t uid);

/* A rule's own "write" and "protect", with "~/" and "{uid}" made for home and uid: what its
 * sandboxes change of the session's view (sandbox/view.h, rd_view_rule). Roots that
 * rd_write_root_refused are left out (the loader refuses them as written). With writable roots,
 * the protected paths of cfg, prof's commands and also (n_also, the session's view) that lie in
 * them or hold one are added to protect. 0 or -ENOMEM. */
int rd_rule_view_lists(const struct rd_config *cfg, const struct rd_profile *prof,
                       const struct rd_rule *rule, char *const *also, size_t n_also,
                       const char *home, uid_t uid, struct rd_strv *write, struct rd_strv *protect);

/* Every path of cfg and prof (sandbox.mask, commands.mask and unmask, each rule's mask, and
 * the write and protect lists) that starts with "{workspace}" has workspace in its place
 * (and a "/" at its end kept, for a protected directory); every one
 * that starts with "${NAME}" becomes one path for each of the ':'-separated paths in the
 * variable NAME of env (the environment runnerd started with: where the agents' own variables
 * move their stores, e.g. "${CODEX_HOME}/auth.json"); none if NAME is unset or empty. A
 * relative path is taken from cwd; a path is written the one way masks compare (no "//", ".",
 * ".." or trailing "/"). One that is no mask path after that (the root, say) is left out, and a
 * line saying so is added to notes. One that starts with "~/" stays (the caller's home in the
 * password database, later), and the same path under env's HOME, if that is absolute and not
 * "/", is added after it. Returns 0 or -ENOMEM. */
int rd_mask_expand_env(struct rd_config *cfg, struct rd_profile *prof, char *const *env,
                       const char *cwd, const char *workspace, struct rd_strv *notes);

/* Set grants_secret on every rule of prof whose env_allow names, exactly, a variable that
 * env->deny calls a secret. */
void rd_profile_mark_grants(const struct rd_env_config *env, struct rd_profile *prof);

/* Variables a command that a rule grants a secret gets only as the agent got them at its start
 * (or not at all): each can make the granted program run other code, or send the secret
 * elsewhere (PATH the programs it starts by name, HOME and XDG_* its config files, GIT_*
 * git's, MAKEFLAGS make's, PAGER, EDITOR, VISUAL, SHELL, BROWSER, LESS* and *_ASKPASS what
 * it starts; gh's GH_PAGER, GH_BROWSER, GH_EDITOR, GH_PATH (its git credential helper) and
 * GH_CONFIG_DIR (its aliases) likewise, GH_HOST and GH_REPO where its token goes; LANG,
 * LANGUAGE, LC_*, NLSPATH and LOCPATH the message catalogs and locale data it loads, by a path
 * (LANGUAGE=../../../tmp/x has gettext take /tmp/x/LC_MESSAGES/git.mo: a command's catalog,
 * whose translations are format strings that print the program's environment), TZ and
 * TERMINFO* the zone and terminal files it loads; *_PROXY and *_proxy where its requests go: a
 * granted gh sent its token in the clear, to http://api.github.localhost, through a proxy a
 * command ran). */
extern const struct rd_strv rd_grant_pinned_names;

/* For a command that a rule grants a secret: does argv (of the program at resolved) ask it to
 * run a program of the caller's choosing, or to read another configuration or repository? For
 * git: -c and -C, and any other option before the subcommand but those that take no value
 * (--git-dir, --work-tree, --exec-path, --config-env, --super-prefix, --bare, ...); after it,
 * --receive-pack, --upload-pack, --exec, --template, --extcmd, the filters, --smtp-server,
 * --config, or any prefix of one git takes; ls-remote's -u, grep's -O; options that go into
 * submodules (--recurse-submodules but =no, --recursive, --ignore-submodules but =all,
 * --submodule but =short); a merge strategy with a "/"; the subcommands that run a command
 * given them (their --helper ones, merge-index, remote-ext, difftool too) or take a repository
 * from their arguments (receive-pack, upload-pack, ...); clone; rebase, cherry-pick, revert,
 * am; a pull but with --no-rebase. Returns a static description of what is refused, or NULL. */
const char *rd_grant_argv_refused(const char *resolved, char *const *argv, size_t argc);

/* git's subcommand in argv: the first argument after the options that take no value; NULL
 * if there is none, or if an option before it may take one (rd_grant_argv_refused refuses
 * those for a granted git). */
const char *rd_git_subcommand(char *const *argv, size_t argc);

/* The paths masked for a command: sandbox.mask less the profile's commands.unmask, plus
 * commands.mask, plus the rule's mask, each once, with "~/" replaced by home (the caller's home
 * from the password database, never its HOME variable, which the caller sets) and every
 * "{uid}" by the caller's uid. An unmask that lies inside a masked directory is an exception
 * to its mask: added as "!" and the path, which the sandbox shows through the mask. Returns 0
 * or -ENOMEM; out's strings are newly allocated. */
int rd_mask_list(const struct rd_config *cfg, const struct rd_profile *prof,
                 const struct rd_rule *rule, const char *home, uid_t uid, struct rd_strv *out);

/* The sandbox keys' values for a command: each from the rule if it sets it, else the profile's
 * commands, else runner.json's sandbox, else the key's default (policy/box.h). */
struct rd_box_opts rd_box_resolve(const struct rd_config *cfg, const struct rd_profile *prof,
                                  const struct rd_rule *rule);

#endif
