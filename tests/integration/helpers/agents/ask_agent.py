
import json, os, signal, socket, subprocess, sys, time
tmp, ctl = sys.argv[1], sys.argv[2]
out = {}
def mark(name):
    open(os.path.join(tmp, name), "w").close()
def wait(name):
    while not os.path.exists(os.path.join(tmp, name)):
        time.sleep(0.02)
def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return [p.returncode, p.stdout.strip(), p.stderr.strip()]

# 1. Approved, while the agent goes on with other commands.
p = subprocess.Popen(["expr", "6", "*", "7"], stdout=subprocess.PIPE, text=True)
out["during"] = run(["echo", "meanwhile"])
mark("during-done")
o, _ = p.communicate()
out["approved"] = [p.returncode, o.strip()]

# 2. Denied.
out["denied"] = run(["expr", "1", "+", "1"])
mark("denied-done")
wait("late-done")

# 3. No answer: ask_timeout_s 1.
out["timeout"] = run(["seq", "3"])

# 4. A signal to the waiting caller withdraws the ask; the caller dies by it.
p = subprocess.Popen(["expr", "9"])
wait("term-now")
p.terminate()
out["terminated"] = p.wait()

# 5. The caller killed while waiting.
p = subprocess.Popen(["expr", "8"])
wait("kill-now")
p.kill()
out["killed"] = p.wait()

# 6. The agent answering its own ask, straight on the socket: refused.
p = subprocess.Popen(["expr", "5"], stdout=subprocess.PIPE, text=True)
wait("self-now")
def try_approve():
    replies = []
    for name in os.listdir(ctl):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(os.path.join(ctl, name))
            req = {"op": "approve", "id": int(open(os.path.join(tmp, "self-id")).read())}
            try:
                s.send(json.dumps(req).encode())
            except BrokenPipeError:
                pass  # refused at once: the reply is already there
            replies.append(json.loads(s.recv(65536)))
        except OSError as e:
            replies.append({"oserror": e.errno})
    return replies
replies = try_approve()
# ... and from a grandchild whose parent exited (no exec: nothing trapped), so that it is
# reparented away from the agent.
r, w = os.pipe()
child = os.fork()
if child == 0:
    if os.fork() == 0:
        while os.getppid() == child:
            time.sleep(0.01)
        os.write(w, json.dumps(try_approve()).encode())
    os._exit(0)
os.close(w)
os.waitpid(child, 0)
got = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    got += chunk
replies += json.loads(got or b"[]") or [{"orphan": "no reply"}]
out["self"] = replies
open(os.path.join(tmp, "self-tried"), "w").close()
o, _ = p.communicate()
out["self_result"] = [p.returncode, o.strip()]

# 7. A command looking for the control sockets.
# (ls must succeed: a count of 0 from a directory it could not read shows nothing)
out["command_sees"] = run(["sh", "-c", "ls -A %s >/dev/null && ls -A %s | wc -l" % (ctl, ctl)])
print(json.dumps(out))
sys.stdout.flush()
