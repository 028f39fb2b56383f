"""An agent that kills its command (SIGKILL, as an agent's timeout does) while what the
command started in the background runs on: a loopback HTTP server. argv: PORT DIR SECONDS:
the server's port, the directory it serves (also how the test finds it), and the number the
command's main process sleeps (how the test finds that). After the kill it marks DIR/killed
and waits for DIR/stop. Prints JSON: how the command ended, and whether the server answered
before and after."""
import json
import os
import signal
import subprocess
import sys
import time

port, serve, secs = sys.argv[1], sys.argv[2], sys.argv[3]
fetch = ("import urllib.request\n"
         "try:\n"
         "    print(urllib.request.urlopen('http://127.0.0.1:%s/', timeout=2).status)\n"
         "except Exception as e:\n"
         "    print(type(e).__name__)\n" % port)


def reach():
    r = subprocess.run([sys.executable, "-c", fetch], capture_output=True, text=True)
    return r.stdout.strip()


p = subprocess.Popen(["sh", "-c", "python3 -m http.server %s --bind 127.0.0.1 --directory %s "
                      ">/dev/null 2>&1 & exec sleep %s" % (port, serve, secs)])
before = ""
for _ in range(50):
    before = reach()
    if before == "200":
        break
    time.sleep(0.1)
p.send_signal(signal.SIGKILL)
rc = p.wait()
time.sleep(0.3)
after = reach()
open(os.path.join(serve, "killed"), "w").close()
while not os.path.exists(os.path.join(serve, "stop")):
    time.sleep(0.02)
print(json.dumps({"rc": rc, "before": before, "after": after}))
