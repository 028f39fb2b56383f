#!/usr/bin/env python3
"""CPython's own test_subprocess, run as the agent under runnerd with a permissive profile:
every test that passes without runnerd must pass with it. Runs the suite plainly and under
runnerd with -v, compares the outcome of each test, prints the counts of both runs.

Environment: RUNNERD, RUNNERD_CONFIG (the integration config), RUNNERD_MUST_WORK. The Python
used is the first of $CPYTHON, /usr/bin/python3, python3 on PATH that has the test package
(Debian: libpython3.11-testsuite)."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402

LINE = re.compile(r"^(test_\w+) \(([\w.]+)\)(?: \.\.\.|\n)? ?(ok|FAIL|ERROR|skipped|expected failure)",
                  re.M)


def find_python():
    for cand in (os.environ.get("CPYTHON"), "/usr/bin/python3", shutil.which("python3")):
        if cand and subprocess.run([cand, "-c", "import test.test_subprocess"],
                                   capture_output=True).returncode == 0:
            return cand
    return None


def outcomes(text):
    res = {}
    for name, cls, what in LINE.findall(text):
        res["%s.%s" % (cls, name)] = what
    return res


def totals(text):
    m = re.search(r"Total tests: (.*)", text) or re.search(r"Tests result: (.*)", text)
    return m.group(1).strip() if m else "(no result line)"


def main():
    common.require_runnerd()
    py = find_python()
    if not py:
        common.skip("no Python with the test package (apt-get install libpython3.11-testsuite)")
    argv = [py, "-m", "test", "-v", "test_subprocess"]
    env = common.base_env(runtime_dir=False)
    plain = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900,
                           cwd="/tmp")
    under = subprocess.run(common.runnerd_cmd("open", argv, config=common.itest_config()),
                           env=env, capture_output=True, text=True, timeout=900, cwd="/tmp")
    p, u = outcomes(plain.stdout + plain.stderr), outcomes(under.stdout + under.stderr)
    print("%s: test_subprocess plain:   %s" % (py, totals(plain.stdout + plain.stderr)))
    print("%s: test_subprocess runnerd: %s" % (py, totals(under.stdout + under.stderr)))
    lost = sorted(t for t, what in p.items() if what == "ok" and u.get(t) != "ok")
    for t in lost:
        print("FAIL %s: ok without runnerd, %s with it" % (t, u.get(t, "missing")))
    def bad(text):
        """failures + errors from the totals line; None where this Python prints none."""
        m = re.search(r"Total tests: .*", text)
        return sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", m.group(0))) \
            if m else None
    bp, bu = bad(plain.stdout + plain.stderr), bad(under.stdout + under.stderr)
    more = bp is not None and (bu is None or bu > bp)
    if more:
        print("FAIL: more failures or errors under runnerd than without it")
    ok = len(p) > 200 and not lost and not more
    if len(p) <= 200:
        print("FAIL: could not read the plain run's per-test results (%d found)" % len(p))
    passed_plain = sum(1 for w in p.values() if w == "ok")
    status = common.summary(passed_plain - len(lost), len(lost) + more)
    sys.exit(status if ok else 1)


if __name__ == "__main__":
    main()
