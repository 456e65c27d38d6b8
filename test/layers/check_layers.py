#!/usr/bin/python3
"""test/layers/check_layers.py - the layering check (`make check-layers`).

Reads the allowed arrows between folders from docs/architecture.md (the
fenced block that starts with the line "layers"), then refuses:
  1. a quoted #include of one product folder by another that the page does
     not allow (read from the sources);
  2. a circle of more than two files inside a folder named on the page's
     "no-circles:" line, where file A depends on file B when A's object
     uses a symbol that B's object defines (read from the built objects in
     $BUILD/obj, so a circle through a shared internal header is seen too);
  3. a product source file over 900 lines (the page's "max-lines:" line),
     save the files its "max-lines-exempt:" line names.
Exit status 0 when the tree holds, 1 with one line per violation otherwise.
Usage: check_layers.py [--build DIR] [--report]
"""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "architecture.md")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_rules():
    text = open(PAGE, encoding="utf-8").read()
    m = re.search(r"^```layers\n(.*?)^```", text, re.M | re.S)
    if m is None:
        sys.exit("check_layers: docs/architecture.md has no ```layers block")
    allowed, opts = {}, {}
    for line in m.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, rest = line.partition(":")
        key = key.strip()
        if key in ("no-circles", "max-lines", "max-lines-exempt", "skip"):
            opts[key] = rest.split()
        else:
            allowed[key] = set(rest.split())
    return allowed, opts


def folder_of(path, folders):
    """The product folder a repository path belongs to (longest match)."""
    best = None
    for f in folders:
        if path == f or path.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def sources(folders, skip, exts=(".c", ".h", ".cc")):
    out = []
    for f in folders:
        for dp, dn, fn in os.walk(os.path.join(ROOT, f)):
            rel = os.path.relpath(dp, ROOT)
            if any(rel == s or rel.startswith(s + "/") for s in skip):
                dn[:] = []
                continue
            for name in fn:
                if name.endswith(exts):
                    out.append(os.path.join(rel, name))
    return sorted(out)


def check_includes(allowed, skip, errors):
    folders = list(allowed)
    for src in sources(folders, skip):
        mine = folder_of(src, folders)
        text = open(os.path.join(ROOT, src), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE.findall(text):
            # Generated protobuf headers are the proto folder's.
            target = None
            for cand in (os.path.normpath(os.path.join(os.path.dirname(src), inc)), inc):
                if os.path.exists(os.path.join(ROOT, cand)) or cand.endswith(".pb-c.h"):
                    target = cand
                    break
            if target is None:
                continue
            theirs = folder_of(target, folders)
            if theirs is None or theirs == mine:
                continue
            if theirs not in allowed[mine]:
                errors.append("%s includes %s: %s -> %s is not an arrow of "
                              "docs/architecture.md" % (src, inc, mine, theirs))


def symbol_graph(objdir):
    defs, uses = {}, collections.defaultdict(set)
    for dp, dn, fn in os.walk(objdir):
        for name in fn:
            if not name.endswith(".o"):
                continue
            obj = os.path.join(dp, name)
            mod = os.path.relpath(obj, objdir)[:-2]
            # An object whose source is gone (a file moved since the last
            # build) would bring its old edges back: only current sources.
            if not any(os.path.exists(os.path.join(ROOT, mod + ext)) for ext in (".c", ".cc")):
                continue
            out = subprocess.run(["nm", obj], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBRV":
                    defs[p[2]] = mod
                elif len(p) == 2 and p[0] == "U":
                    uses[mod].add(p[1])
    graph = collections.defaultdict(set)
    for mod, syms in uses.items():
        for s in syms:
            t = defs.get(s)
            if t is not None and t != mod:
                graph[mod].add(t)
    return graph


def circles(graph, nodes):
    """Strongly connected components of `graph` restricted to `nodes`."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_circles(build, folders, errors):
    objdir = os.path.join(ROOT, build, "obj")
    if not os.path.isdir(objdir):
        sys.exit("check_layers: no objects in %s: build first" % objdir)
    graph = symbol_graph(objdir)
    for f in folders:
        nodes = {m for m in set(graph) | {t for v in graph.values() for t in v}
                 if m.startswith(f + "/")}
        for comp in circles(graph, nodes):
            if len(comp) > 2:
                errors.append("%s: a circle of %d files: %s" % (f, len(comp), " ".join(comp)))


def check_lines(folders, limit, exempt, errors):
    # Every product file, the shipped backends' included.
    for src in sources(folders, [], (".c", ".h", ".cc", ".py")):
        if src in exempt:
            continue
        with open(os.path.join(ROOT, src), encoding="utf-8", errors="replace") as fh:
            n = sum(1 for _ in fh)
        if n > limit:
            errors.append("%s: %d lines (the limit is %d: split it along its seams)" % (src, n, limit))


def main():
    build = os.environ.get("BUILD", "build")
    args = sys.argv[1:]
    if "--build" in args:
        build = args[args.index("--build") + 1]
    allowed, opts = read_rules()
    skip = opts.get("skip", [])
    errors = []
    check_includes(allowed, skip, errors)
    check_circles(build, opts.get("no-circles", []), errors)
    check_lines(list(allowed), int(opts.get("max-lines", ["900"])[0]),
                set(opts.get("max-lines-exempt", [])), errors)
    for e in errors:
        print("check-layers: " + e)
    if errors:
        print("check-layers: %d violation(s); the allowed arrows are docs/architecture.md's" % len(errors))
        return 1
    print("check-layers: %d folders hold their arrows, no circles, no file over the limit" % len(allowed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
