"""An agent under a runnerd with a low fd limit. It starts commands that stay (sleep, with a
second sleep in the background: under "lifetime": "command" a sandbox that ends with what it left,
not one that takes another command) until one fails (runnerd holds a few fds for each running command), then waits for DIR/free, ends them
all, and marks DIR/freed; at DIR/run it runs one more command and writes its status to
DIR/ran; it ends at DIR/stop. argv: DIR. DIR/full holds how many ran and the errno."""
import os
import subprocess
import sys
import time

d = sys.argv[1]


def mark(name, text=""):
    """DIR/name made with text in it, at once (the test reads it as soon as it is there)."""
    path = os.path.join(d, name)
    with open(path + ".part", "w") as f:
        f.write(text)
    os.rename(path + ".part", path)


def wait(name):
    while not os.path.exists(os.path.join(d, name)):
        time.sleep(0.02)


procs = []
err = None
while len(procs) < 1000:
    try:
        procs.append(subprocess.Popen(["sh", "-c", "sleep 1000 & exec sleep 1000"]))
    except OSError as e:
        err = e.errno
        break
mark("full", "%d %s" % (len(procs), err))
wait("free")
for p in procs:
    p.terminate()
for p in procs:
    p.wait()
mark("freed")
wait("run")
mark("ran", str(subprocess.run(["true"]).returncode))
wait("stop")
