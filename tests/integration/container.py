#!/usr/bin/env python3
"""runnerd where a container engine's defaults take away what it needs, each condition made on
the real kernel without the engine, and nothing written to the machine's own files:

- parts of /proc covered by other mounts, as runtimes cover /proc/kcore, /proc/acpi, ... (a
  private mount namespace with such mounts, and the engine's mark: podman's
  /run/.containerenv, docker's name in runnerd's cgroup), for the fix each engine needs: the
  kernel refuses a fresh /proc in a user namespace there;
- docker's default seccomp profile for a container without CAP_SYS_ADMIN and CAP_SYS_PTRACE
  (helpers/seccomp_like docker, root without those two capabilities): no new namespaces,
  clone3 ENOSYS, no pidfd_getfd;
- clone3 answered ENOSYS alone (helpers/seccomp_like clone3), as docker's profile and older
  kernels do: runnerd falls back to clone and commands run;
- user namespaces turned off (user.max_user_namespaces = 0 in a user namespace of the test's
  own, which leaves the machine's setting alone);
- the root of a user namespace that maps one id, as a rootless container's root;
- the agent never holds CAP_SYS_ADMIN or CAP_SYS_PTRACE, which a container may be given for
  runnerd alone, in any of its sets; every other capability it keeps, and commands run.

Where a sandbox cannot be made, "runnerd check --system" names each failed need with its cause
and fix, and runnerd refuses to start the agent with one message: never an agent whose every
command fails. All but clone3 and the working case need root in the machine's user namespace
(mounts, the sysctl, a one-id map of root): they run in the root pass of make test; the
unprivileged pass runs those two.

Environment: RUNNERD, HELPERS, RUNNERD_MUST_WORK. Prints one line per check and
"N passed, M failed".
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import check, runnerd_cmd  # noqa: E402

HELPERS = os.path.abspath(os.environ.get("HELPERS", ""))
ROOT = os.geteuid() == 0
# What a runtime covers, of what this kernel has: files bound to /dev/null, directories under
# a read-only tmpfs.
COVER_FILES = [p for p in ("/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/meminfo")
               if os.path.isfile(p)][:2]
COVER_DIRS = [p for p in ("/proc/acpi", "/proc/scsi") if os.path.isdir(p)][:1]


def covered_proc_setup(engine):
    """Shell lines that make, in a private mount namespace, /proc as the engine leaves it, and
    the engine's mark: podman's /run/.containerenv (on a tmpfs of the namespace's own),
    docker's name in the cgroup of the process that goes on to exec runnerd (its pid kept), so
    that nothing is written to the machine's own files."""
    lines = ["mount --bind /dev/null %s" % p for p in COVER_FILES]
    lines += ["mount -t tmpfs -o ro tmpfs %s" % p for p in COVER_DIRS]
    if engine == "podman":
        lines += ["mount -t tmpfs tmpfs /run", "touch /run/.containerenv"]
    if engine == "docker":
        lines += ["mount -t tmpfs tmpfs /run", "echo 0::/system.slice/docker-0a1b2c.scope "
                  "> /run/cgroup", "mount --bind /run/cgroup /proc/$$/cgroup"]
    return " && ".join(lines)


def in_mount_ns(setup, argv, cwd, prefix=()):
    """argv run in cwd after setup in a private mount namespace (the machine's mounts
    untouched)."""
    script = setup + ' && exec "$@"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           script, "sh"] + list(prefix) + argv, capture_output=True,
                          text=True, timeout=60, env=common.base_env(), cwd=cwd)


def agent_marker(tmp):
    """An agent that leaves a file behind if it ever starts, and the file."""
    mark = os.path.join(tmp, "agent-started")
    return ["/bin/sh", "-c", "touch %s; /bin/echo command-ran" % mark], mark


def check_refused(label, r, mark, cause, fix):
    err = r.stderr.strip()
    check(label + ": runnerd refuses to start (125)", r.returncode == 125,
          "rc=%d err=%r" % (r.returncode, err))
    check(label + ": the agent never started", not os.path.exists(mark))
    check(label + ": one message, with the cause and the fix",
          err.count("\n") == 0 and "runnerd: cannot sandbox commands " in err and cause in err and
          "Fix: " + fix in err, err)


def test_proc_covered(tmp):
    if not ROOT:
        return
    if not COVER_FILES and not COVER_DIRS:
        common.skip_part("proc covered: nothing under /proc to cover on this kernel")
        return
    covers = (COVER_FILES + COVER_DIRS)[0]
    for engine, fix in (("podman", "start the container with --security-opt unmask=/proc/*"),
                        ("docker", "start the container with --security-opt "
                                   "systempaths=unconfined")):
        setup = covered_proc_setup(engine)
        r = in_mount_ns(setup, [common.RUNNERD, "check", "--system"], tmp)
        out = r.stdout
        check("proc covered (%s): check --system fails (1)" % engine, r.returncode == 1,
              "rc=%d %s %s" % (r.returncode, out, r.stderr))
        check("proc covered (%s): it is the sandbox, named with the mounts" % engine,
              "FAILED  a sandbox" in out and "while mounts cover parts of /proc (" in out and
              covers in out and "tried in a %s container" % engine in out, out)
        check("proc covered (%s): and the engine's fix" % engine, "Fix: " + fix in out, out)
        check("proc covered (%s): the rest works" % engine, out.count("  ok  ") == 5, out)
        argv, mark = agent_marker(tmp)
        r = in_mount_ns(setup, runnerd_cmd("generic", argv), tmp)
        check_refused("proc covered (%s)" % engine, r, mark,
                      "the kernel refuses a fresh /proc in a user namespace", fix)


def test_docker_defaults(tmp):
    if not ROOT:
        return
    setup = covered_proc_setup("docker")
    # Root as docker makes it: no CAP_SYS_ADMIN, no CAP_SYS_PTRACE (after the setup's mounts),
    # under docker's profile.
    like = ["setpriv", "--bounding-set", "-sys_admin,-sys_ptrace",
            os.path.join(HELPERS, "seccomp_like"), "docker", "--"]
    r = in_mount_ns(setup, [common.RUNNERD, "check", "--system"], tmp, like)
    out = r.stdout
    check("docker defaults: check --system fails (1)", r.returncode == 1,
          "rc=%d %s %s" % (r.returncode, out, r.stderr))
    check("docker defaults: new namespaces refused by docker's profile, and the fix",
          "FAILED  a user namespace: docker's default seccomp profile refuses new "
          "namespaces" in out and "Fix: start the container with --security-opt "
          "seccomp=/usr/share/runnerd/docker/seccomp.json" in out and "seccomp=unconfined"
          in out and "tried in a docker container" in out, out)
    check("docker defaults: pidfd_getfd needs CAP_SYS_PTRACE under docker's profile",
          "FAILED  pidfd_getfd of a child" in out and "docker's default seccomp profile "
          "allows pidfd_getfd only to a container with CAP_SYS_PTRACE" in out, out)
    check("docker defaults: ptrace, process_vm_readv and the listener work",
          "ok      ptrace of a child" in out and "ok      process_vm_readv" in out and
          "ok      a seccomp listener" in out, out)
    argv, mark = agent_marker(tmp)
    r = in_mount_ns(setup, runnerd_cmd("generic", argv), tmp, like)
    check_refused("docker defaults", r, mark,
                  "docker's default seccomp profile refuses new namespaces",
                  "start the container with --security-opt "
                  "seccomp=/usr/share/runnerd/docker/seccomp.json")


def test_rootless_root(tmp):
    """Root of a user namespace that maps one id (a rootless container's root): runnerd, with
    CAP_SETUID and CAP_SETGID there, maps every id to itself, which that namespace cannot."""
    if not ROOT:
        return
    argv, mark = agent_marker(tmp)
    base = ["unshare", "--user", "--map-root-user"]
    r = subprocess.run(base + [common.RUNNERD, "check", "--system"], capture_output=True,
                       text=True, timeout=60, env=common.base_env(), cwd=tmp)
    check("rootless root: check --system names the maps and says to run as another user",
          r.returncode == 1 and "FAILED  a sandbox" in r.stdout and
          "does not have them all" in r.stdout and "Fix: run runnerd as a user other than "
          "root in the container (--user)" in r.stdout, "rc=%d %s" % (r.returncode, r.stdout))
    r = subprocess.run(base + runnerd_cmd("generic", argv), capture_output=True, text=True,
                       timeout=60, env=common.base_env(), cwd=tmp)
    check_refused("rootless root", r, mark, "maps every uid and gid to itself",
                  "run runnerd as a user other than root in the container (--user)")


def test_clone3_enosys(tmp):
    like = [os.path.join(HELPERS, "seccomp_like"), "clone3", "--"]
    argv = ["/bin/sh", "-c", "/bin/echo from-a-command; /bin/true && /bin/echo again"]
    r = subprocess.run(like + runnerd_cmd("generic", argv),
                       capture_output=True, text=True, timeout=60, env=common.base_env(),
                       cwd=tmp)
    check("clone3 ENOSYS: commands run (runnerd falls back to clone)",
          r.returncode == 0 and r.stdout.split() == ["from-a-command", "again"],
          "rc=%d out=%r err=%r" % (r.returncode, r.stdout, r.stderr))
    check("clone3 ENOSYS: nothing said about it", r.stderr.strip() == "", r.stderr)


def test_userns_off(tmp):
    if not ROOT:
        return  # the sysctl is its user namespace's root's to write
    argv, mark = agent_marker(tmp)
    off = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\""
    base = ["unshare", "--user", "--map-current-user", "sh", "-c", off, "sh"]
    r = subprocess.run(base + [common.RUNNERD, "check", "--system"], capture_output=True,
                       text=True, timeout=60, env=common.base_env(), cwd=tmp)
    check("userns off: check --system names user.max_user_namespaces, and the fix",
          r.returncode == 1 and "user namespaces are turned off: user.max_user_namespaces "
          "is 0" in r.stdout and "Fix: as root on the host: sysctl -w "
          "user.max_user_namespaces=" in r.stdout, "rc=%d %s" % (r.returncode, r.stdout))
    r = subprocess.run(base + runnerd_cmd("generic", argv),
                       capture_output=True, text=True, timeout=60, env=common.base_env(),
                       cwd=tmp)
    check_refused("userns off", r, mark, "user.max_user_namespaces is 0",
                  "as root on the host: sysctl -w user.max_user_namespaces=")


CAPS_AGENT = r"""
import subprocess
sets = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    if k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        sets[k] = int(v, 16)
print(" ".join("%s=%x" % kv for kv in sorted(sets.items())))
print(subprocess.run(["/bin/echo", "a-command-ran"], capture_output=True, text=True).stdout,
      end="")
"""


def test_agent_caps(tmp):
    """CAP_SYS_ADMIN (21) and CAP_SYS_PTRACE (19) are runnerd's to need, never the agent's."""
    r = subprocess.run(runnerd_cmd("generic", [common.PY, "-c", CAPS_AGENT]),
                       capture_output=True, text=True, timeout=60, env=common.base_env(),
                       cwd=tmp)
    lines = r.stdout.splitlines()
    sets = dict(kv.split("=") for kv in lines[0].split()) if lines else {}
    sets = {k: int(v, 16) for k, v in sets.items()}
    two = (1 << 21) | (1 << 19)
    # The bounding set only with CAP_SETPCAP (8), which root has; with no_new_privs it gives
    # nothing back anyway.
    sets_held = [k for k in sets if k != "CapBnd" or ROOT]
    check("agent caps: neither CAP_SYS_ADMIN nor CAP_SYS_PTRACE in the agent's sets",
          len(sets) == 5 and all(sets[k] & two == 0 for k in sets_held),
          "rc=%d %r %s" % (r.returncode, sets, r.stderr))
    if ROOT:
        mine = {}
        for line in open("/proc/self/status"):
            k, _, v = line.partition(":")
            if k in sets:
                mine[k] = int(v, 16)
        check("agent caps: as root, every other capability is the agent's still",
              sets.get("CapEff") == mine["CapEff"] & ~two and
              sets.get("CapBnd") == mine["CapBnd"] & ~two, "%r, runnerd's %r" % (sets, mine))
    check("agent caps: its commands run", lines[1:] == ["a-command-ran"],
          r.stdout + r.stderr)


def test_here(tmp):
    r = subprocess.run([common.RUNNERD, "check", "--system"], capture_output=True, text=True,
                       timeout=60, env=common.base_env(), cwd=tmp)
    check("here: check --system passes (0), every need tried",
          r.returncode == 0 and r.stdout.count("  ok  ") == 6 and
          "runnerd: all 6 work" in r.stdout, "rc=%d %s %s" % (r.returncode, r.stdout, r.stderr))


def main():
    common.require_runnerd()
    if not os.access(os.path.join(HELPERS, "seccomp_like"), os.X_OK):
        common.skip("HELPERS=%r has no seccomp_like: build the integration helpers" % HELPERS)
    if not os.access("/usr/bin/unshare", os.X_OK):
        common.skip("unshare (util-linux) is missing")
    tests = (test_here, test_clone3_enosys, test_userns_off, test_proc_covered,
             test_docker_defaults, test_rootless_root, test_agent_caps)
    return common.run_tests(tests, "rd-container-")


if __name__ == "__main__":
    sys.exit(main())
