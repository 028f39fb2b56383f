#!/usr/bin/env python3
"""runnerd in real container engines (make test-containers): podman with runc, rootful and
rootless (as the CI's unprivileged user, runnerd-ci), and docker (a dockerd of the test's own,
started and stopped here).

The image is made here, from nothing a registry holds: a minimal Debian 12 root by debootstrap
(kept under WORK and reused), a copy of it with the .deb of `make deb` installed by dpkg (a
clean Debian 12 root taking the package), imported into podman. Then, in containers of it:

- under the engine's defaults, runnerd refuses to start the agent, with the cause and the fix
  docs/containers.md gives (root, and --user), and `runnerd check --system` says the same;
- with that recipe (--security-opt unmask=/proc/*), commands run, as root and as --user, and a
  command sees no secret of the container's environment that its profile does not grant, nor
  the agent's environment through /proc;
- the demo of `make run` runs, from the installed package;
- packaging/Containerfile, built FROM that Debian root, makes an agent image whose commands
  run with the recipe;
- rootless: the container's root is refused with its own cause and fix (--user), and the
  recipe with --user runs commands;
- docker: its defaults refused with the seccomp profile's cause and fix, then /proc's, and
  its recipe (seccomp=unconfined, systempaths=unconfined) running commands, as root and as
  --user;
- daemon mode: runnerd serve on the host (the package's), runnerd-intercept in containers
  under podman's and docker's defaults with nothing but the socket mounted, as root and as
  --user: commands run without canaries, keep the container's seccomp filter and cgroups;
  runnerd ps and kill from the host; profiles allowed and not; the same under rootless
  podman's defaults, where the session joins the container's user namespace (a client in a
  user namespace it made refused); the daemon stopped mid-session (ENOSYS); and the daemon on
  a socket passed as systemd passes it;
- under AppArmor, in a virtual machine of Debian 12's own kernel (apparmor_vm.py): runnerd runs
  there, and the daemon puts each command under the agent's AppArmor profile;
- the real Claude Code of the end-to-end tests through the daemon under podman's defaults, as
  root and as --user, against a stand-in of its API inside the container (claude_agent.py):
  its Bash call runs in a sandbox, with no canary of the container's.

Environment: DEB (the .deb), WORK (where the Debian root is kept), NPM_AGENTS (where
tests/e2e/npm-agents.sh installed the CLIs; default WORK/../npm-agents), DEBIAN_MIRROR,
RUNNERD_MUST_WORK. Needs root, podman, runc, debootstrap, dockerd and qemu (make test-containers
installs them). Prints one line per check and "N passed, M failed".
"""
import glob
import os
import pwd
import shlex
import shutil
import signal
import tempfile
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
import common  # noqa: E402
from common import check  # noqa: E402
import apparmor_vm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(HERE, "..", "demo")
WORK = os.path.abspath(os.environ.get("WORK", "build/containers"))
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
# What the image needs beyond minbase: runnerd's libraries but one (libseccomp2 and libcap2 are
# in minbase), the demo's tools, and python3 for the agents here.
INCLUDE = "python3,libjansson4,procps"
IMAGE = "localhost/runnerd-test:%d" % os.getpid()
CANARY = "ghp_canary_%d" % os.getpid()
# The container's user for --user: one the host is unlikely to run processes as, since rootful
# containers count --ulimit nproc against the host's uid.
UID = 4242


USER = "runnerd-ci"
rootless = {}  # "home", "run": the unprivileged user's, once set up


def as_user(argv):
    """argv run as USER, with its own HOME and runtime directory (rootless podman's storage
    and state)."""
    env = "HOME=%s XDG_RUNTIME_DIR=%s PATH=/usr/sbin:/usr/bin:/sbin:/bin" % (
        rootless["home"], rootless["run"])
    return ["su", "-s", "/bin/sh", USER, "-c",
            "cd / && exec env -i %s %s" % (env, shlex.join(argv))]


def podman_run(opts, argv, timeout=120, user=False):
    """podman run of IMAGE (as USER: rootless). runc: crun refuses hybrid cgroup hierarchies.
    The ulimits are lower than podman's default (nofile 1048576), which a root without
    CAP_SYS_RESOURCE cannot give (as in some VMs); they change nothing here."""
    cmd = ["podman", "run", "--rm", "--runtime", "runc", "--network", "none",
           "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
           "-e", "GITHUB_TOKEN=" + CANARY, "-e", "HOME=/home/dev", "-w", "/home/dev/project"]
    cmd = cmd + opts + [IMAGE] + argv
    return subprocess.run(as_user(cmd) if user else cmd, capture_output=True, text=True,
                          timeout=timeout)


def base_root():
    """The Debian 12 root debootstrap made (once: WORK/base, with a stamp of what it holds)."""
    base = os.path.join(WORK, "base")
    stamp = os.path.join(base, ".runnerd-base")
    if os.path.exists(stamp) and open(stamp).read() == INCLUDE:
        return base
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(WORK, exist_ok=True)
    r = subprocess.run(["debootstrap", "--variant=minbase", "--include=" + INCLUDE,
                        "bookworm", base, MIRROR], capture_output=True, text=True,
                       timeout=1200)
    if r.returncode != 0:
        check("image: debootstrap of Debian 12 from %s" % MIRROR, False,
              (r.stdout + r.stderr)[-2000:])
        return None
    with open(stamp, "w") as f:
        f.write(INCLUDE)
    return base


def make_image(deb):
    """A copy of the base root with the .deb installed, imported as IMAGE."""
    base = base_root()
    if not base:
        return False
    root = os.path.join(WORK, "image")
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run(["cp", "-a", base, root], check=True)
    shutil.copy(deb, os.path.join(root, "tmp", "runnerd.deb"))
    r = subprocess.run(["chroot", root, "dpkg", "-i", "/tmp/runnerd.deb"], capture_output=True,
                       text=True, timeout=300)
    os.unlink(os.path.join(root, "tmp", "runnerd.deb"))
    check("package: dpkg -i installs the .deb into a clean Debian 12 root", r.returncode == 0,
          r.stdout + r.stderr)
    files = ["usr/bin/runnerd", "usr/libexec/runnerd/runnerd-stub",
             "usr/libexec/runnerd/runnerd-zygote", "etc/runnerd/runner.json",
             "etc/runnerd/profiles/claude.json", "usr/share/runnerd/apparmor/runnerd",
             "usr/share/man/man1/runnerd.1", "usr/bin/runnerd-intercept",
             "usr/lib/systemd/system/runnerd.service", "usr/lib/systemd/system/runnerd.socket",
             "usr/share/runnerd/docker/seccomp.json"]
    missing = [f for f in files if not os.path.exists(os.path.join(root, f))]
    check("package: binaries, config, profiles, AppArmor profiles, systemd units, docker's "
          "seccomp profile and man page in place",
          not missing, "missing: %s" % missing)
    # Debian 12's AppArmor cannot parse them: linked in only where the kernel mediates user
    # namespaces, which this one does not.
    mediates = os.path.exists("/sys/kernel/security/apparmor/features/namespaces/userns_create")
    check("package: the AppArmor profiles linked into /etc/apparmor.d only where the kernel "
          "mediates user namespaces",
          os.path.lexists(os.path.join(root, "etc/apparmor.d/runnerd")) == mediates,
          "mediates=%s" % mediates)
    r = subprocess.run(["chroot", root, "runnerd", "check"], capture_output=True, text=True,
                       timeout=60)
    check("package: runnerd check passes with the installed config (/etc/runnerd)",
          r.returncode == 0 and "/etc/runnerd/runner.json OK" in r.stdout, r.stdout + r.stderr)
    if r.returncode != 0 or missing:
        return False
    # The user of --user (podman adds one to /etc/passwd, docker does not).
    subprocess.run(["chroot", root, "useradd", "--uid", str(UID), "--home-dir", "/home/dev",
                    "--no-create-home", "--shell", "/bin/bash", "dev"], check=True)
    for d in ("home/dev/project", "opt/demo"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chown(os.path.join(root, "home/dev"), UID, UID)
    os.chown(os.path.join(root, "home/dev/project"), UID, UID)
    for f in glob.glob(os.path.join(DEMO, "*")):
        shutil.copy(f, os.path.join(root, "opt/demo"))
    tar = os.path.join(WORK, "image.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    os.chmod(tar, 0o644)
    r = subprocess.run(["podman", "import", tar, IMAGE], capture_output=True, text=True,
                       timeout=600)
    check("image: podman imports the root", r.returncode == 0, r.stderr[-2000:])
    return r.returncode == 0


# What the agent runs: a command, and what a command sees of the container's secret, in its
# own environment and in every process's it can list (a plain container shows it in the
# agent's /proc/PID/environ).
AGENT = ("echo agent-started; /bin/echo a-command-ran; "
         "env | grep -c %s; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | "
         "grep -c %s; true" % (CANARY, CANARY))


# A session started in the container, then runnerd ps and runnerd kill of it from outside it.
PS_KILL = ["sh", "-c", "runnerd --profile generic -- sleep 5 & sleep 1; runnerd ps; "
           "runnerd kill $(runnerd ps --json | python3 -c 'import json, sys; "
           "print(json.load(sys.stdin)[0][\"session\"])'); wait"]


def check_ps_kill(engine, r):
    check("%s recipe: runnerd ps says the session runs in a %s container, and runnerd kill "
          "ends it" % (engine, engine),
          "profile generic  in a %s container" % engine in r.stdout and
          "killed session" in r.stdout, "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))


def test_defaults():
    """The engine's defaults: no fresh /proc in a user namespace. runnerd says why and how."""
    fix = "Fix: start the container with --security-opt unmask=/proc/*"
    for label, opts in (("root", []), ("--user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        r = podman_run(opts, ["runnerd", "--profile", "generic", "--", "sh", "-c", AGENT])
        check("podman defaults, %s: runnerd refuses to start the agent (125)" % label,
              r.returncode == 125 and "agent-started" not in r.stdout,
              "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
        check("podman defaults, %s: one message with the cause and the fix" % label,
              "cannot sandbox commands in a podman container: the kernel refuses a fresh "
              "/proc in a user namespace" in r.stderr and fix in r.stderr, r.stderr)
    r = podman_run([], ["runnerd", "check", "--system"])
    check("podman defaults: runnerd check --system fails (1), naming the sandbox and the fix",
          r.returncode == 1 and "FAILED  a sandbox" in r.stdout and fix in r.stdout,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))


def test_recipe():
    """docs/containers.md's recipe for podman: commands run, and see no secret."""
    for label, opts in (("root", []), ("--user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        r = podman_run(["--security-opt", "unmask=/proc/*"] + opts,
                       ["runnerd", "--profile", "generic", "--", "sh", "-c", AGENT])
        check("podman recipe, %s: the agent's commands run, with no canary in any "
              "environment it can read" % label,
              r.returncode == 0 and r.stdout.split() == ["agent-started", "a-command-ran",
                                                         "0", "0"],
              "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    r = podman_run(["--security-opt", "unmask=/proc/*"], ["runnerd", "check", "--system"])
    check("podman recipe: runnerd check --system passes", r.returncode == 0,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    check_ps_kill("podman", podman_run(["--security-opt", "unmask=/proc/*"], PS_KILL))


def test_demo():
    """make run's demo, from the installed package, in a container of the recipe."""
    r = podman_run(["--security-opt", "unmask=/proc/*", "-w", "/opt/demo"],
                   ["bash", "/opt/demo/demo.sh", "/usr/bin/runnerd"])
    check("demo: runs in the container from the package (exit 0)", r.returncode == 0,
          "rc=%d %s %s" % (r.returncode, r.stdout[-3000:], r.stderr[-2000:]))
    check("demo: the agent's commands read no key under runnerd",
          "matches: 0" in r.stdout and "WITH runnerd" in r.stdout, r.stdout[-3000:])


def test_containerfile():
    """packaging/Containerfile, FROM the plain Debian root (no registry is needed)."""
    base_image = IMAGE + "-base"
    agent_image = IMAGE + "-agent"
    ctx = tempfile.mkdtemp(prefix="runnerd-containerfile.")
    try:
        tar = os.path.join(ctx, "base.tar")
        subprocess.run(["tar", "-C", os.path.join(WORK, "base"), "-cf", tar, "."], check=True)
        r = subprocess.run(["podman", "import", tar, base_image], capture_output=True,
                           text=True, timeout=600)
        os.unlink(tar)
        shutil.copy(os.environ["DEB"], os.path.join(ctx, "runnerd.deb"))
        r = subprocess.run(["podman", "build", "--runtime", "runc", "--network", "none",
                            "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
                            "-f", os.path.join(HERE, "..", "..", "packaging", "Containerfile"),
                            "--build-arg", "BASE=" + base_image, "--build-arg",
                            "UID=%d" % UID, "-t", agent_image, ctx],
                           capture_output=True, text=True, timeout=600)
        check("Containerfile: podman build makes the agent image", r.returncode == 0,
              (r.stdout + r.stderr)[-3000:])
        r = subprocess.run(["podman", "run", "--rm", "--runtime", "runc", "--network", "none",
                            "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
                            "--security-opt", "unmask=/proc/*", "-e", "GITHUB_TOKEN=" + CANARY,
                            agent_image, "sh", "-c", AGENT + "; /usr/bin/id -u; pwd"],
                           capture_output=True, text=True, timeout=120)
        check("Containerfile: the agent runs as dev under runnerd; its commands run, "
              "see no canary",
              r.returncode == 0 and r.stdout.split() == ["agent-started", "a-command-ran",
                                                         "0", "0", str(UID),
                                                         "/home/dev/project"],
              "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    finally:
        subprocess.run(["podman", "rmi", "-f", agent_image, base_image], capture_output=True)
        shutil.rmtree(ctx, ignore_errors=True)


def setup_rootless():
    """USER, with a subordinate id range and a runtime directory of its own, and the image in
    its storage; False with the reason said when rootless podman cannot be had here."""
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        r = subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", USER],
                           capture_output=True, text=True)
        if r.returncode != 0:
            common.skip_part("rootless podman: cannot create %s: %s" % (USER, r.stderr))
            return False
        print("created the user %s for this run" % USER)
        pw = pwd.getpwnam(USER)
    for f in ("/etc/subuid", "/etc/subgid"):
        ranges = open(f).read() if os.path.exists(f) else ""
        if not any(line.split(":")[0] in (USER, str(pw.pw_uid)) for line in ranges.splitlines()):
            common.skip_part("rootless podman: %s has no range in %s" % (USER, f))
            return False
    rootless["home"] = pw.pw_dir
    rootless["run"] = tempfile.mkdtemp(prefix="runnerd-rootless.")
    os.chown(rootless["run"], pw.pw_uid, pw.pw_gid)
    r = subprocess.run(as_user(["podman", "import", os.path.join(WORK, "image.tar"), IMAGE]),
                       capture_output=True, text=True, timeout=600)
    check("rootless: podman imports the root as %s" % USER, r.returncode == 0,
          r.stderr[-2000:])
    return r.returncode == 0


def stop_pause_process():
    """SIGKILL to the pause processes rootless podman left for USER with this test's runtime
    directory: catatonit, or podman itself (podman 4.3 runs its own pause process, whose comm
    is "podman pause")."""
    mark = ("XDG_RUNTIME_DIR=%s" % rootless["run"]).encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/comm" % pid) as f:
                name = f.read().strip()
            if name != "catatonit" and name.split(" ")[0] != "podman":
                continue
            with open("/proc/%s/environ" % pid, "rb") as f:
                if mark in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def test_rootless():
    """Rootless podman: the container's root maps one id; --user with the recipe works."""
    r = podman_run(["--security-opt", "unmask=/proc/*"],
                   ["runnerd", "--profile", "generic", "--", "sh", "-c", AGENT], user=True)
    check("rootless, root: refused (125), the maps named, and the fix --user",
          r.returncode == 125 and "agent-started" not in r.stdout and
          "the root of a rootless container" in r.stderr and
          "Fix: run runnerd as a user other than root in the container (--user)" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    r = podman_run(["--user", "%d:%d" % (UID, UID)],
                   ["runnerd", "--profile", "generic", "--", "sh", "-c", AGENT], user=True)
    check("rootless defaults, --user: refused (125) with the fix for /proc",
          r.returncode == 125 and
          "Fix: start the container with --security-opt unmask=/proc/*" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    r = podman_run(["--security-opt", "unmask=/proc/*", "--user", "%d:%d" % (UID, UID)],
                   ["runnerd", "--profile", "generic", "--", "sh", "-c", AGENT], user=True)
    check("rootless recipe, --user: commands run, with no canary in any environment it can "
          "read",
          r.returncode == 0 and r.stdout.split() == ["agent-started", "a-command-ran", "0",
                                                     "0"],
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))


# Daemon mode: runnerd serve on the host, from the installed package (the image's root), and
# runnerd-intercept in containers under the engines' defaults, with nothing added but the
# socket's mount.
serve = {}  # "proc", "sock", "log"
PERSONALITY = ("import ctypes; l = ctypes.CDLL(None, use_errno=True); "
               "r = l.personality(0x0040000); print('personality', r, ctypes.get_errno())")
# A command that the container's seccomp profile refuses and this host allows
# (personality(ADDR_NO_RANDOMIZE): podman's profile gives ENOSYS, docker's EPERM), and the
# cgroups of the agent (read by its shell's builtins, no command) and of a command.
DAEMON_AGENT = AGENT.replace("; true", "") + (
    "; python3 -c \"%s\"; while read l; do echo \"agent-cgroup $l\"; done < /proc/$$/cgroup; "
    "sed 's/^/command-cgroup /' /proc/self/cgroup; true" % PERSONALITY) + (
    # The processes of the container's pid namespace that hold every capability root of the
    # machine holds, counted by the agent itself (shell builtins only: nothing it runs is a
    # command): runnerd's, if it kept any there.
    "; n=0; for f in /proc/[0-9]*/status; do while read k v; do "
    "[ \"$k\" = Name: ] && name=$v; "
    "[ \"$k\" = CapEff: ] && echo \"process $name $v\" && [ \"$v\" = %s ] && n=$((n + 1)); "
    "done < $f 2>/dev/null; done; echo \"privileged-visible $n\"" %
    # (the capabilities of this test, root of the machine, as runnerd serve has them: every
    # one, or as many as the machine gives its root)
    [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff:")][0])


def start_serve(activated=False):
    """runnerd serve on its --socket, or (activated) on one systemd-socket-activate passes it
    as the systemd unit's socket would."""
    root = os.path.join(WORK, "image")
    serve["sock"] = "/run/runnerd-test-serve.%d.sock" % os.getpid()
    serve["log"] = os.path.join(WORK, "serve.log")
    serve["runnerd"] = [os.path.join(root, "usr/bin/runnerd"), "--config",
                        os.path.join(root, "etc/runnerd/runner.json")]
    argv = serve["runnerd"] + ["--profile", "generic", "serve", "--allow-profile", "codex",
                               "--allow-profile", "claude", "--allow-profile", "qwen"]
    if activated:
        argv = ["systemd-socket-activate", "--seqpacket", "-l", serve["sock"]] + argv
    else:
        argv += ["--socket", serve["sock"]]
    serve["proc"] = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=open(serve["log"], "w"))
    up = common.wait_for(lambda: os.path.exists(serve["sock"]), 10, 0.05)
    if activated:
        os.chmod(serve["sock"], 0o666)  # the unit's SocketMode
    check("daemon: runnerd serve (from the package) listens%s" %
          (" on a socket passed as systemd passes it" if activated else ""), up is not None,
          open(serve["log"]).read())
    return up is not None


def stop_serve():
    p = serve.get("proc")
    if p and p.poll() is None:
        p.terminate()
        p.wait(timeout=10)
    if serve.get("sock") and os.path.exists(serve["sock"]):
        os.unlink(serve["sock"])


def daemon_opts():
    return ["-v", "%s:/run/runnerd.sock" % serve["sock"]]


def check_daemon_run(label, r, refused_errno):
    """DAEMON_AGENT's output: commands ran, no canary, the container's filter and cgroups."""
    lines = r.stdout.splitlines()
    agent_cg = sorted(l.split(" ", 1)[1] for l in lines if l.startswith("agent-cgroup "))
    cmd_cg = sorted(l.split(" ", 1)[1] for l in lines if l.startswith("command-cgroup "))
    check("daemon, %s: commands run, with no canary in any environment they can read" % label,
          r.returncode == 0 and lines[:4] == ["agent-started", "a-command-ran", "0", "0"],
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    check("daemon, %s: a command keeps the container's seccomp filter (personality: %s)" %
          (label, refused_errno),
          "personality -1 %d" % refused_errno in lines, "%r" % r.stdout)
    check("daemon, %s: a command is in the agent's cgroups" % label,
          agent_cg and agent_cg == cmd_cg, "agent %s, command %s" % (agent_cg, cmd_cg))
    if "rootless" not in label:
        # Root of the machine, with every capability: none of runnerd's processes is in the
        # container's pid namespace, where one of the container's could trace or signal it
        # (the build before: its supervisor and zygote were).
        check("daemon, %s: no process in the container holds every capability (runnerd's "
              "supervisor and zygote live outside its pid namespace)" % label,
              "privileged-visible 0" in lines,
              "%r" % [l for l in lines if l.startswith(("privileged-visible", "process "))])


def check_daemon_kill(engine, run_bg):
    """A busy session in a container: runnerd ps on the host lists it in its container, and
    runnerd kill ends it (the agent, the container's pid 1, with it)."""
    p = run_bg(["runnerd-intercept", "--", "sh", "-c", "sleep 300 & /bin/sleep 300; wait"])
    def listed():
        r = subprocess.run(serve["runnerd"] + ["ps", "--json"], capture_output=True, text=True)
        import json
        try:
            s = [x for x in json.loads(r.stdout or "[]") if "in container" in x.get("where", "")]
        except ValueError:
            return None
        return s[0] if s and s[0].get("sandboxes") else None
    s = common.wait_for(listed, 30, 0.2)
    check("daemon, %s: runnerd ps on the host lists the session, in its container, with its "
          "sandboxes" % engine, s is not None, repr(s))
    if s is None:
        p.kill()
        p.communicate()
        return
    k = subprocess.run(serve["runnerd"] + ["kill", s["session"]], capture_output=True,
                       text=True)
    try:
        out, err = p.communicate(timeout=30)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        rc = None
    check("daemon, %s: runnerd kill from the host ends the session and its container" % engine,
          k.returncode == 0 and rc == 137, "kill rc=%d %s %s; container rc=%s %s" % (
              k.returncode, k.stdout, k.stderr, rc, err))


def test_daemon_podman():
    """Rootful podman's defaults, root and --user, with the daemon; a profile not allowed;
    then rootless podman's."""
    for label, opts in (("podman root", []),
                        ("podman --user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        r = podman_run(daemon_opts() + opts, ["runnerd-intercept", "--", "sh", "-c",
                                              DAEMON_AGENT])
        check_daemon_run(label, r, 38)
    # A volume the engine mounts read-only inside the workspace (a writable root) stays
    # read-only to commands; the workspace around it is writable.
    vol = os.path.join(WORK, "rovol")
    os.makedirs(vol, exist_ok=True)
    with open(os.path.join(vol, "f"), "w") as f:
        f.write("host\n")
    # Writable by anyone: only the mount's read-only flag may refuse the write.
    os.chmod(vol, 0o777)
    os.chmod(os.path.join(vol, "f"), 0o666)
    r = podman_run(daemon_opts() + ["--user", "%d:%d" % (UID, UID),
                                    "-v", "%s:/home/dev/project/ro:ro" % vol],
                   ["runnerd-intercept", "--", "sh", "-c",
                    "/bin/sh -c 'echo x > ro/f' 2>&1 | grep -q 'Read-only file system' && "
                    "echo ro-refused; "
                    "/bin/sh -c 'echo y > w' && echo project-written"])
    check("daemon: an engine's read-only volume in the workspace stays read-only to commands, "
          "the workspace writable",
          r.stdout.split() == ["ro-refused", "project-written"] and
          open(os.path.join(vol, "f")).read() == "host\n",
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    # A writable root the daemon makes in the client's home (~/.cache, missing in the image)
    # is the client's, made with its rights: the command (--user) can write it.
    r = podman_run(daemon_opts() + ["--user", "%d:%d" % (UID, UID)],
                   ["runnerd-intercept", "--", "sh", "-c",
                    "stat -c %u /home/dev/.cache; "
                    "/bin/sh -c 'touch /home/dev/.cache/x' && echo cache-written"])
    check("daemon: a cache directory made for the client is the client's, and its commands "
          "write there", r.stdout.split() == [str(UID), "cache-written"],
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    # A client on the host itself: no container to join; told to run runnerd there (before:
    # refused for its full bounding set, with the containers' fix).
    r = subprocess.run([os.path.join(WORK, "image", "usr/bin/runnerd-intercept"), "--socket",
                        serve["sock"], "--", "true"], capture_output=True, text=True,
                       timeout=60)
    check("daemon: a client on the host is refused (125), told to run runnerd itself",
          r.returncode == 125 and "runs on the host, not in a container" in r.stderr,
          "rc=%d %s" % (r.returncode, r.stderr))
    # A limit's refusal says why on the agent's stderr, as runnerd's own does (before: only in
    # the daemon's log): 130 background commands, of max_sandboxes 128.
    spawn = ("import subprocess\nn = 0\nfor i in range(130):\n"
             "    try:\n        subprocess.Popen(['/bin/sleep', '30']); n += 1\n"
             "    except OSError as e:\n        print('refused', e.errno)\n"
             "print('started', n)\n")
    r = podman_run(daemon_opts(), ["runnerd-intercept", "--", "python3", "-c", spawn])
    check("daemon: a limit's refusal says why on the agent's stderr",
          "started 128" in r.stdout and "the most its max_sandboxes allows" in r.stderr,
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr[-800:]))
    # A program in a directory the client cannot search: the daemon, root of the machine,
    # opened it, and the sandbox ran it from that fd (before: it ran, status 0).
    r = podman_run(daemon_opts(),
                   ["sh", "-c", "mkdir -m 700 /opt/hidden && cp /bin/true /opt/hidden/prog && "
                    "exec setpriv --reuid %d --regid %d --clear-groups runnerd-intercept -- "
                    "sh -c '/opt/hidden/prog; echo rc=$?; /bin/true; echo true=$?'" % (UID, UID)])
    check("daemon: a program in a directory the client cannot search does not run (126)",
          r.stdout.split() == ["rc=126", "true=0"],
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    # A container that could trace the supervisor (root of the machine among its processes):
    # refused, also when the client alone drops the capability (before, only the client's
    # bounding set was read, and a process beside it attached to the supervisor).
    r = podman_run(daemon_opts() + ["--cap-add", "SYS_PTRACE"],
                   ["runnerd-intercept", "--", "sh", "-c", AGENT])
    check("daemon: a container with CAP_SYS_PTRACE is refused (125), saying why",
          r.returncode == 125 and "agent-started" not in r.stdout and
          "may hold CAP_SYS_PTRACE" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    r = podman_run(daemon_opts() + ["--cap-add", "SYS_PTRACE"],
                   ["sh", "-c", "setpriv --bounding-set -sys_ptrace,-sys_admin -- "
                    "runnerd-intercept -- sh -c %s & wait $!" % shlex.quote(AGENT)])
    check("daemon: a container with CAP_SYS_PTRACE is refused also when the client alone "
          "drops it (its pid 1 keeps it)", r.returncode == 125 and
          "agent-started" not in r.stdout and "may hold CAP_SYS_PTRACE" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    # A workspace on a read-only mount (an engine's :ro volume, a --read-only root) stays
    # read-only to commands, as to the agent (before, commands wrote through both).
    for label, opts, cwd in (
            ("a :ro volume holding the workspace",
             ["-v", "%s:/data:ro" % vol, "-w", "/data"], "/data"),
            ("a --read-only container, workspace /opt", ["--read-only", "-w", "/opt"], "/opt")):
        r = podman_run(daemon_opts() + ["--user", "%d:%d" % (UID, UID)] + opts,
                       ["runnerd-intercept", "--", "sh", "-c",
                        "/bin/sh -c 'echo x > %s/new' 2>&1 | grep -q 'Read-only file system' "
                        "&& echo refused; /bin/sh -c 'echo y > /tmp/t' && echo tmp-written" % cwd])
        check("daemon: %s stays read-only to commands (/tmp writable)" % label,
              r.stdout.split() == ["refused", "tmp-written"],
              "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    # The agent's env file (qwen's ~/.env, whose guarded names runnerd gives the agent) made
    # a symlink, by the container's files, to a file of the machine's, through the /proc of
    # the daemon's view: /proc/PID/root of a process of the machine's that runs as the
    # container user's uid. Not followed (before, the daemon read it, and named what it
    # sets in its notes).
    host_env = os.path.join(WORK, "host.env")
    with open(host_env, "w") as f:
        f.write("OPENAI_BASE_URL=http://machine-secret.invalid/v1\n")
    os.chmod(host_env, 0o644)
    peer = subprocess.Popen(["setpriv", "--reuid", str(UID), "--regid", str(UID),
                             "--clear-groups", "sleep", "120"])
    try:
        logged = os.path.getsize(serve["log"])
        r = podman_run(daemon_opts() + ["--user", "%d:%d" % (UID, UID)],
                       ["sh", "-c", "ln -s /proc/%d/root%s /home/dev/.env && exec "
                        "runnerd-intercept --profile qwen -- sh -c "
                        "'echo \"base=[$OPENAI_BASE_URL]\"'" % (peer.pid, host_env)])
        with open(serve["log"]) as f:
            f.seek(logged)
            log = f.read()
    finally:
        peer.kill()
        peer.wait()
    check("daemon: an env file that is a symlink into the machine's files is not read",
          r.returncode == 0 and "base=[]" in r.stdout and "OPENAI_BASE_URL" not in log
          and "OPENAI_BASE_URL" not in r.stderr,
          "rc=%d %r %s; log: %s" % (r.returncode, r.stdout, r.stderr, log[-600:]))
    r = podman_run(daemon_opts(), ["runnerd-intercept", "--profile", "gemini", "--", "true"])
    check("daemon: a profile not allowed by the daemon is refused (125), naming the allowed",
          r.returncode == 125 and "profile gemini is not allowed here: runnerd serve takes "
          "--profile generic" in r.stderr, "rc=%d %s" % (r.returncode, r.stderr))
    r = podman_run(daemon_opts(), ["runnerd-intercept", "--profile", "codex", "--", "sh", "-c",
                                   "echo $RUNNERD_PROFILE"])
    check("daemon: a profile of --allow-profile is taken",
          r.returncode == 0 and r.stdout.strip() == "codex", "rc=%d %r %s" % (
              r.returncode, r.stdout, r.stderr))
    check_daemon_kill("podman", lambda argv: subprocess.Popen(
        ["podman", "run", "--rm", "--runtime", "runc", "--network", "none", "--ulimit",
         "nofile=1024:1024", "--ulimit", "nproc=4096:4096"] + daemon_opts() + [IMAGE] + argv,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    test_daemon_waiting()
    if rootless:
        test_daemon_rootless()


def test_daemon_waiting():
    """Connections that have not joined their container are the daemon's to bear (a process
    of root's each, waiting up to 10 s for a request): one uid holds 8 at most, a ninth is
    refused at once, saying why, and another uid's session still starts. Before, each
    connection got its process, whoever held how many."""
    os.chmod(os.path.dirname(serve["sock"]), 0o755)
    hold = ("import socket, sys, time\n"
            "s = [socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(9)]\n"
            "for c in s[:8]: c.connect(sys.argv[1])\n"
            "time.sleep(0.5)\n"
            "s[8].connect(sys.argv[1]); s[8].settimeout(5)\n"
            "a = s[8].recv(4096)\n"
            "print(a[20:].split(b'\\0')[0].decode(), flush=True)\n"
            "sys.stdin.read()\n")
    p = subprocess.Popen(["su", "-s", "/bin/sh", USER, "-c",
                          shlex.join(["python3", "-c", hold, serve["sock"]])],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        said = p.stdout.readline().strip()
        r = podman_run(daemon_opts(), ["runnerd-intercept", "--", "sh", "-c", "echo started"])
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    check("daemon: a ninth connection of one uid that waits to start a session is refused, "
          "saying why", "has 8 connections waiting to start a session already" in said, said)
    check("daemon: meanwhile another uid's session starts",
          r.returncode == 0 and r.stdout.strip() == "started",
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    # A container's root connects as eight uids, then as a ninth: one container holds 8 at
    # most, whatever uids it takes (before, each uid counted alone).
    hold_ns = ("import os, socket, sys, time\n"
               "def conn(uid):\n"
               "    os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)\n"
               "    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
               "    c.connect(sys.argv[1]); return c\n"
               "for i in range(8):\n"
               "    if os.fork() == 0:\n"
               "        c = conn(5000 + i); time.sleep(4); os._exit(0)\n"
               "time.sleep(1)\n"
               "c = conn(5100); c.settimeout(5)\n"
               "a = c.recv(4096)\n"
               "print(a[20:].split(b'\\0')[0].decode(), flush=True)\n")
    r = podman_run(daemon_opts(), ["python3", "-c", hold_ns, "/run/runnerd.sock"])
    check("daemon: a ninth connection of one container, as another uid, is refused, saying why",
          "container (pid namespace" in r.stdout and "has 8 connections waiting" in r.stdout,
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))


def test_daemon_rootless():
    """Rootless podman's defaults (as USER), root and --user, with the daemon: the session
    joins the container's user namespace as its root, so that commands run with the
    container's ids and a fresh /proc (which a user namespace of runnerd's own could not
    mount under the engine's covered one). Before, the daemon refused rootless engines. A
    client in a user namespace of its own inside the container, and a container with
    CAP_SYS_PTRACE, are refused."""
    os.chmod(os.path.dirname(serve["sock"]), 0o755)
    ids = "; sh -c 'echo command-ids $(id -u) $(id -g) $(cat /proc/1/comm)'"
    for label, opts, want in (("rootless podman root", [], "0 0"),
                              ("rootless podman --user %d" % UID,
                               ["--user", "%d:%d" % (UID, UID)], "%d %d" % (UID, UID))):
        r = podman_run(daemon_opts() + opts,
                       ["runnerd-intercept", "--", "sh", "-c", DAEMON_AGENT + ids], user=True)
        check_daemon_run(label, r, 38)
        check("daemon, %s: a command has the container's ids, in a sandbox (its pid 1 the "
              "reaper)"
              % label, any(l.startswith("command-ids %s runnerd" % want)
                           for l in r.stdout.splitlines()),
              "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    # An engine's read-only volume in the workspace: in the container's user namespace the
    # kernel does not lock it read-only to the session either.
    vol = os.path.join(WORK, "rovol")
    r = podman_run(daemon_opts() + ["--user", "%d:%d" % (UID, UID),
                                    "-v", "%s:/home/dev/project/ro:ro" % vol],
                   ["runnerd-intercept", "--", "sh", "-c",
                    "/bin/sh -c 'echo x > ro/f' 2>&1 | grep -q 'Read-only file system' && "
                    "echo ro-refused; /bin/sh -c 'echo y > w' && echo project-written"],
                   user=True)
    check("daemon, rootless podman: an engine's read-only volume in the workspace stays "
          "read-only to commands, the workspace writable",
          r.stdout.split() == ["ro-refused", "project-written"] and
          open(os.path.join(vol, "f")).read() == "host\n",
          "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    r = podman_run(daemon_opts(), ["unshare", "-Ur", "runnerd-intercept", "--", "sh", "-c",
                                   AGENT], user=True)
    check("daemon, rootless podman: a client in a user namespace it made is refused (125)",
          r.returncode == 125 and "agent-started" not in r.stdout and
          "a user namespace inside another" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    r = podman_run(daemon_opts() + ["--cap-add", "SYS_PTRACE"],
                   ["runnerd-intercept", "--", "sh", "-c", AGENT], user=True)
    check("daemon, rootless podman: a container with CAP_SYS_PTRACE is refused (125)",
          r.returncode == 125 and "may hold CAP_SYS_PTRACE" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    check_daemon_kill("rootless podman", lambda argv: subprocess.Popen(
        as_user(["podman", "run", "--rm", "--runtime", "runc", "--network", "none",
                 "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"] +
                daemon_opts() + [IMAGE] + argv),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))


# The pinned Claude Code of the end-to-end tests (tests/e2e/claude.py), as npm-agents.sh
# installs it: a native executable, mounted read-only into the container.
CLAUDE_PACKAGE = "@anthropic-ai/claude-code@2.1.331"


def test_daemon_claude():
    """The real Claude Code in a container under podman's defaults (no network, nothing but the
    socket and the CLI mounted), through runnerd-intercept and runnerd serve with the claude
    profile, against a stand-in of its API in the same container (claude_agent.py): its Bash
    call runs as a command of the daemon, and no canary of the container reaches it."""
    cli = claude_cli()
    for label, opts in (("root", []), ("--user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        if cli:
            claude_session(label, opts, cli, podman_run)


def test_daemon_claude_docker():
    """The same under docker's defaults (its seccomp profile, its AppArmor-less default here,
    no network)."""
    cli = claude_cli()
    for label, opts in (("docker root", []),
                        ("docker --user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        if cli:
            claude_session(label, opts, cli, docker_run)


def claude_cli():
    """The directory of the pinned Claude Code, or None (skipped, said)."""
    d = os.path.abspath(os.environ.get("NPM_AGENTS", os.path.join(WORK, "..", "npm-agents")))
    cli = os.path.join(d, "claude")
    try:
        installed = open(os.path.join(cli, ".installed")).read().strip()
    except OSError:
        installed = None
    if installed != CLAUDE_PACKAGE:
        common.skip_part("daemon, Claude Code: %s is not installed in %s (tests/e2e/"
                         "npm-agents.sh installs it)" % (CLAUDE_PACKAGE, cli))
        return None
    return cli


def claude_session(label, opts, cli, run):
    canary = "canary-daemon-%d" % os.getpid()
    e2e = os.path.join(HERE, "..", "e2e")
    r = run(daemon_opts() + opts + ["-v", "%s:/opt/claude:ro" % cli,
                                           "-v", "%s:/t/e2e:ro" % os.path.abspath(e2e),
                                           "-v", "%s:/t/agent.py:ro" % os.path.join(
                                               HERE, "claude_agent.py")],
                   ["python3", "/t/agent.py", "/t/e2e",
                    "/opt/claude/node_modules/.bin/claude", canary], timeout=300)
    import json
    try:
        res = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check("daemon, Claude Code, %s: the session reports" % label, False,
              "rc=%d %r %s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        return
    result = "\n".join(res["results"])
    check("daemon, Claude Code, %s: the session exits 0 after two turns at least" % label,
          res["status"] == 0 and res["turns"] >= 2,
          "status %s, %d turns: %s %s" % (res["status"], res["turns"], res["out"], res["err"]))
    check("daemon, Claude Code, %s: it sent its own key" % label, res["keys"] == [
        "sk-ant-api03-%s-key" % canary], repr(res["keys"]))
    check("daemon, Claude Code, %s: its Bash command ran and its result reached the model" %
          label, "MARKER-42" in result and "\nPATH=" in "\n" + result, result[-2000:])
    check("daemon, Claude Code, %s: the command ran in a sandbox of runnerd's (its pid 1 the "
          "reaper)" % label, "pid1=runnerd" in result, result[-2000:])
    listed = result.rsplit("== file=[", 1)[-1].split("]", 1)[0] if "== file=[" in result else ""
    check("daemon, Claude Code, %s: the masked file is not there for the command" % label,
          "No such file or directory" in listed, result[-2000:])
    check("daemon, Claude Code, %s: 0 canaries reach the command (its key, AWS, GitHub, the "
          "file)" % label, result and canary not in result, result[-2000:])


def test_daemon_gone():
    """The daemon ends while a session runs: the agent's next exec fails (ENOSYS), its
    container goes on."""
    p = subprocess.Popen(
        ["podman", "run", "--rm", "--runtime", "runc", "--network", "none", "--ulimit",
         "nofile=1024:1024", "--ulimit", "nproc=4096:4096"] + daemon_opts() +
        [IMAGE, "runnerd-intercept", "--", "bash", "-c",
         "/usr/bin/mkfifo /tmp/f && /bin/echo before; read -t 5 x <> /tmp/f; "
         "/bin/echo after; echo rc=$?"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    stop_serve()
    out, err = p.communicate(timeout=60)
    check("daemon gone: the agent's next exec fails with ENOSYS, and nothing runs",
          first == "before\n" and "after" not in out and "rc=126" in out and
          "Function not implemented" in err, "%r %r %r" % (first, out, err))
    start_serve(activated=True)


def test_daemon_docker():
    """docker's defaults, root and --user, with the daemon; runnerd kill."""
    for label, opts in (("docker root", []),
                        ("docker --user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        r = docker_run(daemon_opts() + opts, ["runnerd-intercept", "--", "sh", "-c",
                                              DAEMON_AGENT])
        check_daemon_run(label, r, 1)
    check_daemon_kill("docker", lambda argv: subprocess.Popen(
        docker["cmd"] + ["run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024",
                         "--ulimit", "nproc=4096:4096"] + daemon_opts() + [IMAGE] + argv,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))


docker = {}  # "proc", "cmd" (the client's argv with -H), "exec_root", "data_root"


def start_dockerd():
    """A dockerd of the test's own: its socket, state and data apart from any other, no
    network set-up (no iptables, no bridge); stopped and removed by stop_dockerd."""
    sock = "/run/runnerd-test-docker.%d.sock" % os.getpid()
    docker["exec_root"] = "/run/runnerd-test-docker.%d" % os.getpid()
    docker["data_root"] = os.path.join(WORK, "docker")
    docker["log"] = open(os.path.join(WORK, "dockerd.log"), "w")
    # dockerd writes a key there once; removed after if this test made it
    docker["made_etc"] = not os.path.exists("/etc/docker")
    docker["made_key"] = not os.path.exists("/etc/docker/key.json")
    # Its own containerd namespaces: a system containerd, if one runs, serves it apart.
    tag = "runnerd-test-%d" % os.getpid()
    docker["proc"] = subprocess.Popen(
        ["dockerd", "--iptables=false", "--ip6tables=false", "--bridge=none",
         "--host", "unix://" + sock, "--pidfile", docker["exec_root"] + ".pid",
         "--exec-root", docker["exec_root"], "--data-root", docker["data_root"],
         "--containerd-namespace", tag, "--containerd-plugins-namespace", tag + "-plugins"],
        stdout=docker["log"], stderr=subprocess.STDOUT)
    docker["cmd"] = [shutil.which("docker"), "-H", "unix://" + sock]
    up = common.wait_for(lambda: subprocess.run(docker["cmd"] + ["version"],
                                                capture_output=True).returncode == 0, 60, 0.2)
    check("docker: a dockerd of this test's own starts", up is not None,
          open(os.path.join(WORK, "dockerd.log")).read()[-2000:])
    if up is None:
        return False
    r = subprocess.run(docker["cmd"] + ["import", os.path.join(WORK, "image.tar"), IMAGE],
                       capture_output=True, text=True, timeout=600)
    check("docker: imports the root", r.returncode == 0, r.stderr[-2000:])
    return r.returncode == 0


def stop_dockerd():
    p = docker.get("proc")
    if not p:
        return
    subprocess.run(docker["cmd"] + ["rmi", "-f", IMAGE], capture_output=True)
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    docker["log"].close()
    shutil.rmtree(docker["exec_root"], ignore_errors=True)
    shutil.rmtree(docker["data_root"], ignore_errors=True)
    for leftover in (docker["exec_root"] + ".pid", docker["cmd"][2][len("unix://"):]):
        if os.path.exists(leftover):
            os.unlink(leftover)
    if docker["made_key"] and os.path.exists("/etc/docker/key.json"):
        os.unlink("/etc/docker/key.json")
    if docker["made_etc"] and os.path.isdir("/etc/docker") and not os.listdir("/etc/docker"):
        os.rmdir("/etc/docker")


def docker_run(opts, argv, timeout=120):
    cmd = docker["cmd"] + ["run", "--rm", "--network", "none",
                           "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
                           "-e", "GITHUB_TOKEN=" + CANARY, "-e", "HOME=/home/dev",
                           "-w", "/home/dev/project"]
    return subprocess.run(cmd + opts + [IMAGE] + argv, capture_output=True, text=True,
                          timeout=timeout)


def test_docker():
    """docker 20.10's defaults: its seccomp profile first (no new namespaces without
    CAP_SYS_ADMIN), then /proc; its recipe runs commands."""
    agent = ["runnerd", "--profile", "generic", "--", "sh", "-c", AGENT]
    r = docker_run([], agent)
    check("docker defaults: refused (125), the seccomp profile named, and its fix",
          r.returncode == 125 and "agent-started" not in r.stdout and
          "cannot sandbox commands in a docker container: docker's default seccomp profile "
          "refuses new namespaces" in r.stderr and
          "Fix: start the container with --security-opt "
          "seccomp=/usr/share/runnerd/docker/seccomp.json, the profile runnerd's package "
          "installs on the host for docker (or seccomp=unconfined)" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    r = docker_run([], ["runnerd", "check", "--system"])
    check("docker defaults: check --system names the namespaces, process_vm_readv and "
          "pidfd_getfd",
          r.returncode == 1 and "FAILED  a user namespace" in r.stdout and
          "FAILED  process_vm_readv" in r.stdout and "FAILED  pidfd_getfd" in r.stdout,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    r = docker_run(["--security-opt", "seccomp=unconfined"], agent)
    check("docker, seccomp=unconfined alone: refused (125) with /proc's fix",
          r.returncode == 125 and
          "Fix: start the container with --security-opt systempaths=unconfined" in r.stderr,
          "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))
    recipe = ["--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined"]
    check_ps_kill("docker", docker_run(recipe, PS_KILL))
    for label, opts in (("root", []), ("--user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        r = docker_run(recipe + opts, agent)
        check("docker recipe, %s: commands run, with no canary in any environment it can read" % label,
              r.returncode == 0 and r.stdout.split() == ["agent-started", "a-command-ran",
                                                         "0", "0"],
              "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
    # The recipe with the profile the package ships, in place of seccomp=unconfined: commands
    # run, and the agent itself is still refused what the profile refuses (keyctl, which a
    # process without capabilities may call, and process_vm_writev), as it is not unconfined.
    profile = os.path.join(WORK, "image", "usr/share/runnerd/docker/seccomp.json")
    shipped = ["--security-opt", "seccomp=" + profile, "--security-opt", "systempaths=unconfined"]
    probe = ("import ctypes; l = ctypes.CDLL(None, use_errno=True); "
             "r = l.syscall(250, 0, -3, 0); print('keyctl', r, ctypes.get_errno()); "
             "r = l.syscall(311, __import__('os').getpid(), 0, 0, 0, 0, 0); "
             "print('process_vm_writev', r, "
             "ctypes.get_errno())")
    agent_probe = ["runnerd", "--profile", "generic", "--", "python3", "-c", probe]
    for label, opts in (("root", []), ("--user %d" % UID, ["--user", "%d:%d" % (UID, UID)])):
        r = docker_run(shipped + opts, agent)
        check("docker recipe, runnerd's seccomp profile, %s: commands run, with no canary in "
              "any environment it can read" % label,
              r.returncode == 0 and r.stdout.split() == ["agent-started", "a-command-ran",
                                                         "0", "0"],
              "rc=%d %r %s" % (r.returncode, r.stdout, r.stderr))
        r = docker_run(shipped + opts, agent_probe)
        u = docker_run(recipe + opts, agent_probe)
        check("docker recipe, runnerd's seccomp profile, %s: the agent's keyctl and "
              "process_vm_writev fail with EPERM (seccomp=unconfined: not)" % label,
              "keyctl -1 1" in r.stdout and "process_vm_writev -1 1" in r.stdout
              and "keyctl -1 1" not in u.stdout and "process_vm_writev -1 1" not in u.stdout,
              "profile: rc=%d %r %s; unconfined: %r" % (r.returncode, r.stdout, r.stderr[-300:],
                                                        u.stdout))


def test_apparmor():
    """runnerd under AppArmor, in a virtual machine of Debian 12's kernel (apparmor_vm.py)."""
    apparmor_vm.test_apparmor_vm(WORK, os.path.join(WORK, "image"))


def main():
    if os.geteuid() != 0:
        common.skip("rootful podman needs root")
    for tool in ("podman", "runc", "debootstrap", "chroot", "dockerd", "docker",
                 "systemd-socket-activate"):
        if not shutil.which(tool):
            common.skip("%s is missing (make test-containers installs it)" % tool)
    deb = os.environ.get("DEB", "")
    if not os.path.isfile(deb):
        common.skip("DEB=%r is not a file: make deb first" % deb)
    # A CI timeout's SIGTERM (or a hang-up) still cleans up, below.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    # Images a killed run left (their tags carry its pid).
    stale = subprocess.run(["podman", "images", "-q", "--filter",
                            "reference=localhost/runnerd-test"], capture_output=True, text=True)
    if stale.stdout.split():
        subprocess.run(["podman", "rmi", "-f"] + stale.stdout.split(), capture_output=True)
    try:
        steps = ((make_image, (deb,)), (start_serve, ()), (setup_rootless, ()),
                 (start_dockerd, ()))
        done = {}
        for step, args in steps:
            try:
                done[step] = step(*args)
            except Exception as e:  # a step that raises is a failed check
                check("%s ran to its end" % step.__name__, False, repr(e))
                done[step] = False
            if not done[make_image]:
                break
        tests = [test_defaults, test_recipe, test_demo, test_containerfile, test_apparmor]
        tests += [test_rootless] if done.get(setup_rootless) else []
        tests += [test_daemon_podman, test_daemon_claude, test_daemon_gone] \
            if done.get(start_serve) else []
        tests += [test_docker] if done.get(start_dockerd) else []
        tests += [test_daemon_docker, test_daemon_claude_docker] \
            if done.get(start_dockerd) and done.get(start_serve) else []
        for t in tests if done[make_image] else ():
            try:
                t()
            except Exception as e:  # a test that raises is a failed check
                check("%s ran to its end" % t.__name__, False, repr(e))
    finally:
        stop_serve()
        stop_dockerd()
        subprocess.run(["podman", "rmi", "-f", IMAGE], capture_output=True)
        if rootless:
            subprocess.run(as_user(["podman", "rmi", "-f", IMAGE]), capture_output=True)
            # rootless podman's pause process (catatonit or podman) would outlive its runtime
            # directory
            stop_pause_process()
            shutil.rmtree(rootless["run"], ignore_errors=True)
        shutil.rmtree(os.path.join(WORK, "image"), ignore_errors=True)
        if os.path.exists(os.path.join(WORK, "image.tar")):
            os.unlink(os.path.join(WORK, "image.tar"))
    status = common.summary(common.results.count(True), common.results.count(False))
    for why in common.skipped_parts:
        print("SKIP " + why)
    if common.skipped_parts and common.MUST_WORK:
        print("RUNNERD_MUST_WORK=1: a skip is a failure")
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
