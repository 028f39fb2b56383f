"""A command that looks at its terminal, as an interactive program would: is stdio a terminal,
can it open /dev/tty, is it in the foreground, its window size; then it waits for a resize
(SIGWINCH), reads a line typed on the terminal, writes to stdout and stderr in turn, and waits
for ^C. Started by a caller that holds the other side of its terminal (pty_agent.py and the
like), which says what to type when."""
import fcntl
import os
import signal
import struct
import sys
import termios


def size():
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(1, termios.TIOCGWINSZ, b"\0" * 8))
    return "%dx%d" % (rows, cols)


def say(text):
    os.write(1, (text + "\n").encode())


try:
    fd = os.open("/dev/tty", os.O_RDWR)
    os.close(fd)
    dev_tty = "ok"
except OSError as e:
    dev_tty = "errno %d" % e.errno
say("tty: %s %s %s, name %s, /dev/tty %s, foreground %s, size %s" % (
    os.isatty(0), os.isatty(1), os.isatty(2),
    os.ttyname(0).startswith("/dev/pts/") if os.isatty(0) else None, dev_tty,
    os.tcgetpgrp(0) == os.getpgrp(), size()))
winched = []
signal.signal(signal.SIGWINCH, lambda s, f: winched.append(1))
say("resize me")
signal.sigtimedwait([signal.SIGWINCH], 10) if not winched else None
say("winch %s" % size())
say("type a line")
line = sys.stdin.readline().strip()
say("read [%s]" % line)
for i in range(3):
    os.write(1, b"out%d\n" % i)
    os.write(2, b"err%d\n" % i)
# ^C ends the probe by the signal itself, as a C program's would: Python's KeyboardInterrupt
# traceback would be written as the process dies, and node-pty reports the exit before it has
# read what came last, or after, as the timing falls.
signal.signal(signal.SIGINT, signal.SIG_DFL)
say("now ^C")
signal.pause()
