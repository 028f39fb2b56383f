/* Turning the trapped caller into runnerd-stub without writing its memory: inject the stub
 * and a control socket (SECCOMP_IOCTL_NOTIF_ADDFD), interrupt it, fail the original exec with
 * EPERM, and at the interrupt stop rewrite its registers so that it re-executes the syscall
 * instruction as execveat(stubfd, "", argv, NULL, AT_EMPTY_PATH). The "" is the terminating
 * NUL of the path it passed. That execveat is trapped again, checked from registers only and
 * let through; at PTRACE_EVENT_EXEC the new image must be the stub (dev+ino) or the task is
 * killed. */
#ifndef RD_HANDOFF_H
#define RD_HANDOFF_H

#include "error.h"

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Seize with PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL: if runnerd dies mid-handoff, the
 * half-handed-off task dies with it. */
int rd_handoff_seize(pid_t tid) _wur_;

/* Inject the stub (O_CLOEXEC, any number: returned in *stub_fd_in_task) and the control
 * socket (exactly at ctl_target, kept across exec). */
int rd_handoff_addfds(int listener, uint64_t id, int stub_fd, int ctl_fd, int ctl_target,
                      int *stub_fd_in_task, struct rd_error *err) _wur_;

/* The registers at the interrupt stop, after the original exec returned -EPERM: point them
 * back at the syscall instruction as execveat(stub_fd, empty_path, argv, NULL, AT_EMPTY_PATH).
 * Fails (the caller kills the task) if the stop is not where it must be. Arch-specific. */
int rd_arch_rewrite_exec(pid_t tid, int stub_fd, uint64_t empty_path, uint64_t argv,
                         struct rd_error *err) _wur_;

/* Is this notification exactly the execveat rd_arch_rewrite_exec set up? Registers only. */
bool rd_arch_is_stub_exec(const struct seccomp_data *d, int stub_fd, uint64_t empty_path,
                          uint64_t argv);

/* Is this notification from the native entry point (x86_64 proper, not x32 or i386)? */
bool rd_arch_native(const struct seccomp_data *d);
bool rd_arch_is_execveat(const struct seccomp_data *d);

#endif
