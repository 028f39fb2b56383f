/* Small helpers shared by every runnerd library: cleanup attributes and ownership moves. */
#ifndef RD_UTIL_H
#define RD_UTIL_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _wur_          __attribute__((warn_unused_result))
#define _unused_       __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void rd_freep(void *p)
{
	free(*(void **)p);
}

static inline void rd_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#define _cleanup_free_  __attribute__((cleanup(rd_freep)))
#define _cleanup_close_ __attribute__((cleanup(rd_closep)))

/* Hand ownership on: returns the value and leaves NULL behind, so the cleanup attribute of
 * the source variable does nothing. */
#define steal_pointer(pp)                                                                          \
	({                                                                                         \
		__typeof__(*(pp)) _tmp = *(pp);                                                    \
		*(pp) = NULL;                                                                      \
		_tmp;                                                                              \
	})

#define steal_fd(fdp)                                                                              \
	({                                                                                         \
		int _tmp = *(fdp);                                                                 \
		*(fdp) = -1;                                                                       \
		_tmp;                                                                              \
	})

#endif
