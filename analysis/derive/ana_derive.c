/*
 * ana_derive.c - the waits part: what every question about stalls reads.
 *
 * Order matters: the waits are loaded first (what the events pass looks
 * for), the one events pass (ana_scan.c) materializes wake_events,
 * word_writes and the facts the cause classifier reads (ana_cause.c), and
 * the views come last. Every step drops and recreates what it owns, so
 * deriving twice gives the same index. The transaction, the stamps and
 * the choice of parts are the opener's (analysis/ana_parts.c).
 *
 * Speed: the first question pays for this, so it is built to write
 * millions of rows fast: the events pass reads the trace directly, rows go
 * out in multi-row INSERTs (ana_bulk.c), indexes are made after their
 * tables are full.
 */
#include <string.h>

#include "analysis/derive/ana_steps.h"

int ana_derive_waits(sqlite3 *db, const ana_run *run, const char *dir, int with_transfers,
                     char *err, size_t errlen) {
    ana_facts facts;
    double t = ana_step_clock(NULL, 0);
    ana_causes *c = ana_causes_load(db, run, err, errlen);
    if (!c) return -1;
    t = ana_step_clock("waits", t);
    int rc = ana_scan_events(db, run, dir, c, with_transfers, &facts, err, errlen);
    t = ana_step_clock("scan", t);
    if (!rc) {
        rc = ana_causes_derive(c, &facts);
        t = ana_step_clock("causes", t);
        ana_facts_free(&facts);
    }
    ana_causes_free(c);
    /* The partial index finds a deadlock's blocked waits without a scan;
     * the recorder makes it with the table (wait_rows_blocked), older
     * indexes, whose waits is a wide table, get it here. */
    if (!rc && !strcmp(ana_waits_table(db), "waits"))
        rc = ana_exec(db,
                      "CREATE INDEX IF NOT EXISTS waits_blocked ON waits(rank, core)"
                      " WHERE end_seq IS NULL;",
                      err, errlen);
    if (!rc) rc = ana_create_views(db, run, err, errlen), t = ana_step_clock("views", t);
    return rc;
}
