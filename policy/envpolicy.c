#include "policy/envpolicy.h"
#include "policy/glob.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	case RD_ENV_DENIED_SECRET_VALUE:
		return "denied:secret-value";
	case RD_ENV_DENIED_GRANT:
		return "denied:granted-command";
	case RD_ENV_DENIED_PROXY:
		return "denied:proxy-url";
	}
	return "?";
}

/* An allow list of the level, with the reason it gives; in precedence order. */
struct allow_src {
	const struct rd_strv *list;
	enum rd_env_reason reason;
};

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
	/* env.hard_deny applies: to the agent, and to a command a rule grants a secret. It stops
	 * code injection into a process that holds secrets; a command that holds none gains
	 * nothing from it that its own shell line could not do. */
	bool hard;
};

static void level_lists(const struct rd_env_config *cfg, const struct rd_profile *prof,
                        enum rd_env_level level, const struct rd_rule *rule, struct level_lists *l)
{
	memset(l, 0, sizeof(*l));
	l->hard = level != RD_ENV_COMMAND || (rule && rule->grants_secret);
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
	if (l->hard && (p = rd_glob_match_any(&cfg->hard_deny, name))) {
		v->reason = RD_ENV_DENIED_HARD;
	} else if (rd_env_is_internal(name, strlen(name))) {
		v->reason = RD_ENV_INTERNAL;
		v->passed = true;
	} else if ((p = rd_glob_match_any(l->rule_deny, name))) {
		v->reason = RD_ENV_DENIED_RULE;
	} else if ((p = rd_glob_match_any(l->profile_deny, name))) {
		v->reason = RD_ENV_DENIED_PROFILE;
	} else {
		/* An exact name is an operator's deliberate grant: it alone beats the secret
		 * patterns. A glob such as CLAUDE_CODE_* must not sweep in *_TOKEN names. */
		for (size_t i = 0; i < l->n_allow; i++)
			if ((p = match_exact(l->allow[i].list, name))) {
				v->reason = l->allow[i].reason;
				v->passed = true;
				v->pattern = p;
				v->secret_granted = rd_glob_match_any(&cfg->deny, name) != NULL;
				return;
			}
		if ((p = rd_glob_match_any(&cfg->deny, name))) {
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

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
}

void rd_env_result_free(struct rd_env_result *r)
{
	free_strs(r->owned, r->n_owned);
	free(r->owned);
	free(r->envp);
	free(r->verdicts);
	memset(r, 0, sizeof(*r));
}

static bool secret_reason(enum rd_env_reason r)
{
	return r == RD_ENV_DENIED_SECRET || r == RD_ENV_DENIED_PROFILE || r == RD_ENV_DENIED_RULE;
}

static const char *value_of(const char *entry)
{
	const char *eq = strchr(entry, '=');
	return eq ? eq + 1 : "";
}

/* The entry (of the block's secrets, then known's) whose value v holds; NULL if none. */
static const char *holds_secret(const char *v, const struct rd_env_verdict *vs, size_t n,
                                const struct rd_env_secrets *known)
{
	size_t vlen = strlen(v);
	for (size_t i = 0; i < n + (known ? known->n : 0); i++) {
		const char *e = i < n ? vs[i].entry : known->entries[i - n];
		if (i < n && (vs[i].passed || !secret_reason(vs[i].reason)))
			continue;
		const char *s = value_of(e);
		size_t slen = strlen(s);
		if (slen >= RD_ENV_SECRET_VALUE_MIN && slen <= vlen && memmem(v, vlen, s, slen))
			return e;
	}
	return NULL;
}

/* v stripped, for reason, by no list entry. */
static void strip(struct rd_env_verdict *v, enum rd_env_reason reason)
{
	v->passed = false;
	v->reason = reason;
	v->pattern = NULL;
}

static bool proxy_name(const char *entry, size_t len)
{
	static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == len && strncasecmp(names[i], entry, len) == 0)
			return true;
	return false;
}

/* entry ("NAME=scheme://user:password@host..."), without "user:password@", in *bare; NULL if
 * the URL has none. -1 where an '@' lies past the host (`http://u:p/w@proxy:3128`, a password
 * with a '/' unescaped): curl and Go take that '@' as part of the path, so whatever is cut
 * there may still be a password, and no proxy works with it: the caller strips the variable.
 * -ENOMEM on ENOMEM. */
static int without_userinfo(const char *entry, size_t name_len, char **bare)
{
	const char *v = entry + name_len + 1, *auth = strstr(v, "://");
	auth = auth ? auth + 3 : v;
	size_t host_len = strcspn(auth, "/?#");
	*bare = NULL;
	if (strchr(auth + host_len, '@'))
		return -1;
	const char *at = memrchr(auth, '@', host_len);
	if (!at)
		return 0;
	size_t head = (size_t)(auth - entry), tail = strlen(at + 1);
	char *out = malloc(head + tail + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, entry, head);
	memcpy(out + head, at + 1, tail + 1);
	*bare = out;
	return 0;
}

int rd_env_pin_start(struct rd_env_result *r, const struct rd_strv *names, char *const *start)
{
	size_t k = 0, n = 0, bytes = 0;
	for (size_t i = 0; i < r->n_verdicts; i++) {
		struct rd_env_verdict *v = &r->verdicts[i];
		if (!v->passed)
			continue;
		char *e = r->envp[k++];
		/* The name, however long: one that does not fit in memory is not passed. */
		char small[256], *big = NULL;
		const char *name = small;
		if (v->name_len >= sizeof(small)) {
			name = big = strndup(v->entry, v->name_len);
		} else {
			memcpy(small, v->entry, v->name_len);
			small[v->name_len] = '\0';
		}
		bool oom = !name, pin = oom || rd_glob_match_any(names, name);
		free(big);
		if (pin) {
			char *was = NULL;
			for (size_t s = 0; start && !oom && start[s] && !was; s++)
				if (strncmp(start[s], v->entry, v->name_len) == 0 &&
				    start[s][v->name_len] == '=')
					was = start[s];
			if (!was) {
				strip(v, RD_ENV_DENIED_GRANT);
				continue;
			}
			/* A proxy's start value as commands get it: without its user and password
			 * (the agent's block keeps them). */
			if (proxy_name(was, v->name_len)) {
				char *bare;
				int cut = without_userinfo(was, v->name_len, &bare);
				if (cut == -1) {
					strip(v, RD_ENV_DENIED_PROXY);
					continue;
				}
				char **owned =
				    bare ? realloc(r->owned, (r->n_owned + 1) * sizeof(char *))
				         : NULL;
				if (cut < 0 || (bare && !owned)) {
					free(bare);
					return -ENOMEM;
				}
				if (bare) {
					r->owned = owned;
					r->owned[r->n_owned++] = was = bare;
				}
			}
			if (strcmp(was, e) != 0) {
				e = was;
				v->pinned = true;
			}
		}
		r->envp[n++] = e;
		bytes += strlen(e) + 1;
	}
	r->envp[n] = NULL;
	r->n_env = n;
	r->bytes = bytes;
	return 0;
}

int rd_env_put(struct rd_env_result *r, const char *entry)
{
	size_t name = strcspn(entry, "=") + 1;
	char **envp = realloc(r->envp, (r->n_env + 2) * sizeof(char *));
	if (!envp)
		return -ENOMEM;
	r->envp = envp;
	char **owned = realloc(r->owned, (r->n_owned + 1) * sizeof(char *));
	if (!owned)
		return -ENOMEM;
	r->owned = owned;
	char *copy = strdup(entry);
	if (!copy)
		return -ENOMEM;
	r->owned[r->n_owned++] = copy;
	size_t n = 0;
	for (size_t i = 0; i < r->n_env; i++) {
		if (strncmp(r->envp[i], entry, name) == 0) {
			r->bytes -= strlen(r->envp[i]) + 1;
			continue;
		}
		r->envp[n++] = r->envp[i];
	}
	r->envp[n++] = copy;
	r->envp[n] = NULL;
	r->n_env = n;
	r->bytes += strlen(copy) + 1;
	return 0;
}

void rd_env_drop_prefix(struct rd_env_result *r, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);
	for (size_t i = 0; i < r->n_env; i++) {
		if (strncmp(r->envp[i], prefix, len) == 0) {
			r->bytes -= strlen(r->envp[i]) + 1;
			continue;
		}
		r->envp[n++] = r->envp[i];
	}
	if (r->envp)
		r->envp[n] = NULL;
	r->n_env = n;
}

int rd_env_secret_entries(const struct rd_env_result *r, struct rd_strv *out)
{
	*out = (struct rd_strv){0};
	out->v = calloc(r->n_verdicts + 1, sizeof(char *));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_verdicts; i++) {
		const struct rd_env_verdict *v = &r->verdicts[i];
		if (v->passed || !secret_reason(v->reason) ||
		    strlen(value_of(v->entry)) < RD_ENV_SECRET_VALUE_MIN)
			continue;
		if (!(out->v[out->n++] = strdup(v->entry))) {
			rd_strv_free(out);
			return -ENOMEM;
		}
	}
	return 0;
}

int rd_env_build(const struct rd_env_config *cfg, const struct rd_profile *prof,
                 enum rd_env_level level, const struct rd_rule *rule, char *const *envp,
                 struct rd_env_result *out, struct rd_error *err)
{
	return rd_env_build_known(cfg, prof, level, rule, envp, NULL, out, err);
}

int rd_env_build_known(const struct rd_env_config *cfg, const struct rd_profile *prof,
                       enum rd_env_level level, const struct rd_rule *rule, char *const *envp,
                       const struct rd_env_secrets *known, struct rd_env_result *out,
                       struct rd_error *err)
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
	}

	/* Values, once every name is decided: what a variable holds, under whatever name. */
	_cleanup_free_ char **owned = calloc(n_in + 1, sizeof(*owned));
	size_t n_owned = 0;
	bool oom = !owned;
	for (size_t i = 0; !oom && i < n_in; i++) {
		struct rd_env_verdict *v = &verdicts[i];
		if (!v->passed)
			continue;
		/* A deliberate grant of a secret by exact name stands (GH_TOKEN granted to gh,
		 * with the same value as GITHUB_TOKEN, stripped); so do runnerd's own variables. An
		 * exact name that is no secret's (GIT_EDITOR, AI_AGENT) is checked as any other:
		 * else the agent's key under it reached every command. */
		bool granted =
		    (v->reason == RD_ENV_PROFILE || v->reason == RD_ENV_RULE) && v->secret_granted;
		const char *holds = granted || v->reason == RD_ENV_INTERNAL
		                        ? NULL
		                        : holds_secret(value_of(v->entry), verdicts, n_in, known);
		if (holds) {
			strip(v, RD_ENV_DENIED_SECRET_VALUE);
			v->holds = holds;
			v->holds_len = strcspn(holds, "=");
			continue;
		}
		char *entry = (char *)v->entry;
		if (level == RD_ENV_COMMAND && proxy_name(entry, v->name_len)) {
			char *bare;
			int cut = without_userinfo(entry, v->name_len, &bare);
			if (cut == -1) {
				strip(v, RD_ENV_DENIED_PROXY);
				continue;
			}
			oom = oom || cut < 0;
			if (bare) {
				entry = owned[n_owned++] = bare;
				v->rewritten = true;
			}
		}
		outv[n_out++] = entry;
		bytes += strlen(entry) + 1;
	}
	if (oom) {
		free_strs(owned, n_owned);
		return rd_error_set(err, ENOMEM, "out of memory building the environment");
	}

	/* A rule's own limit replaces the config's; the message says whose limit it was. */
	bool rule_keys = rule && rule->max_keys, rule_bytes = rule && rule->max_bytes;
	size_t max_keys = rule_keys ? rule->max_keys : cfg->max_keys;
	size_t max_bytes = rule_bytes ? rule->max_bytes : cfg->max_bytes;
	if ((max_keys && n_out > max_keys) || (max_bytes && bytes > max_bytes))
		free_strs(owned, n_owned);
	if (max_keys && n_out > max_keys)
		return rd_error_set(err, E2BIG,
		                    "environment has %zu variables, over max_keys %zu (%s)", n_out,
		                    max_keys, rule_keys ? "rule" : "runner.json env");
	if (max_bytes && bytes > max_bytes)
		return rd_error_set(err, E2BIG, "environment is %zu bytes, over max_bytes %zu (%s)",
		                    bytes, max_bytes, rule_bytes ? "rule" : "runner.json env");

	out->owned = steal_pointer(&owned);
	out->n_owned = n_owned;
	out->envp = steal_pointer(&outv);
	out->n_env = n_out;
	out->bytes = bytes;
	out->verdicts = steal_pointer(&verdicts);
	out->n_verdicts = n_in;
	return 0;
}
