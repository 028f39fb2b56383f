/* The shipped runner.json and profiles against an operator environment holding every vendor's
 * key and the usual cloud secrets: each agent gets its own key only, each command none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "policy/config.h"
#include "policy/envpolicy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *operator_env[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "HOME=/home/dev",
    "USER=dev",
    "LANG=C.UTF-8",
    "LC_ALL=C.UTF-8",
    "LC_CTYPE=C.UTF-8",
    "LC_MESSAGES=C",
    /* A key under a name that only looks like a locale category (LC_* once let it through). */
    "LC_X=canary-lc",
    "TERM=xterm-256color",
    "TMPDIR=/tmp",
    "SSH_AUTH_SOCK=/run/user/1000/ssh-agent",
    "ANTHROPIC_API_KEY=canary-anthropic",
    "ANTHROPIC_BASE_URL=https://anthropic.example",
    "CLAUDE_CODE_USE_BEDROCK=0",
    "OPENAI_API_KEY=canary-openai",
    "OPENAI_ORG_ID=canary-org",
    "OPENAI_BASE_URL=https://openai.example",
    "CODEX_HOME=/home/dev/.codex",
    "GEMINI_API_KEY=canary-gemini",
    "GOOGLE_API_KEY=canary-google",
    "GOOGLE_CLOUD_PROJECT=proj",
    "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/gcp.json",
    "GOOGLE_GEMINI_BASE_URL=https://gemini.example",
    "PERPLEXITY_API_KEY=canary-perplexity",
    "XAI_API_KEY=canary-xai",
    "DASHSCOPE_API_KEY=canary-dashscope",
    "DATABASE_URL=postgres://canary",
    "AWS_ACCESS_KEY_ID=canary-aws",
    "AWS_SECRET_ACCESS_KEY=canary-aws-secret",
    "GITHUB_TOKEN=canary-github",
    "NPM_TOKEN=canary-npm",
    "STRIPE_SECRET_KEY=canary-stripe",
    "LD_PRELOAD=/tmp/evil.so",
    "BASH_ENV=/tmp/evil.sh",
    "NODE_OPTIONS=--require /tmp/evil.js",
    "RUNNERD_SESSION=s1",
    "RUNNERD_PROFILE=p",
    "JRUN_PROJECT_ID=p1",
    "JRUN_TASK_ID=t1",
    "JRUN_ID=r1",
    "JRUN_PARENT_ID=r0",
    "JRUN_MESSAGE_BUS=/run/bus",
    "JRUN_RUN_FOLDER=/runs/r1",
    "JRUN_TASK_FOLDER=/tasks/t1",
    "MY_CUSTOM_SETTING=1",
    NULL,
};

static const char *const vendor_keys[] = {
    "ANTHROPIC_API_KEY",  "OPENAI_API_KEY", "GEMINI_API_KEY",    "GOOGLE_API_KEY",
    "PERPLEXITY_API_KEY", "XAI_API_KEY",    "DASHSCOPE_API_KEY",
};
static const char *const never[] = {
    "DATABASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN", "NPM_TOKEN",         "STRIPE_SECRET_KEY",
    "LD_PRELOAD",   "BASH_ENV",          "NODE_OPTIONS",
    "LC_X",
};
static const char *const always[] = {
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TMPDIR",
    "RUNNERD_SESSION",
    "RUNNERD_PROFILE",
    "JRUN_PROJECT_ID",
    "JRUN_TASK_ID",
    "JRUN_ID",
    "JRUN_PARENT_ID",
    "JRUN_MESSAGE_BUS",
    "JRUN_RUN_FOLDER",
    "JRUN_TASK_FOLDER",
};

struct fixture {
	struct rd_config cfg;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct rd_error err = {0};
	if (!f || rd_config_load(RD_SOURCE_DIR "/runner.json", &f->cfg, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rd_config_free(&f->cfg);
	free(f);
	return 0;
}

static bool has(const struct rd_env_result *r, const char *name)
{
	size_t l = strlen(name);
	for (size_t i = 0; i < r->n_env; i++)
		if (strncmp(r->envp[i], name, l) == 0 && r->envp[i][l] == '=')
			return true;
	return false;
}

static void build(struct fixture *f, const char *profile, enum rd_env_level level,
                  struct rd_env_result *res)
{
	struct rd_profile p = {0};
	struct rd_error err = {0};
	int r = rd_profile_load(&f->cfg, profile, &p, &err);
	if (r < 0)
		print_message("%s\n", err.msg);
	assert_int_equal(r, 0);
	assert_int_equal(rd_env_build(&f->cfg.env, &p, level, NULL, operator_env, res, &err), 0);
	rd_profile_free(&p);
}

static void expect_keys(struct fixture *f, const char *profile, const char *const *yes, size_t ny)
{
	struct rd_env_result res;
	build(f, profile, RD_ENV_AGENT, &res);
	for (size_t i = 0; i < ny; i++) {
		print_message("%s agent must get %s\n", profile, yes[i]);
		assert_true(has(&res, yes[i]));
	}
	for (size_t i = 0; i < ARRAY_SIZE(vendor_keys); i++) {
		bool own = false;
		for (size_t j = 0; j < ny; j++)
			own |= strcmp(yes[j], vendor_keys[i]) == 0;
		if (!own) {
			print_message("%s agent must not get %s\n", profile, vendor_keys[i]);
			assert_false(has(&res, vendor_keys[i]));
		}
	}
	rd_env_result_free(&res);
}

static void test_claude_agent(void **state)
{
	const char *const yes[] = {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
	                           "CLAUDE_CODE_USE_BEDROCK"};
	expect_keys(*state, "claude", yes, ARRAY_SIZE(yes));
}

static void test_codex_agent(void **state)
{
	const char *const yes[] = {"OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_BASE_URL",
	                           "CODEX_HOME"};
	expect_keys(*state, "codex", yes, ARRAY_SIZE(yes));
}

static void test_gemini_agent(void **state)
{
	const char *const yes[] = {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT",
	                           "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_GEMINI_BASE_URL"};
	expect_keys(*state, "gemini", yes, ARRAY_SIZE(yes));
}

static void test_perplexity_xai_generic(void **state)
{
	const char *const pplx[] = {"PERPLEXITY_API_KEY"};
	const char *const xai[] = {"XAI_API_KEY"};
	expect_keys(*state, "perplexity", pplx, ARRAY_SIZE(pplx));
	expect_keys(*state, "xai", xai, ARRAY_SIZE(xai));
	expect_keys(*state, "generic", NULL, 0);
}

/* Every profile: the system and session names pass, the cloud and injection names never, at
 * both levels; and a command gets no vendor key at all. */
static void test_every_profile(void **state)
{
	struct fixture *f = *state;
	struct rd_strv names = {0};
	struct rd_error err = {0};
	assert_int_equal(rd_profile_list(&f->cfg, &names, &err), 0);
	assert_true(names.n >= 9);
	for (size_t p = 0; p < names.n; p++) {
		for (int level = RD_ENV_AGENT; level <= RD_ENV_COMMAND; level++) {
			struct rd_env_result res;
			build(f, names.v[p], level, &res);
			for (size_t i = 0; i < ARRAY_SIZE(always); i++) {
				print_message("%s/%d must pass %s\n", names.v[p], level, always[i]);
				assert_true(has(&res, always[i]));
			}
			for (size_t i = 0; i < ARRAY_SIZE(never); i++) {
				print_message("%s/%d must strip %s\n", names.v[p], level, never[i]);
				assert_false(has(&res, never[i]));
			}
			if (level == RD_ENV_COMMAND)
				for (size_t i = 0; i < ARRAY_SIZE(vendor_keys); i++) {
					print_message("%s command must strip %s\n", names.v[p],
					              vendor_keys[i]);
					assert_false(has(&res, vendor_keys[i]));
				}
			/* Every planted secret value says "canary": none reaches a command. */
			for (size_t i = 0; level == RD_ENV_COMMAND && i < res.n_env; i++)
				assert_null(strstr(res.envp[i], "canary"));
			rd_env_result_free(&res);
		}
	}
	rd_strv_free(&names);
}

static void test_extra_env(void **state)
{
	struct fixture *f = *state;
	struct rd_env_result res;
	build(f, "claude", RD_ENV_AGENT, &res);
	assert_false(has(&res, "MY_CUSTOM_SETTING"));
	rd_env_result_free(&res);

	char *extra[] = {"MY_CUSTOM_*", NULL};
	struct rd_strv saved = f->cfg.env.extra_env;
	f->cfg.env.extra_env = (struct rd_strv){extra, 1};
	build(f, "claude", RD_ENV_AGENT, &res);
	assert_true(has(&res, "MY_CUSTOM_SETTING"));
	rd_env_result_free(&res);
	build(f, "claude", RD_ENV_COMMAND, &res);
	assert_false(has(&res, "MY_CUSTOM_SETTING")); /* agent only */
	rd_env_result_free(&res);
	f->cfg.env.extra_env = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claude_agent),  cmocka_unit_test(test_codex_agent),
	    cmocka_unit_test(test_gemini_agent),  cmocka_unit_test(test_perplexity_xai_generic),
	    cmocka_unit_test(test_every_profile), cmocka_unit_test(test_extra_env),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
