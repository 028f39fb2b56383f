"""An agent that holds many fds a command inherits, runs commands while it does, then lets them
go and runs one more. Runs under a runnerd with a low fd limit. argv: how many. Prints JSON:
how each went."""
import json
import os
import subprocess
import sys

held = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(sys.argv[1]))]
for fd in held:
    os.set_inheritable(fd, True)
out = []
for i in range(3):
    try:
        out.append("ran %d" % subprocess.run(["true"], close_fds=False).returncode)
    except OSError as e:
        out.append("errno %d" % e.errno)
for fd in held:
    os.close(fd)
out.append("ran %d" % subprocess.run(["true"]).returncode)
print(json.dumps(out))
