
import os, subprocess, sys, time
tmp = sys.argv[1]
cmd = subprocess.Popen(["sleep", "9876" + sys.argv[2]])
open(os.path.join(tmp, "ready"), "w").close()
while not os.path.exists(os.path.join(tmp, "go")):
    time.sleep(0.02)
res = []
for i in range(3):
    try:
        res.append("ran %d" % subprocess.run(["/bin/sh", "-c", "exit 7"]).returncode)
    except OSError as e:
        res.append("errno %d" % e.errno)
# A sandbox runnerd forked itself empties the bounding set as the zygote's reapers do.
st = subprocess.run(["grep", "^CapBnd:", "/proc/self/status"], capture_output=True, text=True)
res.append("capbnd=" + "".join(st.stdout.split()[1:]))
res.append("running" if cmd.poll() is None else "ended %s" % cmd.poll())
with open(os.path.join(tmp, "result.tmp"), "w") as f:
    f.write(" ".join(res))
os.rename(os.path.join(tmp, "result.tmp"), os.path.join(tmp, "result"))
