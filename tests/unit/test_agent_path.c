/* The agent's real binary: "#!/usr/bin/env NAME" scripts resolve to NAME on PATH with the
 * script as argument, as env would exec it; everything else is left to the kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runnerd/agent_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char dir[] = "/tmp/rd-agent-path-XXXXXX";

static void write_exec(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(p, 0755);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	char bin[300];
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	mkdir(bin, 0755);
	write_exec("bin/interp", "\x7f"
	                         "ELF fake");
	write_exec("agent-env", "#!/usr/bin/env interp\nbody\n");
	write_exec("agent-env-S", "#!/usr/bin/env -S interp --flag x\nbody\n");
	write_exec("agent-direct", "#!/bin/sh\necho\n");
	write_exec("agent-env-i", "#!/usr/bin/env -i interp\n");
	write_exec("agent-missing", "#!/usr/bin/env no-such-interp-xyz\n");
	write_exec("agent-chain", "#!/usr/bin/env agent-env\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

struct result {
	char *path;
	char **argv;
};

static int run(const char *script, const char *const *args, struct result *res,
               struct rd_error *err)
{
	char path_env[600];
	snprintf(path_env, sizeof(path_env), "/nonexistent:%s/bin:%s", dir, dir);
	assert_true(asprintf(&res->path, "%s/%s", dir, script) > 0);
	size_t n = 0;
	while (args[n])
		n++;
	res->argv = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		res->argv[i] = strdup(args[i]);
	return rd_agent_resolve_env_shebang(&res->path, &res->argv, path_env, err);
}

static void result_free(struct result *r)
{
	for (char **a = r->argv; *a; a++)
		free(*a);
	free(r->argv);
	free(r->path);
}

static void expect(const struct result *r, const char *path_suffix, const char *const *argv)
{
	assert_non_null(strstr(r->path, path_suffix));
	size_t i = 0;
	for (; argv[i]; i++) {
		assert_non_null(r->argv[i]);
		if (argv[i][0] == '/')
			assert_non_null(strstr(r->argv[i], argv[i]));
		else
			assert_string_equal(r->argv[i], argv[i]);
	}
	assert_null(r->argv[i]);
}

static void test_env_shebang(void **state)
{
	(void)state;
	struct rd_error err = {0};
	struct result r;
	assert_int_equal(
	    run("agent-env", (const char *[]){"agent-env", "a1", "a2", NULL}, &r, &err), 0);
	expect(&r, "/bin/interp", (const char *[]){"interp", "/agent-env", "a1", "a2", NULL});
	result_free(&r);
}

static void test_env_split(void **state)
{
	(void)state;
	struct rd_error err = {0};
	struct result r;
	assert_int_equal(run("agent-env-S", (const char *[]){"x", "a1", NULL}, &r, &err), 0);
	expect(&r, "/bin/interp",
	       (const char *[]){"interp", "--flag", "x", "/agent-env-S", "a1", NULL});
	result_free(&r);
}

static void test_left_alone(void **state)
{
	(void)state;
	struct rd_error err = {0};
	struct result r;
	/* A direct interpreter is the kernel's business within the one exec. */
	assert_int_equal(run("agent-direct", (const char *[]){"agent-direct", NULL}, &r, &err), 0);
	expect(&r, "/agent-direct", (const char *[]){"agent-direct", NULL});
	result_free(&r);
	/* env options other than -S are env's own to handle. */
	assert_int_equal(run("agent-env-i", (const char *[]){"agent-env-i", NULL}, &r, &err), 0);
	expect(&r, "/agent-env-i", (const char *[]){"agent-env-i", NULL});
	result_free(&r);
	/* A binary. */
	assert_int_equal(run("bin/interp", (const char *[]){"interp", NULL}, &r, &err), 0);
	expect(&r, "/bin/interp", (const char *[]){"interp", NULL});
	result_free(&r);
}

static void test_chain_and_missing(void **state)
{
	(void)state;
	struct rd_error err = {0};
	struct result r;
	assert_int_equal(run("agent-chain", (const char *[]){"agent-chain", "z", NULL}, &r, &err),
	                 0);
	expect(&r, "/bin/interp",
	       (const char *[]){"interp", "/agent-env", "/agent-chain", "z", NULL});
	result_free(&r);
	assert_int_equal(run("agent-missing", (const char *[]){"m", NULL}, &r, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "\"no-such-interp-xyz\""));
	assert_non_null(strstr(err.msg, "is not on PATH"));
	result_free(&r);
}

static void test_which(void **state)
{
	(void)state;
	char path_env[600];
	snprintf(path_env, sizeof(path_env), "/nonexistent::%s/bin", dir);
	char *p = rd_agent_which("interp", path_env);
	assert_non_null(p);
	assert_non_null(strstr(p, "/bin/interp"));
	free(p);
	assert_null(rd_agent_which("no-such-program-xyz", path_env));
	p = rd_agent_which("./relative/name", path_env);
	assert_string_equal(p, "./relative/name");
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_env_shebang), cmocka_unit_test(test_env_split),
	    cmocka_unit_test(test_left_alone),  cmocka_unit_test(test_chain_and_missing),
	    cmocka_unit_test(test_which),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
