/* The protocol between `runnerd serve` (on the host) and runnerd-intercept (the client that
 * starts an agent inside a container). One SOCK_SEQPACKET connection, three packets:
 *
 * 1. client -> daemon: a struct rd_serve_hello, and with it (SCM_RIGHTS) a sealed memfd that
 *    holds the agent's argv (argc strings) and the client's environment (envc strings), each
 *    ending in a NUL. The daemon takes the client's pid, uid and namespaces from the socket
 *    (SO_PEERCRED), never from the packet.
 * 2. daemon -> client: a struct rd_serve_answer. status 0: a memfd comes with it, holding the
 *    exec filter (filter_len struct sock_filter), then the agent's path, argv (argc strings) and
 *    environment (envc strings) as the daemon decided them. Else status is an errno and text
 *    (NUL-terminated) says why; the client prints it and exits 125.
 * 3. client -> daemon: a struct rd_serve_loaded with the filter's listener (SCM_RIGHTS); the
 *    client then execs the agent, which is the first notification, and the only call the
 *    daemon lets through. A failed exec is a struct rd_serve_loaded with stage
 *    RD_SERVE_STAGE_EXEC; success closes the client's end (close-on-exec).
 *
 * Both ends run on one machine: native byte order. */
#ifndef RD_SERVE_PROTO_H
#define RD_SERVE_PROTO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RD_SERVE_MAGIC   0x72647376u /* "rdsv" */
#define RD_SERVE_VERSION 1
/* The socket `runnerd serve` listens on, and runnerd-intercept connects to, by default. */
#define RD_SERVE_SOCKET "/run/runnerd.sock"
/* The most the memfds of packets 1 and 2 may hold. */
#define RD_SERVE_MAX_BLOCK (16u << 20)

struct rd_serve_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t argc;
	uint32_t envc;
	char profile[64]; /* the profile asked for, or "": the daemon's default */
};

struct rd_serve_answer {
	uint32_t magic;
	uint32_t status; /* 0, or an errno */
	uint32_t filter_len;
	uint32_t argc;
	uint32_t envc;
	char text[492];
};

enum { RD_SERVE_STAGE_LOADED = 0, RD_SERVE_STAGE_FILTER = 1, RD_SERVE_STAGE_EXEC = 2 };

struct rd_serve_loaded {
	uint32_t magic;
	uint32_t stage; /* RD_SERVE_STAGE_*: LOADED with the listener, or where it failed */
	int32_t err;
};

/* n strings of a packet's memfd from *p (up to end), each ending in a NUL: a NULL-terminated
 * array (malloc'd) pointing into the block, *p past them; NULL if they do not add up. The block
 * must be sealed against writing, or a private copy. */
static inline char **rd_serve_strings(char **p, char *end, size_t n)
{
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++) {
		char *nul = *p < end ? memchr(*p, '\0', (size_t)(end - *p)) : NULL;
		if (!nul) {
			free(v);
			return NULL;
		}
		v[i] = *p;
		*p = nul + 1;
	}
	return v;
}

#endif
