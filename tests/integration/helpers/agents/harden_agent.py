
import os, socket, subprocess, sys, time
tmp, ctl = sys.argv[1], sys.argv[2]
# Hold 30 connections to every control socket: the agent's are refused, and must not crowd
# out the operator's.
held = []
for name in os.listdir(ctl):
    for _ in range(30):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(os.path.join(ctl, name))
            held.append(s)
        except OSError:
            pass
odd = subprocess.Popen(["expr", "]52;c;QUFB‮odd"])
big = subprocess.Popen(["expr", "x" * 120000])
open(os.path.join(tmp, "asked"), "w").close()
print("RESULTS", odd.wait(), big.wait(), flush=True)
