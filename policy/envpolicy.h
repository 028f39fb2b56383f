/* The environment policy engine: which names of an env block the agent, or a command it
 * runs, may see. Pure: no syscalls, no globals, nothing logged. */
#ifndef RD_ENVPOLICY_H
#define RD_ENVPOLICY_H

#include "lib/error.h"
#include "policy/policy.h"

#include <stdbool.h>
#include <stddef.h>

enum rd_env_level {
	RD_ENV_AGENT,   /* the agent process runnerd starts */
	RD_ENV_COMMAND, /* each command the agent runs */
};

enum rd_env_reason {
	/* passed */
	RD_ENV_BASE,     /* runner.json env.base_allow */
	RD_ENV_PROFILE,  /* agent.env_allow (agent) or commands.env_allow (command) */
	RD_ENV_RULE,     /* the matched rule's env_allow */
	RD_ENV_EXTRA,    /* env.extra_env or the profile's agent.extra_env (agent only) */
	RD_ENV_INTERNAL, /* runnerd's own session variables */
	/* stripped */
	RD_ENV_DENIED_SECRET,  /* env.deny, not overridden by an exact-name allow */
	RD_ENV_DENIED_HARD,    /* env.hard_deny: nothing overrides */
	RD_ENV_DENIED_PROFILE, /* commands.env_deny */
	RD_ENV_DENIED_RULE,    /* the matched rule's env_deny */
	RD_ENV_NOT_ALLOWED,    /* no allow list names it */
	RD_ENV_DUPLICATE,      /* a name seen earlier in the block: the first wins */
	RD_ENV_MALFORMED,      /* no '=' or an empty name */
	/* its value holds the value of a variable stripped as a secret (in this block, or at
	 * the agent's start: rd_env_secrets) */
	RD_ENV_DENIED_SECRET_VALUE,
	/* a command a rule grants a secret: one of rd_grant_pinned_names the agent did not
	 * have at its start */
	RD_ENV_DENIED_GRANT,
	/* command level: a proxy URL with an '@' past its host, whose user and password cannot
	 * be told from its path */
	RD_ENV_DENIED_PROXY,
};

/* A value shorter than this is not looked for in other values: too common to tell a secret
 * ("1", "true", a region's name). */
#define RD_ENV_SECRET_VALUE_MIN 8

/* Values stripped as secrets elsewhere (at the agent's start), with their names: a variable
 * that holds one is stripped too. The strings are the caller's. */
struct rd_env_secrets {
	const char *const *entries; /* "NAME=value" */
	size_t n;
};

struct rd_env_verdict {
	const char *entry; /* the input entry, "NAME=value" (never print past name_len) */
	size_t name_len;   /* 0 for a malformed entry: it has no name to show */
	enum rd_env_reason reason;
	bool passed;
	const char *pattern; /* the list entry that decided, NULL if none */
	/* RD_ENV_DENIED_SECRET_VALUE: the entry whose value it holds (print its name only,
	 * holds_len bytes) */
	const char *holds;
	size_t holds_len;
	/* Passed with a value of runnerd's (out->envp has it, not entry): the user and password
	 * of a proxy URL removed */
	bool rewritten;
	/* Passed with the agent's start value in place of the one the caller passed
	 * (rd_env_pin_start) */
	bool pinned;
	/* Passed by an exact allow although the secret patterns match its name (GH_TOKEN): a
	 * deliberate grant of a secret, whose value may hold another's */
	bool secret_granted;
};

struct rd_env_result {
	/* The output block, NULL-terminated, in input order. The strings are the input's own:
	 * the result lives no longer than the envp it was built from. */
	char **envp;
	size_t n_env;
	size_t bytes; /* sum of strlen + 1 over the output, as the kernel counts */
	struct rd_env_verdict *verdicts; /* one per input entry, in input order */
	size_t n_verdicts;
	char **owned; /* the rewritten entries out->envp points to, freed with it */
	size_t n_owned;
};

/* Build the env block for one level. rule may be NULL (no rule matched, or agent level, where
 * it is ignored). Names decide first; then values: a variable passed whose value holds the
 * value (RD_ENV_SECRET_VALUE_MIN bytes or more) of one stripped as a secret in this block
 * (env.deny, commands.env_deny, the rule's env_deny) or listed in known (may be NULL), is
 * stripped too, unless the profile or the rule grants it by its exact name; and at the command
 * level the user and password of a proxy URL (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, FTP_PROXY,
 * in either case) are removed. Returns 0, -ENOMEM, or -E2BIG when the output exceeds max_keys
 * or max_bytes (the rule's limit if it sets one, else the config's); err then names the limit
 * and the size. On error *out is empty. */
int rd_env_build_known(const struct rd_env_config *cfg, const struct rd_profile *prof,
                       enum rd_env_level level, const struct rd_rule *rule, char *const *envp,
                       const struct rd_env_secrets *known, struct rd_env_result *out,
                       struct rd_error *err) _wur_;

/* rd_env_build_known with no values known from elsewhere. */
int rd_env_build(const struct rd_env_config *cfg, const struct rd_profile *prof,
                 enum rd_env_level level, const struct rd_rule *rule, char *const *envp,
                 struct rd_env_result *out, struct rd_error *err) _wur_;

/* The entries of r stripped as secrets (reasons denied:secret-pattern, denied:profile,
 * denied:rule), with a value RD_ENV_SECRET_VALUE_MIN bytes or longer: what a later block's
 * values are checked against (rd_env_secrets). Copies, into *out (freed with rd_strv_free).
 * Returns 0 or -ENOMEM. */
int rd_env_secret_entries(const struct rd_env_result *r, struct rd_strv *out) _wur_;

void rd_env_result_free(struct rd_env_result *r);

/* For a command that a rule grants a secret: every passed variable whose name matches names
 * gets the value the agent had at its start (start, "NAME=value", which must outlive r), a
 * proxy's without its user and password, or is stripped (RD_ENV_DENIED_GRANT) if the agent had
 * none. Returns 0, or -ENOMEM (r is then only to be freed). */
int rd_env_pin_start(struct rd_env_result *r, const struct rd_strv *names,
                     char *const *start) _wur_;

/* Every entry of r whose text starts with prefix ("NAME=" for one name) taken out. */
void rd_env_drop_prefix(struct rd_env_result *r, const char *prefix);

/* entry ("NAME=value", copied) in r's output in place of any variable of that name, or added
 * at its end: a value of runnerd's own (the audit's verdicts do not list it). Returns 0 or
 * -ENOMEM (r unchanged). */
int rd_env_put(struct rd_env_result *r, const char *entry) _wur_;

/* "base", "profile", "rule", "extra_env", "internal", "denied:secret-pattern", "denied:hard",
 * "denied:profile", "denied:rule", "not-allowed", "duplicate", "malformed",
 * "denied:secret-value", "denied:granted-command". */
const char *rd_env_reason_str(enum rd_env_reason r);

/* True for the names runnerd itself sets: RUNNERD_SESSION, RUNNERD_PROFILE, JRUN_*. */
bool rd_env_is_internal(const char *name, size_t len);

#endif
