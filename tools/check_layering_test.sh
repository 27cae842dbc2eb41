#!/bin/sh
# check_layering_test.sh - the test of tools/check_layering.sh (ctest
# layering_check): builds small trees in a temporary folder, one bad include
# or undocumented public function at a time, and expects the check to
# refuse each with the file, the line and the rule, and to accept the
# includes and declarations the architecture allows.
#
#   sh tools/check_layering_test.sh [SOURCE_ROOT RULES]
#
# Given the repository and the rules the build wrote (ctest passes them),
# it also checks a copy of the real tree: clean as it is, and refused,
# once, when a file of analysis/present/ includes a header internal to
# analysis/derive/ (the rooms ARCHITECTURE.md draws).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
check="$here/check_layering.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# A tree of five folders: lib (public lib.h, internal lib_internal.h), mid
# (depends on lib), app (depends on mid, so on lib through it), other (no
# dependencies), kern (depends on lib, which only its glue.c may include
# and call, as kernels/ reaches engine.h only through kit_host.c), and the
# exempt tests/.
fresh_tree() {
    rm -rf "$tmp/root"
    mkdir -p "$tmp/root/lib" "$tmp/root/mid" "$tmp/root/app" "$tmp/root/other" "$tmp/root/tests" \
        "$tmp/root/kern"
    printf '/* Returns 1. */\nint lib(void);\n' > "$tmp/root/lib/lib.h"
    printf 'int lib_helper(void);\n' > "$tmp/root/lib/lib_internal.h"
    printf '#include "lib_internal.h"\n#include "lib/lib.h"\nint lib(void) { return lib_helper(); }\n' \
        > "$tmp/root/lib/lib.c"
    printf 'int mid(void);   /* lib(), through mid */\n' > "$tmp/root/mid/mid.h"
    printf '#include "lib/lib.h"\n#include "mid.h"\nint mid(void) { return lib(); }\n' > "$tmp/root/mid/mid.c"
    printf '#include <stdio.h>\n#include "mid/mid.h"\n#include "lib/lib.h"\n' > "$tmp/root/app/app.c"
    printf 'int other(void);\n' > "$tmp/root/other/other.c"
    printf 'int support(void);\n' > "$tmp/root/tests/support.h"
    printf '#include "lib/lib_internal.h"\n#include "support.h"\n' > "$tmp/root/tests/test_lib.c"
    printf '/* The kernel, through its glue. */\nint kern(void);\n' > "$tmp/root/kern/kern.h"
    printf '#include "lib/lib.h"\n#include "kern.h"\nint kern(void) { return lib(); }\n' \
        > "$tmp/root/kern/glue.c"
    printf '#include "kern.h"\n/* kern() is lib() */\nconst char *k = "lib()";\n' \
        > "$tmp/root/kern/kern_user.c"
    printf 'int my_lib(void);\n' >> "$tmp/root/kern/kern_user.c"
    cat > "$tmp/rules" <<'EOF'
# folder|public headers|dependencies|glue
lib|lib/lib.h|
mid|mid/mid.h|lib
app||mid
other||
kern|kern/kern.h|lib|lib/lib.h=kern/glue.c
exempt|tests|
EOF
}

# expect STATUS PATTERN NAME: runs the check on the current tree and wants
# its exit status to be STATUS and its output to contain PATTERN (to be
# empty when PATTERN is).
expect() {
    status=0
    out=$(sh "$check" "$tmp/root" "$tmp/rules" 2>&1) || status=$?
    if [ "$status" -ne "$1" ]; then
        echo "FAIL $3: exit $status, expected $1; output: $out"
        failures=$((failures + 1))
    elif [ -z "$2" ] && [ -n "$out" ]; then
        echo "FAIL $3: expected no output: $out"
        failures=$((failures + 1))
    elif [ -n "$2" ] && ! printf '%s\n' "$out" | grep -qF -- "$2"; then
        echo "FAIL $3: output lacks '$2': $out"
        failures=$((failures + 1))
    else
        echo "ok   $3"
    fi
}

fresh_tree
expect 0 "" "own files, public headers of direct and indirect dependencies, exempt tests"

fresh_tree
printf '#include "lib/lib_internal.h"\n' >> "$tmp/root/app/app.c"
expect 1 "app/app.c:4: #include \"lib/lib_internal.h\": lib/lib_internal.h is internal to lib/" \
    "another folder's internal header"

fresh_tree
printf '#include "../lib/lib_internal.h"\n' >> "$tmp/root/mid/mid.c"
expect 1 "mid/mid.c:4: #include \"../lib/lib_internal.h\": lib/lib_internal.h is internal to lib/" \
    "an internal header reached by a relative path"

# A room of lib (the rules' fifth field) may include lib's internal
# header; a folder the rule does not name still may not.
fresh_tree
mkdir -p "$tmp/root/room"
printf '#include "lib/lib_internal.h"\nint room(void) { return lib_helper(); }\n' \
    > "$tmp/root/room/room.c"
echo 'room||lib||lib/lib_internal.h' >> "$tmp/rules"
expect 0 "" "a room including the internal header its rule shares"
printf '#include "lib/lib_internal.h"\n' >> "$tmp/root/app/app.c"
expect 1 "app/app.c:4: #include \"lib/lib_internal.h\": lib/lib_internal.h is internal to lib/" \
    "another folder including the header a room shares"

fresh_tree
printf '#include "lib/lib.h"\n' >> "$tmp/root/other/other.c"
expect 1 "other/other.c:2: #include \"lib/lib.h\": other/ does not depend on lib/" \
    "a public header of a folder that is no dependency"

fresh_tree
printf '#include "mid/mid.h"\n' >> "$tmp/root/lib/lib.c"
expect 1 "lib/lib.c:4: #include \"mid/mid.h\": lib/ does not depend on mid/ (its dependencies: none)" \
    "an arrow pointing the wrong way (lib -> mid, which depends on lib)"

fresh_tree
printf '#include "app/app.c"\n' >> "$tmp/root/lib/lib.c"
expect 1 "lib/lib.c:4: #include \"app/app.c\": app/app.c is internal to app/; from outside it include only nothing" \
    "a folder without a public header (an executable's)"

fresh_tree
printf '#include "tests/support.h"\n' >> "$tmp/root/lib/lib.c"
expect 1 "tests/support.h belongs to tests/, which only tests and benchmarks may use" \
    "product code including a test header"

fresh_tree
mkdir -p "$tmp/root/stray"
printf 'int stray(void);\n' > "$tmp/root/stray/stray.h"
printf '#include "stray/stray.h"\n' >> "$tmp/root/app/app.c"
expect 1 "stray/stray.h is in stray/, which is no library" "a header of a folder the rules do not name"

fresh_tree
printf '#include "missing/nowhere.h"\n' >> "$tmp/root/app/app.c"
expect 0 "" "an include that resolves to no file is the compiler's to report"

# A glue header: only the glue files include it or call what it declares.
fresh_tree
printf '#include "lib/lib.h"\n' >> "$tmp/root/kern/kern_user.c"
expect 1 "kern/kern_user.c:5: #include \"lib/lib.h\": in kern/ only kern/glue.c may include" \
    "a glue header included by a file that is not the glue"

fresh_tree
printf 'int twice(void) { return 2 * lib(); }\n' >> "$tmp/root/kern/kern_user.c"
expect 1 "kern/kern_user.c:5: lib(): a function of lib/lib.h, which in kern/ only kern/glue.c" \
    "a glue header's function called, its declaration reached through another header"

# Public headers document every function they declare or define.
fresh_tree
printf '/* Two.\n * Lines. */\nint lib_two(int a,\n            int b);\n' >> "$tmp/root/lib/lib.h"
printf '#define LIB_MAX(a, b) \\\n    ((a) > (b) ? (a) : (b))\ntypedef int lib_fn(int);\n' >> "$tmp/root/lib/lib.h"
printf 'typedef struct { int (*f)(void); } lib_s;\nextern const lib_s lib_one;\n' >> "$tmp/root/lib/lib.h"
printf 'int lib_internal_only(void);\n' >> "$tmp/root/lib/lib_internal.h"
expect 0 "" "documented functions, macros, typedefs, variables; internal headers are free"

fresh_tree
printf '/* Returns 2. */\nint lib_two(void);\nint lib_three(void);\n' >> "$tmp/root/lib/lib.h"
expect 1 "lib/lib.h:5: lib_three: a public function without a comment of its own" \
    "a public function under another's comment"

fresh_tree
printf 'int lib_two(void);   /* 2 */\nvoid lib_free(\n    void *p);\n' >> "$tmp/root/mid/mid.h"
expect 1 "mid/mid.h:3: lib_free: a public function without a comment of its own" \
    "a trailing comment documents its own line, not the next declaration"

fresh_tree
printf '/* Says. */\n\nstatic inline int lib_gap(void) { return 0; }\n' >> "$tmp/root/lib/lib.h"
expect 1 "lib/lib.h:5: lib_gap: a public function without a comment of its own" \
    "an inline definition whose comment is not just above it"

# include/npurr: what npurr installs. Any folder includes it; it includes
# only itself (so the installed copy stands alone); its functions need comments.
installed_tree() {
    fresh_tree
    mkdir -p "$tmp/root/include/npurr"
    printf '/* Types. */\ntypedef int npurr_int;\n' > "$tmp/root/include/npurr/types.h"
    printf '#include "npurr/types.h"\n/* Calls. */\nint npurr_call(npurr_int x);\n' \
        > "$tmp/root/include/npurr/api.h"
}
installed_tree
printf '#include "npurr/api.h"\n' >> "$tmp/root/other/other.c"
printf '#include "npurr/api.h"\n' >> "$tmp/root/lib/lib.c"
expect 0 "" "any folder includes an installed header; installed headers include each other"

installed_tree
printf '#include "lib/lib.h"\n' >> "$tmp/root/include/npurr/api.h"
expect 1 "include/npurr/api.h:4: #include \"lib/lib.h\": an installed header (include/npurr/) includes only installed headers" \
    "an installed header including a library's header"

installed_tree
printf 'int npurr_undocumented(void);\n' >> "$tmp/root/include/npurr/api.h"
expect 1 "include/npurr/api.h:4: npurr_undocumented: a public function without a comment of its own" \
    "an installed header's undocumented function"

status=0
sh "$check" "$tmp/root" "$tmp/no-such-rules" >/dev/null 2>&1 || status=$?
if [ "$status" -eq 2 ]; then echo "ok   usage error on a missing rules file"; else
    echo "FAIL usage error on a missing rules file: exit $status, expected 2"
    failures=$((failures + 1))
fi

# tools/check_function_length.sh: 80 lines pass, 81 fail with file, line, name.
lengths="$here/check_function_length.sh"
long_function() {   # FILE NAME BODY_LINES: a function whose '{' to '}' is BODY_LINES + 2 lines
    {
        printf 'static const int table[] = {\n    1,\n};\n'
        printf 'int %s(int a,\n        int b) {\n' "$2"
        i=0
        while [ $i -lt "$3" ]; do printf '    a += b;\n'; i=$((i + 1)); done
        printf '    return a;\n}\n'
    } > "$1"
}
rm -rf "$tmp/len" && mkdir -p "$tmp/len/lib" "$tmp/len/tests"
long_function "$tmp/len/lib/ok.c" just_fits 77
long_function "$tmp/len/tests/test_long.c" test_may_be_long 200
if out=$(sh "$lengths" "$tmp/len" 2>&1); then echo "ok   an 80-line function passes; tests are not product"; else
    echo "FAIL an 80-line function: $out"
    failures=$((failures + 1))
fi
long_function "$tmp/len/lib/long.c" one_too_many 78
status=0
out=$(sh "$lengths" "$tmp/len" 2>&1) || status=$?
if [ "$status" -eq 1 ] && [ "$out" = "lib/long.c:5: function one_too_many is 81 lines long (at most 80: split it into named steps)" ]; then
    echo "ok   an 81-line function fails with its file, line and name"
else
    echo "FAIL an 81-line function: exit $status, said: $out"
    failures=$((failures + 1))
fi

# The real tree, copied: its rooms pass; a presentation file that reaches
# into the derivation room's internals is the one violation.
if [ $# -eq 2 ]; then
    mkdir -p "$tmp/real"
    (cd "$1" && tar cf - --exclude='./build*' --exclude=./.git .) | (cd "$tmp/real" && tar xf -)
    status=0
    out=$(sh "$check" "$tmp/real" "$2" 2>&1) || status=$?
    if [ "$status" -eq 0 ]; then echo "ok   the real tree passes with its rooms"; else
        echo "FAIL the real tree: exit $status: $out"
        failures=$((failures + 1))
    fi
    file=analysis/present/ana_stats.c
    line=$(($(wc -l < "$tmp/real/$file") + 1))
    printf '#include "analysis/derive/ana_steps.h"\n' >> "$tmp/real/$file"
    status=0
    out=$(sh "$check" "$tmp/real" "$2" 2>&1) || status=$?
    violations=$(printf '%s\n' "$out" | grep -c "^analysis/" || true)
    if [ "$status" -eq 1 ] && [ "$violations" -eq 1 ] &&
        printf '%s\n' "$out" | grep -q "^$file:$line: #include \"analysis/derive/ana_steps.h\""; then
        echo "ok   a presentation file including a derivation internal fails, once: $(printf '%s\n' "$out" | head -1)"
    else
        echo "FAIL presentation including a derivation internal: exit $status, $violations violation(s): $out"
        failures=$((failures + 1))
    fi
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures case(s) failed"
    exit 1
fi
