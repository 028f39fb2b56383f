"""An agent that leaves three sandboxes behind (each command starts a sleep in the
background and exits), says so, waits for the test's go, then tries three commands more.
argv: DIR MARK: where ready, go and the report go, and a word for the sleeps. Writes JSON to
DIR/report: how the last of them fared (each fares the same)."""
import json
import os
import subprocess
import sys
import time

d, mark = sys.argv[1], sys.argv[2]
for i in range(3):
    subprocess.run(["sh", "-c", "sleep 60%s & echo started" % mark], stdout=subprocess.DEVNULL)
open(os.path.join(d, "ready"), "w").close()
while not os.path.exists(os.path.join(d, "go")):
    time.sleep(0.02)
for i in range(3):
    try:
        r = subprocess.run(["true"])
        last = "ran %d" % r.returncode
    except OSError as e:
        last = "errno %d" % e.errno
with open(os.path.join(d, "report"), "w") as f:
    json.dump({"last": last}, f)
