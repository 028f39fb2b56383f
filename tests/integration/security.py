#!/usr/bin/env python3
"""What runnerd must guarantee beyond fidelity, checked on the real kernel:

- canaries: with fake keys planted in the operator's environment, a command that runs env,
  reads /proc/$PPID/environ and /proc/1/environ, lists processes, finds no canary and sees only
  its own pid namespace; runnerd's own /proc/PID/environ holds no canary either;
- commands run with no_new_privs and no capabilities;
- faults: runnerd SIGKILLed mid-session -> the agent's next exec fails with ENOSYS and no
  command outlives runnerd; a caller SIGKILLed mid-command -> the command is gone within a
  second; the agent exiting while commands run -> they are gone; the zygote (runnerd-zygote,
  which clones the sandboxes) SIGKILLed mid-session -> the commands running go on, later
  commands still run (runnerd forks their sandboxes itself, and says so once), and nothing is
  left once the agent exits.

Environment: RUNNERD (binary), RUNNERD_CONFIG (default: the shipped build config next to the
binary), RUNNERD_MUST_WORK. Prints one line per check and "N passed, M failed" last. The
agent programs it runs are in helpers/agents/; the helpers all the scripts share in common.py.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import (agent_json, alive, check, children, comm, gone_within,  # noqa: E402
                    runnerd_cmd, wait_file, write_profile)

CANARY = "canary-7f3a9e"
# Marks this run's sleeps: the checks that nothing is left scan every process on the machine,
# and another run of this file (the unprivileged one) may be going on at the same time.
RUN = ".%d" % os.getpid()
PLANTED = {
    "ANTHROPIC_API_KEY": "sk-ant-" + CANARY, "OPENAI_API_KEY": "sk-" + CANARY,
    "GEMINI_API_KEY": CANARY, "DATABASE_URL": "postgres://u:%s@db/x" % CANARY,
    "AWS_SECRET_ACCESS_KEY": CANARY, "GITHUB_TOKEN": "ghp_" + CANARY,
}


def base_env():
    """The common environment (XDG_RUNTIME_DIR included: the rules profile's control socket
    goes there), with the fake keys planted."""
    env = common.base_env()
    env.update(PLANTED)
    return env


def test_canaries(tmp):
    script = (
        "echo '--- env'; env;"
        "echo '--- ppid environ'; cat /proc/$PPID/environ | tr '\\0' '\\n';"
        "echo '--- pid1 environ'; cat /proc/1/environ | tr '\\0' '\\n';"
        "echo '--- procs'; ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '; echo;"
        "echo '--- ps'; ps -e -o pid=,comm= 2>&1;"
        "echo '--- status'; grep -E '^(NoNewPrivs|CapEff|CapBnd):' /proc/self/status")
    out = subprocess.run(runnerd_cmd("claude", ["bash", "-c", "sh -c \"$0\"", script]),
                         env=base_env(), capture_output=True, text=True, timeout=60)
    text = out.stdout
    check("canary: command ran", out.returncode == 0 and "--- status" in text,
          "rc %d, stderr %r" % (out.returncode, out.stderr[-300:]))
    check("canary: no planted value reaches a command (env, /proc/$PPID, /proc/1)",
          CANARY not in text, "found in:\n" + "\n".join(l for l in text.splitlines()
                                                        if CANARY in l))
    procs = text.split("--- procs\n")[1].split("\n")[0].split() if "--- procs" in text else []
    check("canary: the command sees only its own pid namespace",
          procs[:1] == ["1"] and len(procs) <= 6 and all(int(p) < 50 for p in procs),
          "pids: %s" % procs)
    status = text.split("--- status\n")[-1]
    check("command runs with no_new_privs", "NoNewPrivs:\t1" in status, status)
    check("command has no capabilities",
          "CapEff:\t0000000000000000" in status and "CapBnd:\t0000000000000000" in status,
          status)
    # The agent itself gets its own key and only it.
    out = subprocess.run(runnerd_cmd("claude", ["bash", "-c",
                                                "echo A=${ANTHROPIC_API_KEY:-none} "
                                                "O=${OPENAI_API_KEY:-none}"]),
                         env=base_env(), capture_output=True, text=True, timeout=60)
    check("the claude agent gets its key and not OpenAI's",
          out.stdout.strip() == "A=sk-ant-%s O=none" % CANARY, out.stdout + out.stderr)


PROXY_PW = "proxy-pw-51c0"


def test_secret_values(tmp):
    """Secrets under innocent names: a proxy URL with a user and password (HTTPS_PROXY is a
    base name, which beat the secret patterns), PAGER holding the agent's own key (stripped
    at the command level), LANG holding DATABASE_URL's value (stripped at the agent's start),
    GIT_EDITOR (a name the profile allows exactly) holding the agent's key. Before, each reached
    the command."""
    audit = os.path.join(tmp, "audit.jsonl")
    env = base_env()
    key = "sk-ant-values-" + os.urandom(6).hex()
    env["ANTHROPIC_API_KEY"] = key
    env["HTTPS_PROXY"] = "http://bob:%s@127.0.0.1:9" % PROXY_PW
    # A password with a '/' unescaped: curl and Go take the '@' as the path's, so no cut of
    # the user and password is sure.
    env["HTTP_PROXY"] = "http://bob:pw/%s@127.0.0.1:9" % PROXY_PW
    env["PAGER"] = "less " + key
    env["LANG"] = PLANTED["DATABASE_URL"]
    # The agent's key under GIT_EDITOR, a name the claude profile's commands.env_allow lists
    # exactly (before, an exact name skipped the value check).
    out = subprocess.run(runnerd_cmd("claude", ["bash", "-c",
                                                'GIT_EDITOR="vi $ANTHROPIC_API_KEY" env'],
                                     audit=audit), env=env,
                         capture_output=True, text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    leaks = [l for l in out.stdout.splitlines() if CANARY in l or PROXY_PW in l or key in l]
    check("values: no secret reaches the command under any name", got and not leaks,
          "\n".join(leaks) + out.stderr[-300:])
    check("values: the proxy URL passes without its user and password",
          got.get("HTTPS_PROXY") == "http://127.0.0.1:9", repr(got.get("HTTPS_PROXY")))
    check("values: PAGER, LANG and GIT_EDITOR (exactly allowed), holding secrets' values, are "
          "stripped", "PAGER" not in got and "LANG" not in got and "GIT_EDITOR" not in got,
          repr(sorted(got)))
    text = open(audit).read() if os.path.exists(audit) else ""
    held = {v["name"]: v.get("holds") for e in map(json.loads, text.splitlines())
            if e.get("event") == "exec" for v in e.get("env", [])
            if v.get("reason") == "denied:secret-value"}
    check("values: the audit names whose value PAGER held, never the value",
          held.get("PAGER") == "ANTHROPIC_API_KEY" and key not in text, repr(held))
    unclear = [v for e in map(json.loads, text.splitlines()) if e.get("event") == "exec"
               for v in e.get("env", []) if v.get("name") == "HTTP_PROXY"]
    check("values: a proxy URL with an '@' past its host is stripped (denied:proxy-url)",
          "HTTP_PROXY" not in got and unclear
          and all(v.get("reason") == "denied:proxy-url" for v in unclear), repr(unclear))


def test_grants(tmp):
    """A rule that grants a secret (GH_TOKEN) gives it to the program it names, not to code
    the caller chooses: a path spelt through "..", git's options that run a program, a HOME
    with a .gitconfig of the caller's, MAKEFLAGS that make evaluates. Each leaked the token
    before."""
    os.chmod(tmp, 0o755)
    token = "ghp_grant_" + os.urandom(6).hex()
    git, make = shutil.which("git"), shutil.which("make")
    if not git or not make:
        common.skip_part("grants: git and make are needed")
        return
    git, make = os.path.realpath(git), os.path.realpath(make)
    evil = os.path.join(tmp, "x")
    os.makedirs(evil)
    fake = os.path.join(evil, os.path.basename(git))
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"fake=[$GH_TOKEN]\"\n")
    planted = os.path.join(evil, "rdgh")
    with open(planted, "w") as f:
        f.write("#!/bin/sh\necho \"planted=[$GH_TOKEN]\"\n")
    os.chmod(planted, 0o755)
    with open(os.path.join(evil, ".gitconfig"), "w") as f:
        f.write("[alias]\n\tleak = !echo home=[$GH_TOKEN]\n")
    for p in (fake, evil, os.path.join(evil, ".gitconfig")):
        os.chmod(p, 0o755)
    # A directory of its own: evil holds a fake git, which PATH would find first.
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir)
    os.chmod(bin_dir, 0o755)
    sub_cmd = os.path.join(bin_dir, "git-rdx")
    with open(sub_cmd, "w") as f:
        f.write("#!/bin/sh\necho \"subcmd=[$GH_TOKEN]\"\n")
    os.chmod(sub_cmd, 0o755)
    made = os.path.join(tmp, "made")
    subprocess.run(["git", "init", "-q", made], check=True)
    with open(os.path.join(made, ".git", "config"), "a") as f:
        f.write("[alias]\n\tleak2 = !echo repo=[$GH_TOKEN]\n")
    for root, dirs, files in os.walk(made):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    os.chmod(made, 0o755)
    repo = os.path.join(tmp, "repo.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    os.chmod(repo, 0o755)
    # Programs of the agent's own user, where commands cannot write (protected) but the agent
    # can: a copy of printenv under four names.
    own = os.path.join(tmp, "own")
    os.makedirs(own)
    os.chmod(own, 0o755)
    printenv = os.path.realpath(shutil.which("printenv"))
    for n in ("rdown", "rdpin", "rdbadpin", "rdchanged"):
        shutil.copy(printenv, os.path.join(own, n))
    with open(os.path.join(own, "rdscript"), "w") as f:
        f.write("#!/bin/sh\necho \"script=[$GH_TOKEN]\"\n")
    os.chmod(os.path.join(own, "rdscript"), 0o755)
    pin = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
    grant = {"action": "allow", "env_allow": ["GH_TOKEN"]}
    # As root, every file is the agent's to replace: the system's git and make run pinned.
    sys_pin = lambda p: {"sha256": pin(p)} if os.geteuid() == 0 else {}
    prof = write_profile(tmp, "grants", {
        "default": "allow", "env_allow": [], "protect": [own],
        # "/usr/*/git", as the documented examples write them.
        "rules": [dict(grant, match={"path": "/%s/*/%s" % (git.split("/")[1],
                                                           os.path.basename(git))},
                       **sys_pin(git)),
                  dict(grant, match={"path": make}, **sys_pin(make)),
                  # As the documented example "*/gh" does: any file of that name.
                  dict(grant, match={"path": "*/rdgh"}),
                  dict(grant, match={"path": own + "/rdown"}),
                  dict(grant, match={"path": own + "/rdpin"}, sha256=pin(own + "/rdpin")),
                  dict(grant, match={"path": own + "/rdbadpin"}, sha256="0" * 64),
                  dict(grant, match={"path": own + "/rdchanged"},
                       sha256=[pin(own + "/rdchanged")]),
                  dict(grant, match={"path": own + "/rdscript"},
                       sha256=pin(own + "/rdscript"))]},
        agent_env_allow=["GH_TOKEN"])
    dotdot = os.path.dirname(git) + "/.." * git.count("/") + evil + "/" + os.path.basename(git)
    script = "; ".join([
        "%s" % dotdot,
        "git ls-remote --upload-pack='sh -c \"echo pack=[$GH_TOKEN]; exit 1\"' %s; "
        "echo \"pack_rc=$?\"" % repo,
        "git -c alias.leak='!echo dashc=[$GH_TOKEN]' leak; echo \"dashc_rc=$?\"",
        "HOME=%s git leak; echo \"home_rc=$?\"" % evil,
        "MAKEFLAGS='--eval=$(info make=[$(GH_TOKEN)])' make -s -f /dev/null 2>/dev/null; true",
        "git --version >/dev/null && echo granted_runs=yes",
        "sh -c 'echo sh=[$GH_TOKEN]'",
        "PATH=%s:$PATH rdgh; echo \"planted_rc=$?\"" % evil,
        "PATH=%s:$PATH git rdx; true" % bin_dir,
        "(cd %s && git leak2; echo \"made_rc=$?\")" % made,
        "%s/rdown GH_TOKEN; echo \"own_rc=$?\"" % own,
        # The agent compares: the pinned program got the token, and printed it to the agent.
        "[ \"$(%s/rdpin GH_TOKEN)\" = \"$GH_TOKEN\" ] && echo pinned_runs=yes" % own,
        "%s/rdbadpin GH_TOKEN; echo \"badpin_rc=$?\"" % own,
        # The agent (not a command: a redirection of its own shell) changes a pinned file.
        "printf x >> %s/rdchanged; %s/rdchanged GH_TOKEN; echo \"changed_rc=$?\"" % (own, own),
        "%s/rdscript; echo \"script_rc=$?\"" % own,
    ])
    env = base_env()
    env["GH_TOKEN"] = token
    audit = os.path.join(tmp, "audit.jsonl")
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script], audit=audit), env=env,
                         capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("grants: the token reaches nothing but the granted program", token not in text,
          "\n".join(l for l in text.splitlines() if token in l))
    check("grants: a path spelt through \"..\" does not earn the rule",
          got.get("fake") == "[]", repr(got.get("fake")))
    check("grants: git --upload-pack is refused (126)", got.get("pack_rc") == "126", repr(got))
    check("grants: git -c is refused (126)", got.get("dashc_rc") == "126", repr(got))
    check("grants: the caller's HOME does not reach the granted git",
          "home" not in got, repr(got.get("home")))
    check("grants: the granted program still runs", got.get("granted_runs") == "yes",
          out.stdout + out.stderr[-400:])
    check("grants: a program no rule grants gets no token", got.get("sh") == "[]",
          repr(got.get("sh")))
    check("grants: the caller's PATH does not reach the granted program (git rdx)",
          got.get("subcmd") in (None, "[]"), repr(got.get("subcmd")))
    check("grants: a granted program run in a repository a command could make is refused",
          got.get("made_rc") == "126" and "repo" not in got, repr(got))
    check("grants: a program where commands can write (a planted rdgh matching \"*/rdgh\") "
          "is refused (126)", got.get("planted_rc") == "126", repr(got))
    check("grants: a program the agent's user could replace (its own file, protected from "
          "commands) is refused (126)", got.get("own_rc") == "126", repr(got))
    check("grants: a program pinned by sha256 runs and gets its secret",
          got.get("pinned_runs") == "yes", repr(got) + out.stderr[-400:])
    check("grants: a program whose sha256 is not the pinned one is refused (126)",
          got.get("badpin_rc") == "126", repr(got))
    check("grants: a pinned program changed after it was pinned is refused (126)",
          got.get("changed_rc") == "126", repr(got))
    check("grants: a pinned script is refused (126): its interpreter reads it by path",
          got.get("script_rc") == "126" and "script" not in got, repr(got))
    why = [json.loads(l).get("reason", "") for l in open(audit)] if os.path.exists(audit) else []
    check("grants: the refusals are audited with their reason",
          any("git's options that name a program" in w for w in why)
          and any("git -c and -C" in w for w in why)
          and any("lies where commands can write" in w for w in why)
          and any("the agent could have replaced" in w for w in why), repr(why))
    check("grants: the refusal of a replaceable program gives its sha256 as it is now",
          any("rdown" in w and "sha256 is now %s" % pin(own + "/rdown") in w for w in why),
          repr([w for w in why if "rdown" in w]))
    check("grants: the refusal of a changed pinned program names its new sha256",
          any("rdchanged" in w and pin(own + "/rdchanged") in w for w in why),
          repr([w for w in why if "rdchanged" in w]))


def test_grant_repos(tmp):
    """What a granted git (GH_TOKEN, pinned as root) reads that earlier commands could have
    written: a repository a command made in the workspace, with a hook of its own; a
    .git/commondir that turns the workspace's repository to a copy with a hook; a local
    repository a command made, pushed to (its pre-receive hook runs with git's environment);
    and the agent's start PATH, whose project directory a command can fill. Each ran the
    command's code with the token before. After the session the commondir is moved aside, so
    that the user's own git, outside, runs no hook of the command's."""
    os.chmod(tmp, 0o755)
    token = "ghp_repo_" + os.urandom(6).hex()
    git = shutil.which("git")
    if not git:
        common.skip_part("grant repos: git is needed")
        return
    git = os.path.realpath(git)
    ws = os.path.join(tmp, "ws")
    os.makedirs(os.path.join(ws, "bin"))
    who = ["-c", "user.name=t", "-c", "user.email=t@x"]
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(["git"] + who + ["-C", ws, "commit", "-q", "--allow-empty", "-m", "a"],
                   check=True)
    common.open_to_all(tmp)
    own = os.path.join(tmp, "own")  # outside the writable roots: protected below
    os.makedirs(own)
    os.chmod(own, 0o755)
    printenv = os.path.join(own, "rdpath")
    shutil.copy(os.path.realpath(shutil.which("printenv")), printenv)
    pin = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
    grant = {"action": "allow", "env_allow": ["GH_TOKEN"]}
    sys_pin = {"sha256": pin(git)} if os.geteuid() == 0 else {}
    prof = write_profile(tmp, "repos", {
        "default": "allow", "env_allow": [], "protect": [own],
        "rules": [dict(grant, match={"path": git}, **sys_pin),
                  dict(grant, match={"path": printenv}, sha256=pin(printenv))]},
        agent_env_allow=["GH_TOKEN"])
    hook = "#!/bin/sh\\necho hook=[\\$GH_TOKEN] >&2\\necho hook=[\\$GH_TOKEN]\\n"
    evil = os.path.join(tmp, "evil.git")
    common_dir = os.path.join(tmp, "common")
    script = "; ".join([
        # A repository of the command's, in the workspace, with a hook.
        "sh -c 'git init -q sub && printf \"%s\" > sub/.git/hooks/pre-commit && "
        "chmod 755 sub/.git/hooks/pre-commit'" % hook,
        "(cd sub && git commit -q --allow-empty -m s); echo nested_rc=$?",
        # A local repository of the command's, with a pre-receive hook, pushed to.
        "sh -c 'git init -q --bare %s && printf \"%s\" > %s/hooks/pre-receive && "
        "chmod 755 %s/hooks/pre-receive'" % (evil, hook, evil, evil),
        "git push -q %s HEAD:refs/heads/x 2>&1; echo push_rc=$?" % evil,
        # A planted program in the project's bin, first on the agent's start PATH.
        "echo \"gpath=$(%s PATH)\"" % printenv,
        # The workspace's .git turned to a copy with a hook.
        "sh -c 'cp -a .git %s && printf \"%s\" > %s/hooks/pre-commit && "
        "chmod 755 %s/hooks/pre-commit && echo %s > .git/commondir && "
        "touch .git/commondir.runnerd-$RUNNERD_SESSION'"
        % (common_dir, hook, common_dir, common_dir, common_dir),
        "git commit -q --allow-empty -m c; echo commondir_rc=$?",
    ])
    env = base_env()
    # The project's bin, and the same through a symlink (the workspace is its real path).
    link = os.path.join(tmp, "link")
    os.symlink(tmp, link)
    env["PATH"] = (os.path.join(ws, "bin") + ":" + os.path.join(link, "ws", "bin") + ":" +
                   env["PATH"])
    env.update(GH_TOKEN=token, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    audit = os.path.join(tmp, "audit.jsonl")
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script], audit=audit), env=env,
                         cwd=ws, capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("grant repos: the token reaches no command's hook", token not in text and
          "hook" not in got, "\n".join(l for l in text.splitlines() if "hook" in l)[:600])
    check("grant repos: git in a repository a command made is refused (126)",
          got.get("nested_rc") == "126", repr(got))
    check("grant repos: a push to a local repository is refused by git",
          got.get("push_rc") not in (None, "0") and "not allowed" in text, repr(got))
    path = got.get("gpath") or ""
    check("grant repos: the granted program's PATH lacks the project's bin",
          path and os.path.join(ws, "bin") not in path.split(":") and
          os.path.join(link, "ws", "bin") not in path.split(":") and "/usr/bin" in path,
          repr(got.get("gpath")) + out.stderr[-300:])
    check("grant repos: git with a .git/commondir a command wrote is refused (126)",
          got.get("commondir_rc") == "126", repr(got))
    moved = [n for n in os.listdir(os.path.join(ws, ".git")) if n.startswith("commondir.")]
    check("grant repos: the commondir is moved aside when the session ends, also when a "
          "command took the name it would get",
          not os.path.exists(os.path.join(ws, ".git", "commondir")) and len(moved) == 2
          and "moved aside" in out.stderr, repr(moved) + out.stderr[-400:])
    after = subprocess.run(["git"] + who + ["-C", ws, "commit", "--allow-empty", "-m", "d"],
                           capture_output=True, text=True, env=dict(env, GH_TOKEN="outside"))
    check("grant repos: the user's git, outside, runs no hook of the command's",
          after.returncode == 0 and "hook=" not in after.stdout + after.stderr,
          after.stdout + after.stderr)


def git_grant(tmp, name, prog="git"):
    """For a test of a rule that grants GH_TOKEN to git, or to another program that runs git
    (prog, found on PATH): (token, the program's path, workspace, profile: grant_profile), the
    workspace made (tmp/ws), or None if there is no git or no prog (skipped, said)."""
    os.chmod(tmp, 0o755)
    path = shutil.which(prog)
    if not shutil.which("git") or not path:
        common.skip_part("%s: git%s is needed" % (name, "" if prog == "git" else " and " + prog))
        return None
    path = os.path.realpath(path)
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    return "ghp_%s_%s" % (name, os.urandom(6).hex()), path, ws, grant_profile(tmp, name, path)


def grant_profile(tmp, name, path, env_allow=()):
    """The profile tmp/NAME.json, whose rule grants GH_TOKEN to the program at path (pinned by
    sha256 as root, where every file is the agent's to replace), and whose commands are
    passed env_allow too."""
    pin = {"sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()} \
        if os.geteuid() == 0 else {}
    return write_profile(tmp, name, {
        "default": "allow", "env_allow": list(env_allow),
        "rules": [dict({"action": "allow", "env_allow": ["GH_TOKEN"], "match": {"path": path}},
                       **pin)]},
        agent_env_allow=["GH_TOKEN"])


IDENTITY = dict(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
                GIT_COMMITTER_EMAIL="t@x")


def agent_script(tmp, name, text):
    """An agent script of a test's (text), written to tmp/NAME: its path."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def granted_repo(tmp, name, prog="git", first="mine"):
    """git_grant, with the workspace a repository of one commit (first): (token, workspace,
    profile, git's environment here, the agent's environment with the token), or None."""
    setup = git_grant(tmp, name, prog)
    if not setup:
        return None
    token, _, ws, prof = setup
    genv = dict(os.environ, **IDENTITY)
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(["git", "-C", ws, "commit", "-q", "--allow-empty", "-m", first], check=True,
                   env=genv)
    env = base_env()
    env.update(GH_TOKEN=token, **IDENTITY)
    return token, ws, prof, genv, env


def test_grant_repo_made(tmp):
    """A workspace that is no git repository at the start: a command makes one (git init)
    with a hook of its own. Its .git/hooks was protected in name only (missing at the start,
    nothing to hold read-only), and a granted git commit ran the hook with the token (the
    build before). Now no grant runs while it is there, and it is moved aside when the session
    ends."""
    setup = git_grant(tmp, "made")
    if not setup:
        return
    token, git, ws, prof = setup
    os.chmod(ws, 0o777)
    hook = "#!/bin/sh\\necho hook=[\\$GH_TOKEN]\\n"
    script = "; ".join([
        "sh -c 'git init -q . && printf \"%s\" > .git/hooks/pre-commit && "
        "chmod 755 .git/hooks/pre-commit'" % hook,
        "git commit -q --allow-empty -m m; echo commit_rc=$?",
    ])
    env = base_env()
    env.update(GH_TOKEN=token, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("grant repo made: the token reaches no command's hook",
          token not in out.stdout + out.stderr and "hook" not in got, repr(got))
    check("grant repo made: the granted git is refused (126)", got.get("commit_rc") == "126",
          repr(got) + out.stderr[-300:])
    dotgit = os.listdir(os.path.join(ws, ".git")) if os.path.isdir(os.path.join(ws, ".git")) \
        else []
    check("grant repo made: its hooks are moved aside when the session ends",
          "hooks" not in dotgit and any(n.startswith("hooks.runnerd-") for n in dotgit),
          repr(dotgit) + out.stderr[-300:])
    # A plain git init, as an agent makes a new project: its hook templates (*.sample, which
    # git never runs) and its config as git init writes it configure nothing, and are not
    # moved aside when the session ends (the build before moved the new repository's hooks
    # and config away). A granted git is still refused while the session lasts: a command
    # could write a hook there after the check.
    ws2 = os.path.join(tmp, "ws2")
    os.makedirs(ws2)
    os.chmod(ws2, 0o777)
    script = "sh -c 'git init -q .'; git commit -q --allow-empty -m m; echo commit_rc=$?"
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws2,
                         capture_output=True, text=True, timeout=120)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    dotgit = os.listdir(os.path.join(ws2, ".git")) if os.path.isdir(os.path.join(ws2, ".git")) \
        else []
    check("grant repo made: after a plain git init the granted git is refused (126), and "
          "nothing is moved aside at the end",
          got.get("commit_rc") == "126" and "hooks" in dotgit and "config" in dotgit
          and not any(".runnerd-" in n for n in dotgit), repr(got) + repr(dotgit) +
          out.stderr[-400:])


def test_grant_git_config(tmp):
    """git reads more than the workspace's protected .git/hooks and .git/config: a nested
    repository a command made, entered as a gitlink in the writable .git/index, whose
    core.fsmonitor a granted git status at the root ran with the token; a protected
    core.hooksPath into the workspace (husky's), whose hooks a granted git commit ran; a
    garbled .git/HEAD that makes git take the workspace as a bare repository of the command's.
    (The build before leaked the token the first two ways and ran the third.)"""
    setup = git_grant(tmp, "gitcfg")
    if not setup:
        return
    token, git, ws, prof = setup
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    genv = dict(os.environ, **who)
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(["git", "-C", ws, "commit", "-q", "--allow-empty", "-m", "a"], check=True,
                   env=genv)
    subprocess.run(["git", "-C", ws, "config", "core.hooksPath", ".husky"], check=True)
    os.makedirs(os.path.join(ws, ".husky"))
    common.open_to_all(tmp)
    leak = os.path.join(tmp, "leak")
    script = "; ".join([
        "sh -c 'git init -q sub && git -C sub commit -q --allow-empty -m s && "
        "git -C sub config core.fsmonitor \"echo \\$GH_TOKEN >> %s; false\" && "
        "git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub && "
        "printf \"#!/bin/sh\\necho \\$GH_TOKEN >> %s\\n\" > .husky/pre-commit && "
        "chmod 755 .husky/pre-commit && echo planted=1'" % (leak, leak),
        "git status --short >/dev/null; echo status_rc=$?",
        "git commit -q --allow-empty -m b; echo commit_rc=$?",
        # What keeps a bare repository (or one above) that a command makes after the check,
        # HEAD garbled in between, from being taken: not raced here, the settings read back.
        "echo bare_setting=$(git config --get safe.bareRepository)",
        # The workspace as a bare repository of the command's, .git/HEAD garbled.
        "sh -c 'echo garbage > .git/HEAD && mkdir -p objects refs && echo ref: refs/heads/m "
        "> HEAD && echo bare=1'",
        "git status >/dev/null 2>&1; echo bare_rc=$?",
    ])
    env = base_env()
    env.update(GH_TOKEN=token, **who)
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    leaked = open(leak).read() if os.path.exists(leak) else ""
    check("grant git config: the setup ran", got.get("planted") == "1" and got.get("bare") == "1",
          repr(got) + out.stderr[-300:])
    check("grant git config: no fsmonitor or hook of a command's ran with the token",
          token not in leaked and token not in out.stdout + out.stderr, repr(leaked))
    check("grant git config: the granted git still works at the root (status, commit)",
          got.get("status_rc") == "0" and got.get("commit_rc") == "0", repr(got))
    check("grant git config: the granted git takes no bare repository it is not told of",
          got.get("bare_setting") == "explicit", repr(got))
    check("grant git config: in a workspace turned bare repository, the grant is refused (126)",
          got.get("bare_rc") == "126", repr(got) + out.stderr[-300:])


def test_grant_git_race(tmp):
    """The grant's repository check runs before the granted git does: a command in the
    background that garbles .git/HEAD, and puts it back, over and over, had some granted git
    runs pass the check with HEAD sound and then look further up, at a repository the command
    made above the workspace, whose pre-commit hook a granted git commit ran with the token
    (the build before). The granted git now looks no higher than
    the repository its check took (GIT_CEILING_DIRECTORIES), and takes no bare repository it is
    not told of."""
    setup = git_grant(tmp, "race")
    if not setup:
        return
    token, git, ws, prof = setup
    genv = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
                GIT_COMMITTER_EMAIL="t@x")
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(["git", "-C", ws, "commit", "-q", "--allow-empty", "-m", "a"], check=True,
                   env=genv)
    common.open_to_all(tmp)
    head = open(os.path.join(ws, ".git", "HEAD")).read().strip()
    leak = os.path.join(tmp, "leak")
    script = "\n".join([
        "sh -c 'git init -q .. && printf \"#!/bin/sh\\necho \\$GH_TOKEN >> %s\\n\" > "
        "../.git/hooks/pre-commit && chmod 755 ../.git/hooks/pre-commit && echo above=1'"
        % leak,
        "sh -c 'while :; do echo garbage > .git/H1 && mv .git/H1 .git/HEAD && "
        "echo \"%s\" > .git/H2 && mv .git/H2 .git/HEAD; done' >/dev/null 2>&1 &" % head,
        "for i in $(seq 40); do git commit -q --allow-empty -m r >/dev/null 2>&1; done; "
        "echo runs=done",
    ])
    env = base_env()
    env.update(GH_TOKEN=token, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=180)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    leaked = open(leak).read() if os.path.exists(leak) else ""
    check("grant git race: the setup ran", got.get("above") == "1" and got.get("runs") == "done",
          repr(got) + out.stderr[-300:])
    check("grant git race: no hook of a command's ran with the token",
          token not in leaked, "%d leaks" % leaked.count(token))


def test_grant_git_helpers(tmp):
    """git's helper subcommands that run a command they are given: "submodule--helper
    foreach" (also behind --super-prefix, whose value hid the subcommand from the check) and
    remote-ext. A granted git ran each with the token (the build before)."""
    setup = git_grant(tmp, "helpers")
    if not setup:
        return
    token, git, ws, prof = setup
    genv = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
                GIT_COMMITTER_EMAIL="t@x")
    sub = os.path.join(tmp, "sub")
    subprocess.run(["git", "init", "-q", sub], check=True)
    subprocess.run(["git", "-C", sub, "commit", "-q", "--allow-empty", "-m", "s"], check=True,
                   env=genv)
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(["git", "-C", ws, "-c", "protocol.file.allow=always", "submodule", "add",
                    "-q", sub, "sub"], check=True, env=genv)
    subprocess.run(["git", "-C", ws, "commit", "-q", "-m", "a"], check=True, env=genv)
    evil = os.path.join(tmp, "ext.sh")
    with open(evil, "w") as f:
        f.write('#!/bin/sh\necho "ext=[$GH_TOKEN]"\n')
    os.chmod(evil, 0o755)
    common.open_to_all(tmp)
    script = "; ".join([
        "git submodule--helper foreach 'echo \"foreach=[$GH_TOKEN]\"' 2>&1",
        "git --super-prefix x/ submodule--helper foreach 'echo \"prefix=[$GH_TOKEN]\"' 2>&1",
        "printf 'connect git-upload-pack\\n' | git remote-ext x 'sh %s' 2>&1" % evil,
        "git status --short >/dev/null 2>&1; echo status_rc=$?",
    ])
    env = base_env()
    env.update(GH_TOKEN=token)
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    for what in ("foreach", "prefix", "ext"):
        check("grant git helpers: %s ran no command with the token" % what,
              "%s=[%s]" % (what, token) not in out.stdout, out.stdout[-400:])
    check("grant git helpers: a granted git status still works",
          "status_rc=0" in out.stdout, out.stdout[-300:] + out.stderr[-300:])


def git_ssh_trap(tmp, leak):
    """A configuration whose remote origin git reaches through a command (core.sshCommand)
    that writes GH_TOKEN to leak."""
    prog = os.path.join(tmp, "ssh.sh")
    with open(prog, "w") as f:
        f.write('echo "$GH_TOKEN" >> %s\nexit 1\n' % leak)
    return ("[core]\n\tsshCommand = sh %s\n[remote \"origin\"]\n"
            "\turl = ssh://git@127.0.0.1/x\n" % prog)


def trap_repo(tmp, name, genv=None):
    """A repository of a command's, tmp/evil-NAME (with a commit, given git's environment),
    whose configuration reaches its remote through a program that writes GH_TOKEN to
    tmp/leak-NAME: (the repository, the leak file)."""
    leak = os.path.join(tmp, "leak-" + name)
    evil = os.path.join(tmp, "evil-" + name)
    subprocess.run(["git", "init", "-q", evil], check=True)
    if genv:
        subprocess.run(["git", "-C", evil, "commit", "-q", "--allow-empty", "-m", "e"],
                       check=True, env=genv)
    with open(os.path.join(evil, ".git", "config"), "a") as f:
        f.write(git_ssh_trap(tmp, leak))
    common.open_to_all(evil)
    return evil, leak


def race_grant(tmp, prof, env, genv, top, kind, at, sub, cmd, n=40):
    """A command in the background that, over and over, writes a .git/commondir naming a
    repository of its own (kind "commondir"), or that repository's configuration to a file
    (kind "file:PATH"), or runs a loop of its own (kind "sh:LOOP", {evil} in it the
    repository, no double quote or $), or moves a .git of its own in and out of the
    directory at (relative to sub), while the agent (started in top) runs cmd n times in sub;
    the command's repository reaches its remote through a program that writes GH_TOKEN to a
    file. Returns (whether the runs ran, how many tokens that program wrote, the output)."""
    name = re.sub(r"[^a-z]", "-", kind)
    if kind.startswith("sh:"):
        name = "sh-" + hashlib.sha256(kind.encode()).hexdigest()[:12]
    evil, leak = trap_repo(tmp, name, genv)
    os.chmod(tmp, 0o777)
    if kind.startswith("sh:"):
        # A loop of the caller's ({evil}: the command's repository), which cleans up itself.
        loop, clean = kind[3:].replace("{evil}", evil), ""
    elif kind == "commondir":
        loop = ("while :; do printf '%s\\n' > .git/cd1 && mv .git/cd1 .git/commondir; "
                "rm -f .git/commondir; done" % os.path.join(evil, ".git"))
        clean = ".git/commondir .git/cd1"
    elif kind.startswith("file:"):
        # The configuration itself, written to that file (a config.worktree, ~/.gitconfig).
        target = kind[5:]
        loop = ("while :; do cp {0}/.git/config {1}.x && mv {1}.x {1}; rm -f {1}; "
                "done".format(evil, target))
        clean = "{0} {0}.x".format(target)
    else:
        loop = ("cp -r {0} {1}/.gitx && while :; do mv {1}/.gitx {1}/.git; "
                "mv {1}/.git {1}/.gitx; done".format(os.path.join(evil, ".git"), at))
        clean = "{0}/.git {0}/.gitx".format(at)
    script = "\n".join([
        "cd %s" % sub,
        "sh -c \"%s\" >/dev/null 2>&1 &" % loop,
        "sleep 0.2",
        "for i in $(seq %d); do %s 2>/dev/null; done; echo runs=done" % (n, cmd),
        # The loop's last mv may outlive its shell (what a command starts lives for the
        # session), and put a .git back after one rm: a few rounds, apart.
        "kill %%1; wait; for i in 1 2 3 4 5; do rm -rf %s; sleep 0.1; done" % clean,
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=top,
                         capture_output=True, text=True, timeout=300)
    leaks = open(leak).read().count(env["GH_TOKEN"]) if os.path.exists(leak) else 0
    return "runs=done" in out.stdout, leaks, out.stdout[-300:] + out.stderr[-300:]


def git_daemon(tmp, genv):
    """A git daemon on loopback serving a repository with one commit: (its git:// URL, the
    process), or None where git daemon cannot start."""
    srv = os.path.join(tmp, "srv.git")
    subprocess.run(["git", "init", "-q", "--bare", srv], check=True)
    src = os.path.join(tmp, "srcrepo")
    subprocess.run(["git", "init", "-q", src], check=True)
    subprocess.run(["git", "-C", src, "commit", "-q", "--allow-empty", "-m", "s"], check=True,
                   env=genv)
    subprocess.run(["git", "-C", src, "push", "-q", srv, "HEAD:refs/heads/master"], check=True)
    subprocess.run(["git", "-C", srv, "symbolic-ref", "HEAD", "refs/heads/master"], check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # git-daemon itself, not "git daemon": git runs it as a child, which its kill would leave
    # running (an orphan of the test's).
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True,
                               check=True).stdout.strip()
    d = subprocess.Popen([os.path.join(exec_path, "git-daemon"), "--reuseaddr", "--export-all",
                          "--base-path=" + tmp, "--listen=127.0.0.1", "--port=%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    up = common.wait_for(lambda: subprocess.run(
        ["git", "ls-remote", "git://127.0.0.1:%d/srv.git" % port], capture_output=True,
        timeout=10).returncode == 0, 10, 0.1)
    if not up:
        d.kill()
        d.wait()
        common.skip_part("grant git state: git daemon did not start")
        return None
    return "git://127.0.0.1:%d/srv.git" % port, d


def test_grant_git_state(tmp):
    """What a granted git reads from the repository besides its hooks and configuration, or
    is pointed at by the caller's argv, each of which a command wrote: a gitlink to a
    repository of its own entered in the index, whose clean filter a granted git status
    --ignore-submodules=none ran (and its sshCommand, git fetch --recurse-submodules=yes); a
    rebase it started and left at a break, whose exec line a granted git rebase --continue ran;
    a merge strategy of the work tree's (cherry-pick --strategy=evil/run ran
    ./git-merge-evil/run); a repository receive-pack was pointed at (its
    core.alternateRefsCommand ran); and the hooks of a granted clone's new repository, which a
    command wrote while the clone ran (the relative core.hooksPath=.git/hooks took them). Each
    ran a program of the command's with the token (the build before); each is refused now, or
    runs nothing of the command's."""
    setup = git_grant(tmp, "state")
    if not setup:
        return
    token, git, ws, prof = setup
    genv = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
                GIT_COMMITTER_EMAIL="t@x")
    served = git_daemon(tmp, genv)
    if not served:
        return
    url, daemon = served

    def workspace(name):
        """A repository of two commits, a branch "side" and the daemon's as origin."""
        d = os.path.join(tmp, "ws-" + name.replace(" ", "-"))
        subprocess.run(["git", "init", "-q", d], check=True)
        for m in ("a", "b"):
            subprocess.run(["git", "-C", d, "commit", "-q", "--allow-empty", "-m", m],
                           check=True, env=genv)
        subprocess.run(["git", "-C", d, "branch", "side"], check=True)
        subprocess.run(["git", "-C", d, "remote", "add", "origin", url], check=True)
        return d
    leak = os.path.join(tmp, "leak")
    trap = os.path.join(tmp, "trap.sh")
    with open(trap, "w") as f:
        f.write('#!/bin/sh\necho "$GH_TOKEN" >> %s\nexit 1\n' % leak)
    cfg = os.path.join(tmp, "trap.cfg")
    with open(cfg, "w") as f:
        f.write("[core]\n\tsshCommand = sh %s\n[remote \"origin\"]\n"
                "\turl = ssh://git@127.0.0.1/x\n" % trap)
    norepo = os.path.join(tmp, "norepo")
    os.makedirs(norepo)
    common.open_to_all(tmp)
    ev = os.path.join(tmp, "ev")
    ws = {n: workspace(n) for n in ("submodule status", "submodule fetch", "rebase todo",
                                    "strategy", "clone hooks", "gitmodules")}
    common.open_to_all(tmp)
    cases = {
        "submodule status": (ws["submodule status"], "git init -q sub && cd sub && echo '* filter=x' > "
                             ".gitattributes && echo a > a && git add . && git commit -qm s && "
                             "git config filter.x.clean 'sh %s; cat' && touch -d 2000-01-01 a "
                             "&& cd .. && git add sub" % trap,
                             "git status --short --ignore-submodules=none"),
        "submodule fetch": (ws["submodule fetch"], "git init -q sub2 && git -C sub2 commit -q --allow-empty -m s "
                            "&& cat %s >> sub2/.git/config && git add sub2" % cfg,
                            "git fetch -q --recurse-submodules=yes"),
        "gitmodules": (ws["gitmodules"], "git init -q sub && cd sub && echo '* filter=x' > "
                       ".gitattributes && echo a > a && git add . && git commit -qm s && "
                       "git config filter.x.clean 'sh %s; cat' && touch -d 2000-01-01 a && "
                       "cd .. && git add sub && printf '[submodule \"sub\"]\\n\\tpath = sub"
                       "\\n\\tignore = none\\n' > .gitmodules" % trap, "git status --short"),
        "rebase todo": (ws["rebase todo"], "GIT_SEQUENCE_EDITOR='sed -i 1ibreak' git rebase -q -i --exec "
                        "'sh %s' HEAD~1" % trap, "git rebase --continue"),
        "strategy": (ws["strategy"], "mkdir -p git-merge-evil && cp %s git-merge-evil/run && chmod 755 "
                     "git-merge-evil/run" % trap,
                     "git cherry-pick --strategy=evil/run side; git cherry-pick --abort"),
        "receive-pack": (norepo, "git init -q --bare %s.alt && git init -q --bare %s && echo "
                         "%s.alt/objects > %s/objects/info/alternates && git -C %s config "
                         "core.alternateRefsCommand 'sh %s; true'" % (ev, ev, ev, ev, ev, trap),
                         "git receive-pack %s </dev/null" % ev),
        "clone hooks": (ws["clone hooks"], "(while [ ! -d x/.git/hooks ]; do :; done; cp %s "
                        "x/.git/hooks/post-checkout; chmod 755 x/.git/hooks/post-checkout) &"
                        % trap, "git clone -q %s x; wait" % url),
    }
    try:
        for name, (cwd, plant, granted) in cases.items():
            if os.path.exists(leak):
                os.unlink(leak)
            script = "sh -c %s >/dev/null 2>&1; %s >/dev/null 2>&1; echo done=1" % (
                shlex.quote(plant), granted)
            env = base_env()
            env.update(GH_TOKEN=token, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
                       GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
            out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=cwd,
                                 capture_output=True, text=True, timeout=120)
            leaked = open(leak).read().count(token) if os.path.exists(leak) else 0
            check("grant git state (%s): no program of a command's ran with the token" % name,
                  "done=1" in out.stdout and leaked == 0,
                  "%d leaks; %s" % (leaked, (out.stdout + out.stderr)[-400:]))
    finally:
        daemon.kill()
        daemon.wait()
    # Still working: a granted commit runs the repository's own hook, from a subdirectory.
    ws = workspace("hook")
    common.open_to_all(tmp)
    hook = os.path.join(ws, ".git", "hooks", "pre-commit")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\necho hook-ran\n")
    os.chmod(hook, 0o755)
    os.makedirs(os.path.join(ws, "d"), exist_ok=True)
    env = base_env()
    env.update(GH_TOKEN=token, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", "cd d && git commit -q --allow-empty "
                                            "-m c && echo commit=0"]),
                         env=env, cwd=ws, capture_output=True, text=True, timeout=60)
    check("grant git state: a granted commit in a subdirectory runs the repository's hook",
          "hook-ran" in out.stderr and "commit=0" in out.stdout,
          (out.stdout + out.stderr)[-400:])


def fake_agent(tmp, launcher_js, dirs=("bin",)):
    """An npm package of a fake agent in tmp/pkg: package.json, bin/agent.js (launcher_js,
    executable) and dirs. (pkg, launcher)."""
    pkg = os.path.join(tmp, "pkg")
    for d in dirs:
        os.makedirs(os.path.join(pkg, d))
    with open(os.path.join(pkg, "package.json"), "w") as f:
        f.write('{"name": "fake-agent", "version": "1.0.0"}\n')
    launcher = os.path.join(pkg, "bin", "agent.js")
    with open(launcher, "w") as f:
        f.write(launcher_js)
    os.chmod(launcher, 0o755)
    return pkg, launcher


def open_dirs(top):
    """Every directory under top searchable by all."""
    for root, dirs, files in os.walk(top):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)


def test_agent_relaunch_env(tmp):
    """The agent started again in node (as Gemini CLI and Qwen Code do, after they loaded a
    project .env) runs as the agent only with the environment it started with, as far as
    runnerd's guarded names go: with a variable of agent.env_guard changed (OPENSSL_CONF, whose
    file can load a module into node; a base URL, where the key goes), it runs as a command,
    without the key. The build before ran it as the agent, with the key."""
    node = shutil.which("node")
    if not node:
        common.skip_part("agent relaunch env: node is needed")
        return
    os.chmod(tmp, 0o755)
    pkg, launcher = fake_agent(tmp, """#!/usr/bin/env node
const {spawnSync} = require('child_process');
const key = () => process.env.RD_AGENT_API_KEY || '';
if (process.argv[2]) {
  console.log(process.argv[2] + '=[' + key() + ']');
  process.exit(0);
}
const again = (tag, env) => spawnSync(process.execPath, ['--max-old-space-size=60', __filename,
                                      tag], {stdio: 'inherit', env: env});
again('same', process.env);
again('url', Object.assign({}, process.env, {RD_GUARD_URL: 'http://127.0.0.1:9/v1'}));
again('openssl', Object.assign({}, process.env, {OPENSSL_CONF: '/tmp/x/openssl.cnf'}));
""")
    open_dirs(pkg)
    path = write_profile(tmp, "relaunchenv", {"default": "allow", "protect": [pkg]},
                         agent_env_allow=["RD_AGENT_API_KEY", "RD_GUARD_URL"])
    with open(path) as f:
        spec = json.load(f)
    spec["agent"]["interpreter_options"] = ["--max-old-space-size=*"]
    spec["agent"]["env_guard"] = ["RD_GUARD_URL", "OPENSSL_CONF"]
    spec["agent"]["env_files"] = [".env"]
    with open(path, "w") as f:
        json.dump(spec, f)
    key = "sk-agent-" + CANARY
    env = base_env()
    env.update(RD_AGENT_API_KEY=key, RD_GUARD_URL="https://api.example.com/v1")
    env["PATH"] = os.path.dirname(node) + ":" + env.get("PATH", "/usr/bin:/bin")
    out = subprocess.run(runnerd_cmd(path, [launcher]), env=env, cwd=tmp, capture_output=True,
                         text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=[" in l)
    check("agent relaunch env: started again as it started, it is the agent",
          got.get("same") == "[%s]" % key, repr(got) + out.stderr[-400:])
    check("agent relaunch env: with a guarded base URL changed, a command without the key",
          got.get("url") == "[]", repr(got.get("url")))
    check("agent relaunch env: with OPENSSL_CONF set, a command without the key",
          got.get("openssl") == "[]", repr(got.get("openssl")))
    check("agent relaunch env: and runnerd says why",
          "started one of its own programs again with" in out.stderr, out.stderr[-400:])


def test_grant_git_late_repo(tmp):
    """The grant's check takes a repository, then git starts: a command in the background
    that, over and over, writes a .git/commondir (naming a repository of its own, whose
    configuration has git reach its remote through a program of the command's) and removes
    it; or puts a .git of its own between the granted git's cwd and the checked top, or in a
    cwd where the check found no repository, and takes it away. Granted git fetches passed
    the check, then took the command's repository and ran its program with the token (the
    build before: about half of 40 in the first two). The granted git is now told which
    repository its check took (GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR), or that there is none
    (GIT_DIR=/dev/null)."""
    setup = granted_repo(tmp, "late")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    os.makedirs(os.path.join(ws, "a", "b"))
    plain = os.path.join(tmp, "plain")
    os.makedirs(plain)
    # The workspace (runnerd's cwd), where the command's repository goes relative to the cwd
    # (the cwd's parent; the cwd of a workspace that is no repository), and the cwd in it.
    where = {"commondir": (ws, ".git", "."), "nearer": (ws, "..", "a/b"),
             "none": (plain, ".", ".")}
    for kind, (top, at, sub) in where.items():
        ran, leaks, out = race_grant(tmp, prof, env, genv, top, kind, at, sub,
                                     "git fetch -q origin")
        check("grant git late repo (%s): the runs ran" % kind, ran, out)
        check("grant git late repo (%s): no program of a command's ran with the token" % kind,
              leaks == 0, "%d leaks in 40 fetches" % leaks)
    # The granted git still works where it is: a commit in a subdirectory, a status, the top.
    script = "cd a/b && git commit -q --allow-empty -m sub; echo commit_rc=$?; " \
             "git status --short; git rev-parse --show-toplevel"
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=60)
    check("grant git late repo: a granted commit in a subdirectory works",
          "commit_rc=0" in out.stdout and out.stdout.strip().endswith(ws),
          out.stdout[-300:] + out.stderr[-300:])


def test_grant_other_git(tmp):
    """A granted program that is not git but runs it (gh does; env stands for it here) finds
    runnerd's git first on its PATH, which tells the real git the repository the grant's check
    took where the program started. The build before: a command in the background that
    wrote a .git/commondir, or moved a .git of its own in and out between the cwd and the
    checked top, had some of 40 such fetches run its core.sshCommand with the token. Its git
    still works where it is, from a subdirectory, and in another repository commands cannot
    write (-C, or run there); and git is the real one's. In a repository commands can write,
    and for a clone, it refuses."""
    setup = granted_repo(tmp, "other", "env")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    os.makedirs(os.path.join(ws, "a", "b"))
    for kind, at, sub in (("commondir", ".git", "."), ("nearer", "..", "a/b")):
        ran, leaks, out = race_grant(tmp, prof, env, genv, ws, kind, at, sub,
                                     "env git fetch -q origin")
        check("grant other git (%s): the runs ran" % kind, ran, out)
        check("grant other git (%s): no program of a command's ran with the token" % kind,
              leaks == 0, "%d leaks in 40 fetches" % leaks)
    # Another repository: one commands cannot write (the user's, in the home: git runs there
    # as it is), and one they can (in /tmp, with a program of a command's as its ssh: refused,
    # as a clone is, whose new configuration commands can write while git reads it).
    with home_repo(genv, "rd-other-") as other:
        writable, leak = trap_repo(tmp, "writable")
        script = "; ".join([
            "echo top=$(cd a/b && env git rev-parse --show-toplevel)",
            "echo log=$(env git log -1 --format=%s)",
            "echo other=$(env git -C %s log -1 --format=%%s)" % other,
            "echo there=$(env sh -c 'cd %s && git log -1 --format=%%s')" % other,
            "echo version=$(env git --version)",
            "env git -C %s fetch -q origin; echo writable_rc=$?" % writable,
            "env sh -c 'cd %s && git fetch -q origin'; echo writable_cd_rc=$?" % writable,
            "env git clone -q git://127.0.0.1:9/x %s/cloned; echo clone_rc=$?" % tmp,
            # The session's /dev/shm, which every sandbox shares.
            "sh -c 'git init -q /dev/shm/rd-repo && cp %s/.git/config /dev/shm/rd-repo/.git/'"
            % writable,
            "env git -C /dev/shm/rd-repo fetch -q origin; echo shm_rc=$?",
            # git by its full path, which runnerd's git first on the PATH does not see: git's
            # own git covers the program's git too (the build before ran the fetch there).
            "echo full=$(env %s log -1 --format=%%s)" % shutil.which("git"),
            "env %s -C %s fetch -q origin; echo full_rc=$?" % (shutil.which("git"), writable),
        ])
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                             capture_output=True, text=True, timeout=120)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    want = {"top": ws, "log": "mine", "other": "theirs", "there": "theirs", "full": "mine"}
    check("grant other git: its git works where it is, from a subdirectory, with -C and in "
          "another repository commands cannot write",
          all(got.get(k) == v for k, v in want.items()), repr(got) + out.stderr[-300:])
    check("grant other git: the real git answers", got.get("version", "").startswith(
        "git version"), repr(got))
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    check("grant other git: in a repository commands can write (/tmp, /dev/shm), with -C or "
          "there, by git's full path, and a clone: refused, nothing runs with the token",
          leaks == 0 and all(got.get(k) == "128" for k in
                             ("writable_rc", "writable_cd_rc", "clone_rc", "shm_rc",
                              "full_rc")) and
          "a clone by a program that holds a secret is refused" in out.stderr,
          "%d leaks, %r: %s" % (leaks, got, out.stderr[-400:]))

    # The directory it started in renamed, with a .git of the command's put in it, before
    # the program runs git there: runnerd's git knows the directory by where it is, not by
    # the name it had (before, it took the name's mismatch for elsewhere, and git took the
    # command's repository). And its own git init there, then a commit: refused, not done
    # in the workspace's repository.
    evil, leak = trap_repo(tmp, "rename")
    plant = "(sleep 0.5; cp -r %s/.git %%s/.git%%s) &" % evil
    late = "env sh -c 'sleep 2; git %s fetch -q origin 2>/dev/null; echo %s_rc=$?'"
    script = "\n".join([
        "mkdir -p sub && cd sub",
        plant % ("%s/sub" % ws, "; mv %s/sub %s/sub2" % (ws, ws)),
        late % ("", "renamed"),
        "wait; cd %s; rm -rf sub2; mkdir c" % ws,
        plant % ("%s/c" % ws, ""),
        late % ("-C c", "dash_c"),
        "wait; rm -rf c",
        "mkdir new && cd new && env sh -c 'git init -q && git commit -q --allow-empty -m x; "
        "echo init_rc=$?'",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    # And in a workspace that is no repository: the start directory renamed, or the program
    # gone up to a directory where a command made a .git.
    plain = os.path.join(tmp, "plain")
    os.makedirs(os.path.join(plain, "up"))
    common.open_to_all(plain)
    script = "\n".join([
        "mkdir -p sub && cd sub",
        plant % ("%s/sub" % plain, "; mv %s/sub %s/sub2" % (plain, plain)),
        late % ("", "plain_renamed"),
        "wait; cd %s; rm -rf sub2; cd up" % plain,
        plant % (plain, ""),
        "env sh -c 'sleep 2; cd ..; git fetch -q origin 2>/dev/null; echo plain_up_rc=$?'",
        "wait; rm -rf %s/.git" % plain,
    ])
    out2 = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=plain,
                          capture_output=True, text=True, timeout=120)
    got.update(l.split("=", 1) for l in out2.stdout.splitlines() if "=" in l)
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    ran = ("renamed_rc", "dash_c_rc", "plain_renamed_rc", "plain_up_rc")
    check("grant other git: a start directory renamed, with a .git of a command's in it, git -C "
          "into one, or up into one, in a repository or none, runs nothing with the token",
          leaks == 0 and all(got.get(k) not in (None, "0") for k in ran),
          "%d leaks, %r %s %s" % (leaks, got, out.stderr[-300:], out2.stderr[-300:]))
    mine = subprocess.run(["git", "-C", ws, "log", "--format=%s"], capture_output=True,
                          text=True).stdout.split()
    check("grant other git: its own git init, then a commit there, is refused, not done in "
          "the workspace's repository", got.get("init_rc") not in (None, "0") and
          mine == ["mine"] and "lies between here and the repository" in out.stderr,
          "%r, workspace log %r: %s" % (got, mine, out.stderr[-300:]))

    # A start PATH of directories commands can write alone: none is kept, and the PATH left
    # is no empty one, which execvp, bash and Python take as the cwd (a ./git of a command's
    # ran with the token).
    pbin = os.path.join(tmp, "pbin")
    os.makedirs(pbin)
    trap = "#!/bin/sh\necho \"$GH_TOKEN\" >> %s/leak-path\n" % tmp
    for d in (pbin, os.path.join(ws, "a")):
        with open(os.path.join(d, "git"), "w") as f:
            f.write(trap)
        os.chmod(os.path.join(d, "git"), 0o755)
    out = subprocess.run(runnerd_cmd(prof, ["/bin/sh", "-c",
                                            "cd a && /usr/bin/env git status; echo rc=$?"]),
                         env=dict(env, PATH=pbin), cwd=ws, capture_output=True, text=True,
                         timeout=60)
    leaked = os.path.exists(os.path.join(tmp, "leak-path"))
    check("grant other git: with no start PATH entry kept, no ./git of a command's runs with "
          "the token", not leaked and "rc=0" not in out.stdout,
          out.stdout[-200:] + out.stderr[-300:])

    # Which git it runs: never one a caller names (RUNNERD_GIT, where a profile passes such
    # names); the first on its PATH that the agent's user cannot replace (as root every
    # file is the agent's to replace: the first).
    home = pwd.getpwuid(os.geteuid()).pw_dir
    mine_bin = tempfile.mkdtemp(prefix="rd-bin-", dir=home)
    try:
        os.chmod(mine_bin, 0o755)
        with open(os.path.join(mine_bin, "git"), "w") as f:
            f.write("#!/bin/sh\necho fake\n")
        os.chmod(os.path.join(mine_bin, "git"), 0o755)
        with open(prof) as f:
            loose = json.load(f)
        loose["commands"]["env_allow"] = ["RUNNERD_GIT*"]
        loose["name"] = "loose"
        with open(os.path.join(tmp, "loose.json"), "w") as f:
            json.dump(loose, f)
        penv = dict(env, PATH=mine_bin + ":" + env["PATH"])
        out = subprocess.run(runnerd_cmd(os.path.join(tmp, "loose.json"), [
            "bash", "-c", "RUNNERD_GIT=/bin/false env sh -c "
                          "'echo at=$RUNNERD_GIT; echo rg=$(\"$RUNNERD_GIT\" --version)'"]),
            env=penv, cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(mine_bin, ignore_errors=True)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    # runnerd's gits run it from where the sandbox binds it (the program's git itself is
    # covered by git's own git).
    want = "fake" if os.geteuid() == 0 else "git version"
    check("grant other git: the git it runs is not a caller's, nor one the agent's user could "
          "replace (as root: the first)", got.get("at") == "/dev/.runnerd/real/git"
          and got.get("rg", "").startswith(want),
          "%r, want %s: %s" % (got, want, out.stderr[-300:]))


def test_grant_git_missing_config(tmp):
    """Configurations git reads that were missing at the start, which a command can make
    between the grant's check and git's start (protected, but a missing file cannot be held):
    a .git/config.worktree where the repository has git read one (extensions.worktreeConfig),
    and ~/.gitconfig where the home is the workspace. A loop that wrote one and took it away
    won some of 40 granted fetches, with a remote whose ssh is the command's program (the
    build before). Now the first is refused, with the fix; for the second git is told the
    global configuration it would have read (GIT_CONFIG_GLOBAL, here /dev/null)."""
    setup = granted_repo(tmp, "missing")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    subprocess.run(["git", "-C", ws, "config", "extensions.worktreeConfig", "true"],
                   check=True)
    ran, leaks, out = race_grant(tmp, prof, env, genv, ws, "file:.git/config.worktree", ".",
                                 ".", "git fetch -q origin")
    check("grant git missing config (config.worktree): the runs ran", ran, out)
    check("grant git missing config (config.worktree): no program of a command's ran with "
          "the token", leaks == 0, "%d leaks in 40 fetches" % leaks)
    audit = os.path.join(tmp, "audit.jsonl")
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", "git status >/dev/null"],
                                     audit=audit), env=env, cwd=ws, capture_output=True,
                         text=True, timeout=60)
    said = open(audit).read() if os.path.exists(audit) else ""
    check("grant git missing config (config.worktree): refused, audited with the fix",
          out.returncode != 0 and "make it (empty) before the session" in said,
          out.stderr[-300:] + said[-300:])
    subprocess.run(["git", "-C", ws, "config", "--unset", "extensions.worktreeConfig"],
                   check=True)
    # The home is the workspace: ~/.gitconfig is protected there, and missing.
    henv = dict(env, HOME=ws)
    ran, leaks, out = race_grant(tmp, prof, henv, genv, ws, "file:%s/.gitconfig" % ws, ".",
                                 ".", "git fetch -q origin")
    check("grant git missing config (~/.gitconfig): the runs ran", ran, out)
    check("grant git missing config (~/.gitconfig): no program of a command's ran with the "
          "token", leaks == 0, "%d leaks in 40 fetches" % leaks)
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", "git log -1 --format=log=%s"]),
                         env=henv, cwd=ws, capture_output=True, text=True, timeout=60)
    check("grant git missing config (~/.gitconfig): a granted git still works there",
          "log=mine" in out.stdout, out.stdout[-200:] + out.stderr[-300:])


def test_runnerd_git(tmp):
    """runnerd runs git itself, outside any sandbox: at the start (where the workspace's
    hooks are) and at the end (its gitlinks). It took the first git on its PATH, with the
    operator's whole environment: a command that put a git in a directory of that PATH it
    can write (a project's node_modules/.bin, put first on PATH as some do) had it run at the
    session's end as the user, outside the sandbox, with every secret of that environment
    (the build before). Now runnerd takes the first git outside the writable roots, chosen
    at the start, and gives it HOME and no secret."""
    git = shutil.which("git")
    if not git:
        common.skip_part("runnerd git: git is needed")
        return
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    subprocess.run(["git", "init", "-q", ws], check=True)
    common.open_to_all(tmp)
    marker = os.path.join(tmp, "ran")
    fake = os.path.join(tmp, "fake-git")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\nenv > %s\nexec %s \"$@\"\n" % (marker, git))
    os.chmod(fake, 0o755)
    bin_ = os.path.join(ws, "node_modules", ".bin")
    env = base_env()
    env["PATH"] = bin_ + ":" + env["PATH"]
    script = "mkdir -p %s && cp %s %s/git && echo planted=yes" % (bin_, fake, bin_)
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=60)
    check("runnerd git: the command planted its git", "planted=yes" in out.stdout,
          out.stdout + out.stderr[-300:])
    ran = open(marker).read() if os.path.exists(marker) else ""
    check("runnerd git: runnerd ran no git a command wrote, at the end or the next start",
          not ran, "it ran, with %d variables, canary %s" % (
              len(ran.splitlines()), CANARY in ran))
    # The next session starts with it there: not run either.
    out = subprocess.run(runnerd_cmd("generic", ["true"]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=60)
    ran = open(marker).read() if os.path.exists(marker) else ""
    check("runnerd git: the next session's start runs it neither", not ran and
          "no git on PATH" not in out.stderr, out.stderr[-300:])
    # A global configuration that names a trace2 target (as one a command could write, where
    # ~/.gitconfig is linked into the workspace): runnerd's own git, outside any sandbox,
    # appended its trace there, values of the configuration in it (the build before).
    home = tempfile.mkdtemp(prefix="rd-home-", dir=pwd.getpwuid(os.geteuid()).pw_dir)
    trace = os.path.join(tmp, "trace2.out")
    try:
        os.chmod(home, 0o755)
        with open(os.path.join(home, ".gitconfig"), "w") as f:
            f.write("[trace2]\n\tnormalTarget = %s\n\teventTarget = %s\n"
                    "\tperfTarget = %s\n" % (trace, trace, trace))
        out = subprocess.run(runnerd_cmd("generic", ["true"]), env=dict(base_env(), HOME=home),
                             cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    check("runnerd git: runnerd's own git writes no trace2 target the configuration names",
          out.returncode == 0 and not os.path.exists(trace),
          "rc=%d, trace %s" % (out.returncode, os.path.exists(trace)))
    # A directory only a rule's commands may write (as ~/go/bin for go install), first on
    # PATH: runnerd took the git one planted there at the next session's start, outside the
    # sandbox (the build before).
    home = pwd.getpwuid(os.geteuid()).pw_dir
    gobin = tempfile.mkdtemp(prefix="rd-gobin-", dir=home)
    try:
        os.chmod(gobin, 0o755)
        prof = write_profile(tmp, "rulegit", {"default": "allow", "rules": [
            {"match": {"args": ["-c", "*#PLANT*"]}, "action": "allow", "write": [gobin]}]})
        env["PATH"] = gobin + ":" + base_env()["PATH"]
        out = subprocess.run(runnerd_cmd(prof, ["sh", "-c", "sh -c 'cp %s %s/git #PLANT' && "
                                                "echo planted=yes" % (fake, gobin)]),
                             env=env, cwd=ws, capture_output=True, text=True, timeout=60)
        check("runnerd git: the rule's command planted its git in the rule's root",
              "planted=yes" in out.stdout and os.path.exists(os.path.join(gobin, "git")),
              out.stdout + out.stderr[-300:])
        out = subprocess.run(runnerd_cmd(prof, ["true"]), env=env, cwd=ws,
                             capture_output=True, text=True, timeout=60)
        ran = open(marker).read() if os.path.exists(marker) else ""
        check("runnerd git: no git a rule's command could write runs at the next start",
              not ran and "no git outside" not in out.stderr, out.stderr[-300:])
    finally:
        shutil.rmtree(gobin, ignore_errors=True)


def poisoned_fetch(tmp, prof, env, ws, name, target, config=None):
    """A command appends a configuration that reaches origin through a program writing
    GH_TOKEN (git_ssh_trap) to target, a file git reads as configuration, then the agent's
    granted git fetch (under config, a file): (tokens written, the output, the audit log's
    text)."""
    leak = os.path.join(tmp, "leak-" + name)
    trap = git_ssh_trap(tmp, leak).replace("\n", "\\n").replace('"', '\\"')
    audit = os.path.join(tmp, "audit-%s.jsonl" % name)
    script = "sh -c 'printf \"%s\" >> %s'; git fetch -q origin; echo rc=$?" % (trap, target)
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script], config=config, audit=audit),
                         env=env, cwd=ws, capture_output=True, text=True, timeout=60)
    leaks = open(leak).read().count(env["GH_TOKEN"]) if os.path.exists(leak) else 0
    said = open(audit).read() if os.path.exists(audit) else ""
    return leaks, out, said


@contextlib.contextmanager
def linked_home(links):
    """A home for the agent (its HOME), under the user's own, which commands cannot write, with
    the symlinks of links ({name in it: target}): its path, removed after."""
    home = tempfile.mkdtemp(prefix="rd-home-", dir=pwd.getpwuid(os.geteuid()).pw_dir)
    try:
        os.chmod(home, 0o755)
        for name, target in links.items():
            os.makedirs(os.path.dirname(os.path.join(home, name)), exist_ok=True)
            os.symlink(target, os.path.join(home, name))
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def home_repo(genv, prefix):
    """A repository with one commit (theirs), OUTSIDE/other, in a directory under the user's
    home, which commands cannot write: its path, removed after."""
    home = pwd.getpwuid(os.geteuid()).pw_dir
    outside = tempfile.mkdtemp(prefix=prefix, dir=home)
    try:
        os.chmod(outside, 0o755)
        other = os.path.join(outside, "other")
        subprocess.run(["git", "init", "-q", other], check=True)
        subprocess.run(["git", "-C", other, "commit", "-q", "--allow-empty", "-m", "theirs"],
                       check=True, env=genv)
        yield other
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_grant_git_global_link(tmp):
    """The user's ~/.gitconfig a symlink into the workspace (a dotfiles repository, as stow
    makes them): a command wrote a core.sshCommand there, and a granted fetch ran it with the
    token (the build before). The global configuration is judged by its real path now, and
    the grant refused, audited with the fix."""
    setup = granted_repo(tmp, "globallink")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    with open(os.path.join(ws, "dotgitconfig"), "w") as f:
        f.write("[user]\n\tname = t\n")
    common.open_to_all(ws)
    with linked_home({".gitconfig": os.path.join(ws, "dotgitconfig")}) as home:
        leaks, out, said = poisoned_fetch(tmp, prof, dict(env, HOME=home), ws, "global",
                                          "dotgitconfig")
    check("grant git global link: a global configuration leading into the workspace runs "
          "nothing with the token, and the grant is refused with the fix",
          leaks == 0 and "rc=126" in out.stdout and "keep it out of the writable" in said,
          "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-200:]))

    def fetches(links, kind, n=40):
        """n granted fetches with a home of links while a command runs race_grant's kind."""
        with linked_home(links) as home:
            common.open_to_all(ws)
            return race_grant(tmp, prof, dict(env, HOME=home), genv, ws, kind, ws, ws,
                              "git fetch -q origin; echo rc=$?", n)

    # A link that leads nowhere at the check: a command makes its target (and takes it away)
    # over and over. It was passed over as no configuration, and git then read what the
    # command had made by the time it started (the build before 20c7b95).
    target = os.path.join(ws, "dangling.gitconfig")
    ran, leaks, text = fetches({".gitconfig": target}, "file:" + target)
    check("grant git global link: a global configuration that leads nowhere while a command "
          "makes its target runs nothing with the token (40 fetches), and is refused",
          ran and leaks == 0 and "rc=126" in text and "rc=0" not in text,
          "%d leaks: %s" % (leaks, text))
    # ~/.config a link into the workspace, where git/config is missing at the check and a
    # command makes it (and takes it away) over and over: the file was judged by the path as
    # written, outside the writable roots, and git read what the command had made by its
    # start (the build before). Now judged by its directory's real path: git is told no
    # global configuration (GIT_CONFIG_GLOBAL=/dev/null) when it is missing at the check.
    dotconfig = os.path.join(ws, "dotconfig")
    os.makedirs(os.path.join(dotconfig, "git"))
    ran, leaks, text = fetches({".config": dotconfig},
                               "file:" + os.path.join(dotconfig, "git", "config"))
    check("grant git global link: a ~/.config leading into the workspace, git/config missing "
          "while a command makes it, runs nothing with the token (40 fetches)",
          ran and leaks == 0, "%d leaks: %s" % (leaks, text))
    # ~/.config/git a link to a directory of the workspace that is missing at the check, which
    # a command makes (with a config) and takes away, over and over; and ~/.gitconfig a link
    # to a link in the workspace, which a command turns from /dev/null to its repository's
    # configuration and back. The build before judged the first by the path as written (the
    # link's target missing), the second by where the links led at the check (/dev/null), and
    # git read the command's configuration when it started. Now any link in a writable root on
    # the way, or a part missing there, counts as the commands'.
    dotfiles = os.path.join(ws, "dotfiles")
    os.makedirs(dotfiles)
    os.symlink("/dev/null", os.path.join(dotfiles, "cfglink"))
    common.open_to_all(ws)
    loops = {
        "dangling dir": ("while :; do mkdir -p {0}/git.x && cp {{evil}}/.git/config {0}/git.x/"
                         "config && mv -T {0}/git.x {0}/git; rm -rf {0}/git; done".format(dotfiles),
                         {".config/git": os.path.join(dotfiles, "git")}),
        "turned link": ("while :; do ln -sfn {{evil}}/.git/config {0}/l.x && mv -T {0}/l.x "
                        "{0}/cfglink; ln -sfn /dev/null {0}/l.y && mv -T {0}/l.y {0}/cfglink; "
                        "done".format(dotfiles), {".gitconfig": os.path.join(dotfiles, "cfglink")}),
    }
    for what, (loop, links) in loops.items():
        ran, leaks, text = fetches(links, "sh:" + loop)
        check("grant git global link: a %s on the way to the global configuration, while a "
              "command makes or turns it, runs nothing with the token (40 fetches)" % what,
              ran and leaks == 0, "%d leaks: %s" % (leaks, text))
    # ~/.config a link into the workspace, git/config there missing at the first check and
    # made before the second (a tight loop of link and unlink): runnerd judged the file at two
    # moments, and the second took one that was there by then (a review had 6 of 100 fetches
    # run the command's core.sshCommand on af76338). Now one there at the second that leads
    # into a writable root counts as made by a command. (Hard links within the workspace's
    # mount: across mounts, link fails.)
    dotconfig = os.path.join(ws, "dotconfig2")
    os.makedirs(os.path.join(dotconfig, "git"))
    cfg, src = os.path.join(dotconfig, "git", "config"), os.path.join(dotconfig, "evil.cfg")
    loop = ("cp {evil}/.git/config %s && python3 -c 'import os,sys,itertools; "
            "a,d=sys.argv[1:3]; [(os.link(a,d),os.unlink(d)) for _ in itertools.count()]' "
            "%s %s" % (src, src, cfg))
    ran, leaks, text = fetches({".config": dotconfig}, "sh:" + loop, 150)
    check("grant git global link: a git/config made between runnerd's two looks at it runs "
          "nothing with the token (150 fetches)", ran and leaks == 0,
          "%d leaks: %s" % (leaks, text))
    # The agent started with a relative GIT_CONFIG_GLOBAL, under a config that lets it pass
    # (the shipped one denies it): git reads it in the directory it works in, where a command
    # wrote a core.sshCommand (the build before ran it). Now the granted git is told none.
    cfg = common.shipped_config()
    cfg["env"]["hard_deny"].remove("GIT_CONFIG_GLOBAL")
    cfg["env"]["base_allow"].append("GIT_CONFIG_GLOBAL")
    config = os.path.join(tmp, "relglobal.json")
    with open(config, "w") as f:
        json.dump(cfg, f)
    leaks, out, said = poisoned_fetch(tmp, prof, dict(env, GIT_CONFIG_GLOBAL="relglobal.cfg"),
                                      ws, "relglobal", "relglobal.cfg", config)
    check("grant git global link: a relative GIT_CONFIG_GLOBAL of the agent's, which a command "
          "wrote, runs nothing with the token", leaks == 0 and "rc=" in out.stdout,
          "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-200:]))


def test_grant_path_link(tmp):
    """A directory of the agent's PATH reached through a symlink that lies in the workspace
    (~/sdk -> WS/.sdk-cur -> /usr/bin, as version managers link them): runnerd judged it by
    its two ends at the check, and a command that turned the link to a directory of its own
    meanwhile had the granted git run the command's ssh with the token (the build before).
    Now an entry with a link in a writable root on the way is left out of a granted
    command's PATH."""
    setup = granted_repo(tmp, "pathlink")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    subprocess.run(["git", "-C", ws, "remote", "add", "origin", "ssh://git@127.0.0.1/x"],
                   check=True)
    leak = os.path.join(tmp, "leak-pathlink")
    evilbin = os.path.join(ws, "evilbin")
    os.makedirs(evilbin)
    with open(os.path.join(evilbin, "ssh"), "w") as f:
        f.write('#!/bin/sh\necho "$GH_TOKEN" >> %s\nexit 1\n' % leak)
    cur = os.path.join(ws, ".sdk-cur")
    os.symlink("/usr/bin", cur)
    common.open_to_all(ws)
    os.chmod(os.path.join(evilbin, "ssh"), 0o755)
    os.chmod(tmp, 0o777)
    loop = ("while :; do ln -sfn {0} {1}.x && mv -T {1}.x {1}; ln -sfn /usr/bin {1}.y && "
            "mv -T {1}.y {1}; done".format(evilbin, cur))
    script = "\n".join(["sh -c \"%s\" >/dev/null 2>&1 &" % loop, "sleep 0.2",
                        "for i in $(seq 40); do git fetch -q origin 2>/dev/null; done",
                        "echo runs=done", "kill %1; wait"])
    with linked_home({"sdk": cur}) as home:
        path = os.path.join(home, "sdk") + ":" + env["PATH"]
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]),
                             env=dict(env, HOME=home, PATH=path), cwd=ws, capture_output=True,
                             text=True, timeout=300)
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    check("grant path link: a PATH entry through a link in the workspace, which a command "
          "turns, runs nothing of the command's with the token (40 fetches)",
          "runs=done" in out.stdout and leaks == 0,
          "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-300:]))
    # A PATH entry under a protected path that was missing at the start (sandbox.protect
    # "{workspace}/tools", no directory made for it): nothing holds it, and a command that
    # made it, an empty tools/bin (inert, so no grant is refused for it), and puts an ssh
    # there after each check had the granted git run it (the build before kept the entry, as
    # protected). Now it counts as where commands can write.
    shipped = common.shipped_config()
    shipped["sandbox"]["protect"].append("{workspace}/tools")
    config = os.path.join(tmp, "toolsprotect.json")
    with open(config, "w") as f:
        json.dump(shipped, f)
    open(leak, "w").close()
    tools = os.path.join(ws, "tools")
    loop = ("mkdir -p {0}/bin; while :; do cp {1}/ssh {0}/bin/s.x && mv {0}/bin/s.x "
            "{0}/bin/ssh; rm -f {0}/bin/ssh; done".format(tools, evilbin))
    script = "\n".join(["sh -c \"%s\" >/dev/null 2>&1 &" % loop, "sleep 0.2",
                        "for i in $(seq 120); do git fetch -q origin 2>/dev/null; done",
                        "echo runs=done", "kill %1; wait; rm -rf " + tools])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script], config=config),
                         env=dict(env, PATH=os.path.join(tools, "bin") + ":" + env["PATH"]),
                         cwd=ws, capture_output=True, text=True, timeout=300)
    leaks = open(leak).read().count(token)
    check("grant path link: a PATH entry under a protected path missing at the start, where a "
          "command makes an ssh, runs nothing of the command's with the token (120 fetches)",
          "runs=done" in out.stdout and leaks == 0,
          "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-300:]))


def test_grant_other_git_prefixes(tmp):
    """git takes any prefix of a long option that names it alone. runnerd's git, for a granted
    program that runs git (env stands for gh), matched fewer prefixes than a granted git is
    refused (policy/rules.c): --upl= (--upload-pack), --strat=./x (a strategy of the work
    tree's) and a pull's --reb (--rebase after --no-rebase) reached the real git with the
    token (the build before this test refused none of the three)."""
    setup = granted_repo(tmp, "prefixes", "env")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    common.open_to_all(ws)
    script = "; ".join([
        "env git fetch -q --upl=true origin; echo upl_rc=$?",
        "env git merge --strat=./x HEAD; echo strat_rc=$?",
        "env git pull -q --no-rebase --reb; echo reb_rc=$?",
        "env git fetch -q --recurse-sub=yes origin; echo sub_rc=$?",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=60)
    said = [l for l in out.stderr.splitlines() if l.startswith("runnerd: git:")]
    check("grant other git prefixes: --upl=, --strat=./x, --reb and --recurse-sub= are each "
          "refused by runnerd's git", len(said) == 4 and all(
              ("%s_rc=128" % k) in out.stdout for k in ("upl", "strat", "reb", "sub")),
          repr(said) + out.stdout[-200:] + out.stderr[-300:])


def test_grant_other_git_env(tmp):
    """runnerd's git, for a granted program that runs git (env stands for gh), checked
    nothing where GIT_DIR, GIT_WORK_TREE or GIT_COMMON_DIR was set (a gate meant for git's own
    hooks): a program that set GIT_DIR to a command's repository had the real git run its
    core.sshCommand with the token (the build before). Each is refused now, as --git-dir is;
    the values runnerd's git set itself still pass (a hook's git in the checked repository)."""
    setup = granted_repo(tmp, "gitenv", "env")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    evil, leak = trap_repo(tmp, "gitenv", genv)
    common.open_to_all(ws)
    script = "; ".join([
        "env GIT_DIR=%s/.git git fetch -q origin; echo dir_rc=$?" % evil,
        "env GIT_COMMON_DIR=%s/.git git fetch -q origin; echo common_rc=$?" % evil,
        "env GIT_WORK_TREE=%s git status -s; echo tree_rc=$?" % evil,
        # The checked GIT_DIR alone: git would take the rest from where it names.
        "env sh -c 'GIT_DIR=$RUNNERD_GIT_DIR git status -s'; echo alone_rc=$?",
        # runnerd's own variable taken away: its git checked nothing then.
        "env -u RUNNERD_GIT_DIR git -C %s fetch -q origin; echo unset_rc=$?" % evil,
        # A hook's git sees the three runnerd's git exported: they pass.
        "env sh -c 'GIT_DIR=$RUNNERD_GIT_DIR GIT_WORK_TREE=$RUNNERD_GIT_WORK_TREE "
        "GIT_COMMON_DIR=$RUNNERD_GIT_COMMON_DIR git rev-parse --is-inside-work-tree'; "
        "echo same_rc=$?",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=60)
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    said = [l for l in out.stderr.splitlines() if "names a repository runnerd did not" in l or
            "RUNNERD_GIT_DIR is not set" in l]
    check("grant other git env: GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE a program sets, "
          "the checked GIT_DIR alone, or RUNNERD_GIT_DIR taken away, are refused by runnerd's "
          "git, and run nothing with the token",
          leaks == 0 and len(said) == 5 and all(
              ("%s_rc=128" % k) in out.stdout
              for k in ("dir", "common", "tree", "alone", "unset")),
          "%d leaks: %r %s %s" % (leaks, said, out.stdout[-300:], out.stderr[-300:]))
    check("grant other git env: the repository runnerd's git set itself still passes",
          "true\nsame_rc=0" in out.stdout, out.stdout[-300:] + out.stderr[-300:])


def test_grant_no_sh(tmp):
    """A program granted a secret that runs git (env stands for gh) is pointed at runnerd's
    git, a /bin/sh script. Where runnerd sees no /bin/sh, the program would run the real git
    found on its PATH, told nothing of the repository the grant's check took (git status ran,
    the build before 20c7b95): the grant is refused instead, audited with the reason. Here
    /bin/sh is /dev/null in a mount namespace of runnerd's own (unshare). As root only: another
    user needs a user namespace for it, where runnerd is a root with one uid and refuses to
    run."""
    if os.geteuid() != 0:
        print("n/a  grant without /bin/sh: only root can take /bin/sh out of runnerd's view")
        return
    setup = granted_repo(tmp, "nosh", prog="env")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    unshare = shutil.which("unshare")
    if not unshare:
        common.skip_part("grant without /bin/sh: unshare (util-linux) is needed")
        return
    common.open_to_all(ws)
    audit = os.path.join(tmp, "audit-nosh.jsonl")
    script = "env git status >/dev/null 2>&1; echo granted_rc=$?; git status >/dev/null; " \
             "echo plain_rc=$?"
    inner = runnerd_cmd(prof, ["bash", "-c", script], audit=audit)
    cmd = [unshare, "-m", "--propagation", "private", "bash", "-c",
            'mount --bind /dev/null /bin/sh && exec "$@"', "nosh"] + inner
    out = subprocess.run(cmd, env=env, cwd=ws, capture_output=True, text=True, timeout=60)
    said = open(audit).read() if os.path.exists(audit) else ""
    check("grant without /bin/sh: the granted program that finds git on its PATH is refused "
          "(126), audited with the reason, and an ungranted git still runs",
          "granted_rc=126" in out.stdout and "plain_rc=0" in out.stdout and
          "no /bin/sh for runnerd" in said,
          out.stdout[-300:] + out.stderr[-300:] + said[-300:])
    # And git itself granted: git's own git is a /bin/sh script too.
    prof_git = grant_profile(tmp, "nosh-git", os.path.realpath(shutil.which("git")))
    audit = os.path.join(tmp, "audit-nosh-git.jsonl")
    inner = runnerd_cmd(prof_git, ["bash", "-c", "git status >/dev/null 2>&1; echo rc=$?"],
                        audit=audit)
    cmd = [unshare, "-m", "--propagation", "private", "bash", "-c",
           'mount --bind /dev/null /bin/sh && exec "$@"', "nosh"] + inner
    out = subprocess.run(cmd, env=env, cwd=ws, capture_output=True, text=True, timeout=60)
    said = open(audit).read() if os.path.exists(audit) else ""
    check("grant without /bin/sh: a granted git is refused (126), audited with the reason",
          "rc=126" in out.stdout and "no /bin/sh for runnerd" in said,
          out.stdout[-300:] + out.stderr[-300:] + said[-300:])


def test_grant_git_pull_rebase(tmp):
    """A granted git pull that rebases (pull.rebase here) runs the sequencer, whose todo
    (.git/rebase-merge/git-rebase-todo) commands can write while it runs: an exec line a
    background command adds runs with the token (a review's repro: 4 of 30 pulls on the build
    before c776423, where every pull here ran; the window between git's writing the todo and
    its reading it is too narrow to hit on every machine). A granted pull is refused but with
    --no-rebase, which merges."""
    setup = granted_repo(tmp, "pullrace")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    daemon = git_daemon(tmp, genv)
    if not daemon:
        return
    url, d = daemon
    try:
        pull_race(tmp, token, ws, prof, genv, env, url)
    finally:
        d.kill()
        d.wait()


def pull_race(tmp, token, ws, prof, genv, env, url):
    """test_grant_git_pull_rebase's pulls from url (a git daemon's srv.git) into ws."""
    up = os.path.join(tmp, "srv.git")
    subprocess.run(["git", "-C", ws, "push", "-q", up, "HEAD:refs/heads/main"], check=True)
    other = os.path.join(tmp, "other")
    subprocess.run(["git", "clone", "-q", "-b", "main", up, other], check=True)
    subprocess.run(["git", "-C", other, "commit", "-q", "--allow-empty", "-m", "theirs"],
                   check=True, env=genv)
    subprocess.run(["git", "-C", other, "push", "-q", "origin", "main"], check=True)
    for i in range(20):
        subprocess.run(["git", "-C", ws, "commit", "-q", "--allow-empty", "-m", "mine%d" % i],
                       check=True, env=genv)
    subprocess.run(["git", "-C", ws, "config", "pull.rebase", "true"], check=True)
    mine = subprocess.run(["git", "-C", ws, "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    common.open_to_all(ws)
    leak = os.path.join(tmp, "leak-pull")
    todo = ".git/rebase-merge/git-rebase-todo"
    line = "exec echo $GH_TOKEN >> %s" % leak
    script = "\n".join([
        "sh -c 'while :; do [ -f %s ] && ! grep -q leak-pull %s && echo \"%s\" >> %s; "
        "done' >/dev/null 2>&1 &" % (todo, todo, line, todo),
        "for i in $(seq 30); do git reset -q --hard %s; git pull -q %s main >/dev/null 2>&1; "
        "echo rc=$?; git rebase --abort >/dev/null 2>&1; done" % (mine, url),
        "kill %1; wait",
        "git reset -q --hard %s; git pull -q --no-rebase %s main >/dev/null 2>&1; "
        "echo merge_rc=$?" % (mine, url),
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=300)
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    rcs = re.findall(r"^rc=(\d+)$", out.stdout, re.M)
    check("grant git pull: a pull that rebases runs no exec line a command writes into its "
          "todo with the token (30 pulls), each refused (126)",
          leaks == 0 and len(rcs) == 30 and set(rcs) == {"126"},
          "%d leaks, rc %s: %s" % (leaks, sorted(set(rcs)), out.stderr[-300:]))
    check("grant git pull: a granted pull --no-rebase merges", "merge_rc=0" in out.stdout,
          out.stdout[-300:] + out.stderr[-300:])


def test_grant_git_include(tmp):
    """The repository's own configuration (protected) includes a file of the work tree
    (include.path, as a project may ask its contributors to set): a command wrote a
    core.sshCommand there, and a granted fetch ran it with the token (the build before). Now
    the grant is refused, audited with the file. And what a granted program gets of gh's
    own variables, and which of git's subcommands its git runs: a caller's GH_PAGER does not
    reach it, nor does its git go into submodules or rebase (git submodule, git pull but
    with --no-rebase)."""
    setup = granted_repo(tmp, "include")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    def included(name, what):
        """The work-tree file NAME.gitconfig, which the configuration includes, poisoned by a
        command before a granted fetch: refused, the file named, nothing run."""
        with open(os.path.join(ws, name + ".gitconfig"), "w") as f:
            f.write("[user]\n\tname = t\n")
        common.open_to_all(ws)
        leaks, out, said = poisoned_fetch(tmp, prof, env, ws, name, name + ".gitconfig")
        check("grant git include: " + what,
              leaks == 0 and "rc=126" in out.stdout and name + ".gitconfig" in said,
              "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-200:]))

    subprocess.run(["git", "-C", ws, "config", "include.path", "../shared.gitconfig"],
                   check=True)
    included("shared", "a work-tree file the repository's configuration includes runs "
             "nothing with the token, and the grant is refused, naming it")
    subprocess.run(["git", "-C", ws, "config", "--unset", "include.path"], check=True)
    # Written as git reads it too: two headers on one line, after a byte-order mark.
    cfg = os.path.join(ws, ".git", "config")
    text = open(cfg).read()
    with open(cfg, "w") as f:
        f.write("\ufeff" + text + "[core][include]path=../shared2.gitconfig\n")
    included("shared2", "an include after another header on its line is followed too")
    with open(cfg, "w") as f:
        f.write(text)
    # The include in a config.worktree, which git reads with extensions.worktreeConfig.
    subprocess.run(["git", "-C", ws, "config", "extensions.worktreeConfig", "true"], check=True)
    subprocess.run(["git", "-C", ws, "config", "--worktree", "include.path",
                    "../shared3.gitconfig"], check=True)
    included("shared3", "an include in .git/config.worktree is followed too")
    # A config.worktree git reads, there but not protected (a config that protects only the
    # repository's hooks and config, as docs/configuration.md advises for a nested one): a
    # command wrote a core.sshCommand into it, and a granted fetch ran it (the build before).
    subprocess.run(["git", "-C", ws, "config", "--worktree", "--unset", "include.path"],
                   check=True)
    shipped = common.shipped_config()
    shipped["sandbox"]["protect"].remove("{workspace}/.git/config.worktree")
    config = os.path.join(tmp, "nowtprotect.json")
    with open(config, "w") as f:
        json.dump(shipped, f)
    common.open_to_all(ws)
    leaks, out, said = poisoned_fetch(tmp, prof, env, ws, "wtwritable", ".git/config.worktree",
                                      config)
    check("grant git include: a .git/config.worktree commands can write runs nothing with the "
          "token, and the grant is refused",
          leaks == 0 and "rc=126" in out.stdout and "config.worktree" in said,
          "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-200:]))
    os.unlink(os.path.join(ws, ".git", "config.worktree"))
    with open(cfg, "w") as f:
        f.write(text)
    # Commands are passed GH_PAGER and GH_PATH, as the codex profile passes GH_PAGER.
    other = grant_profile(tmp, "include-env", os.path.realpath(shutil.which("env")),
                          ["GH_PAGER", "GH_PATH"])
    script = "; ".join([
        "GH_PAGER=x GH_PATH=y env sh -c 'echo pager=${GH_PAGER-unset} path=${GH_PATH-unset}'",
        "env git submodule update --init >/dev/null 2>&1; echo submodule_rc=$?",
        "env git pull -q origin >/dev/null 2>&1; echo pull_rc=$?",
        "mkdir -p 1.x && touch 1.x/f && env git add 1.x/f && env git status -s 1.x/f "
        ">/dev/null && env git commit -q -s -m 1.x/f; echo plain_rc=$?",
    ])
    out = subprocess.run(runnerd_cmd(other, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=60)
    check("grant git include: a caller's GH_PAGER and GH_PATH do not reach a granted program",
          "pager=unset path=unset" in out.stdout, out.stdout[-300:] + out.stderr[-300:])
    check("grant git include: its git goes into no submodule and pulls only with --no-rebase",
          "submodule_rc=128" in out.stdout and "pull_rc=128" in out.stdout,
          out.stdout[-300:] + out.stderr[-300:])
    check("grant git include: its git adds, shows and commits (-s) a path like 1.x/f",
          "plain_rc=0" in out.stdout, out.stdout[-300:] + out.stderr[-300:])


def in_session(prof, env, cwd, lines, timeout=120):
    """lines, joined by "; ", run by bash as the agent of a session under prof, in cwd."""
    return subprocess.run(runnerd_cmd(prof, ["bash", "-c", "; ".join(lines)]), env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)


def granted_commit(prof, env, ws, audit, message):
    """git commit --allow-empty in ws, by bash as the agent of a session under prof (its
    grant's profile), with an audit log; bash's output says commit_rc=."""
    return subprocess.run(runnerd_cmd(prof, ["bash", "-c", "git commit -q --allow-empty -m %s; "
                                             "echo commit_rc=$?" % message], audit=audit),
                          env=env, cwd=ws, capture_output=True, text=True, timeout=120)


SIDE_AGENT = r"""import os, subprocess, sys, time
ws, tmp = sys.argv[1], sys.argv[2]
# Gated: when the test says go.
if sys.argv[3:] == ["gated"]:
    open(tmp + "/ready", "w").close()
    while not os.path.exists(tmp + "/go"):
        time.sleep(0.05)
# A command of this session writes the other session's hook: its roots (/tmp here, the home
# where a session starts there) hold the other's workspace.
hook = ws + "/.git/hooks/pre-commit"
p = subprocess.run(["sh", "-c", "printf '#!/bin/sh\\necho hook=[$GH_TOKEN]\\n' > %s && "
                    "chmod 755 %s" % (hook, hook)], capture_output=True, text=True)
open(tmp + "/planted", "w").write("%d %s" % (p.returncode, p.stderr))
while not os.path.exists(tmp + "/done"):
    time.sleep(0.05)
"""


def test_sessions_side_by_side(tmp):
    """Two sessions of one user at once, the first's writable roots holding the second's
    workspace (/tmp holds both here; a session started in the home holds every project of
    it): a command of the first wrote the second's .git/hooks/pre-commit, which the second
    holds read-only to its own commands only, and the second's granted git commit ran it with
    the token (the build before). Each session now lists where its commands can write, and a
    grant's check counts the other live sessions' places: the commit is refused, naming the
    other session; once it has ended, its command's hook is still refused (it changed while
    that session's commands could write there), and once the hook is gone, the commit runs."""
    setup = granted_repo(tmp, "side")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    agent = agent_script(tmp, "side_agent.py", SIDE_AGENT)
    first = subprocess.Popen(runnerd_cmd("generic", [common.PY, agent, ws, tmp]),
                             env=base_env(), cwd=tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        planted = wait_file(os.path.join(tmp, "planted"), 30)
        audit = os.path.join(tmp, "side-audit.jsonl")
        out = granted_commit(prof, env, ws, audit, "side")
    finally:
        open(os.path.join(tmp, "done"), "w").close()
        first.wait(timeout=30)
    said = open(os.path.join(tmp, "planted")).read() if planted else ""
    check("sessions side by side: the first session's command wrote the second's hook",
          said.startswith("0 "), said)
    check("sessions side by side: the second's granted commit is refused, naming the other "
          "session, and the token reaches no hook",
          token not in out.stdout + out.stderr and "commit_rc=126" in out.stdout and
          os.path.exists(audit) and "another runnerd session" in open(audit).read(),
          out.stdout + out.stderr[-600:] +
          (open(audit).read()[-1500:] if os.path.exists(audit) else "no audit"))
    # The first session is over, its command's hook still there: what changed while its
    # commands could write there is still theirs.
    commit = ["bash", "-c", "git commit -q --allow-empty -m alone; echo commit_rc=$?"]
    audit2 = os.path.join(tmp, "side-audit-2.jsonl")
    out = subprocess.run(runnerd_cmd(prof, commit, audit=audit2), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    check("sessions side by side: once the other session has ended, its command's hook is "
          "still refused", token not in out.stdout + out.stderr and
          "commit_rc=126" in out.stdout and os.path.exists(audit2) and
          "changed while the commands of another runnerd session" in open(audit2).read(),
          out.stdout + out.stderr[-400:])
    # Its end cut short, as a write on a full file system leaves it ("e\t17966820483", a time
    # in 1970): the build before took that for its end, and the commit ran the hook.
    entry = [os.path.join(common.sessions_dir(), n) for n in os.listdir(common.sessions_dir())
             if n.startswith("ended-") and
             ("s\t%s\n" % tmp) in open(os.path.join(common.sessions_dir(), n)).read()]
    for e in entry:
        text = open(e).read()
        with open(e, "w") as f:
            f.write(text[:text.index("\ne\t") + 14])
    audit4 = os.path.join(tmp, "side-audit-4.jsonl")
    out = subprocess.run(runnerd_cmd(prof, commit, audit=audit4), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    check("sessions side by side: with that session's end cut short in its entry, its "
          "command's hook is still refused", len(entry) == 1 and
          token not in out.stdout + out.stderr and "commit_rc=126" in out.stdout,
          repr(entry) + out.stdout + out.stderr[-400:])
    # Taken away (the hooks directory changes after the other session): the commit runs.
    os.unlink(os.path.join(ws, ".git", "hooks", "pre-commit"))
    audit3 = os.path.join(tmp, "side-audit-3.jsonl")
    out = subprocess.run(runnerd_cmd(prof, commit, audit=audit3), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    check("sessions side by side: alone, the same commit runs", "commit_rc=0" in out.stdout,
          out.stdout + out.stderr[-400:] + (re.findall(r'"reason":"[^"]*"', open(audit3).read())
                                            if os.path.exists(audit3) else []).__repr__())


WAIT_AGENT = r"""import os, subprocess, sys, time
tmp, script = sys.argv[1], sys.argv[2]
if script:
    p = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    open(tmp + "/made", "w").write("%d %s" % (p.returncode, p.stderr))
open(tmp + "/ready", "w").close()
while not os.path.exists(tmp + "/done"):
    time.sleep(0.05)
"""


def test_sessions_side_by_side_more(tmp):
    """More of test_sessions_side_by_side, each with another live session of the user:
    - a session that starts while another lives holds that one's protected paths read-only to
      its own commands where its roots hold them: the build before let its command write the
      other's .git/hooks (a grant the other checked before could then run it);
    - a granted program that runs git in a repository another session's command made outside
      this one's roots (its workspace in the home): runnerd's git refuses it, as in this
      session's own roots (the build before ran that repository's core.sshCommand with the
      token)."""
    setup = granted_repo(tmp, "more", "env")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    agent = agent_script(tmp, "wait_agent.py", WAIT_AGENT)
    home = pwd.getpwuid(os.getuid()).pw_dir
    other = os.path.join(home, ".rd-more-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(other)
    first_tmp, second_tmp = os.path.join(tmp, "first"), os.path.join(tmp, "second")
    os.makedirs(first_tmp)
    os.makedirs(second_tmp)
    leak = os.path.join(tmp, "leak")
    # The first session, whose workspace is in the home: its command makes a repository
    # there with a program of its own as ssh.
    make_evil = ("git init -q %s/evil && git -C %s/evil remote add origin ssh://x/y && "
                 "git -C %s/evil config core.sshCommand 'echo $GH_TOKEN >> %s; false'"
                 % (other, other, other, leak))
    first = subprocess.Popen(runnerd_cmd("generic", [common.PY, agent, first_tmp, make_evil]),
                             env=dict(base_env(), **IDENTITY), cwd=other,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    second = None
    try:
        ready = wait_file(os.path.join(first_tmp, "ready"), 30)
        # The victim: ws, with a granted program (env for gh); and a session started after it,
        # whose command writes the victim's hooks.
        victim = subprocess.Popen(runnerd_cmd(prof, [common.PY, agent, second_tmp, ""]),
                                  env=env, cwd=ws, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        wait_file(os.path.join(second_tmp, "ready"), 30)
        hook = os.path.join(ws, ".git", "hooks", "pre-commit")
        # (A command of the agent's: sh is the agent, its builtins its own.)
        later = subprocess.run(runnerd_cmd("generic", ["sh", "-c",
                                                       "sh -c 'echo x > %s'; echo rc=$?"
                                                       % hook]),
                               env=base_env(), cwd=tmp, capture_output=True, text=True,
                               timeout=60)
        open(os.path.join(second_tmp, "done"), "w").close()
        victim.wait(timeout=30)
        # Run in the home (outside every session's roots, where the cwd's own check passes):
        # a granted program's git in the first session's repository.
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", "cd %s && env git -C %s/evil "
                                                "ls-remote origin; echo rc=$?"
                                                % (home, other)],
                                         audit=os.path.join(tmp, "more-audit.jsonl")),
                             env=env, cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        open(os.path.join(first_tmp, "done"), "w").close()
        first.wait(timeout=30)
        shutil.rmtree(other, ignore_errors=True)
    made = open(os.path.join(first_tmp, "made")).read() if ready else ""
    check("sessions side by side, more: the first session's command made its repository",
          made.startswith("0 "), made)
    check("sessions side by side, more: a session started while another lives cannot write "
          "that one's protected .git/hooks", "rc=0" not in later.stdout and
          not os.path.exists(hook), later.stdout + later.stderr[-300:])
    leaked = open(leak).read().count(token) if os.path.exists(leak) else 0
    check("sessions side by side, more: runnerd's git refuses a program's git in a repository "
          "another session's command made, outside this one's roots",
          leaked == 0 and "rc=128" in out.stdout, "%d leaks: %s %s" % (
              leaked, out.stdout + out.stderr[-300:],
              re.findall(r'"reason":"commands[^"]*"', open(os.path.join(
                  tmp, "more-audit.jsonl")).read())))


def test_sessions_start_held(tmp):
    """A session's start is held apart from the others' (the list's lock: else two starting
    at once could each read the list before the other is in it). One that holds it too long
    (a runnerd stopped with ^Z as it starts; here the test holds the lock) keeps another from
    starting for 10 s, then that one says why and does not start; once it is let go, sessions
    start."""
    subprocess.run(runnerd_cmd("generic", ["true"]), env=base_env(), cwd=tmp,
                   capture_output=True, timeout=60)  # the list's directory, as runnerd makes it
    fd = os.open(os.path.join(common.sessions_dir(), "lock"), os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held = subprocess.run(runnerd_cmd("generic", ["true"]), env=base_env(), cwd=tmp,
                              capture_output=True, text=True, timeout=60)
    finally:
        os.close(fd)
    free = subprocess.run(runnerd_cmd("generic", ["true"]), env=base_env(), cwd=tmp,
                          capture_output=True, text=True, timeout=60)
    check("sessions start held: a session does not start while another holds the start, and "
          "says so", held.returncode != 0 and "has held it for 10 s while starting" in
          held.stderr, "%d: %s" % (held.returncode, held.stderr[-300:]))
    check("sessions start held: once let go, a session starts", free.returncode == 0,
          free.stderr[-300:])


def test_sessions_apart(tmp):
    """test_sessions_side_by_side, with the first session started apart: in a pid namespace
    of its own (a container, an orchestrator's sandbox), with an XDG_RUNTIME_DIR of its own
    (a CI job's), and, not as root, with no /run/user/UID (started under su, or before the
    user's login made it). The build before listed it under that XDG_RUNTIME_DIR, where a
    user's second session did not look, and judged it alive by its pid in /proc, where its pid
    is another process's: the other session took it for ended, a hook its command wrote after
    that counted for the user's, and the granted commit ran it with the token. Now an entry
    lives while its runnerd holds a lock on it, and every session reads both places the user's
    sessions may list themselves in (/run/user/UID/runnerd and /tmp/runnerd-UID): 75453a9
    listed the first in /tmp/runnerd-UID, and the second looked in /run/user/UID alone."""
    setup = granted_repo(tmp, "apart")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    agent = agent_script(tmp, "side_agent.py", SIDE_AGENT)
    first_tmp = os.path.join(tmp, "apart-first")
    xdg = os.path.join(tmp, "apart-xdg")
    os.makedirs(first_tmp)
    os.makedirs(xdg, mode=0o700)
    first_env = dict(base_env(), XDG_RUNTIME_DIR=xdg)
    cmd = common.apart(runnerd_cmd("generic", [common.PY, agent, ws, first_tmp, "gated"]), tmp,
                       logged_out=True)
    if not cmd:
        common.skip_part("sessions apart: unshare (util-linux) is not installed")
        return
    first = subprocess.Popen(cmd,
                             env=first_env, cwd=tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        ready = wait_file(os.path.join(first_tmp, "ready"), 30)
        # A session of the user's that starts and ends meanwhile reads the list.
        subprocess.run(runnerd_cmd("generic", ["true"]), env=base_env(), cwd=tmp,
                       capture_output=True, timeout=60)
        # The hook written past the second in which that reading could have ended it.
        time.sleep(1.5)
        open(os.path.join(first_tmp, "go"), "w").close()
        planted = wait_file(os.path.join(first_tmp, "planted"), 30)
        audit = os.path.join(tmp, "apart-audit.jsonl")
        out = granted_commit(prof, env, ws, audit, "apart")
    finally:
        open(os.path.join(first_tmp, "done"), "w").close()
        try:
            first.wait(timeout=30)
        except subprocess.TimeoutExpired:
            first.kill()
            first.wait()
    said = open(os.path.join(first_tmp, "planted")).read() if planted else ""
    check("sessions apart: the first session, in a pid namespace of its own, started and its "
          "command wrote the second's hook", ready and said.startswith("0 "),
          said + first.stderr.read()[-400:])
    told = open(audit).read() if os.path.exists(audit) else ""
    check("sessions apart: the second's granted commit is refused, naming the other session "
          "as live, and the token reaches no hook",
          token not in out.stdout + out.stderr and "commit_rc=126" in out.stdout and
          "where the commands of another runnerd session can write" in told,
          out.stdout + out.stderr[-600:] + told[-1500:])


def test_sessions_ended_moved(tmp):
    """An ended session's command moved a directory of the work tree, made before that
    session, in as the other session's .git/hooks: its files keep their old change times, so
    the build before took its pre-commit for the user's, and the granted commit ran it with the
    token. A hook's (a program's) directory now counts too: it took a change time of its own
    when it was moved in."""
    setup = granted_repo(tmp, "moved")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    tools = os.path.join(ws, "tools")
    os.makedirs(tools)
    with open(os.path.join(tools, "pre-commit"), "w") as f:
        f.write("#!/bin/sh\necho hook=[$GH_TOKEN]\n")
    os.chmod(os.path.join(tools, "pre-commit"), 0o755)
    common.open_to_all(ws, files=0o777)
    time.sleep(0.1)  # past the tick in which the files were stamped
    mv = subprocess.run(runnerd_cmd("generic", ["sh", "-c", "sh -c 'mv %s/.git/hooks "
                                                "%s/.git/hooks.orig && mv %s %s/.git/hooks'; "
                                                "echo mv_rc=$?" % (ws, ws, tools, ws)]),
                        env=base_env(), cwd=tmp, capture_output=True, text=True, timeout=60)
    audit = os.path.join(tmp, "moved-audit.jsonl")
    out = granted_commit(prof, env, ws, audit, "moved")
    told = open(audit).read() if os.path.exists(audit) else ""
    check("sessions ended moved: the ended session's command moved the work tree's directory "
          "in as .git/hooks", "mv_rc=0" in mv.stdout, mv.stdout + mv.stderr[-300:])
    check("sessions ended moved: the granted commit is refused, naming the moved directory, "
          "and the token reaches no hook", token not in out.stdout + out.stderr and
          "commit_rc=126" in out.stdout and "(moved or changed)" in told,
          out.stdout + out.stderr[-400:] + told[-800:])


def test_sessions_folded(tmp):
    """More ended sessions than the list keeps (256: a harness that starts one runnerd per
    task gets there in seconds): the build before removed the oldest, and the hook an ended
    session's command wrote ran with the token once that session's entry was gone. The oldest
    are folded into one entry now (their places, from the first start to the last end), and
    the hook is still refused."""
    setup = granted_repo(tmp, "folded")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    hook = os.path.join(ws, ".git", "hooks", "pre-commit")
    plant = subprocess.run(runnerd_cmd("generic", ["sh", "-c", "sh -c 'printf \"#!/bin/sh\\n"
                                                   "echo hook=[\\$GH_TOKEN]\\n\" > %s && "
                                                   "chmod 755 %s'" % (hook, hook)]),
                           env=base_env(), cwd=tmp, capture_output=True, text=True, timeout=60)
    mine = [n for n in os.listdir(common.sessions_dir()) if n.startswith("ended-") and
            ("s\t%s\n" % tmp) in open(os.path.join(common.sessions_dir(), n)).read()]
    # Sessions that end, eight at a time, until that session's entry is folded (at most 400).
    started = 0
    while started < 400 and mine and all(os.path.exists(os.path.join(common.sessions_dir(), n))
                                         for n in mine):
        batch = [subprocess.Popen(runnerd_cmd("generic", ["true"]), env=base_env(), cwd=tmp,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _ in range(8)]
        for p in batch:
            p.wait(timeout=60)
        started += len(batch)
    audit = os.path.join(tmp, "folded-audit.jsonl")
    out = granted_commit(prof, env, ws, audit, "folded")
    told = open(audit).read() if os.path.exists(audit) else ""
    check("sessions folded: a command wrote the hook, and its session's entry was folded "
          "after %d more sessions" % started, os.path.exists(hook) and len(mine) == 1 and
          not os.path.exists(os.path.join(common.sessions_dir(), mine[0])),
          plant.stderr[-300:] + repr(mine))
    check("sessions folded: the granted commit is still refused, and the token reaches no "
          "hook", token not in out.stdout + out.stderr and "commit_rc=126" in out.stdout and
          "changed while the commands of another runnerd session" in told,
          out.stdout + out.stderr[-400:] + told[-600:])


def test_sessions_list_unreadable(tmp):
    """An entry of the list of the user's sessions that cannot be read (here a directory where
    an ended session's file would be): a session does not start, and says why, as where it
    is missing what the other sessions' commands write it would take for its own. Before, an
    entry that could not be read was left out. The entry is taken away after."""
    bogus = os.path.join(common.sessions_dir(), "ended-1-%d-%s" % (os.getpid(),
                                                                    os.urandom(16).hex()))
    os.makedirs(bogus, mode=0o700)
    try:
        out = subprocess.run(runnerd_cmd("generic", ["true"]), env=base_env(), cwd=tmp,
                             capture_output=True, text=True, timeout=60)
    finally:
        os.rmdir(bogus)
    check("sessions list unreadable: runnerd does not start, and names the list",
          out.returncode != 0 and "other runnerd sessions (" in out.stderr,
          "%s: %s" % (out.returncode, out.stderr[-400:]))


def granted_repo_made(tmp, name, script):
    """granted_repo, and the script of what a command makes for the test (script, a text) in
    tmp/NAME-made.sh: granted_repo's tuple with the script's path after it, or None."""
    setup = granted_repo(tmp, name)
    if not setup:
        return None
    made = os.path.join(tmp, name + "-made.sh")
    with open(made, "w") as f:
        f.write(script)
    return setup + (made,)


SUBMODULE_MADE = r"""set -e
cd "$1"
git init -q --separate-git-dir "$PWD/.sm.git" sm
cd sm
printf '* filter=x\n' > .gitattributes
echo a > f
git add -A
git -c user.name=t -c user.email=t@x commit -q -m s
git config filter.x.clean "sh -c 'echo \"\$GH_TOKEN\" >> $2; cat'"
echo b > f
cd ..
git update-index --add --cacheinfo "160000,$(git -C sm rev-parse HEAD),sm"
printf '[submodule "sm"]\n\tpath = sm\n\turl = ./sm\n\tignore = none\n' > .gitmodules
git add .gitmodules
rm .gitmodules
"""


def test_grant_git_submodule(tmp):
    """A command enters a submodule of its own in the index (its git directory in the
    workspace, with a filter.x.clean that writes GH_TOKEN, and a file the filter cleans), and a
    .gitmodules with submodule.sm.ignore=none in the index alone: runnerd's check reads the
    work tree's, and git the index's, which outranks diff.ignoreSubmodules=all. A granted git
    status, diff, diff-index, diff-files, add -A and stash ran git status in the submodule, and
    its filter with the token (the build before: each of them, directly and through a granted
    program). Now the git of git's exec path is runnerd's in a granted command's view, and runs
    git only in the repository runnerd checked: refused there, nothing leaks. git's own git
    still runs in the checked repository (a gc's repack, a hook's git diff, a built-in by its
    dashed name, which the build before ran without its subcommand)."""
    setup = granted_repo_made(tmp, "submodule", SUBMODULE_MADE)
    if not setup:
        return
    token, ws, prof, genv, env, made = setup
    hook = os.path.join(ws, ".git", "hooks", "pre-commit")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\necho hook_sees=$(git diff --cached --name-only | tr '\\n' ,) "
                "top=$(git-rev-parse --show-toplevel)\n")
    os.chmod(hook, 0o755)
    common.open_to_all(ws)
    os.chmod(made, 0o755)
    os.chmod(hook, 0o755)
    ops = ["status", "diff", "diff-index HEAD", "diff-files", "add -A", "stash"]

    def attack(name, prof, git):
        """The submodule made by a command, then each of ops by git (a command line): (tokens
        written, the ops' exit codes, stderr)."""
        leak = os.path.join(tmp, "leak-" + name)
        subprocess.run("cd %s && rm -rf sm .sm.git .gitmodules && git rm -q --cached -r "
                       "--ignore-unmatch sm .gitmodules && git reset -q --hard" % ws,
                       shell=True, env=genv, capture_output=True, check=True)
        script = "sh %s %s %s; " % (made, ws, leak) + "; ".join(
            "%s %s >/dev/null; echo rc=$?" % (git, op) for op in ops)
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                             capture_output=True, text=True, timeout=120)
        leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
        return leaks, re.findall(r"^rc=(\d+)$", out.stdout, re.M), out.stderr

    leaks, rcs, err = attack("direct", prof, "git")
    check("grant git submodule: a granted git status, diff, diff-index, diff-files, add -A and "
          "stash run no filter of a submodule a command made with the token, each refused "
          "there (128)",
          leaks == 0 and rcs == ["128"] * len(ops) and
          "in a repository other than the one runnerd checked" in err,
          "%d leaks, rc %s: %s" % (leaks, rcs, err[-400:]))
    other = grant_profile(tmp, "submodule-env", os.path.realpath(shutil.which("env")))
    leaks, rcs, err = attack("program", other, "env git")
    check("grant git submodule: so does the git of a granted program (env for gh)",
          leaks == 0 and rcs == ["128"] * len(ops) and
          "in a repository other than the one runnerd checked" in err,
          "%d leaks, rc %s: %s" % (leaks, rcs, err[-400:]))
    subprocess.run("cd %s && rm -rf sm .sm.git .gitmodules && git rm -q --cached -r "
                   "--ignore-unmatch sm .gitmodules && git reset -q --hard" % ws,
                   shell=True, env=genv, capture_output=True, check=True)
    common.open_to_all(ws)
    os.chmod(hook, 0o755)
    script = "; ".join([
        "git gc -q; echo gc_rc=$?",
        "echo x > kept && git add kept && git commit -q -m kept; echo commit_rc=$?",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    check("grant git submodule: git's own git runs in the checked repository (a gc, a "
          "pre-commit hook's git diff, and git-rev-parse by its dashed name)",
          "gc_rc=0" in out.stdout and "commit_rc=0" in out.stdout and
          "hook_sees=kept, top=%s\n" % ws in out.stderr, out.stdout[-300:] + out.stderr[-300:])


LAZY_MADE = r"""set -e
M=$PWD/.git E=$1
git init -q --bare "$E"
git -C "$E" config core.repositoryformatversion 1
git -C "$E" config extensions.partialClone origin
git -C "$E" config remote.origin.url ssh://git@127.0.0.1/x
git -C "$E" config core.sshCommand "sh -c 'echo \"\$GH_TOKEN\" >> $2; exit 1' x"
X=$(git commit-tree -m x "$(git mktree </dev/null)")
Y=$(git commit-tree -m y -p "$X" "$(git mktree </dev/null)")
Z=$(git commit-tree -m z -p "$X" "$(git mktree </dev/null)")
GM=$(printf '[submodule "sm"]\n\tpath = sm\n\turl = ./sm\n' | git hash-object -w --stdin)
mk() { printf "100644 blob $GM\t.gitmodules\n160000 commit $1\tsm\n" | git mktree; }
B=$(git commit-tree -m base -p HEAD "$(mk "$X")")
O=$(git commit-tree -m other -p "$B" "$(mk "$Y")")
H=$(git commit-tree -m mine -p "$B" "$(mk "$Z")")
git update-ref refs/heads/other "$O"
git update-ref HEAD "$H"
git read-tree HEAD
mkdir -p sm
echo "gitdir: $M" > sm/.git
mkdir -p "$E/refs/heads"
echo "$H" > "$E/refs/heads/master"
echo "$O" > "$E/refs/heads/other"
"""


def test_grant_git_lazy_fetch(tmp):
    """A granted git merge of two commits that change a submodule's gitlink merges the
    submodule in-process, and fetches what it lacks lazily: git runs git for itself with the
    submodule's GIT_DIR and no GIT_COMMON_DIR. A command named the checked .git as the
    submodule's git directory (sm/.git), and wrote and removed a .git/commondir naming a
    partial clone of its own in a loop (the grant is refused while it is there): that git
    took the partial clone's configuration and ran its core.sshCommand with the token (a
    review's repro; the build before: 22 leaks in 40 merges, git's own git let a GIT_DIR
    equal to runnerd's through without GIT_COMMON_DIR). Now git's own git takes GIT_COMMON_DIR
    as runnerd set it, or refuses."""
    setup = granted_repo_made(tmp, "lazy", LAZY_MADE)
    if not setup:
        return
    token, ws, prof, genv, env, made = setup
    leak = os.path.join(tmp, "leak-lazy")
    evil = os.path.join(tmp, "evil-lazy")
    stop = os.path.join(tmp, "stop-lazy")
    common.open_to_all(tmp)
    os.chmod(made, 0o755)
    script = "\n".join([
        "sh %s %s %s || exit 1" % (made, evil, leak),
        "sh -c 'while [ ! -e %s ]; do echo %s > .git/commondir; sleep 0.003; "
        "rm -f .git/commondir; sleep 0.003; done' >/dev/null 2>&1 &" % (stop, evil),
        "for i in $(seq 40); do git merge --abort >/dev/null 2>&1; git reset -q --hard "
        ">/dev/null 2>&1; git merge --no-edit other >/dev/null 2>&1; echo ran=$i; done",
        "touch %s; wait" % stop,
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=300)
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    check("grant git lazy fetch: 40 granted merges of a submodule a command named the checked "
          ".git for, raced with a .git/commondir naming a partial clone of its own, run its "
          "core.sshCommand with the token in none",
          leaks == 0 and "ran=40" in out.stdout,
          "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-300:]))


def test_grant_git_hook_link(tmp):
    """A project's hook that runs a file of the work tree, which commands can write (.git/hooks
    is protected, the work tree is not): a hook installed as a symlink into the work tree
    (.git/hooks/pre-commit -> ../../scripts/pre-commit, as projects install theirs), or as a
    hard link to one; a hook whose #! interpreter lies in the work tree (a project venv's
    python3) or is found there (#!./tools/lint: git runs hooks in the top of the work tree);
    a hook of a hook manager (the pre-commit framework's, which runs what the work tree's
    configuration names); one that passes a work-tree file to its interpreter (#!/bin/sh ./x,
    #!/usr/bin/env -S ./x), or hides what it runs past what runnerd reads. A command rewrote
    that file to write GH_TOKEN, and each granted commit ran it (the build before: 3 of 3 for
    the symlink, and each of the others, three reviews' repros). Now the grant is refused,
    audited with the hook and the fix."""
    setup = granted_repo(tmp, "hooklink")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    hook = os.path.join(ws, ".git", "hooks", "pre-commit")
    leak = os.path.join(tmp, "leak-hooklink")
    payload = "#!/bin/sh\\necho \"$GH_TOKEN\" >> %s\\n" % leak
    manager = ("#!/bin/sh\n# File generated by pre-commit: https://pre-commit.com\n"
               "sh ./.pre-commit-local.sh\n")
    # (name, the hook, the file of the work tree it runs, what the audit says, its fix)
    own = "put the hook's own file in .git/hooks"
    interp = "name the interpreter and what it runs outside the writable roots"
    cases = [
        ("symlink", None, "scripts/pre-commit", "that leads through", own),
        ("hardlink", None, "scripts/pre-commit", "a hard link", own),
        ("interpreter", "#!%s/venv/bin/python3\nprint(1)\n" % ws, "venv/bin/python3",
         "whose #! line names", interp),
        ("relative", "#!./tools/lint\n", "tools/lint", "whose #! line names ./tools/lint",
         interp),
        # A word after the interpreter: what sh, or env -S, runs (a third review).
        ("argument", "#!/bin/sh ./tools/x1\n", "tools/x1", "names ./tools/x1", interp),
        ("env-S", "#!/usr/bin/env -S ./tools/x2\n", "tools/x2", "names ./tools/x2", interp),
        ("large", "#!/bin/sh\n" + "#" * 70000 + "\nsh ./tools/x3\n", "tools/x3",
         "larger than runnerd reads", "grant git only for subcommands that run no hook"),
        ("manager", manager, ".pre-commit-local.sh", "of a hook manager (pre-commit.com)",
         "take the hook manager out of that repository"),
    ]
    for name, text, target, says, fix in cases:
        if os.path.lexists(hook):
            os.unlink(hook)
        path = os.path.join(ws, target)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        if name == "symlink":
            os.symlink("../../" + target, hook)
        elif name == "hardlink":
            os.link(path, hook)
        else:
            with open(hook, "w") as f:
                f.write(text)
        os.chmod(hook, 0o755)
        common.open_to_all(ws)
        for p in (hook, path):
            os.chmod(p, 0o777 if p == path else 0o755)
        audit = os.path.join(tmp, "audit-hooklink-%s.jsonl" % name)
        script = "; ".join([
            "printf '%s' > %s" % (payload, target),
            "for i in 1 2 3; do git commit -q --allow-empty -m c$i; echo rc=$?; done",
        ])
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script], audit=audit),
                             env=env, cwd=ws, capture_output=True, text=True, timeout=120)
        leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
        said = open(audit).read() if os.path.exists(audit) else ""
        check("grant git hook link (%s): a hook that runs a file of the work tree runs nothing "
              "a command wrote with the token, each commit refused (126), audited with the "
              "hook and the fix" % name,
              leaks == 0 and re.findall(r"^rc=(\d+)$", out.stdout, re.M) == ["126"] * 3 and
              "has a hook, pre-commit," in said and says in said and fix in said,
              "%d leaks: %s %s" % (leaks, out.stdout[-200:], said[-400:]))
        if os.path.exists(leak):
            os.unlink(leak)
    os.unlink(hook)
    # What git does not run, a file that is not executable (pre-commit.legacy, which the
    # framework sets aside), refuses nothing.
    with open(hook + ".legacy", "w") as f:
        f.write(manager)
    os.chmod(hook + ".legacy", 0o644)
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", "git commit -q --allow-empty -m l; "
                                            "echo rc=$?"]),
                         env=env, cwd=ws, capture_output=True, text=True, timeout=60)
    check("grant git hook link: a hook file git does not run (not executable) refuses nothing",
          "rc=0" in out.stdout, out.stdout[-200:] + out.stderr[-300:])


def test_grant_git_exec_path(tmp):
    """A granted program that sets where git finds its own programs (--exec-path=DIR, or
    GIT_EXEC_PATH) sends git past runnerd's gate: a git of the work tree's ran with the
    token (the build before, a review's repro: 8 runs), and with /usr/bin a submodule's
    git status ran its filter; a directory whose git links to git's own git passed a check
    by file identity, and git ran the directory's git-remote-https (a third review). runnerd's
    git refuses --exec-path=DIR now, and unsets GIT_EXEC_PATH: git takes its own."""
    setup = granted_repo(tmp, "execpath", prog="env")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    leak = os.path.join(tmp, "leak-execpath")
    common.open_to_all(ws)
    script = "; ".join([
        "mkdir -p evbin && printf '#!/bin/sh\\necho \"$GH_TOKEN\" >> %s\\n' > evbin/git && "
        "chmod 755 evbin/git" % leak,
        "env git --exec-path=evbin gc -q; echo opt_rc=$?",
        "env GIT_EXEC_PATH=%s/evbin git gc -q; echo env_rc=$?" % ws,
        # A directory whose git is git's own git, by a symlink, with a command's helper.
        "mkdir -p evx && ln -sf /dev/.runnerd/gate evx/git && "
        "cp evbin/git evx/git-remote-https",
        "env GIT_EXEC_PATH=%s/evx git ls-remote https://127.0.0.1:9/x.git >/dev/null 2>&1; "
        "echo link_rc=$?" % ws,
        "env git --exec-path >/dev/null; echo show_rc=$?",
        "env git rev-parse --git-dir >/dev/null; echo plain_rc=$?",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("grant git exec path: a granted program's --exec-path=DIR (refused, 128) and "
          "GIT_EXEC_PATH (unset: git takes its own) run no git of a command's with the token, "
          "nor does a GIT_EXEC_PATH whose git is a link to git's own git",
          leaks == 0 and got.get("opt_rc") == "128" and got.get("env_rc") == "0" and
          got.get("link_rc") == "128", "%d leaks: %r %s" % (leaks, got, out.stderr[-300:]))
    check("grant git exec path: git --exec-path (which prints it) and plain git still run",
          got.get("show_rc") == "0" and got.get("plain_rc") == "0",
          repr(got) + out.stderr[-300:])


def test_grant_git_python_filter(tmp):
    """A filter a project set up as nbstripout --install does ("/usr/bin/python3" -m
    nbstripout, in the protected .git/config): git runs it in the top of the work tree, and
    python3 -m searches the directory it runs in first. A command wrote an nbstripout.py
    there that writes GH_TOKEN, and a granted git status and git diff ran it (the build
    before, a review's repro: 2 leaks). runnerd's gits set PYTHONSAFEPATH=1 now."""
    setup = granted_repo(tmp, "pyfilter")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    python = shutil.which("python3")
    subprocess.run(["git", "-C", ws, "config", "filter.nbstripout.clean",
                    '"%s" -m nbstripout' % python], check=True)
    with open(os.path.join(ws, ".gitattributes"), "w") as f:
        f.write("*.ipynb filter=nbstripout\n")
    with open(os.path.join(ws, "a.ipynb"), "w") as f:
        f.write("{}\n")
    subprocess.run(["git", "-C", ws, "add", "-A"], check=True)
    subprocess.run(["git", "-C", ws, "commit", "-q", "-m", "nb"], check=True, env=genv)
    common.open_to_all(ws)
    leak = os.path.join(tmp, "leak-pyfilter")
    out = in_session(prof, env, ws, [
        "printf 'import os, sys\\nopen(\"%s\", \"a\").write(os.environ.get(\"GH_TOKEN\", "
        "\"\") + \"\\\\n\")\\nsys.stdout.write(sys.stdin.read())\\n' > nbstripout.py" % leak,
        "echo '{ }' > a.ipynb",
        "git status >/dev/null 2>&1; echo status_rc=$?",
        "git diff >/dev/null 2>&1; echo diff_rc=$?",
        # The control: a command's own git diff (no grant, no token) runs the module.
        "sh -c 'git diff' >/dev/null 2>&1",
    ])
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    check("grant git python filter: a granted git status and diff import no module a command "
          "wrote in the work tree with the token, where a command's own git diff does",
          leaks == 0 and "status_rc=0" in out.stdout and "diff_rc=0" in out.stdout and
          os.path.exists(leak),
          "%d leaks: %s %s" % (leaks, out.stdout[-200:], out.stderr[-300:]))


def mo_file(path, messages):
    """A gettext catalog (GNU .mo, little-endian) at path: messages maps each msgid to its
    msgstr; the header entry says UTF-8."""
    entries = sorted(dict(messages, **{"": "Content-Type: text/plain; charset=UTF-8\n"})
                     .items())
    ids = [k.encode() for k, _ in entries]
    strs = [v.encode() for _, v in entries]
    n = len(entries)
    head = 28
    data_at = head + 16 * n
    blob, tables = b"", []
    for group in (ids, strs):
        table = []
        for b in group:
            table.append((len(b), data_at + len(blob)))
            blob += b + b"\0"
        tables.append(table)
    out = struct.pack("<7I", 0x950412de, 0, n, head, head + 8 * n, 0, data_at)
    for table in tables:
        for length, offset in table:
            out += struct.pack("<2I", length, offset)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(out + blob)


def test_grant_git_locale(tmp):
    """LANGUAGE is passed to commands (base_allow), and gettext takes a catalog by a path built
    from it, .. included: LANGUAGE=../../../tmp/x has git load /tmp/x/LC_MESSAGES/git.mo, which
    a command wrote. git prints its messages through their translations as format strings: a
    review's catalog made a granted git checkout print git's whole environment, GH_TOKEN with
    it. Here the translation only marks the message (the build before printed the mark, both
    for a granted git and through a granted program's git). Now a granted command gets the
    locale variables as the agent had them at its start."""
    setup = granted_repo(tmp, "locale")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    if not os.path.isdir("/usr/share/locale"):
        common.skip_part("grant git locale: /usr/share/locale is needed")
        return
    msg = "pathspec '%s' did not match any file(s) known to git"
    mo_file(os.path.join(tmp, "loc", "LC_MESSAGES", "git.mo"), {msg: "RDMARK(%s)"})
    common.open_to_all(tmp)
    language = "../../.." + os.path.join(tmp, "loc")
    other = grant_profile(tmp, "locale-env", os.path.realpath(shutil.which("env")))
    for name, profile, git in (("git", prof, "git"), ("program", other, "env git")):
        script = "LANG=C.UTF-8 LC_ALL= LANGUAGE=%s %s checkout nosuch; echo rc=$?" % (
            language, git)
        out = subprocess.run(runnerd_cmd(profile, ["bash", "-c", script]), env=env, cwd=ws,
                             capture_output=True, text=True, timeout=60)
        check("grant git locale (%s): a granted git takes no message catalog a command wrote "
              "(a LANGUAGE with ..)" % name,
              "RDMARK" not in out.stderr and "did not match" in out.stderr and
              "rc=1" in out.stdout, out.stdout[-200:] + out.stderr[-300:])
    # The control: a command's own git (no grant) takes the catalog.
    script = "sh -c 'LANG=C.UTF-8 LC_ALL= LANGUAGE=%s git checkout nosuch'" % language
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                         capture_output=True, text=True, timeout=60)
    check("grant git locale: a command's own git takes that catalog (the mark shows)",
          "RDMARK(nosuch)" in out.stderr, out.stderr[-300:])


LOGGING_PROXY = r"""import socket, sys
# A proxy that writes each request's head to sys.argv[2], answers 502, and says its port in
# sys.argv[1] once it listens.
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    c.settimeout(5)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            d = c.recv(4096)
            if not d:
                break
            data += d
    except OSError:
        pass
    with open(sys.argv[2], "ab") as f:
        f.write(data)
    c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    c.close()
"""


def test_grant_gh_proxy(tmp):
    """HTTP_PROXY is passed to commands (base_allow), and a granted gh took the caller's: gh
    gives GH_TOKEN to github.localhost too, and talks to it in the clear
    (http://api.github.localhost), so gh api --hostname github.localhost sent the token to a
    proxy a command ran (the build before, a review's repro). Now a granted command gets the
    proxies as the agent had them at its start."""
    gh = shutil.which("gh")
    if not gh:
        common.skip_part("grant gh proxy: gh (Debian's GitHub CLI) is needed")
        return
    os.chmod(tmp, 0o755)
    token = "ghp_proxy_%s" % os.urandom(6).hex()
    prof = grant_profile(tmp, "ghproxy", os.path.realpath(gh))
    proxy, port, log = (os.path.join(tmp, n) for n in ("proxy.py", "proxy.port", "proxy.log"))
    with open(proxy, "w") as f:
        f.write(LOGGING_PROXY)
    common.open_to_all(tmp)
    script = "\n".join([
        "python3 %s %s %s >/dev/null 2>&1 &" % (proxy, port, log),
        "for i in $(seq 100); do [ -e %s ] && break; sleep 0.1; done" % port,
        # gh is the agent's own exec (not a child of timeout's sandbox): the grant applies.
        "HTTP_PROXY=http://127.0.0.1:$(cat %s) http_proxy=http://127.0.0.1:$(cat %s) "
        "gh api --hostname github.localhost user >/dev/null 2>&1; echo rc=$?" % (port, port),
        # The control: gh as a command's child (no grant: a token of its own) reaches it.
        "sh -c 'GH_TOKEN=ghp_control HTTP_PROXY=http://127.0.0.1:'$(cat %s)' gh api "
        "--hostname github.localhost user' >/dev/null 2>&1" % port,
        "kill %1",
    ])
    env = base_env()
    env["GH_TOKEN"] = token
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=tmp,
                         capture_output=True, text=True, timeout=120)
    seen = open(log, "rb").read().decode(errors="replace") if os.path.exists(log) else ""
    check("grant gh proxy: a granted gh sends its token to no proxy a command runs (the "
          "caller's HTTP_PROXY does not reach it), where an ungranted gh reaches it",
          token not in seen and "rc=" in out.stdout and "ghp_control" in seen,
          "%s %s %s" % (seen[-300:], out.stdout[-200:], out.stderr[-300:]))


def test_grant_git_worktree(tmp):
    """A linked worktree outside the writable roots (its .git file read-only to commands), of
    the workspace's repository: its git directory, .git/worktrees/NAME in the workspace, is
    the commands' to write. A command that wrote a commondir there naming a repository of its
    own had a granted git fetch in the worktree take that one's configuration and run its
    core.sshCommand with the token (the build before). Now the check follows the .git file
    and its commondir, refuses that, and tells git the directories it took; a granted git
    in a worktree left alone works."""
    setup = granted_repo(tmp, "worktree")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    # Outside the writable roots: a directory of the home (read-only to commands).
    home = pwd.getpwuid(os.geteuid()).pw_dir
    outside = tempfile.mkdtemp(prefix="rd-wt-", dir=home)
    try:
        os.chmod(outside, 0o755)
        wt = os.path.join(outside, "wt")
        subprocess.run(["git", "-C", ws, "worktree", "add", "-q", wt], check=True, env=genv)
        leak = os.path.join(tmp, "leak")
        evil = os.path.join(tmp, "evil")
        subprocess.run(["git", "init", "-q", "--bare", evil], check=True)
        with open(os.path.join(evil, "config"), "a") as f:
            f.write(git_ssh_trap(tmp, leak))
        common.open_to_all(tmp)
        gd = os.path.join(ws, ".git", "worktrees", "wt")
        # A rebase stopped in the worktree, whose todo (in gd, the commands' to write) has an
        # exec line: refused as in the main worktree (before, it ran with the token).
        subprocess.run(["git", "-C", wt, "commit", "-q", "--allow-empty", "-m", "w1"],
                       check=True, env=genv)
        subprocess.run(["git", "-C", wt, "rebase", "-q", "-i", "HEAD~1"], capture_output=True,
                       env=dict(genv, GIT_SEQUENCE_EDITOR="sed -i '1i break'"))
        with open(os.path.join(gd, "rebase-merge", "git-rebase-todo"), "w") as f:
            f.write("exec sh -c 'echo $GH_TOKEN >> %s'\n" % leak)
        # And a granted program that runs git (env stands for gh), there: refused, as the
        # worktree's git directory is the commands' to write (before: 2 more tokens).
        other = grant_profile(tmp, "worktree-env", os.path.realpath(shutil.which("env")))
        out = subprocess.run(runnerd_cmd(other, ["bash", "-c", (
            "sh -c 'cp %s/commondir %s/commondir.x; echo %s > %s/commondir'; "
            "env git -C %s fetch -q origin 2>/dev/null; echo env_rc=$?; "
            "sh -c 'mv %s/commondir.x %s/commondir'") % (gd, gd, evil, gd, wt, gd, gd)]),
            env=env, cwd=ws, capture_output=True, text=True, timeout=120)
        env_rc = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
        script = "; ".join([
            "(cd %s && git log -1 --format=log=%%s; echo plain_rc=$?)" % wt,
            "sh -c 'cp %s/commondir %s/commondir.x; echo %s > %s/commondir'" % (
                gd, gd, evil, gd),
            "(cd %s && git fetch -q origin 2>/dev/null; echo fetch_rc=$?)" % wt,
            "sh -c 'mv %s/commondir.x %s/commondir'" % (gd, gd),
            "(cd %s && git rebase --continue >/dev/null 2>&1; echo cont_rc=$?)" % wt,
        ])
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=ws,
                             capture_output=True, text=True, timeout=120)
        got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
        leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
        check("grant git worktree: a granted git in the worktree works",
              got.get("log") == "mine" and got.get("plain_rc") == "0",
              repr(got) + out.stderr[-300:])
        check("grant git worktree: a commondir a command wrote in .git/worktrees/NAME, or a "
              "rebase's todo there, runs nothing with the token, for git or gh",
              leaks == 0 and got.get("fetch_rc") not in (None, "0") and
              got.get("cont_rc") not in (None, "0") and
              env_rc.get("env_rc") not in (None, "0"), "%d leaks, %r %r" % (leaks, got, env_rc))
    finally:
        subprocess.run(["git", "-C", wt, "rebase", "--abort"], capture_output=True)
        subprocess.run(["git", "-C", ws, "worktree", "remove", "--force", wt],
                       capture_output=True)
        shutil.rmtree(outside, ignore_errors=True)


def test_grant_git_hooks(tmp):
    """A granted git is told its repository (test_grant_git_late_repo), and git hands that to
    its hooks, as githooks(5) says it may: a hook's own git in the workspace is told the
    repository too. A command in the background that writes a .git/commondir naming a
    repository of its own, while granted commits run a pre-commit that fetches, had the
    hook's fetch run that repository's core.sshCommand with the token (the build before). A
    hook that works in another repository clears git's variables first (GIT_CONFIG_PARAMETERS
    too, which names runnerd's core.hooksPath): its git reads one commands cannot write, but
    is refused in one they can (in /tmp), whose pre-commit a command planted, and which the
    hook's commit there ran with the token (the build before). The repository's own hooks
    still run: pre-commit, post-commit, from a subdirectory too; a template does not."""
    setup = granted_repo(tmp, "hooks", first="first")
    if not setup:
        return
    token, ws, prof, genv, env = setup
    os.makedirs(os.path.join(ws, "sub"))
    planted = os.path.join(tmp, "planted")
    leak = os.path.join(tmp, "leak-planted")
    subprocess.run(["git", "init", "-q", planted], check=True)
    with open(os.path.join(planted, ".git", "hooks", "pre-commit"), "w") as f:
        f.write("#!/bin/sh\necho \"$GH_TOKEN\" >> %s\n" % leak)
    os.chmod(os.path.join(planted, ".git", "hooks", "pre-commit"), 0o755)
    with home_repo(genv, "rd-hooks-") as other:
        common.open_to_all(os.path.dirname(other))
        hook_runs(tmp, token, ws, prof, genv, env, planted, leak, other)


def hook_runs(tmp, token, ws, prof, genv, env, planted, leak, other):
    """test_grant_git_hooks's commit, with other (a repository commands cannot write), then
    the race."""
    hooks = os.path.join(ws, ".git", "hooks")
    with open(os.path.join(hooks, "pre-commit"), "w") as f:
        f.write("#!/bin/sh\necho \"pre=[$(pwd)][${GIT_CONFIG_PARAMETERS-unset}]\" >> %s/log\n"
                "[ \"$(pwd)\" = %s ] || exit 0\n"
                "[ -e %s/fetch ] && { git fetch -q origin 2>/dev/null; exit 0; }\n"
                "unset GIT_DIR GIT_WORK_TREE GIT_COMMON_DIR GIT_CONFIG_PARAMETERS\n"
                "echo \"theirs=$(git -C %s log --format=%%s)\" >> %s/log\n"
                "git -C %s commit -q --allow-empty -m from-hook 2>/dev/null\n"
                "echo planted_rc=$? >> %s/log\n"
                % (tmp, ws, tmp, other, tmp, planted, tmp))
    with open(os.path.join(hooks, "post-commit"), "w") as f:
        f.write("#!/bin/sh\necho post=[$(git rev-parse --show-toplevel)] >> %s/log\n" % tmp)
    with open(os.path.join(hooks, "commit-msg.sample"), "w") as f:
        f.write("#!/bin/sh\necho sample >> %s/log\n" % tmp)
    common.open_to_all(tmp)
    for h in ("pre-commit", "post-commit", "commit-msg.sample"):
        os.chmod(os.path.join(hooks, h), 0o755)
    os.chmod(os.path.join(planted, ".git", "hooks", "pre-commit"), 0o755)
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c",
                                            "cd sub && git commit -q --allow-empty -m mine; "
                                            "echo commit_rc=$?"]),
                         env=env, cwd=ws, capture_output=True, text=True, timeout=120)
    log = open(os.path.join(tmp, "log")).read() if os.path.exists(os.path.join(tmp, "log")) \
        else ""
    mine = subprocess.run(["git", "-C", ws, "log", "--format=%s"], capture_output=True,
                          text=True).stdout.split()
    leaks = open(leak).read().count(token) if os.path.exists(leak) else 0
    check("grant git hooks: the granted commit ran, and its hooks",
          "commit_rc=0" in out.stdout and "pre=[%s]" % ws in log and "post=[%s]" % ws in log
          and mine == ["mine", "first"], out.stdout[-300:] + out.stderr[-300:] + log)
    check("grant git hooks: a hook that clears git's variables reads another repository, "
          "one commands cannot write", "theirs=theirs\n" in log, log)
    check("grant git hooks: a hook's git in a repository commands can write (/tmp) is refused "
          "(128), and runs no hook a command planted there with the token",
          leaks == 0 and "planted_rc=128" in log, "%d leaks: %s" % (leaks, log))
    check("grant git hooks: a template (NAME.sample) does not run", "sample" not in log, log)

    # The race, for the hook's own git.
    open(os.path.join(tmp, "fetch"), "w").close()
    ran, leaks, out = race_grant(tmp, prof, env, genv, ws, "commondir", ".git", ".",
                                 "git commit -q --allow-empty -m r", n=30)
    check("grant git hooks: the runs ran", ran, out)
    check("grant git hooks: a hook's git, raced with a .git/commondir, ran no program of a "
          "command's with the token", leaks == 0, "%d leaks in 30 commits" % leaks)

def test_agent_programs(tmp):
    """The agent is a program, not only its first process: an npm launcher (a "#!/usr/bin/env
    node" script) that starts the package's own binary, and that starts itself again in node
    with a larger heap, as Codex's and Gemini CLI's do. Those run as the agent, with its key;
    what they start is still a sandboxed command; node with options the profile does not
    allow, and other programs, are commands. The build before ran both as commands, without
    the key (the agent never got to work). Not the agent, though one of its files (the build
    before ran each as the agent, with the key): a program that starts itself again with a
    first argument the profile's self_exec does not name (a command line the model chose, run
    without a shell); node started on the agent's script by another program; a file reached
    through a symlink a command could replace, or by a relative path whose ".." climbs out of a
    cwd a command could move (the build before ran it as the agent)."""
    node = shutil.which("node")
    if not node:
        common.skip_part("agent programs: node is needed")
        return
    os.chmod(tmp, 0o755)
    pkg, launcher = fake_agent(tmp, """#!/usr/bin/env node
const {spawnSync} = require('child_process');
const path = require('path');
const key = () => process.env.RD_AGENT_API_KEY || '';
const run = (file, args) => spawnSync(file, args, {stdio: 'inherit'});
if (process.argv[2] === 'relaunched') {
  console.log('relaunched=[' + key() + ']');
  run('/bin/sh', ['-c', 'echo "rcmd=[$RD_AGENT_API_KEY]"']);
  process.exit(0);
}
if (process.argv[2] === 'byvendor') {
  console.log('byvendor=[' + key() + ']');
  process.exit(0);
}
if (process.argv[2] === 'dotdot') {
  console.log('dotdot=[' + key() + ']');
  process.exit(0);
}
console.log('agent=[' + key() + ']');
run(path.join(__dirname, '..', 'vendor', 'agentbin'), ['vendor', process.execPath, __filename]);
run(path.join(__dirname, '..', '..', 'link'), ['link']);
const box = path.join(__dirname, '..', 'vendor', 'busybox');
run(box, ['sh', '-c', 'echo "box=[$RD_AGENT_API_KEY]"; ' +
          box + ' sh -c \\'echo "boxself=[$RD_AGENT_API_KEY]"\\'; ' +
          box + ' ash -c \\'echo "boxash=[$RD_AGENT_API_KEY]"\\'']);
run(process.execPath, ['--max-old-space-size=100', __filename, 'relaunched']);
run(process.execPath, ['-e', 'console.log("eval=[" + (process.env.RD_AGENT_API_KEY || "") + "]")',
                       __filename]);
run('/bin/sh', ['-c', 'echo "cmd=[$RD_AGENT_API_KEY]"']);
// The script named through /proc/self/cwd: runnerd's own cwd (this one) leads to the agent's
// script, the started node's (evil, where a command could have written) to another.
const evil = path.join(process.cwd(), 'evil');
require('fs').mkdirSync(path.join(evil, 'pkg', 'bin'), {recursive: true});
require('fs').writeFileSync(path.join(evil, 'pkg', 'bin', 'agent.js'),
  'console.log("procself=[" + (process.env.RD_AGENT_API_KEY || "") + "]")');
spawnSync(process.execPath, ['/proc/self/cwd/pkg/bin/agent.js'], {stdio: 'inherit', cwd: evil});
// The script by a path that climbs out of a cwd a command could move: the kernel takes ".."
// from the directory, wherever it was moved, not from the name runnerd read.
const deep = path.join(evil, 'a', 'b');
require('fs').mkdirSync(deep, {recursive: true});
spawnSync(process.execPath, [path.relative(deep, __filename), 'dotdot'], {stdio: 'inherit',
                                                                       cwd: deep});
""", ("bin", "vendor"))
    vendor = os.path.join(pkg, "vendor", "agentbin")
    with open(vendor, "w") as f:
        f.write("#!%s\nimport os, subprocess, sys\n"
                "print('%%s=[%%s]' %% (sys.argv[1], os.environ.get('RD_AGENT_API_KEY', '')),"
                " flush=True)\n"
                "if sys.argv[1] == 'vendor':\n"
                "    subprocess.run(['/bin/sh', '-c', 'echo \"vcmd=[$RD_AGENT_API_KEY]\"'])\n"
                "    subprocess.run([sys.argv[2], '--max-old-space-size=50', sys.argv[3],"
                " 'byvendor'])\n"
                % common.PY)
    shutil.copy("/bin/busybox", os.path.join(pkg, "vendor", "busybox"))
    os.symlink(vendor, os.path.join(tmp, "link"))
    os.chmod(vendor, 0o755)
    open_dirs(pkg)
    def profile(name, commands):
        path = write_profile(tmp, name, commands, agent_env_allow=["RD_AGENT_API_KEY"])
        with open(path) as f:
            spec = json.load(f)
        spec["agent"]["programs"] = ["{package}/vendor/agentbin", "{package}/vendor/busybox"]
        spec["agent"]["interpreter_options"] = ["--max-old-space-size=*"]
        spec["agent"]["self_exec"] = ["ash"]
        with open(path, "w") as f:
            json.dump(spec, f)
        return path
    # The package lies in /tmp, a writable root: protected, commands cannot change it.
    prof = profile("agentprog", {"default": "allow", "protect": [pkg]})
    key = "sk-agent-" + CANARY
    env = base_env()
    env["RD_AGENT_API_KEY"] = key
    env["PATH"] = os.path.dirname(node) + ":" + env.get("PATH", "/usr/bin:/bin")
    audit = os.path.join(tmp, "audit.jsonl")
    out = subprocess.run(runnerd_cmd(prof, [launcher], audit=audit), env=env, cwd=tmp,
                         capture_output=True, text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=[" in l)
    want = "[%s]" % key
    check("agent programs: the launcher is the agent, with its key", got.get("agent") == want,
          repr(got) + out.stderr[-400:])
    check("agent programs: the package's own binary runs as the agent, with its key",
          got.get("vendor") == want, repr(got.get("vendor")))
    check("agent programs: the agent started again in node (an allowed option) runs as the "
          "agent", got.get("relaunched") == want, repr(got.get("relaunched")))
    check("agent programs: what either starts is a sandboxed command, without the key",
          got.get("vcmd") == "[]" and got.get("rcmd") == "[]", repr(got))
    check("agent programs: node with an option the profile does not allow (-e) is a command",
          got.get("eval") == "[]", repr(got.get("eval")))
    check("agent programs: another program is a command", got.get("cmd") == "[]",
          repr(got.get("cmd")))
    check("agent programs: a program of the agent's started by itself again runs as the agent "
          "with a first argument self_exec names", got.get("box") == want
          and got.get("boxash") == want, repr(got))
    check("agent programs: ... and as a command with another (a command line the model chose)",
          got.get("boxself") == "[]", repr(got.get("boxself")))
    check("agent programs: node started on the agent's script by another program is a command",
          got.get("byvendor") == "[]", repr(got.get("byvendor")))
    check("agent programs: a file of the agent's reached through a symlink where commands can "
          "write is a command", got.get("link") == "[]", repr(got.get("link")))
    check("agent programs: node on a script named through /proc/self/cwd, which runnerd would "
          "resolve in its own cwd, is a command", got.get("procself") == "[]",
          repr(got.get("procself")))
    check("agent programs: node on a script reached by \"..\" out of a cwd where commands "
          "can write is a command", got.get("dotdot") == "[]", repr(got.get("dotdot")))
    events = [json.loads(l) for l in open(audit)] if os.path.exists(audit) else []
    agents = [e for e in events if e.get("event") == "exec" and e.get("action") == "agent"]
    check("agent programs: each agent exec is audited as the agent's (4)", len(agents) == 4,
          repr([e.get("argv") for e in agents]))
    # An agent that is a general program (python itself, not a script): its own file is not
    # the agent's program, or every python the agent ran would be unsandboxed.
    probe = "import os; print('self=[%s]' % os.environ.get('RD_AGENT_API_KEY', ''))"
    out = subprocess.run(
        runnerd_cmd(prof, [common.PY, "-c", "import subprocess, sys; "
                           "subprocess.run([sys.executable, '-c', %r])" % probe]),
        env=env, cwd=tmp, capture_output=True, text=True, timeout=60)
    check("agent programs: an agent that is python runs python commands sandboxed",
          "self=[]" in out.stdout, out.stdout + out.stderr[-300:])
    # The same package where commands can write: a command could have replaced the binary or
    # the script with its own code, which would then run as the agent. Left out, said.
    open_prof = profile("agentopen", {"default": "allow"})
    out = subprocess.run(runnerd_cmd(open_prof, [launcher]), env=env, cwd=tmp,
                         capture_output=True, text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=[" in l)
    check("agent programs: in a writable root, the package's binary and the relaunch run as "
          "commands, without the key", got.get("agent") == want and got.get("vendor") == "[]"
          and got.get("relaunched") == "[]", repr(got) + out.stderr[-400:])
    check("agent programs: runnerd says why they were left out",
          "lies where commands can write" in out.stderr, out.stderr[-600:])


def test_agent_files_in_rule_roots(tmp):
    """A rule that makes a directory writable for its commands keeps the agent's own programs
    in it read-only: else such a command could put its code in one, which the agent would then
    run unsandboxed, with its key. The build before let the command write the file."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    pkg = os.path.join(home, "rd-agentpkg-%d" % os.getpid())
    tool = os.path.join(pkg, "vendor", "tool")
    try:
        os.makedirs(os.path.dirname(tool))
        with open(os.path.join(pkg, "package.json"), "w") as f:
            f.write('{"name": "fake-agent"}\n')
        with open(tool, "w") as f:
            f.write("#!/bin/sh\necho tool\n")
        launcher = os.path.join(pkg, "agent.sh")
        with open(launcher, "w") as f:
            f.write("#!/bin/sh\n/bin/sh -c 'echo evil >> %s #APPEND' 2>/dev/null; "
                    "echo append=$?\n/bin/sh -c 'echo other > %s/other #APPEND'; echo other=$?\n"
                    % (tool, pkg))
        for p in (tool, launcher):
            os.chmod(p, 0o755)
        prof = write_profile(tmp, "rulewrite", {"default": "allow", "rules": [
            {"match": {"args": ["-c", "*#APPEND*"]}, "action": "allow", "write": [pkg]}]})
        with open(prof) as f:
            spec = json.load(f)
        spec["agent"]["programs"] = ["{package}/vendor/tool"]
        with open(prof, "w") as f:
            json.dump(spec, f)
        out = subprocess.run(runnerd_cmd(prof, [launcher]), env=base_env(), cwd=tmp,
                             capture_output=True, text=True, timeout=60)
        with open(tool) as f:
            content = f.read()
        check("agent files in a rule's root: the rule's command writes its root",
              "other=0" in out.stdout, out.stdout + out.stderr[-400:])
        check("agent files in a rule's root: the agent's program there stays read-only",
              "append=0" not in out.stdout and "append=" in out.stdout and "evil" not in content,
              out.stdout + " content: " + content)
    finally:
        shutil.rmtree(pkg, ignore_errors=True)


def test_audit_log(tmp):
    log = os.path.join(tmp, "audit.jsonl")
    noshebang = os.path.join(tmp, "noshebang")
    with open(noshebang, "w") as f:
        f.write("echo no interpreter line\n")
    os.chmod(noshebang, 0o755)
    odd = os.path.join(tmp, "odd")
    os.makedirs(odd)
    odd_name = os.path.join(odd.encode(), b"bin\xff")
    shutil.copy("/bin/true", odd_name)
    cmd = runnerd_cmd("claude", ["bash", "-c", "env >/dev/null; sh -c 'exit 3'; %s; "
                                 "/nonexistent/x 2>/dev/null; %s/bin$'\\xff'; true"
                                 % (noshebang, odd)], audit=log)
    subprocess.run(cmd, env=base_env(), capture_output=True, timeout=60)
    try:
        lines = open(log).read().splitlines()
        events = [json.loads(l) for l in lines]
    except (OSError, ValueError) as e:
        check("audit: every line is a JSON object", False, str(e))
        return
    kinds = [e.get("event") for e in events]
    check("audit: every line is a JSON object with ts and event",
          all(isinstance(e, dict) and "ts" in e and "event" in e for e in events), repr(kinds))
    check("audit: session_start, exec, exit, exec_failed and session_end are there",
          kinds[0] == "session_start" and kinds[-1] == "session_end" and
          {"exec", "exit", "exec_failed"} <= set(kinds), repr(kinds))
    start = events[0]
    with open(start.get("config", "/nonexistent"), "rb") as f:
        cfg_sha = hashlib.sha256(f.read()).hexdigest()
    prof_file = os.path.join(os.path.dirname(start["config"]), "profiles", "claude.json")
    with open(prof_file, "rb") as f:
        prof_sha = hashlib.sha256(f.read()).hexdigest()
    check("audit: session_start names the profile and fingerprints the files",
          start.get("profile") == "claude" and start.get("config_sha256") == cfg_sha and
          start.get("profile_sha256") == prof_sha, repr(start))
    failed = [e for e in events if e["event"] == "exec_failed"]
    check("audit: exec_failed carries the caller's errno",
          failed and failed[0].get("errno") == "ENOEXEC" and failed[0].get("errno_num") == 8,
          repr(failed))
    exits = [e.get("status") for e in events if e["event"] == "exit"]
    check("audit: exit carries the status", 3 in exits, repr(exits))
    execs = [e for e in events if e["event"] == "exec"]
    env_names = {v["name"] for e in execs for v in e.get("env", [])}
    check("audit: exec lists env names with reasons",
          "ANTHROPIC_API_KEY" in env_names and all(
              "reason" in v and "passed" in v for e in execs for v in e["env"]), "")
    text = open(log).read()
    check("audit: no planted value is ever written", CANARY not in text, "")
    check("audit: a path that is not UTF-8 is logged in full, bytes escaped",
          any(e.get("path") == odd + "/bin\\xff" for e in execs), repr([e.get("path")
                                                                    for e in execs]))


def test_audit_bound(tmp):
    """What one session writes to the audit log is bounded (audit.max_session_bytes): past it,
    no exec goes unrecorded: it is refused, an audit_limit event says so once, runnerd says it
    once, and the session ends with its session_end. Before, the log grew without end (a
    container's agent could fill the host's disk through runnerd serve)."""
    cfg = common.shipped_config()
    cfg.setdefault("audit", {})["max_session_bytes"] = 8192
    config = os.path.join(tmp, "runner.json")
    with open(config, "w") as f:
        json.dump(cfg, f)
    log = os.path.join(tmp, "audit.jsonl")
    script = "for i in $(seq 60); do /bin/true || echo refused=$i; done; echo done"
    out = subprocess.run(runnerd_cmd("generic", ["bash", "-c", script], config=config,
                                     audit=log),
                         env=base_env(), capture_output=True, text=True, timeout=120)
    events = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
    kinds = [e.get("event") for e in events]
    refused = [l for l in out.stdout.splitlines() if l.startswith("refused=")]
    execs = kinds.count("exec")
    check("audit bound: execs run until the bound, then are refused",
          # seq is one exec too
          "done" in out.stdout and 1 < execs < 60 and len(refused) == 61 - execs,
          "%d execs, %d refused: %s" % (execs, len(refused), out.stderr[-300:]))
    check("audit bound: the log stays near the bound, and ends with session_end",
          os.path.getsize(log) < 8192 + 2048 and kinds[-1:] == ["session_end"]
          and kinds.count("audit_limit") == 1, "%d bytes, %r" % (os.path.getsize(log),
                                                                 kinds[-5:]))
    check("audit bound: runnerd says why, once",
          out.stderr.count("audit.max_session_bytes") == 1, out.stderr[-600:])


def test_rules(tmp):
    agent = common.agent("rules_agent.py")
    log = os.path.join(tmp, "audit.jsonl")
    env = base_env()
    env["RD_SECRET_TOKEN"] = "tok-" + CANARY
    prof = "rules"
    if os.geteuid() == 0:
        # A root agent could replace /usr/bin/printenv: its grant holds only pinned.
        cfg_dir = os.path.dirname(common.itest_config("RUNNERD_ITEST_CONFIG"))
        with open(os.path.join(cfg_dir, "profiles", "rules.json")) as f:
            spec = json.load(f)
        exe = os.path.realpath(shutil.which("printenv"))
        spec["commands"]["rules"][0]["sha256"] = hashlib.sha256(open(exe, "rb").read()).hexdigest()
        prof = os.path.join(tmp, "rules.json")
        with open(prof, "w") as f:
            json.dump(spec, f)
    p = subprocess.run(runnerd_cmd(prof, [sys.executable, agent, tmp],
                                   config=common.itest_config("RUNNERD_ITEST_CONFIG"),
                                   audit=log), env=env, capture_output=True, text=True,
                       timeout=60)
    out = agent_json("rules: the agent ran", p.stdout, p.stderr)
    if out is None:
        return
    check("rules: an allow rule grants its exact name to the matching command",
          out["granted"] == [0, "tok-" + CANARY], repr(out["granted"]))
    check("rules: other commands do not get the granted name", out["env"][1] == "0",
          repr(out["env"]))
    check("rules: a deny rule fails the exec with EACCES and nothing runs",
          out["denied"] == ["errno", 13] and not out["touched"], repr(out))
    check("rules: an ask rule that no one answers denies: the caller sees 126",
          out["ask"] == [126, ""], repr(out["ask"]))
    check("rules: argv[0] does not earn an allow rule's grant",
          out["argv0"][1] == "" and out["argv0"][0] != 0, repr(out["argv0"]))
    events = [json.loads(l) for l in open(log)]
    refused = [e.get("reason") for e in events if e["event"] == "refused"]
    asks = [e for e in events if e["event"] == "decision" and e.get("rule") == 2]
    check("rules: the audit says which rule refused, and that the ask timed out",
          "commands.rules[1] denies it" in refused and
          [e.get("state") or e.get("answer") for e in asks] == ["pending", "timeout"],
          repr(refused) + repr(asks))
    granted = [e for e in events if e["event"] == "exec" and e.get("rule") == 0]
    check("rules: the exec event names the rule and the action",
          granted and granted[0]["action"] == "allow", repr(granted[:1]))


def test_masks(tmp):
    secret = os.path.join(tmp, "auth.json")
    store = os.path.join(tmp, "store")
    os.makedirs(store)
    with open(secret, "w") as f:
        f.write("token " + CANARY)
    with open(os.path.join(store, "key"), "w") as f:
        f.write(CANARY)
    os.chmod(tmp, 0o755)
    for path in (secret, store, os.path.join(store, "key")):
        os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
    prof = write_profile(tmp, "masks", {
        "default": "allow", "env_allow": [], "mask": [secret, os.path.join(tmp, "not-there")],
        "rules": [{"match": {"path": "ls"}, "action": "allow", "mask": [store]}]})
    # Each line is a command of its own, trapped and sandboxed with the masks that apply.
    script = "\n".join([
        "echo \"file=[$(cat %s)]\"" % secret,
        "echo \"grep=$(grep -c canary %s)\"" % secret,
        "ls -A %s >/dev/null && echo \"ls=$(ls -A %s | wc -l)\"" % (store, store),
        "echo \"cat-in-store=$(cat %s/key)\"" % store,
        "echo \"missing-ok=$(cat /dev/null; echo $?)\"",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]),
                         env=base_env(), capture_output=True, text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("masks: a masked file reads empty", got.get("file") == "[]", out.stdout + out.stderr)
    check("masks: grep finds no canary in a masked file", got.get("grep") == "0", repr(got))
    check("masks: a rule's directory mask leaves the directory empty for the command it "
          "matches (ls)", got.get("ls") == "0", repr(got))
    check("masks: a rule's mask is for its own commands only (cat still reads the store)",
          got.get("cat-in-store") == CANARY, repr(got))
    check("masks: a mask on a missing path does not stop commands",
          got.get("missing-ok") == "0", repr(got))
    with open(secret) as f:
        check("masks: the real file is untouched", CANARY in f.read())


PTRACE = ("import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
          "r = libc.ptrace(0, 0, 0, 0); print(r, ctypes.get_errno())")


# A command in a user namespace of its own, with mount and UTS namespaces below it, made by the
# process itself (no exec after: it keeps every capability there, as root and not): what it
# tries against the view it inherited, and the calls the filter still refuses there.
NESTED = """import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(r):
    return 0 if r >= 0 else ctypes.get_errno()
secret = sys.argv[1].encode()
# CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWUTS
print("nested=%d" % call(libc.unshare(0x10000000 | 0x00020000 | 0x04000000)))
print("umount=%d" % call(libc.umount2(secret, 0)))
print("remount=%d" % call(libc.mount(None, b"/", None, 32 | 4096, None)))  # MS_REMOUNT|MS_BIND
try:
    open("/etc/rd-nested", "w")
    print("etc=written")
except OSError as e:
    print("etc=%d" % e.errno)
print("mask=[%s]" % open(secret).read())
print("open_tree=%d" % call(libc.syscall(428, -100, b"/", 0)))
print("setns=%d" % call(libc.setns(os.open("/proc/self/ns/uts", os.O_RDONLY), 0)))
"""


def test_seccomp(tmp):
    """The commands' seccomp profile. By default a command may make a sandbox of its own
    (bubblewrap, as Codex and Claude Code run it): a user namespace, and namespaces and mounts
    below it; what the kernel locks in it keeps the masks and the read-only view; as root, the
    kernel (5.12 and later) lets no such namespace map uid 0 without CAP_SETFCAP, which a command
    never has. "strict" refuses namespaces; "none" lifts the profile."""
    secret = os.path.join(tmp, "store", "key")
    os.makedirs(os.path.dirname(secret))
    with open(secret, "w") as f:
        f.write(CANARY)
    nested = os.path.join(tmp, "nested.py")
    with open(nested, "w") as f:
        f.write(NESTED)
    prof = write_profile(tmp, "sc", {"default": "allow", "mask": [secret], "rules": [
        {"match": {"args": ["-c", "*TRACEME_NONE*"]}, "action": "allow", "seccomp": "none"},
        {"match": {"args": ["-c", "*STRICT*"]}, "action": "allow", "seccomp": "strict"}]})
    script = "\n".join([
        "%s -c '%s'" % (sys.executable, PTRACE),
        "%s -c '%s #TRACEME_NONE'" % (sys.executable, PTRACE),
        "unshare -U true 2>/dev/null; echo unshare=$?",
        "sh -c 'unshare -U true 2>/dev/null; echo strict=$? #STRICT'",
        "%s %s %s" % (sys.executable, nested, secret),
        "m=$(unshare -Ur true 2>&1); echo \"map=$? $(printf %s \"$m\" | grep -c uid_map)\"",
        "sh -c 'sh -c \"exit 6\"'; echo forks=$?",
        "cp /bin/true %s/suid && chmod 4755 %s/suid 2>/dev/null; echo chmod=$?" % (tmp, tmp),
        "chmod g+s %s/suid 2>/dev/null; echo chmodg=$?" % tmp,
        "install -m 2755 /bin/true %s/sgid 2>/dev/null; echo install=$?" % tmp,
        "%s -c 'import os; os.open(\"%s/suid-open\", os.O_CREAT | os.O_WRONLY, 0o4755)' "
        "2>/dev/null; echo open=$?" % (sys.executable, tmp),
        "chmod 700 %s/suid; echo plain=$?" % tmp,
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=base_env(),
                         capture_output=True, text=True, timeout=60)
    lines = out.stdout.splitlines()
    check("seccomp: ptrace fails with EPERM inside a command (default profile)",
          lines[:1] == ["-1 1"], out.stdout + out.stderr)
    check("seccomp: a rule with seccomp none lifts it", lines[1:2] == ["0 0"], out.stdout)
    check("seccomp: a command may make a user namespace (unshare -U)", "unshare=0" in lines,
          out.stdout + out.stderr)
    check("seccomp: strict refuses it", "strict=1" in lines, out.stdout)
    got = dict(l.split("=", 1) for l in lines if "=" in l)
    check("seccomp: in namespaces of its own, with every capability there, a command cannot "
          "unmount a mask (EINVAL: locked), remount / writable (EPERM), write /etc (EROFS), "
          "nor read the masked file",
          [got.get(k) for k in ("nested", "umount", "remount", "etc", "mask")] ==
          ["0", "22", "1", "30", "[]"],
          out.stdout + out.stderr)
    check("seccomp: there too, the new mount API and setns fail with EPERM",
          got.get("open_tree") == "1" and got.get("setns") == "1", repr(got))
    check("seccomp: a command's user namespace can map uid 0 only when it is not the "
          "machine's root (the kernel asks CAP_SETFCAP for that)",
          (len(got.get("map", "").split()) == 2 and "0" not in got.get("map", "").split())
          if os.getuid() == 0 else got.get("map", "").split()[:1] == ["0"], repr(got))
    check("seccomp: ordinary forks and execs inside still work", "forks=6" in lines,
          out.stdout)
    check("seccomp: /etc is untouched", not os.path.exists("/etc/rd-nested"))
    if os.path.exists("/etc/rd-nested"):
        os.unlink("/etc/rd-nested")  # a failed check leaves nothing behind
    made = [n for n in os.listdir(tmp) if n.startswith(("suid", "sgid"))
            and os.stat(os.path.join(tmp, n)).st_mode & (stat.S_ISUID | stat.S_ISGID)]
    check("seccomp: a command makes no file setuid or setgid (chmod, install, open)",
          ["chmod=1", "chmodg=1", "install=1", "open=1"] ==
          [l for l in lines if l.split("=")[0] in ("chmod", "chmodg", "install", "open")]
          and not made, out.stdout + " made: %s" % made)
    check("seccomp: other modes still change", "plain=0" in lines, out.stdout)


def test_network_timeout(tmp):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    probe = common.agent("net_probe.py")
    prof = write_profile(tmp, "nt", {"default": "allow", "kill_grace_s": 1, "rules": [
        {"match": {"args": [probe, "**"]}, "action": "allow", "network": "none"},
        {"match": {"path": "sleep"}, "action": "allow", "timeout_s": 1},
        {"match": {"path": "sh", "args": ["-c", "*9875*"]}, "action": "allow", "timeout_s": 1},
    ]})
    script = "\n".join([
        "%s -c 'import socket; socket.create_connection((\"127.0.0.1\", %d), 3); "
        "print(\"plain=reached\")'" % (sys.executable, port),
        "%s %s %d" % (sys.executable, probe, port),
        "sleep 9874%s; echo timeout=$?" % RUN,
        "sh -c 'trap \"\" TERM; sleep 9875%s'; echo stubborn=$?" % RUN,
    ])
    t0 = time.monotonic()
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script,
                                "argv-" + CANARY]), env=base_env(), capture_output=True,
                         text=True, timeout=60)
    elapsed = time.monotonic() - t0
    srv.close()
    lines = out.stdout.splitlines()
    check("network: a command on the host network reaches a loopback listener",
          "plain=reached" in lines, out.stdout + out.stderr)
    check("network: with network none the host's listener is unreachable",
          "host=unreachable" in lines, out.stdout)
    check("network: with network none lo is up (a local bind works)", "lo=up" in lines,
          out.stdout)
    check("timeout: the caller sees 124", "timeout=124" in lines, out.stdout)
    # It ignores SIGTERM and would sleep for hours: only the SIGKILL after the grace ends it
    # within the run's own timeout.
    check("timeout: a command ignoring SIGTERM is killed after the grace, 124",
          "stubborn=124" in lines, "%s (%.1fs)" % (out.stdout, elapsed))
    check("timeout: nothing of the command is left (seen from outside)",
          gone_within("sleep\x009874" + RUN, 1.0) and gone_within("sleep\x009875" + RUN, 1.0), "")


def test_rlimits(tmp):
    prof = write_profile(tmp, "rl", {"default": "allow", "rlimits": {"nofile": 64}, "rules": [
        {"match": {"path": "sh", "args": ["-c", "*fsize*"]}, "action": "allow",
         "rlimits": {"fsize": 4096, "cpu": 7}}]})
    script = "\n".join([
        "sh -c 'echo nofile=$(ulimit -n):$(ulimit -Hn)'",
        "sh -c ': fsize; echo fsize=$(ulimit -f) cpu=$(ulimit -t); "
        "head -c 8192 /dev/zero > %s/big 2>/dev/null; echo write=$?'" % tmp,
        "echo agent=$(ulimit -n)",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=base_env(),
                         capture_output=True, text=True, timeout=60)
    got = dict(kv.split("=", 1) for l in out.stdout.split() if "=" in l for kv in [l])
    check("rlimits: the profile's nofile caps every command (soft and hard)",
          got.get("nofile") == "64:64", out.stdout + out.stderr)
    check("rlimits: a rule's caps apply to its commands (fsize 4096 = 8 blocks, cpu 7)",
          got.get("fsize") == "8" and got.get("cpu") == "7", out.stdout)
    check("rlimits: a write past fsize fails (SIGXFSZ), the file stays at the cap",
          got.get("write") not in (None, "0") and
          os.path.getsize(os.path.join(tmp, "big")) == 4096, out.stdout)
    check("rlimits: the agent's own limits are untouched", got.get("agent") not in (None, "64"),
          out.stdout)


def test_cmdline(tmp):
    out = subprocess.run(runnerd_cmd("generic", ["bash", "-c",
                                                 "cat /proc/1/cmdline | tr '\\0' ' '",
                                                 "x", "--secret=" + CANARY]),
                         env=base_env(), capture_output=True, text=True, timeout=60)
    check("the sandbox's pid 1 does not show runnerd's or the agent's arguments",
          out.returncode == 0 and CANARY not in out.stdout and "runnerd" in out.stdout,
          out.stdout + out.stderr)


def test_tiocsti(tmp):
    """Under a real terminal (script(1) gives one), a command must not type into it."""
    path = common.agent("tiocsti_probe.py")
    agent = "%s -c 'import subprocess; subprocess.run([\"%s\", \"%s\"])'" % (
        sys.executable, sys.executable, path)
    cmd = " ".join(runnerd_cmd("generic", ["sh", "-c", '"%s"' % agent.replace('"', '\\"')]))
    out = subprocess.run(["script", "-qec", cmd, "/dev/null"], env=base_env(),
                         capture_output=True, text=True, timeout=60)
    check("seccomp: TIOCSTI (typing into the agent's terminal) fails with EPERM",
          "tiocsti=errno 1" in out.stdout, out.stdout + out.stderr)


def test_deputies(tmp):
    """Same-user services that run what they are asked outside any sandbox (a tmux server, the
    user's systemd and D-Bus) are masked by the shipped runner.json: a command finds no socket
    to ask them with."""
    uid = os.getuid()
    tdir = "/tmp/tmux-%d" % uid
    made = not os.path.exists(tdir)
    if made:
        os.mkdir(tdir, 0o700)
    path = os.path.join(tdir, "runnerd-test%s" % RUN)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        server.listen(1)
        probe = ("import socket\n"
                 "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                 "try:\n"
                 "    s.connect(%r); print('deputy=reached')\n"
                 "except OSError as e:\n"
                 "    print('deputy=errno', e.errno)\n" % path)
        agent = ("import subprocess, sys; subprocess.run([sys.executable, '-c', %r]); "
                 "subprocess.run(['sh', '-c', 'ls -A %s >/dev/null && "
                 "echo entries=$(ls -A %s | wc -l)'])" % (probe, tdir, tdir))
        out = subprocess.run(runnerd_cmd("generic", [sys.executable, "-c", agent]),
                             env=base_env(), capture_output=True, text=True, timeout=60)
        check("deputies: a command cannot reach a socket in /tmp/tmux-UID",
              "deputy=errno" in out.stdout and "entries=0" in out.stdout,
              out.stdout + out.stderr)
    finally:
        server.close()
        os.unlink(path)
        if made:
            os.rmdir(tdir)


def test_mask_setup_race(tmp):
    """A secret appears at a masked path while the next spare sandbox is putting its masks in
    place: no later command may read it (the spare must not be used as it is)."""
    secret = os.path.join(tmp, "late-secret")
    prof = write_profile(tmp, "race2", {"default": "allow", "mask": [secret]})
    agent = common.agent("mask_race_agent.py")
    out = subprocess.run(runnerd_cmd(prof, [sys.executable, agent, secret, "800"]),
                         env=base_env(), capture_output=True, text=True, timeout=180)
    check("masks: a secret that appears while a spare sets up its masks is never read "
          "(800 tries)", out.stdout.strip() == "leaks=0", out.stdout + out.stderr[-500:])


def test_exec_race(tmp):
    """A rule grants a token to /usr/bin/true; another process keeps swapping ./link between
    true and env. Whatever runs must be the file the rule was decided on."""
    prof = write_profile(tmp, "race", {"default": "allow", "rules": [
        {"match": {"path": "/usr/bin/true"}, "action": "allow", "env_allow": ["RD_RACE_TOKEN"]}]},
        agent_env_allow=["RD_RACE_TOKEN"])
    swapper = subprocess.Popen(["sh", "-c", "cd %s; while :; do ln -sf /usr/bin/true t.tmp; "
                                "mv -f t.tmp link; ln -sf /usr/bin/env t.tmp; mv -f t.tmp link; "
                                "done" % tmp], start_new_session=True, stderr=subprocess.DEVNULL)
    env = base_env()
    env["RD_RACE_TOKEN"] = "race-" + CANARY
    try:
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c",
                                    "cd %s; n=0; r=0; for i in $(seq 200); do "
                                    "o=$(./link 2>/dev/null) && r=$((r+1)); case $o in "
                                    "*race-*) n=$((n+1));; esac; done; echo leaks=$n ran=$r"
                                    % tmp]),
                             env=env, capture_output=True, text=True, timeout=120)
    finally:
        # The whole group: an ln or mv left running would write into tmp as it is removed.
        os.killpg(swapper.pid, signal.SIGKILL)
        swapper.wait()
    got = re.fullmatch(r"leaks=(\d+) ran=(\d+)", out.stdout.strip())
    check("exec race: a file swapped under the decided name never receives the rule's grant, "
          "and some of the execs ran", got and got[1] == "0" and int(got[2]) > 0,
          out.stdout + out.stderr)


def test_fd_swap(tmp):
    """A rule grants a token to /usr/bin/true; the caller execs /dev/fd/50 holding true while
    another of its threads keeps dup2()ing env over fd 50. Whatever runs must be the file the
    rule was decided on."""
    helper = os.path.join(os.environ.get("HELPERS", ""), "fd_swap_exec")
    if not os.access(helper, os.X_OK):
        check("exec race by fd: the fd_swap_exec helper is built (HELPERS)", False, helper)
        return
    prof = write_profile(tmp, "fdrace", {"default": "allow", "rules": [
        {"match": {"path": "/usr/bin/true"}, "action": "allow", "env_allow": ["RD_RACE_TOKEN"]}]},
        agent_env_allow=["RD_RACE_TOKEN"])
    env = base_env()
    env["RD_RACE_TOKEN"] = "fdrace-" + CANARY
    out = subprocess.run(runnerd_cmd(prof, [helper, "300", "fdrace-"]), env=env,
                         capture_output=True, text=True, timeout=120)
    got = re.fullmatch(r"leaks=(\d+) ran=(\d+)", out.stdout.strip())
    check("exec race by fd: a file dup2()ed over the exec'd fd never receives the rule's grant, "
          "and some of the execs ran", got and got[1] == "0" and int(got[2]) > 0,
          out.stdout + out.stderr[-300:])


def test_proc_dotdot(tmp):
    """/proc paths are resolved as the caller: "/proc/PID/../self" must not become runnerd's own
    self, and another process's magic links are not followed on the caller's behalf."""
    agent = common.agent("proc_dotdot_agent.py")
    out = subprocess.run(runnerd_cmd("generic", [sys.executable, agent]), env=base_env(),
                         capture_output=True, text=True, timeout=60)
    got = agent_json("/proc: the agent ran", out.stdout, out.stderr)
    if got is None:
        return
    check("/proc: /proc/self/../self/exe is refused, never runnerd's own binary",
          got["dotdot"] == ["errno", 1], repr(got))
    check("/proc: another process's exe link is not followed for the caller",
          got["other"][0] == "errno" and got["other"][1] in (1, 13), repr(got))
    check("/proc: the caller's own /proc/self/exe still runs", got["own"][0] == 0 and
          "Python" in got["own"][1], repr(got))
    check("/proc: a second magic link after the caller's (/proc/self/root/proc/self/exe) is "
          "refused, never runnerd's own binary", got["second"] == ["errno", 1], repr(got))
    check("/proc: a plain path under the caller's /proc/self/root still runs",
          got["own_root"][0] == 0 and "env" in got["own_root"][1], repr(got))


def test_mask_moved(tmp):
    """A command renames the parent of a masked directory: the next command must not read the
    secret at its new name (it is refused instead)."""
    inner = os.path.join(tmp, "outer", "inner")
    os.makedirs(inner)
    with open(os.path.join(inner, "secret"), "w") as f:
        f.write(CANARY)
    prof = write_profile(tmp, "mm", {"default": "allow", "mask": [inner]})
    script = ("cat %s/secret 2>/dev/null; mv %s/outer %s/outer2; echo mv=$?; "
              "cat %s/outer2/inner/secret 2>/dev/null; echo after=$?" % (inner, tmp, tmp, tmp))
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=base_env(),
                         capture_output=True, text=True, timeout=60)
    check("masks: renaming a masked path's parent never exposes the secret",
          CANARY not in out.stdout and "mv=0" in out.stdout and "after=126" in out.stdout,
          out.stdout + out.stderr)


MASK_REPLACE_AGENT = r"""import os, subprocess, sys
secret, store, mode = sys.argv[1], sys.argv[2], sys.argv[3]
def run(name, argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True)
        print("%s=%d[%s]" % (name, p.returncode, p.stdout.strip()), flush=True)
    except OSError as e:
        print("%s=refused[%s]" % (name, e.strerror), flush=True)
def replace(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
run("start", ["cat", secret])
if mode == "kinds":
    # As Claude Code writes ~/.claude.json and bash ~/.bash_history: a new file renamed over.
    replace(secret, "new " + sys.argv[4])
    run("replaced", ["cat", secret])
    os.unlink(secret)
    run("removed", ["cat", secret])
    replace(secret, "again " + sys.argv[4])
    run("again", ["cat", secret])
    os.rename(store, store + ".old")
    os.mkdir(store)
    with open(os.path.join(store, "key"), "w") as f:
        f.write(sys.argv[4])
    run("store", ["ls", "-A", store])
else:
    os.unlink(secret)
    if mode == "symlink":
        os.symlink(os.path.join(os.path.dirname(secret), "elsewhere"), secret)
    else:
        os.mkdir(secret)
    run("after", ["true"])
"""


def test_mask_replaced(tmp):
    """A masked file the agent replaces by renaming a new one over it (Claude Code rewrites
    ~/.claude.json so at every start, bash ~/.bash_history, git's credential store its file), or
    removes and writes again: later commands run, and the new file is masked as the old one was.
    The build before refused every command after the first such write ("the masked path has
    moved or changed"), which broke real Claude Code sessions of every user with a
    ~/.claude.json. A symlink where the file was, or a directory, still refuses: the pin is to
    the kind of file in its directory."""
    agent = agent_script(tmp, "replace_agent.py", MASK_REPLACE_AGENT)
    for mode in ("kinds", "symlink", "directory"):
        d = os.path.join(tmp, mode)
        store = os.path.join(d, "store")
        os.makedirs(store)
        secret = os.path.join(d, "secret.json")
        with open(secret, "w") as f:
            f.write("old " + CANARY)
        with open(os.path.join(store, "key"), "w") as f:
            f.write(CANARY)
        prof = write_profile(tmp, "mr-" + mode, {"default": "allow", "mask": [secret, store]})
        out = subprocess.run(runnerd_cmd(prof, [sys.executable, agent, secret, store, mode,
                                                "new-" + CANARY]),
                             env=base_env(), capture_output=True, text=True, timeout=120)
        got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
        say = out.stdout + out.stderr[-600:]
        check("mask replaced (%s): the first command reads the masked file empty" % mode,
              got.get("start") == "0[]", say)
        if mode == "kinds":
            check("mask replaced: after a new file is renamed over the masked one, commands run, "
                  "and read it empty", got.get("replaced") == "0[]", say)
            check("mask replaced: after the masked file is removed, commands run",
                  got.get("removed", "").startswith("1["), say)
            check("mask replaced: a file written again at the masked path reads empty",
                  got.get("again") == "0[]", say)
            check("mask replaced: a masked directory replaced by another is empty to commands",
                  got.get("store") == "0[]", say)
            check("mask replaced: no command read a secret", CANARY not in out.stdout, say)
        else:
            check("mask replaced: a %s where the masked file was refuses commands" % mode,
                  got.get("after", "").startswith("refused[")
                  and "has moved or changed" in out.stderr, say)


MASK_LIVE_AGENT = r"""import os, subprocess, sys, time
out, canary, files = sys.argv[1], sys.argv[2], sys.argv[3:]
loop = "while :; do echo \\[$(cat %s 2>&1)\\]; sleep 0.01; done" % " ".join(files)
# A command that leaves a reader running in its sandbox (the default lifetime: the session).
subprocess.run(["sh", "-c", "nohup setsid sh -c '%s' >%s 2>&1 </dev/null & echo started"
                % (loop, out)])
time.sleep(0.5)
for f in files:
    # As Claude Code writes ~/.claude.json: a new file renamed over the old one.
    with open(f + ".tmp", "w") as w:
        w.write("new " + canary)
    os.rename(f + ".tmp", f)
time.sleep(1)
p = subprocess.run(["cat"] + files, capture_output=True, text=True)
print("later=%d[%s]" % (p.returncode, p.stdout.strip()), flush=True)
"""


def test_mask_replaced_live(tmp):
    """A command left running (a reader in the background) while the agent writes a masked file
    again, by renaming a new one over it: the kernel takes a mount off a file renamed over in
    every other mount namespace, so a mask bound on the file itself let the running reader see
    the new file, the agent's new token with it (the build before: every reader did). Masked
    paths under the home, in a directory of the home and in the home itself, are masked where
    that rename cannot reach. The files are made in the caller's real home (masks of the home
    are judged there), and removed after."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    name = ".rd-live-%d-%s" % (os.getpid(), os.urandom(3).hex())
    store = os.path.join(home, name)
    files = [os.path.join(store, "auth.json"), os.path.join(home, name + ".json")]
    os.makedirs(store)
    try:
        for f in files:
            with open(f, "w") as w:
                w.write("old " + CANARY)
        out = os.path.join(tmp, "reader.out")
        agent = os.path.join(tmp, "live_agent.py")
        with open(agent, "w") as w:
            w.write(MASK_LIVE_AGENT)
        prof = write_profile(tmp, "ml", {"default": "allow", "mask": files})
        run = subprocess.run(runnerd_cmd(prof, [sys.executable, agent, out, "new-" + CANARY]
                                         + files),
                             env=base_env(), capture_output=True, text=True, timeout=120)
        seen = open(out).read() if os.path.exists(out) else ""
        say = run.stdout + run.stderr[-600:] + " reader: " + seen[-300:]
        check("mask live: the reader ran, and read the masked files empty before the write",
              run.returncode == 0 and "[]" in seen and "old " + CANARY not in seen, say)
        check("mask live: a reader running in its sandbox never sees the file written again",
              CANARY not in seen, say)
        check("mask live: a later command reads them empty", "later=0[]" in run.stdout, say)
    finally:
        shutil.rmtree(store, ignore_errors=True)
        for f in files[1:]:
            for g in (f, f + ".tmp"):
                if os.path.lexists(g):
                    os.unlink(g)


# The start of an agent that leaves a reader of files running in its sandbox (the default
# lifetime: the session): start_reader(out, files) prints [what they hold] to out every 10 ms.
READER_AGENT = r"""import os, shutil, subprocess, sys, time
def start_reader(out, files):
    loop = "while :; do echo \\[$(cat %s 2>/dev/null)\\]; sleep 0.01; done" % " ".join(files)
    subprocess.run(["sh", "-c", "nohup setsid sh -c '%s' >%s 2>&1 </dev/null & echo started"
                    % (loop, out)])
    time.sleep(0.5)
def later(files):
    p = subprocess.run(["sh", "-c", "cat %s 2>/dev/null; echo" % " ".join(files)],
                       capture_output=True, text=True)
    print("later=%d[%s]" % (p.returncode, p.stdout.strip()), flush=True)
def make_then_later(files, text):
    # As a login run beside the session makes a store: its directory, then the file.
    for f in files:
        os.makedirs(os.path.dirname(f), exist_ok=True)
        with open(f, "w") as w:
            w.write(text)
    time.sleep(1)
    later(files)
"""


def reader_run(tmp, prof, agent, args):
    """Runs READER_AGENT + agent as the agent under prof with args (the reader's output file
    first): (the run, what the reader printed, the output to show)."""
    out = os.path.join(tmp, "reader.out")
    path = os.path.join(tmp, "reader_agent.py")
    with open(path, "w") as w:
        w.write(READER_AGENT + agent)
    run = subprocess.run(runnerd_cmd(prof, [sys.executable, path, out] + args), env=base_env(),
                         capture_output=True, text=True, timeout=120)
    seen = open(out).read() if os.path.exists(out) else ""
    return run, seen, run.stdout + run.stderr[-600:] + " reader: " + seen[-300:]


MASK_LATER_AGENT = r"""
out, canary, files = sys.argv[1], sys.argv[2], sys.argv[3:]
start_reader(out, files)
make_then_later(files, "made " + canary)
"""


def test_mask_made_later(tmp):
    """Masked paths missing when the session starts, made by the agent's user during it (a
    login beside the session: gh auth login, claude /login): a command left running since before
    read them, where the directory they are made in was not already held for another masked
    file (the build before: the reader printed the new token for each). Three ways: a file in a
    directory of the home that exists, a file in a masked directory made then, a file in a
    directory of the home that does not exist yet. Later commands do not read them either."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    name = ".rd-later-%d-%s" % (os.getpid(), os.urandom(3).hex())
    store = os.path.join(home, name)
    os.makedirs(store)
    files = [os.path.join(store, "auth.json"), os.path.join(store, "gh", "hosts.yml"),
             os.path.join(home, name + "-new", "creds.json")]
    masks = [files[0], os.path.join(store, "gh"), files[2]]
    try:
        prof = write_profile(tmp, "mk", {"default": "allow", "mask": masks})
        run, seen, say = reader_run(tmp, prof, MASK_LATER_AGENT, ["new-" + CANARY] + files)
        check("mask made later: the reader ran", run.returncode == 0 and "[]" in seen, say)
        check("mask made later: a reader running since before never sees the stores made",
              CANARY not in seen, say)
        check("mask made later: a later command does not read them either",
              "later=0[" in run.stdout and CANARY not in run.stdout, say)
    finally:
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(os.path.join(home, name + "-new"), ignore_errors=True)


MASK_REMADE_AGENT = r"""
out, canary, store = sys.argv[1], sys.argv[2], sys.argv[3]
f = os.path.join(store, "aws", "credentials")
start_reader(out, [f])
# As a store is made again from scratch (rm -rf ~/.aws, aws configure): the masked directory
# removed, a new one made in its place.
shutil.rmtree(os.path.join(store, "aws"))
os.mkdir(os.path.join(store, "aws"))
with open(f, "w") as w:
    w.write("remade " + canary)
time.sleep(1)
later([f])
"""


def test_mask_dir_remade(tmp):
    """A masked directory removed and made again during the session (a store set up anew): the
    kernel takes a mount on a directory off, in every other mount namespace, when the directory
    is removed, so a command left running since before read the new store through the real
    parent directory (the build before: it printed the new secret). The directories holding
    masked directories are held as those holding masked files are. A later command finds the
    new directory masked."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    store = os.path.join(home, ".rd-remade-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(os.path.join(store, "aws"))
    with open(os.path.join(store, "aws", "credentials"), "w") as w:
        w.write("old " + CANARY)
    try:
        prof = write_profile(tmp, "mr", {"default": "allow",
                                         "mask": [os.path.join(store, "aws")]})
        run, seen, say = reader_run(tmp, prof, MASK_REMADE_AGENT, ["new-" + CANARY, store])
        check("mask dir remade: the reader ran, and read nothing of the first store",
              run.returncode == 0 and "[]" in seen and "old " + CANARY not in seen, say)
        check("mask dir remade: a reader running since before never sees the new store",
              CANARY not in seen, say)
        check("mask dir remade: a later command does not read it either",
              "later=0[" in run.stdout and CANARY not in run.stdout, say)
    finally:
        shutil.rmtree(store, ignore_errors=True)


MASK_GONE_AGENT = r"""
out, canary, store = sys.argv[1], sys.argv[2], sys.argv[3]
f = os.path.join(store, "auth.json")
start_reader(out, [f])
# The store's directory (a shadow: its masked file was missing at the start) removed and made
# again, as a login after rm -rf ~/.docker does, or (sys.argv[4] "over") another renamed over
# it, as a tool that sets its directory up aside does; the file in it.
if sys.argv[4:] == ["over"]:
    os.mkdir(store + ".new")
    os.rename(store + ".new", store)
else:
    shutil.rmtree(store)
    os.mkdir(store)
with open(f, "w") as w:
    w.write("made " + canary)
time.sleep(1)
try:
    p = subprocess.run(["cat", f], capture_output=True, text=True)
    print("later=%d[%s]" % (p.returncode, p.stdout.strip()), flush=True)
except OSError as e:
    print("later=refused[%s]" % e.strerror, flush=True)
"""


def test_mask_shadow_gone(tmp):
    """A directory the view holds for a masked path in it, removed and made again during the
    session, its masked file written in the new one (rm -rf ~/.docker, then docker login): the
    zygote's shadow went with the old directory, silently, and a command left running since
    before read the new file through the real directory above it, as did every later command
    (the build before: both printed the secret). Now the directories above a shadow, up to the
    home, are held too, and runnerd refuses the commands after, saying why. The same with an
    empty directory renamed over it (the build before the check of that way ran the later
    commands)."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    for how in ("removed", "over"):
        top = os.path.join(home, ".rd-gone-%d-%s" % (os.getpid(), os.urandom(3).hex()))
        store = os.path.join(top, "store")
        os.makedirs(store)
        what = "" if how == "removed" else " (renamed over)"
        try:
            prof = write_profile(tmp, "mg", {"default": "allow",
                                             "mask": [os.path.join(store, "auth.json")]})
            run, seen, say = reader_run(tmp, prof, MASK_GONE_AGENT,
                                        ["new-" + CANARY, store, how])
            check("mask shadow gone%s: the reader ran" % what, "[]" in seen, say)
            check("mask shadow gone%s: a reader running since before never sees the file "
                  "made" % what, CANARY not in seen, say)
            check("mask shadow gone%s: later commands are refused, and runnerd says why"
                  % what, CANARY not in run.stdout and
                  "later=refused[Operation not permitted]" in run.stdout and
                  "was removed or moved during the session" in run.stderr, say)
        finally:
            shutil.rmtree(top, ignore_errors=True)


MASK_LINK_AGENT = r"""
out, canary, remade, made = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
files = [os.path.join(remade, "credentials")] + made
start_reader(out, files)
# The masked directory behind a link set up anew; a store made behind a linked directory.
target = os.path.realpath(remade)
shutil.rmtree(target)
os.mkdir(target)
make_then_later(files, "made " + canary)
"""


def test_mask_links(tmp):
    """Masked paths behind symlinks of the home, as dotfiles managers make them: a masked
    directory that is a link into another directory of the home (~/.aws -> ~/dotfiles/aws) set
    up anew during the session, and, as root (the only one here that can make a directory
    outside the home and the writable roots), a store made in a directory of the home that is a
    link out of it (~/.config -> /srv/...). The build before held neither, and a command left
    running read both new files."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    top = os.path.join(home, ".rd-links-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(os.path.join(top, "dot", "aws"))
    with open(os.path.join(top, "dot", "aws", "credentials"), "w") as w:
        w.write("old " + CANARY)
    os.symlink(os.path.join(top, "dot", "aws"), os.path.join(top, "aws"))
    masks, made, out_dir = [os.path.join(top, "aws")], [], None
    if os.getuid() == 0:
        out_dir = "/srv/rd-links-%d-%s" % (os.getpid(), os.urandom(3).hex())
        os.makedirs(os.path.join(out_dir, "config"))
        os.symlink(os.path.join(out_dir, "config"), os.path.join(top, "config"))
        masks.append(os.path.join(top, "config", "gh"))
        made.append(os.path.join(top, "config", "gh", "hosts.yml"))
    try:
        prof = write_profile(tmp, "ln", {"default": "allow", "mask": masks})
        run, seen, say = reader_run(tmp, prof, MASK_LINK_AGENT,
                                    ["new-" + CANARY, os.path.join(top, "aws")] + made)
        check("mask links: the reader ran, and read nothing of the first store",
              run.returncode == 0 and "[]" in seen and "old " + CANARY not in seen, say)
        check("mask links: a reader running since before never sees the stores behind links "
              "made again or made" + ("" if out_dir else " (the one outside the home: as root)"),
              CANARY not in seen, say)
        check("mask links: a later command does not read them either",
              "later=0[" in run.stdout and CANARY not in run.stdout, say)
    finally:
        shutil.rmtree(top, ignore_errors=True)
        if out_dir:
            shutil.rmtree(out_dir, ignore_errors=True)


SHADOW_AGENT = r"""import os, subprocess, sys
d = sys.argv[1]
def run(name, argv, cwd=None):
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    print("%s=%d[%s]" % (name, p.returncode, p.stdout.strip()), flush=True)
def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
run("first", ["cat", d + "/plain.txt", d + "/auth.json"])
# In the shadow directory itself, and in the home (a shadow too), as the caller's cwd.
run("in_dir", ["cat", "plain.txt"], cwd=d)
run("in_home", ["sh", "-c", "test -d ."], cwd=os.path.dirname(d))
write(d + "/plain.txt", "v2")
run("replaced", ["cat", d + "/plain.txt"])
write(d + "/new.txt", "new")
run("made", ["cat", d + "/new.txt"])
# The home's shadow made again with it: the cache's layer is still over the cache.
probe = sys.argv[3]
run("cache", ["sh", "-c", "echo layered > %s && cat %s" % (probe, probe)])
os.mkdir(d + "/newdir")
write(d + "/newdir/f", "deep")
run("cwd", ["cat", "f"], cwd=d + "/newdir")
write(d + "/late.json", "late " + sys.argv[2])
run("late", ["cat", d + "/late.json"])
# A masked file written again as Node's writers do: the temporary file first, then the rename.
with open(d + "/auth.json.tmp.1.2", "w") as f:
    f.write("temp " + sys.argv[2])
run("temp", ["cat", d + "/auth.json.tmp.1.2"])
os.rename(d + "/auth.json.tmp.1.2", d + "/auth.json")
run("renamed", ["cat", d + "/auth.json"])
os.unlink(d + "/plain.txt")
run("removed", ["cat", d + "/plain.txt"])
"""


def test_mask_dir_changes(tmp):
    """A directory of the home that holds masked files is shown to commands as the session saw
    it last (test_mask_replaced_live): what the agent makes, replaces or removes there during
    the session is what the next command sees, and a masked file made there after the start is
    as masked as one that was there. The files are made in the caller's real home, and removed
    after."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    d = os.path.join(home, ".rd-dir-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    cache = os.path.join(home, ".cache")
    made_cache = not os.path.isdir(cache)
    probe = os.path.join(cache, os.path.basename(d))
    os.makedirs(cache, exist_ok=True)
    os.makedirs(d)
    try:
        with open(os.path.join(d, "plain.txt"), "w") as f:
            f.write("v1")
        with open(os.path.join(d, "auth.json"), "w") as f:
            f.write(CANARY)
        agent = agent_script(tmp, "dir_agent.py", SHADOW_AGENT)

        prof = write_profile(tmp, "md", {"default": "allow", "mask": [
            os.path.join(d, "auth.json"), os.path.join(d, "late.json")]})
        run = subprocess.run(runnerd_cmd(prof, [sys.executable, agent, d, "late-" + CANARY,
                                                probe]),
                             env=base_env(), capture_output=True, text=True, timeout=120)
        got = dict(l.split("=", 1) for l in run.stdout.splitlines() if "=" in l)
        say = run.stdout + run.stderr[-600:]
        check("mask dir: the first command reads the plain file, and the masked one empty",
              got.get("first") == "0[v1]", say)
        check("mask dir: a command runs with the directory as its cwd, and with the home "
              "(the build before: \"the caller's cwd is hidden in the sandbox\")",
              got.get("in_dir") == "0[v1]" and got.get("in_home") == "0[]", say)
        check("mask dir: a file the agent renamed over another is the new one to the next "
              "command", got.get("replaced") == "0[v2]", say)
        check("mask dir: a file the agent made is there for the next command",
              got.get("made") == "0[new]", say)
        check("mask dir: then a command writes the cache through its layer, and the user's "
              "cache is not written", got.get("cache") == "0[layered]"
              and not os.path.exists(probe), say)
        check("mask dir: a directory the agent made is there, as a command's cwd too",
              got.get("cwd") == "0[deep]", say)
        check("mask dir: a masked file made during the session is empty or not there to "
              "commands", got.get("late") in ("0[]", "1[]"), say)
        check("mask dir: the temporary file of a masked file written again is empty or not "
              "there to commands, and so is the file after the rename",
              got.get("temp") in ("0[]", "1[]") and got.get("renamed") == "0[]", say)
        check("mask dir: a file the agent removed is gone for the next command",
              got.get("removed", "").startswith("1["), say)
        check("mask dir: no command read a secret", CANARY not in run.stdout, say)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        if os.path.exists(probe):
            os.unlink(probe)
        if made_cache:
            shutil.rmtree(cache, ignore_errors=True)


def command_reads(prof, reads, first=""):
    """Each (key, shell words) of reads, run by a command of its own (sh -c) under prof, bash
    the agent (which runs first, shell words of its own, before): ({key: what the words
    printed}, the output to show)."""
    script = first + "; ".join("sh -c 'echo %s=$(%s)'" % (k, w) for k, w in reads)
    run = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=base_env(),
                         capture_output=True, text=True, timeout=120)
    return (dict(l.split("=", 1) for l in run.stdout.splitlines() if "=" in l),
            run.stdout + run.stderr[-600:])


def test_mask_dir_full(tmp):
    """A directory of the home that holds a masked file, and 300 symlinks with long targets
    (a dotfiles manager's, a cluster's scratch links): the build before made its shadow a
    tmpfs of 1 MiB, which the symlinks filled, and dropped the shadow without a word, so the
    names its writers use beside the masked file (auth.json.tmp1 here, holding the secret as
    a writer's temporary file does before its rename) were the real ones to commands. The
    shadow is now sized by its entries. Made in the caller's real home, and removed after."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    d = os.path.join(home, ".rd-full-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(d)
    try:
        target = "/" + "/".join(["longlink%03d" % i for i in range(300)])
        for i in range(300):
            os.symlink(target[:3000] + str(i), os.path.join(d, "link%03d" % i))
        with open(os.path.join(d, "auth.json"), "w") as f:
            f.write(CANARY)
        with open(os.path.join(d, "auth.json.tmp1"), "w") as f:
            f.write("temp-" + CANARY)
        prof = write_profile(tmp, "full", {"default": "allow",
                                           "mask": [os.path.join(d, "auth.json")]})
        got, say = command_reads(prof, [("temp", "cat %s/auth.json.tmp1 2>/dev/null" % d),
                                        ("link", "readlink %s/link299 | tail -c 4" % d),
                                        ("auth", "cat %s/auth.json" % d)])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    check("mask dir full: the writer's temporary name beside the masked file is empty to "
          "commands, the masked file too", got.get("temp") == "" and got.get("auth") == "" and
          CANARY not in say, say)
    check("mask dir full: the symlinks are there as they are", got.get("link") == "299", say)


def test_mask_dir_names(tmp):
    """The names hidden beside a masked file in its directory's shadow: those its editors keep
    its text under too (vim's swap file .NAME.swp, Emacs's auto-save #NAME#; the build before
    showed both to commands), and not the names that merely begin with a masked directory's
    (a masked keys/ hid keys-extra/ before: ~/.aws hid ~/.aws-sam, ~/.config/gh hid
    ~/.config/gh-dash). Made in the caller's real home, and removed after."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    d = os.path.join(home, ".rd-names-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(os.path.join(d, "keys"))
    os.makedirs(os.path.join(d, "keys-extra"))
    try:
        for name, text in (("auth.json", CANARY), (".auth.json.swp", "swap-" + CANARY),
                           ("#auth.json#", "autosave-" + CANARY), ("keys/k", CANARY),
                           ("keys-extra/f", "kept"), ("auth.jsonl", "log")):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        prof = write_profile(tmp, "names", {"default": "allow", "mask": [
            os.path.join(d, "auth.json"), os.path.join(d, "keys")]})
        got, say = command_reads(prof, [(k, 'cat "%s/%s" 2>/dev/null' % (d, n)) for k, n in (
            ("swap", ".auth.json.swp"), ("autosave", "#auth.json#"), ("key", "keys/k"),
            ("extra", "keys-extra/f"), ("log", "auth.jsonl"))])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    check("mask dir names: an editor's swap and auto-save files of a masked file are empty to "
          "commands", got.get("swap") == "" and got.get("autosave") == "" and
          got.get("key") == "" and CANARY not in say, say)
    check("mask dir names: a directory beside a masked one whose name begins with its name, "
          "and a file whose name goes on with a letter, are there as they are",
          got.get("extra") == "kept" and got.get("log") == "log", say)


def test_mask_dir_temp(tmp):
    """Files a masked file's writer makes beside it before it renames one over it, under names
    runnerd knew none of: GNU sed -i's sedXXXXXX, mktemp's tmp.XXXXXXXXXX, JetBrains'
    NAME___jb_tmp___, GIO's .goutputstream-XXXXXX, and perl -i's 8 random letters. The agent
    (its shell: umask 077, as mkstemp makes them) writes each with the new secret during the
    session; the build before showed each to commands. Now the names are known, and any file of
    its owner's alone (0600) that a shadow directory gains during the session is shown empty;
    a file open to others (0644) is shown as it is. Made in the caller's real home."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    d = os.path.join(home, ".rd-temp-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(d)
    names = {"sed": "sedAb12Cd", "mktemp": "tmp.AbCdEfGhIj", "jb": "auth.json___jb_tmp___",
             "gio": ".goutputstream-AB12CD", "perl": "XXP4XvdL"}
    try:
        with open(os.path.join(d, "auth.json"), "w") as f:
            f.write(CANARY)
        prof = write_profile(tmp, "temp", {"default": "allow",
                                           "mask": [os.path.join(d, "auth.json")]})
        first = "umask 077; %s; umask 022; printf notes > %s/notes.txt; " % ("; ".join(
            "printf 'new-%s' > '%s/%s'" % (CANARY, d, n) for n in names.values()), d)
        got, say = command_reads(prof, [(k, "cat '%s/%s' 2>/dev/null" % (d, n))
                                        for k, n in names.items()] +
                                 [("notes", "cat %s/notes.txt" % d)], first=first)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    check("mask dir temp: a writer's temporary file beside a masked file is empty to commands, "
          "by name or as a new file of its owner's alone",
          all(got.get(k) == "" for k in names) and CANARY not in say, say)
    check("mask dir temp: a new file open to others is there as it is",
          got.get("notes") == "notes", say)


def test_mask_dir_kinds(tmp):
    """A shadow directory's entries that only look like what its hiding is for: directories
    named as writers' temporary files (a workspace from mkdtemp in the home, tmpk3j4h5g6; a
    TMPDIR ~/.tmpdir) or as a masked file's neighbours (a workspace ~/.env-project beside a
    masked ~/.env), and a file of the owner's alone held from the start and written again
    during the session (git config --global rewrites a 0600 ~/.gitconfig). The build before
    hid each: every command in such a workspace was refused, the TMPDIR read-only, and the
    config read empty. Made in a directory of the caller's real home, masked files in it."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    d = os.path.join(home, ".rd-kinds-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(d)
    dirs = ["tmpk3j4h5g6", ".tmpdir", ".env-project"]
    try:
        for n in dirs:
            os.mkdir(os.path.join(d, n))
        with open(os.path.join(d, ".env"), "w") as f:
            f.write(CANARY)
        conf = os.path.join(d, "tool.conf")
        with open(conf, "w") as f:
            f.write("name=old\n")
        os.chmod(conf, 0o600)
        os.chmod(d, 0o755)
        prof = write_profile(tmp, "kinds", {"default": "allow",
                                            "mask": [os.path.join(d, ".env")],
                                            "write": [os.path.join(d, n) for n in dirs]})
        # The agent (bash, its builtins) writes the config again.
        first = "printf 'name=new\\n' > %s; " % conf
        reads = [("w%d" % i, "cd %s/%s && touch x && ls" % (d, n)) for i, n in enumerate(dirs)]
        got, say = command_reads(prof, reads + [("conf", "cat %s" % conf),
                                                ("env", "cat %s/.env" % d)], first=first)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    check("mask dir kinds: directories named like temporary files or a masked file's "
          "neighbours are there, and writable as the roots they are",
          all(got.get("w%d" % i) == "x" for i in range(len(dirs))), say)
    check("mask dir kinds: a file of the owner's alone, held from the start and written again, "
          "is read as it is now", got.get("conf") == "name=new", say)
    check("mask dir kinds: the masked file is still empty", got.get("env") == "" and
          CANARY not in say, say)


def test_mask_krb5(tmp):
    """Kerberos's default ticket cache, /tmp/krb5cc_UID, is in the shipped masks: a command
    reads it empty. kdestroy (removed) and a new ticket (a new file) stop no later command, as
    a pinned mask's file replaced in its place does not (test_mask_replaced). Run only where the
    user has no ticket there (the test writes one of its own, and removes it)."""
    cache = "/tmp/krb5cc_%d" % os.getuid()
    if os.path.lexists(cache):
        print("n/a  masks: krb5: %s exists (a ticket of the user's): left alone" % cache)
        return
    with open(cache, "w") as f:
        f.write("ticket " + CANARY)
    os.chmod(cache, 0o600)
    agent = ("import os, subprocess, sys\n"
             "c = sys.argv[1]\n"
             "def run(n):\n"
             "    p = subprocess.run(['cat', c], capture_output=True, text=True)\n"
             "    print('%s=%d[%s]' % (n, p.returncode, p.stdout.strip()), flush=True)\n"
             "run('start')\n"
             "os.unlink(c)\n"
             "run('kdestroy')\n"
             "with open(c + '.new', 'w') as f:\n"
             "    f.write('new ' + sys.argv[2])\n"
             "os.rename(c + '.new', c)\n"
             "run('kinit')\n")
    try:
        out = subprocess.run(runnerd_cmd("generic", [common.PY, "-c", agent, cache,
                                                     "new-" + CANARY]),
                             env=base_env(), capture_output=True, text=True, timeout=60)
    finally:
        for p in (cache, cache + ".new"):
            if os.path.lexists(p):
                os.unlink(p)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    say = out.stdout + out.stderr[-500:]
    check("masks: krb5: a command reads the ticket cache empty", got.get("start") == "0[]", say)
    check("masks: krb5: after kdestroy and a new ticket, commands run and read it empty",
          got.get("kdestroy", "").startswith("1[") and got.get("kinit") == "0[]", say)
    check("masks: krb5: no command read a ticket", CANARY not in out.stdout, say)


LAYER_AGENT = r"""import os, subprocess, sys
d, home, cat = sys.argv[1], sys.argv[2], sys.argv[3]
def run(name, argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    print("%s=%d[%s]" % (name, p.returncode, " ".join(p.stdout.split())), flush=True)
    sys.stderr.write(p.stderr)
run("before", ["sh", "-c", "echo a > %s/cache/c1 && cat %s/cache/c1" % (d, d)])
# Something new in the home and in the directory: both shadows made again.
for where in (home, d):
    with open(os.path.join(where, ".rd-new-%d" % os.getpid()), "w") as f:
        f.write("x")
run("after", ["sh", "-c", "echo b > %s/cache/c2 && cat %s/cache/c1 %s/cache/c2" % (d, d, d)])
run("granted", [cat, d + "/cache/user"])
os.unlink(os.path.join(home, ".rd-new-%d" % os.getpid()))
"""


def test_mask_dir_layers(tmp):
    """A cache whose layer lies in a shadow directory inside the home's shadow (~/.cargo, with
    ~/.cargo/credentials.toml masked and ~/.cargo/registry a cache): after both shadows are made
    again, commands still write the cache through its layer, and a granted command, whose
    layers come off, reads the user's cache (646de3b: the layer was gone after the home's
    shadow was made again, EROFS; the granted command found an empty directory). The files are
    made in the caller's real home, and removed after."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    d = os.path.join(home, ".rd-lay-%d-%s" % (os.getpid(), os.urandom(3).hex()))
    os.makedirs(os.path.join(d, "cache"))
    try:
        with open(os.path.join(d, "secret.json"), "w") as f:
            f.write(CANARY)
        with open(os.path.join(d, "cache", "user"), "w") as f:
            f.write("users")
        own, cat, pin = common.pinned_copy(tmp)
        agent = agent_script(tmp, "layer_agent.py", LAYER_AGENT)
        prof = write_profile(tmp, "lay", {
            "default": "allow", "env_allow": [], "protect": [own],
            "cache": [os.path.join(d, "cache")], "mask": [os.path.join(d, "secret.json")],
            "rules": [{"match": {"path": cat}, "action": "allow", "env_allow": ["GH_TOKEN"],
                       "sha256": pin}]}, agent_env_allow=["GH_TOKEN"])
        env = dict(base_env(), GH_TOKEN="ghp_layers_canary")
        run = subprocess.run(runnerd_cmd(prof, [common.PY, agent, d, home, cat]), env=env,
                             capture_output=True, text=True, timeout=120)
        got = dict(l.split("=", 1) for l in run.stdout.splitlines() if "=" in l)
        say = run.stdout + run.stderr[-600:]
        check("mask dir layers: a command writes the cache through its layer",
              got.get("before") == "0[a]", say)
        check("mask dir layers: still, once the shadows are made again",
              got.get("after") == "0[a b]", say)
        check("mask dir layers: a granted command reads the user's cache, not the layer",
              got.get("granted") == "0[users]", say)
        check("mask dir layers: the user's cache was not written",
              sorted(os.listdir(os.path.join(d, "cache"))) == ["user"],
              repr(os.listdir(os.path.join(d, "cache"))))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_mask_symlinks(tmp):
    """A masked path that is a symlink when the session starts is masked where it leads (the
    secret is hidden by either name). A symlink a command plants at a masked path that did
    not exist then covers nothing and stops nothing: before, the next sandbox mounted its mask
    over whatever the link led to (any directory), and a link to itself made every later
    command fail."""
    store = os.path.join(tmp, "store")
    open_dir = os.path.join(tmp, "open")
    os.makedirs(store)
    os.makedirs(open_dir)
    with open(os.path.join(store, "key"), "w") as f:
        f.write(CANARY)
    with open(os.path.join(open_dir, "readme"), "w") as f:
        f.write("not a secret")
    os.symlink(store, os.path.join(tmp, "link"))
    os.chmod(tmp, 0o755)
    for d in (store, open_dir):
        os.chmod(d, 0o755)
    os.chmod(os.path.join(store, "key"), 0o644)
    os.chmod(os.path.join(open_dir, "readme"), 0o644)
    later, loop = os.path.join(tmp, "later"), os.path.join(tmp, "loop")
    prof = write_profile(tmp, "ms", {"default": "allow", "mask": [
        os.path.join(tmp, "link"), later, loop]})
    script = "\n".join([
        "echo \"via-link=[$(cat %s/link/key 2>/dev/null)]\"" % tmp,
        "echo \"direct=[$(cat %s/key 2>/dev/null)]\"" % store,
        "ln -s %s %s && ln -s %s %s && echo planted=yes" % (open_dir, later, loop, loop),
        "echo \"open=[$(cat %s/readme)]\"" % open_dir,
        "echo \"still-runs=$(/bin/echo yes)\"",
    ])
    out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=base_env(),
                         capture_output=True, text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("masks: a masked symlink hides what it leads to, by either name",
          got.get("via-link") == "[]" and got.get("direct") == "[]" and
          CANARY not in out.stdout, out.stdout + out.stderr)
    check("masks: a symlink planted at a masked path covers nothing it leads to",
          got.get("planted") == "yes" and got.get("open") == "[not a secret]",
          out.stdout + out.stderr)
    check("masks: ... and a symlink loop there stops no later command",
          got.get("still-runs") == "yes", out.stdout + out.stderr)


def test_mask_unreadable_dir(tmp):
    """A masked path in a directory that can be searched but not read (~/.gemini of mode 0311):
    inotify cannot watch it, and it was taken as missing, so a secret the agent wrote there
    during the session was in no sandbox's masks, and a command read it (the build before
    this test). The masks' watch is off then, and every exec looks the paths up. Not as root,
    whom no mode keeps from watching."""
    if os.geteuid() == 0:
        print("n/a  masks: an unreadable directory: root watches any directory")
        return
    os.chmod(tmp, 0o755)
    home = os.path.join(tmp, "home")
    gemini = os.path.join(home, ".gemini")
    os.makedirs(gemini)
    secret = os.path.join(gemini, "oauth_creds.json")
    agent = ("import json, subprocess, sys\n"
             "for i in range(4):\n"
             "    subprocess.run(['/bin/true'])\n"
             "with open(sys.argv[1], 'w') as f:\n"
             "    f.write(sys.argv[2])\n"
             "print(json.dumps([subprocess.run(['/bin/cat', sys.argv[1]], capture_output=True,\n"
             "                                 text=True).stdout for i in range(3)]))\n")
    os.chmod(gemini, 0o311)
    try:
        out = subprocess.run(runnerd_cmd("generic", [common.PY, "-c", agent, secret, CANARY]),
                             env=dict(base_env(), HOME=home), capture_output=True, text=True,
                             timeout=60)
    finally:
        os.chmod(gemini, 0o755)
    got = agent_json("masks: an unreadable directory: the agent ran", out.stdout, out.stderr)
    if got is None:
        return
    check("masks: a secret that appears in a directory that cannot be read (mode 0311) is "
          "hidden from every later command", got == ["", "", ""], repr(got))


def test_mask_late_secrets(tmp):
    """Sandboxes are made ahead of time with the usual masks in place. A secret that appears at
    a masked path after that, or a masked path replaced by another file or directory (paths
    that did not exist at the session's start, so not pinned), must still be hidden from the
    next command."""
    os.chmod(tmp, 0o755)
    secret, store = os.path.join(tmp, "auth.json"), os.path.join(tmp, "store")
    agent = common.agent("late_secrets_agent.py")
    prof = write_profile(tmp, "late", {"default": "allow", "mask": [secret, store]})
    out = subprocess.run(runnerd_cmd(prof, [sys.executable, agent, secret, store,
                                CANARY]), env=base_env(), capture_output=True, text=True,
                         timeout=60)
    got = agent_json("masks: late secrets: the agent ran", out.stdout, out.stderr)
    if got is None:
        return
    check("masks: a file that appears at a masked path later reads empty",
          got["file"] == "", repr(got))
    check("masks: a directory that appears at a masked path later is empty",
          got["dir"] == [], repr(got))
    check("masks: a masked file replaced by another (rename over it) reads empty",
          got["file_replaced"] == "", repr(got))
    check("masks: a masked directory moved away and made anew is empty",
          got["dir_replaced"] == [], repr(got))


def test_inherited_dispositions(tmp):
    """Started the way nohup starts it (SIGHUP ignored), runnerd's agent and its commands
    ignore SIGHUP too, as they would without runnerd."""
    agent = ("import signal, subprocess; print(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN, "
             "flush=True); subprocess.run(['grep', '^SigIgn:', '/proc/self/status'])")
    nohup = lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)
    plain = subprocess.run([sys.executable, "-c", agent], env=base_env(), capture_output=True,
                           text=True, timeout=60, preexec_fn=nohup)
    under = subprocess.run(runnerd_cmd("generic", [sys.executable, "-c", agent]),
                           env=base_env(), capture_output=True, text=True, timeout=60,
                           preexec_fn=nohup)
    check("signals: an ignored SIGHUP reaches the agent and its command as without runnerd",
          plain.stdout.startswith("True\nSigIgn:") and under.stdout == plain.stdout,
          "plain %r, runnerd %r %r" % (plain.stdout, under.stdout, under.stderr[-300:]))


def test_runnerd_environ(tmp):
    ready, go = os.path.join(tmp, "ready"), os.path.join(tmp, "go")
    p = subprocess.Popen(runnerd_cmd("claude", ["bash", "-c", "touch %s; while [ ! -e %s ]; "
                                                "do sleep 0.05; done" % (ready, go)]),
                         env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_file(ready)
        with open("/proc/%d/environ" % p.pid, "rb") as f:
            environ = f.read()
        check("runnerd's own /proc/PID/environ holds no canary",
              CANARY.encode() not in environ and b"API_KEY" not in environ,
              repr(environ[:200]))
    finally:
        open(go, "w").close()
        p.wait(timeout=30)


def test_runnerd_killed(tmp):
    agent = common.agent("fault_agent.py")
    py = sys.executable
    p = subprocess.Popen(runnerd_cmd("generic", [py, agent, tmp, RUN]), env=base_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ok = wait_file(os.path.join(tmp, "ready"), 20)
    check("fault: agent started its command", ok)
    time.sleep(0.2)
    helpers = [k for k in children(p.pid) if comm(k).startswith("runnerd")]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    check("fault: runnerd SIGKILLed -> its commands are gone within a second",
          gone_within("sleep\x009871" + RUN, 1.0), "sleep 9871 still running")
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(alive(k) for k in helpers):
        time.sleep(0.02)
    check("fault: runnerd SIGKILLed -> its zygote and reapers are gone within a second",
          helpers and not any(alive(k) for k in helpers),
          repr([(k, comm(k)) for k in helpers]))
    open(os.path.join(tmp, "go"), "w").close()
    wait_file(os.path.join(tmp, "result"), 20)
    try:
        res = open(os.path.join(tmp, "result")).read()
    except OSError:
        res = "(no result)"
    check("fault: runnerd SIGKILLed -> the agent's next exec fails with ENOSYS",
          res == "errno 38", res)


def test_caller_killed(tmp):
    script = (r"import subprocess, os, signal, time, sys;"
              r"p = subprocess.Popen(['sleep', '9872%s']); time.sleep(0.5);" % RUN +
              r"os.kill(p.pid, signal.SIGKILL); print(p.wait()); sys.stdout.flush();"
              r"time.sleep(3)")
    log = os.path.join(tmp, "audit.jsonl")
    cmd = runnerd_cmd("generic", [sys.executable, "-c", script], audit=log)
    p = subprocess.Popen(cmd, env=base_env(), stdout=subprocess.PIPE, text=True)
    first = p.stdout.readline().strip()
    check("fault: the killed caller reports -9", first == "-9", first)
    check("fault: caller SIGKILLed mid-command -> the command is gone within a second",
          gone_within("sleep\x009872" + RUN, 1.0), "sleep 9872 still running")
    p.wait(timeout=30)
    exits = [json.loads(l) for l in open(log) if '"exit"' in l]
    check("fault: the audit says the command was killed because its caller died",
          any(e.get("killed_because") == "its caller died" for e in exits), repr(exits))


def test_agent_exits(tmp):
    log = os.path.join(tmp, "audit.jsonl")
    cmd = runnerd_cmd("generic", ["bash", "-c", "sleep 9873%s & sleep 0.3; exit 5" % RUN],
                      audit=log)
    out = subprocess.run(cmd, env=base_env(), timeout=60)
    check("fault: runnerd exits with the agent's status", out.returncode == 5,
          str(out.returncode))
    check("fault: the agent exits while a command runs -> the command is gone",
          gone_within("sleep\x009873" + RUN, 1.0), "sleep 9873 still running")
    exits = [json.loads(l) for l in open(log) if '"exit"' in l]
    check("fault: the audit says the command was killed because the agent exited",
          any(e.get("killed_because") == "the agent exited" for e in exits), repr(exits))


def test_zygote_killed(tmp):
    """The zygote dies mid-session: what runs goes on, what comes next runs without it."""
    agent = common.agent("zygote_agent.py")
    p = subprocess.Popen(runnerd_cmd("generic", [sys.executable, agent, tmp, RUN]),
                         env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    try:
        ok = wait_file(os.path.join(tmp, "ready"), 20)
        check("zygote: agent started its command", ok)
        time.sleep(0.2)
        zyg = [k for k in children(p.pid) if comm(k) == "runnerd-zygote"]
        check("zygote: runnerd runs one zygote", len(zyg) == 1, repr(zyg))
        if os.geteuid() == 0 and zyg:
            fds = os.listdir("/proc/%d/fd" % zyg[0])
            links = [os.readlink("/proc/%d/fd/%s" % (zyg[0], fd)) for fd in fds]
            # Besides its socket, directories of the home that it holds as its own
            # (docs/architecture.md, shadows): each beneath its shadow, the shadow, and the
            # caches as they are beneath their layers (detached copies). Told by what they are.
            home = pwd.getpwuid(os.getuid()).pw_dir
            dirs = set()
            for top, subs, _ in os.walk(home):
                dirs.add((os.stat(top).st_dev, os.stat(top).st_ino))
                if top.count("/") - home.count("/") >= 3:
                    subs[:] = []
            others = []
            for fd, l in zip(fds, links):
                try:
                    st = os.stat("/proc/%d/fd/%s" % (zyg[0], fd))
                except OSError:
                    st = None
                if not l.startswith("socket:") and not (
                        st and stat.S_ISDIR(st.st_mode) and ((st.st_dev, st.st_ino) in dirs or
                                                             l == home or
                                                             l.startswith(home + "/"))):
                    others.append(l)
            check("zygote: it holds no fd but its socket and the home's directories of masked "
                  "files and caches", not others
                  and sum(l.startswith("socket:") for l in links) == 1, repr(links))
            with open("/proc/%d/environ" % zyg[0], "rb") as f:
                check("zygote: its environment is empty", f.read() == b"")
        if zyg:
            os.kill(zyg[0], signal.SIGKILL)
        time.sleep(0.2)
        open(os.path.join(tmp, "go"), "w").close()
        wait_file(os.path.join(tmp, "result"), 20)
        try:
            res = open(os.path.join(tmp, "result")).read()
        except OSError:
            res = "(no result)"
        check("zygote: SIGKILLed -> later commands still run, with an empty bounding set, "
              "and the one running goes on",
              res == "ran 7 ran 7 ran 7 capbnd=0000000000000000 running", res)
    finally:
        open(os.path.join(tmp, "go"), "w").close()
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
    check("zygote: runnerd says once that it forks the sandboxes itself",
          err.count("the zygote process is gone") == 1, repr(err))
    check("zygote: SIGKILLed -> nothing is left once the agent exits",
          gone_within("sleep\x009876" + RUN, 1.0), "sleep 9876 still running")


# A stand-in agent that runs each argument with sh -c, one at a time, a pause between them that
# is no command itself.
ONE_AT_A_TIME = ("import subprocess, sys, time\n"
                 "for c in sys.argv[1:]:\n"
                 "    subprocess.run(['sh', '-c', c]); time.sleep(0.3)\n")


def test_reuse_guards(tmp):
    """A sandbox that ran a command before is one a process of another sandbox could watch
    through an fd it got then (the /proc of its pid namespace: the next command's environ,
    cmdline and fds): a command a rule grants a secret never runs in one, and a sandbox whose
    command ran beside another sandbox takes no other command."""
    os.chmod(tmp, 0o755)
    token = "ghp_reuse_" + os.urandom(6).hex()
    sh = os.path.realpath(shutil.which("sh"))
    rule = {"match": {"path": sh, "args": ["-c", ": granted*"]}, "action": "allow",
            "env_allow": ["GH_TOKEN"]}
    if os.geteuid() == 0:  # root: every file is the user's to replace, so a pin
        rule["sha256"] = hashlib.sha256(open(sh, "rb").read()).hexdigest()
    prof = write_profile(tmp, "reuse", {"default": "allow", "env_allow": [], "rules": [rule]},
                         agent_env_allow=["GH_TOKEN"])
    who = "$(readlink /proc/self/ns/pid) $$"
    seq = ["true", "echo w1 %s" % who, "echo w2 %s" % who, "echo w3 %s" % who,
           ": granted; echo g %s ${GH_TOKEN:+token}" % who,
           "sleep 3 >/dev/null 2>&1 & echo bg %s" % who,
           "echo a %s" % who, "echo b %s" % who, "echo c %s" % who]
    agent = ONE_AT_A_TIME
    out = subprocess.run(runnerd_cmd(prof, [common.PY, "-c", agent] + seq),
                         env=dict(base_env(), GH_TOKEN=token), capture_output=True, text=True,
                         timeout=60)
    got = {f[0]: f[1:] for f in (l.split() for l in out.stdout.splitlines()) if len(f) >= 3}
    ok = all(k in got for k in ("w1", "w2", "w3", "g", "bg", "a", "b", "c"))
    check("reuse guards: every command ran", ok, out.stdout + out.stderr)
    if not ok:
        return
    check("reuse guards: sandboxes are taken again (a later pid in a pid namespace seen before)",
          any(got[k][1] != "2" for k in ("w2", "w3")), repr(got))
    check("reuse guards: the granted command has its secret, in a sandbox no command has been "
          "in (its shell is pid 2)", got["g"][1:] == ["2", "token"], repr(got))

    def after(first, later):
        return [k for k in later if got[k][0] == got[first][0] and
                int(got[k][1]) > int(got[first][1])]
    check("reuse guards: a sandbox whose command ran beside another takes no other command",
          not after("a", ["b", "c"]) and not after("b", ["c"]), repr(got))


def test_reuse_after_grant(tmp):
    """The sandbox of a command a rule granted a secret takes no other command: its pid 1 keeps
    what the command cost it (its children's CPU time and faults in /proc/1/stat) and the pid
    namespace how many processes it made. Before, the next command there read both."""
    os.chmod(tmp, 0o755)
    sh = os.path.realpath(shutil.which("sh"))
    rule = {"match": {"path": sh, "args": ["-c", ": granted*"]}, "action": "allow",
            "env_allow": ["GH_TOKEN"]}
    if os.geteuid() == 0:  # root: every file is the user's to replace, so a pin
        rule["sha256"] = hashlib.sha256(open(sh, "rb").read()).hexdigest()
    prof = write_profile(tmp, "reuse-grant", {"default": "allow", "env_allow": [],
                                              "rules": [rule]}, agent_env_allow=["GH_TOKEN"])
    # A sandbox is told by its pid namespace and its pid 1's start time (the kernel gives a
    # freed namespace's inode number to the next).
    who = "$(readlink /proc/self/ns/pid)-$(cut -d' ' -f22 /proc/1/stat) $$"
    # Two commands that leave a process behind (their sandboxes end), so that the granted
    # command's comes back to a free place among the spares.
    seq = ["true", "echo a %s" % who, "echo b %s; sleep 0.1 &" % who,
           "echo b2 %s; sleep 0.1 &" % who,
           ": granted; echo g %s ${GH_TOKEN:+token}; i=0; while [ $i -lt 20 ]; do /bin/true; "
           "i=$((i+1)); done" % who]
    seq += ["echo h%d %s" % (i, who) for i in range(1, 5)]
    agent = ONE_AT_A_TIME
    out = subprocess.run(runnerd_cmd(prof, [common.PY, "-c", agent] + seq),
                         env=dict(base_env(), GH_TOKEN="ghp_" + os.urandom(6).hex()),
                         capture_output=True, text=True, timeout=60)
    got = {f[0]: f[1:] for f in (l.split() for l in out.stdout.splitlines()) if len(f) >= 3}
    later = ["h%d" % i for i in range(1, 5)]
    ok = all(k in got for k in ["g"] + later) and got["g"][2:] == ["token"]
    check("reuse after a grant: every command ran, the granted one with its secret", ok,
          out.stdout + out.stderr)
    if ok:
        check("reuse after a grant: no later command runs in the granted command's sandbox",
              not [k for k in later if got[k][0] == got["g"][0]], repr(got))


def test_reuse_signal_owner(tmp):
    """A command that arms F_SETOWN with pid 1's process group and O_ASYNC on an fd it shares
    with its caller (the agent's stdout pipe) has the kernel signal that group, with the signal
    it chose, on every read of the pipe, after its own end too. Later commands in its sandbox
    are in a group of their own: before, they were in pid 1's, and each was killed by SIGKILL
    as the agent's reader read its first line."""
    arm = ("import fcntl, os\n"
           "fcntl.fcntl(1, fcntl.F_SETOWN, -1)\n"
           "fcntl.fcntl(1, 10, 9)  # F_SETSIG: SIGKILL\n"
           "fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_ASYNC)\n")
    # A sandbox is told by its pid namespace and its pid 1's start time (the kernel gives a
    # freed namespace's inode number to the next).
    who = "$(readlink /proc/self/ns/pid)-$(cut -d' ' -f22 /proc/1/stat) $$"
    seq = ["true", "echo x %s" % who,
           "echo armed %s >&2; exec %s -c '%s'" % (who, common.PY, arm)]
    seq += ["echo c%d %s; sleep 0.3; echo c%d-end - -" % (i, who, i) for i in range(1, 5)]
    agent = ("import subprocess, sys, time\n"
             "for c in sys.argv[1:]:\n"
             "    r = subprocess.run(['sh', '-c', c])\n"
             "    print('status %d' % r.returncode, flush=True); time.sleep(0.3)\n")
    out = subprocess.run(runnerd_cmd("generic", [common.PY, "-c", agent] + seq),
                         env=base_env(), capture_output=True, text=True, timeout=60)
    lines = [l.split() for l in (out.stdout + out.stderr).splitlines()]
    got = {f[0]: f[1:] for f in lines if len(f) == 3}
    ok = "armed" in got and all("c%d" % i in got for i in range(1, 5))
    check("reuse, signal owner: every command ran", ok, out.stdout + out.stderr)
    if not ok:
        return
    reused = [k for k in ("c1", "c2", "c3", "c4") if got[k][0] == got["armed"][0] and
              int(got[k][1]) > int(got["armed"][1])]
    check("reuse, signal owner: a later command runs in the sandbox of the one that armed it",
          reused != [], repr(got))
    statuses = [f[1] for f in lines if f and f[0] == "status"]
    check("reuse, signal owner: no later command is signalled through it (each ends, status 0)",
          all("c%d-end" % i in got for i in range(1, 5)) and statuses == ["0"] * 7,
          out.stdout + out.stderr)


def test_mask_agent_home(tmp):
    """The agent's HOME is not its user's home in the password database (a container's ENV
    HOME, a CI's): the "~/" masks cover the store under HOME too (before, a command read
    $HOME/.aws/credentials while ~/.aws of the passwd home was masked)."""
    home = os.path.join(tmp, "agent-home")
    os.makedirs(os.path.join(home, ".aws"))
    with open(os.path.join(home, ".aws", "credentials"), "w") as f:
        f.write(CANARY + "\n")
    os.chmod(tmp, 0o755)
    os.chmod(home, 0o755)
    env = dict(base_env(), HOME=home)
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c",
                                                 "cat \"$HOME/.aws/credentials\" 2>&1; true"]),
                         env=env, capture_output=True, text=True, timeout=60)
    check("masks: ~/.aws under the agent's HOME, not its passwd home, is masked too",
          out.returncode == 0 and CANARY not in out.stdout and
          "No such file or directory" in out.stdout, out.stdout + out.stderr)


def test_reused_sandbox(tmp):
    """A sandbox whose command ended alone takes a later command (its pid 1 stays): nothing the
    first command left may reach the next. Its System V IPC is gone (a new IPC namespace), and
    a pid 1 whose limits it lowered (prlimit, allowed to a process of the same uid) is not
    used again (before this check, the next command in it ran with nofile 64). A sandbox is
    told by its pid namespace and the pids in it: a new one starts again at pid 2 (the
    kernel gives a freed namespace's inode number to the next)."""
    # A sandbox is told by its pid namespace and its pid 1's start time (the kernel gives a
    # freed namespace's inode number to the next).
    who = "$(readlink /proc/self/ns/pid)-$(cut -d' ' -f22 /proc/1/stat) $$"
    seq = ["true",  # the session's first spare is made before runnerd knows the caller's home
           "ipcmk -M 4096 >/dev/null; echo ipc1 %s $(wc -l < /proc/sysvipc/shm)" % who]
    seq += ["echo ipc%d %s $(wc -l < /proc/sysvipc/shm)" % (i, who) for i in (2, 3, 4, 5)]
    seq += ["prlimit --pid 1 --nofile=64:64 && echo lim1 %s $(ulimit -n)" % who]
    seq += ["echo lim%d %s $(ulimit -n)" % (i, who) for i in (2, 3, 4, 5)]
    # Python: a pause between commands that is no command itself.
    agent = ("import subprocess, sys, time\n"
             "for c in sys.argv[1:]:\n"
             "    subprocess.run(['sh', '-c', c]); time.sleep(0.3)\n"
             "subprocess.run(['sh', '-c', 'echo agent - - $(ulimit -n)'])\n")
    out = subprocess.run(runnerd_cmd("generic", [common.PY, "-c", agent] + seq),
                         env=base_env(), capture_output=True, text=True, timeout=60)
    got = {f[0]: (f[1], f[2], f[3]) for f in (l.split() for l in out.stdout.splitlines())
           if len(f) == 4}
    ok = len(got) == 11
    check("reuse: every command ran", ok, out.stdout + out.stderr)
    if not ok:
        return

    def after(first, later):
        return [k for k in later if got[k][0] == got[first][0] and
                int(got[k][1]) > int(got[first][1])]
    ipc = ["ipc%d" % i for i in (2, 3, 4, 5)]
    lim = ["lim%d" % i for i in (2, 3, 4, 5)]
    check("reuse: a later command runs in the sandbox of one that ended alone",
          after("ipc1", ipc) != [], repr(got))
    check("reuse: the first command's System V shared memory is there for it alone",
          got["ipc1"][2] == "2" and all(got[k][2] == "1" for k in ipc), repr(got))
    check("reuse: a sandbox whose pid 1 had its limits changed takes no other command",
          after("lim1", lim) == [], repr(got))
    check("reuse: every later command has the caller's limits",
          all(got[k][2] == got["agent"][2] for k in lim), repr(got))


def test_reuse_back_to_back(tmp):
    """Commands that come back to back, as from make or a test runner, take the sandboxes their
    predecessors ended in. The caller's next exec can reach runnerd before the end of the
    command before it (the reaper tells the stub itself): that command counted as running
    beside the next, both sandboxes were destroyed, and on one CPU the zygote cloned a new
    sandbox for nearly every command (29 of 30 here before). Run on one CPU, where the end
    comes last most often."""
    who = "echo $(readlink /proc/self/ns/pid)-$(cut -d' ' -f22 /proc/1/stat)"
    agent = ("import subprocess, sys\n"
             "for i in range(30):\n"
             "    subprocess.run(['sh', '-c', sys.argv[1]])\n")
    cpu = min(os.sched_getaffinity(0))
    out = subprocess.run(runnerd_cmd("generic", [common.PY, "-c", agent, who]), env=base_env(),
                         capture_output=True, text=True, timeout=60,
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    boxes = out.stdout.split()
    check("reuse back to back: every command ran", len(boxes) == 30, out.stdout + out.stderr)
    check("reuse back to back: 30 commands on one CPU ran in at most 4 sandboxes",
          len(set(boxes)) <= 4, "%d sandboxes: %r" % (len(set(boxes)), boxes))


def test_reuse_pipelines(tmp):
    """Commands that run beside each other, short ones: a pipeline of two, six at once. The end
    of a command whose exec runnerd had not seen through yet (the next exec came first) was
    read for the next one's start, its sandbox was destroyed with the pipe that tells its
    exec, and its caller waited in its execve for ever (1 to 9 pipelines in, the build
    before this test)."""
    script = ("for i in $(seq 40); do /bin/true | /bin/true; done; "
              "for r in 1 2 3; do for k in 1 2 3 4 5 6; do /bin/true & done; wait; done; "
              "echo done")
    try:
        out = subprocess.run(runnerd_cmd("generic", ["bash", "-c", script]), env=base_env(),
                             capture_output=True, text=True, timeout=90)
        got = (out.returncode, out.stdout.strip(), out.stderr[-300:])
    except subprocess.TimeoutExpired as e:
        got = ("timed out after 90 s", e.stdout, e.stderr)
    check("reuse pipelines: 40 pipelines of two and 18 commands six at once all end",
          got[0] == 0 and got[1] == "done", repr(got))


def main():
    common.require_runnerd()
    # A crash of a test is a failure, never a pass.
    tests = (test_canaries, test_secret_values, test_grants, test_grant_repos, test_grant_repo_made,
             test_grant_git_config, test_grant_git_race, test_grant_git_helpers,
             test_grant_git_state, test_grant_git_late_repo, test_grant_git_hooks, test_grant_git_worktree,
             test_grant_git_missing_config, test_runnerd_git, test_grant_git_global_link,
             test_grant_git_include, test_grant_git_submodule, test_grant_git_lazy_fetch, test_grant_git_hook_link, test_grant_git_exec_path, test_grant_git_python_filter, test_grant_git_locale, test_grant_gh_proxy, test_grant_other_git_prefixes, test_grant_other_git_env, test_grant_path_link, test_grant_no_sh, test_grant_git_pull_rebase,
             test_grant_other_git,
             test_agent_relaunch_env,
             test_agent_programs,
             test_agent_files_in_rule_roots, test_audit_log, test_audit_bound, test_rules, test_masks, test_seccomp, test_tiocsti,
             test_deputies, test_exec_race, test_fd_swap, test_proc_dotdot, test_mask_moved,
             test_mask_symlinks, test_mask_replaced, test_mask_replaced_live,
             test_mask_dir_changes, test_mask_dir_layers, test_mask_dir_full, test_mask_dir_names,
             test_mask_dir_temp, test_mask_dir_kinds, test_mask_made_later, test_mask_dir_remade,
             test_mask_shadow_gone, test_mask_links,
             test_mask_krb5,
             test_sessions_side_by_side, test_sessions_side_by_side_more,
             test_sessions_list_unreadable, test_sessions_apart, test_sessions_ended_moved, test_sessions_folded, test_sessions_start_held,
             test_mask_unreadable_dir, test_mask_late_secrets, test_mask_setup_race, test_network_timeout, test_rlimits,
             test_cmdline, test_inherited_dispositions, test_runnerd_environ,
             test_runnerd_killed, test_caller_killed, test_agent_exits, test_zygote_killed,
             test_reused_sandbox, test_reuse_back_to_back, test_reuse_pipelines, test_mask_agent_home, test_reuse_guards,
             test_reuse_signal_owner, test_reuse_after_grant)
    return common.run_tests(tests, "rd-sec-", enter=True)


if __name__ == "__main__":
    sys.exit(main())
