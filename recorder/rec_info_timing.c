/*
 * rec_info_timing.c - the timing section of `npurr info RUN`: every timing
 * parameter the run used (meta hw.<key>) and whether it was the default or
 * came from `--hw` (cli/cmd_info.c prints them with their units).
 *
 * The only way a run's value differs from the engine's default is a `--hw`
 * file, so "from --hw" is told by comparing with the default; a file that
 * restates a default is indistinguishable and changes nothing. Runs recorded
 * before the keys said their unit store hw.roce_gbps and the like; those are
 * read under the new key (engine_hw_find knows both names).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_internal.h"

static const char *meta_hw(sqlite3 *db, const engine_hw_param *p, sqlite3_stmt *q, char *buf,
                           size_t len) {
    const char *keys[2] = {p->key, p->old_key};
    for (int i = 0; i < 2; i++) {
        if (!keys[i]) continue;
        char name[128];
        snprintf(name, sizeof name, "hw.%s", keys[i]);
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0)) {
            snprintf(buf, len, "%s", (const char *)sqlite3_column_text(q, 0));
            return buf;
        }
    }
    (void)db;
    return NULL;
}

int rec_run_timing(const char *run_dir, rec_hw_value *vals, size_t n, char *err,
                   size_t errlen) {
    char path[4200];
    if (rec_path(path, sizeof path, run_dir, "index.db")) {
        snprintf(err, errlen, "run path '%s' is too long", run_dir);
        return -1;
    }
    if (n < engine_hw_count()) {
        snprintf(err, errlen, "room for %zu timing values, the engine has %zu", n,
                 engine_hw_count());
        return -1;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    if (rec_index_open_ro(path, &db, err, errlen) != 0) return -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &q, NULL) !=
            SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_finalize(q);
        sqlite3_close(db);
        return -1;
    }
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        char buf[64];
        const char *v = meta_hw(db, p, q, buf, sizeof buf);
        vals[i] = (rec_hw_value){.param = p, .recorded = v != NULL};
        if (!v) continue;
        char *end = NULL;
        vals[i].value = strtod(v, &end);
        /* Recorded with %.17g, so equality with the default is exact. */
        vals[i].from_hw = end != v && vals[i].value != p->def;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return 0;
}
