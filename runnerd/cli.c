#include "runnerd/cli.h"

#include <stdio.h>
#include <string.h>

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
