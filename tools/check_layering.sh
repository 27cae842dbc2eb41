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
#   folder|public headers, root-relative, space separated|direct dependencies[|glue[|shares]]
# e.g. `recorder|recorder/recorder.h|engine`. An optional fifth field,
# `HEADER...` (root-relative), names internal headers of a dependency the
# folder may include, as a room of that library: `engine/split|
# engine/split/split.h|engine||engine/internal.h` (no other folder may). The optional glue field,
# `HEADER=FILE FILE...` (root-relative), names a header of a dependency
# that only those files of the folder may use: `kernels|kernels/kernels.h|
# engine|engine/engine.h=kernels/kit_host.c` lets kernel files reach the
# engine's host API only through kit_host.c. Any other file of the folder
# that includes HEADER, or calls a function HEADER declares (reaching it
# through another header, as device.h includes engine.h), is a violation.
# Plus one line
#   exempt|tests bench|
# naming the folders the rules do not apply to (they test internals).
#
# include/npurr/ is what npurr installs for kernel authors (the device API,
# the plugin ABI, the Ascend C headers): every folder may include its
# headers (as "npurr/device.h", found in include/ as the compiler finds
# it), and they may include only each other and system headers, so the
# installed copy stands alone. Their functions need comments too.
#
# For every "quoted" include in the .c, .h and .S files directly inside a
# ruled folder (a subfolder is a folder of its own, with its own rule):
# the include is resolved as the compiler does (next to the including file,
# else from ROOT); an include of a file in the same folder is always fine;
# otherwise the header must be one of its folder's public headers and that
# folder must be reachable through the dependencies (they are transitive,
# like CMake's PUBLIC links). Includes that resolve to no file are left to
# the compiler.
#
# Every public header is also the library's documentation, as zstd.h is
# zstd's: each function it declares or defines (at file level, outside
# comments, preprocessor lines and braces) needs a comment of its own, one
# that ends on the line just above the declaration or stands on one of its
# lines, saying what it does, what it returns and who owns what. A
# declaration without one is a violation too, named by file, line and
# function.
#
# Exit 0 when clean, 1 with one line per violation, 2 on bad arguments.
set -eu
if [ $# -ne 2 ] || [ ! -d "$1" ] || [ ! -f "$2" ]; then
    echo "usage: check_layering.sh ROOT RULES (ROOT a folder, RULES a file)" >&2
    exit 2
fi
root=$1
rules=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")

# The files to check, root-relative: those directly inside every folder the
# rules name (not the exempt ones), and the installed headers.
cd "$root"
files=
for folder in $(awk -F'|' '$1 != "exempt" && $1 !~ /^#/ && NF >= 3 { print $1 }' "$rules"); do
    for f in "$folder"/*.c "$folder"/*.h "$folder"/*.S; do
        if [ -f "$f" ]; then files="$files $f"; fi
    done
done
installed=$(find include/npurr -type f -name '*.h' 2>/dev/null | sort | tr '\n' ' ')
files="$files $installed"
[ -n "$files" ] || exit 0

status=0
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
        ruled[r[1]] = 1; deps[r[1]] = r[3]; pubs[r[1]] = r[2]; shares[r[1]] = " " r[5] " "
        n = split(r[2], hs, " "); for (i = 1; i <= n; i++) public[hs[i]] = 1
        if (r[4] ~ /=/) {
            glue_header[r[1]] = substr(r[4], 1, index(r[4], "=") - 1)
            glue_files[r[1]] = substr(r[4], index(r[4], "=") + 1)
            n = split(glue_files[r[1]], gs, " "); for (i = 1; i <= n; i++) glue[gs[i]] = 1
        }
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
    # As the compiler looks: next to the including file, then from the root,
    # then from include/.
    if (exists(from "/" inc)) path = normalize(from "/" inc)
    else if (exists(inc)) path = normalize(inc)
    else if (exists("include/" inc)) path = normalize("include/" inc)
    else next
    to = folder_of(path)
    where = FILENAME ":" FNR ": #include \"" inc "\": "
    if (from ~ /^include\/npurr/) {
        # installed: stands alone, so only installed headers
        if (path !~ /^include\/npurr\//) {
            print where "an installed header (include/npurr/) includes only installed headers, " \
                  "not " path; bad = 1
        }
        next
    }
    if (from == to || path ~ /^include\/npurr\//) next
    if (to in exempt) {
        print where path " belongs to " to "/, which only tests and benchmarks may use"; bad = 1
    } else if (!(to in ruled)) {
        print where path " is in " to "/, which is no library"; bad = 1
    } else if (!(path in public) && index(shares[from], " " path " ") && reaches(from, to)) {
        next   # a room sharing an internal header of its library (the rules name it)
    } else if (!(path in public)) {
        print where path " is internal to " to "/; from outside it include only " \
              (pubs[to] == "" ? "nothing (it has no public header)" : pubs[to]); bad = 1
    } else if (!reaches(from, to)) {
        print where from "/ does not depend on " to "/ (its dependencies: " \
              (deps[from] == "" ? "none" : deps[from]) "); link it in CMakeLists.txt if the architecture allows"; bad = 1
    } else if (path == glue_header[from] && !(FILENAME in glue)) {
        print where "in " from "/ only " glue_files[from] " may include " path \
              " (the others reach it through them)"; bad = 1
    }
}
END {
    if (bad) print "layering check failed: see the rules in CMakeLists.txt (npurr_library) and ARCHITECTURE.md"
    exit bad
}' $files || status=1

# The glue rules: no file of the folder but the glue files calls a
# function its glue header declares (at file level, column 0, not inline),
# whatever header brought the declaration in.
glue_rules=$(awk -F'|' '$1 != "exempt" && $1 !~ /^#/ && $4 ~ /=/ {
    gsub(/ /, ",", $4); print $1 "|" $4 }' "$rules")
for rule in $glue_rules; do
    folder=${rule%%|*}
    glue=${rule#*|}
    header=${glue%%=*}
    allowed=$(printf '%s' "${glue#*=}" | tr ',' ' ')
    [ -f "$header" ] || continue
    others=
    for f in "$folder"/*.c "$folder"/*.h; do
        case " $allowed " in *" $f "*) continue ;; esac
        if [ -f "$f" ]; then others="$others $f"; fi
    done
    [ -n "$others" ] || continue
    # shellcheck disable=SC2086 # the file names come from the glob above
    awk -v header="$header" -v allowed="$allowed" -v folder="$folder" '
    FNR == 1 && FILENAME == header { in_header = 1 }
    FNR == 1 && FILENAME != header { in_header = 0; in_comment = 0 }
    in_header {
        if ($0 ~ /^[A-Za-z_][A-Za-z_0-9 \t\*]*[ \t\*][A-Za-z_][A-Za-z_0-9]*\(/ &&
            $0 !~ /^(typedef|static|extern "C"|struct|union|enum)[ \t]/) {
            name = $0; sub(/\(.*/, "", name); sub(/.*[ \t\*]/, "", name)
            declared[name] = 1
        }
        next
    }
    {
        # the code of the line: comments and string literals left out
        line = $0; code = ""
        while (line != "") {
            if (in_comment) {
                e = index(line, "*/"); if (!e) { line = ""; break }
                line = substr(line, e + 2); in_comment = 0; continue
            }
            b = index(line, "/*"); c = index(line, "//")
            if (c && (!b || c < b)) { code = code substr(line, 1, c - 1); break }
            if (!b) { code = code line; break }
            code = code substr(line, 1, b - 1) " "; line = substr(line, b + 2); in_comment = 1
        }
        gsub(/"([^"\\]|\\.)*"/, "\"\"", code)
        rest = code
        while (match(rest, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) {
            name = substr(rest, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
            before = RSTART > 1 ? substr(rest, RSTART - 1, 1) : ""
            rest = substr(rest, RSTART + RLENGTH)
            if (name in declared && before !~ /[A-Za-z_0-9.>]/) {
                print FILENAME ":" FNR ": " name "(): a function of " header ", which in " folder \
                      "/ only " allowed " may call"
                bad = 1
            }
        }
    }
    END {
        if (bad) print "layering check failed: see the glue rule of " folder \
                       "/ in CMakeLists.txt and ARCHITECTURE.md"
        exit bad
    }' "$header" $others || status=1
done

# The public headers, root-relative, that exist (the installed ones too).
headers=$installed
for h in $(awk -F'|' '$1 != "exempt" && $1 !~ /^#/ && NF >= 3 { print $2 }' "$rules"); do
    if [ -f "$h" ]; then headers="$headers $h"; fi
done
[ -n "$headers" ] || exit "$status"

# shellcheck disable=SC2086 # the file names come from the rules
awk '
FNR == 1 { in_comment = 0; depth = 0; stmt = ""; cont = 0; comment_end = -1 }
# One line: what lies outside comments goes to code; a comment that ends on
# it or stands on it is remembered.
{
    line = $0; code = ""; had_comment = 0
    while (line != "") {
        if (in_comment) {
            e = index(line, "*/")
            if (!e) { line = ""; break }
            line = substr(line, e + 2); in_comment = 0; had_comment = 1
            continue
        }
        b = index(line, "/*"); c = index(line, "//")
        if (c && (!b || c < b)) { code = code substr(line, 1, c - 1); had_comment = 1; line = ""; break }
        if (!b) { code = code line; line = ""; break }
        code = code substr(line, 1, b - 1) " "; line = substr(line, b + 2); in_comment = 1
        had_comment = 1
    }
    ended_comment = had_comment && !in_comment
}
# Preprocessor lines and their continuations are no declarations.
cont || code ~ /^[ \t]*#/ {
    cont = code ~ /\\[ \t]*$/
    if (ended_comment) comment_end = FNR
    next
}
{
    if (depth == 0 && stmt !~ /[^ \t]/ && code ~ /[^ \t]/) {
        stmt = ""; stmt_line = FNR; documented = comment_end == FNR - 1 || had_comment
    } else if (stmt ~ /[^ \t]/ && had_comment) {
        documented = 1
    }
    for (i = 1; i <= length(code); i++) {
        ch = substr(code, i, 1)
        if (depth == 0 && ch != "{" && ch != "}") stmt = stmt ch
        if (ch == "{") {
            if (depth == 0) finish(1)
            depth++
        } else if (ch == "}") {
            if (depth > 0) depth--
        } else if (ch == ";" && depth == 0) {
            finish(0)
        }
    }
    if (depth == 0 && stmt != "") stmt = stmt " "
    if (ended_comment && code !~ /[^ \t]/) comment_end = FNR
}
# A statement at file level ends: a function (declared, or defined with a
# body) without a comment of its own is a violation.
function finish(body,    s, name) {
    s = stmt; stmt = ""
    gsub(/[ \t]+/, " ", s); sub(/^ /, "", s)
    if (s ~ /^typedef / || s ~ /^(struct|union|enum) [A-Za-z_0-9]* ?$/ || index(s, "(") == 0) return
    if (s ~ /^[^(]*=/) return   # a variable with an initialiser
    name = s; sub(/ *\(.*/, "", name); sub(/.*[ *]/, "", name)
    if (name == "" || documented) return
    printf "%s:%d: %s: a public function without a comment of its own (say what it does, " \
           "what it returns and who owns what)\n", FILENAME, stmt_line, name
    bad = 1
}
END {
    if (bad) print "layering check failed: every function of a public header needs its comment"
    exit bad
}' $headers || status=1
exit "$status"
