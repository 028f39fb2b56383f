
import fcntl, subprocess, termios
# The agent typing its own answer: refused (EPERM) under --prompt.
try:
    with open("/dev/tty", "rb") as t:
        fcntl.ioctl(t, termios.TIOCSTI, b"y")
    print("TIOCSTI accepted", flush=True)
except OSError as e:
    print("TIOCSTI errno", e.errno, flush=True)
for a in (["expr", "2", "+", "3"], ["expr", "4", "+", "4"],
          ["expr", "\x1b[2J" + "\x01" * 600 + "; touch pwned"]):
    p = subprocess.run(a, capture_output=True, text=True)
    print("RESULT", p.returncode, p.stdout.strip()[:20], flush=True)
