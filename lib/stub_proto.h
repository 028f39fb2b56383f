/* The protocol between runnerd and runnerd-stub, the static program that stands in for a
 * command in the caller's process. One SOCK_SEQPACKET socket: one message per packet, fixed
 * size, native byte order (both ends are on one machine). The stub finds its end of the
 * socket at RD_STUB_CONTROL_FD(soft RLIMIT_NOFILE): runnerd places it there with
 * SECCOMP_IOCTL_NOTIF_ADDFD + SECCOMP_ADDFD_FLAG_SETFD, and the stub, whose environment is
 * empty and whose argv is the caller's, computes the same number from its own rlimit. */
#ifndef RD_STUB_PROTO_H
#define RD_STUB_PROTO_H

#include <stdint.h>

/* The highest fd number below both the soft RLIMIT_NOFILE and 1024: high enough not to be
 * one a program picks by chance, low enough not to grow the fd table past one page. */
#define RD_STUB_CONTROL_FD(nofile_soft) ((nofile_soft) >= 1024 ? 1023 : (int)(nofile_soft)-1)

enum rd_stub_msg_type {
	/* stub -> runnerd: the stub received a signal; value = signo, code = si_code,
	 * pid = si_pid (as the stub saw it). */
	RD_STUB_SIGNAL = 1,
	/* runnerd -> stub: the command ended; value = its wait status (as from waitpid).
	 * The stub exits with the same code, or dies by the same signal without a core. */
	RD_STUB_EXIT = 2,
	/* runnerd -> stub: write text[0..len) to the fd passed with this packet (SCM_RIGHTS),
	 * then close that fd. Used to tell the caller why a command did not run. */
	RD_STUB_SAY = 3,
	/* sandbox -> stub: the command's terminal. Two fds come with it: the master of the
	 * pseudo-terminal the command has as its controlling terminal, and the caller's terminal.
	 * The stub copies what the command writes to the caller's terminal. value != 0: the
	 * caller's fd 0 was on that terminal, so the stub also copies what is typed there to the
	 * command, with the caller's terminal in raw mode while the stub is in its foreground, and
	 * puts the caller's modes back whenever it stops or ends. */
	RD_STUB_PTY = 4,
	/* sandbox -> stub: the command stopped, by signal value: the stub stops by the same
	 * signal, so that its caller sees its child stopped (a shell's "Stopped"); its SIGCONT
	 * goes on to the command. The stub reads every message queued before it acts on one:
	 * a stop a later RD_STUB_CONTINUED undoes is not made. */
	RD_STUB_STOPPED = 5,
	/* runnerd -> stub: the name the command's process has (its comm, text[0..len), at most
	 * 15 bytes), which the stub takes, as the caller's exec of the command would have set it
	 * (a psutil name(), a ps -o comm, sees the command's name, not the stub's). */
	RD_STUB_NAME = 6,
	/* sandbox -> stub: the command goes on after a stop that its caller did not end (a
	 * process of the sandbox sent it SIGCONT). runnerd sends the stopped stub a SIGCONT,
	 * which wakes it to read this. */
	RD_STUB_CONTINUED = 7,
	/* stub -> runnerd: the stub stops now (value = the signal), told by the sandbox that its
	 * command stopped. Sent once per command: from then on runnerd reads the reaper's reports
	 * as they come, to wake the stub (SIGCONT) when the command goes on without its caller's
	 * word or ends; a command that never stops costs runnerd no wake-up for it. */
	RD_STUB_STOPPING = 8,
	/* stub -> runnerd: runnerd's SIGCONT woke it; value = the RD_STUB_CONTINUED messages it
	 * has read so far. A stop signal discards a pending SIGCONT, so a wake-up that came just
	 * before the stub stopped is lost: runnerd sends it again until the stub has read every
	 * CONTINUED the reaper reported (or has gone). */
	RD_STUB_AWAKE = 9,
};

#define RD_STUB_TEXT_MAX 480

struct rd_stub_msg {
	uint32_t type;
	int32_t value;
	int32_t code;
	int32_t pid;
	uint32_t len;
	char text[RD_STUB_TEXT_MAX];
};

#endif
