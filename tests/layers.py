#!/usr/bin/env python3
"""The layering of the source tree, checked: each top-level folder is a layer, and a file may
include headers of its own layer or of a lower one, never of a higher one; and no header
includes itself through others (no include cycle, between files of any folders).

    lib -> policy -> intercept -> sandbox -> supervisor -> runnerd

(lowest first), and within supervisor/ its files in the order SUPERVISOR below. Headers are named from the top of the tree: #include "policy/rules.h". A
quoted include that names no file of the tree is an error too, so that a header cannot slip
past the check by a relative name.

Usage: layers.py SOURCE_DIR. Prints every violation; exit 1 if there is one, else 0.
"""
import os
import re
import sys

LAYERS = ["lib", "policy", "intercept", "sandbox", "supervisor", "runnerd"]
# Within the supervisor, the same rule between its files: the core's services at the bottom,
# each handler above those it calls, the loop that dispatches to them all on top. A handler
# never calls back up (supervisor/core.h).
SUPERVISOR = ["audit", "supervisor", "core", "masks", "sessions", "grant", "spare", "command", "approvals", "handoff",
              "exec", "control", "prompt", "loop"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    rank = {name: i for i, name in enumerate(LAYERS)}
    files = []
    for layer in LAYERS:
        for root, _, names in os.walk(os.path.join(src, layer)):
            files += [os.path.relpath(os.path.join(root, n), src) for n in names
                      if n.endswith((".c", ".h"))]
    graph = {}
    bad = []
    for f in sorted(files):
        with open(os.path.join(src, f)) as fh:
            incs = INCLUDE.findall(fh.read())
        graph[f] = []
        for inc in incs:
            if not os.path.isfile(os.path.join(src, inc)):
                bad.append('%s: #include "%s" names no file from the top of the tree' % (f, inc))
                continue
            top = inc.split("/")[0]
            if top not in rank:
                bad.append('%s: #include "%s" is outside the layers' % (f, inc))
                continue
            if rank[top] > rank[f.split("/")[0]]:
                bad.append('%s: #include "%s": %s is above %s' % (f, inc, top, f.split("/")[0]))
            elif top == "supervisor" and f.startswith("supervisor/"):
                mine, theirs = (os.path.splitext(os.path.basename(p))[0] for p in (f, inc))
                if mine not in SUPERVISOR or theirs not in SUPERVISOR:
                    bad.append("%s: not in the supervisor's order (tests/layers.py)" %
                               (f if mine not in SUPERVISOR else inc))
                elif SUPERVISOR.index(theirs) > SUPERVISOR.index(mine):
                    bad.append('%s: #include "%s": %s is above %s in the supervisor' %
                               (f, inc, theirs, mine))
            graph[f].append(inc)
    # Cycles: a depth-first walk that finds a header on its own path.
    state = {}

    def walk(node, path):
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                bad.append("include cycle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                walk(nxt, path + [nxt])
        state[node] = 2

    for f in sorted(graph):
        if f not in state:
            walk(f, [f])
    for b in bad:
        print(b)
    n_inc = sum(len(v) for v in graph.values())
    print("layers: %d files, %d includes of the tree, %d problems" % (len(graph), n_inc, len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
