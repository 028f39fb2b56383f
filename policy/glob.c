#include "policy/glob.h"
#include "lib/strv.h"
#include "lib/util.h"

#include <ctype.h>
#include <fnmatch.h>
#include <string.h>

bool rd_glob_is_pattern(const char *pat)
{
	return strpbrk(pat, "*?[\\") != NULL;
}

static const char *const char_classes[] = {
    "alnum", "alpha", "blank", "cntrl", "digit", "graph",
    "lower", "print", "punct", "space", "upper", "xdigit",
};

/* Checks one bracket expression starting after '['; returns the index just past ']' or 0. */
static size_t check_bracket(const char *p, const char **why)
{
	size_t i = 0;
	if (p[i] == '!' || p[i] == '^')
		i++;
	if (p[i] == ']')
		i++; /* a ']' first is a literal */
	for (;;) {
		if (p[i] == '\0') {
			*why = "has a '[' without a closing ']'";
			return 0;
		}
		if (p[i] == ']')
			return i + 1;
		if (p[i] == '[' && (p[i + 1] == '=' || p[i + 1] == '.')) {
			*why = "uses an equivalence class or collating symbol ([= or [.), which is "
			       "not "
			       "supported";
			return 0;
		}
		if (p[i] == '[' && p[i + 1] == ':') {
			const char *end = strstr(p + i + 2, ":]");
			if (!end) {
				*why = "has a '[:' character class without ':]'";
				return 0;
			}
			size_t len = (size_t)(end - (p + i + 2));
			bool known = false;
			for (size_t c = 0; c < ARRAY_SIZE(char_classes); c++)
				if (strlen(char_classes[c]) == len &&
				    strncmp(char_classes[c], p + i + 2, len) == 0)
					known = true;
			if (!known) {
				*why =
				    "names an unknown character class (known: [:alnum:] [:alpha:] "
				    "[:digit:] [:lower:] [:upper:] [:space:] ...)";
				return 0;
			}
			i = (size_t)(end - p) + 2;
			continue;
		}
		if (p[i] == '\\') {
			if (p[i + 1] == '\0') {
				*why = "ends with an unescaped backslash";
				return 0;
			}
			i += 2;
			continue;
		}
		i++;
	}
}

size_t rd_mask_var_len(const char *path)
{
	if (strncmp(path, "${", 2) != 0 || !(isalpha((unsigned char)path[2]) || path[2] == '_'))
		return 0;
	size_t i = 3;
	while (isalnum((unsigned char)path[i]) || path[i] == '_')
		i++;
	return path[i] == '}' ? i + 1 : 0;
}

const char *rd_glob_check(const char *pat, enum rd_glob_kind kind)
{
	if (pat[0] == '\0')
		return "is empty";
	if (kind == RD_GLOB_ENV_NAME && strchr(pat, '='))
		return "contains '=', which cannot be part of an environment variable name";
	if (kind == RD_PROTECT_PATH) {
		size_t n = strlen(pat);
		if (n < 2 || pat[n - 1] != '/' || pat[n - 2] == '/')
			return rd_glob_check(pat, RD_MASK_PATH);
		_cleanup_free_ char *dir = strndup(pat, n - 1);
		return dir ? rd_glob_check(dir, RD_MASK_PATH) : "is too long";
	}
	if (kind == RD_MASK_PATH) {
		/* "${NAME}" or "${NAME}/...": the path (or ':'-separated paths) in the variable
		 * NAME of the environment runnerd started with (rd_mask_expand_env). */
		size_t var = rd_mask_var_len(pat);
		if (strncmp(pat, "${", 2) == 0 && !var)
			return "starts with \"${\" but not with a variable's name and \"}\"";
		if (!var && strncmp(pat, "{workspace}", 11) == 0)
			var = 11;
		if (var && !pat[var])
			return NULL;
		if (var && pat[var] != '/')
			return "has something other than \"/\" after its \"${NAME}\" or "
			       "\"{workspace}\"";
		if (!var && pat[0] != '/' && strncmp(pat, "~/", 2) != 0)
			return "must be an absolute path, or start with \"~/\", \"${NAME}\" or "
			       "\"{workspace}\"";
		/* One spelling per path: masks are compared as strings (pins, the spare's preset).
		 */
		const char *p = var ? pat + var + 1 : pat + (pat[0] == '/' ? 1 : 2);
		if (!*p)
			return var ? "ends with \"/\"" : "names a whole root or home directory";
		if (strpbrk(p, "*?["))
			return "is a glob: mask paths are exact paths";
		for (const char *c = p;;) {
			size_t len = strcspn(c, "/");
			if (len == 0)
				return c[0] ? "has an empty component (\"//\")" : "ends with \"/\"";
			if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
				return "must not contain \".\" or \"..\" components";
			if (!c[len])
				return NULL;
			c += len + 1;
		}
	}
	for (size_t i = 0; pat[i];) {
		const char *why = NULL;
		switch (pat[i]) {
		case '\\':
			if (pat[i + 1] == '\0')
				return "ends with an unescaped backslash";
			i += 2;
			break;
		case '[': {
			size_t n = check_bracket(pat + i + 1, &why);
			if (n == 0)
				return why;
			i += 1 + n;
			break;
		}
		default:
			i++;
		}
	}
	return NULL;
}

bool rd_glob_match(const char *pat, const char *s)
{
	return fnmatch(pat, s, 0) == 0;
}

const char *rd_glob_match_any(const struct rd_strv *l, const char *s)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (rd_glob_match(l->v[i], s))
			return l->v[i];
	return NULL;
}
