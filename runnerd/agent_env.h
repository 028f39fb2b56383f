/* Variables the agent takes from files at its start. Gemini CLI and Qwen Code load the first
 * ".env" they find from their working directory up (then one in their home) into their own
 * environment, never replacing a variable the environment has: a command that writes the
 * project's .env with GOOGLE_GEMINI_BASE_URL had the next session send its key to the
 * command's listener. The profile names the files (agent.env_files, in the agent's order) and
 * the variables that must not come from one that commands can write (agent.env_guard: where
 * its requests and key go, TLS checks, telemetry endpoints). */
#ifndef RD_AGENT_ENV_H
#define RD_AGENT_ENV_H

#include <stdbool.h>
#include <sys/types.h>

#include "lib/strv.h"
#include "policy/policy.h"
#include "sandbox/view.h"

/* Each name of prof's agent.env_guard that *env (the agent's, NULL-terminated, malloc'd
 * entries; grown here) lacks is added: with the value the agent's env file gives it, when
 * commands cannot write that file (view); else empty, which these agents read as unset and
 * do not replace from a file. The agent's env file is the first of agent.env_files that
 * exists: relative ones in cwd and each directory above it, then "~/" (the env's HOME) and
 * "${NAME}/" ones ("${NAME:-~}/": NAME's value, or HOME when it is unset or empty). A line
 * for each guarded name that a file commands can write sets goes to notes. served: runnerd
 * serve, root of the machine in the agent's container: a file is read only when uid may
 * (owner uid, or readable by all). Returns 0 or -ENOMEM. */
int rd_agent_env_guard(const struct rd_profile *prof, const struct rd_view_paths *view,
                       const char *cwd, bool served, uid_t uid, char ***env, struct rd_strv *notes);

#endif
