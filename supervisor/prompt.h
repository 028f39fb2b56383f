/* --prompt: the oldest pending ask, shown on /dev/tty and answered there. */
#ifndef RD_SUP_PROMPT_H
#define RD_SUP_PROMPT_H

#include "supervisor/core.h"

void sup_prompt_open(struct sup *u);
/* The terminal is readable: an answer (a line), or it is gone. */
void sup_prompt_read(struct sup *u);
/* After each round of events: the ask shown was answered (say how), and the next is shown. */
void sup_prompt_refresh(struct sup *u);

#endif
