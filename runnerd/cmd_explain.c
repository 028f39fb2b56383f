/* runnerd explain: apply a profile to the current environment and show, for every name, whether
 * it passes and why. Names only: a value is never printed, not even a fragment of one. */
#include "agent_path.h"
#include "cli.h"
#include "envpolicy.h"
#include "rules.h"

#include <getopt.h>
#include <jansson.h>
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
	}
	size_t passed = 0;
	for (size_t i = 0; i < res->n_verdicts; i++) {
		const struct rd_env_verdict *v = &res->verdicts[i];
		passed += v->passed;
		if (v->name_len)
			printf("%-9s %-36.*s %-22s %s\n", v->passed ? "passed" : "stripped",
			       (int)v->name_len, v->entry, rd_env_reason_str(v->reason),
			       v->pattern ? v->pattern : "");
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
	const struct rd_rule *rule = NULL;
	_cleanup_free_ char *where = NULL, *resolved = NULL;
	int ret = 1;
	if (rd_cli_load_config(cli, &cfg) < 0)
		return 1;
	if (rd_profile_load(&cfg, cli->profile, &prof, &err) < 0) {
		rd_cli_print_error(&err);
		goto out;
	}
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
	if (rd_env_build(&cfg.env, &prof, agent ? RD_ENV_AGENT : RD_ENV_COMMAND, rule, environ,
	                 &res, &err) < 0) {
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
	rd_profile_free(&prof);
	rd_config_free(&cfg);
	return ret;
}
