/*
 * npurr_sqlite.c - the loadable SQLite extension build/libnpurr_sqlite.so:
 * what `npurr sql` sees, from the tools people already use.
 *
 *   sqlite3 RUN/index.db        then  .load build/libnpurr_sqlite
 *   python3: conn = sqlite3.connect("RUN/index.db")
 *            conn.enable_load_extension(True)
 *            conn.load_extension("build/libnpurr_sqlite")
 *
 * Loading it on a connection opened on RUN/index.db does exactly what
 * `npurr sql` does on its own connection, with the same two calls: it
 * derives the analysis tables if they are missing or stale
 * (ana_open, the one entry point `npurr sql` uses, on a private
 * connection it then closes) and registers the `events` virtual table over
 * RUN/trace.zst on the user's connection (rec_register_events_vtab,
 * recorder/rec_vtab.c; kind, pipe and sub_name are names) and the
 * npurr_packed module the packed derived tables (transfers, word_writes,
 * wake_events, wait_labels) are read through (analysis/derive/ana_packed_vtab.c). Views,
 * wait_causes and waits.cause are then there on a run no npurr command
 * touched. On a read-only connection it derives nothing (missing tables
 * are an error naming `npurr stats RUN`), and a truncated run is refused
 * with the warning every other reader prints. The derivation cannot run on
 * the user's connection: hosts open it serialized (Python does) and hold its mutex during the load, while the
 * derivation's bulk inserts step statements from a worker thread.
 *
 * The static libraries are linked in (built position-independent); SQLite
 * itself is the host's shared libsqlite3, the same one the sqlite3 shell and
 * Python's sqlite3 module use on Debian, so the library code calls the
 * SQLite API directly rather than through sqlite3ext.h's routine table.
 * Entry point: sqlite3_npurrsqlite_init, the name SQLite derives from the
 * file name, and sqlite3_extension_init for hosts that ask for the default.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "analysis/analysis.h"
#include "recorder/recorder.h"

static int fail(char **pzErrMsg, const char *fmt, const char *a, const char *b) {
    if (pzErrMsg) *pzErrMsg = sqlite3_mprintf(fmt, a, b);
    return SQLITE_ERROR;
}

int sqlite3_npurrsqlite_init(sqlite3 *db, char **pzErrMsg, const void *pApi) {
    (void)pApi;
    const char *file = sqlite3_db_filename(db, "main");
    if (!file || !*file)
        return fail(pzErrMsg, "npurr: open RUN/index.db first (the connection has no file)%s%s",
                    "", "");
    char *copy = strdup(file);
    if (!copy) return SQLITE_NOMEM;
    char *run_dir = dirname(copy);
    char err[2048];
    int rc = SQLITE_OK;
    sqlite3 *own = NULL;
    ana_source src;
    /* A read-only connection (sqlite3 -readonly, Python's mode=ro) says
     * nothing may be written: tables already derived are served, missing
     * ones are refused rather than written into index.db. */
    int flags = sqlite3_db_readonly(db, "main") == 1 ? ANA_OPEN_NO_DERIVE : 0;
    if (ana_open(run_dir, flags, &own, &src, err, sizeof err) != 0)
        rc = fail(pzErrMsg, "npurr: %s%s", err, "");
    else if (src.partial)
        /* What every reader does with a truncated run: say so and fail.
         * `npurr sql RUN` serves it with the same warning and exit 1. */
        rc = fail(pzErrMsg, "npurr: %s: %s (npurr sql shows it with this warning)", run_dir,
                  src.partial_note);
    else if (src.cached)
        /* The tables went into the private cache (a read-only run, or no
         * room on its disk): this connection's index.db does not have them. */
        rc = fail(pzErrMsg, "npurr: the analysis tables of this run are not in its index.db "
                  "(read-only run or no room on its disk); they were derived into %s: open "
                  "that file and load the extension there%s", src.db_path, "");
    else if (rec_register_events_vtab(db, run_dir, err, sizeof err) != 0 ||
             ana_packed_register(db, err, sizeof err) != 0)
        rc = fail(pzErrMsg, "npurr: %s: %s", run_dir, err);
    sqlite3_close(own);
    free(copy);
    return rc;
}

int sqlite3_extension_init(sqlite3 *db, char **pzErrMsg, const void *pApi) {
    return sqlite3_npurrsqlite_init(db, pzErrMsg, pApi);
}
