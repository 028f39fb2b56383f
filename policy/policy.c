#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

void rd_rule_free(struct rd_rule *r)
{
	free(r->match_path);
	rd_strv_free(&r->match_args);
	rd_strv_free(&r->env_allow);
	rd_strv_free(&r->env_deny);
	rd_strv_free(&r->sha256);
	rd_box_free(&r->box);
	free(r->description);
	memset(r, 0, sizeof(*r));
}

void rd_profile_free(struct rd_profile *p)
{
	free(p->name);
	free(p->path);
	free(p->description);
	rd_strv_free(&p->agent_env_allow);
	rd_strv_free(&p->agent_extra_env);
	rd_strv_free(&p->agent_env_files);
	rd_strv_free(&p->agent_env_guard);
	rd_strv_free(&p->agent_programs);
	rd_strv_free(&p->agent_interp_opts);
	rd_strv_free(&p->agent_self_exec);
	rd_strv_free(&p->commands_env_allow);
	rd_strv_free(&p->commands_env_deny);
	rd_box_free(&p->commands_box);
	for (size_t i = 0; i < p->n_rules; i++)
		rd_rule_free(&p->rules[i]);
	free(p->rules);
	memset(p, 0, sizeof(*p));
}

void rd_config_free(struct rd_config *c)
{
	free(c->path);
	free(c->profiles_dir);
	free(c->audit_path);
	free(c->workspace);
	rd_strv_free(&c->env.base_allow);
	rd_strv_free(&c->env.deny);
	rd_strv_free(&c->env.hard_deny);
	rd_strv_free(&c->env.extra_env);
	rd_box_free(&c->box);
	memset(c, 0, sizeof(*c));
}

const char *rd_action_str(enum rd_action a)
{
	switch (a) {
	case RD_ACTION_ALLOW:
		return "allow";
	case RD_ACTION_DENY:
		return "deny";
	case RD_ACTION_ASK:
		return "ask";
	}
	return "?";
}
