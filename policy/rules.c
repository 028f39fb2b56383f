#include "policy/rules.h"
#include "lib/util.h"
#include "policy/glob.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

static bool path_matches(const struct rd_rule *r, const struct rd_exec_subject *x)
{
	const char *pat = r->match_path;
	if (!pat)
		return true;
	/* A grant of a secret goes to the file itself: the resolved, canonical path alone. The
	 * path as passed is the caller's to spell ("/usr/../tmp/x/gh" matches the pattern
	 * "/usr/" "*" "/gh"), and so is argv[0]. */
	if (r->grants_secret)
		return x->resolved &&
		       rd_glob_match(pat, strchr(pat, '/') ? x->resolved : base(x->resolved));
	if (strchr(pat, '/'))
		return (x->resolved && rd_glob_match(pat, x->resolved)) ||
		       (x->path && rd_glob_match(pat, x->path));
	if ((x->resolved && rd_glob_match(pat, base(x->resolved))) ||
	    (x->path && rd_glob_match(pat, base(x->path))))
		return true;
	/* argv[0] can only make a rule stricter, never grant one. */
	return r->action != RD_ACTION_ALLOW && x->argc > 0 && x->argv[0] &&
	       rd_glob_match(pat, base(x->argv[0]));
}

static bool args_match(const struct rd_rule *r, const struct rd_exec_subject *x)
{
	if (!r->has_match_args)
		return true;
	size_t n = r->match_args.n, have = x->argc > 0 ? x->argc - 1 : 0;
	bool rest = n > 0 && strcmp(r->match_args.v[n - 1], "**") == 0;
	size_t fixed = rest ? n - 1 : n;
	if (rest ? have < fixed : have != fixed)
		return false;
	for (size_t i = 0; i < fixed; i++)
		if (!rd_glob_match(r->match_args.v[i], x->argv[i + 1]))
			return false;
	return true;
}

void rd_profile_mark_grants(const struct rd_env_config *env, struct rd_profile *prof)
{
	for (size_t i = 0; i < prof->n_rules; i++) {
		struct rd_rule *r = &prof->rules[i];
		r->grants_secret = false;
		for (size_t k = 0; !r->grants_secret && k < r->env_allow.n; k++) {
			const char *name = r->env_allow.v[k];
			if (rd_glob_is_pattern(name))
				continue;
			for (size_t d = 0; !r->grants_secret && d < env->deny.n; d++)
				r->grants_secret = rd_glob_match(env->deny.v[d], name);
		}
	}
}

const struct rd_strv rd_grant_pinned_names = {
    .v = (char *[]){"PATH",    "HOME",      "XDG_*",     "GIT_*",    "MAKEFLAGS",     "MFLAGS",
                    "PAGER",   "EDITOR",    "VISUAL",    "SHELL",    "GH_PAGER",      "GH_BROWSER",
                    "BROWSER", "GH_EDITOR", "GH_HOST",   "GH_REPO",  "GH_CONFIG_DIR", "GH_PATH",
                    "LESS*",   "*_ASKPASS", "LANG",      "LANGUAGE", "LC_*",          "TZ",
                    "NLSPATH", "LOCPATH",   "TERMINFO*", "*_PROXY",  "*_proxy",       NULL},
    .n = 29,
};

/* git's options that run another program, or read another configuration or repository, as
 * git parses them: a long option by any unambiguous prefix of at least its first letters
 * ("--upload-p" is --upload-pack). */
static bool long_opt(const char *a, const char *opt, size_t min)
{
	size_t n = strcspn(a, "=");
	return n >= min && n <= strlen(opt) && strncmp(a, opt, n) == 0;
}

/* git's options before the subcommand that take no value in the argument after them. */
static bool git_global_plain(const char *a)
{
	static const char plain[] = " -v --version -h --help --html-path --man-path --info-path "
	                            "-p --paginate -P --no-pager --no-replace-objects "
	                            "--no-lazy-fetch --no-optional-locks --no-advice "
	                            "--literal-pathspecs --glob-pathspecs --noglob-pathspecs "
	                            "--icase-pathspecs ";
	char word[32];
	if (strncmp(a, "--list-cmds=", 12) == 0)
		return true;
	return !strchr(a, ' ') && snprintf(word, sizeof(word), " %s ", a) < (int)sizeof(word) &&
	       strstr(plain, word);
}

const char *rd_git_subcommand(char *const *argv, size_t argc)
{
	for (size_t i = 1; i < argc && argv[i]; i++) {
		if (argv[i][0] != '-')
			return argv[i];
		if (!git_global_plain(argv[i]))
			return NULL;
	}
	return NULL;
}

/* The value of the long option a (as long_opt matched it) given with "=", or NULL. */
static const char *eq_value(const char *a)
{
	const char *eq = strchr(a, '=');
	return eq ? eq + 1 : NULL;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t k = 0; s && k < n; k++)
		if (strcmp(s, list[k]) == 0)
			return true;
	return false;
}

const char *rd_grant_argv_refused(const char *resolved, char *const *argv, size_t argc)
{
	if (!resolved || strcmp(base(resolved), "git") != 0)
		return NULL;
	/* After the subcommand, each with the shortest prefix git takes for it (a shorter one
	 * is refused too). Before it, only the options that take no value pass. */
	static const struct {
		const char *opt;
		size_t min;
	} anywhere[] = {
	    {"--receive-pack", 4}, {"--upload-pack", 4},
	    {"--exec", 4},         {"--template", 4},
	    {"--extcmd", 4},       {"--tree-filter", 4},
	    {"--index-filter", 4}, {"--smtp-server", 4},
	    {"--config", 5},       {"--open-files-in-pager", 4},
	};
	/* Subcommands that run a command they are given, the helpers among them too
	 * ("submodule--helper foreach", "bisect--helper --bisect-run", merge-index's merge
	 * program, remote-ext's command); and those that take another repository, with its
	 * configuration, from their arguments (receive-pack DIR runs DIR's
	 * core.alternateRefsCommand). */
	static const char *const runs[] = {
	    "filter-branch",  "submodule",  "bisect",       "difftool",    "mergetool",
	    "send-email",     "daemon",     "instaweb",     "merge-index", "submodule--helper",
	    "bisect--helper", "remote-ext", "receive-pack", "upload-pack", "upload-archive",
	    "fetch-pack",     "send-pack",  "http-backend", "shell"};
	/* Short options that name a program or a configuration value, by subcommand; also
	 * bundled with others ("-qc", "-nO"), and refused too where the letter is only in an
	 * attached argument. (clone, rebase and difftool are refused whole, below.) */
	static const struct {
		const char *sub;
		char opt;
	} shorts[] = {{"ls-remote", 'u'}, {"grep", 'O'}};
	/* Where -s names a merge strategy (cherry-pick's and revert's -s is --signoff). */
	static const char *const strategy_s[] = {"pull", "merge"};
	const char *sub = NULL;
	for (size_t i = 1; i < argc && argv[i]; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--") == 0)
			break;
		if (!sub && (strncmp(a, "-c", 2) == 0 || strcmp(a, "-C") == 0))
			return "git -c and -C (a configuration value can name a program to run; "
			       "another directory, another repository's configuration)";
		if (!sub && a[0] == '-' && !git_global_plain(a))
			return "git's options before the subcommand other than those that take no "
			       "value (--git-dir, --work-tree, --namespace, --exec-path and "
			       "--config-env name another repository, program or configuration; "
			       "one that takes its value in the next argument, as --super-prefix "
			       "does, hides the subcommand)";
		if (!sub && a[0] != '-') {
			sub = a;
			if (in_list(sub, runs, ARRAY_SIZE(runs)))
				return "git's subcommands that run a command they are given, or "
				       "take another repository from their arguments "
				       "(filter-branch, submodule, bisect, difftool, mergetool, "
				       "send-email, daemon, instaweb, merge-index, remote-ext, "
				       "receive-pack, upload-pack, …)";
			/* A rebase, cherry-pick, revert or am: their todo and state are files
			 * commands can write (an exec line), and one a command moves in between
			 * the check and git's start is gone on with (--continue, or any prefix
			 * of it git takes); none needs a secret. */
			static const char *const seqs[] = {"rebase", "cherry-pick", "revert", "am"};
			if (in_list(sub, seqs, ARRAY_SIZE(seqs)))
				return "git rebase, cherry-pick, revert and am (their todo is a "
				       "file commands can write, and none needs a secret); run "
				       "them where no secret is granted";
			/* A pull that rebases (--rebase, pull.rebase, branch.NAME.rebase of the
			 * user's) runs the sequencer, whose todo commands can write while it runs;
			 * --no-rebase overrides them all. */
			bool pull = strcmp(sub, "pull") == 0, merges = false;
			for (size_t k = i + 1; pull && k < argc && argv[k] && strcmp(argv[k], "--");
			     k++) {
				const char *b = argv[k];
				if (strcmp(b, "--no-rebase") == 0)
					merges = true;
				else if (long_opt(b, "--rebase", 5) ||
				         (b[0] == '-' && b[1] != '-' && strchr(b, 'r')))
					merges = false; /* the last of them counts */
			}
			if (pull && !merges)
				return "git pull, which may rebase (pull.rebase, "
				       "branch.NAME.rebase): its todo is a file commands can write "
				       "while it runs; fetch with the grant and merge or rebase "
				       "where none is granted, or pass --no-rebase";
			/* A new repository, whose configuration (a filter, a credential
			 * helper) commands can write while git makes it and goes on reading
			 * it. */
			if (strcmp(sub, "clone") == 0)
				return "git clone (commands can write the new repository's "
				       "configuration while git makes it, and git reads it again: "
				       "a smudge filter or a credential helper of a command's runs "
				       "with the secret); clone where no secret is granted, or "
				       "outside runnerd";
			continue;
		}
		if (strncmp(a, "--", 2) == 0) {
			for (size_t k = 0; k < ARRAY_SIZE(anywhere); k++)
				if (long_opt(a, anywhere[k].opt, anywhere[k].min))
					return "git's options that name a program, a configuration "
					       "or another repository (--receive-pack, "
					       "--upload-pack, "
					       "--exec, --template, --extcmd, --config, "
					       "--open-files-in-pager, …, or a prefix of one)";
			/* Into a submodule, whose configuration and hooks commands can write
			 * (one a command made and entered in the index; .git/modules/NAME). */
			const char *v = eq_value(a);
			if ((long_opt(a, "--recurse-submodules", 5) &&
			     !(v && strcmp(v, "no") == 0)) ||
			    long_opt(a, "--recursive", 9) ||
			    (long_opt(a, "--ignore-submodules", 10) && v &&
			     strcmp(v, "all") != 0) ||
			    (long_opt(a, "--submodule", 6) && !(v && strcmp(v, "short") == 0)))
				return "git's options that go into submodules "
				       "(--recurse-submodules, --ignore-submodules other than "
				       "=all, --submodule other than =short): their configuration "
				       "and hooks are where commands can write";
			/* A merge strategy is a program git-merge-NAME: with a "/", one of the
			 * work tree's. */
			if (long_opt(a, "--strategy", 6) && strchr(v ? v : next ? next : "", '/'))
				return "a merge strategy with a \"/\" (git runs git-merge-NAME, a "
				       "program of the work tree's)";
			continue;
		}
		if (a[0] != '-' || !sub)
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(shorts); k++)
			if (strcmp(sub, shorts[k].sub) == 0 && strchr(a + 1, shorts[k].opt))
				return "git's short options that name a program to run (ls-remote "
				       "-u, grep -O)";
		const char *s = strchr(a + 1, 's');
		if (s && in_list(sub, strategy_s, ARRAY_SIZE(strategy_s)) &&
		    strchr(s[1]   ? s + 1
		           : next ? next
		                  : "",
		           '/'))
			return "a merge strategy with a \"/\" (git runs git-merge-NAME, a program "
			       "of the work tree's)";
	}
	return NULL;
}

const struct rd_rule *rd_rule_match(const struct rd_profile *prof, const struct rd_exec_subject *x)
{
	for (size_t i = 0; i < prof->n_rules; i++) {
		const struct rd_rule *r = &prof->rules[i];
		if (path_matches(r, x) && args_match(r, x))
			return r;
	}
	return NULL;
}

/* path with "{uid}" replaced by uid; NULL on OOM. */
static char *expand_uid(const char *path, uid_t uid)
{
	char num[16];
	int nl = snprintf(num, sizeof(num), "%u", (unsigned)uid);
	size_t n = 0;
	for (const char *p = path; (p = strstr(p, "{uid}")); p += 5)
		n++;
	char *out = malloc(strlen(path) + n * (size_t)nl + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = path; *p;) {
		if (strncmp(p, "{uid}", 5) == 0) {
			memcpy(o, num, (size_t)nl);
			o += nl;
			p += 5;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

char *rd_box_path(const char *entry, const char *home, uid_t uid)
{
	_cleanup_free_ char *p = expand_uid(entry, uid);
	char *full = NULL;
	if (p && strncmp(p, "~/", 2) == 0)
		return asprintf(&full, "%s/%s", home, p + 2) < 0 ? NULL : full;
	return p ? steal_pointer(&p) : NULL;
}

static int add_mask(struct rd_strv *out, const char *path, const char *home, uid_t uid)
{
	char *full = rd_box_path(path, home, uid);
	if (!full)
		return -ENOMEM;
	size_t n = strlen(full);
	if (n > 1 && full[n - 1] == '/')
		full[n - 1] = '\0'; /* a protected directory's mark (rd_view_lists) */
	if (rd_strv_contains(out, full)) {
		free(full);
		return 0;
	}
	return rd_strv_take(out, full);
}

static const char *env_value(char *const *env, const char *name, size_t len)
{
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			return env[i] + len + 1;
	return NULL;
}

/* path (len bytes, then rest), written the one way masks compare: components joined by one
 * "/", no "." or "..", no trailing "/"; "~/" kept at the start. */
static char *normal_path(const char *path, size_t len, const char *rest)
{
	char *out = malloc(len + strlen(rest) + 2), *o = out;
	if (!out)
		return NULL;
	const char *p = path, *end = path + len;
	bool home = len >= 2 && strncmp(path, "~/", 2) == 0;
	if (home) {
		memcpy(o, "~", 1);
		o++;
		p++;
	}
	size_t root = (size_t)(o - out);
	for (int part = 0; part < 2; part++) {
		if (part == 1)
			p = rest, end = rest + strlen(rest);
		while (p < end) {
			while (p < end && *p == '/')
				p++;
			const char *c = p;
			while (p < end && *p != '/')
				p++;
			size_t n = (size_t)(p - c);
			if (n == 0 || (n == 1 && c[0] == '.'))
				continue;
			if (n == 2 && c[0] == '.' && c[1] == '.') {
				while ((size_t)(o - out) > root && *--o != '/')
					;
				continue;
			}
			*o++ = '/';
			memcpy(o, c, n);
			o += n;
		}
	}
	*o = '\0';
	return out;
}

/* list's entries (key names them in notes) with "{workspace}" and "${NAME}" made paths. A value
 * that makes no path is left out with a note that names the variable, never its value. */
static int expand_list(struct rd_strv *list, const char *key, char *const *env, const char *cwd,
                       const char *workspace, struct rd_strv *notes)
{
	struct rd_strv out = {0};
	int r = 0;
	for (size_t i = 0; r == 0 && i < list->n; i++) {
		const char *pat = list->v[i];
		size_t var = rd_mask_var_len(pat);
		/* A protected directory's "/" (rd_glob_check's RD_PROTECT_PATH) stays at the end
		 * of each path made (rd_view_lists reads it). */
		size_t plen = strlen(pat);
		bool dir = plen > 1 && pat[plen - 1] == '/';
		if (dir) {
			_cleanup_free_ char *bare = strndup(pat, plen - 1);
			struct rd_strv one = {0};
			if (!bare || rd_strv_add(&one, bare) < 0) {
				rd_strv_free(&one);
				r = -ENOMEM;
				break;
			}
			r = expand_list(&one, key, env, cwd, workspace, notes);
			for (size_t k = 0; r == 0 && k < one.n; k++) {
				char *d = NULL;
				r = asprintf(&d, "%s%s", one.v[k],
				             strcmp(one.v[k], "/") ? "/" : "") < 0
				        ? -ENOMEM
				        : rd_strv_take(&out, d);
			}
			rd_strv_free(&one);
			continue;
		}
		if (!var && strncmp(pat, "{workspace}", 11) == 0) {
			char *path = normal_path(workspace, strlen(workspace), pat + 11);
			r = !path   ? -ENOMEM
			    : *path ? rd_strv_take(&out, path)
			            : (free(path), rd_strv_add(&out, "/"));
			continue;
		}
		if (!var) {
			r = rd_strv_take(&out, strdup(pat));
			/* "~/" is the caller's home in the password database (add_mask); the
			 * agent's HOME, where its tools keep their files, may be another (a
			 * container's ENV HOME, a CI's): the path under it too. */
			const char *home = env_value(env, "HOME", 4);
			if (r == 0 && strncmp(pat, "~/", 2) == 0 && home && home[0] == '/' &&
			    home[strspn(home, "/")]) {
				char *path = normal_path(home, strlen(home), pat + 1);
				r = path ? rd_strv_take(&out, path) : -ENOMEM;
			}
			continue;
		}
		const char *val = env_value(env, pat + 2, var - 3);
		for (const char *e = val; r == 0 && e && *e;) {
			size_t n = strcspn(e, ":");
			_cleanup_free_ char *joined = NULL;
			const char *base = e;
			size_t blen = n;
			if (n && e[0] != '/' && !(n >= 2 && strncmp(e, "~/", 2) == 0)) {
				if (asprintf(&joined, "%s/%.*s", cwd, (int)n, e) < 0)
					return -ENOMEM;
				base = joined;
				blen = strlen(joined);
			}
			char *path = n ? normal_path(base, blen, pat + var) : NULL;
			if (n && !path)
				r = -ENOMEM;
			else if (path && !rd_glob_check(path, RD_MASK_PATH))
				r = rd_strv_take(&out, path);
			else if (path) {
				char *note = NULL;
				if (asprintf(&note,
				             "%s %s: a path in %.*s makes no path that can be used "
				             "there: left out",
				             key, pat, (int)(var - 3), pat + 2) < 0)
					note = NULL;
				free(path);
				r = rd_strv_take(notes, note);
			}
			e += n + (e[n] == ':');
		}
	}
	if (r < 0) {
		rd_strv_free(&out);
		return r;
	}
	rd_strv_free(list);
	*list = out;
	return 0;
}

int rd_mask_expand_env(struct rd_config *cfg, struct rd_profile *prof, char *const *env,
                       const char *cwd, const char *workspace, struct rd_strv *notes)
{
	*notes = (struct rd_strv){0};
	static const enum rd_box_id keys[] = {RD_BOX_MASK,    RD_BOX_UNMASK, RD_BOX_WRITE,
	                                      RD_BOX_PROTECT, RD_BOX_CACHE,  RD_BOX_PLACEHOLDER};
	int r = 0;
	for (size_t k = 0; r == 0 && k < ARRAY_SIZE(keys); k++) {
		const char *key = rd_box_keys[keys[k]].name;
		r = expand_list(&cfg->box.list[keys[k]], key, env, cwd, workspace, notes);
		if (r == 0)
			r = expand_list(&prof->commands_box.list[keys[k]], key, env, cwd, workspace,
			                notes);
	}
	static const enum rd_box_id rule_keys[] = {RD_BOX_MASK, RD_BOX_WRITE, RD_BOX_PROTECT};
	for (size_t i = 0; r == 0 && i < prof->n_rules; i++)
		for (size_t k = 0; r == 0 && k < ARRAY_SIZE(rule_keys); k++)
			r = expand_list(&prof->rules[i].box.list[rule_keys[k]],
			                rd_box_keys[rule_keys[k]].name, env, cwd, workspace, notes);
	return r;
}

int rd_view_lists(const struct rd_config *cfg, const struct rd_profile *prof, const char *home,
                  uid_t uid, struct rd_strv *write, struct rd_strv *protect, struct rd_strv *dirs,
                  struct rd_strv *files, struct rd_strv *caches, struct rd_strv *notes)
{
	struct rd_strv all[4] = {{0}, {0}, {0}, {0}}, marked = {0};
	enum rd_box_id keys[] = {RD_BOX_WRITE, RD_BOX_PROTECT, RD_BOX_CACHE, RD_BOX_PLACEHOLDER};
	int r = 0;
	*write = *protect = *dirs = *files = *caches = *notes = (struct rd_strv){0};
	for (size_t k = 0; k < 4; k++) {
		const struct rd_strv *lists[] = {&cfg->box.list[keys[k]],
		                                 &prof->commands_box.list[keys[k]]};
		for (size_t l = 0; l < 2; l++)
			for (size_t i = 0; r == 0 && i < lists[l]->n; i++) {
				const char *e = lists[l]->v[i];
				size_t n = strlen(e);
				r = add_mask(&all[k], e, home, uid);
				if (r == 0 && k == 1 && n > 1 && e[n - 1] == '/')
					r = add_mask(&marked, e, home, uid);
			}
	}
	/* "/" writable is no sandbox: a {workspace} of "/" (runnerd started there, as in many
	 * containers) is left read-only instead. */
	if (r == 0 && rd_strv_contains(&all[0], "/"))
		r = rd_strv_add(notes,
		                "write \"/\" (a {workspace} of \"/\"?) would make the whole "
		                "machine writable to commands: left read-only; start runnerd "
		                "in the project, or name it in \"write\"");
	/* Each sandbox copies every mount of the view: a writable root inside another, or a
	 * protected path outside every writable root (read-only already), would be a mount for
	 * nothing. */
	for (size_t i = 0; r == 0 && i < all[0].n; i++) {
		const char *p = all[0].v[i];
		bool inside = strcmp(p, "/") == 0;
		for (size_t k = 0; k < all[0].n && !inside; k++)
			inside = k != i && strcmp(all[0].v[k], "/") != 0 &&
			         rd_path_within(p, all[0].v[k]);
		if (!inside)
			r = rd_strv_add(write, p);
	}
	for (size_t i = 0; r == 0 && i < all[1].n; i++)
		if (rd_strv_within(write, all[1].v[i]))
			r = rd_strv_add(protect, all[1].v[i]);
	for (size_t i = 0; r == 0 && i < marked.n; i++)
		if (rd_strv_within(write, marked.v[i]))
			r = rd_strv_add(dirs, marked.v[i]);
	/* Placeholders: protected files, made empty where missing. */
	for (size_t i = 0; r == 0 && i < all[3].n; i++)
		if (rd_strv_within(write, all[3].v[i]) && !rd_strv_contains(files, all[3].v[i])) {
			r = rd_strv_add(files, all[3].v[i]);
			if (r == 0 && !rd_strv_contains(protect, all[3].v[i]))
				r = rd_strv_add(protect, all[3].v[i]);
		}
	/* A cache inside a writable root is writable already; one inside another cache is in its
	 * layer; never "/" or the kernel's interfaces. */
	for (size_t i = 0; r == 0 && i < all[2].n; i++) {
		const char *p = all[2].v[i];
		bool skip = rd_strv_within(write, p) || rd_write_root_refused(p);
		for (size_t k = 0; !skip && k < all[2].n; k++)
			skip = k != i && rd_path_within(p, all[2].v[k]) && strcmp(p, all[2].v[k]);
		if (!skip && !rd_strv_contains(caches, p))
			r = rd_strv_add(caches, p);
	}
	rd_strv_free(&all[0]);
	rd_strv_free(&all[1]);
	rd_strv_free(&all[2]);
	rd_strv_free(&all[3]);
	rd_strv_free(&marked);
	if (r < 0) {
		rd_strv_free(write);
		rd_strv_free(protect);
		rd_strv_free(dirs);
		rd_strv_free(caches);
		rd_strv_free(files);
		rd_strv_free(notes);
	}
	return r;
}

int rd_mask_list(const struct rd_config *cfg, const struct rd_profile *prof,
                 const struct rd_rule *rule, const char *home, uid_t uid, struct rd_strv *out)
{
	int r = 0;
	memset(out, 0, sizeof(*out));
	const struct rd_strv *global = &cfg->box.list[RD_BOX_MASK];
	const struct rd_strv *unmask = &prof->commands_box.list[RD_BOX_UNMASK];
	const struct rd_strv *more[] = {&prof->commands_box.list[RD_BOX_MASK],
	                                rule ? &rule->box.list[RD_BOX_MASK] : NULL};
	for (size_t i = 0; r == 0 && i < global->n; i++)
		if (!rd_strv_contains(unmask, global->v[i]))
			r = add_mask(out, global->v[i], home, uid);
	for (size_t l = 0; l < ARRAY_SIZE(more); l++)
		for (size_t i = 0; r == 0 && more[l] && i < more[l]->n; i++)
			r = add_mask(out, more[l]->v[i], home, uid);
	/* An unmask inside a masked directory is an exception to it: "!" and the path, which
	 * the sandbox shows through the mask (sandbox/reaper.c). */
	struct rd_strv inside = {0};
	for (size_t i = 0; r == 0 && i < unmask->n; i++)
		r = add_mask(&inside, unmask->v[i], home, uid);
	size_t n_masks = out->n;
	for (size_t i = 0; r == 0 && i < inside.n; i++) {
		const char *x = inside.v[i];
		bool in = false;
		for (size_t k = 0; !in && k < n_masks; k++)
			in = rd_path_within(x, out->v[k]) && strcmp(x, out->v[k]) != 0;
		char *bang = NULL;
		if (in && asprintf(&bang, "!%s", x) < 0)
			r = -ENOMEM;
		else if (in && !rd_strv_contains(out, bang))
			r = rd_strv_take(out, bang);
		else
			free(bang);
	}
	rd_strv_free(&inside);
	if (r < 0)
		rd_strv_free(out);
	return r;
}

const char *rd_write_root_refused(const char *path)
{
	static const char *const kernel[] = {"/proc", "/sys", "/dev"};
	if (strcmp(path, "/") == 0)
		return "\"/\" would make the whole machine writable";
	for (size_t k = 0; k < ARRAY_SIZE(kernel); k++)
		if (rd_path_within(path, kernel[k]))
			return "the kernel's interfaces (/proc, /sys, /dev) are never writable";
	return NULL;
}

int rd_rule_view_lists(const struct rd_config *cfg, const struct rd_profile *prof,
                       const struct rd_rule *rule, char *const *also, size_t n_also,
                       const char *home, uid_t uid, struct rd_strv *write, struct rd_strv *protect)
{
	*write = *protect = (struct rd_strv){0};
	int r = 0;
	for (size_t i = 0; r == 0 && rule && i < rule->box.list[RD_BOX_WRITE].n; i++)
		r = add_mask(write, rule->box.list[RD_BOX_WRITE].v[i], home, uid);
	/* Never the kernel's interfaces, nor what holds them ("/", from a {workspace} of "/"):
	 * their read-only mounts are what keeps a root command from the machine's knobs. */
	for (size_t i = 0; r == 0 && i < write->n;) {
		if (rd_write_root_refused(write->v[i])) {
			free(write->v[i]);
			memmove(&write->v[i], &write->v[i + 1], (write->n - i) * sizeof(char *));
			write->n--;
		} else {
			i++;
		}
	}
	for (size_t i = 0; r == 0 && rule && i < rule->box.list[RD_BOX_PROTECT].n; i++)
		r = add_mask(protect, rule->box.list[RD_BOX_PROTECT].v[i], home, uid);
	/* The other levels' protected paths hold in the rule's roots too: also those that lie
	 * outside every root of the session (left out of its view as mounts for nothing). */
	struct rd_strv others = {0};
	const struct rd_strv *levels[] = {&cfg->box.list[RD_BOX_PROTECT],
	                                  &prof->commands_box.list[RD_BOX_PROTECT]};
	for (size_t l = 0; write->n && l < ARRAY_SIZE(levels); l++)
		for (size_t i = 0; r == 0 && i < levels[l]->n; i++)
			r = add_mask(&others, levels[l]->v[i], home, uid);
	for (size_t i = 0; r == 0 && write->n && i < n_also; i++)
		r = add_mask(&others, also[i], home, uid);
	for (size_t i = 0; r == 0 && i < others.n; i++) {
		const char *p = others.v[i];
		bool in = false;
		for (size_t k = 0; !in && k < write->n; k++)
			in = rd_path_within(p, write->v[k]) || rd_path_within(write->v[k], p);
		if (in && !rd_strv_contains(protect, p))
			r = rd_strv_add(protect, p);
	}
	rd_strv_free(&others);
	if (r < 0) {
		rd_strv_free(write);
		rd_strv_free(protect);
	}
	return r;
}

struct rd_box_opts rd_box_resolve(const struct rd_config *cfg, const struct rd_profile *prof,
                                  const struct rd_rule *rule)
{
	const struct rd_box *levels[] = {rule ? &rule->box : NULL, &prof->commands_box, &cfg->box};
	return rd_box_merge(levels, ARRAY_SIZE(levels));
}
