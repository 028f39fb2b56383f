"""An agent that gives runnerd kill something to end: a sandbox its command left running in
the background, a command still running, and a process of its own that never exec'd and whose
parent has exited (an orphan: runnerd, the subreaper, is its parent now). Then its main
thread exits while another loops.
argv: DIR MARK. Writes DIR/orphan (the orphan's pid) and DIR/ready once all of it runs."""
import ctypes
import os
import subprocess
import threading
import sys
import time

d, mark = sys.argv[1], sys.argv[2]
subprocess.run(["sh", "-c", "sleep 300%s & echo started" % mark], stdout=subprocess.DEVNULL)
running = subprocess.Popen(["sleep", "301" + mark])
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()  # out of reach of a signal to the agent's group or session
    if os.fork() == 0:
        os.close(r)
        os.write(w, b"%d" % os.getpid())
        os.close(w)
        while True:
            time.sleep(1)
    os._exit(0)
os.close(w)
os.wait()
with open(os.path.join(d, "orphan"), "w") as f:
    f.write(os.read(r, 32).decode())

def spin():
    while True:
        time.sleep(0.05)


# The agent's main thread exits and another goes on: /proc shows the agent as a zombie (state
# Z), which it is not.
threading.Thread(target=spin).start()
open(os.path.join(d, "ready"), "w").close()
ctypes.CDLL(None).pthread_exit(None)
