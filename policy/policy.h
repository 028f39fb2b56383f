/* The policy as loaded from runner.json and a profile: plain structs, no behaviour. The
 * loader (policy/config.c) fills them; envpolicy.c and the rule matcher read them. */
#ifndef RD_POLICY_H
#define RD_POLICY_H

#include "lib/strv.h"
#include "policy/box.h"

#include <stdbool.h>
#include <stddef.h>

enum rd_action {
	RD_ACTION_ALLOW,
	RD_ACTION_DENY,
	RD_ACTION_ASK,
};

struct rd_env_config {
	struct rd_strv base_allow;
	struct rd_strv deny; /* secret-shaped names: an exact-name allow overrides */
	struct rd_strv hard_deny;
	struct rd_strv extra_env; /* allowed for every agent */
	size_t max_keys;
	size_t max_bytes;
};

#define RD_ASK_TIMEOUT_DEFAULT_S 60

struct rd_rule {
	size_t index;              /* position in commands.rules, from 0 as in commands.rules[0] */
	char *match_path;          /* glob on the resolved executable, NULL = any */
	struct rd_strv match_args; /* globs over argv[1..]; "**" = the rest */
	bool has_match_args;
	enum rd_action action;
	struct rd_strv env_allow;
	struct rd_strv env_deny;
	size_t max_keys;        /* 0 = inherit */
	size_t max_bytes;       /* 0 = inherit */
	struct rd_box box;      /* the sandbox keys this rule sets (policy/box.h) */
	unsigned ask_timeout_s; /* action "ask": seconds until no answer denies (the loader sets
	                         * RD_ASK_TIMEOUT_DEFAULT_S when the rule gives none) */
	char *description;      /* NULL if none */
	int line, col;          /* where the rule starts in its file */
	/* Its env_allow names a secret-shaped variable (env.deny) exactly: it grants a secret
	 * (rd_profile_mark_grants). Such a rule matches the resolved path alone, and its
	 * command's environment and argv are held tighter (docs/configuration.md, "Grants"). */
	bool grants_secret;
	/* "sha256": the program's contents pinned, lowercase hex; empty = not pinned. A pinned
	 * rule runs the very bytes that were hashed (docs/configuration.md, "Grants"). */
	struct rd_strv sha256;
};

struct rd_profile {
	char *name;
	char *path;
	char sha256[65]; /* hex, of the very bytes parsed */
	char *description;
	struct rd_strv agent_env_allow;
	struct rd_strv agent_extra_env;
	/* The agent's own programs: an exec of one from the agent's tree runs as the agent
	 * (runnerd/agent_path.h). Paths, absolute or "{package}/..." (the npm package the agent's
	 * launcher lies in), globs allowed; and the options its interpreter may be given before
	 * the agent's script when the agent starts it again ("--max-old-space-size=*"). A program
	 * that execs its own file again is the agent only with a first argument of self_exec
	 * (Codex's "--codex-run-as-process-setup"): else a command line the model chose, run
	 * through the agent, would be the agent too. */
	struct rd_strv agent_programs;
	struct rd_strv agent_interp_opts;
	struct rd_strv agent_self_exec;
	/* The files the agent loads variables from at its start, in its order ("agent.env_files":
	 * a relative name looked for in its working directory and each one above, then "~/..."
	 * and "${NAME}/..." or "${NAME:-~}/..." ones), and the names it must not take from one
	 * that commands can write ("agent.env_guard": runnerd/agent_env.h). */
	struct rd_strv agent_env_files;
	struct rd_strv agent_env_guard;
	enum rd_action commands_default;
	struct rd_strv commands_env_allow;
	struct rd_strv commands_env_deny;
	struct rd_box commands_box; /* the sandbox keys of "commands" (policy/box.h) */
	struct rd_rule *rules;
	size_t n_rules;
};

struct rd_config {
	char *path;                     /* the file read */
	char sha256[65];                /* hex, of the very bytes parsed */
	char *profiles_dir;             /* absolute, or relative to the working directory */
	char *audit_path;               /* NULL = no audit file */
	size_t audit_max_session_bytes; /* 0: not set (the default bound) */
	/* sandbox.workspace: the project, as written (absolute or "~/..."); NULL = the
	 * directory runnerd starts in */
	char *workspace;
	struct rd_env_config env;
	struct rd_box box; /* "sandbox": the sandbox keys (policy/box.h) */
};

void rd_rule_free(struct rd_rule *r);
void rd_profile_free(struct rd_profile *p);
void rd_config_free(struct rd_config *c);

const char *rd_action_str(enum rd_action a);

#endif
