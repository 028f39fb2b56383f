/* Starting the agent under the exec filter. */
#ifndef RD_LAUNCHER_H
#define RD_LAUNCHER_H

#include "intercept/filter.h"
#include "lib/error.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rd_agent {
	pid_t pid;
	int pidfd;
	int listener; /* the seccomp notification fd */
};

/* Fork a child that loads the filter, hands runnerd the listener and execs path (resolved
 * already: the one CONTINUE of an original call is spent on the real binary). The child gets
 * sigmask and default dispositions. Returns 0 once the agent's exec has succeeded, or -errno
 * (the exec's own errno when it failed) with err saying why. */
int rd_agent_start(const char *path, char *const argv[], char *const envp[],
                   const struct rd_bpf *filter, const sigset_t *sigmask, struct rd_agent *out,
                   struct rd_error *err) _wur_;

/* The same for an agent that runnerd-intercept starts for `runnerd serve`, inside a container
 * (lib/serve_proto.h): sock is the connection, pid the client's as runnerd sees it. The client
 * gets the filter and path, argv and envp, loads the filter, hands back the listener and execs
 * path. out->pid and out->listener are set; out->pidfd is the caller's to set. */
int rd_agent_start_remote(int sock, pid_t pid, const char *path, char *const argv[],
                          char *const envp[], const struct rd_bpf *filter, struct rd_agent *out,
                          struct rd_error *err) _wur_;

/* Tell runnerd-intercept why its agent does not start (errno e, text): it prints the text. */
void rd_agent_refuse_remote(int sock, int e, const char *text);

/* Send a seccomp notification reply; returns 0 or -errno (-ENOENT: the task is gone or the
 * call was interrupted). error is a negative errno, or 0 with continue_call. */
int rd_notif_reply(int listener, uint64_t id, int error, bool continue_call);

#endif
