#!/usr/bin/env python3
"""check_doc_links.py — every relative link and every repository path quoted
in the Markdown documentation resolves.

    tools/check_doc_links.py [FILE.md ...]     (default: the tracked *.md files)

Checks [text](target) links (the file, and a #anchor against the target's
headings, GitHub's slug rule) and `code spans` that look like repository paths
(a first component that is a top-level entry of the repository). Prints one
line per broken reference and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = set(os.listdir(ROOT)) - {".git"}
IGNORED_TOP = {"build", ".gpu", ".mpi"}  # made by a build or a bundle


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out = set()
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            if not in_code and line.startswith("#"):
                out.add(slug(line.lstrip("#")))
    return out


def check(md):
    bad = []
    text = open(md, encoding="utf-8").read()
    base = os.path.dirname(md)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(base, path)) if path else md
        if not os.path.exists(full):
            bad.append(f"{md}: link {target}: no such file")
        elif frag and full.endswith(".md") and frag not in anchors(full):
            bad.append(f"{md}: link {target}: no heading #{frag}")
    for m in re.finditer(r"`([A-Za-z0-9_.\-/]+)`", text):
        p = m.group(1).rstrip("/")
        first = p.split("/")[0]
        if "/" not in p or first not in TOP or first in IGNORED_TOP:
            continue
        if not os.path.exists(os.path.join(ROOT, p)):
            bad.append(f"{md}: path `{p}` does not exist")
    return bad


def main():
    files = sys.argv[1:]
    if not files:
        ls = subprocess.run(["git", "-C", ROOT, "ls-files", "*.md"], capture_output=True, text=True, check=True)
        files = [os.path.join(ROOT, f) for f in ls.stdout.split()]
    bad = [b for f in files for b in check(f)]
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
