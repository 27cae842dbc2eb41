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

Commands a page shows but cannot have run here (```sh blocks: installing,
production sizes, mpirun over several machines) are checked too, for what
can go stale without running them: every npurr command they name must be
one `npurr --help` lists, and every --option must be one its --help (for
record, explore and sweep with a built-in -k, that kernel's --help) lists.
"""
import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINKED = ("build", "examples", "tools", "traces")
BUILD = os.path.join(ROOT, "build")

# What differs between two runs of the same command: masked before comparing.
VOLATILE = [
    (re.compile(r"^(host\s+)[0-9.]+ s, [0-9.]+ M events/s"), r"\1<wall>"),
    (re.compile(r"[0-9.]+ (runs|points|rows)/s"), r"<rate> \1/s"),
    (re.compile(r"\b[0-9.]+ s elapsed"), "<wall> elapsed"),
    (re.compile(r"ETA (at most )?[0-9.]+ s"), r"ETA \1<wall>"),
    (re.compile(r"; [0-9.]+ s$"), "; <wall>"),
    (re.compile(r"\b[0-9.]+ s, [0-9.]+ runs/s"), "<wall>"),
    (re.compile(r"sha256 [0-9a-f]{64}"), "sha256 <hash>"),
    (re.compile(r"\b(process|LWP) [0-9]+"), r"\1 <pid>"),
    # host addresses in gdb frames (no ASLR under gdb, but they move with
    # every change to the code); npurr's own GM addresses are shorter
    (re.compile(r"\b0x0*(5555|7ff[0-9a-f])[0-9a-f]{8}\b"), "0x<host>"),
]


def mask(line, scratch):
    # gdb names sources by the absolute path they were built from: the
    # checkout's, which differs between clones
    line = line.rstrip().replace(scratch, "<scratch>").replace(os.path.realpath(ROOT), "<repo>")
    for pattern, repl in VOLATILE:
        line = pattern.sub(repl, line)
    return line


SQL_RUN = re.compile(r"^<!-- docs_examples: sql (\S+) -->$")


def command_ends(text):
    """Whether a command line is complete: its quotes closed, no trailing
    backslash and its here-document ended (it continues otherwise)."""
    if text.rstrip().endswith("\\"):
        return False
    first, _, rest = text.partition("\n")
    heredoc = re.search(r"<<-?\s*'?(\w+)'?", first)
    if heredoc:
        return heredoc.group(1) in rest.split("\n")
    try:
        shlex.split(text)
        return True
    except ValueError:
        return False


def examples(path):
    """(start, end, command, expected lines, exit code, fence) of every
    command of every console block, and of every ```sql block (run with
    `npurr sql RUN -`, RUN named by the last "<!-- docs_examples: sql RUN
    -->" line above it; its output is the ```text block right after it).
    start/end are the line range of the output; fence is True when that
    range is a missing ```text block still to be written."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i, sql_run = [], 0, None
    while i < len(lines):
        m = SQL_RUN.match(lines[i].strip())
        if m:
            sql_run = m.group(1)
        if lines[i].strip() == "```sql" and sql_run:
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            query = "\n".join(lines[i + 1:j])
            cmd = "./build/npurr sql %s - <<'NPURR_SQL'\n%s\nNPURR_SQL" % (sql_run, query)
            k = j + 1
            while k < len(lines) and not lines[k].strip():
                k += 1
            if k < len(lines) and lines[k].strip() == "```text":
                e = k + 1
                while e < len(lines) and lines[e].strip() != "```":
                    e += 1
                found.append([k + 1, e, cmd, lines[k + 1:e], 0, False])
                i = e + 1
            else:
                found.append([j + 1, j + 1, cmd, [], 0, True])
                i = j + 1
            continue
        if lines[i].strip() != "```console":
            i += 1
            continue
        i += 1
        cmd = None
        while i < len(lines) and lines[i].strip() != "```":
            if lines[i].startswith("$ "):
                if cmd:
                    found.append(cmd)
                start, text = i, lines[i][2:]
                while not command_ends(text) and i + 1 < len(lines) and lines[i + 1].strip() != "```":
                    i += 1
                    text += "\n" + lines[i]
                code = 0
                m = re.search(r"\s+# exit (\d+)$", text)
                if m:
                    code, text = int(m.group(1)), text[:m.start()]
                cmd = [i + 1, i + 1, text, [], code, False]
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


def help_text(npurr, args, cache={}):
    key = tuple(args)
    if key not in cache:
        p = subprocess.run([npurr] + args + ["--help"], text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        cache[key] = p.stdout if p.returncode == 0 else None
    return cache[key]


def lint_sh_blocks(path, npurr):
    """Names of commands and options in ```sh blocks that npurr no longer
    has: a list of "FILE:LINE: what" strings."""
    lines = open(path, encoding="utf-8").read().split("\n")
    commands = re.findall(r"^  ([a-z]+) ", help_text(npurr, []) or "", re.M)
    problems, in_sh, text, first = [], False, "", 0
    for no, line in enumerate(lines, 1):
        if line.strip() == "```sh":
            in_sh = True
            continue
        if in_sh and line.strip() == "```":
            in_sh = False
            continue
        if not in_sh or line.lstrip().startswith("(gdb)"):
            continue  # gdb's own commands (npurr when, ...) are not the CLI's
        if not text:
            first = no
        text += line.split("#")[0].rstrip().rstrip("\\") + " "
        if line.rstrip().endswith("\\"):
            continue
        words, text = text.split(), ""
        for i, w in enumerate(words):
            if not re.search(r"(^|/)npurr$", w) or i + 1 >= len(words):
                continue
            sub, rest = words[i + 1], words[i + 2:]
            where = "%s:%d" % (os.path.relpath(path, ROOT), first)
            if sub not in commands:
                problems.append("%s: `npurr %s` is not a command" % (where, sub))
                continue
            kernel = None
            if sub in ("record", "explore", "sweep") and "-k" in rest and "--plugin" not in rest:
                kernel = rest[rest.index("-k") + 1]
            helped = help_text(npurr, [sub] + (["-k", kernel] if kernel else []))
            if helped is None:
                problems.append("%s: `npurr %s%s --help` fails" %
                                (where, sub, " -k " + kernel if kernel else ""))
                continue
            for opt in rest:
                name = opt.split("=")[0]
                if opt in ("|", "&&", ";", ">") or name.startswith("--") is False:
                    continue
                if "--plugin" in rest and sub in ("record", "explore", "sweep"):
                    continue  # a plugin's kernel options are its own
                if not re.search(r"(^|[\s,\[|])" + re.escape(name) + r"([\s=,\]|]|$)", helped):
                    problems.append("%s: `npurr %s` has no option %s" % (where, sub, name))
    return problems


def run_page(path, update):
    lines, found = examples(path)
    if not found:
        return 0, 0
    scratch = tempfile.mkdtemp(prefix="npurr_docs_")
    failures = 0
    try:
        for name in LINKED:
            target = BUILD if name == "build" else os.path.join(ROOT, name)
            os.symlink(target, os.path.join(scratch, name))
        env = dict(os.environ, COLUMNS="100")
        replace = []
        for start, end, cmd, expected, code, fence in found:
            p = subprocess.run(["bash", "-c", cmd], cwd=scratch, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
            actual_raw = p.stdout.rstrip("\n").split("\n") if p.stdout.strip() else []
            actual = [mask(l, scratch) for l in actual_raw]
            want = [mask(l, scratch) for l in expected]
            where = "%s:%d" % (os.path.relpath(path, ROOT), start)
            ok = p.returncode == code and matches(want, actual) and not fence
            if ok:
                continue
            if update:
                shown = [l.replace(scratch, "<scratch>").replace(os.path.realpath(ROOT), "<repo>")
                         .rstrip() for l in actual_raw]
                if fence:
                    shown = ["", "```text"] + shown + ["```"]
                replace.append((start, end, shown))
                if p.returncode != code:
                    print("%s: `%s` exited %d, the docs say %d" % (where, cmd, p.returncode, code))
                continue
            failures += 1
            print("FAIL %s: `%s`" % (where, cmd.split("\n")[0]))
            if fence:
                print("  no ```text block after the query shows its output")
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
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="the build folder whose npurr the commands run (default build/)")
    ap.add_argument("pages", nargs="*", help="markdown files (default: README.md docs/*.md)")
    a = ap.parse_args()
    global BUILD
    BUILD = os.path.abspath(a.build)
    npurr = os.path.join(BUILD, "npurr")
    if not os.access(npurr, os.X_OK):
        print("docs_examples: %s: no npurr executable there (build first)" % npurr)
        return 2
    pages = a.pages or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md"))
    total = failed = 0
    for page in pages:
        n, f = run_page(page, a.update)
        total += n
        failed += f
        for problem in lint_sh_blocks(page, npurr):
            print("FAIL " + problem)
            failed += 1
    print("%d documented command(s) run, %d stale" % (total, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
