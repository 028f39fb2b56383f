"""An agent that runs one command (true) for each step the test gives it: DIR/go-N, answered by
DIR/done-N, until DIR/stop. argv: DIR."""
import os
import subprocess
import sys
import time

d = sys.argv[1]
open(os.path.join(d, "ready"), "w").close()
n = 1
while not os.path.exists(os.path.join(d, "stop")):
    if os.path.exists(os.path.join(d, "go-%d" % n)):
        r = subprocess.run(["true"])
        with open(os.path.join(d, "done-%d" % n), "w") as f:
            f.write(str(r.returncode))
        n += 1
    time.sleep(0.02)
