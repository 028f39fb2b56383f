/* Config loader: every invalid fixture fails with exactly the message in its .expected file,
 * every valid fixture loads with the values it holds, and the shipped config loads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "policy/config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The expected text with FILE replaced by the path, trailing newline dropped. */
static char *expected_for(const char *json_path)
{
	char exp_path[1024];
	snprintf(exp_path, sizeof(exp_path), "%.*s.expected", (int)(strlen(json_path) - 5),
	         json_path);
	char *tmpl = slurp(exp_path);
	assert_non_null(tmpl);
	size_t cap = strlen(tmpl) * 2 + strlen(json_path) * 16 + 1;
	char *out = calloc(1, cap);
	assert_non_null(out);
	for (const char *p = tmpl; *p;) {
		if (strncmp(p, "FILE", 4) == 0) {
			strcat(out, json_path);
			p += 4;
		} else {
			strncat(out, p++, 1);
		}
	}
	size_t l = strlen(out);
	while (l && out[l - 1] == '\n')
		out[--l] = '\0';
	free(tmpl);
	return out;
}

static void test_invalid_fixtures(void **state)
{
	(void)state;
	DIR *d = opendir(RD_FIXTURES "/invalid");
	assert_non_null(d);
	struct rd_config shipped = {0};
	struct rd_error err = {0};
	assert_int_equal(rd_config_load(RD_SOURCE_DIR "/runner.json", &shipped, &err), 0);

	struct dirent *de;
	size_t checked = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l <= 5 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/invalid/%s", RD_FIXTURES, de->d_name);
		char *want = expected_for(path);
		rd_error_clear(&err);
		int r;
		if (strncmp(de->d_name, "config-", 7) == 0) {
			struct rd_config cfg;
			r = rd_config_load(path, &cfg, &err);
		} else {
			struct rd_profile prof;
			r = rd_profile_load(&shipped, path, &prof, &err);
		}
		print_message("fixture %s\n", de->d_name);
		assert_int_equal(r, -EINVAL);
		assert_int_equal(err.err, EINVAL);
		assert_string_equal(err.msg, want);
		free(want);
		checked++;
	}
	closedir(d);
	assert_true(checked >= 15);
	rd_config_free(&shipped);
}

static void test_valid_full_profile(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	struct rd_error err = {0};
	assert_int_equal(rd_config_load(RD_SOURCE_DIR "/runner.json", &cfg, &err), 0);
	assert_int_equal(rd_profile_load(&cfg, RD_FIXTURES "/valid/full.json", &p, &err), 0);
	assert_string_equal(p.name, "full");
	assert_string_equal(p.description, "every key a profile may have");
	assert_int_equal(p.agent_env_allow.n, 2);
	assert_string_equal(p.agent_env_allow.v[1], "EXAMPLE_*");
	assert_int_equal(p.agent_extra_env.n, 1);
	assert_int_equal(p.commands_default, RD_ACTION_DENY);
	assert_int_equal(p.commands_env_allow.n, 2);
	assert_string_equal(p.commands_env_deny.v[0], "GOPROXY");
	assert_int_equal(p.n_rules, 3);

	const struct rd_rule *r = &p.rules[0];
	assert_int_equal(r->index, 0);
	assert_string_equal(r->match_path, "*/git");
	assert_true(r->has_match_args);
	assert_int_equal(r->match_args.n, 2);
	assert_string_equal(r->match_args.v[1], "**");
	assert_int_equal(r->action, RD_ACTION_ALLOW);
	assert_string_equal(r->env_allow.v[0], "GITHUB_TOKEN");
	assert_string_equal(r->env_deny.v[0], "GIT_TRACE*");
	assert_int_equal(r->max_keys, 200);
	assert_int_equal(r->max_bytes, 65536);
	assert_int_equal(r->line, 14);
	assert_int_equal(r->col, 7);

	assert_int_equal(p.rules[1].action, RD_ACTION_ASK);
	/* A pin as sha256sum prints it, in either case: kept in lowercase. */
	assert_int_equal(p.rules[1].sha256.n, 1);
	assert_string_equal(p.rules[1].sha256.v[0],
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_int_equal(p.rules[0].sha256.n, 0);
	/* No ask_timeout_s given: the loader puts the default in, once for every reader. */
	assert_int_equal(p.rules[1].ask_timeout_s, RD_ASK_TIMEOUT_DEFAULT_S);
	assert_int_equal(p.rules[0].ask_timeout_s, 0);
	assert_false(p.rules[1].has_match_args);
	assert_null(p.rules[2].match_path); /* an empty match matches everything */
	assert_int_equal(p.rules[2].index, 2);
	rd_profile_free(&p);
	rd_config_free(&cfg);
}

static void test_valid_minimal(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	struct rd_error err = {0};
	assert_int_equal(rd_config_load(RD_FIXTURES "/valid/config-minimal.json", &cfg, &err), 0);
	assert_int_equal(cfg.env.base_allow.n, 1);
	assert_int_equal(cfg.env.deny.n, 0);
	assert_int_equal(cfg.env.max_keys, 0);
	assert_null(cfg.audit_path);
	/* profiles_dir defaults to "profiles" beside the config file */
	assert_string_equal(cfg.profiles_dir, RD_FIXTURES "/valid/profiles");
	assert_int_equal(rd_profile_load(&cfg, RD_FIXTURES "/valid/minimal.json", &p, &err), 0);
	assert_int_equal(p.n_rules, 0);
	assert_int_equal(p.agent_env_allow.n, 0);
	assert_int_equal(p.commands_default, RD_ACTION_ALLOW);
	rd_profile_free(&p);
	rd_config_free(&cfg);
}

static void test_shipped_config(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_error err = {0};
	struct rd_strv names = {0};
	assert_int_equal(rd_config_load(RD_SOURCE_DIR "/runner.json", &cfg, &err), 0);
	assert_string_equal(cfg.profiles_dir, RD_SOURCE_DIR "/profiles");
	assert_true(cfg.env.max_keys > 0 && cfg.env.max_bytes > 0);
	assert_int_equal(rd_profile_list(&cfg, &names, &err), 0);
	const char *want[] = {"aider",   "amp",        "claude", "codex", "gemini",
	                      "generic", "perplexity", "qwen",   "xai"};
	assert_int_equal(names.n, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		struct rd_profile p = {0};
		assert_string_equal(names.v[i], want[i]);
		rd_error_clear(&err);
		int r = rd_profile_load(&cfg, names.v[i], &p, &err);
		if (r < 0)
			print_message("%s\n", err.msg);
		assert_int_equal(r, 0);
		assert_string_equal(p.name, want[i]);
		rd_profile_free(&p);
	}
	rd_strv_free(&names);
	rd_config_free(&cfg);
}

static void test_profile_lookup_errors(void **state)
{
	(void)state;
	struct rd_config cfg = {0};
	struct rd_profile p = {0};
	struct rd_error err = {0};
	assert_int_equal(rd_config_load(RD_SOURCE_DIR "/runner.json", &cfg, &err), 0);

	assert_int_equal(rd_profile_load(&cfg, "no-such-agent", &p, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "profile \"no-such-agent\" not found in "));
	assert_non_null(strstr(err.msg, "/profiles/no-such-agent.json"));

	rd_error_clear(&err);
	assert_int_equal(rd_profile_load(&cfg, "..", &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a valid profile name"));

	rd_error_clear(&err);
	assert_int_equal(rd_profile_load(&cfg, RD_FIXTURES "/valid/full.txt", &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "must end in .json"));

	rd_error_clear(&err);
	assert_int_equal(rd_profile_load(&cfg, RD_FIXTURES "/valid/", &p, &err), -EINVAL);
	rd_config_free(&cfg);
}

static void test_parse_buffer_positions(void **state)
{
	(void)state;
	struct rd_error err = {0};
	struct rd_config cfg;
	/* Multibyte text before the bad key: the column counts characters, as jansson does. */
	const char *text = "{\"version\":1,\"env\":{\"base_allow\":[],\"deny\":[],\"hard_deny\":[],"
	                   "\n\"\xc3\xa9t\xc3\xa9\":1, \"max_byte\":2}}";
	assert_int_equal(rd_config_parse("t.json", text, strlen(text), &cfg, &err), -EINVAL);
	assert_string_equal(err.msg, "t.json:2:1: \"\xc3\xa9t\xc3\xa9\" is not a known key in env\n"
	                             "t.json:2:10: \"max_byte\" is not a known key in env (did you "
	                             "mean \"max_bytes\"?)");

	rd_error_clear(&err);
	assert_int_equal(rd_config_parse("t.json", "", 0, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "t.json:"));

	rd_error_clear(&err);
	const char *nul = "{\"version\":1,\"env\":{\"base_allow\":[\"A\\u0000B\"]}}";
	assert_int_equal(rd_config_parse("t.json", nul, strlen(nul), &cfg, &err), -EINVAL);
}

static void test_error_cap(void **state)
{
	(void)state;
	/* 30 unknown keys: the first RD_ERROR_MAX_MESSAGES are kept, all are counted. */
	char text[4096] = "{\"version\":1,\"env\":{\"base_allow\":[],\"deny\":[],\"hard_deny\":[]";
	for (int i = 0; i < 30; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), ",\"k%d\":1", i);
	strcat(text, "}}");
	struct rd_error err = {0};
	struct rd_config cfg;
	assert_int_equal(rd_config_parse("t.json", text, strlen(text), &cfg, &err), -EINVAL);
	assert_int_equal(err.n, 30);
	size_t lines = 1;
	for (const char *p = err.msg; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, RD_ERROR_MAX_MESSAGES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_invalid_fixtures),
	    cmocka_unit_test(test_valid_full_profile),
	    cmocka_unit_test(test_valid_minimal),
	    cmocka_unit_test(test_shipped_config),
	    cmocka_unit_test(test_profile_lookup_errors),
	    cmocka_unit_test(test_parse_buffer_positions),
	    cmocka_unit_test(test_error_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
