/* The policy as loaded from runner.json and a profile: plain structs, no behaviour. The
 * loader (runnerd/config.c) fills them; envpolicy.c and the rule matcher read them. */
#ifndef RD_POLICY_H
#define RD_POLICY_H

#include <stdbool.h>
#include <stddef.h>

/* A list of strings (names, globs or paths), owned. */
struct rd_strv {
	char **v;
	size_t n;
};

enum rd_action {
	RD_ACTION_ALLOW,
	RD_ACTION_DENY,
	RD_ACTION_ASK,
};

/* runner.json "env" */
/* The command's seccomp profile; INHERIT falls back rule -> commands -> sandbox -> DEFAULT. */
enum rd_seccomp_mode {
	RD_SECCOMP_INHERIT = 0,
	RD_SECCOMP_DEFAULT, /* sandbox/cmdfilter.c: EPERM for the calls that reach beyond */
	RD_SECCOMP_NONE,
};

enum rd_network {
	RD_NET_INHERIT = 0,
	RD_NET_HOST, /* the host's network (default) */
	RD_NET_NONE, /* a network namespace of its own with only lo, up */
};

/* The rlimits a rule may cap, in this order: nofile, nproc, as, cpu, fsize. */
#define RD_RLIMITS 5
extern const char *const rd_rlimit_names[RD_RLIMITS];
extern const int rd_rlimit_resources[RD_RLIMITS];

/* Per-command sandbox settings; 0 / INHERIT falls back rule -> commands -> sandbox. */
struct rd_box_opts {
	unsigned long long rlimit[RD_RLIMITS]; /* caps; 0: none */
	enum rd_seccomp_mode seccomp;
	enum rd_network network;
	unsigned timeout_s;    /* 0: none */
	unsigned kill_grace_s; /* after SIGTERM on timeout, before SIGKILL; 0: 5 s */
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
	size_t max_keys;     /* 0 = inherit */
	size_t max_bytes;    /* 0 = inherit */
	struct rd_strv mask; /* more paths to mask for this rule */
	struct rd_box_opts box;
	unsigned ask_timeout_s; /* action "ask": seconds until no answer denies (the loader sets
	                         * RD_ASK_TIMEOUT_DEFAULT_S when the rule gives none) */
	char *description;      /* NULL if none */
	int line, col;          /* where the rule starts in its file */
};

struct rd_profile {
	char *name;
	char *path;
	char sha256[65]; /* hex, of the very bytes parsed */
	char *description;
	struct rd_strv agent_env_allow;
	struct rd_strv agent_extra_env;
	enum rd_action commands_default;
	struct rd_strv commands_env_allow;
	struct rd_strv commands_env_deny;
	struct rd_strv commands_mask;   /* paths masked for every command, on top of sandbox.mask */
	struct rd_strv commands_unmask; /* entries of sandbox.mask this profile keeps visible */
	struct rd_box_opts commands_box;
	struct rd_rule *rules;
	size_t n_rules;
};

struct rd_config {
	char *path;         /* the file read */
	char sha256[65];    /* hex, of the very bytes parsed */
	char *profiles_dir; /* absolute, or relative to the working directory */
	char *audit_path;   /* NULL = no audit file */
	struct rd_env_config env;
	struct rd_strv mask;    /* sandbox.mask: paths no command sees ("~/" = the caller's home) */
	struct rd_box_opts box; /* sandbox.seccomp, network, timeout_s, kill_grace_s */
};

void rd_strv_free(struct rd_strv *s);
void rd_rule_free(struct rd_rule *r);
void rd_profile_free(struct rd_profile *p);
void rd_config_free(struct rd_config *c);

const char *rd_action_str(enum rd_action a);

#endif
