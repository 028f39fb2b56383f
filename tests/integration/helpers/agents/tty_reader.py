"""A command's background process that reads every fd it names, without blocking, for a few
seconds, as a hostile command reading what is typed in the agent's terminal would; it writes
what it got to FILE. argv: FILE SECONDS FD..."""
import os
import sys
import time

out, secs, fds = sys.argv[1], float(sys.argv[2]), [int(a) for a in sys.argv[3:]]
for fd in fds:
    try:
        os.set_blocking(fd, False)
    except OSError:
        pass
got = b""
end = time.monotonic() + secs
while time.monotonic() < end:
    for fd in fds:
        try:
            got += os.read(fd, 1000)
        except OSError:
            pass
    time.sleep(0.01)
with open(out, "wb") as f:
    f.write(got)
