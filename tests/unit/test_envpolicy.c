/* Unit tests of the environment policy engine (policy/envpolicy.c), written against its
 * contract: one verdict per input entry, decided by the first applicable step of
 * malformed, duplicate, hard deny, internal, command denies, exact allows, secret patterns,
 * glob allows, not-allowed; then the max_keys / max_bytes limits. */
/* cmocka needs these first, in this order */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include "policy/envpolicy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A struct rd_strv over a compound literal: static storage at file scope. */
#define STRV(...)                                                                                  \
	{                                                                                          \
		.v = (char *[]){__VA_ARGS__},                                                      \
		.n = sizeof((char *[]){__VA_ARGS__}) / sizeof(char *),                             \
	}

/* ---- fixtures ------------------------------------------------------------------------- */

#define BASE_ALLOW                                                                                 \
	STRV("PATH", "HOME", "USER", "LANG", "LC_*", "TERM", "TMPDIR", "TZ", "SSH_AUTH_SOCK",      \
	     "GIT_AUTHOR_NAME")
#define SECRET_DENY                                                                                \
	STRV("*_API_KEY", "*_TOKEN", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*_KEY", "AWS_*",        \
	     "DATABASE_URL")
#define HARD_DENY                                                                                  \
	STRV("LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "BASH_ENV", "ENV", "PROMPT_COMMAND",     \
	     "NODE_OPTIONS", "PYTHONSTARTUP", "PERL5OPT", "GCONV_PATH")

static const struct rd_env_config cfg_default = {
    .base_allow = BASE_ALLOW,
    .deny = SECRET_DENY,
    .hard_deny = HARD_DENY,
    .extra_env = STRV("CORP_PROXY", "CORP_*_DIR"),
};

/* A secret-shaped name named exactly in base_allow passes at both levels. */
static const struct rd_env_config cfg_secret_base = {
    .base_allow = STRV("PATH", "GITHUB_TOKEN", "*_PASSWORD_FILE"),
    .deny = SECRET_DENY,
    .hard_deny = HARD_DENY,
};

/* Hard deny overrides even runnerd's internal names. */
static const struct rd_env_config cfg_hard_internal = {
    .base_allow = BASE_ALLOW,
    .deny = SECRET_DENY,
    .hard_deny = STRV("LD_PRELOAD", "JRUN_*", "RUNNERD_PROFILE"),
};

static const struct rd_profile prof_empty = {
    .name = "empty",
};

static const struct rd_profile prof_claude = {
    .name = "claude",
    .agent_env_allow = STRV("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_*"),
};

static const struct rd_profile prof_extra = {
    .name = "extra",
    .agent_env_allow = STRV("CORP_PROXY", "HOME"),
    .agent_extra_env = STRV("MY_TOOL_HOME", "NPM_TOKEN", "TZ"),
};

static const struct rd_profile prof_cmd = {
    .name = "cmd",
    .commands_env_allow =
        STRV("CI", "GO?ATH", "PY[0-9]_HOME", "NPM_CONFIG_*", "FOO", "PATH", "TE*"),
    .commands_env_deny = STRV("SSH_AUTH_SOCK", "GIT_*", "FOO"),
};

static const struct rd_profile prof_hard = {
    .name = "hard",
    .agent_env_allow = STRV("LD_PRELOAD", "NODE_OPTIONS", "LD_*", "ENV"),
    .agent_extra_env = STRV("BASH_ENV"),
    .commands_env_allow = STRV("LD_LIBRARY_PATH", "PROMPT_COMMAND"),
};

static const struct rd_profile prof_internal_deny = {
    .name = "internal-deny",
    .commands_env_deny = STRV("JRUN_*", "RUNNERD_*"),
};

static const struct rd_rule rule_anthropic = {
    .index = 1,
    .env_allow = STRV("ANTHROPIC_API_KEY"),
};

/* Globs never override a secret pattern, and an escape makes an entry a glob. */
static const struct rd_rule rule_glob_key = {
    .index = 2,
    .env_allow = STRV("*_API_KEY", "GEMINI\\_API_KEY", "ODD*_API_KEY"),
};

/* A rule must be ignored entirely at agent level. */
static const struct rd_rule rule_agent_ignored = {
    .index = 3,
    .env_allow = STRV("ANTHROPIC_API_KEY", "RULE_ONLY"),
    .env_deny = STRV("HOME"),
};

static const struct rd_rule rule_deny = {
    .index = 4,
    .env_allow = STRV("BAR", "PATH", "LC_*"),
    .env_deny = STRV("BAR", "FOO", "HOME"),
};

static const struct rd_rule rule_allow_foo = {
    .index = 5,
    .env_allow = STRV("FOO", "SSH_AUTH_SOCK"),
};

static const struct rd_rule rule_deny_all = {
    .index = 6,
    .env_allow = STRV("PATH"),
    .env_deny = STRV("*"),
};

static const struct rd_rule rule_hard = {
    .index = 7,
    .env_allow = STRV("LD_PRELOAD", "PERL5OPT", "LD_*", "GCONV_PATH"),
    .grants_secret = true,
};

/* The same lists in a rule that grants no secret: env.hard_deny is not applied. */
static const struct rd_rule rule_hard_nogrant = {
    .index = 8,
    .env_allow = STRV("LD_PRELOAD", "PERL5OPT", "LD_*", "GCONV_PATH"),
};

/* ---- helpers ---------------------------------------------------------------------------- */

/* An input env block on the heap (so ASan sees reads past an entry), NULL-terminated. */
static char **envp_new(const char *const *entries, size_t n)
{
	char **e = calloc(n + 1, sizeof(*e));
	assert_non_null(e);
	for (size_t i = 0; i < n; i++) {
		e[i] = strdup(entries[i]);
		assert_non_null(e[i]);
	}
	return e;
}

static void envp_free(char **e)
{
	for (size_t i = 0; e[i]; i++)
		free(e[i]);
	free(e);
}

static size_t name_len_of(const char *entry)
{
	const char *eq = strchr(entry, '=');
	return (eq && eq != entry) ? (size_t)(eq - entry) : 0;
}

static const char *reason_name(enum rd_env_reason r)
{
	const char *s = rd_env_reason_str(r);
	return s ? s : "(null)";
}

/* The structural checks every successful result must pass: one verdict per input entry,
 * pointing at it; the output holds exactly the passed entries, in input order, as the input's
 * own pointers; n_env and bytes agree. Returns the number of problems found (printed). */
static int check_result_shape(const char *what, char **envp, size_t n,
                              const struct rd_env_result *r)
{
	int bad = 0;
	if (r->n_verdicts != n) {
		print_error("%s: n_verdicts %zu, want %zu\n", what, r->n_verdicts, n);
		return 1;
	}
	if (!r->envp) {
		print_error("%s: envp is NULL\n", what);
		return 1;
	}
	if (n > 0 && !r->verdicts) {
		print_error("%s: verdicts is NULL\n", what);
		return 1;
	}
	size_t k = 0, bytes = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rd_env_verdict *v = &r->verdicts[i];
		if (v->entry != envp[i]) {
			print_error("%s: verdict %zu entry %p, want the input pointer %p\n", what,
			            i, (const void *)v->entry, (void *)envp[i]);
			bad++;
		}
		if (v->name_len != name_len_of(envp[i])) {
			print_error("%s: \"%s\": name_len %zu, want %zu\n", what, envp[i],
			            v->name_len, name_len_of(envp[i]));
			bad++;
		}
		if (!v->passed)
			continue;
		if (k >= r->n_env) {
			print_error("%s: more passed verdicts than n_env %zu\n", what, r->n_env);
			return bad + 1;
		}
		if (r->envp[k] != envp[i]) {
			print_error("%s: output[%zu] is \"%s\" (%p), want input[%zu] \"%s\" (%p)\n",
			            what, k, r->envp[k] ? r->envp[k] : "(null)", (void *)r->envp[k],
			            i, envp[i], (void *)envp[i]);
			bad++;
		}
		bytes += strlen(envp[i]) + 1;
		k++;
	}
	if (k != r->n_env) {
		print_error("%s: %zu passed verdicts, n_env %zu\n", what, k, r->n_env);
		bad++;
	} else if (r->envp[k] != NULL) {
		print_error("%s: output not NULL-terminated at %zu\n", what, k);
		bad++;
	}
	if (bytes != r->bytes) {
		print_error("%s: bytes %zu, want %zu\n", what, r->bytes, bytes);
		bad++;
	}
	return bad;
}

static void fill_garbage(struct rd_env_result *r)
{
	memset(r, 0xa5, sizeof(*r));
}

/* ---- the table ---------------------------------------------------------------------------- */

struct item {
	const char *entry;
	bool passed;
	enum rd_env_reason reason;
	const char *pattern; /* checked when non-NULL */
};

#define MAX_ITEMS 40

struct env_case {
	const char *name;
	const struct rd_env_config *cfg;
	const struct rd_profile *prof;
	enum rd_env_level level;
	const struct rd_rule *rule;
	struct item items[MAX_ITEMS]; /* up to the first with entry == NULL */
};

#define PASS(e, r)                                                                                 \
	{                                                                                          \
		e, true, RD_ENV_##r, NULL                                                          \
	}
#define PASSP(e, r, p)                                                                             \
	{                                                                                          \
		e, true, RD_ENV_##r, p                                                             \
	}
#define STRIP(e, r)                                                                                \
	{                                                                                          \
		e, false, RD_ENV_##r, NULL                                                         \
	}
#define STRIPP(e, r, p)                                                                            \
	{                                                                                          \
		e, false, RD_ENV_##r, p                                                            \
	}

/* Every vendor secret the agent's environment might hold. */
#define VENDOR_SECRETS_STRIPPED                                                                    \
	STRIPP("OPENAI_API_KEY=sk-openai", DENIED_SECRET, NULL),                                   \
	    STRIP("GEMINI_API_KEY=gm", DENIED_SECRET),                                             \
	    STRIP("PERPLEXITY_API_KEY=pplx", DENIED_SECRET),                                       \
	    STRIP("XAI_API_KEY=xai", DENIED_SECRET),                                               \
	    STRIPP("DATABASE_URL=postgres://u:p@db/x", DENIED_SECRET, "DATABASE_URL"),             \
	    STRIP("AWS_SECRET_ACCESS_KEY=aws", DENIED_SECRET),                                     \
	    STRIP("GITHUB_TOKEN=ghp_x", DENIED_SECRET)

static const struct env_case
    cases[] =
        {
            {
                .name = "claude agent: only ANTHROPIC_API_KEY of the vendor keys",
                .cfg = &cfg_default,
                .prof = &prof_claude,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        PASSP("PATH=/usr/bin:/bin", BASE, "PATH"),
                        PASS("HOME=/home/u", BASE),
                        PASSP("ANTHROPIC_API_KEY=sk-ant", PROFILE, "ANTHROPIC_API_KEY"),
                        VENDOR_SECRETS_STRIPPED,
                        PASSP("ANTHROPIC_BASE_URL=https://x", PROFILE, "ANTHROPIC_BASE_URL"),
                        PASSP("CLAUDE_CODE_USE_BEDROCK=1", PROFILE, "CLAUDE_CODE_*"),
                        STRIP("CLAUDE_CODE_OAUTH_TOKEN=tok", DENIED_SECRET),
                        PASSP("LC_ALL=C", BASE, "LC_*"),
                        STRIPP("LD_PRELOAD=/evil.so", DENIED_HARD, "LD_PRELOAD"),
                        PASS("JRUN_TASK_ID=42", INTERNAL),
                        STRIP("RANDOM_THING=1", NOT_ALLOWED),
                    },
            },
            {
                .name = "claude command, no rule: no API key at all",
                .cfg = &cfg_default,
                .prof = &prof_claude,
                .level = RD_ENV_COMMAND,
                .items =
                    {
                        PASSP("PATH=/usr/bin:/bin", BASE, "PATH"),
                        PASS("HOME=/home/u", BASE),
                        STRIP("ANTHROPIC_API_KEY=sk-ant", DENIED_SECRET),
                        VENDOR_SECRETS_STRIPPED,
                        STRIP("ANTHROPIC_BASE_URL=https://x", NOT_ALLOWED),
                        STRIP("CLAUDE_CODE_USE_BEDROCK=1", NOT_ALLOWED),
                        STRIP("CLAUDE_CODE_OAUTH_TOKEN=tok", DENIED_SECRET),
                        PASSP("LC_ALL=C", BASE, "LC_*"),
                        STRIP("LD_PRELOAD=/evil.so", NOT_ALLOWED),
                        PASS("JRUN_TASK_ID=42", INTERNAL),
                        STRIP("RANDOM_THING=1", NOT_ALLOWED),
                    },
            },
            {
                .name = "claude command, rule with exact ANTHROPIC_API_KEY",
                .cfg = &cfg_default,
                .prof = &prof_claude,
                .level = RD_ENV_COMMAND,
                .rule = &rule_anthropic,
                .items =
                    {
                        PASS("PATH=/usr/bin", BASE),
                        PASSP("ANTHROPIC_API_KEY=sk-ant", RULE, "ANTHROPIC_API_KEY"),
                        VENDOR_SECRETS_STRIPPED,
                        STRIP("ANTHROPIC_BASE_URL=https://x", NOT_ALLOWED),
                        STRIP("CLAUDE_CODE_OAUTH_TOKEN=tok", DENIED_SECRET),
                    },
            },
            {
                .name = "claude command, rule glob *_API_KEY does not beat the secret pattern",
                .cfg = &cfg_default,
                .prof = &prof_claude,
                .level = RD_ENV_COMMAND,
                .rule = &rule_glob_key,
                .items =
                    {
                        STRIP("ANTHROPIC_API_KEY=sk-ant", DENIED_SECRET),
                        STRIP("OPENAI_API_KEY=sk", DENIED_SECRET),
                        /* "GEMINI\_API_KEY" has a backslash: a glob, not an exact name */
                        STRIP("GEMINI_API_KEY=gm", DENIED_SECRET),
                        /* an entry with a '*' is a glob even where its text equals the name */
                        STRIP("ODD*_API_KEY=x", DENIED_SECRET),
                        STRIP("X_API_KEY_FILE=/f", NOT_ALLOWED),
                        PASS("TERM=xterm", BASE),
                    },
            },
            {
                .name = "agent level ignores the rule",
                .cfg = &cfg_default,
                .prof = &prof_empty,
                .level = RD_ENV_AGENT,
                .rule = &rule_agent_ignored,
                .items =
                    {
                        STRIP("ANTHROPIC_API_KEY=sk-ant", DENIED_SECRET),
                        STRIP("RULE_ONLY=1", NOT_ALLOWED),
                        PASS("HOME=/home/u", BASE),
                    },
            },
            {
                .name = "extra_env at agent level; precedence profile > extra_env > base",
                .cfg = &cfg_default,
                .prof = &prof_extra,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        PASSP("CORP_PROXY=http://p", PROFILE, "CORP_PROXY"),
                        PASSP("CORP_CACHE_DIR=/c", EXTRA, "CORP_*_DIR"),
                        PASSP("MY_TOOL_HOME=/t", EXTRA, "MY_TOOL_HOME"),
                        PASSP("NPM_TOKEN=npm", EXTRA, "NPM_TOKEN"),
                        PASSP("TZ=UTC", EXTRA, "TZ"),
                        PASSP("HOME=/home/u", PROFILE, "HOME"),
                        PASSP("PATH=/bin", BASE, "PATH"),
                        STRIP("CORP__DIRX=1", NOT_ALLOWED),
                    },
            },
            {
                .name = "extra_env never applies at command level",
                .cfg = &cfg_default,
                .prof = &prof_extra,
                .level = RD_ENV_COMMAND,
                .items =
                    {
                        STRIP("CORP_PROXY=http://p", NOT_ALLOWED),
                        STRIP("CORP_CACHE_DIR=/c", NOT_ALLOWED),
                        STRIP("MY_TOOL_HOME=/t", NOT_ALLOWED),
                        STRIP("NPM_TOKEN=npm", DENIED_SECRET),
                        PASSP("TZ=UTC", BASE, "TZ"),
                        PASSP("HOME=/home/u", BASE, "HOME"),
                        PASSP("PATH=/bin", BASE, "PATH"),
                    },
            },
            {
                .name = "command globs (? and [..]), exact beats glob, profile deny beats base",
                .cfg = &cfg_default,
                .prof = &prof_cmd,
                .level = RD_ENV_COMMAND,
                .items =
                    {
                        PASSP("CI=1", PROFILE, "CI"),
                        PASSP("GOPATH=/go", PROFILE, "GO?ATH"),
                        STRIP("GOATH=1", NOT_ALLOWED),
                        STRIP("GOOPATH=1", NOT_ALLOWED),
                        PASSP("PY3_HOME=/py", PROFILE, "PY[0-9]_HOME"),
                        STRIP("PYX_HOME=/py", NOT_ALLOWED),
                        STRIP("PY33_HOME=/py", NOT_ALLOWED),
                        PASSP("NPM_CONFIG_REGISTRY=https://r", PROFILE, "NPM_CONFIG_*"),
                        STRIP("NPM_CONFIG__AUTH_TOKEN=t", DENIED_SECRET),
                        PASSP("PATH=/bin", PROFILE, "PATH"),
                        PASSP("TERM=xterm", BASE, "TERM"),
                        PASSP("TEMP_X=1", PROFILE, "TE*"),
                        PASSP("LC_=empty-star", BASE, "LC_*"),
                        STRIPP("SSH_AUTH_SOCK=/s", DENIED_PROFILE, "SSH_AUTH_SOCK"),
                        STRIPP("GIT_AUTHOR_NAME=me", DENIED_PROFILE, "GIT_*"),
                        STRIPP("FOO=1", DENIED_PROFILE, "FOO"),
                        STRIP("path=/lower", NOT_ALLOWED),
                        STRIP("PATHX=1", NOT_ALLOWED),
                        STRIP("PAT=1", NOT_ALLOWED),
                    },
            },
            {
                .name = "agent level ignores commands.env_allow and commands.env_deny",
                .cfg = &cfg_default,
                .prof = &prof_cmd,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        STRIP("CI=1", NOT_ALLOWED),
                        STRIP("GOPATH=/go", NOT_ALLOWED),
                        PASSP("SSH_AUTH_SOCK=/s", BASE, "SSH_AUTH_SOCK"),
                        PASSP("GIT_AUTHOR_NAME=me", BASE, "GIT_AUTHOR_NAME"),
                        STRIP("FOO=1", NOT_ALLOWED),
                        PASSP("PATH=/bin", BASE, "PATH"),
                    },
            },
            {
                .name = "rule deny beats rule allow; precedence rule > profile > base",
                .cfg = &cfg_default,
                .prof = &prof_cmd,
                .level = RD_ENV_COMMAND,
                .rule = &rule_deny,
                .items =
                    {
                        STRIPP("BAR=1", DENIED_RULE, "BAR"),
                        STRIPP("FOO=1", DENIED_RULE, "FOO"),
                        STRIPP("HOME=/home/u", DENIED_RULE, "HOME"),
                        PASSP("PATH=/bin", RULE, "PATH"),
                        PASSP("LC_ALL=C", RULE, "LC_*"),
                        PASSP("TERM=xterm", BASE, "TERM"),
                        STRIPP("SSH_AUTH_SOCK=/s", DENIED_PROFILE, "SSH_AUTH_SOCK"),
                        PASSP("CI=1", PROFILE, "CI"),
                    },
            },
            {
                .name = "profile deny beats an exact rule allow",
                .cfg = &cfg_default,
                .prof = &prof_cmd,
                .level = RD_ENV_COMMAND,
                .rule = &rule_allow_foo,
                .items =
                    {
                        STRIPP("FOO=1", DENIED_PROFILE, "FOO"),
                        STRIPP("SSH_AUTH_SOCK=/s", DENIED_PROFILE, "SSH_AUTH_SOCK"),
                        PASS("USER=u", BASE),
                    },
            },
            {
                .name = "rule env_deny \"*\": only internal survives",
                .cfg = &cfg_default,
                .prof = &prof_empty,
                .level = RD_ENV_COMMAND,
                .rule = &rule_deny_all,
                .items =
                    {
                        STRIPP("PATH=/bin", DENIED_RULE, "*"),
                        STRIPP("LANG=C.UTF-8", DENIED_RULE, "*"),
                        PASS("JRUN_ID=1", INTERNAL),
                        PASS("RUNNERD_SESSION=s", INTERNAL),
                        STRIPP("LD_PRELOAD=/x.so", DENIED_RULE, "*"),
                        STRIP("NOEQ", MALFORMED),
                        STRIP("PATH=/again", DUPLICATE),
                    },
            },
            {
                .name = "hard deny beats every agent allow",
                .cfg = &cfg_default,
                .prof = &prof_hard,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        STRIPP("LD_PRELOAD=/x.so", DENIED_HARD, "LD_PRELOAD"),
                        STRIPP("NODE_OPTIONS=--require x", DENIED_HARD, "NODE_OPTIONS"),
                        STRIPP("BASH_ENV=/x", DENIED_HARD, "BASH_ENV"),
                        STRIPP("LD_AUDIT=/x", DENIED_HARD, "LD_AUDIT"),
                        STRIPP("ENV=/x", DENIED_HARD, "ENV"),
                        PASSP("LD_BIND_NOW=1", PROFILE, "LD_*"),
                        PASS("PATH=/bin", BASE),
                    },
            },
            {
                .name = "hard deny beats every command allow, in a rule that grants a secret",
                .cfg = &cfg_default,
                .prof = &prof_hard,
                .level = RD_ENV_COMMAND,
                .rule = &rule_hard,
                .items =
                    {
                        STRIPP("LD_PRELOAD=/x.so", DENIED_HARD, "LD_PRELOAD"),
                        STRIPP("PERL5OPT=-Mx", DENIED_HARD, "PERL5OPT"),
                        STRIPP("LD_LIBRARY_PATH=/x", DENIED_HARD, "LD_LIBRARY_PATH"),
                        STRIPP("PROMPT_COMMAND=x", DENIED_HARD, "PROMPT_COMMAND"),
                        STRIPP("GCONV_PATH=/x", DENIED_HARD, "GCONV_PATH"),
                        STRIPP("PYTHONSTARTUP=/x", DENIED_HARD, "PYTHONSTARTUP"),
                        PASSP("LD_BIND_NOW=1", RULE, "LD_*"),
                    },
            },
            {
                .name = "a command granted no secret: hard deny does not apply, allows decide",
                .cfg = &cfg_default,
                .prof = &prof_hard,
                .level = RD_ENV_COMMAND,
                .rule = &rule_hard_nogrant,
                .items =
                    {
                        PASSP("LD_PRELOAD=/x.so", RULE, "LD_PRELOAD"),
                        PASSP("PERL5OPT=-Mx", RULE, "PERL5OPT"),
                        PASSP("GCONV_PATH=/x", RULE, "GCONV_PATH"),
                        STRIP("PYTHONSTARTUP=/x", NOT_ALLOWED),
                    },
            },
            {
                .name = "internal names, agent level, empty profile",
                .cfg = &cfg_default,
                .prof = &prof_empty,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        PASS("RUNNERD_SESSION=s1", INTERNAL),
                        PASS("RUNNERD_PROFILE=claude", INTERNAL),
                        PASS("JRUN_PROJECT_ID=p", INTERNAL),
                        PASS("JRUN_TASK_ID=t", INTERNAL),
                        PASS("JRUN_ID=r", INTERNAL),
                        PASS("JRUN_PARENT_ID=pp", INTERNAL),
                        PASS("JRUN_MESSAGE_BUS=/bus", INTERNAL),
                        PASS("JRUN_RUN_FOLDER=/run", INTERNAL),
                        PASS("JRUN_TASK_FOLDER=/task", INTERNAL),
                        STRIP("JRUN_OTHER=x", NOT_ALLOWED),
                        STRIP("JRUN_ID_X=x", NOT_ALLOWED),
                        STRIP("JRUN_I=x", NOT_ALLOWED),
                        STRIP("JRUN=x", NOT_ALLOWED),
                        STRIP("RUNNERD_SESSIONS=x", NOT_ALLOWED),
                        STRIP("RUNNERD_=x", NOT_ALLOWED),
                        STRIP("jrun_id=x", NOT_ALLOWED),
                    },
            },
            {
                .name = "internal names, command level, empty profile, no rule",
                .cfg = &cfg_default,
                .prof = &prof_empty,
                .level = RD_ENV_COMMAND,
                .items =
                    {
                        PASS("RUNNERD_SESSION=s1", INTERNAL),
                        PASS("RUNNERD_PROFILE=claude", INTERNAL),
                        PASS("JRUN_PROJECT_ID=p", INTERNAL),
                        PASS("JRUN_TASK_ID=t", INTERNAL),
                        PASS("JRUN_ID=r", INTERNAL),
                        PASS("JRUN_PARENT_ID=pp", INTERNAL),
                        PASS("JRUN_MESSAGE_BUS=/bus", INTERNAL),
                        PASS("JRUN_RUN_FOLDER=/run", INTERNAL),
                        PASS("JRUN_TASK_FOLDER=/task", INTERNAL),
                        STRIP("JRUN_OTHER=x", NOT_ALLOWED),
                        STRIP("RUNNERD_SESSIONS=x", NOT_ALLOWED),
                    },
            },
            {
                .name = "internal names beat commands.env_deny",
                .cfg = &cfg_default,
                .prof = &prof_internal_deny,
                .level = RD_ENV_COMMAND,
                .items =
                    {
                        PASS("JRUN_ID=r", INTERNAL),
                        PASS("RUNNERD_PROFILE=p", INTERNAL),
                        STRIPP("JRUN_OTHER=x", DENIED_PROFILE, "JRUN_*"),
                    },
            },
            {
                .name = "hard deny beats internal names",
                .cfg = &cfg_hard_internal,
                .prof = &prof_empty,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        STRIPP("JRUN_ID=r", DENIED_HARD, "JRUN_*"),
                        STRIPP("RUNNERD_PROFILE=p", DENIED_HARD, "RUNNERD_PROFILE"),
                        PASS("RUNNERD_SESSION=s", INTERNAL),
                    },
            },
            {
                .name = "secret-shaped name exactly in base_allow, agent",
                .cfg = &cfg_secret_base,
                .prof = &prof_empty,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        PASSP("GITHUB_TOKEN=ghp", BASE, "GITHUB_TOKEN"),
                        STRIP("DB_PASSWORD_FILE=/f", DENIED_SECRET),
                        STRIP("GITLAB_TOKEN=x", DENIED_SECRET),
                    },
            },
            {
                .name = "secret-shaped name exactly in base_allow, command",
                .cfg = &cfg_secret_base,
                .prof = &prof_empty,
                .level = RD_ENV_COMMAND,
                .items =
                    {
                        PASSP("GITHUB_TOKEN=ghp", BASE, "GITHUB_TOKEN"),
                        STRIP("DB_PASSWORD_FILE=/f", DENIED_SECRET),
                    },
            },
            {
                .name = "duplicates: the first wins, whatever its verdict",
                .cfg = &cfg_default,
                .prof = &prof_empty,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        PASS("PATH=/a", BASE),
                        PASS("HOME=/h", BASE),
                        STRIP("PATH=/b", DUPLICATE),
                        STRIP("OPENAI_API_KEY=1", DENIED_SECRET),
                        STRIP("OPENAI_API_KEY=2", DUPLICATE),
                        STRIP("LD_PRELOAD=/a.so", DENIED_HARD),
                        STRIP("LD_PRELOAD=/b.so", DUPLICATE),
                        PASS("JRUN_ID=1", INTERNAL),
                        STRIP("JRUN_ID=2", DUPLICATE),
                        STRIP("RANDOM=1", NOT_ALLOWED),
                        STRIP("RANDOM=2", DUPLICATE),
                        STRIP("PATHX=1", NOT_ALLOWED),
                        STRIP("PAT=1", NOT_ALLOWED),
                        STRIP("PATH=", DUPLICATE),
                        STRIP("path=lower-case-differs", NOT_ALLOWED),
                    },
            },
            {
                .name = "malformed entries, values never examined",
                .cfg = &cfg_default,
                .prof = &prof_empty,
                .level = RD_ENV_AGENT,
                .items =
                    {
                        STRIP("NOEQUALS", MALFORMED),
                        STRIP("NOEQUALS", MALFORMED),
                        STRIP("=value", MALFORMED),
                        STRIP("", MALFORMED),
                        STRIP("=", MALFORMED),
                        STRIP("==", MALFORMED),
                        STRIP("TERM", MALFORMED),
                        PASS("TERM=xterm", BASE),
                        PASS("TZ=b=c", BASE),
                        PASS("LANG==", BASE),
                        PASS("HOME=MY_API_KEY=SECRET_TOKEN", BASE),
                        PASS("USER=", BASE),
                        STRIP("A=b=c", NOT_ALLOWED),
                        STRIP("A_API_KEY=b=c", DENIED_SECRET),
                    },
            },
};

static int run_case(const struct env_case *c)
{
	const char *entries[MAX_ITEMS];
	size_t n = 0;
	while (n < MAX_ITEMS && c->items[n].entry) {
		entries[n] = c->items[n].entry;
		n++;
	}
	char **envp = envp_new(entries, n);

	struct rd_env_result r;
	fill_garbage(&r);
	struct rd_error err = {0};
	int rc = rd_env_build(c->cfg, c->prof, c->level, c->rule, envp, &r, &err);
	int bad = 0;
	if (rc != 0) {
		print_error("%s: rd_env_build returned %d (%s)\n", c->name, rc, err.msg);
		envp_free(envp);
		return 1;
	}
	if (err.err != 0) {
		print_error("%s: err.err %d on success\n", c->name, err.err);
		bad++;
	}
	bad += check_result_shape(c->name, envp, n, &r);
	for (size_t i = 0; i < n && i < r.n_verdicts; i++) {
		const struct item *it = &c->items[i];
		const struct rd_env_verdict *v = &r.verdicts[i];
		if (v->passed != it->passed || v->reason != it->reason) {
			print_error("%s: \"%s\": got %s %s, want %s %s\n", c->name, it->entry,
			            v->passed ? "passed" : "stripped", reason_name(v->reason),
			            it->passed ? "passed" : "stripped", reason_name(it->reason));
			bad++;
		}
		if (it->pattern && (!v->pattern || strcmp(v->pattern, it->pattern) != 0)) {
			print_error("%s: \"%s\": pattern \"%s\", want \"%s\"\n", c->name, it->entry,
			            v->pattern ? v->pattern : "(null)", it->pattern);
			bad++;
		}
	}
	rd_env_result_free(&r);
	envp_free(envp);
	return bad;
}

static void test_table(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		bad += run_case(&cases[i]);
	if (bad)
		fail_msg("%d mismatches in the table (see above)", bad);
}

/* ---- focused tests --------------------------------------------------------------------- */

static void test_reason_str(void **state)
{
	(void)state;
	static const struct {
		enum rd_env_reason r;
		const char *s;
	} want[] = {
	    {RD_ENV_BASE, "base"},
	    {RD_ENV_PROFILE, "profile"},
	    {RD_ENV_RULE, "rule"},
	    {RD_ENV_EXTRA, "extra_env"},
	    {RD_ENV_INTERNAL, "internal"},
	    {RD_ENV_DENIED_SECRET, "denied:secret-pattern"},
	    {RD_ENV_DENIED_HARD, "denied:hard"},
	    {RD_ENV_DENIED_PROFILE, "denied:profile"},
	    {RD_ENV_DENIED_RULE, "denied:rule"},
	    {RD_ENV_NOT_ALLOWED, "not-allowed"},
	    {RD_ENV_DUPLICATE, "duplicate"},
	    {RD_ENV_MALFORMED, "malformed"},
	    {RD_ENV_DENIED_SECRET_VALUE, "denied:secret-value"},
	    {RD_ENV_DENIED_GRANT, "denied:granted-command"},
	    {RD_ENV_DENIED_PROXY, "denied:proxy-url"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const char *s = rd_env_reason_str(want[i].r);
		assert_non_null(s);
		assert_string_equal(s, want[i].s);
	}
}

static void test_is_internal(void **state)
{
	(void)state;
	static const char *const yes[] = {
	    "RUNNERD_SESSION", "RUNNERD_PROFILE",  "JRUN_PROJECT_ID", "JRUN_TASK_ID",     "JRUN_ID",
	    "JRUN_PARENT_ID",  "JRUN_MESSAGE_BUS", "JRUN_RUN_FOLDER", "JRUN_TASK_FOLDER",
	};
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
		assert_true(rd_env_is_internal(yes[i], strlen(yes[i])));
	static const char *const no[] = {
	    "JRUN_OTHER", "JRUN_", "JRUN", "JRUN_IDX", "RUNNERD_SESSIONS", "RUNNERD", "jrun_id", "",
	};
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		assert_false(rd_env_is_internal(no[i], strlen(no[i])));
	/* the length bounds the name: an entry's "=value" is not part of it */
	assert_true(rd_env_is_internal("JRUN_ID=5", 7));
	assert_false(rd_env_is_internal("JRUN_ID=5", 6));
	assert_false(rd_env_is_internal("JRUN_IDX", 7 + 1));
}

static void test_empty_envp(void **state)
{
	(void)state;
	char *envp[] = {NULL};
	for (int level = RD_ENV_AGENT; level <= RD_ENV_COMMAND; level++) {
		struct rd_env_result r;
		fill_garbage(&r);
		struct rd_error err = {0};
		int rc = rd_env_build(&cfg_default, &prof_claude, (enum rd_env_level)level,
		                      &rule_anthropic, envp, &r, &err);
		assert_int_equal(rc, 0);
		assert_non_null(r.envp);
		assert_null(r.envp[0]);
		assert_int_equal(r.n_env, 0);
		assert_int_equal(r.bytes, 0);
		assert_int_equal(r.n_verdicts, 0);
		rd_env_result_free(&r);
	}
}

/* Output order is input order, with the input's own pointers, even when interleaved with
 * stripped entries and with several reasons. */
static void test_order_and_pointers(void **state)
{
	(void)state;
	static const char *const in[] = {
	    "ZZZ=1",   "TZ=UTC",          "OPENAI_API_KEY=x",    "JRUN_ID=9",
	    "LANG=C",  "LD_PRELOAD=/x",   "ANTHROPIC_API_KEY=a", "AAA=1",
	    "HOME=/h", "CLAUDE_CODE_X=1", "PATH=/bin",
	};
	static const char *const want[] = {
	    "TZ=UTC",  "JRUN_ID=9",       "LANG=C",    "ANTHROPIC_API_KEY=a",
	    "HOME=/h", "CLAUDE_CODE_X=1", "PATH=/bin",
	};
	char **envp = envp_new(in, ARRAY_SIZE(in));
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_claude, RD_ENV_AGENT, NULL, envp, &r, &err), 0);
	assert_int_equal(r.n_env, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(r.envp[i], want[i]);
	assert_null(r.envp[r.n_env]);
	/* the same pointers as the input */
	assert_ptr_equal(r.envp[0], envp[1]);
	assert_ptr_equal(r.envp[1], envp[3]);
	assert_ptr_equal(r.envp[3], envp[6]);
	assert_ptr_equal(r.envp[6], envp[10]);
	assert_int_equal(check_result_shape("order", envp, ARRAY_SIZE(in), &r), 0);
	size_t bytes = 0;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		bytes += strlen(want[i]) + 1;
	assert_int_equal(r.bytes, bytes);
	rd_env_result_free(&r);
	envp_free(envp);
}

/* The verdict's name_len bounds the name, and malformed entries have none. */
static void test_name_len(void **state)
{
	(void)state;
	static const char *const in[] = {"A=b=c", "NOEQUALS", "=value", "", "TZ=", "LC_ALL=C"};
	static const size_t want[] = {1, 0, 0, 0, 2, 6};
	char **envp = envp_new(in, ARRAY_SIZE(in));
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_empty, RD_ENV_AGENT, NULL, envp, &r, &err), 0);
	assert_int_equal(r.n_verdicts, ARRAY_SIZE(in));
	for (size_t i = 0; i < ARRAY_SIZE(in); i++)
		assert_int_equal(r.verdicts[i].name_len, want[i]);
	assert_int_equal(r.verdicts[0].reason, RD_ENV_NOT_ALLOWED);
	for (size_t i = 1; i <= 3; i++) {
		assert_false(r.verdicts[i].passed);
		assert_int_equal(r.verdicts[i].reason, RD_ENV_MALFORMED);
	}
	assert_int_equal(r.verdicts[4].reason, RD_ENV_BASE);
	assert_int_equal(r.verdicts[5].reason, RD_ENV_BASE);
	assert_int_equal(r.n_env, 2);
	rd_env_result_free(&r);
	envp_free(envp);
}

/* Names longer than any small buffer are decided, deduplicated and matched like others. */
static void test_long_names(void **state)
{
	(void)state;
	char name[600];
	memset(name, 'C', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memcpy(name, "CLAUDE_CODE_", strlen("CLAUDE_CODE_"));
	char *a, *b, *c, *d;
	assert_true(asprintf(&a, "%s=1", name) > 0);
	assert_true(asprintf(&b, "%s=2", name) > 0);
	assert_true(asprintf(&c, "%s_TOKEN=3", name) > 0);
	name[sizeof(name) - 2] = 'D'; /* same prefix, differs only in the last character */
	assert_true(asprintf(&d, "%s=4", name) > 0);
	char *envp[] = {a, b, c, d, NULL};
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_claude, RD_ENV_AGENT, NULL, envp, &r, &err), 0);
	assert_int_equal(r.n_verdicts, 4);
	assert_true(r.verdicts[0].passed);
	assert_int_equal(r.verdicts[0].reason, RD_ENV_PROFILE);
	assert_int_equal(r.verdicts[0].name_len, sizeof(name) - 1);
	assert_false(r.verdicts[1].passed);
	assert_int_equal(r.verdicts[1].reason, RD_ENV_DUPLICATE);
	assert_false(r.verdicts[2].passed);
	assert_int_equal(r.verdicts[2].reason, RD_ENV_DENIED_SECRET);
	assert_true(r.verdicts[3].passed);
	assert_int_equal(r.verdicts[3].reason, RD_ENV_PROFILE);
	assert_int_equal(r.n_env, 2);
	assert_ptr_equal(r.envp[0], a);
	assert_ptr_equal(r.envp[1], d);
	assert_int_equal(check_result_shape("long", envp, 4, &r), 0);
	rd_env_result_free(&r);
	free(a);
	free(b);
	free(c);
	free(d);
}

#define MANY 5000

static const struct rd_profile prof_many = {
    .name = "many",
    .agent_env_allow = STRV("KEEP_*"),
};

/* Many distinct names, then each again: every name decided once, every repeat a duplicate. */
static void test_many_names(void **state)
{
	(void)state;
	size_t n = 2 * MANY + 1;
	char **envp = calloc(n + 1, sizeof(*envp));
	assert_non_null(envp);
	for (size_t i = 0; i < MANY; i++) {
		/* even: allowed by glob; odd: not allowed */
		assert_true(asprintf(&envp[i], "%s_%05zu=v%zu", i % 2 ? "DROP" : "KEEP", i, i) > 0);
		assert_true(
		    asprintf(&envp[MANY + i], "%s_%05zu=again", i % 2 ? "DROP" : "KEEP", i) > 0);
	}
	envp[n - 1] = strdup("PATH=/bin");
	assert_non_null(envp[n - 1]);

	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(rd_env_build(&cfg_default, &prof_many, RD_ENV_AGENT, NULL, envp, &r, &err),
	                 0);
	assert_int_equal(r.n_verdicts, n);
	assert_int_equal(r.n_env, MANY / 2 + 1);
	for (size_t i = 0; i < MANY; i++) {
		const struct rd_env_verdict *v = &r.verdicts[i];
		if (i % 2 == 0) {
			assert_true(v->passed);
			assert_int_equal(v->reason, RD_ENV_PROFILE);
			assert_ptr_equal(r.envp[i / 2], envp[i]);
		} else {
			assert_false(v->passed);
			assert_int_equal(v->reason, RD_ENV_NOT_ALLOWED);
		}
		const struct rd_env_verdict *d = &r.verdicts[MANY + i];
		assert_false(d->passed);
		assert_int_equal(d->reason, RD_ENV_DUPLICATE);
	}
	assert_true(r.verdicts[n - 1].passed);
	assert_int_equal(r.verdicts[n - 1].reason, RD_ENV_BASE);
	assert_ptr_equal(r.envp[MANY / 2], envp[n - 1]);
	assert_null(r.envp[MANY / 2 + 1]);
	assert_int_equal(check_result_shape("many", envp, n, &r), 0);
	rd_env_result_free(&r);
	envp_free(envp);
}

/* ---- limits -------------------------------------------------------------------------------- */

#define N_KEEP 13

static const struct rd_profile prof_keep = {
    .name = "keep",
    .agent_env_allow = STRV("KEEP_*"),
    .commands_env_allow = STRV("KEEP_*"),
};

/* N_KEEP passing entries, interleaved with large stripped ones that must not count. */
static char **limit_envp(size_t *bytes)
{
	size_t n = 2 * N_KEEP;
	char **envp = calloc(n + 1, sizeof(*envp));
	assert_non_null(envp);
	*bytes = 0;
	for (size_t i = 0; i < N_KEEP; i++) {
		assert_true(asprintf(&envp[2 * i], "KEEP_%02zu=value-%zu", i, i * 7) > 0);
		*bytes += strlen(envp[2 * i]) + 1;
		char big[400];
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_true(asprintf(&envp[2 * i + 1], "%s_%02zu=%s", i % 2 ? "DROP" : "MY_API_KEY",
		                     i, big) > 0);
	}
	return envp;
}

static void expect_ok(const struct rd_env_config *cfg, enum rd_env_level level,
                      const struct rd_rule *rule, char **envp, size_t bytes)
{
	struct rd_env_result r;
	fill_garbage(&r);
	struct rd_error err = {0};
	int rc = rd_env_build(cfg, &prof_keep, level, rule, envp, &r, &err);
	if (rc != 0)
		fail_msg("rd_env_build: %d (%s)", rc, err.msg);
	assert_int_equal(r.n_env, N_KEEP);
	assert_int_equal(r.bytes, bytes);
	assert_int_equal(r.n_verdicts, 2 * N_KEEP);
	assert_int_equal(check_result_shape("limit ok", envp, 2 * N_KEEP, &r), 0);
	rd_env_result_free(&r);
}

static void expect_e2big(const struct rd_env_config *cfg, enum rd_env_level level,
                         const struct rd_rule *rule, char **envp, const char *limit, size_t actual)
{
	struct rd_env_result r;
	fill_garbage(&r);
	struct rd_error err = {0};
	int rc = rd_env_build(cfg, &prof_keep, level, rule, envp, &r, &err);
	assert_int_equal(rc, -E2BIG);
	assert_int_equal(err.err, E2BIG);
	if (!strstr(err.msg, limit))
		fail_msg("message \"%s\" does not name %s", err.msg, limit);
	char num[32];
	snprintf(num, sizeof(num), "%zu", actual);
	if (!strstr(err.msg, num))
		fail_msg("message \"%s\" does not give the actual size %s", err.msg, num);
	assert_null(r.envp);
	assert_int_equal(r.n_env, 0);
	assert_null(r.verdicts);
	assert_int_equal(r.n_verdicts, 0);
	assert_int_equal(r.bytes, 0);
	rd_env_result_free(&r); /* freeing an empty result is harmless */
}

/* ---- values -------------------------------------------------------------------------- */

static const struct rd_env_verdict *verdict_of(const struct rd_env_result *r, const char *name)
{
	for (size_t i = 0; i < r->n_verdicts; i++)
		if (r->verdicts[i].name_len == strlen(name) &&
		    strncmp(r->verdicts[i].entry, name, strlen(name)) == 0)
			return &r->verdicts[i];
	fail_msg("no verdict for %s", name);
	return NULL;
}

static const char *out_value(const struct rd_env_result *r, const char *name)
{
	for (size_t i = 0; i < r->n_env; i++)
		if (strncmp(r->envp[i], name, strlen(name)) == 0 && r->envp[i][strlen(name)] == '=')
			return r->envp[i] + strlen(name) + 1;
	return NULL;
}

static const struct rd_rule rule_gh = {
    .index = 6,
    .env_allow = STRV("GH_TOKEN", "LC_*", "GIT_EDITOR"),
};

/* A variable whose value holds a stripped secret's value is stripped, whatever its name; a
 * short value is not looked for; an exact grant stands; values stripped at the agent's start
 * count too. */
static void test_secret_values(void **state)
{
	(void)state;
	char *envp[] = {"OPENAI_API_KEY=sk-live-12345678",
	                "LC_PAPER=sk-live-12345678",
	                "TERM=xterm Bearer sk-live-12345678",
	                "AWS_REGION=eu-1",
	                "TZ=eu-1",
	                "GITHUB_TOKEN=ghp_0123456789",
	                "GH_TOKEN=ghp_0123456789",
	                "LANG=ghp_0123456789",
	                "GIT_EDITOR=vi sk-live-12345678",
	                "HOME=/home/dev",
	                "USER=dev",
	                NULL};
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_empty, RD_ENV_COMMAND, &rule_gh, envp, &r, &err), 0);
	const struct rd_env_verdict *v = verdict_of(&r, "LC_PAPER");
	assert_false(v->passed);
	assert_int_equal(v->reason, RD_ENV_DENIED_SECRET_VALUE);
	assert_int_equal(v->holds_len, strlen("OPENAI_API_KEY"));
	assert_memory_equal(v->holds, "OPENAI_API_KEY", v->holds_len);
	assert_string_equal(rd_env_reason_str(v->reason), "denied:secret-value");
	assert_int_equal(verdict_of(&r, "TERM")->reason, RD_ENV_DENIED_SECRET_VALUE);
	assert_true(verdict_of(&r, "TZ")->passed); /* "eu-1" is too short to tell */
	/* GH_TOKEN, granted by its exact name, holds GITHUB_TOKEN's (stripped) value: it stands;
	 * LANG, a base name, holding it does not. */
	assert_true(verdict_of(&r, "GH_TOKEN")->passed);
	assert_int_equal(verdict_of(&r, "LANG")->reason, RD_ENV_DENIED_SECRET_VALUE);
	/* GIT_EDITOR, an exact name that is no secret's, holding one is stripped: before, an
	 * exact name skipped the value check, and the agent's key under it reached commands. */
	assert_int_equal(verdict_of(&r, "GIT_EDITOR")->reason, RD_ENV_DENIED_SECRET_VALUE);
	assert_true(verdict_of(&r, "HOME")->passed);
	assert_int_equal(r.n_env, 4); /* TZ GH_TOKEN HOME USER */
	rd_env_result_free(&r);

	/* Without the rule, GH_TOKEN is a secret like any other. */
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_empty, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_false(verdict_of(&r, "GH_TOKEN")->passed);
	rd_env_result_free(&r);

	/* A value stripped at the agent's start: the agent's block no longer has the variable. */
	struct rd_env_result start;
	char *operator_env[] = {"DATABASE_URL=postgres://u:pw-98765@db/x", "PATH=/usr/bin", NULL};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_empty, RD_ENV_AGENT, NULL, operator_env, &start, &err),
	    0);
	struct rd_strv secrets;
	assert_int_equal(rd_env_secret_entries(&start, &secrets), 0);
	rd_env_result_free(&start);
	assert_int_equal(secrets.n, 1);
	struct rd_env_secrets known = {(const char *const *)secrets.v, secrets.n};
	char *agent_env[] = {"PATH=/usr/bin", "LANG=postgres://u:pw-98765@db/x", NULL};
	assert_int_equal(rd_env_build_known(&cfg_default, &prof_empty, RD_ENV_COMMAND, NULL,
	                                    agent_env, &known, &r, &err),
	                 0);
	v = verdict_of(&r, "LANG");
	assert_int_equal(v->reason, RD_ENV_DENIED_SECRET_VALUE);
	assert_memory_equal(v->holds, "DATABASE_URL", v->holds_len);
	assert_int_equal(r.n_env, 1);
	rd_env_result_free(&r);
	rd_strv_free(&secrets);
}

/* A granted command gets HOME, XDG_*, GIT_*, MAKEFLAGS and the like as the agent had them at
 * its start, or not at all. */
static void test_pin_start(void **state)
{
	(void)state;
	char *envp[] = {"HOME=/tmp/evil", "XDG_CONFIG_HOME=/tmp/evil",
	                "PATH=/usr/bin",  "TERM=xterm",
	                "USER=dev",       NULL};
	char *start[] = {"HOME=/home/dev", "PATH=/usr/bin:/bin", "USER=dev", NULL};
	const struct rd_strv names = STRV("HOME", "XDG_*", "USER");
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_empty, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_int_equal(rd_env_pin_start(&r, &names, start), 0);
	assert_string_equal(out_value(&r, "HOME"), "/home/dev");
	assert_true(verdict_of(&r, "HOME")->pinned);
	assert_null(out_value(&r, "XDG_CONFIG_HOME"));
	assert_string_equal(out_value(&r, "PATH"), "/usr/bin"); /* not a pinned name */
	assert_string_equal(out_value(&r, "USER"), "dev");
	assert_false(verdict_of(&r, "USER")->pinned); /* the same value */
	assert_int_equal(r.n_env, 4);
	assert_int_equal(r.bytes, strlen("HOME=/home/dev PATH=/usr/bin TERM=xterm USER=dev") + 1);
	assert_null(r.envp[4]);
	rd_env_result_free(&r);
}

/* A name longer than the pin's buffer is matched all the same (it was passed unpinned). */
static const struct rd_profile prof_long = {.name = "long", .commands_env_allow = STRV("LONG_*")};

static void test_pin_start_long(void **state)
{
	(void)state;
	char entry[400];
	memset(entry, 'X', sizeof(entry) - 1);
	memcpy(entry, "LONG_", 5);
	entry[300] = '=';
	entry[sizeof(entry) - 1] = '\0';
	char *envp[] = {entry, "TERM=xterm", NULL};
	char *start[] = {"TERM=xterm", NULL};
	const struct rd_strv names = STRV("LONG_*");
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_long, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_int_equal(r.n_env, 2);
	assert_int_equal(rd_env_pin_start(&r, &names, start), 0);
	assert_int_equal(r.n_env, 1);
	assert_string_equal(r.envp[0], "TERM=xterm");
	assert_int_equal(verdict_of(&r, "TERM")->passed, true);
	rd_env_result_free(&r);
	/* And one the agent had at its start: its start value. */
	char was[400];
	memcpy(was, entry, sizeof(was));
	was[sizeof(was) - 2] = 'Y';
	char *start2[] = {was, NULL};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_long, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_int_equal(rd_env_pin_start(&r, &names, start2), 0);
	assert_int_equal(r.n_env, 2);
	assert_string_equal(r.envp[0], was);
	rd_env_result_free(&r);
}

/* runnerd's own value: in place of the variable of that name, or added at the end. */
static void test_env_put(void **state)
{
	(void)state;
	char *envp[] = {"PATH=/usr/bin", "TERM=xterm", NULL};
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_empty, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_int_equal(rd_env_put(&r, "PATH=/bin"), 0);
	assert_int_equal(rd_env_put(&r, "GIT_ALLOW_PROTOCOL=https"), 0);
	assert_int_equal(r.n_env, 3);
	assert_string_equal(r.envp[0], "TERM=xterm");
	assert_string_equal(r.envp[1], "PATH=/bin");
	assert_string_equal(r.envp[2], "GIT_ALLOW_PROTOCOL=https");
	assert_null(r.envp[3]);
	assert_string_equal(out_value(&r, "PATH"), "/bin");
	assert_int_equal(r.bytes, strlen("TERM=xterm PATH=/bin GIT_ALLOW_PROTOCOL=https") + 1);
	rd_env_result_free(&r);
}

static const struct rd_profile prof_proxy = {
    .name = "proxy",
    .commands_env_allow = STRV("HTTP_PROXY", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "FTP_PROXY",
                               "NO_PROXY", "ftp_proxy", "all_proxy"),
    .agent_env_allow = STRV("HTTPS_PROXY", "HTTP_PROXY"),
};

/* A proxy pinned to the agent's start value gets it without its user and password, as every
 * command gets a proxy. */
static void test_pin_start_proxy(void **state)
{
	(void)state;
	char *envp[] = {"HTTPS_PROXY=http://127.0.0.1:9/", "https_proxy=http://p:3128", NULL};
	char *start[] = {"HTTPS_PROXY=http://bob:hunter2@proxy:3128", "https_proxy=http://p:3128",
	                 NULL};
	const struct rd_strv names = STRV("*_PROXY", "*_proxy");
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_proxy, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_int_equal(rd_env_pin_start(&r, &names, start), 0);
	assert_string_equal(out_value(&r, "HTTPS_PROXY"), "http://proxy:3128");
	assert_true(verdict_of(&r, "HTTPS_PROXY")->pinned);
	assert_string_equal(out_value(&r, "https_proxy"), "http://p:3128");
	assert_false(verdict_of(&r, "https_proxy")->pinned);
	assert_int_equal(r.bytes,
	                 strlen("HTTPS_PROXY=http://proxy:3128 https_proxy=http://p:3128") + 1);
	rd_env_result_free(&r);

	/* A start value whose password cannot be cut out goes. */
	char *unclear[] = {"HTTPS_PROXY=http://bob:hunt/er2@proxy:3128",
	                   "https_proxy=http://p:3128", NULL};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_proxy, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_int_equal(rd_env_pin_start(&r, &names, unclear), 0);
	assert_null(out_value(&r, "HTTPS_PROXY"));
	assert_int_equal(verdict_of(&r, "HTTPS_PROXY")->reason, RD_ENV_DENIED_PROXY);
	assert_string_equal(out_value(&r, "https_proxy"), "http://p:3128");
	rd_env_result_free(&r);
}

/* At the command level, a proxy URL's user and password are removed; the agent keeps them. */
static void test_proxy_userinfo(void **state)
{
	(void)state;
	char *envp[] = {"HTTPS_PROXY=http://bob:hunter2@proxy.corp:3128",
	                "https_proxy=bob:hunter2@proxy.corp:3128/",
	                "HTTP_PROXY=http://bob:pass/word@proxy.corp:3128",
	                "ALL_PROXY=socks5://tok@[::1]:1080",
	                "NO_PROXY=user@example.com",
	                "FTP_PROXY=http://bob:pass?w@proxy.corp:3128",
	                "ftp_proxy=http://proxy.corp:3128/a@b",
	                "all_proxy=bob:p#w@proxy.corp:3128",
	                NULL};
	struct rd_env_result r;
	struct rd_error err = {0};
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_proxy, RD_ENV_COMMAND, NULL, envp, &r, &err), 0);
	assert_string_equal(out_value(&r, "HTTPS_PROXY"), "http://proxy.corp:3128");
	assert_true(verdict_of(&r, "HTTPS_PROXY")->rewritten);
	assert_string_equal(out_value(&r, "https_proxy"), "proxy.corp:3128/");
	/* An '@' past the host: curl and Go take it as the path's, so the part before may be a
	 * password; the variable goes. */
	static const char *const unclear[] = {"HTTP_PROXY", "FTP_PROXY", "ftp_proxy", "all_proxy"};
	for (size_t i = 0; i < ARRAY_SIZE(unclear); i++) {
		const struct rd_env_verdict *v = verdict_of(&r, unclear[i]);
		assert_false(v->passed);
		assert_int_equal(v->reason, RD_ENV_DENIED_PROXY);
		assert_null(out_value(&r, unclear[i]));
	}
	assert_string_equal(out_value(&r, "ALL_PROXY"), "socks5://[::1]:1080");
	assert_string_equal(out_value(&r, "NO_PROXY"), "user@example.com"); /* not a proxy URL */
	assert_null(strstr(out_value(&r, "HTTPS_PROXY"), "hunter2"));
	rd_env_result_free(&r);
	assert_int_equal(
	    rd_env_build(&cfg_default, &prof_proxy, RD_ENV_AGENT, NULL, envp, &r, &err), 0);
	assert_string_equal(out_value(&r, "HTTPS_PROXY"), "http://bob:hunter2@proxy.corp:3128");
	assert_string_equal(out_value(&r, "HTTP_PROXY"), "http://bob:pass/word@proxy.corp:3128");
	rd_env_result_free(&r);
}

static void test_max_keys(void **state)
{
	(void)state;
	size_t bytes;
	char **envp = limit_envp(&bytes);
	struct rd_env_config cfg = cfg_default;

	cfg.max_keys = 0; /* unlimited */
	expect_ok(&cfg, RD_ENV_AGENT, NULL, envp, bytes);
	cfg.max_keys = N_KEEP; /* exactly at the limit */
	expect_ok(&cfg, RD_ENV_AGENT, NULL, envp, bytes);
	expect_ok(&cfg, RD_ENV_COMMAND, NULL, envp, bytes);
	cfg.max_keys = N_KEEP - 1;
	expect_e2big(&cfg, RD_ENV_AGENT, NULL, envp, "max_keys", N_KEEP);
	expect_e2big(&cfg, RD_ENV_COMMAND, NULL, envp, "max_keys", N_KEEP);
	envp_free(envp);
}

static void test_max_bytes(void **state)
{
	(void)state;
	size_t bytes;
	char **envp = limit_envp(&bytes);
	struct rd_env_config cfg = cfg_default;

	cfg.max_bytes = bytes; /* exactly at the limit; the stripped entries do not count */
	expect_ok(&cfg, RD_ENV_AGENT, NULL, envp, bytes);
	expect_ok(&cfg, RD_ENV_COMMAND, NULL, envp, bytes);
	cfg.max_bytes = bytes - 1;
	expect_e2big(&cfg, RD_ENV_AGENT, NULL, envp, "max_bytes", bytes);
	expect_e2big(&cfg, RD_ENV_COMMAND, NULL, envp, "max_bytes", bytes);
	envp_free(envp);
}

static void test_rule_limits(void **state)
{
	(void)state;
	size_t bytes;
	char **envp = limit_envp(&bytes);
	struct rd_env_config cfg = cfg_default;
	struct rd_rule rule = {.index = 1};

	/* a looser rule limit overrides a tighter config one at command level ... */
	cfg.max_keys = N_KEEP - 1;
	rule.max_keys = N_KEEP;
	expect_ok(&cfg, RD_ENV_COMMAND, &rule, envp, bytes);
	/* ... but not at agent level, where the rule is ignored */
	expect_e2big(&cfg, RD_ENV_AGENT, &rule, envp, "max_keys", N_KEEP);
	/* a tighter rule limit applies even when the config has none */
	cfg.max_keys = 0;
	rule.max_keys = N_KEEP - 1;
	expect_e2big(&cfg, RD_ENV_COMMAND, &rule, envp, "max_keys", N_KEEP);
	expect_ok(&cfg, RD_ENV_AGENT, &rule, envp, bytes);
	/* a rule limit of 0 inherits the config's */
	cfg.max_keys = N_KEEP - 1;
	rule.max_keys = 0;
	expect_e2big(&cfg, RD_ENV_COMMAND, &rule, envp, "max_keys", N_KEEP);
	cfg.max_keys = 0;

	cfg.max_bytes = bytes - 1;
	rule.max_bytes = bytes;
	expect_ok(&cfg, RD_ENV_COMMAND, &rule, envp, bytes);
	expect_e2big(&cfg, RD_ENV_AGENT, &rule, envp, "max_bytes", bytes);
	cfg.max_bytes = 0;
	rule.max_bytes = bytes - 1;
	expect_e2big(&cfg, RD_ENV_COMMAND, &rule, envp, "max_bytes", bytes);
	expect_ok(&cfg, RD_ENV_AGENT, &rule, envp, bytes);
	cfg.max_bytes = bytes - 1;
	rule.max_bytes = 0;
	expect_e2big(&cfg, RD_ENV_COMMAND, &rule, envp, "max_bytes", bytes);
	envp_free(envp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_reason_str),
	    cmocka_unit_test(test_is_internal),
	    cmocka_unit_test(test_empty_envp),
	    cmocka_unit_test(test_order_and_pointers),
	    cmocka_unit_test(test_name_len),
	    cmocka_unit_test(test_many_names),
	    cmocka_unit_test(test_long_names),
	    cmocka_unit_test(test_secret_values),
	    cmocka_unit_test(test_proxy_userinfo),
	    cmocka_unit_test(test_pin_start),
	    cmocka_unit_test(test_pin_start_long),
	    cmocka_unit_test(test_pin_start_proxy),
	    cmocka_unit_test(test_env_put),
	    cmocka_unit_test(test_max_keys),
	    cmocka_unit_test(test_max_bytes),
	    cmocka_unit_test(test_rule_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
