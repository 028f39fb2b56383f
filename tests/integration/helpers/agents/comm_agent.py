"""An agent that reads the name (comm) of its running child, for a path and for an exec by fd
(os.execve of an fd, as fexecve). Prints one line each."""
import os
import subprocess
import time

p = subprocess.Popen(["sleep", "1"])
time.sleep(0.3)
print("by path:", open("/proc/%d/comm" % p.pid).read().strip())
p.wait()
fd = os.open("/bin/sleep", os.O_RDONLY)
pid = os.fork()
if pid == 0:
    os.execve(fd, ["sleep", "1"], {})
time.sleep(0.3)
print("by fd:", open("/proc/%d/comm" % pid).read().strip())
os.waitpid(pid, 0)
