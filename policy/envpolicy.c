#include "policy/envpolicy.h"
#include "policy/glob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const internal_names[] = {
    "RUNNERD_SESSION", "RUNNERD_PROFILE",  "JRUN_PROJECT_ID", "JRUN_TASK_ID",     "JRUN_ID",
    "JRUN_PARENT_ID",  "JRUN_MESSAGE_BUS", "JRUN_RUN_FOLDER", "JRUN_TASK_FOLDER",
};

bool rd_env_is_internal(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(internal_names); i++)
		if (strlen(internal_names[i]) == len && memcmp(internal_names[i], name, len) == 0)
			return true;
	return false;
}

const char *rd_env_reason_str(enum rd_env_reason r)
{
	switch (r) {
	case RD_ENV_BASE:
		return "base";
	case RD_ENV_PROFILE:
		return "profile";
	case RD_ENV_RULE:
		return "rule";
	case RD_ENV_EXTRA:
		return "extra_env";
	case RD_ENV_INTERNAL:
		return "internal";
	case RD_ENV_DENIED_SECRET:
		return "denied:secret-pattern";
	case RD_ENV_DENIED_HARD:
		return "denied:hard";
	case RD_ENV_DENIED_PROFILE:
		return "denied:profile";
	case RD_ENV_DENIED_RULE:
		return "denied:rule";
	case RD_ENV_NOT_ALLOWED:
		return "not-allowed";
	case RD_ENV_DUPLICATE:
		return "duplicate";
	case RD_ENV_MALFORMED:
		return "malformed";
	}
	return "?";
}

/* An allow list of the level, with the reason it gives; in precedence order. */
struct allow_src {
	const struct rd_strv *list;
	enum rd_env_reason reason;
};

static const char *match_any(const struct rd_strv *l, const char *name)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (rd_glob_match(l->v[i], name))
			return l->v[i];
	return NULL;
}

static const char *match_exact(const struct rd_strv *l, const char *name)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (!rd_glob_is_pattern(l->v[i]) && strcmp(l->v[i], name) == 0)
			return l->v[i];
	return NULL;
}

static const char *match_glob(const struct rd_strv *l, const char *name)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (rd_glob_is_pattern(l->v[i]) && rd_glob_match(l->v[i], name))
			return l->v[i];
	return NULL;
}

struct level_lists {
	struct allow_src allow[4];
	size_t n_allow;
	const struct rd_strv *rule_deny;
	const struct rd_strv *profile_deny;
};

static void level_lists(const struct rd_env_config *cfg, const struct rd_profile *prof,
                        enum rd_env_level level, const struct rd_rule *rule, struct level_lists *l)
{
	memset(l, 0, sizeof(*l));
	if (level == RD_ENV_COMMAND) {
		if (rule)
			l->allow[l->n_allow++] = (struct allow_src){&rule->env_allow, RD_ENV_RULE};
		l->allow[l->n_allow++] =
		    (struct allow_src){&prof->commands_env_allow, RD_ENV_PROFILE};
		l->rule_deny = rule ? &rule->env_deny : NULL;
		l->profile_deny = &prof->commands_env_deny;
	} else {
		l->allow[l->n_allow++] = (struct allow_src){&prof->agent_env_allow, RD_ENV_PROFILE};
		l->allow[l->n_allow++] = (struct allow_src){&cfg->extra_env, RD_ENV_EXTRA};
		l->allow[l->n_allow++] = (struct allow_src){&prof->agent_extra_env, RD_ENV_EXTRA};
	}
	l->allow[l->n_allow++] = (struct allow_src){&cfg->base_allow, RD_ENV_BASE};
}

static void decide(const struct rd_env_config *cfg, const struct level_lists *l, const char *name,
                   struct rd_env_verdict *v)
{
	const char *p;
	v->passed = false;
	if ((p = match_any(&cfg->hard_deny, name))) {
		v->reason = RD_ENV_DENIED_HARD;
	} else if (rd_env_is_internal(name, strlen(name))) {
		v->reason = RD_ENV_INTERNAL;
		v->passed = true;
	} else if ((p = match_any(l->rule_deny, name))) {
		v->reason = RD_ENV_DENIED_RULE;
	} else if ((p = match_any(l->profile_deny, name))) {
		v->reason = RD_ENV_DENIED_PROFILE;
	} else {
		/* An exact name is an operator's deliberate grant: it alone beats the secret
		 * patterns. A glob such as CLAUDE_CODE_* must not sweep in *_TOKEN names. */
		for (size_t i = 0; i < l->n_allow; i++)
			if ((p = match_exact(l->allow[i].list, name))) {
				v->reason = l->allow[i].reason;
				v->passed = true;
				v->pattern = p;
				return;
			}
		if ((p = match_any(&cfg->deny, name))) {
			v->reason = RD_ENV_DENIED_SECRET;
		} else {
			v->reason = RD_ENV_NOT_ALLOWED;
			for (size_t i = 0; i < l->n_allow; i++)
				if ((p = match_glob(l->allow[i].list, name))) {
					v->reason = l->allow[i].reason;
					v->passed = true;
					break;
				}
		}
	}
	v->pattern = p;
}

/* Names seen so far, for first-wins duplicate stripping without a quadratic scan: an
 * open-addressed set of (entry, name length), sized to twice the input. */
struct name_set {
	const char **slot;
	size_t *len;
	size_t cap;
};

static uint64_t hash_name(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* Returns true if the name was already there, else inserts it. */
static bool name_set_add(struct name_set *s, const char *name, size_t len)
{
	size_t i = hash_name(name, len) & (s->cap - 1);
	while (s->slot[i]) {
		if (s->len[i] == len && memcmp(s->slot[i], name, len) == 0)
			return true;
		i = (i + 1) & (s->cap - 1);
	}
	s->slot[i] = name;
	s->len[i] = len;
	return false;
}

void rd_env_result_free(struct rd_env_result *r)
{
	free(r->envp);
	free(r->verdicts);
	memset(r, 0, sizeof(*r));
}

int rd_env_build(const struct rd_env_config *cfg, const struct rd_profile *prof,
                 enum rd_env_level level, const struct rd_rule *rule, char *const *envp,
                 struct rd_env_result *out, struct rd_error *err)
{
	memset(out, 0, sizeof(*out));
	if (level == RD_ENV_AGENT)
		rule = NULL;

	size_t n_in = 0;
	while (envp && envp[n_in])
		n_in++;

	struct name_set seen = {0};
	seen.cap = 16;
	while (seen.cap < 2 * n_in)
		seen.cap *= 2;
	_cleanup_free_ const char **slots = seen.slot = calloc(seen.cap, sizeof(*seen.slot));
	_cleanup_free_ size_t *lens = seen.len = calloc(seen.cap, sizeof(*seen.len));
	_cleanup_free_ struct rd_env_verdict *verdicts = calloc(n_in + 1, sizeof(*verdicts));
	_cleanup_free_ char **outv = calloc(n_in + 1, sizeof(*outv));
	char small[256];
	_cleanup_free_ char *big = NULL;
	if (!slots || !lens || !verdicts || !outv)
		return rd_error_set(err, ENOMEM, "out of memory building the environment");

	struct level_lists lists;
	level_lists(cfg, prof, level, rule, &lists);

	size_t n_out = 0, bytes = 0;
	for (size_t i = 0; i < n_in; i++) {
		const char *entry = envp[i];
		struct rd_env_verdict *v = &verdicts[i];
		const char *eq = strchr(entry, '=');
		v->entry = entry;
		if (!eq || eq == entry) {
			v->reason = RD_ENV_MALFORMED;
			continue;
		}
		size_t len = (size_t)(eq - entry);
		v->name_len = len;
		if (name_set_add(&seen, entry, len)) {
			v->reason = RD_ENV_DUPLICATE;
			continue;
		}

		/* fnmatch wants a terminated name; most fit the stack buffer. */
		char *name = small;
		if (len >= sizeof(small)) {
			free(big);
			name = big = strndup(entry, len);
			if (!name)
				return rd_error_set(err, ENOMEM,
				                    "out of memory building the environment");
		} else {
			memcpy(small, entry, len);
			small[len] = '\0';
		}
		decide(cfg, &lists, name, v);
		if (v->passed) {
			outv[n_out++] = (char *)entry;
			bytes += strlen(entry) + 1;
		}
	}

	/* A rule's own limit replaces the config's; the message says whose limit it was. */
	bool rule_keys = rule && rule->max_keys, rule_bytes = rule && rule->max_bytes;
	size_t max_keys = rule_keys ? rule->max_keys : cfg->max_keys;
	size_t max_bytes = rule_bytes ? rule->max_bytes : cfg->max_bytes;
	if (max_keys && n_out > max_keys)
		return rd_error_set(err, E2BIG,
		                    "environment has %zu variables, over max_keys %zu (%s)", n_out,
		                    max_keys, rule_keys ? "rule" : "runner.json env");
	if (max_bytes && bytes > max_bytes)
		return rd_error_set(err, E2BIG, "environment is %zu bytes, over max_bytes %zu (%s)",
		                    bytes, max_bytes, rule_bytes ? "rule" : "runner.json env");

	out->envp = steal_pointer(&outv);
	out->n_env = n_out;
	out->bytes = bytes;
	out->verdicts = steal_pointer(&verdicts);
	out->n_verdicts = n_in;
	return 0;
}
