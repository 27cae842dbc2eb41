#!/usr/bin/env bash
# report.sh - `npurr report` end to end on the layered dispatch that leaks
# credits (the README's deadlock): the page is one self-contained file (no
# script, no external reference), has every plot, and its wait-for graph
# shows the RDMACoordinators blocked on the rdma ring heads that the
# ForwarderCoordinators last wrote and should have advanced, a dead end.
# Then a real browser opens it: headless Chromium must log no console
# error, and the page it renders must hold the plots (the SVG elements in
# its DOM, and a screenshot that is not blank). Chromium is installed by
# tools/setup.sh; only if it is truly absent is that part skipped, saying so.
# Usage: bash report.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$npurr" report --help >/dev/null || fail "report --help"
"$npurr" report "$work/none" -o "$work/x.html" 2>"$work/err"
[ $? -eq 1 ] || fail "a missing run is exit 1"
"$npurr" report "$work/none" 2>/dev/null
[ $? -eq 2 ] || fail "report without -o is a usage error"

"$npurr" record -k dispatch-layered --nodes 2 --tokens 64 --inject credit-leak -o "$work/leak" \
    >"$work/out" 2>&1
[ $? -eq 3 ] || { cat "$work/out" >&2; fail "the credit leak must deadlock (exit 3)"; }
"$npurr" report "$work/leak" -o "$work/leak.html" 2>"$work/err" ||
    { cat "$work/err" >&2; fail "report"; }

roce=$("$npurr" hw --file | sed -n 's/^roce_gbytes_per_s=//p')   # the line rate the run recorded
python3 - "$work/leak.html" "$roce" <<'PY' || fail "report page"
import re, sys
html = open(sys.argv[1]).read()
assert len(html) < 4 << 20, "page is %d bytes" % len(html)
assert "<script" not in html.lower(), "a script in the page"
# Self-contained: no attribute loads anything (the SVG namespace is a name, not a fetch).
assert not re.search(r'\b(src|href)\s*=', html), "an external reference"
assert not re.search(r'url\((?!#)', html), "a CSS url()"
for plot in ("waitfor", "heatmap", "activity", "rings", "bandwidth", "nic"):
    m = re.search(r'<svg id="%s".*?</svg>' % plot, html, re.S)
    assert m and m.group(0).count("<") > 10, "plot %s missing or empty" % plot
assert 'class="badge hung">deadlock' in html, "outcome"
# the NIC plot is scaled to the recorded line rate (hw.roce_gbytes_per_s)
assert "share of the %g GB/s line rate" % float(sys.argv[2]) in html, "NIC line rate"
# every link class on its own axis: RDMA (tens of GB/s) is a drawn line, not
# flattened under HBM's thousands; each panel names its own peak
bw = re.search(r'<svg id="bandwidth".*?</svg>', html, re.S).group(0)
for c in ("hbm", "hccs", "rdma"):
    m = re.search(r'<path class="line" id="bandwidth-%s"[^>]* d="([^"]+)"' % c, bw)
    assert m, "no %s panel" % c
    ys = {float(y) for y in re.findall(r"[ML][0-9.]+ ([0-9.]+)", m.group(1))}
    assert max(ys) - min(ys) > 30, "the %s line is flat: %s" % (c, sorted(ys)[:5])
peaks = re.findall(r'>([0-9.e+]+) GB/s</text>', bw)
assert len(peaks) == 3 and all(float(p) > 0 for p in peaks), peaks
# both heat maps carry a colour scale saying what their colours mean
scales = re.findall(r'<svg class="scale"[^>]*aria-label="([^"]+)"', html)
assert any("waiting" in s for s in scales) and any("NIC egress" in s for s in scales), scales
# the stall sites table says how it groups, and how that differs from stats --by site
assert re.search(r"One row per kernel line, role and wait cause.*npurr stats RUN --by site", html), "sites grouping"
g = re.search(r'<svg id="waitfor".*?</svg>', html, re.S).group(0)
def texts(cls):
    return [re.sub(r"<[^>]+>", " ", m) for m in
            re.findall(r'<g class="%s">(.*?)</g>' % cls, g, re.S)]
blocked, words, writers = texts("node blk"), texts("node word"), texts("node dead")
assert blocked and all("RDMACoordinator" in t for t in blocked), blocked[:3]
assert words and all(re.search(r"rdma_channel\S*\.head &gt;= \d+", t) for t in words), words[:3]
assert writers and all("ForwarderCoordinator" in t and "dead end" in t for t in writers), writers[:3]
assert len(blocked) == len(words), "one word per blocked core"
# Every blocked core's edge goes through its word to a writer.
assert g.count('class="e dead"') == len(blocked), "word -> writer edges"
print("blocked=%d writers=%d bytes=%d" % (len(blocked), len(writers), len(html)))
PY

# ------------------------------------------------------------------ browser
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "SKIP: chromium is not installed (tools/setup.sh installs it); the browser check did not run"
    echo "report e2e: ok (without browser)"
    exit 0
fi
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --hide-scrollbars --enable-logging=stderr --v=0)
url="file://$work/leak.html"
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" --dump-dom "$url" \
    >"$work/dom.html" 2>"$work/chrome.err" || { tail -20 "$work/chrome.err" >&2; fail "chromium --dump-dom"; }
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" \
    --window-size=1040,2400 --screenshot="$work/shot.png" "$url" \
    >/dev/null 2>>"$work/chrome.err" || { tail -20 "$work/chrome.err" >&2; fail "chromium --screenshot"; }
# Console messages (errors, failed loads) are logged as CONSOLE lines.
if grep -E 'CONSOLE|Failed to load resource|Uncaught' "$work/chrome.err"; then
    fail "the browser logged console errors"
fi
python3 - "$work/dom.html" <<'PY' || fail "rendered DOM"
import re, sys
dom = open(sys.argv[1]).read()
for plot in ("waitfor", "heatmap", "activity", "rings", "bandwidth", "nic"):
    m = re.search(r'<svg id="%s"[^>]*>(.*?)</svg>' % plot, dom, re.S)
    assert m and len(re.findall(r"<(rect|path|text)\b", m.group(1))) > 5, "DOM lacks plot " + plot
PY
read -r w h ink colors < <(python3 "$here/lib/png_ink.py" "$work/shot.png") || fail "screenshot unreadable"
echo "screenshot ${w}x${h}: ink $ink, $colors colours"
python3 -c "import sys; sys.exit(0 if float('$ink') > 0.03 and int('$colors') > 20 else 1)" ||
    fail "the screenshot is blank (ink $ink, $colors colours)"
echo "report e2e: ok"
