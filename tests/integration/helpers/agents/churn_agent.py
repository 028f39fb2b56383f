"""An agent that starts commands and kills each one at once, while its handoff is in flight,
then runs one more that must work. argv: DIR N: where "started", "go" and "report" go, and how
many. Waits for DIR/go between the first command and the churn, so that the test can count
runnerd's fds then."""
import json
import os
import random
import signal
import subprocess
import sys
import time

d, n = sys.argv[1], int(sys.argv[2])
first = subprocess.run(["true"]).returncode
open(os.path.join(d, "started"), "w").close()
while not os.path.exists(os.path.join(d, "go")):
    time.sleep(0.02)
progress = os.path.join(d, "progress")
for i in range(n):
    with open(progress, "w") as f:
        f.write("caller %d of %d" % (i + 1, n))
    # A plain fork and exec, killed after a moment of 0 to 1.2 ms: somewhere between its
    # trap and the end of its handoff (Popen would return only after the stub's exec).
    pid = os.fork()
    if pid == 0:
        os.execv("/bin/sleep", ["sleep", "5"])
    time.sleep(random.random() * 0.0012)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
with open(progress, "w") as f:
    f.write("the last command")
last = subprocess.run(["sh", "-c", "echo alive"], capture_output=True, text=True)
with open(os.path.join(d, "report"), "w") as f:
    json.dump({"first": first, "last": [last.returncode, last.stdout.strip()]}, f)
while not os.path.exists(os.path.join(d, "done")):
    time.sleep(0.02)
