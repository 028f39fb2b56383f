/* Turning the trapped caller into runnerd-stub without writing its memory: inject the stub
 * and a control socket (SECCOMP_IOCTL_NOTIF_ADDFD), interrupt it, answer the original exec
 * (it returns the socket's number), and at the interrupt stop rewrite its registers so that
 * it re-executes the syscall instruction as execveat(stubfd, "", argv, NULL, AT_EMPTY_PATH).
 * The "" is the terminating NUL of the path it passed. That execveat is trapped again, checked
 * from registers only and let through; at PTRACE_EVENT_EXEC the new image must be the stub
 * (dev+ino) or the task is killed. If the command's exec fails before that, the registers and
 * signal mask saved at the stop give the caller its own exec back, failed. */
#ifndef RD_HANDOFF_H
#define RD_HANDOFF_H

#include "lib/error.h"

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Seize with PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL: if runnerd dies mid-handoff, the
 * half-handed-off task dies with it. */
int rd_handoff_seize(pid_t tid) _wur_;

/* Inject the stub, O_CLOEXEC, at want_fd (or, if want_fd < 0, the lowest free number); its
 * number in the task goes to *stub_fd_in_task. Done before the command is launched, while
 * the task gets a CPU at once: an ADDFD waits for the task to install the fd itself. If the
 * command's exec then fails, the task keeps this fd until its next exec closes it. */
int rd_handoff_add_stub(int listener, uint64_t id, int stub_fd, int want_fd, int *stub_fd_in_task,
                        struct rd_error *err) _wur_;

/* Inject the control socket exactly at ctl_target, kept across exec. With send, answer the
 * trapped exec in the same step (SECCOMP_ADDFD_FLAG_SEND): the call returns ctl_target, one
 * round trip instead of an ADDFD and a reply. Without, the exec stays trapped. */
int rd_handoff_send_ctl(int listener, uint64_t id, int ctl_fd, int ctl_target, bool send,
                        struct rd_error *err) _wur_;

/* Answer the trapped exec with val, as its return value (what ADDFD_FLAG_SEND would have). */
int rd_handoff_answer(int listener, uint64_t id, int64_t val) _wur_;

/* What the caller was at the interrupt stop, before its registers were rewritten: enough to
 * give it back its own exec, failed, if the command's exec fails after all. */
struct rd_saved_task {
	uint64_t regs[32]; /* the arch's register set */
	uint64_t sigmask;
};

/* Seize options while a failed handoff is undone: syscall stops are told apart. */
int rd_handoff_trace_syscalls(pid_t tid) _wur_;

/* At the interrupt stop, after the original exec returned `returned`: check that the task
 * stands just past the syscall instruction of that exec, and save its registers and signal
 * mask. Fails (the caller kills the task) if the stop is not where it must be. Arch-specific,
 * as the three below. */
int rd_arch_save_stop(pid_t tid, long returned, struct rd_saved_task *save,
                      struct rd_error *err) _wur_;

/* From the saved stop: point the registers back at the syscall instruction as
 * execveat(stub_fd, empty_path, argv, NULL, AT_EMPTY_PATH), every signal blocked. */
int rd_arch_rewrite_exec(pid_t tid, const struct rd_saved_task *save, int stub_fd,
                         uint64_t empty_path, uint64_t argv, struct rd_error *err) _wur_;

/* The task is stopped at the point saved: make it execute close_range(lo, hi, 0) there, as if
 * it had called it itself. Every signal blocked meanwhile. Resume it with PTRACE_SYSCALL. */
int rd_arch_inject_close(pid_t tid, const struct rd_saved_task *save, int lo, int hi,
                         struct rd_error *err) _wur_;

/* The task is stopped at the point saved: its registers and signal mask back as they were,
 * except that its exec returns -e. */
int rd_arch_return_errno(pid_t tid, const struct rd_saved_task *save, int e,
                         struct rd_error *err) _wur_;

/* Is this notification exactly the execveat rd_arch_rewrite_exec set up? Registers only. */
bool rd_arch_is_stub_exec(const struct seccomp_data *d, int stub_fd, uint64_t empty_path,
                          uint64_t argv);

/* Is this notification from the native entry point (x86_64 proper, not x32 or i386)? */
bool rd_arch_native(const struct seccomp_data *d);
bool rd_arch_is_execveat(const struct seccomp_data *d);

#endif
