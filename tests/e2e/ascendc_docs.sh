#!/usr/bin/env bash
# ascendc_docs.sh - docs/ascendc.md says only what npurr's Ascend C headers
# have: every name in the first column of its "What is supported" table,
# and every name of the sgl-kernel-npu list under "Public kernels", is
# declared in include/npurr/ascendc/ or npurr/types.h (the pipes), as a
# word of their code and not only of a comment, so the page cannot promise
# an API the headers dropped.
#
# Usage: bash ascendc_docs.sh /path/to/npurr /path/to/builddir
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
doc=$root/docs/ascendc.md
headers=$root/include/npurr/ascendc
[ -f "$doc" ] || { echo "FAIL: no $doc"; exit 1; }

# The headers' code, comments left out (a name in a comment is no API).
code=$( { find "$headers" -name '*.h' -exec cat {} +; cat "$root/include/npurr/types.h"; } | sed -e 's://.*$::' |
       awk '{ while (match($0, /\/\*/)) { e = index(substr($0, RSTART + 2), "*/");
              if (e) { $0 = substr($0, 1, RSTART - 1) " " substr($0, RSTART + e + 3) }
              else { $0 = substr($0, 1, RSTART - 1); skip = 1 } }
              if (skip) { if (index($0, "*/")) { skip = 0 } ; next } print }')

# Names: `Word` in the table's first column, then in the public kernels' list.
table=$(awk '/^## What is supported/ { on = 1; next } /^### / { on = 0 } on && /^\| `/' "$doc" |
        cut -d'|' -f2)
list=$(awk '/^## Public kernels/ { sec = 1; next } /^## / { sec = 0 } sec && /names of the API/ { on = 1 } sec && on' "$doc")
names=$(printf '%s\n%s\n' "$table" "$list" | grep -o '`[A-Za-z_][A-Za-z_0-9]*`' | tr -d '`' | sort -u)
[ -n "$names" ] || { echo "FAIL: no API names found in $doc"; exit 1; }

missing=0
count=0
for n in $names; do
    count=$((count + 1))
    case $n in DT_) continue ;; esac
    if ! printf '%s\n' "$code" | grep -qw -- "$n"; then
        echo "FAIL: docs/ascendc.md names $n, which include/npurr/ascendc/ does not declare"
        missing=$((missing + 1))
    fi
done
[ "$missing" -eq 0 ] || exit 1
echo "ok: the $count API names docs/ascendc.md lists are in the headers"
