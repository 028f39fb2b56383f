/* The control socket: where an operator lists the pending asks and answers them (runnerd
 * pending, approve, deny), from outside the session. */
#ifndef RD_SUP_CONTROL_H
#define RD_SUP_CONTROL_H

#include "supervisor/core.h"

/* Watch the control socket (and its clients' timer), if there is one; 0 or -errno. */
int sup_control_open(struct sup *u);
/* The socket is readable: take the connections waiting. */
void sup_control_accept(struct sup *u);
/* A connection is readable: its request, answered. */
void sup_control_client(struct sup *u, struct client *cl);
/* Once a second while there are connections: drop the idle ones, listen again after EMFILE. */
void sup_control_tick(struct sup *u);
/* Free the connections dropped during this round of events. */
void sup_control_reap(struct sup *u);

#endif
