#!/usr/bin/env python3
"""docs_examples.py - every command the docs show, run, and its output held
to what the docs print, so an example cannot go stale.

    python3 tools/docs_examples.py --check  [FILE.md ...]   (tests/e2e/docs.sh)
    python3 tools/docs_examples.py --update [FILE.md ...]   rewrite the shown outputs

The examples are ```console blocks in README.md and docs/*.md: a line that
starts with "$ " is a command, the lines after it up to the next command or
the block's end are what it prints. Commands run with bash, one page at a
time, in a scratch folder where build/, examples/ and tools/ are the
repository's, so a page's commands build on each other (record, then
stats) exactly as a reader types them. What a command prints is compared
line by line after masking what no two runs share: a line of only "..."
in the docs stands for any lines; wall-clock figures (host seconds, events
per second, elapsed times, ETAs) and the scratch folder's path are masked
on both sides. Everything else - virtual times, event counts, stall
tables, SQL rows - must be equal, so a model change that moves a number
fails the check until `--update` rewrites the pages (review the diff).

A command's exit status must be 0 unless the block's command line ends
with "  # exit N". --check exits 1 naming each differing example with a
diff; --update rewrites the outputs in place (keeping "..." lines where
they still match something).
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINKED = ("build", "examples", "tools", "traces")

# What differs between two runs of the same command: masked before comparing.
VOLATILE = [
    (re.compile(r"^(host\s+)[0-9.]+ s, [0-9.]+ M events/s"), r"\1<wall>"),
    (re.compile(r"[0-9.]+ (runs|points|rows)/s"), r"<rate> \1/s"),
    (re.compile(r"\b[0-9.]+ s elapsed"), "<wall> elapsed"),
    (re.compile(r"ETA [0-9.]+ s"), "ETA <wall>"),
    (re.compile(r"; [0-9.]+ s$"), "; <wall>"),
    (re.compile(r"\b[0-9.]+ s, [0-9.]+ runs/s"), "<wall>"),
    (re.compile(r"sha256 [0-9a-f]{64}"), "sha256 <hash>"),
]


def mask(line, scratch):
    line = line.rstrip().replace(scratch, "<scratch>")
    for pattern, repl in VOLATILE:
        line = pattern.sub(repl, line)
    return line


def examples(path):
    """(start, end, command, expected lines, exit code) of every command of
    every console block: start/end are the line range of its output."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        i += 1
        cmd = None
        while i < len(lines) and lines[i].strip() != "```":
            if lines[i].startswith("$ "):
                if cmd:
                    found.append(cmd)
                text = lines[i][2:]
                code = 0
                m = re.search(r"\s+# exit (\d+)$", text)
                if m:
                    code, text = int(m.group(1)), text[:m.start()]
                cmd = [i + 1, i + 1, text, [], code]
            elif cmd:
                cmd[3].append(lines[i])
                cmd[1] = i + 1
            i += 1
        if cmd:
            found.append(cmd)
        i += 1
    return lines, found


def matches(expected, actual):
    """expected (with "..." lines) against actual, both masked."""
    def go(e, a):
        if e == len(expected):
            return a == len(actual)
        if expected[e].strip() == "...":
            return any(go(e + 1, k) for k in range(a, len(actual) + 1))
        return a < len(actual) and expected[e] == actual[a] and go(e + 1, a + 1)
    return go(0, 0)


def run_page(path, update):
    lines, found = examples(path)
    if not found:
        return 0, 0
    scratch = tempfile.mkdtemp(prefix="npurr_docs_")
    failures = 0
    try:
        for name in LINKED:
            os.symlink(os.path.join(ROOT, name), os.path.join(scratch, name))
        env = dict(os.environ, COLUMNS="100")
        replace = []
        for start, end, cmd, expected, code in found:
            p = subprocess.run(["bash", "-c", cmd], cwd=scratch, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
            actual_raw = p.stdout.rstrip("\n").split("\n") if p.stdout.strip() else []
            actual = [mask(l, scratch) for l in actual_raw]
            want = [mask(l, scratch) for l in expected]
            where = "%s:%d" % (os.path.relpath(path, ROOT), start)
            ok = p.returncode == code and matches(want, actual)
            if ok:
                continue
            if update:
                shown = [l.replace(scratch, "<scratch>").rstrip() for l in actual_raw]
                replace.append((start, end, shown))
                if p.returncode != code:
                    print("%s: `%s` exited %d, the docs say %d" % (where, cmd, p.returncode, code))
                continue
            failures += 1
            print("FAIL %s: `%s`" % (where, cmd))
            if p.returncode != code:
                print("  exited %d, the docs say %d" % (p.returncode, code))
            for d in difflib.unified_diff(want, actual, "docs", "now", lineterm="", n=2):
                print("  " + d)
        if update and replace:
            for start, end, shown in sorted(replace, reverse=True):
                lines[start:end] = shown
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
            print("%s: %d example(s) rewritten" % (os.path.relpath(path, ROOT), len(replace)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return len(found), failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail on a stale example")
    mode.add_argument("--update", action="store_true", help="rewrite the shown outputs")
    ap.add_argument("pages", nargs="*", help="markdown files (default: README.md docs/*.md)")
    a = ap.parse_args()
    pages = a.pages or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md"))
    total = failed = 0
    for page in pages:
        n, f = run_page(page, a.update)
        total += n
        failed += f
    print("%d documented command(s) run, %d stale" % (total, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
