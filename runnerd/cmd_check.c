/* runnerd check: validate runner.json and the profiles, print every error, exit 1 on any.
 * runnerd check --system: try what runnerd needs of the kernel here (runnerd/preflight.h). */
#include "runnerd/cli.h"
#include "runnerd/preflight.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"profile", required_argument, NULL, 'p'},
    {"verbose", no_argument, NULL, 'v'},
    {"system", no_argument, NULL, 's'},
    {NULL, 0, NULL, 0},
};

static int check_system(void)
{
	struct rd_preflight pf;
	size_t failed = rd_preflight_run(&pf);
	printf("runnerd: what runnerd needs, tried %s:\n", rd_preflight_where(&pf));
	for (int i = 0; i < RD_PROBE_COUNT; i++) {
		const struct rd_probe_result *r = &pf.r[i];
		if (!r->err)
			printf("  ok      %s\n", r->name);
		else
			printf("  FAILED  %s: %s.\n          Fix: %s.\n", r->name, r->cause,
			       r->fix);
	}
	if (failed)
		printf("runnerd: %zu of %d failed: runnerd refuses to start here\n", failed,
		       RD_PROBE_COUNT);
	else
		printf("runnerd: all %d work\n", RD_PROBE_COUNT);
	return failed ? 1 : 0;
}

int rd_cmd_check(struct rd_cli *cli, int argc, char **argv)
{
	int c;
	optind = 1;
	bool system = false;
	while ((c = getopt_long(argc, argv, "c:p:v", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			system = true;
			break;
		case 'c':
			cli->config = optarg;
			break;
		case 'p':
			cli->profile = optarg;
			break;
		case 'v':
			cli->verbose++;
			break;
		default:
			fprintf(stderr, "Usage: runnerd check [--config FILE] [--profile NAME]\n"
			                "       runnerd check --system\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "runnerd check: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (system)
		return check_system();

	struct rd_config cfg = {0};
	if (rd_cli_load_config(cli, &cfg) < 0)
		return 1;

	struct rd_strv names = {0};
	struct rd_error err = {0};
	int failed = 0;
	if (cli->profile) {
		names.v = calloc(2, sizeof(char *));
		if (names.v && (names.v[0] = strdup(cli->profile)))
			names.n = 1;
	} else if (rd_profile_list(&cfg, &names, &err) < 0) {
		rd_cli_print_error(&err);
		failed = 1;
	} else if (names.n == 0) {
		fprintf(stderr, "runnerd: no profiles (*.json) in %s\n", cfg.profiles_dir);
		failed = 1;
	}

	size_t ok = 0;
	for (size_t i = 0; i < names.n; i++) {
		struct rd_profile prof = {0};
		rd_error_clear(&err);
		if (rd_profile_load(&cfg, names.v[i], &prof, &err) < 0) {
			rd_cli_print_error(&err);
			failed = 1;
			continue;
		}
		if (cli->verbose)
			fprintf(stderr, "runnerd: profile %s: %s, %zu rules\n", prof.name,
			        prof.path, prof.n_rules);
		ok++;
		rd_profile_free(&prof);
	}
	if (!failed) {
		printf("runnerd: %s OK, %zu profile%s OK:", cfg.path, ok, ok == 1 ? "" : "s");
		for (size_t i = 0; i < names.n; i++)
			printf(" %s", names.v[i]);
		printf("\n");
	}
	rd_strv_free(&names);
	rd_config_free(&cfg);
	return failed;
}
