/* The runnerd command line: options shared by the subcommands and their entry points. */
#ifndef RD_CLI_H
#define RD_CLI_H

#include "policy/config.h"
#include "policy/policy.h"

#include <stdbool.h>

struct rd_cli {
	const char *config; /* --config, NULL = default search */
	const char *profile;
	const char *audit;
	int verbose;
	bool prompt;           /* --prompt: also ask on /dev/tty */
	const char *workspace; /* --workspace, NULL = sandbox.workspace, else the cwd */
};

/* Load the config named by --config or found by the default search; prints errors. */
int rd_cli_load_config(const struct rd_cli *cli, struct rd_config *cfg) _wur_;

/* The workspace, the project commands may write in: --workspace, else sandbox.workspace ("~/"
 * the home given), else the working directory; its real path, which must be a directory.
 * Returns it (malloc'd), or NULL with err set (naming the option or the config file). */
char *rd_cli_workspace(const struct rd_cli *cli, const struct rd_config *cfg, const char *home,
                       struct rd_error *err);

/* The "${NAME}" and "{workspace}" paths of cfg and prof from runnerd's environment, working
 * directory and workspace (rd_mask_expand_env), before either is scrubbed or changed; says on
 * stderr what is left out. Returns 0, or -ENOMEM (said). */
int rd_cli_expand_masks(struct rd_config *cfg, struct rd_profile *prof,
                        const char *workspace) _wur_;

/* Print every message of err on stderr, each line prefixed with "runnerd: ". */
void rd_cli_print_error(const struct rd_error *err);

int rd_cmd_check(struct rd_cli *cli, int argc, char **argv);
int rd_cmd_explain(struct rd_cli *cli, int argc, char **argv);
int rd_cmd_run(struct rd_cli *cli, int argc, char **argv);
/* runnerd pending | approve ID | deny ID: answer the "ask" rules of running sessions. */
int rd_cmd_answer(struct rd_cli *cli, int argc, char **argv);

#endif
