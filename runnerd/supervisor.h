/* The supervisor: one single-threaded epoll loop that owns the agent's exec listener and every
 * command's sandbox, from the trapped exec to the stub's exit. */
#ifndef RD_SUPERVISOR_H
#define RD_SUPERVISOR_H

#include "audit.h"
#include "cmdfilter.h"
#include "config.h"
#include "launcher.h"

#include <signal.h>
#include <stdio.h>

struct rd_session {
	const struct rd_config *cfg;
	const struct rd_profile *prof;
	struct rd_audit *audit;
	int verbose;
	int stub_fd;              /* O_RDONLY of runnerd-stub, injected into every caller */
	struct rd_bpf cmd_filter; /* the commands' seccomp profile ("default") */
	struct rd_agent agent;
	sigset_t orig_mask; /* what runnerd's own mask was before it blocked its signals */
	int agent_signal;   /* set by rd_supervise: the signal that killed the agent, or 0 */
};

/* Run until the agent exits; returns its exit status as a shell reports it (code, or 128 +
 * signal, with the signal in agent_signal). Every command still running then is killed. */
int rd_supervise(struct rd_session *s);

#endif
