#!/bin/sh
# check_layering.sh - fails when a folder includes another folder's internal
# header, or a header of a folder it does not depend on.
#
#   sh tools/check_layering.sh ROOT RULES
#
# Every library target shares the repository root as its include path (so
# `#include "engine/engine.h"` works everywhere), which means the compiler
# alone would accept any header. This script is the part of the build that
# says no: CMakeLists.txt writes RULES from its npurr_library() calls, runs
# the script in a custom target every library depends on, and a violation
# stops the build with the file, the line and the rule it breaks.
#
# RULES has one line per folder (fields separated by '|'):
#   folder|public headers, root-relative, space separated|direct dependencies
# e.g. `recorder|recorder/recorder.h|engine`, plus one line
#   exempt|tests bench|
# naming the folders the rules do not apply to (they test internals).
#
# For every "quoted" include in the .c, .h and .S files directly inside a
# ruled folder (a subfolder such as engine/kernels is a folder of its own):
# the include is resolved as the compiler does (next to the including file,
# else from ROOT); an include of a file in the same folder is always fine;
# otherwise the header must be one of its folder's public headers and that
# folder must be reachable through the dependencies (they are transitive,
# like CMake's PUBLIC links). Includes that resolve to no file are left to
# the compiler. Exit 0 when clean, 1 with one line per violation, 2 on bad
# arguments.
set -eu
if [ $# -ne 2 ] || [ ! -d "$1" ] || [ ! -f "$2" ]; then
    echo "usage: check_layering.sh ROOT RULES (ROOT a folder, RULES a file)" >&2
    exit 2
fi
root=$1
rules=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")

# The files to check, root-relative: those directly inside every folder the
# rules name (not the exempt ones).
cd "$root"
files=
for folder in $(awk -F'|' '$1 != "exempt" && $1 !~ /^#/ && NF >= 3 { print $1 }' "$rules"); do
    for f in "$folder"/*.c "$folder"/*.h "$folder"/*.S; do
        if [ -f "$f" ]; then files="$files $f"; fi
    done
done
[ -n "$files" ] || exit 0

# shellcheck disable=SC2086 # the file names come from the globs above
awk -v rules="$rules" '
function normalize(p,    n, parts, out, i, k, res) {
    n = split(p, parts, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
        out[++k] = parts[i]
    }
    res = ""
    for (i = 1; i <= k; i++) res = res (i > 1 ? "/" : "") out[i]
    return res
}
function folder_of(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "." }
# 1 when folder to is reachable from folder from through the dependencies.
function reaches(from, to,    seen, stack, top, cur, n, d, i) {
    top = 0; stack[++top] = from
    while (top > 0) {
        cur = stack[top--]
        if (cur in seen) continue
        seen[cur] = 1
        n = split(deps[cur], d, " ")
        for (i = 1; i <= n; i++) {
            if (d[i] == to) return 1
            stack[++top] = d[i]
        }
    }
    return 0
}
BEGIN {
    while ((getline l < rules) > 0) {
        if (l ~ /^#/ || l == "") continue
        split(l, r, "|")
        if (r[1] == "exempt") { n = split(r[2], ex, " "); for (i = 1; i <= n; i++) exempt[ex[i]] = 1; continue }
        ruled[r[1]] = 1; deps[r[1]] = r[3]; pubs[r[1]] = r[2]
        n = split(r[2], hs, " "); for (i = 1; i <= n; i++) public[hs[i]] = 1
    }
    bad = 0
}
function exists(p,    l, r) {
    r = (getline l < p); close(p)
    return r >= 0
}
match($0, /^[ \t]*#[ \t]*include[ \t]*"[^"]*"/) {
    inc = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", inc); sub(/"$/, "", inc)
    from = folder_of(FILENAME)
    # As the compiler looks: next to the including file, then from the root.
    if (exists(from "/" inc)) path = normalize(from "/" inc)
    else if (exists(inc)) path = normalize(inc)
    else next
    to = folder_of(path)
    if (from == to) next
    where = FILENAME ":" FNR ": #include \"" inc "\": "
    if (to in exempt) {
        print where path " belongs to " to "/, which only tests and benchmarks may use"; bad = 1
    } else if (!(to in ruled)) {
        print where path " is in " to "/, which is no library"; bad = 1
    } else if (!(path in public)) {
        print where path " is internal to " to "/; from outside it include only " \
              (pubs[to] == "" ? "nothing (it has no public header)" : pubs[to]); bad = 1
    } else if (!reaches(from, to)) {
        print where from "/ does not depend on " to "/ (its dependencies: " \
              (deps[from] == "" ? "none" : deps[from]) "); link it in CMakeLists.txt if the architecture allows"; bad = 1
    }
}
END {
    if (bad) print "layering check failed: see the rules in CMakeLists.txt (npurr_library) and ARCHITECTURE.md"
    exit bad
}' $files
