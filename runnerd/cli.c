#include "runnerd/cli.h"
#include "lib/strv.h"
#include "lib/util.h"
#include "policy/rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

char *rd_cli_workspace(const struct rd_cli *cli, const struct rd_config *cfg, const char *home,
                       struct rd_error *err)
{
	const char *given = cli->workspace ? cli->workspace : cfg->workspace;
	if (!given) {
		char *cwd = getcwd(NULL, 0);
		if (!cwd)
			rd_error_set(err, errno,
			             "the working directory cannot be named (%s): say where the "
			             "project is with --workspace",
			             strerror(errno));
		return cwd;
	}
	_cleanup_free_ char *path = NULL;
	if (strncmp(given, "~/", 2) == 0 && (!home || !*home)) {
		rd_error_set(err, ENOENT, "%s: workspace %s: the user has no home directory",
		             cli->workspace ? "--workspace" : cfg->path, given);
		return NULL;
	}
	if (asprintf(&path, "%s%s", strncmp(given, "~/", 2) == 0 ? home : "",
	             strncmp(given, "~/", 2) == 0 ? given + 1 : given) < 0) {
		rd_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	char *real = realpath(path, NULL);
	struct stat st;
	if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		int e = !real ? errno : ENOTDIR;
		rd_error_set(err, e, "%s%s: workspace %s: %s",
		             cli->workspace ? "--workspace" : cfg->path,
		             cli->workspace ? "" : " (sandbox.workspace)", path, strerror(e));
		free(real);
		return NULL;
	}
	return real;
}

int rd_cli_expand_masks(struct rd_config *cfg, struct rd_profile *prof, const char *workspace)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	struct rd_strv notes = {0};
	/* No working directory (removed under runnerd): relative paths are taken from "/". */
	int r = rd_mask_expand_env(cfg, prof, environ, cwd ? cwd : "/",
	                           workspace ? workspace
	                           : cwd     ? cwd
	                                     : "/",
	                           &notes);
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
