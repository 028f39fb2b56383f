#include "policy/config.h"
#include "lib/file.h"
#include "lib/sha256.h"
#include "policy/glob.h"
#include "policy/jsonpos.h"
#include "policy/rules.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* jansson >= 2.9 ships json_decrefp for exactly this. */
#define _cleanup_json_ __attribute__((cleanup(json_decrefp)))

/* One file being read: where messages point and where they go. */
struct ctx {
	const char *file;
	struct rd_jsonpos pos;
	struct rd_error *err;
};

static void _printf_(4, 5)
    ctx_err(struct ctx *c, const char *ptr, bool at_key, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int line = 0, col = 0;
	if (rd_jsonpos_find(&c->pos, ptr, at_key, &line, &col))
		rd_error_set(c->err, EINVAL, "%s:%d:%d: %s", c->file, line, col, msg);
	else
		rd_error_set(c->err, EINVAL, "%s: %s", c->file, msg);
}

/* Display form of a pointer, jq-style: "/commands/rules/2/match" -> "commands.rules[2].match". */
static const char *show(const char *ptr, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = '\0';
	for (const char *p = ptr; *p == '/' && o + 1 < size;) {
		const char *tok = p + 1;
		size_t len = strcspn(tok, "/");
		bool num = len > 0 && strspn(tok, "0123456789") == len;
		int w;
		if (num)
			w = snprintf(buf + o, size - o, "[%.*s]", (int)len, tok);
		else
			w = snprintf(buf + o, size - o, "%s%.*s", o ? "." : "", (int)len, tok);
		if (w < 0 || (size_t)w >= size - o)
			break;
		o += (size_t)w;
		p = tok + len;
	}
	return buf;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return SIZE_MAX;
	size_t row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

static bool sub(char *buf, size_t size, const char *ptr, const char *key)
{
	snprintf(buf, size, "%s", ptr);
	return rd_jsonpos_append(buf, size, key) == 0;
}

static bool sub_index(char *buf, size_t size, const char *ptr, size_t i)
{
	snprintf(buf, size, "%s", ptr);
	return rd_jsonpos_append_index(buf, size, i) == 0;
}

/* Every key of obj must be in known (NULL-terminated). */
static void check_keys(struct ctx *c, json_t *obj, const char *ptr, const char *const *known)
{
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val)
	{
		bool ok = false;
		const char *best = NULL;
		size_t best_d = SIZE_MAX;
		for (size_t i = 0; known[i]; i++) {
			if (strcmp(known[i], key) == 0)
				ok = true;
			size_t d = edit_distance(known[i], key);
			if (d < best_d) {
				best_d = d;
				best = known[i];
			}
		}
		if (ok)
			continue;
		char kp[512], where[512];
		sub(kp, sizeof(kp), ptr, key);
		show(ptr, where, sizeof(where));
		char hint[128] = "";
		if (best && best_d <= 2 && best_d < strlen(key))
			snprintf(hint, sizeof(hint), " (did you mean \"%s\"?)", best);
		ctx_err(c, kp, true, "\"%s\" is not a known key%s%s%s", key, *where ? " in " : "",
		        where, hint);
	}
}

static const char *type_name(json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

/* Looks up obj[key]; a missing required key is an error at the object. */
static json_t *member(struct ctx *c, json_t *obj, const char *ptr, const char *key, bool required)
{
	json_t *v = json_object_get(obj, key);
	if (!v && required) {
		char where[512];
		show(ptr, where, sizeof(where));
		ctx_err(c, ptr, false, "missing required key \"%s\"%s%s", key, *where ? " in " : "",
		        where);
	}
	return v;
}

static void wrong_type(struct ctx *c, const char *vp, json_t *v, const char *want)
{
	char name[512];
	ctx_err(c, vp, false, "\"%s\" must be %s, not %s", show(vp, name, sizeof(name)), want,
	        type_name(v));
}

static json_t *get_object(struct ctx *c, json_t *obj, const char *ptr, const char *key,
                          bool required, char *vp, size_t vps)
{
	json_t *v = member(c, obj, ptr, key, required);
	sub(vp, vps, ptr, key);
	if (v && !json_is_object(v)) {
		wrong_type(c, vp, v, "an object");
		return NULL;
	}
	return v;
}

static int get_string(struct ctx *c, json_t *obj, const char *ptr, const char *key, bool required,
                      char **out)
{
	char vp[512];
	json_t *v = member(c, obj, ptr, key, required);
	if (!v)
		return required ? -EINVAL : 0;
	sub(vp, sizeof(vp), ptr, key);
	if (!json_is_string(v)) {
		wrong_type(c, vp, v, "a string");
		return -EINVAL;
	}
	free(*out);
	*out = strdup(json_string_value(v));
	return *out ? 0 : rd_error_set(c->err, ENOMEM, "out of memory");
}

/* A non-negative integer; positive when min is 1. */
static int get_size(struct ctx *c, json_t *obj, const char *ptr, const char *key, size_t min,
                    size_t *out)
{
	char vp[512], name[512];
	json_t *v = member(c, obj, ptr, key, false);
	if (!v)
		return 0;
	sub(vp, sizeof(vp), ptr, key);
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)min) {
		ctx_err(c, vp, false, "\"%s\" must be a %s integer", show(vp, name, sizeof(name)),
		        min ? "positive" : "non-negative");
		return -EINVAL;
	}
	*out = (size_t)json_integer_value(v);
	return 0;
}

/* An array of strings, each checked as a glob of the given kind. */
static int get_strv(struct ctx *c, json_t *obj, const char *ptr, const char *key, bool required,
                    enum rd_glob_kind kind, struct rd_strv *out)
{
	char vp[512], ep[512], name[512];
	json_t *v = member(c, obj, ptr, key, required);
	if (!v)
		return required ? -EINVAL : 0;
	sub(vp, sizeof(vp), ptr, key);
	if (!json_is_array(v)) {
		wrong_type(c, vp, v, "an array of strings");
		return -EINVAL;
	}
	size_t n = json_array_size(v);
	out->v = calloc(n + 1, sizeof(*out->v));
	if (!out->v)
		return rd_error_set(c->err, ENOMEM, "out of memory");
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);
		sub_index(ep, sizeof(ep), vp, i);
		if (!json_is_string(e)) {
			ctx_err(c, ep, false, "entries of \"%s\" must be strings, not %s",
			        show(vp, name, sizeof(name)), type_name(e));
			r = -EINVAL;
			continue;
		}
		const char *s = json_string_value(e);
		const char *why = rd_glob_check(s, kind);
		if (!why && kind == RD_GLOB_ARG && strcmp(s, "**") == 0 && i + 1 != n)
			why = "may only be the last element (it stands for all further arguments)";
		if (why) {
			ctx_err(c, ep, false, "\"%s\" entry \"%s\" %s",
			        show(vp, name, sizeof(name)), s, why);
			r = -EINVAL;
			continue;
		}
		if (!(out->v[out->n++] = strdup(s)))
			return rd_error_set(c->err, ENOMEM, "out of memory");
	}
	return r;
}

static int get_action(struct ctx *c, json_t *obj, const char *ptr, const char *key, bool allow_ask,
                      enum rd_action *out)
{
	_cleanup_free_ char *s = NULL;
	int r = get_string(c, obj, ptr, key, true, &s);
	if (r < 0)
		return r;
	if (strcmp(s, "allow") == 0)
		*out = RD_ACTION_ALLOW;
	else if (strcmp(s, "deny") == 0)
		*out = RD_ACTION_DENY;
	else if (allow_ask && strcmp(s, "ask") == 0)
		*out = RD_ACTION_ASK;
	else {
		char vp[512], name[512];
		sub(vp, sizeof(vp), ptr, key);
		ctx_err(c, vp, false, "\"%s\" must be %s, not \"%s\"", show(vp, name, sizeof(name)),
		        allow_ask ? "\"allow\", \"deny\" or \"ask\"" : "\"allow\" or \"deny\"", s);
		return -EINVAL;
	}
	return 0;
}

/* One of the key's words: *out is the word's index + 1 (left alone when the key is absent). */
static int get_word(struct ctx *c, json_t *obj, const char *ptr, const struct rd_box_key *key,
                    uint64_t *out)
{
	_cleanup_free_ char *v = NULL;
	if (!json_object_get(obj, key->name))
		return 0;
	int r = get_string(c, obj, ptr, key->name, false, &v);
	if (r < 0)
		return r;
	size_t n = 0;
	while (n < ARRAY_SIZE(key->words) && key->words[n])
		n++;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v, key->words[i]) == 0) {
			*out = i + 1;
			return 0;
		}
	char vp[512], name[512], choices[256] = "";
	size_t o = 0;
	for (size_t i = 0; i < n && o < sizeof(choices); i++)
		o += (size_t)snprintf(choices + o, sizeof(choices) - o, "%s\"%s\"",
		                      i == 0       ? ""
		                      : i + 1 == n ? " or "
		                                   : ", ",
		                      key->words[i]);
	sub(vp, sizeof(vp), ptr, key->name);
	ctx_err(c, vp, false, "\"%s\" must be %s, not \"%s\"", show(vp, name, sizeof(name)),
	        choices, v);
	return -EINVAL;
}

/* A positive number (of seconds, say), at most max (max_words says what that is); an error, not
 * a silent cut, above it. *out is left alone when the key is absent. */
static int get_bounded(struct ctx *c, json_t *obj, const char *ptr, const char *key, size_t max,
                       const char *max_words, uint64_t *out)
{
	size_t t = 0;
	int r = get_size(c, obj, ptr, key, 1, &t);
	if (r < 0 || !t)
		return r;
	if (t > max) {
		char vp[512], name[512];
		sub(vp, sizeof(vp), ptr, key);
		if (max_words)
			ctx_err(c, vp, false, "\"%s\" must be at most %zu (%s)",
			        show(vp, name, sizeof(name)), max, max_words);
		else
			ctx_err(c, vp, false, "\"%s\" must be at most %zu",
			        show(vp, name, sizeof(name)), max);
		return -EINVAL;
	}
	*out = t;
	return 0;
}

/* The known keys of an object at level (RD_IN_*) that also takes the sandbox keys: fixed (NULL-
 * terminated), then the sandbox keys of that level, a group ("rlimits") once, into out
 * (NULL-terminated). With group set: that group's keys only. */
static void box_names(const char *const *fixed, unsigned level, const char *group, const char **out)
{
	size_t n = 0;
	for (size_t i = 0; fixed && fixed[i]; i++)
		out[n++] = fixed[i];
	for (size_t k = 0; k < RD_BOX_NKEYS; k++) {
		const struct rd_box_key *key = &rd_box_keys[k];
		if (!(key->where & level))
			continue;
		const char *name =
		    group        ? (key->group && strcmp(key->group, group) == 0 ? key->name : NULL)
		    : key->group ? key->group
		                 : key->name;
		bool seen = false;
		for (size_t i = 0; name && i < n; i++)
			seen = seen || strcmp(out[i], name) == 0;
		if (name && !seen)
			out[n++] = name;
	}
	out[n] = NULL;
}

/* Room for box_names: the fixed keys of any object and every sandbox key. */
#define KNOWN_MAX (16 + RD_BOX_NKEYS)

/* Every key of obj is one of fixed or a sandbox key of this level. */
static void check_box_keys(struct ctx *c, json_t *obj, const char *ptr, const char *const *fixed,
                           unsigned level)
{
	const char *known[KNOWN_MAX + 1];
	box_names(fixed, level, NULL, known);
	check_keys(c, obj, ptr, known);
}

/* The sandbox keys of one level (RD_IN_*), by the table (policy/box.h). */
static void get_box(struct ctx *c, json_t *obj, const char *ptr, unsigned level, struct rd_box *b)
{
	const char *group = NULL;
	json_t *gobj = NULL;
	char gp[512];
	for (size_t k = 0; k < RD_BOX_NKEYS; k++) {
		const struct rd_box_key *key = &rd_box_keys[k];
		if (!(key->where & level))
			continue;
		json_t *o = obj;
		const char *op = ptr;
		if (key->group) {
			if (!group || strcmp(group, key->group) != 0) {
				group = key->group;
				gobj = get_object(c, obj, ptr, group, false, gp, sizeof(gp));
				if (gobj) {
					const char *known[KNOWN_MAX + 1];
					box_names(NULL, level, group, known);
					check_keys(c, gobj, gp, known);
				}
			}
			if (!gobj)
				continue;
			o = gobj;
			op = gp;
		}
		size_t n = 0;
		switch (key->type) {
		case RD_BOX_WORD:
			(void)get_word(c, o, op, key, &b->v[k]);
			break;
		case RD_BOX_SECONDS:
		case RD_BOX_COUNT:
			(void)get_bounded(c, o, op, key->name, key->max, key->max_words, &b->v[k]);
			break;
		case RD_BOX_RLIMIT:
			if (get_size(c, o, op, key->name, 1, &n) == 0)
				b->v[k] = n;
			break;
		case RD_BOX_PATHS:
			(void)get_strv(c, o, op, key->name, false,
			               k == RD_BOX_PROTECT ? RD_PROTECT_PATH : RD_MASK_PATH,
			               &b->list[k]);
			/* Each command's plan carries a rule's write and protect lists (at most
			 * 4096 each, sandbox/plan.c): a list that long is a mistake. */
			if ((k == RD_BOX_WRITE || k == RD_BOX_PROTECT) && b->list[k].n > 1024) {
				char vp[512], name[512];
				sub(vp, sizeof(vp), op, key->name);
				ctx_err(c, vp, false, "\"%s\" has %zu paths: at most 1024",
				        show(vp, name, sizeof(name)), b->list[k].n);
			}
			/* A rule's sandbox is made after the view's kernel parts: its own roots
			 * must not reach them (the session's are made before). */
			for (size_t i = 0;
			     k == RD_BOX_WRITE && level == RD_IN_RULE && i < b->list[k].n; i++) {
				const char *why = rd_write_root_refused(b->list[k].v[i]);
				char vp[512], ep[512], name[512];
				if (!why)
					continue;
				sub(vp, sizeof(vp), op, key->name);
				sub_index(ep, sizeof(ep), vp, i);
				ctx_err(c, ep, false, "\"%s\" entry \"%s\": %s",
				        show(vp, name, sizeof(name)), b->list[k].v[i], why);
			}
			break;
		}
	}
}

static int check_version(struct ctx *c, json_t *root)
{
	json_t *v = member(c, root, "", "version", true);
	if (!v)
		return -EINVAL;
	if (!json_is_integer(v) || json_integer_value(v) != RD_CONFIG_VERSION) {
		if (json_is_integer(v))
			ctx_err(c, "/version", false,
			        "version %lld is not supported (this runnerd reads version %d)",
			        (long long)json_integer_value(v), RD_CONFIG_VERSION);
		else
			wrong_type(c, "/version", v, "the integer 1");
		return -EINVAL;
	}
	return 0;
}

/* Parse text into a JSON object and index its positions, and hash it (sha256, hex); errors
 * carry jansson's position. NULL on error, with nothing left to free. */
static json_t *parse_root(struct ctx *c, const char *text, size_t len, char *sha256)
{
	rd_sha256_hex(text, len, sha256);
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		rd_error_set(c->err, EINVAL, "%s:%d:%d: %s", c->file, je.line, je.column, je.text);
		return NULL;
	}
	int r = rd_jsonpos_index(text, len, &c->pos);
	if (r < 0) {
		/* jansson accepted what the scanner did not: keep going with no positions. */
		memset(&c->pos, 0, sizeof(c->pos));
	}
	if (!json_is_object(root)) {
		ctx_err(c, "", false, "the top level must be an object, not %s", type_name(root));
		json_decref(root);
		rd_jsonpos_free(&c->pos);
		return NULL;
	}
	return root;
}

static char *dir_of(const char *file)
{
	_cleanup_free_ char *copy = strdup(file);
	return copy ? strdup(dirname(copy)) : NULL;
}

/* path as given when absolute, else relative to base_dir. */
static char *resolve_relative(const char *base_dir, const char *path)
{
	char *out = NULL;
	if (path[0] == '/')
		return strdup(path);
	if (asprintf(&out, "%s/%s", base_dir, path) < 0)
		return NULL;
	return out;
}

int rd_config_parse(const char *file, const char *text, size_t len, struct rd_config *out,
                    struct rd_error *err)
{
	static const char *const root_keys[] = {"version", "profiles_dir", "env",
	                                        "audit",   "sandbox",      NULL};
	static const char *const env_keys[] = {"base_allow", "deny",      "hard_deny", "extra_env",
	                                       "max_keys",   "max_bytes", NULL};
	static const char *const audit_keys[] = {"path", "max_session_bytes", NULL};

	struct rd_error local = {0};
	memset(out, 0, sizeof(*out));
	struct ctx c = {.file = file, .err = err ? err : &local};
	_cleanup_json_ json_t *root = parse_root(&c, text, len, out->sha256);
	if (!root)
		return -EINVAL;
	err = c.err;
	size_t before = err->n;
	char ep[512], ap[512];

	check_keys(&c, root, "", root_keys);
	if (check_version(&c, root) == 0) {
		_cleanup_free_ char *dir = dir_of(file);
		_cleanup_free_ char *pdir = NULL;
		out->path = strdup(file);
		if (get_string(&c, root, "", "profiles_dir", false, &pdir) == 0)
			out->profiles_dir = resolve_relative(dir, pdir ? pdir : "profiles");

		json_t *env = get_object(&c, root, "", "env", true, ep, sizeof(ep));
		if (env) {
			check_keys(&c, env, ep, env_keys);
			(void)get_strv(&c, env, ep, "base_allow", true, RD_GLOB_ENV_NAME,
			               &out->env.base_allow);
			(void)get_strv(&c, env, ep, "deny", true, RD_GLOB_ENV_NAME, &out->env.deny);
			(void)get_strv(&c, env, ep, "hard_deny", true, RD_GLOB_ENV_NAME,
			               &out->env.hard_deny);
			(void)get_strv(&c, env, ep, "extra_env", false, RD_GLOB_ENV_NAME,
			               &out->env.extra_env);
			(void)get_size(&c, env, ep, "max_keys", 0, &out->env.max_keys);
			(void)get_size(&c, env, ep, "max_bytes", 0, &out->env.max_bytes);
		}
		char sbp[512];
		json_t *sb = get_object(&c, root, "", "sandbox", false, sbp, sizeof(sbp));
		if (sb) {
			static const char *const sandbox_keys[] = {"workspace", NULL};
			check_box_keys(&c, sb, sbp, sandbox_keys, RD_IN_SANDBOX);
			_cleanup_free_ char *ws = NULL;
			if (get_string(&c, sb, sbp, "workspace", false, &ws) == 0 && ws) {
				char wp[512];
				sub(wp, sizeof(wp), sbp, "workspace");
				if (ws[0] != '/' && strncmp(ws, "~/", 2) != 0)
					ctx_err(&c, wp, false,
					        "\"sandbox.workspace\" must be an absolute path or "
					        "start "
					        "with \"~/\"");
				else
					out->workspace = steal_pointer(&ws);
			}
			get_box(&c, sb, sbp, RD_IN_SANDBOX, &out->box);
		}
		json_t *audit = get_object(&c, root, "", "audit", false, ap, sizeof(ap));
		if (audit) {
			_cleanup_free_ char *apath = NULL;
			check_keys(&c, audit, ap, audit_keys);
			if (get_string(&c, audit, ap, "path", false, &apath) == 0 && apath) {
				if (!*apath)
					ctx_err(
					    &c, "/audit/path", false,
					    "\"audit.path\" must not be empty (leave it out for "
					    "no audit file)");
				else
					out->audit_path = resolve_relative(dir, apath);
			}
			(void)get_size(&c, audit, ap, "max_session_bytes", 1,
			               &out->audit_max_session_bytes);
		}
		if (err->n == before && (!out->path || !out->profiles_dir))
			rd_error_set(err, ENOMEM, "out of memory");
	}
	rd_jsonpos_free(&c.pos);
	if (err->n != before) {
		rd_config_free(out);
		return -err->err;
	}
	return 0;
}

/* A pin: the SHA-256 of a program, as sha256sum prints it; one string, or an array of them
 * (a program pinned to more than one version). */
static int get_pins(struct ctx *c, json_t *obj, const char *ptr, struct rd_strv *out)
{
	char vp[512], ep[512], name[512];
	json_t *v = member(c, obj, ptr, "sha256", false);
	if (!v)
		return 0;
	sub(vp, sizeof(vp), ptr, "sha256");
	if (!json_is_string(v) && !json_is_array(v)) {
		wrong_type(c, vp, v, "a string or an array of strings");
		return -EINVAL;
	}
	size_t n = json_is_array(v) ? json_array_size(v) : 1;
	if (json_is_array(v) && !n) {
		ctx_err(c, vp, false,
		        "\"%s\" is empty: give the program's SHA-256, as sha256sum prints it",
		        show(vp, name, sizeof(name)));
		return -EINVAL;
	}
	out->v = calloc(n + 1, sizeof(*out->v));
	if (!out->v)
		return rd_error_set(c->err, ENOMEM, "out of memory");
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
		if (json_is_array(v))
			sub_index(ep, sizeof(ep), vp, i);
		else
			snprintf(ep, sizeof(ep), "%s", vp);
		const char *s = json_is_string(e) ? json_string_value(e) : NULL;
		if (!s || strlen(s) != 64 || strspn(s, "0123456789abcdefABCDEF") != 64) {
			ctx_err(
			    c, ep, false,
			    "\"%s\" must be a SHA-256 in hex, 64 digits, as sha256sum prints it",
			    show(ep, name, sizeof(name)));
			r = -EINVAL;
			continue;
		}
		char *hex = strdup(s);
		if (!hex)
			return rd_error_set(c->err, ENOMEM, "out of memory");
		for (char *h = hex; *h; h++)
			*h = (char)tolower((unsigned char)*h);
		out->v[out->n++] = hex;
	}
	return r;
}

static int parse_rule(struct ctx *c, json_t *rj, const char *rp, size_t index, struct rd_rule *r)
{
	static const char *const rule_keys[] = {
	    "match",     "action",      "env_allow",     "env_deny", "max_keys",
	    "max_bytes", "description", "ask_timeout_s", "sha256",   NULL};
	static const char *const match_keys[] = {"path", "args", NULL};
	char mp[512], name[512];

	r->index = index;
	rd_jsonpos_find(&c->pos, rp, false, &r->line, &r->col);
	if (!json_is_object(rj)) {
		ctx_err(c, rp, false, "\"%s\" must be a rule object, not %s",
		        show(rp, name, sizeof(name)), type_name(rj));
		return -EINVAL;
	}
	check_box_keys(c, rj, rp, rule_keys, RD_IN_RULE);
	json_t *m = get_object(c, rj, rp, "match", true, mp, sizeof(mp));
	if (m) {
		check_keys(c, m, mp, match_keys);
		char pp[512];
		json_t *pv = json_object_get(m, "path");
		if (get_string(c, m, mp, "path", false, &r->match_path) == 0 && pv) {
			const char *why = rd_glob_check(r->match_path, RD_GLOB_PATH);
			if (why) {
				sub(pp, sizeof(pp), mp, "path");
				ctx_err(c, pp, false, "\"%s\" value \"%s\" %s",
				        show(pp, name, sizeof(name)), r->match_path, why);
			}
		}
		r->has_match_args = json_object_get(m, "args") != NULL;
		(void)get_strv(c, m, mp, "args", false, RD_GLOB_ARG, &r->match_args);
	}
	(void)get_action(c, rj, rp, "action", true, &r->action);
	(void)get_strv(c, rj, rp, "env_allow", false, RD_GLOB_ENV_NAME, &r->env_allow);
	(void)get_strv(c, rj, rp, "env_deny", false, RD_GLOB_ENV_NAME, &r->env_deny);
	(void)get_size(c, rj, rp, "max_keys", 1, &r->max_keys);
	(void)get_size(c, rj, rp, "max_bytes", 1, &r->max_bytes);
	(void)get_pins(c, rj, rp, &r->sha256);
	if (r->sha256.n && !r->match_path) {
		char vp[512];
		sub(vp, sizeof(vp), rp, "sha256");
		ctx_err(c, vp, false, "\"%s\" pins a program: the rule needs a \"match\" \"path\"",
		        show(vp, name, sizeof(name)));
	}
	get_box(c, rj, rp, RD_IN_RULE, &r->box);
	(void)get_string(c, rj, rp, "description", false, &r->description);
	if (json_object_get(rj, "ask_timeout_s") && r->action != RD_ACTION_ASK) {
		char vp[512];
		sub(vp, sizeof(vp), rp, "ask_timeout_s");
		ctx_err(c, vp, false, "\"%s\" applies only to a rule whose action is \"ask\"",
		        show(vp, name, sizeof(name)));
	} else {
		uint64_t secs = 0;
		if (get_bounded(c, rj, rp, "ask_timeout_s", 86400, "a day", &secs) == 0 && secs)
			r->ask_timeout_s = (unsigned)secs;
	}
	if (r->action == RD_ACTION_ASK && !r->ask_timeout_s)
		r->ask_timeout_s = RD_ASK_TIMEOUT_DEFAULT_S;
	return 0;
}

/* Why an agent.env_files entry is none: a relative path ("a/.env"), or one under "~/",
 * "${NAME}/" or "${NAME:-~}/"; no empty, "." or ".." component. NULL if it is one. */
static const char *env_file_why(const char *s)
{
	const char *p = s;
	if (strncmp(p, "~/", 2) == 0) {
		p += 2;
	} else if (strncmp(p, "${", 2) == 0) {
		size_t n = strspn(
		    p + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
		const char *close = p + 2 + n;
		if (!n || (strncmp(close, "}/", 2) != 0 && strncmp(close, ":-~}/", 5) != 0))
			return "must start with a variable's name in \"${NAME}/\" or "
			       "\"${NAME:-~}/\"";
		p = close + (close[0] == '}' ? 2 : 5);
	} else if (p[0] == '/') {
		return "must be relative (looked for in the agent's working directory and each "
		       "one above it), or start with \"~/\", \"${NAME}/\" or \"${NAME:-~}/\"";
	}
	for (;;) {
		size_t len = strcspn(p, "/");
		if (len == 0)
			return p[0] || p == s ? "has an empty component" : "ends with \"/\"";
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return "must not contain \".\" or \"..\" components";
		if (!p[len])
			return NULL;
		p += len + 1;
	}
}

/* agent.env_files and agent.env_guard (struct rd_profile). */
static void get_env_files(struct ctx *c, json_t *agent, const char *agp, struct rd_profile *out)
{
	char vp[512], ep[512], name[512];
	if (get_strv(c, agent, agp, "env_files", false, RD_GLOB_ARG, &out->agent_env_files) == 0)
		for (size_t i = 0; i < out->agent_env_files.n; i++) {
			const char *why = env_file_why(out->agent_env_files.v[i]);
			if (!why)
				continue;
			sub(vp, sizeof(vp), agp, "env_files");
			sub_index(ep, sizeof(ep), vp, i);
			ctx_err(c, ep, false, "\"%s\" entry \"%s\" %s",
			        show(vp, name, sizeof(name)), out->agent_env_files.v[i], why);
		}
	if (get_strv(c, agent, agp, "env_guard", false, RD_GLOB_ENV_NAME, &out->agent_env_guard) ==
	    0)
		for (size_t i = 0; i < out->agent_env_guard.n; i++) {
			if (!rd_glob_is_pattern(out->agent_env_guard.v[i]))
				continue;
			sub(vp, sizeof(vp), agp, "env_guard");
			sub_index(ep, sizeof(ep), vp, i);
			ctx_err(c, ep, false,
			        "\"%s\" entry \"%s\" is a pattern: guarded names are exact",
			        show(vp, name, sizeof(name)), out->agent_env_guard.v[i]);
		}
	if (out->agent_env_guard.n && !out->agent_env_files.n) {
		sub(vp, sizeof(vp), agp, "env_guard");
		ctx_err(c, vp, true, "\"%s\" needs \"env_files\": the files it guards names in",
		        show(vp, name, sizeof(name)));
	}
}

static bool valid_profile_name(const char *s)
{
	if (!*s || *s == '.' || strlen(s) > 64)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
	       strlen(s);
}

int rd_profile_parse(const char *file, const char *expect_name, const char *text, size_t len,
                     struct rd_profile *out, struct rd_error *err)
{
	static const char *const root_keys[] = {"version", "name",     "description",
	                                        "agent",   "commands", NULL};
	static const char *const agent_keys[] = {"env_allow",           "extra_env", "programs",
	                                         "interpreter_options", "self_exec", "env_files",
	                                         "env_guard",           NULL};
	static const char *const cmd_keys[] = {"default", "env_allow", "env_deny", "rules", NULL};

	struct rd_error local = {0};
	memset(out, 0, sizeof(*out));
	struct ctx c = {.file = file, .err = err ? err : &local};
	_cleanup_json_ json_t *root = parse_root(&c, text, len, out->sha256);
	if (!root)
		return -EINVAL;
	err = c.err;
	size_t before = err->n;
	char agp[512], cp[512], rsp[512], rp[512];

	check_keys(&c, root, "", root_keys);
	if (check_version(&c, root) == 0) {
		out->path = strdup(file);
		if (get_string(&c, root, "", "name", true, &out->name) == 0) {
			if (!valid_profile_name(out->name))
				ctx_err(
				    &c, "/name", false,
				    "\"name\" must be 1 to 64 letters, digits, '.', '_' or '-', "
				    "not starting with '.'");
			else if (expect_name && strcmp(out->name, expect_name) != 0)
				ctx_err(
				    &c, "/name", false,
				    "\"name\" is \"%s\" but the file is named %s.json: they must "
				    "agree",
				    out->name, expect_name);
		}
		(void)get_string(&c, root, "", "description", false, &out->description);

		json_t *agent = get_object(&c, root, "", "agent", true, agp, sizeof(agp));
		if (agent) {
			check_keys(&c, agent, agp, agent_keys);
			(void)get_strv(&c, agent, agp, "env_allow", true, RD_GLOB_ENV_NAME,
			               &out->agent_env_allow);
			(void)get_strv(&c, agent, agp, "extra_env", false, RD_GLOB_ENV_NAME,
			               &out->agent_extra_env);
			(void)get_strv(&c, agent, agp, "programs", false, RD_GLOB_PATH,
			               &out->agent_programs);
			for (size_t i = 0; i < out->agent_programs.n; i++) {
				const char *v = out->agent_programs.v[i];
				if (v[0] == '/' || strncmp(v, "{package}/", 10) == 0)
					continue;
				char vp[512], ep[512], name[512];
				sub(vp, sizeof(vp), agp, "programs");
				sub_index(ep, sizeof(ep), vp, i);
				ctx_err(
				    &c, ep, false,
				    "\"%s\" entry \"%s\" must be an absolute path or start with "
				    "\"{package}/\"",
				    show(vp, name, sizeof(name)), v);
			}
			(void)get_strv(&c, agent, agp, "interpreter_options", false, RD_GLOB_ARG,
			               &out->agent_interp_opts);
			(void)get_strv(&c, agent, agp, "self_exec", false, RD_GLOB_ARG,
			               &out->agent_self_exec);
			get_env_files(&c, agent, agp, out);
		}
		json_t *cmds = get_object(&c, root, "", "commands", true, cp, sizeof(cp));
		if (cmds) {
			check_box_keys(&c, cmds, cp, cmd_keys, RD_IN_COMMANDS);
			(void)get_action(&c, cmds, cp, "default", false, &out->commands_default);
			(void)get_strv(&c, cmds, cp, "env_allow", false, RD_GLOB_ENV_NAME,
			               &out->commands_env_allow);
			get_box(&c, cmds, cp, RD_IN_COMMANDS, &out->commands_box);
			(void)get_strv(&c, cmds, cp, "env_deny", false, RD_GLOB_ENV_NAME,
			               &out->commands_env_deny);
			json_t *rules = member(&c, cmds, cp, "rules", false);
			sub(rsp, sizeof(rsp), cp, "rules");
			if (rules && !json_is_array(rules)) {
				wrong_type(&c, rsp, rules, "an array of rules");
			} else if (rules) {
				size_t n = json_array_size(rules);
				out->rules = calloc(n ? n : 1, sizeof(*out->rules));
				if (!out->rules)
					rd_error_set(err, ENOMEM, "out of memory");
				for (size_t i = 0; out->rules && i < n; i++) {
					sub_index(rp, sizeof(rp), rsp, i);
					out->n_rules++;
					(void)parse_rule(&c, json_array_get(rules, i), rp, i,
					                 &out->rules[i]);
				}
			}
		}
		if (err->n == before && !out->path)
			rd_error_set(err, ENOMEM, "out of memory");
	}
	rd_jsonpos_free(&c.pos);
	if (err->n != before) {
		rd_profile_free(out);
		return -err->err;
	}
	return 0;
}

/* Read a whole config file; refuses anything that is not a regular file or is too large. */
static int read_file(const char *file, char **text, size_t *len, struct rd_error *err)
{
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rd_error_set(err, errno, "%s: cannot open: %s", file, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0)
		return rd_error_set(err, errno, "%s: cannot stat: %s", file, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rd_error_set(err, EINVAL, "%s: not a regular file", file);
	if (st.st_size > RD_CONFIG_MAX_SIZE)
		return rd_error_set(err, EFBIG,
		                    "%s: %lld bytes, over the %d-byte limit for config "
		                    "files",
		                    file, (long long)st.st_size, RD_CONFIG_MAX_SIZE);
	char *buf = NULL;
	ssize_t got = rd_read_fd(fd, RD_CONFIG_MAX_SIZE, &buf);
	if (got == -EFBIG)
		return rd_error_set(err, EFBIG,
		                    "%s: grew past the %d-byte limit for config files "
		                    "while read",
		                    file, RD_CONFIG_MAX_SIZE);
	if (got < 0)
		return rd_error_set(err, (int)-got, "%s: cannot read: %s", file,
		                    strerror((int)-got));
	*text = buf;
	*len = (size_t)got;
	return 0;
}

int rd_config_load(const char *file, struct rd_config *out, struct rd_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	memset(out, 0, sizeof(*out));
	int r = read_file(file, &text, &len, err);
	if (r < 0)
		return r;
	return rd_config_parse(file, text, len, out, err);
}

int rd_profile_load(const struct rd_config *cfg, const char *name_or_path, struct rd_profile *out,
                    struct rd_error *err)
{
	_cleanup_free_ char *file = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	memset(out, 0, sizeof(*out));

	if (strchr(name_or_path, '/')) {
		file = strdup(name_or_path);
	} else {
		if (!valid_profile_name(name_or_path))
			return rd_error_set(err, EINVAL,
			                    "profile \"%s\": not a valid profile name (letters, "
			                    "digits, '.', '_', '-'), nor a path (it has no '/')",
			                    name_or_path);
		if (asprintf(&file, "%s/%s.json", cfg->profiles_dir, name_or_path) < 0)
			file = NULL;
	}
	if (!file)
		return rd_error_set(err, ENOMEM, "out of memory");

	/* The file's base name, less ".json", is the name the profile must carry. */
	_cleanup_free_ char *copy = strdup(file);
	if (!copy)
		return rd_error_set(err, ENOMEM, "out of memory");
	char *base = basename(copy);
	size_t bl = strlen(base);
	if (bl <= 5 || strcmp(base + bl - 5, ".json") != 0)
		return rd_error_set(err, EINVAL, "%s: a profile file name must end in .json", file);
	base[bl - 5] = '\0';

	int r = read_file(file, &text, &len, err);
	if (r == -ENOENT && !strchr(name_or_path, '/'))
		rd_error_prefix(err, "profile \"%s\" not found in %s: ", name_or_path,
		                cfg->profiles_dir);
	if (r < 0)
		return r;
	r = rd_profile_parse(file, base, text, len, out, err);
	if (r == 0)
		rd_profile_mark_grants(&cfg->env, out);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rd_profile_list(const struct rd_config *cfg, struct rd_strv *out, struct rd_error *err)
{
	memset(out, 0, sizeof(*out));
	DIR *d = opendir(cfg->profiles_dir);
	if (!d)
		return rd_error_set(err, errno, "%s: cannot open the profiles directory: %s",
		                    cfg->profiles_dir, strerror(errno));
	size_t cap = 0;
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' || l <= 5 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		if (out->n + 1 >= cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(out->v, cap * sizeof(*nv));
			if (!nv) {
				r = rd_error_set(err, ENOMEM, "out of memory");
				break;
			}
			out->v = nv;
		}
		if (!(out->v[out->n] = strndup(de->d_name, l - 5))) {
			r = rd_error_set(err, ENOMEM, "out of memory");
			break;
		}
		out->v[++out->n] = NULL;
	}
	closedir(d);
	if (r < 0) {
		rd_strv_free(out);
		return r;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
	return 0;
}

char *rd_config_default_path(struct rd_error *err)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *bindir = dirname(exe);
		char *prefix = dirname(bindir);
		char *cand = NULL;
		if (asprintf(&cand, "%s/etc/runnerd/runner.json", prefix) >= 0) {
			if (access(cand, F_OK) == 0)
				return cand;
			free(cand);
		}
	}
	if (access("/etc/runnerd/runner.json", F_OK) == 0)
		return strdup("/etc/runnerd/runner.json");
	rd_error_set(err, ENOENT,
	             "no runner.json found (looked next to the runnerd binary in "
	             "../etc/runnerd/ and in /etc/runnerd/): pass --config FILE");
	return NULL;
}
