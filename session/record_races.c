/*
 * record_races.c - `--check races` in a record session: the happens-before
 * checker (checker/hb.h) wrapped around whatever observes the run (the
 * recorder, or nothing with --no-trace), its counts once the run is over,
 * and its reports written as the `races` table of the run's index.db. The
 * caller prints the reports (hb_print) from record_result.checker.
 */
#include "session/record_races.h"

#include <string.h>

int record_races_attach(engine *e, int enabled, hb_checker **out, char *err, size_t errlen) {
    *out = NULL;
    if (!enabled) return 0;
    engine_observer inner = engine_get_observer(e);
    if (hb_create(e, &inner, out, err, errlen)) return -1;
    engine_observer o = hb_observer(*out);
    engine_set_observer(e, &o);
    return 0;
}

void record_races_count(hb_checker *hb, const engine_result *res, record_result *r) {
    if (!hb) return;
    hb_finish(hb, res);
    r->races = hb_races(hb);
    r->sync_errors = hb_sync_errors(hb);
}

int record_races_write(hb_checker *hb, const char *run_dir, char *err, size_t errlen) {
    return hb ? hb_write_db(hb, run_dir, err, errlen) : 0;
}
