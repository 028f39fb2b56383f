/* Rule matching: (rules, exec) -> the rule that applies, table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/util.h"
#include "policy/glob.h"
#include "policy/rules.h"

#include <stdlib.h>
#include <string.h>

#define V(...) ((char *[]){__VA_ARGS__, NULL})

static struct rd_rule rule(const char *path, char **args, enum rd_action a)
{
	struct rd_rule r = {.match_path = (char *)path, .action = a};
	if (args) {
		r.has_match_args = true;
		while (args[r.match_args.n])
			r.match_args.n++;
		r.match_args.v = args;
	}
	return r;
}

struct row {
	const char *what;
	const char *path, *resolved;
	char **argv;
	int want; /* index of the matching rule, -1 for none */
};

static void run_table(struct rd_rule *rules, size_t n, const struct row *rows, size_t nrows)
{
	struct rd_profile p = {.rules = rules, .n_rules = n};
	for (size_t i = 0; i < n; i++)
		rules[i].index = i;
	for (size_t i = 0; i < nrows; i++) {
		const struct row *w = &rows[i];
		size_t argc = 0;
		while (w->argv[argc])
			argc++;
		struct rd_exec_subject x = {w->path, w->resolved, w->argv, argc};
		const struct rd_rule *got = rd_rule_match(&p, &x);
		int gi = got ? (int)got->index : -1;
		if (gi != w->want)
			fail_msg("%s: matched rule %d, want %d", w->what, gi, w->want);
	}
}

static void test_paths(void **state)
{
	(void)state;
	struct rd_rule rules[] = {
	    rule("git", NULL, RD_ACTION_ALLOW),        /* 0: basename */
	    rule("/usr/*/curl", NULL, RD_ACTION_DENY), /* 1: full path */
	    rule("sh", NULL, RD_ACTION_DENY),          /* 2: deny, argv[0] may match */
	    rule("python3*", NULL, RD_ACTION_ALLOW),   /* 3 */
	    rule("gh", NULL, RD_ACTION_ALLOW),         /* 4: allow, never by argv[0] */
	};
	const struct row rows[] = {
	    {"git by PATH", "/usr/bin/git", "/usr/bin/git", V("git", "status"), 0},
	    {"git by symlink", "/usr/local/bin/g", "/usr/bin/git", V("g"), 0},
	    {"curl full path", "/usr/bin/curl", "/usr/bin/curl", V("curl", "x"), 1},
	    {"curl via /bin symlink dir", "/bin/curl", "/usr/bin/curl", V("curl"), 1},
	    {"sh resolving to dash", "/bin/sh", "/usr/bin/dash", V("sh", "-c", "x"), 2},
	    {"dash named sh by argv[0]", "/usr/bin/dash", "/usr/bin/dash", V("sh"), 2},
	    {"python3.11", "/usr/bin/python3", "/usr/bin/python3.11", V("python3"), 3},
	    {"gh for real", "/usr/bin/gh", "/usr/bin/gh", V("gh", "pr"), 4},
	    {"argv[0] gh does not earn an allow", "/tmp/evil", "/tmp/evil", V("gh"), -1},
	    {"argv[0] git does not earn an allow", "/tmp/x", "/tmp/x", V("git"), -1},
	    {"nothing", "/usr/bin/ls", "/usr/bin/ls", V("ls"), -1},
	    {"unknown resolved", "/usr/bin/git", NULL, V("git"), 0},
	};
	run_table(rules, ARRAY_SIZE(rules), rows, ARRAY_SIZE(rows));
}

static void test_args(void **state)
{
	(void)state;
	struct rd_rule rules[] = {
	    rule("git", V("push", "**"), RD_ACTION_DENY),    /* 0 */
	    rule("git", V("status"), RD_ACTION_ALLOW),       /* 1: exactly one argument */
	    rule("npm", V("run", "test*"), RD_ACTION_ALLOW), /* 2 */
	    rule("rm", V("**"), RD_ACTION_ASK),              /* 3: any arguments, even none */
	    rule(NULL, V("--version"), RD_ACTION_ALLOW),     /* 4: any program */
	    rule(NULL, NULL, RD_ACTION_DENY),                /* 5: everything */
	};
	const struct row rows[] = {
	    {"git push", "/usr/bin/git", "/usr/bin/git", V("git", "push"), 0},
	    {"git push origin main", "/usr/bin/git", "/usr/bin/git",
	     V("git", "push", "origin", "main"), 0},
	    {"git status", "/usr/bin/git", "/usr/bin/git", V("git", "status"), 1},
	    {"git status -s is not exactly one arg", "/usr/bin/git", "/usr/bin/git",
	     V("git", "status", "-s"), 5},
	    {"git alone", "/usr/bin/git", "/usr/bin/git", V("git"), 5},
	    {"npm run test:unit", "/usr/bin/npm", "/usr/bin/npm", V("npm", "run", "test:unit"), 2},
	    {"npm run build", "/usr/bin/npm", "/usr/bin/npm", V("npm", "run", "build"), 5},
	    {"rm with no args", "/usr/bin/rm", "/usr/bin/rm", V("rm"), 3},
	    {"rm -rf /", "/usr/bin/rm", "/usr/bin/rm", V("rm", "-rf", "/"), 3},
	    {"anything --version", "/usr/bin/node", "/usr/bin/node", V("node", "--version"), 4},
	    {"empty argv", "/usr/bin/node", "/usr/bin/node", (char *[]){NULL}, 5},
	};
	run_table(rules, ARRAY_SIZE(rules), rows, ARRAY_SIZE(rows));
}

static void test_masks(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	cfg.box.list[RD_BOX_MASK] = (struct rd_strv){
	    V("~/.aws", "~/.ssh", "/etc/shadow-like", "/tmp/tmux-{uid}", "/r/{uid}/{uid}x"), 5};
	struct rd_profile p = {0};
	p.commands_box.list[RD_BOX_MASK] = (struct rd_strv){V("~/.config/x", "~/.aws"), 2};
	/* ~/.ssh: an entry, kept visible; the others lie inside a masked directory (exceptions),
	 * or in none (nothing to do), or are the masked directory itself plus a slash's worth of
	 * nothing ("/srv/keysx" is not in "/srv/keys"). */
	p.commands_box.list[RD_BOX_UNMASK] = (struct rd_strv){
	    V("~/.ssh", "/r/{uid}/{uid}x/sock", "/srv/keys/pub", "/srv/keysx", "/elsewhere"), 5};
	struct rd_rule r = {0};
	r.box.list[RD_BOX_MASK] = (struct rd_strv){V("/srv/keys"), 1};
	struct rd_strv out;
	assert_int_equal(rd_mask_list(&cfg, &p, &r, "/home/dev", 1000, &out), 0);
	const char *want[] = {"/home/dev/.aws",      "/etc/shadow-like",    "/tmp/tmux-1000",
	                      "/r/1000/1000x",       "/home/dev/.config/x", "/srv/keys",
	                      "!/r/1000/1000x/sock", "!/srv/keys/pub"};
	assert_int_equal(out.n, ARRAY_SIZE(want)); /* ~/.ssh kept visible, ~/.aws once */
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(out.v[i], want[i]);
	assert_null(out.v[out.n]);
	rd_strv_free(&out);
	assert_int_equal(rd_mask_list(&cfg, &p, NULL, "/root", 0, &out), 0);
	assert_int_equal(out.n, 6); /* no rule: /srv/keys, and its exception, are not there */
	assert_string_equal(out.v[5], "!/r/0/0x/sock");
	assert_string_equal(out.v[0], "/root/.aws");
	assert_string_equal(out.v[2], "/tmp/tmux-0");
	rd_strv_free(&out);
}

static struct rd_strv heap_strv(char **v)
{
	struct rd_strv s = {0};
	while (v[s.n])
		s.n++;
	s.v = calloc(s.n + 1, sizeof(char *));
	for (size_t i = 0; i < s.n; i++)
		s.v[i] = strdup(v[i]);
	return s;
}

/* "${NAME}" mask paths: one per ':'-separated path in the variable, none when it is unset or
 * empty, relative ones from the working directory, each written the one way masks compare;
 * one that is no mask path after that is left out, with a note. */
static void test_mask_env(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	struct rd_rule rules[1] = {{0}};
	cfg.box.list[RD_BOX_MASK] =
	    heap_strv(V("~/.aws", "${CODEX_HOME}/auth.json", "${KUBECONFIG}", "${UNSET}/x",
	                "${EMPTY}", "${GOOGLE_APPLICATION_CREDENTIALS}", "${ROOTISH}"));
	p.commands_box.list[RD_BOX_UNMASK] = heap_strv(V("${KUBECONFIG}"));
	rules[0].box.list[RD_BOX_MASK] = heap_strv(V("${GH_CONFIG_DIR}"));
	p.rules = rules;
	p.n_rules = 1;
	char *env[] = {"CODEX_HOME=/srv/codex//home/",
	               "KUBECONFIG=/k/a:rel/b::~/c",
	               "EMPTY=",
	               "GOOGLE_APPLICATION_CREDENTIALS=/g/./x/../key.json",
	               "ROOTISH=/a/..",
	               "GH_CONFIG_DIR=/gh",
	               NULL};
	struct rd_strv notes;
	assert_int_equal(rd_mask_expand_env(&cfg, &p, env, "/work", "/work", &notes), 0);
	const char *want[] = {
	    "~/.aws", "/srv/codex/home/auth.json", "/k/a", "/work/rel/b", "~/c", "/g/key.json"};
	struct rd_strv *got = &cfg.box.list[RD_BOX_MASK];
	assert_int_equal(got->n, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(got->v[i], want[i]);
	assert_int_equal(p.commands_box.list[RD_BOX_UNMASK].n, 3);
	assert_string_equal(rules[0].box.list[RD_BOX_MASK].v[0], "/gh");
	assert_int_equal(notes.n, 1);
	assert_non_null(strstr(notes.v[0], "ROOTISH"));
	assert_non_null(strstr(notes.v[0], "mask "));
	assert_null(strstr(notes.v[0], "/a/..")); /* a variable's value is never shown */
	/* The expanded list is the ordinary one: "~/" is the caller's home at each exec. */
	struct rd_strv out;
	assert_int_equal(rd_mask_list(&cfg, &p, NULL, "/home/dev", 1000, &out), 0);
	assert_int_equal(out.n, 3); /* KUBECONFIG's three unmasked */
	assert_string_equal(out.v[0], "/home/dev/.aws");
	assert_string_equal(out.v[2], "/g/key.json");
	rd_strv_free(&out);
	rd_strv_free(&notes);
	rd_strv_free(&cfg.box.list[RD_BOX_MASK]);
	rd_strv_free(&p.commands_box.list[RD_BOX_UNMASK]);
	rd_strv_free(&rules[0].box.list[RD_BOX_MASK]);
}

/* A protected directory keeps its "/" through every form of path: {workspace}, ${NAME} (each
 * of its paths), "~/" (and the agent's HOME's copy), absolute. */
static void test_protect_dirs_expand(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	cfg.box.list[RD_BOX_PROTECT] =
	    heap_strv(V("{workspace}/.claude/", "${CODEX_HOME}/", "~/.gemini/", "/etc/x/",
	                "{workspace}/.mcp.json"));
	char *env[] = {"CODEX_HOME=/c1:rel", "HOME=/srv/agent", NULL};
	struct rd_strv notes;
	assert_int_equal(rd_mask_expand_env(&cfg, &p, env, "/work", "/work", &notes), 0);
	const char *want[] = {"/work/.claude/",      "/c1/",    "/work/rel/",     "~/.gemini/",
	                      "/srv/agent/.gemini/", "/etc/x/", "/work/.mcp.json"};
	struct rd_strv *got = &cfg.box.list[RD_BOX_PROTECT];
	assert_int_equal(got->n, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(got->v[i], want[i]);
	rd_strv_free(&notes);
	rd_strv_free(got);
}

/* "~/" paths: under the caller's home (later, rd_mask_list) and under the agent's HOME, when
 * that is absolute and not "/"; the same path twice is one mask. */
static void test_mask_home(void **state)
{
	(void)state;
	static const struct {
		const char *home; /* HOME=..., or NULL: unset */
		const char *want; /* the second path, or NULL: none */
	} cases[] = {
	    {"HOME=/srv/agent//", "/srv/agent/.aws/x"},
	    {"HOME=/", NULL},
	    {"HOME=//", NULL},
	    {"HOME=rel", NULL},
	    {"HOME=", NULL},
	    {NULL, NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rd_config cfg = {0};
		struct rd_profile p = {0};
		cfg.box.list[RD_BOX_MASK] = heap_strv(V("~/.aws/x", "/etc/y"));
		char *env[] = {(char *)cases[i].home, NULL};
		struct rd_strv notes;
		assert_int_equal(rd_mask_expand_env(&cfg, &p, env, "/work", "/work", &notes), 0);
		struct rd_strv *got = &cfg.box.list[RD_BOX_MASK];
		assert_int_equal(got->n, cases[i].want ? 3 : 2);
		assert_string_equal(got->v[0], "~/.aws/x");
		if (cases[i].want)
			assert_string_equal(got->v[1], cases[i].want);
		assert_string_equal(got->v[got->n - 1], "/etc/y");
		struct rd_strv out;
		assert_int_equal(rd_mask_list(&cfg, &p, NULL, "/srv/agent", 0, &out), 0);
		assert_int_equal(out.n, 2); /* the home's path once */
		assert_string_equal(out.v[0], "/srv/agent/.aws/x");
		rd_strv_free(&out);
		rd_strv_free(&notes);
		rd_strv_free(got);
	}
}

/* A rule that grants a secret by its exact name matches the resolved path alone; git's options
 * that run a program are refused to it. */
static void test_grants(void **state)
{
	(void)state;
	struct rd_env_config env = {.deny = {V("*_TOKEN", "*SECRET*"), 2}};
	struct rd_rule rules[3] = {
	    {.index = 0,
	     .match_path = "/usr/*/gh",
	     .action = RD_ACTION_ALLOW,
	     .env_allow = {V("GH_TOKEN"), 1}},
	    {.index = 1,
	     .match_path = "/usr/*/tool",
	     .action = RD_ACTION_ALLOW,
	     .env_allow = {V("*_TOKEN", "TOOL_HOME"), 2}},
	    {.index = 2,
	     .match_path = "gh",
	     .action = RD_ACTION_ALLOW,
	     .env_allow = {V("GH_TOKEN"), 1}},
	};
	struct rd_profile p = {.rules = rules, .n_rules = 3};
	rd_profile_mark_grants(&env, &p);
	assert_true(rules[0].grants_secret);
	assert_false(rules[1].grants_secret); /* a glob grants no secret */
	assert_true(rules[2].grants_secret);
	struct rd_exec_subject real = {"/usr/bin/gh", "/usr/bin/gh", V("gh"), 1};
	assert_ptr_equal(rd_rule_match(&p, &real), &rules[0]);
	struct rd_exec_subject dotdot = {"/usr/../tmp/x/gh", "/tmp/x/gh", V("gh"), 1};
	assert_ptr_equal(rd_rule_match(&p, &dotdot), &rules[2]); /* by base name: "gh" */
	rules[2].match_path = "/opt/gh";
	assert_null(rd_rule_match(&p, &dotdot));
	struct rd_exec_subject tool = {"/usr/../tmp/tool", "/tmp/tool", V("tool"), 1};
	assert_ptr_equal(rd_rule_match(&p, &tool), &rules[1]); /* no grant: as passed */

	const char *git = "/usr/bin/git";
	struct {
		char **argv;
		bool refused;
	} rows[] = {
	    {V("git", "push"), false},
	    {V("git", "push", "-u", "origin", "main"), false},
	    {V("git", "-C", "/tmp/evil", "status"), true},
	    {V("git", "--git-dir=/tmp/evil/.git", "log"), true},
	    {V("git", "fetch", "--upload-p=sh", "."), true},
	    {V("git", "push", "--exe=sh"), true},
	    {V("git", "push", "--receive", "sh"), true},
	    {V("git", "ls-remote", "-u", "sh", "."), true},
	    {V("git", "rebase", "-x", "sh", "main"), true},
	    {V("git", "submodule", "foreach", "sh"), true},
	    {V("git", "fetch", "-u", "origin"), false},
	    {V("git", "push", "--force-with-lease"), false},
	    {V("git", "commit", "-c", "HEAD"), false},
	    {V("git", "-c", "core.pager=sh", "log"), true},
	    {V("git", "-ccore.pager=sh", "log"), true},
	    {V("git", "--config-env=core.pager=X", "log"), true},
	    {V("git", "--exec-path=/tmp", "push"), true},
	    {V("git", "push", "--receive-pack=sh"), true},
	    {V("git", "push", "--receive-pack", "sh"), true},
	    {V("git", "fetch", "--upload-pack=sh"), true},
	    {V("git", "push", "--exec=sh"), true},
	    {V("git", "clone", "-u", "sh", "x"), true},
	    {V("git", "clone", "--template=/tmp/t", "x"), true},
	    {V("git", "log", "--", "--exec"), false},
	    {V("git", "clone", "-c", "core.sshCommand=sh", "x"), true},
	    {V("git", "clone", "-qc", "core.sshCommand=sh", "x"), true},
	    {V("git", "clone", "--config=core.sshCommand=sh", "x"), true},
	    {V("git", "clone", "--conf", "core.sshCommand=sh", "x"), true},
	    {V("git", "grep", "-O", "x"), true},
	    {V("git", "grep", "-nOsh", "x"), true},
	    {V("git", "grep", "--open-files-in-pager=sh", "x"), true},
	    {V("git", "grep", "-n", "x"), false},
	    {V("git", "rebase", "-ix", "sh", "main"), true},
	    {V("git", "clone", "-q", "x"), true},
	    {V("git", "ls-remote", "-q", "x"), false},
	    {V("git", "rebase", "--continue"), true},
	    {V("git", "rebase", "--cont"), true},
	    {V("git", "cherry-pick", "--ski"), true},
	    {V("git", "revert", "--continue"), true},
	    {V("git", "am", "-r"), true},
	    {V("git", "rebase", "main"), true},
	    {V("git", "pull", "--rebase", "origin"), true},
	    {V("git", "pull", "origin"), true},
	    {V("git", "pull", "--no-rebase", "origin"), false},
	    {V("git", "pull", "--rebase", "--no-rebase"), false},
	    {V("git", "pull", "--no-rebase", "--rebase"), true},
	    {V("git", "pull", "--no-rebase", "-qr"), true},
	    /* git takes any prefix that names one option alone */
	    {V("git", "pull", "--no-rebase", "--reb"), true},
	    {V("git", "pull", "--no-rebase", "--rebas=merges"), true},
	    {V("git", "merge", "--continue"), false},
	    {V("git", "daemon", "--access-hook=/tmp/x", "."), true},
	    {V("git", "instaweb", "--httpd=sh -c x"), true},
	    {V("git", "submodule--helper", "foreach", "sh"), true},
	    {V("git", "bisect--helper", "--bisect-run", "sh"), true},
	    {V("git", "merge-index", "sh", "-a"), true},
	    {V("git", "remote-ext", "x", "sh"), true},
	    {V("git", "--super-prefix", "x", "submodule--helper", "foreach", "sh"), true},
	    {V("git", "--attr-source", "x", "submodule", "foreach", "sh"), true},
	    {V("git", "--bare", "fetch"), true},
	    {V("git", "--no-pager", "-P", "--literal-pathspecs", "log"), false},
	    {V("git", "--list-cmds=main"), false},
	    {V("git", "fetch", "--super-prefix"), false},
	    {V("git", "status", "--ignore-submodules=none"), true},
	    {V("git", "status", "--ignore-submodules=all"), false},
	    {V("git", "status", "--ignore-submodules"), false},
	    {V("git", "fetch", "--recurse-submodules"), true},
	    {V("git", "fetch", "--recurse-submodules=yes"), true},
	    {V("git", "push", "--recurse-sub=on-demand"), true},
	    {V("git", "fetch", "--recurse-submodules=no"), false},
	    {V("git", "clone", "--recursive", "x"), true},
	    {V("git", "fetch", "--no-recurse-submodules"), false},
	    {V("git", "diff", "--submodule=diff"), true},
	    {V("git", "log", "--submodule"), true},
	    {V("git", "diff", "--submodule=short"), false},
	    {V("git", "cherry-pick", "--strategy=evil/run", "b"), true},
	    {V("git", "cherry-pick", "--strategy", "evil/run", "b"), true},
	    {V("git", "merge", "--strategy=ort", "b"), false},
	    {V("git", "merge", "--strategy-option=theirs", "b/c"), false},
	    {V("git", "merge", "--strategy", "evil/run", "b"), true},
	    {V("git", "commit", "-s", "-m", "b/c"), false},
	    {V("git", "rebase", "-s", "a/b", "main"), true},
	    {V("git", "rebase", "-isa/b", "main"), true},
	    {V("git", "pull", "--no-rebase", "-s", "ort", "origin"), false},
	    {V("git", "receive-pack", "/tmp/x"), true},
	    {V("git", "upload-pack", "/tmp/x"), true},
	    {V("git", "rev-parse", "--git-dir"), false},
	    {V("git", "--work-tree=/tmp", "status"), true},
	    {V("git", "--namespace", "x", "push"), true},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		size_t n = 0;
		while (rows[i].argv[n])
			n++;
		bool got = rd_grant_argv_refused(git, rows[i].argv, n) != NULL;
		if (got != rows[i].refused)
			fail_msg("row %zu: %s", i, got ? "refused" : "let through");
	}
	assert_null(rd_grant_argv_refused("/usr/bin/gh", V("gh", "-c", "x"), 3));
}

/* The subcommand as git finds it: after the options that take no value; none where one that
 * may take one comes first. */
static void test_git_subcommand(void **state)
{
	(void)state;
	assert_string_equal(rd_git_subcommand(V("git", "push", "origin"), 3), "push");
	assert_string_equal(rd_git_subcommand(V("git", "--no-pager", "-p", "clone", "x"), 5),
	                    "clone");
	assert_null(rd_git_subcommand(V("git", "--super-prefix", "x", "clone"), 4));
	assert_null(rd_git_subcommand(V("git", "--version"), 2));
	assert_null(rd_git_subcommand(V("git"), 1));
}

/* The writable roots and protected paths as the view gets them: "~/" and "{uid}" expanded,
 * "/" left out with a note, a root inside another left out, a protected path outside every
 * root left out (read-only already), one that is a root itself kept; one written with a "/" at
 * its end is a directory to make, inside a root only. */
static void test_view_lists(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	cfg.box.list[RD_BOX_WRITE] =
	    (struct rd_strv){V("/", "/tmp", "/tmp/ws", "~/.cache", "/run/{uid}"), 5};
	cfg.box.list[RD_BOX_PROTECT] =
	    (struct rd_strv){V("/tmp/ws/.git/hooks/", "~/.bashrc", "~/.cache", "/etc", "/etc/x/",
	                       "/tmp/ws/.claude/"),
	                     6};
	p.commands_box.list[RD_BOX_WRITE] = (struct rd_strv){V("~/.cache/x", "/srv"), 2};
	cfg.box.list[RD_BOX_CACHE] = (struct rd_strv){
	    V("~/.cache/pip", "~/.cargo/registry", "~/.cargo/registry/src", "/proc/x"), 4};
	p.commands_box.list[RD_BOX_CACHE] =
	    (struct rd_strv){V("~/go/pkg/mod", "~/.cargo/registry"), 2};
	p.commands_box.list[RD_BOX_PLACEHOLDER] =
	    (struct rd_strv){V("/tmp/ws/.claude/settings.json", "/etc/x.json"), 2};
	struct rd_strv write, protect, dirs, files, caches, notes;
	assert_int_equal(rd_view_lists(&cfg, &p, "/home/dev", 1000, &write, &protect, &dirs, &files,
	                               &caches, &notes),
	                 0);
	/* A placeholder inside a root: a file to make, protected; outside: nothing. */
	assert_int_equal(files.n, 1);
	assert_string_equal(files.v[0], "/tmp/ws/.claude/settings.json");
	rd_strv_free(&files);
	/* In a writable root already, inside another cache, the kernel's: none; each once. */
	const char *want_c[] = {"/home/dev/.cargo/registry", "/home/dev/go/pkg/mod"};
	assert_int_equal(caches.n, ARRAY_SIZE(want_c));
	for (size_t i = 0; i < ARRAY_SIZE(want_c); i++)
		assert_string_equal(caches.v[i], want_c[i]);
	rd_strv_free(&caches);
	const char *want_w[] = {"/tmp", "/home/dev/.cache", "/run/1000", "/srv"};
	assert_int_equal(write.n, ARRAY_SIZE(want_w));
	for (size_t i = 0; i < ARRAY_SIZE(want_w); i++)
		assert_string_equal(write.v[i], want_w[i]);
	const char *want_p[] = {"/tmp/ws/.git/hooks", "/home/dev/.cache", "/tmp/ws/.claude",
	                        "/tmp/ws/.claude/settings.json"};
	assert_int_equal(protect.n, ARRAY_SIZE(want_p));
	for (size_t i = 0; i < ARRAY_SIZE(want_p); i++)
		assert_string_equal(protect.v[i], want_p[i]);
	const char *want_d[] = {"/tmp/ws/.git/hooks", "/tmp/ws/.claude"};
	assert_int_equal(dirs.n, ARRAY_SIZE(want_d));
	for (size_t i = 0; i < ARRAY_SIZE(want_d); i++)
		assert_string_equal(dirs.v[i], want_d[i]);
	assert_int_equal(notes.n, 1);
	assert_non_null(strstr(notes.v[0], "\"/\""));
	rd_strv_free(&write);
	rd_strv_free(&protect);
	rd_strv_free(&dirs);
	rd_strv_free(&notes);
}

/* A rule's own lists: "~/" expanded; with writable roots, the protected paths of the other
 * levels and of the session's view that lie in one of them, or hold one, join its own. */
static void test_rule_view_lists(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	struct rd_rule r = {0};
	cfg.box.list[RD_BOX_PROTECT] = (struct rd_strv){V("~/.config/gh/hosts.yml", "/etc"), 2};
	p.commands_box.list[RD_BOX_PROTECT] = (struct rd_strv){V("~/.config"), 1};
	r.box.list[RD_BOX_WRITE] = (struct rd_strv){V("~/.config/gh", "/srv/x"), 2};
	r.box.list[RD_BOX_PROTECT] = (struct rd_strv){V("/tmp/ws/Makefile"), 1};
	char *also[] = {"/srv/x/runnerd", "/opt/y", NULL};
	struct rd_strv write, protect;
	assert_int_equal(
	    rd_rule_view_lists(&cfg, &p, &r, also, 2, "/home/dev", 1000, &write, &protect), 0);
	const char *want_w[] = {"/home/dev/.config/gh", "/srv/x"};
	assert_int_equal(write.n, ARRAY_SIZE(want_w));
	for (size_t i = 0; i < ARRAY_SIZE(want_w); i++)
		assert_string_equal(write.v[i], want_w[i]);
	const char *want_p[] = {"/tmp/ws/Makefile", "/home/dev/.config/gh/hosts.yml",
	                        "/home/dev/.config", "/srv/x/runnerd"};
	assert_int_equal(protect.n, ARRAY_SIZE(want_p));
	for (size_t i = 0; i < ARRAY_SIZE(want_p); i++)
		assert_string_equal(protect.v[i], want_p[i]);
	rd_strv_free(&write);
	rd_strv_free(&protect);
	/* No roots of its own: the others' protected paths are the session's business. */
	r.box.list[RD_BOX_WRITE] = (struct rd_strv){0};
	assert_int_equal(
	    rd_rule_view_lists(&cfg, &p, &r, also, 2, "/home/dev", 1000, &write, &protect), 0);
	assert_int_equal(write.n, 0);
	assert_int_equal(protect.n, 1);
	rd_strv_free(&write);
	rd_strv_free(&protect);
	assert_int_equal(
	    rd_rule_view_lists(&cfg, &p, NULL, also, 2, "/home/dev", 1000, &write, &protect), 0);
	assert_int_equal(write.n + protect.n, 0);
}

static void test_mask_path_check(void **state)
{
	(void)state;
	const char *good[] = {"/a", "~/.aws", "${CODEX_HOME}", "${CODEX_HOME}/auth.json",
	                      "${_x1}/a/b"};
	const char *bad[] = {"a",       "~",        "/",   "${}",      "${1X}/a", "${X}a", "${X}/",
	                     "${X}//a", "${X}/./a", "${X", "${X}/a/*", "/a/../b", "~/"};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_null(rd_glob_check(good[i], RD_MASK_PATH));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (!rd_glob_check(bad[i], RD_MASK_PATH))
			fail_msg("%s passed", bad[i]);
	/* A protected path may end in one "/": a directory. */
	const char *dir_good[] = {"/a/", "~/.claude/", "{workspace}/.codex/", "${CODEX_HOME}/",
	                          "/a"};
	const char *dir_bad[] = {"/a//", "/", "~/", "${X}//", "/a/../", "a/"};
	for (size_t i = 0; i < ARRAY_SIZE(dir_good); i++) {
		assert_null(rd_glob_check(dir_good[i], RD_PROTECT_PATH));
		if (strcmp(dir_good[i], "/a") && !rd_glob_check(dir_good[i], RD_MASK_PATH))
			fail_msg("%s passed as a mask", dir_good[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(dir_bad); i++)
		if (!rd_glob_check(dir_bad[i], RD_PROTECT_PATH))
			fail_msg("%s passed", dir_bad[i]);
}

/* Each sandbox key's value comes from the rule if it sets it, else commands, else runner.json's
 * sandbox, else the key's default; the levels do not mix within a key. */
static void test_box_merge(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	struct rd_rule r = {0};
	struct rd_box_opts o = rd_box_resolve(&cfg, &p, NULL);
	assert_int_equal(o.v[RD_BOX_SECCOMP], RD_SECCOMP_DEFAULT);
	assert_int_equal(o.v[RD_BOX_NETWORK], RD_NET_HOST);
	assert_int_equal(o.v[RD_BOX_TIMEOUT_S], 0);
	assert_int_equal(o.v[RD_BOX_KILL_GRACE_S], 5);
	assert_int_equal(o.v[RD_BOX_NOFILE], 0);
	assert_string_equal(rd_box_word(RD_BOX_NETWORK, o.v[RD_BOX_NETWORK]), "host");

	cfg.box.v[RD_BOX_NETWORK] = RD_NET_NONE;
	cfg.box.v[RD_BOX_TIMEOUT_S] = 30;
	cfg.box.v[RD_BOX_NOFILE] = 64;
	p.commands_box.v[RD_BOX_TIMEOUT_S] = 20;
	p.commands_box.v[RD_BOX_SECCOMP] = RD_SECCOMP_NONE;
	r.box.v[RD_BOX_TIMEOUT_S] = 10;
	r.box.v[RD_BOX_CPU] = 3;
	o = rd_box_resolve(&cfg, &p, &r);
	assert_int_equal(o.v[RD_BOX_TIMEOUT_S], 10);
	assert_int_equal(o.v[RD_BOX_SECCOMP], RD_SECCOMP_NONE);
	assert_int_equal(o.v[RD_BOX_NETWORK], RD_NET_NONE);
	assert_int_equal(o.v[RD_BOX_NOFILE], 64);
	assert_int_equal(o.v[RD_BOX_CPU], 3);
	assert_int_equal(o.v[RD_BOX_KILL_GRACE_S], 5);
	o = rd_box_resolve(&cfg, &p, NULL);
	assert_int_equal(o.v[RD_BOX_TIMEOUT_S], 20);
	assert_int_equal(o.v[RD_BOX_CPU], 0);
	assert_null(rd_box_word(RD_BOX_NETWORK, 0));
	assert_null(rd_box_word(RD_BOX_TIMEOUT_S, 10));
	/* The words' values (policy/box.h) name the table's words, in its order. */
	assert_string_equal(rd_box_word(RD_BOX_SECCOMP, RD_SECCOMP_DEFAULT), "default");
	assert_string_equal(rd_box_word(RD_BOX_SECCOMP, RD_SECCOMP_NONE), "none");
	assert_string_equal(rd_box_word(RD_BOX_NETWORK, RD_NET_HOST), "host");
	assert_string_equal(rd_box_word(RD_BOX_NETWORK, RD_NET_NONE), "none");
	assert_string_equal(rd_box_word(RD_BOX_LIFETIME, RD_LIFETIME_SESSION), "session");
	assert_string_equal(rd_box_word(RD_BOX_LIFETIME, RD_LIFETIME_COMMAND), "command");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),           cmocka_unit_test(test_args),
	    cmocka_unit_test(test_masks),           cmocka_unit_test(test_mask_env),
	    cmocka_unit_test(test_mask_home),       cmocka_unit_test(test_protect_dirs_expand),
	    cmocka_unit_test(test_mask_path_check), cmocka_unit_test(test_view_lists),
	    cmocka_unit_test(test_rule_view_lists), cmocka_unit_test(test_grants),
	    cmocka_unit_test(test_box_merge),       cmocka_unit_test(test_git_subcommand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
