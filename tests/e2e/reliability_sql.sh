#!/bin/bash
# `npurr sql` is read-only: every statement that would write (or reach
# another file) is refused with exit 1 and leaves the run byte for byte as
# it was. A read-only run (chmod -R a-w) can still be queried by another
# user: its analysis tables are derived into that user's private cache.
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"
wakes=$(small_run_wakes)

small_run "$work/run"
expect 0 "$npurr" stats "$work/run"    # derived once; from here nothing may change
trace_sum=$(sum_of "$work/run/trace.zst")
index_sum=$(sum_of "$work/run/index.db")
while IFS= read -r q; do
    expect 1 "$npurr" sql "$work/run" "$q"; has "read-only"
    [ "$(sum_of "$work/run/index.db")" = "$index_sum" ] || fail "'$q' changed index.db"
done <<EOS
DELETE FROM waits
DELETE FROM wait_rows
UPDATE waits SET cause = 'x'
DROP TABLE meta
DROP VIEW stall_summary
UPDATE meta SET value = 'deadlock' WHERE key = 'outcome'
INSERT INTO meta VALUES ('x', 'y')
CREATE TABLE t(x)
CREATE TEMP TABLE t(x)
ALTER TABLE waits ADD COLUMN x
PRAGMA journal_mode = WAL
PRAGMA query_only = 0
PRAGMA writable_schema = 1
VACUUM
VACUUM INTO '$work/elsewhere.db'
ATTACH '$work/other.db' AS other
SELECT 1; DELETE FROM meta
REINDEX
EOS
[ -e "$work/elsewhere.db" ] && fail "VACUUM INTO wrote a copy"
[ -e "$work/other.db" ] && fail "ATTACH created a database"
expect 0 "$npurr" sql "$work/run" "SELECT value FROM meta WHERE key = 'outcome'"
has "completed"
[ "$(sum_of "$work/run/trace.zst")" = "$trace_sum" ] || fail "trace.zst changed"

# --- a read-only run queried by a user who owns nothing in it
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "reliability_sql: SKIP the non-owner case (needs root and setpriv)"
    echo "reliability_sql: all other checks passed"
    exit 0
fi
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/nonexistent \
                  XDG_CACHE_HOME="$work/nobody-cache" "$@"; }
if ! as_nobody test -x "$npurr"; then
    echo "reliability_sql: SKIP the non-owner case (nobody cannot reach $npurr)"
    exit 0
fi
chmod 755 "$work"
small_run "$work/shared"        # fresh: its analysis tables are not derived yet
mkdir "$work/nobody-cache" && chown nobody "$work/nobody-cache" && chmod 700 "$work/nobody-cache"
chmod -R a-w "$work/shared"
chmod -R a+rX "$work/shared"
shared_sum=$(sum_of "$work/shared/index.db")
expect 0 as_nobody "$npurr" stats "$work/shared"; has "is read-only"; has "stalls by role"
expect 0 as_nobody "$npurr" sql "$work/shared" "SELECT count(*) FROM wake_events"
grep -qx " *$wakes" "$work/out" || { cat "$work/out"; fail "nobody's wake_events"; }
has_not() { ! grep -qF -- "$1" "$work/out" || { cat "$work/out"; fail "output has '$1'"; }; }
has_not "is read-only"          # derived once, then served from the cache
expect 0 as_nobody "$npurr" export "$work/shared" --chrome "$work/nobody-cache/t.json"
expect 1 as_nobody "$npurr" sql "$work/shared" "DELETE FROM waits"; has "read-only"
[ "$(sum_of "$work/shared/index.db")" = "$shared_sum" ] || fail "nobody changed the shared index"
ls "$work/nobody-cache"/npurr/*.db >/dev/null 2>&1 || fail "no cache database for the read-only run"
chmod -R u+w "$work/shared"
echo "reliability_sql: all checks passed"
