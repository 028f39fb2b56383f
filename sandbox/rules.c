#include "rules.h"
#include "glob.h"

#include <stdbool.h>
#include <string.h>

static const char *base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

static bool path_matches(const struct rd_rule *r, const struct rd_exec_subject *x)
{
	const char *pat = r->match_path;
	if (!pat)
		return true;
	if (strchr(pat, '/'))
		return (x->resolved && rd_glob_match(pat, x->resolved)) ||
		       (x->path && rd_glob_match(pat, x->path));
	if ((x->resolved && rd_glob_match(pat, base(x->resolved))) ||
	    (x->path && rd_glob_match(pat, base(x->path))))
		return true;
	/* argv[0] can only make a rule stricter, never grant one. */
	return r->action != RD_ACTION_ALLOW && x->argc > 0 && x->argv[0] &&
	       rd_glob_match(pat, base(x->argv[0]));
}

static bool args_match(const struct rd_rule *r, const struct rd_exec_subject *x)
{
	if (!r->has_match_args)
		return true;
	size_t n = r->match_args.n, have = x->argc > 0 ? x->argc - 1 : 0;
	bool rest = n > 0 && strcmp(r->match_args.v[n - 1], "**") == 0;
	size_t fixed = rest ? n - 1 : n;
	if (rest ? have < fixed : have != fixed)
		return false;
	for (size_t i = 0; i < fixed; i++)
		if (!rd_glob_match(r->match_args.v[i], x->argv[i + 1]))
			return false;
	return true;
}

const struct rd_rule *rd_rule_match(const struct rd_profile *prof, const struct rd_exec_subject *x)
{
	for (size_t i = 0; i < prof->n_rules; i++) {
		const struct rd_rule *r = &prof->rules[i];
		if (path_matches(r, x) && args_match(r, x))
			return r;
	}
	return NULL;
}
