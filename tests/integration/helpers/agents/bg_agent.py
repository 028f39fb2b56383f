"""An agent whose first command leaves a loopback HTTP server running in the background and
exits; later commands try to reach it, as an agent's next tool call reaches a dev server.
argv: PORT DIR WAIT: the server's port, the directory it serves (also how the test finds it),
and how long to wait before the last try. Prints JSON: what each try found."""
import json
import subprocess
import sys
import time

port, serve, wait = sys.argv[1], sys.argv[2], float(sys.argv[3])
fetch = ("import urllib.request, sys\n"
         "try:\n"
         "    print(urllib.request.urlopen('http://127.0.0.1:%s/', timeout=2).status)\n"
         "except Exception as e:\n"
         "    print(type(e).__name__)\n" % port)
start = subprocess.run(["sh", "-c", "python3 -m http.server %s --bind 127.0.0.1 --directory %s "
                        ">/dev/null 2>&1 & echo started" % (port, serve)],
                       capture_output=True, text=True)
found = []
for _ in range(50):
    r = subprocess.run([sys.executable, "-c", fetch], capture_output=True, text=True)
    found.append(r.stdout.strip())
    if found[-1] == "200":
        break
    time.sleep(0.1)
time.sleep(wait)
last = subprocess.run([sys.executable, "-c", fetch], capture_output=True, text=True)
print(json.dumps({"start": [start.returncode, start.stdout.strip()], "first": found[-1],
                  "last": last.stdout.strip()}))
