/* runnerd: start an AI coding agent so that the commands it runs never see secrets they were
 * not granted. This file only parses the command line and dispatches. */
#include "runnerd/cli.h"
#include "runnerd/serve.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: runnerd [--config FILE] --profile NAME [--audit FILE] [--workspace DIR] "
	    "[--prompt]\n"
	    "               [-v] -- AGENT "
	    "[ARGS...]\n"
	    "       runnerd check [--config FILE] [--profile NAME]\n"
	    "       runnerd [--config FILE] --profile NAME serve [--socket PATH] "
	    "[--allow-profile NAME]...\n"
	    "       runnerd explain [--config FILE] --profile NAME [--json] --agent\n"
	    "       runnerd explain [--config FILE] --profile NAME [--json] -- CMD [ARGS...]\n"
	    "\n"
	    "Runs an AI coding agent so that the commands it starts see only the environment its\n"
	    "profile grants.\n"
	    "\n"
	    "Commands:\n"
	    "  check      validate runner.json and every profile (or just --profile)\n"
	    "  explain    show, name by name, what the current environment would become for\n"
	    "             the agent (--agent) or for a command it runs (-- CMD); never values\n"
	    "  pending    list the commands waiting for approval (\"ask\" rules) in running\n"
	    "             sessions [--json]\n"
	    "  approve ID run the waiting command ID (as pending shows it)\n"
	    "  deny ID    refuse it: its caller sees exit status 126\n"
	    "  ps         list the running sessions and their sandboxes, their commands running\n"
	    "             or ended with background processes left [--json]\n"
	    "  serve      the daemon for containers: runnerd-intercept, inside one, starts its\n"
	    "             agent through it (docs/containers.md)\n"
	    "  kill SESSION\n"
	    "             end a session now: SIGKILL to its agent, the agent's processes and\n"
	    "             every sandbox (SESSION: its ID, or the start of it, as ps shows)\n"
	    "\n"
	    "Options:\n"
	    "  -c, --config FILE   runner.json to use (default: ../etc/runnerd/runner.json next\n"
	    "                      to the runnerd binary, then /etc/runnerd/runner.json)\n"
	    "  -p, --profile NAME  profile from the config's profiles_dir, or a path to one\n"
	    "  -a, --audit FILE    append the audit log (JSONL) to FILE\n"
	    "  -w, --workspace DIR the project, where commands may write (default:\n"
	    "                      sandbox.workspace, else the directory runnerd starts in)\n"
	    "      --prompt        also ask on /dev/tty when a rule says \"ask\"\n"
	    "  -v, --verbose       say which files were read and why names were stripped\n"
	    "  -h, --help          this text\n"
	    "  -V, --version       print the version\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"profile", required_argument, NULL, 'p'},
	    {"audit", required_argument, NULL, 'a'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"prompt", no_argument, NULL, 'P'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"workspace", required_argument, NULL, 'w'},
	    {NULL, 0, NULL, 0},
	};
	struct rd_cli cli = {0};
	int c;

	/* '+': stop at the first non-option, the subcommand or the agent after "--". */
	while ((c = getopt_long(argc, argv, "+c:p:a:w:vhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cli.config = optarg;
			break;
		case 'p':
			cli.profile = optarg;
			break;
		case 'a':
			cli.audit = optarg;
			break;
		case 'w':
			/* A copy: runnerd zeroes its argument block before the agent starts. */
			if (!(cli.workspace = strdup(optarg))) {
				perror("runnerd");
				return 1;
			}
			break;
		case 'v':
			cli.verbose++;
			break;
		case 'P':
			cli.prompt = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("runnerd %s\n", RUNNERD_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	bool after_dashes = strcmp(argv[optind - 1], "--") == 0;
	const char *word = argv[optind];
	if (!after_dashes && strcmp(word, "check") == 0)
		return rd_cmd_check(&cli, argc - optind, argv + optind);
	if (!after_dashes && strcmp(word, "serve") == 0)
		return rd_cmd_serve(&cli, argc - optind, argv + optind);
	if (!after_dashes && strcmp(word, "explain") == 0)
		return rd_cmd_explain(&cli, argc - optind, argv + optind);
	if (!after_dashes &&
	    (strcmp(word, "pending") == 0 || strcmp(word, "approve") == 0 ||
	     strcmp(word, "deny") == 0 || strcmp(word, "ps") == 0 || strcmp(word, "kill") == 0))
		return rd_cmd_answer(&cli, argc - optind, argv + optind);
	if (!after_dashes) {
		fprintf(
		    stderr,
		    "runnerd: unknown command \"%s\" (to run an agent: runnerd --profile NAME -- "
		    "%s ...)\n",
		    word, word);
		return 2;
	}
	return rd_cmd_run(&cli, argc - optind, argv + optind);
}
