
import json, os, subprocess, sys, time
secret, store, canary = sys.argv[1], sys.argv[2], sys.argv[3]
# None where the command failed: an error must not pass for an empty file or directory.
def cat(path):
    r = subprocess.run(["cat", path], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None
def ls(path):
    r = subprocess.run(["ls", "-A", path], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else None
def write(path, text):
    with open(path, "w") as f:
        f.write(text)
def settle():
    # One command, then time for the next sandbox to be made with the paths as they are now.
    subprocess.run(["true"])
    time.sleep(0.3)
out = {}
settle()
write(secret, "late-" + canary)
out["file"] = cat(secret)
settle()
os.makedirs(store)
write(os.path.join(store, "key"), canary)
out["dir"] = ls(store)
settle()
write(secret + ".new", "new-" + canary)
os.rename(secret + ".new", secret)
out["file_replaced"] = cat(secret)
settle()
os.rename(store, store + ".old")
os.makedirs(store)
write(os.path.join(store, "key2"), canary)
out["dir_replaced"] = ls(store)
print(json.dumps(out))
