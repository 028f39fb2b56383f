/* Which binary the agent really is. The launcher's exec is the one original call runnerd
 * lets through, so it must land on the real program: an agent that is a script run through
 * "#!/usr/bin/env node" would otherwise have env's own execvp of node trapped, and the agent
 * would run as a sandboxed command, unintercepted and without its key. runnerd does what env
 * would: it finds the interpreter on PATH and execs it with the script. */
#ifndef RD_AGENT_PATH_H
#define RD_AGENT_PATH_H

#include "lib/error.h"
#include "supervisor/supervisor.h"

/* Resolve name on path_env (":"-separated; an empty entry is "."), as execvp would. NULL if
 * not found. */
char *rd_agent_which(const char *name, const char *path_env);

/* Given the resolved agent path and argv, rewrite them while the file starts with
 * "#!/usr/bin/env [-S] NAME [ARGS]" (or /bin/env): *path becomes NAME's path on path_env,
 * *argv becomes {NAME, ARGS..., script, argv[1..]}, as the kernel and env together would
 * make it. Up to 4 levels. Returns 0 (rewritten or left alone) or -errno with err set when
 * the interpreter named is not on PATH. */
int rd_agent_resolve_env_shebang(char **path, char ***argv, const char *path_env,
                                 struct rd_error *err) _wur_;

/* The agent's own programs (supervisor.h, struct rd_agent_files), taken when the session
 * starts: launched is the agent's file as found on PATH, run the path runnerd execs (its
 * interpreter, when launched is a "#!/usr/bin/env" script). Every file that prof's
 * agent.programs names ("{package}/..." from the nearest directory above the launcher that
 * holds a package.json, globs expanded); for a launcher that is a script, it and the
 * interpreter it runs in (the interpreter only with the script: python or bash alone would be
 * every exec). A file that lies where commands can write (view: a writable root, not
 * protected) is left out: a command could have put its own code there. The path of each file taken
 * (and of the script) goes to paths, for the views that must keep them read-only. A line for each
 * file left out, and for each entry that names no file, goes to notes. 0 or -ENOMEM. */
int rd_agent_take_files(const char *launched, const char *run, const struct rd_profile *prof,
                        const struct rd_view_paths *view, struct rd_agent_files *out,
                        struct rd_strv *paths, struct rd_strv *notes) _wur_;

#endif
