#!/usr/bin/env bash
# docs.sh - every example README.md and docs/*.md show still prints what
# they show: tools/docs_examples.py --check runs each ```console command
# and ```sql query of the pages with this build's npurr and compares the
# output, numbers included, and checks that every npurr command and option
# the ```sh blocks name still exists. A model change that moves a number
# fails here until `python3 tools/docs_examples.py --update` rewrites the
# pages. Then, that the checker can fail: a page with one stale number.
#
# The pages show what the normal build prints (gdb frames, timings of the
# optimised code), so the sanitizer build skips the comparison (exit 77).
#
# Usage: bash docs.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
build=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tool=$root/tools/docs_examples.py
fail() { echo "FAIL: $*" >&2; exit 1; }

if grep -q '^NPURR_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "SKIP: the docs show the normal build's output; this is the sanitizer build"
    exit 77
fi
[ -x "$npurr" ] || fail "no npurr at $npurr"

# The checker fails on a stale example: one number of a copied page changed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/stale.md" <<'EOF'
```console
$ ./build/npurr layout -k combine-sender --tokens 64 | head -3
```
EOF
python3 "$tool" --update --build "$build" "$work/stale.md" >/dev/null ||
    fail "--update of a one-command page failed"
python3 "$tool" --check --build "$build" "$work/stale.md" > "$work/ok.txt" ||
    fail "a page just written by --update is stale: $(cat "$work/ok.txt")"
# change the first number of the shown output
python3 - "$work/stale.md" <<'EOF'
import re, sys
p = sys.argv[1]
lines = open(p).read().split("\n")
for i, l in enumerate(lines):
    if not l.startswith("$") and re.search(r"\d", l) and not l.startswith("```"):
        lines[i] = re.sub(r"\d", lambda m: str((int(m.group(0)) + 1) % 10), l, count=1)
        break
open(p, "w").write("\n".join(lines))
EOF
if python3 "$tool" --check --build "$build" "$work/stale.md" > "$work/stale.txt"; then
    fail "a stale number passed the check: $(cat "$work/stale.txt")"
fi
grep -q "FAIL .*stale.md" "$work/stale.txt" || fail "the stale example is not named: $(cat "$work/stale.txt")"

# An option the docs name that npurr does not have is caught too.
printf '```sh\n./build/npurr stats runs/x --by-nothing\n```\n' > "$work/badopt.md"
if python3 "$tool" --check --build "$build" "$work/badopt.md" > "$work/badopt.txt"; then
    fail "an unknown option passed the check"
fi
grep -q "has no option --by-nothing" "$work/badopt.txt" || fail "unknown option not named: $(cat "$work/badopt.txt")"

# The pages themselves.
python3 "$tool" --check --build "$build" || fail "README.md or docs/ show stale examples (above); regenerate with: python3 tools/docs_examples.py --update"
echo "PASS docs"
