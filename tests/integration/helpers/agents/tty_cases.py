"""An agent on a terminal, in one of several ways the terminal must stay the agent's and the
user's. argv: MODE DIR. The test types "hunter2" and Enter about a second in, and compares
with the same agent without runnerd. Prints one line: what the agent saw.

- devtty: the agent's fd 0 is /dev/tty (read-only), fds 1 and 2 its pts; its command leaves a
  reader of fds 0 to 2 in the background and exits; DIR/got is what the reader read.
- highfd: the agent's fds 0 to 2 are not the terminal, fd 5 is; its command (which gets
  fd 5) leaves a reader of fd 5 in the background.
- notinput: the agent runs a command with stdin from /dev/null (stderr on the terminal) and
  reads its own stdin meanwhile: the line typed is the agent's.
- agentraw: the agent puts its terminal in raw mode while its command (stdin from /dev/null)
  runs: it is still raw after the command ended.
- writer: the agent's command leaves a process writing to the terminal for 5 s and exits 3:
  the agent has the status at once."""
import os
import subprocess
import sys
import termios
import time
import tty

mode, d = sys.argv[1], sys.argv[2]
reader = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                       "tty_reader.py"), os.path.join(d, "got"), "3"]
q = " ".join("'%s'" % a for a in reader)


def reader_done():
    """Until the background reader has written what it got (10 s at most)."""
    end = time.monotonic() + 10
    while not os.path.exists(os.path.join(d, "got")) and time.monotonic() < end:
        time.sleep(0.05)


if mode == "devtty":
    fd = os.open("/dev/tty", os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    r = subprocess.run(["/bin/sh", "-c", "(%s 0 1 2) & exit 0" % q])
    reader_done()
    print("ran %d" % r.returncode)
elif mode == "highfd":
    fd = os.open("/dev/tty", os.O_RDWR)
    os.dup2(fd, 5)
    r = subprocess.run(["/bin/sh", "-c", "(%s 5) & exit 0" % q], close_fds=False,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    reader_done()
    print("ran %d" % r.returncode)
elif mode == "notinput":
    p = subprocess.Popen(["sleep", "3"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    line = sys.stdin.readline()
    p.wait()
    print("agent read %r" % line)
elif mode == "agentraw":
    p = subprocess.Popen(["sleep", "1"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    tty.setraw(0)
    p.wait()
    time.sleep(0.2)
    raw = not (termios.tcgetattr(0)[3] & termios.ICANON)
    termios.tcsetattr(0, termios.TCSANOW, termios.tcgetattr(0))
    print("still raw %s\r" % raw)
elif mode == "writer":
    t0 = time.monotonic()
    r = subprocess.run(["/bin/sh", "-c",
                        "(i=0; while [ $i -lt 100 ]; do printf .; sleep 0.05; i=$((i+1)); done)"
                        " & exit 3"])
    took = time.monotonic() - t0
    time.sleep(5)
    print("\nstatus %d, %s" % (r.returncode, "at once" if took < 4 else "after %.1f s" % took))
