/* runnerd explain: apply a profile to the current environment and show, for every name, whether
 * it passes and why. Names only: a value is never printed, not even a fragment of one. */
#include "lib/passwd.h"
#include "policy/envpolicy.h"
#include "policy/rules.h"
#include "runnerd/agent_path.h"
#include "runnerd/cli.h"

#include <getopt.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'}, {"profile", required_argument, NULL, 'p'},
    {"agent", no_argument, NULL, 'A'},        {"json", no_argument, NULL, 'j'},
    {"verbose", no_argument, NULL, 'v'},      {NULL, 0, NULL, 0},
};

static void explain_usage(void)
{
	fprintf(stderr, "Usage: runnerd explain [--config FILE] --profile NAME [--json] --agent\n"
	                "       runnerd explain [--config FILE] --profile NAME [--json] -- CMD "
	                "[ARGS...]\n");
}

/* Passed names first, then stripped; each group by name; malformed entries last. */
static int cmp_verdict(const void *pa, const void *pb)
{
	const struct rd_env_verdict *a = pa, *b = pb;
	if (a->passed != b->passed)
		return a->passed ? -1 : 1;
	if (!a->name_len || !b->name_len)
		return (a->name_len == 0) - (b->name_len == 0);
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->entry, b->entry, n);
	if (c)
		return c;
	return (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* One merged sandbox key as JSON: its word, its number, or null when not set. */
static json_t *box_value(const struct rd_box_opts *b, size_t k)
{
	if (rd_box_keys[k].type == RD_BOX_WORD)
		return b->v[k] ? json_string(rd_box_word(k, b->v[k])) : json_null();
	return b->v[k] ? json_integer((json_int_t)b->v[k]) : json_null();
}

/* The sandbox a command matched by rule (or none) gets, by the table of sandbox keys
 * (policy/box.h): each key by its name, a group's keys that are set in an object of the group's
 * name, and the masks, with "~/" for the running user's home; for an ask, how long it waits. */
static json_t *sandbox_json(const struct rd_config *cfg, const struct rd_profile *prof,
                            const struct rd_rule *rule)
{
	struct rd_box_opts b = rd_box_resolve(cfg, prof, rule);
	json_t *o = json_object();
	const struct rd_box *levels[] = {rule ? &rule->box : NULL, &prof->commands_box, &cfg->box};
	for (size_t k = 0; o && k < RD_BOX_NKEYS; k++) {
		const struct rd_box_key *key = &rd_box_keys[k];
		if (k == RD_BOX_MASK || k == RD_BOX_UNMASK)
			continue; /* shown as "masks", below */
		if (key->type == RD_BOX_PATHS) {
			json_t *all = json_array();
			for (size_t l = 0; l < ARRAY_SIZE(levels); l++)
				for (size_t i = 0; levels[l] && i < levels[l]->list[k].n; i++)
					json_array_append_new(all,
					                      json_string(levels[l]->list[k].v[i]));
			json_object_set_new(o, key->name, all);
		} else if (key->group) {
			json_t *g = json_object_get(o, key->group);
			if (!g)
				json_object_set_new(o, key->group, g = json_object());
			if (b.v[k])
				json_object_set_new(g, key->name, box_value(&b, k));
		} else {
			json_object_set_new(o, key->name, box_value(&b, k));
		}
	}
	json_t *masks = json_array();
	struct passwd *pw = getpwuid(getuid());
	struct rd_strv list = {0};
	if (pw && pw->pw_dir && rd_mask_list(cfg, prof, rule, pw->pw_dir, getuid(), &list) == 0)
		for (size_t i = 0; i < list.n; i++)
			json_array_append_new(masks, json_string(list.v[i]));
	rd_strv_free(&list);
	json_object_set_new(o, "masks", masks);
	enum rd_action a = rule ? rule->action : prof->commands_default;
	if (o && a == RD_ACTION_ASK)
		json_object_set_new(o, "ask_timeout_s", json_integer(rule->ask_timeout_s));
	return o;
}

/* Shown on the first line, or on lines of their own: the rest of the keys come one a line. */
static bool shown_apart(const char *name)
{
	static const char *const apart[] = {"network", "seccomp",       "timeout_s", "kill_grace_s",
	                                    "masks",   "ask_timeout_s", "rlimits"};
	for (size_t i = 0; i < ARRAY_SIZE(apart); i++)
		if (strcmp(apart[i], name) == 0)
			return true;
	return false;
}

static void print_sandbox(json_t *sb)
{
	json_t *t = json_object_get(sb, "timeout_s");
	printf("sandbox: network %s, seccomp %s, timeout ",
	       json_string_value(json_object_get(sb, "network")),
	       json_string_value(json_object_get(sb, "seccomp")));
	if (json_is_integer(t))
		printf("%lld s (then SIGTERM, SIGKILL after %lld s)",
		       (long long)json_integer_value(t),
		       (long long)json_integer_value(json_object_get(sb, "kill_grace_s")));
	else
		printf("none");
	printf("\n");
	const char *k;
	json_t *v;
	printf("rlimits:");
	size_t n = 0;
	json_object_foreach(json_object_get(sb, "rlimits"), k, v)
	{
		printf(" %s %lld", k, (long long)json_integer_value(v));
		n++;
	}
	printf("%s\n", n ? "" : " the caller's");
	json_object_foreach(sb, k, v)
	{
		if (shown_apart(k))
			continue;
		char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		printf("%s: %s\n", k, json_is_string(v) ? json_string_value(v) : text ? text : "?");
		free(text);
	}
	size_t i;
	json_array_foreach(json_object_get(sb, "masks"), i, v)
	{
		const char *m = json_string_value(v);
		if (m[0] == '!')
			printf("shown through its mask: %s\n", m + 1);
		else
			printf("mask: %s\n", m);
	}
	printf("mask: the control socket directories (always)\n");
	json_t *ask = json_object_get(sb, "ask_timeout_s");
	if (ask)
		printf("ask: the caller waits up to %lld s for runnerd approve (no answer: exit "
		       "126)\n",
		       (long long)json_integer_value(ask));
}

static void print_text(const struct rd_profile *prof, const struct rd_config *cfg, bool agent,
                       char **cmd, const struct rd_rule *rule, const struct rd_env_result *res)
{
	printf("profile %s (%s), config %s\n", prof->name, prof->path, cfg->path);
	if (agent) {
		printf("level: agent (the environment runnerd gives the agent itself)\n");
	} else {
		printf("level: command:");
		for (char **a = cmd; *a; a++)
			printf(" %s", *a);
		printf("\n");
		if (rule)
			printf("rule: commands.rules[%zu]%s%s -> %s\n", rule->index,
			       rule->match_path ? ", path " : "",
			       rule->match_path ? rule->match_path : "",
			       rd_action_str(rule->action));
		else
			printf("rule: none matches -> %s (commands.default)\n",
			       rd_action_str(prof->commands_default));
		json_t *sb = sandbox_json(cfg, prof, rule);
		if ((rule ? rule->action : prof->commands_default) != RD_ACTION_DENY && sb)
			print_sandbox(sb);
		json_decref(sb);
	}
	size_t passed = 0;
	for (size_t i = 0; i < res->n_verdicts; i++) {
		const struct rd_env_verdict *v = &res->verdicts[i];
		passed += v->passed;
		if (v->name_len && v->holds)
			printf("%-9s %-36.*s %-22s the value of %.*s\n", "stripped",
			       (int)v->name_len, v->entry, rd_env_reason_str(v->reason),
			       (int)v->holds_len, v->holds);
		else if (v->name_len)
			printf("%-9s %-36.*s %-22s %s%s\n", v->passed ? "passed" : "stripped",
			       (int)v->name_len, v->entry, rd_env_reason_str(v->reason),
			       v->pattern ? v->pattern : "",
			       v->rewritten ? " (its URL's user and password removed)" : "");
		else
			printf("%-9s %-36s %s\n", "stripped", "(entry without a name)",
			       rd_env_reason_str(v->reason));
	}
	printf("summary: %zu names passed, %zu stripped, %zu bytes\n", passed,
	       res->n_verdicts - passed, res->bytes);
}

static int print_json(const struct rd_profile *prof, const struct rd_config *cfg, bool agent,
                      char **cmd, const struct rd_rule *rule, const struct rd_env_result *res)
{
	json_t *root = json_object();
	json_t *vars = json_array();
	size_t passed = 0;
	if (!root || !vars)
		return -ENOMEM;
	json_object_set_new(root, "config", json_string(cfg->path));
	json_object_set_new(root, "profile", json_string(prof->name));
	json_object_set_new(root, "profile_path", json_string(prof->path));
	json_object_set_new(root, "level", json_string(agent ? "agent" : "command"));
	if (!agent) {
		json_t *argv = json_array();
		for (char **a = cmd; *a; a++)
			json_array_append_new(argv, json_string(*a));
		json_object_set_new(root, "argv", argv);
		json_object_set_new(root, "rule",
		                    rule ? json_integer((json_int_t)rule->index) : json_null());
		json_object_set_new(
		    root, "action",
		    json_string(rd_action_str(rule ? rule->action : prof->commands_default)));
		if ((rule ? rule->action : prof->commands_default) != RD_ACTION_DENY)
			json_object_set_new(root, "sandbox", sandbox_json(cfg, prof, rule));
	}
	for (size_t i = 0; i < res->n_verdicts; i++) {
		const struct rd_env_verdict *v = &res->verdicts[i];
		passed += v->passed;
		json_t *o = json_object();
		json_object_set_new(
		    o, "name", v->name_len ? json_stringn(v->entry, v->name_len) : json_null());
		json_object_set_new(o, "passed", json_boolean(v->passed));
		json_object_set_new(o, "reason", json_string(rd_env_reason_str(v->reason)));
		json_object_set_new(o, "pattern",
		                    v->pattern ? json_string(v->pattern) : json_null());
		if (v->holds)
			json_object_set_new(o, "holds", json_stringn(v->holds, v->holds_len));
		if (v->rewritten)
			json_object_set_new(o, "userinfo_removed", json_true());
		json_array_append_new(vars, o);
	}
	json_object_set_new(root, "env", vars);
	json_object_set_new(root, "passed", json_integer((json_int_t)passed));
	json_object_set_new(root, "stripped", json_integer((json_int_t)(res->n_verdicts - passed)));
	json_object_set_new(root, "bytes", json_integer((json_int_t)res->bytes));
	int r = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII) == 0 ? 0 : -EIO;
	printf("\n");
	json_decref(root);
	return r;
}

int rd_cmd_explain(struct rd_cli *cli, int argc, char **argv)
{
	bool agent = false, json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+c:p:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cli->config = optarg;
			break;
		case 'p':
			cli->profile = optarg;
			break;
		case 'A':
			agent = true;
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			cli->verbose++;
			break;
		default:
			explain_usage();
			return 2;
		}
	}
	char **cmd = argv + optind;
	bool has_cmd = optind < argc;
	if (!cli->profile || agent == has_cmd) {
		fprintf(stderr, "runnerd explain: %s\n",
		        !cli->profile ? "--profile is required"
		        : agent       ? "give either --agent or -- CMD, not both"
		                      : "give --agent or -- CMD [ARGS...]");
		explain_usage();
		return 2;
	}
	if (has_cmd && strcmp(argv[optind - 1], "--") != 0) {
		fprintf(stderr, "runnerd explain: put \"--\" before the command\n");
		explain_usage();
		return 2;
	}

	struct rd_config cfg = {0};
	struct rd_profile prof = {0};
	struct rd_error err = {0};
	struct rd_env_result res = {0};
	struct rd_strv secrets = {0};
	const struct rd_rule *rule = NULL;
	_cleanup_free_ char *where = NULL, *resolved = NULL, *workspace = NULL;
	int ret = 1;
	if (rd_cli_load_config(cli, &cfg) < 0)
		return 1;
	if (rd_profile_load(&cfg, cli->profile, &prof, &err) < 0) {
		rd_cli_print_error(&err);
		goto out;
	}
	char home[4096];
	if (rd_home_of(getuid(), false, home, sizeof(home)) < 0)
		home[0] = '\0';
	workspace = rd_cli_workspace(cli, &cfg, home, &err);
	if (!workspace) {
		rd_cli_print_error(&err);
		goto out;
	}
	if (rd_cli_expand_masks(&cfg, &prof, workspace) < 0)
		goto out;
	if (cli->verbose)
		fprintf(stderr, "runnerd: profile %s (%s)\n", prof.name, prof.path);
	/* The command as runnerd would see it: found on PATH, symlinks resolved. */
	if (!agent) {
		where = rd_agent_which(cmd[0], getenv("PATH"));
		resolved = where ? realpath(where, NULL) : NULL;
		size_t n = 0;
		while (cmd[n])
			n++;
		struct rd_exec_subject x = {where ? where : cmd[0], resolved, cmd, n};
		rule = rd_rule_match(&prof, &x);
	}
	/* A command's variables are also checked against the values the agent's start strips. */
	if (!agent) {
		struct rd_env_result start;
		int r = rd_env_build(&cfg.env, &prof, RD_ENV_AGENT, NULL, environ, &start, &err);
		if (r == 0) {
			r = rd_env_secret_entries(&start, &secrets);
			rd_env_result_free(&start);
			if (r < 0)
				rd_error_set(&err, -r, "out of memory");
		}
		if (r < 0) {
			rd_cli_print_error(&err);
			goto out;
		}
	}
	struct rd_env_secrets known = {(const char *const *)secrets.v, secrets.n};
	if (rd_env_build_known(&cfg.env, &prof, agent ? RD_ENV_AGENT : RD_ENV_COMMAND, rule,
	                       environ, &known, &res, &err) < 0) {
		rd_cli_print_error(&err);
		fprintf(stderr, "runnerd: the %s would not start: %s\n",
		        agent ? "agent" : "command", strerror(err.err));
		goto out;
	}
	qsort(res.verdicts, res.n_verdicts, sizeof(*res.verdicts), cmp_verdict);
	if (json)
		ret = print_json(&prof, &cfg, agent, cmd, rule, &res) < 0;
	else {
		print_text(&prof, &cfg, agent, cmd, rule, &res);
		ret = 0;
	}
out:
	rd_env_result_free(&res);
	rd_strv_free(&secrets);
	rd_profile_free(&prof);
	rd_config_free(&cfg);
	return ret;
}
