"""An agent that starts its command on a fresh pseudo-terminal, as Python callers do with
pty.fork (node-pty and pexpect do the same): the child leads a session of its own with the
slave as its controlling terminal. The agent then drives tty_probe.py through the master:
resizes the window, types a line, presses ^C; and prints what the probe wrote and how it
ended. argv: the probe's command line."""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

cmd = sys.argv[1:]
pid, master = pty.fork()
if pid == 0:
    # The size before the exec (pexpect and node-pty set it there too): set by the parent,
    # it would race the probe's first look.
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    os.execvp(cmd[0], cmd)
out = b""


def read_until(marker, seconds=15):
    global out
    deadline = time.monotonic() + seconds
    while marker not in out and time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            out += chunk


read_until(b"resize me")
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
read_until(b"type a line")
os.write(master, b"hello there\r")
read_until(b"now ^C")
time.sleep(0.2)
os.write(master, b"\x03")
read_until(b"\xff", 3)  # what is left, until it ends
_, status = os.waitpid(pid, 0)
ended = ("signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status)
         else "status %d" % os.WEXITSTATUS(status))
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n") + "ended: " + ended + "\n")
