"""An agent whose commands try to signal everything they can name: their own process group,
every process (-1), and every process group they can see. The agent records what reaches it;
then it signals the process group of a command it started in a session of its own, as Python
callers do (start_new_session + os.killpg), and reports what the command saw. JSON on stdout."""
import json
import os
import signal
import subprocess
import sys
import time

got = []
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
    signal.signal(s, lambda n, f: got.append(signal.Signals(n).name))

attempts = [
    "kill -USR1 0",
    "kill -USR2 -1",
    # Every process group visible from the command (its sandbox's own, if it is one).
    "for g in $(ps -eo pgid= | sort -u); do kill -HUP -$g 2>/dev/null; done",
    # The process groups of its ancestors, as numbers: outside a pid namespace they name the
    # agent's, or runnerd's.
    "kill -TERM -$(ps -o pgid= -p $PPID | tr -d ' ') 2>/dev/null; kill -INT -$PPID 2>/dev/null",
    # ... and the caller's and the agent's pids and groups as the agent knows them.
    "kill -USR1 -%d -%d %d 2>/dev/null; true" % (os.getpgrp(), os.getpid(), os.getpid()),
]
for a in attempts:
    # Only inside a pid namespace (a sandbox's pids are small): "kill -1" outside one would
    # reach every process of the user.
    subprocess.run(["sh", "-c", '[ "$$" -lt 100 ] || exit 0; ' + a])
time.sleep(0.3)

# The agent's signal to the group of a command it started in its own session reaches it.
p = subprocess.Popen(["sh", "-c", 'trap "echo TERM; exit 7" TERM; echo ready; '
                      "while :; do sleep 0.05; done"], start_new_session=True,
                     stdout=subprocess.PIPE, text=True)
ready = p.stdout.readline().strip()
os.killpg(p.pid, signal.SIGTERM)
out = p.stdout.read().strip()
rc = p.wait()
print(json.dumps({"got": got, "group": [ready, out, rc]}))
