
import json, os, shutil, subprocess, sys
tmp = sys.argv[1]
out = {}
def run(argv, **kw):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, **kw)
        return [p.returncode, p.stdout.strip()]
    except OSError as e:
        return ["errno", e.errno]
out["granted"] = run(["printenv", "RD_SECRET_TOKEN"])
out["env"] = run(["sh", "-c", "env | grep -c RD_SECRET_TOKEN"])
out["denied"] = run(["touch", os.path.join(tmp, "touched")])
out["touched"] = os.path.exists(os.path.join(tmp, "touched"))
out["ask"] = run(["rm", "-f", os.path.join(tmp, "nothing")])
evil = os.path.join(tmp, "evil")
shutil.copy("/usr/bin/printenv", evil)
out["argv0"] = run(["printenv", "RD_SECRET_TOKEN"], executable=evil)
print(json.dumps(out))
