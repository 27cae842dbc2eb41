#!/bin/sh
# check_function_length.sh - fails when a product function is longer than
# 80 lines, naming its file, line, name and length.
#
#   sh tools/check_function_length.sh ROOT [MAX]
#
# A function that does not fit on a screen does several things, and the
# next engineer reads it whole to change one; the build keeps every
# function of the product (the libraries' folders and cli/) within MAX
# lines (default 80), so a long one is split into named steps when it is
# written, not in a clean-up later. tests/, bench/, examples/ and build
# folders are not product. The house style makes a C function easy to
# find without a parser: its signature starts in column 0 (an identifier,
# a '(' and no '='), its body opens with the '{' ending the signature's
# last line and closes with a '}' in column 0. Lines are counted from the
# '{' line to the '}' line.
set -eu
root=${1:?usage: check_function_length.sh ROOT [MAX]}
max=${2:-80}
cd "$root"
files=$(ls -d */ | while read -r d; do
    case "$d" in
        tests/|bench/|examples/|build*/|tools/|docs/|include/|cmake/|traces/) ;;
        *) find "$d" -name '*.c' | sort ;;   # a library's rooms (analysis/derive/) too
    esac
done)
[ -n "$files" ] || exit 0
# shellcheck disable=SC2086
awk -v max="$max" '
    FNR == 1 { start = 0; cand = 0 }
    # a signature: an identifier in column 0 and a "(" (no "=": not an initializer)
    start == 0 && cand == 0 && /^[A-Za-z_]/ && /\(/ && !/=/ && !/^(typedef|struct|enum|union)[ \t]/ {
        cand = 1
        head = $0
        sub(/\(.*/, "", head)
        n = split(head, words, /[ \t*]+/)
        name = words[n]
    }
    start == 0 && cand && /;[ \t]*$/ { cand = 0 }   # a declaration
    start == 0 && cand && /\{[ \t]*$/ { start = FNR; cand = 0 }
    start > 0 && /^\}/ {
        len = FNR - start + 1
        if (len > max) {
            printf "%s:%d: function %s is %d lines long (at most %d: split it into named steps)\n", \
                FILENAME, start, name, len, max
            bad = 1
        }
        start = 0
    }
    END { exit bad ? 1 : 0 }
' $files
