
import os, subprocess, sys, time
tmp = sys.argv[1]
cmd = subprocess.Popen(["sleep", "9871" + sys.argv[2]])
open(os.path.join(tmp, "ready"), "w").close()
while not os.path.exists(os.path.join(tmp, "go")):
    time.sleep(0.02)
try:
    subprocess.run(["/bin/true"])
    res = "ran"
except OSError as e:
    res = "errno %d" % e.errno
# Written whole, then renamed: the test reads it as soon as it exists.
with open(os.path.join(tmp, "result.tmp"), "w") as f:
    f.write(res)
os.rename(os.path.join(tmp, "result.tmp"), os.path.join(tmp, "result"))
