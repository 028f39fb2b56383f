"""runnerd under AppArmor, on Debian 12's own kernel, in a virtual machine (qemu): the kernel
this suite otherwise runs on has no AppArmor, and Debian 12's (6.1) turns it on by default,
as docker and podman then confine every container with a profile of theirs.

The machine boots Debian 12's kernel (linux-image-amd64, fetched with apt-get download) with the
image root (the Debian 12 root with runnerd's .deb installed) as its initramfs, and AppArmor 3's
parser from Debian's apparmor package. Its init:
- loads rd-container, a profile made after docker's default one (no mount, /proc and /sys
  written only where docker's allows) that also denies reading /etc/rd-denied;
- runs a command under `runnerd -- AGENT` (Debian 12's kernel, not this one's);
- starts `runnerd serve`, and in a stand-in for a container (new pid and mount namespaces,
  the capabilities an engine drops out of the bounding set) an agent under rd-container
  through runnerd-intercept: the agent, and each command the daemon runs for it, must run
  under rd-container, whose deny holds for them. Before, the daemon refused every agent under a
  label.

Each result is a line "vm: ..." on the serial console. About 15 s under qemu's emulation.
"""
import glob
import os
import shutil
import subprocess

import common
from common import check

# What the daemon's agent does: its own label read by the shell (no command), then commands.
AGENT = r"""
read l < /proc/self/attr/current; echo "vm: agent label $l"
echo "vm: command label $(/bin/cat /proc/self/attr/current)"
echo "vm: command reads the denied file: $(/bin/cat /etc/rd-denied 2>&1)"
"""

# Made after docker 20.10's default profile (docker-default), plus one file denied.
PROFILE = r"""abi <abi/3.0>,
#include <tunables/global>

profile rd-container flags=(attach_disconnected,mediate_deleted) {
  #include <abstractions/base>
  network,
  capability,
  file,
  umount,
  signal (receive) peer=unconfined,
  signal (send,receive) peer=rd-container,
  deny @{PROC}/* w,
  deny @{PROC}/{[^1-9],[^1-9][^0-9],[^1-9s][^0-9y][^0-9s],[^1-9][^0-9][^0-9][^0-9]*}/** w,
  deny @{PROC}/sys/[^k]** w,
  deny @{PROC}/sys/kernel/{?,??,[^s][^h][^m]**} w,
  deny @{PROC}/sysrq-trigger rwklx,
  deny @{PROC}/kcore rwklx,
  deny mount,
  deny /sys/[^f]*/** wklx,
  deny /sys/f[^s]*/** wklx,
  deny /sys/fs/[^c]*/** wklx,
  deny /sys/fs/c[^g]*/** wklx,
  deny /sys/fs/cg[^r]*/** wklx,
  deny /sys/firmware/** rwklx,
  deny /sys/kernel/security/** rwklx,
  ptrace (trace,read,tracedby,readby) peer=rd-container,
  deny /etc/rd-denied r,
}
"""

INIT = r"""#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t securityfs none /sys/kernel/security
mount -t devtmpfs dev /dev; mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /tmp; mount -t tmpfs run /run; mount -t cgroup2 none /sys/fs/cgroup
echo "vm: kernel $(uname -r), LSM $(cat /sys/kernel/security/lsm)"
echo secret > /etc/rd-denied
echo "vm: parser: $(apparmor_parser -r /etc/apparmor.d/rd-container 2>&1) rc=$?"
mkdir -p /root/project; cd /root/project
echo "vm: plain runnerd: $(runnerd --profile generic -- sh -c '/bin/echo a command ran' 2>&1 | tr '\n' ' ')"
runnerd --profile generic serve --socket /run/runnerd.sock 2>/tmp/serve.log &
i=0; while [ ! -S /run/runnerd.sock ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
echo "vm: without runnerd: $(aa-exec -p rd-container -- cat /etc/rd-denied 2>&1)"
unshare --pid --mount --fork --mount-proc \
    setpriv --bounding-set -sys_admin,-sys_ptrace,-sys_module,-sys_rawio,-mac_admin -- \
    aa-exec -p rd-container -- runnerd-intercept --socket /run/runnerd.sock -- sh -c "$(cat /agent.sh)" 2>&1
echo "vm: intercept rc=$?"
sed 's/^/vm: serve: /' /tmp/serve.log
echo "vm: done"
poweroff -f
"""


def fetch(vm, names):
    """The .debs of names into vm (kept): apt-get download. Returns {name: path} or None."""
    got = {}
    for name in names:
        have = glob.glob(os.path.join(vm, name.split("=")[0] + "_*.deb"))
        if not have:
            r = subprocess.run(["apt-get", "download", "-q", name], cwd=vm,
                               capture_output=True, text=True, timeout=600)
            have = glob.glob(os.path.join(vm, name.split("=")[0] + "_*.deb"))
            if r.returncode != 0 or not have:
                common.skip_part("AppArmor VM: apt-get download %s: %s" % (name, r.stderr[-500:]))
                return None
        got[name] = sorted(have)[-1]
    return got


def kernel_package():
    """Debian 12's kernel image package: what linux-image-amd64 depends on."""
    r = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], capture_output=True,
                       text=True)
    for line in r.stdout.splitlines():
        name = line.strip().split()[-1] if "Depends:" in line else ""
        if name.startswith("linux-image-"):
            return name
    return None


def test_apparmor_vm(work, image_root):
    """See the module's text."""
    if not shutil.which("qemu-system-x86_64") or not shutil.which("cpio"):
        common.skip_part("AppArmor VM: qemu-system-x86_64 or cpio is missing (make "
                         "test-containers installs them)")
        return
    vm = os.path.join(work, "vm")
    os.makedirs(vm, exist_ok=True)
    kpkg = kernel_package()
    debs = fetch(vm, [kpkg, "apparmor"]) if kpkg else None
    if kpkg is None:
        common.skip_part("AppArmor VM: apt-cache knows no linux-image-amd64")
    if not debs:
        return
    ex = os.path.join(vm, "x")
    shutil.rmtree(ex, ignore_errors=True)
    for deb in debs.values():
        subprocess.run(["dpkg-deb", "-x", deb, ex], check=True)
    kernel = sorted(glob.glob(os.path.join(ex, "boot", "vmlinuz-*")))[-1]
    root = os.path.join(vm, "root")
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run(["cp", "-a", image_root, root], check=True)
    # AppArmor's parser and aa-exec, its features and includes; not its .deb whole, whose
    # ./lib and ./sbin would replace the root's links to usr/.
    shutil.copy(os.path.join(ex, "sbin", "apparmor_parser"), os.path.join(root, "usr/sbin"))
    shutil.copy(os.path.join(ex, "usr", "bin", "aa-exec"), os.path.join(root, "usr/bin"))
    for d in ("etc/apparmor", "etc/apparmor.d", "usr/share/apparmor-features"):
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
        shutil.copytree(os.path.join(ex, d), os.path.join(root, d), symlinks=True)
    with open(os.path.join(root, "etc/apparmor.d/rd-container"), "w") as f:
        f.write(PROFILE)
    with open(os.path.join(root, "agent.sh"), "w") as f:
        f.write(AGENT)
    with open(os.path.join(root, "init"), "w") as f:
        f.write(INIT)
    os.chmod(os.path.join(root, "init"), 0o755)
    cpio = os.path.join(vm, "root.cpio")
    with open(cpio, "wb") as out:
        files = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True)
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, input=files.stdout,
                       stdout=out, check=True)
    shutil.rmtree(root, ignore_errors=True)
    try:
        r = subprocess.run(["qemu-system-x86_64", "-m", "2048", "-smp", "2", "-nographic",
                            "-no-reboot", "-kernel", kernel, "-initrd", cpio, "-append",
                            "console=ttyS0 rdinit=/init panic=-1 quiet"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
        out = r.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + "\n(qemu timed out)"
    finally:
        os.unlink(cpio)
    lines = [l[l.index("vm: ") + 4:].strip() for l in out.splitlines() if "vm: " in l]
    said = "\n".join(lines) or out[-3000:]

    def has(prefix):
        return any(l.startswith(prefix) for l in lines)
    check("AppArmor VM: Debian 12's kernel boots with AppArmor on, the profile loads",
          any(l.startswith("kernel ") and "apparmor" in l for l in lines) and
          has("parser:  rc=0"), said)
    check("AppArmor VM: runnerd -- AGENT runs a command on Debian 12's kernel",
          any(l.startswith("plain runnerd:") and "a command ran" in l for l in lines), said)
    check("AppArmor VM: the profile denies the file to a process under it (without runnerd)",
          has("without runnerd: cat: /etc/rd-denied: Permission denied"), said)
    check("AppArmor VM: runnerd serve starts an agent under the profile (before: refused)",
          has("agent label rd-container (enforce)") and has("intercept rc=0"), said)
    check("AppArmor VM: each command the daemon runs for it is under the agent's profile, "
          "whose deny holds for it",
          has("command label rd-container (enforce)") and
          has("command reads the denied file: /bin/cat: /etc/rd-denied: Permission denied"),
          said)
