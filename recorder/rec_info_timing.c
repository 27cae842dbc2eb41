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

/* The index's meta table as a rec_meta_get_fn: values copied into a ring
 * of buffers, so the reader may hold a few at once. */
typedef struct meta_source {
    sqlite3_stmt *q;
    char buf[4][512];
    int next;
} meta_source;

static const char *meta_get(void *ctx, const char *key) {
    meta_source *m = ctx;
    sqlite3_reset(m->q);
    sqlite3_bind_text(m->q, 1, key, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(m->q) != SQLITE_ROW || !sqlite3_column_text(m->q, 0)) return NULL;
    char *out = m->buf[m->next++ % 4];
    snprintf(out, sizeof m->buf[0], "%s", (const char *)sqlite3_column_text(m->q, 0));
    return out;
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
    meta_source src = {.q = q};
    engine_config cfg;
    rec_meta_config_read how;
    if (rec_meta_get_config(meta_get, &src, &cfg, &how, err, errlen)) {
        sqlite3_finalize(q);
        sqlite3_close(db);
        return -1;
    }
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        vals[i] = (rec_hw_value){.param = p, .recorded = how.hw_recorded[i]};
        if (!vals[i].recorded) continue;
        vals[i].value = engine_hw_get(&cfg.hw, p);
        /* recorded with %.17g, so equality with the default is exact */
        vals[i].from_hw = vals[i].value != p->def;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return 0;
}
