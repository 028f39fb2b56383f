#!/usr/bin/env python3
"""runnerd integration tests: run each case of cases.py plainly and under runnerd, and check that
the caller observes the same thing both times (exit status, stdout, stderr as the case says).

Usage: harness.py [-k SUBSTRING] [--plain-only] [--self-check]

  -k SUBSTRING   only the cases whose name contains SUBSTRING (may be given more than once)
  --plain-only   run only the plain side: checks each case's own expectations, without runnerd
  --self-check   run each case plainly twice and compare the two runs (determinism of the cases)

Environment:
  RUNNERD           the runnerd binary (required unless --plain-only or --self-check)
  RUNNERD_CONFIG    runner.json to use (default: config/runner.json beside this file)
  RUNNERD_PROFILE   profile name (default: permissive)
  HELPERS           directory of the compiled C helpers (default: build/tests/integration/helpers
                    of the source tree, when it exists)
  RUNNERD_MUST_WORK 1: a skip is a failure

Prints "ok NAME", "FAIL NAME" (with a diff) or "SKIP NAME: reason" per case, then one line
"N passed, M failed[, K skipped]". Exits 0 if all passed, 1 if any failed, 77 if everything
was skipped (1 instead under RUNNERD_MUST_WORK=1). Python 3 standard library only.
"""
import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cases as case_table  # noqa: E402
import common  # noqa: E402

FIXED_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
DIFF_LINES = 40
LINE_WIDTH = 200


def find_helpers():
    helpers = os.environ.get("HELPERS")
    if helpers:
        return os.path.abspath(helpers)
    guess = os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "tests", "integration",
                         "helpers")
    return guess if os.path.isdir(guess) else None


class Run:
    """What the caller's caller observed: status, stdout, stderr, or a timeout."""

    def __init__(self, status, stdout, stderr, timed_out=False, seconds=0.0, error=None):
        self.status, self.stdout, self.stderr = status, stdout, stderr
        self.timed_out, self.seconds, self.error = timed_out, seconds, error

    def describe_status(self):
        if self.error:
            return "could not start: %s" % self.error
        if self.timed_out:
            return "timed out"
        if self.status < 0:
            try:
                return "killed by %s (%d)" % (signal.Signals(-self.status).name, self.status)
            except ValueError:
                return "killed by signal %d" % -self.status
        return "exit %d" % self.status


def run_once(argv, env, cwd, stdin, timeout):
    """Runs argv in its own session (so that a timeout can kill everything it started) and
    returns what came out."""
    start = time.monotonic()
    try:
        p = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        return Run(None, b"", b"", error=str(e))
    try:
        out, err = p.communicate(stdin, timeout=timeout)
        return Run(p.returncode, out, err, seconds=time.monotonic() - start)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            out, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            # Something outside the group still holds the pipes.
            p.kill()
            out, err = b"", b""
        return Run(p.returncode, out or b"", err or b"", timed_out=True,
                   seconds=time.monotonic() - start)


class Runner:
    def __init__(self, args):
        self.args = args
        self.helpers = find_helpers()
        # Absolute paths: the cases run in a directory of their own (common.RUNNERD is one).
        self.config = common.itest_config()
        self.profile = os.environ.get("RUNNERD_PROFILE") or "permissive"
        if "/" in self.profile:  # a path to a profile file, not a name
            self.profile = os.path.abspath(self.profile)
        self.base_env = common.base_env(path=FIXED_PATH, runtime_dir=False)

    # --- preparing a case ----------------------------------------------------------------

    def substitute(self, word):
        word = word.replace("@SRC@", HERE).replace("@PY@", sys.executable)
        if "@HELPERS@" in word:
            word = word.replace("@HELPERS@", self.helpers or "/nonexistent-HELPERS")
        return word

    def missing(self, c):
        """Why the case cannot run here, or None."""
        helpers = set()
        for word in c["argv"]:
            helpers.update(re.findall(r"@HELPERS@/([\w.-]+)", word))
        for need in c["needs"]:
            if need in ("node", "dash", "bash"):
                if not shutil.which(need, path=FIXED_PATH):
                    return "%s is not installed" % need
            elif need == "busybox":
                if not os.access("/bin/busybox", os.X_OK):
                    return "/bin/busybox is not installed"
            elif need.startswith("helper:"):
                helpers.add(need[len("helper:"):])
            else:
                return "unknown prerequisite %r" % need
        prog = c["argv"][0]
        if "@" not in prog and not shutil.which(prog, path=FIXED_PATH):
            return "%s is not installed" % prog
        for name in sorted(helpers):
            if not self.helpers:
                return "HELPERS is not set (build the helpers with cmake)"
            path = os.path.join(self.helpers, name)
            if not os.access(path, os.X_OK):
                return "helper %s is not built" % path
        return None

    def normalize(self, c, stream, data, work):
        text = data.decode("utf-8", errors="backslashreplace")
        text = text.replace(work, "<WORK>")
        text = re.sub(r"/tmp/rd-itest-[a-z]+\.[A-Za-z0-9_]+", "<TMP>", text)
        if c["normalize"]:
            text = c["normalize"](stream, text)
        return text

    def observe(self, c, run, work):
        """The values the case compares, as text."""
        return {
            "status": run.describe_status() + "\n",
            "stdout": self.normalize(c, "stdout", run.stdout, work),
            "stderr": self.normalize(c, "stderr", run.stderr, work),
        }

    def run_side(self, c, argv, work):
        # The same empty directory, at the same path, for each side.
        shutil.rmtree(work, ignore_errors=True)
        os.mkdir(work)
        env = dict(self.base_env)
        env.update(c["env"])
        timeout = c["timeout"] or 60
        return run_once(argv, env, work, c["stdin"], timeout)

    # --- checking ------------------------------------------------------------------------

    def check_expect(self, c, run, seen):
        """Problems with the plain run itself, against the case's expectations."""
        problems = []
        if run.error:
            return ["plain run could not start: %s" % run.error]
        if run.timed_out:
            problems.append("plain run timed out after %.0fs" % run.seconds)
        for key, want in c["expect"].items():
            if key == "status":
                if run.timed_out or run.status != want:
                    problems.append("status: want %s, got %s" % (want, run.describe_status()))
            elif key in ("stdout", "stderr"):
                if seen[key] != want:
                    problems.append("%s differs from the expected:\n%s" % (
                        key, diff_text(want, seen[key], "expected", "plain")))
            elif key in ("stdout_has", "stderr_has"):
                stream = key.split("_")[0]
                lacking = [piece for piece in want if piece not in seen[stream]]
                if lacking:
                    problems.append("%s lacks %s; it is:\n%s" % (
                        stream, ", ".join(repr(p) for p in lacking), trim(seen[stream])))
            else:
                problems.append("unknown expectation %r" % key)
        return problems

    def compare(self, c, a, b, a_name, b_name, seen_a, seen_b):
        problems = []
        if a.timed_out or b.timed_out:
            for name, r in ((a_name, a), (b_name, b)):
                if r.timed_out:
                    problems.append("%s run timed out after %.0fs" % (name, r.seconds))
        for key in c["compare"]:
            if seen_a[key] != seen_b[key]:
                problems.append("%s differs:\n%s" % (key, diff_text(seen_a[key], seen_b[key],
                                                                   a_name, b_name)))
        return problems

    def run_case(self, c):
        """Returns (verdict, lines): verdict is "ok", "FAIL" or "SKIP"."""
        why = self.missing(c)
        if why:
            return "SKIP", [why]
        argv = [self.substitute(w) for w in c["argv"]]
        work = tempfile.mkdtemp(prefix="rd-itest-work-")
        try:
            plain = self.run_side(c, argv, work)
            seen_plain = self.observe(c, plain, work)
            problems = self.check_expect(c, plain, seen_plain)
            if self.args.plain_only:
                pass
            elif self.args.self_check:
                again = self.run_side(c, argv, work)
                problems += self.compare(c, plain, again, "plain", "plain-again", seen_plain,
                                         self.observe(c, again, work))
            else:
                rd_argv = common.runnerd_cmd(self.profile, argv, config=self.config)
                under = self.run_side(c, rd_argv, work)
                problems += self.compare(c, plain, under, "plain", "runnerd", seen_plain,
                                         self.observe(c, under, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return ("FAIL", problems) if problems else ("ok", [])


def trim(text):
    lines = text.splitlines()
    out = [l[:LINE_WIDTH] + ("..." if len(l) > LINE_WIDTH else "") for l in lines[:DIFF_LINES]]
    if len(lines) > DIFF_LINES:
        out.append("... (%d more lines)" % (len(lines) - DIFF_LINES))
    return "\n".join("    " + l for l in out)


def diff_text(a, b, a_name, b_name):
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), a_name, b_name, lineterm="", n=2)
    return trim("\n".join(diff))


def main():
    ap = argparse.ArgumentParser(description="runnerd integration tests")
    ap.add_argument("-k", action="append", default=[], metavar="SUBSTRING",
                    help="only cases whose name contains SUBSTRING")
    ap.add_argument("--plain-only", action="store_true",
                    help="run only the plain side (validates the cases without runnerd)")
    ap.add_argument("--self-check", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    runner = Runner(args)

    selected = [c for c in case_table.CASES if not args.k or any(k in c["name"] for k in args.k)]
    names = [c["name"] for c in case_table.CASES]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        print("FAIL cases: duplicate names: " + " ".join(dups))
        return 1
    if not selected:
        print("no case matches " + " ".join(repr(k) for k in args.k))
        common.summary(0, 0)
        return 1

    with_runnerd = not (args.plain_only or args.self_check)
    why = with_runnerd and common.runnerd_missing()
    if why:
        print("SKIP all: %s" % why)
        if common.MUST_WORK:
            return common.summary(0, len(selected))
        return common.summary(0, 0, len(selected))

    passed = failed = skipped = 0
    start = time.monotonic()
    for c in selected:
        verdict, lines = runner.run_case(c)
        if verdict == "SKIP":
            if common.MUST_WORK:
                print("FAIL %s: skipped (%s), and RUNNERD_MUST_WORK=1" % (c["name"], lines[0]))
                failed += 1
            else:
                print("SKIP %s: %s" % (c["name"], lines[0]))
                skipped += 1
        elif verdict == "ok":
            print("ok " + c["name"])
            passed += 1
        else:
            print("FAIL " + c["name"])
            for line in lines:
                print("  " + line.replace("\n", "\n  "))
            failed += 1
        sys.stdout.flush()
    status = common.summary(passed, failed, skipped)
    if os.environ.get("RD_ITEST_TIMING"):
        print("took %.1fs" % (time.monotonic() - start), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
