
import os, random, subprocess, sys, time
secret, n = sys.argv[1], int(sys.argv[2])
leaks = 0
for i in range(n):
    try:
        os.unlink(secret)
    except FileNotFoundError:
        pass
    subprocess.run(["/bin/true"])  # takes the spare: the next one sets up its masks now
    t = time.perf_counter() + random.uniform(0, 0.0015)
    while time.perf_counter() < t:
        pass
    with open(secret, "w") as f:
        f.write("secret-%d\n" % i)
    out = subprocess.run(["/bin/cat", secret], capture_output=True, text=True).stdout
    leaks += "secret" in out
    time.sleep(0.005)
print("leaks=%d" % leaks)
