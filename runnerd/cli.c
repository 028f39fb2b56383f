#include "runnerd/cli.h"
#include "lib/strv.h"
#include "lib/util.h"
#include "policy/rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int rd_cli_expand_masks(struct rd_config *cfg, struct rd_profile *prof)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	struct rd_strv notes = {0};
	/* No working directory (removed under runnerd): relative paths are taken from "/". */
	int r = rd_mask_expand_env(cfg, prof, environ, cwd ? cwd : "/", &notes);
	for (size_t i = 0; i < notes.n; i++)
		fprintf(stderr, "runnerd: %s\n", notes.v[i]);
	rd_strv_free(&notes);
	if (r < 0)
		fprintf(stderr, "runnerd: expanding the mask paths: %s\n", strerror(-r));
	return r;
}

void rd_cli_print_error(const struct rd_error *err)
{
	const char *line = err->msg;
	while (*line) {
		const char *nl = strchr(line, '\n');
		int len = nl ? (int)(nl - line) : (int)strlen(line);
		fprintf(stderr, "runnerd: %.*s\n", len, line);
		line += len + (nl ? 1 : 0);
	}
	if (err->n > RD_ERROR_MAX_MESSAGES)
		fprintf(stderr, "runnerd: ... and %zu more errors\n",
		        err->n - RD_ERROR_MAX_MESSAGES);
}

int rd_cli_load_config(const struct rd_cli *cli, struct rd_config *cfg)
{
	struct rd_error err = {0};
	_cleanup_free_ char *found = NULL;
	const char *path = cli->config;
	if (!path) {
		path = found = rd_config_default_path(&err);
		if (!path) {
			rd_cli_print_error(&err);
			return -err.err;
		}
	}
	if (cli->verbose)
		fprintf(stderr, "runnerd: config %s (%s)\n", path,
		        cli->config ? "--config" : "default search");
	int r = rd_config_load(path, cfg, &err);
	if (r < 0)
		rd_cli_print_error(&err);
	return r;
}
