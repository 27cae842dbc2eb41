/*
 * support.h - what several unit tests share: kernel options from a
 * name/value list, a run's configuration for a layout or estimate hook, the
 * check that setup refuses a bad shape, a layout's text, a recorded
 * scenario run to its end with its index and analysis tables, a run
 * folder's index opened, queried, dumped and rebuilt by reindex, an `events` row checked against the
 * event the observer saw, and a test folder removed (or kept with
 * NPURR_TEST_KEEP=1, to look at it with sqlite3).
 *
 * Header-only, static inline: every tests/test_*.c is its own executable,
 * and each uses only some of these. Include it after <cmocka.h>.
 */
#ifndef NPURR_TESTS_SUPPORT_H
#define NPURR_TESTS_SUPPORT_H

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "recorder/recorder.h"

/* The registered kernel called name (the test fails without it). */
static inline const kernel_desc *support_kernel(const char *name) {
    const kernel_desc *d = kernels_find(name);
    if (!d) fail_msg("kernel %s is not registered", name);
    return d;
}

/* The defaults of a run (910B2) on nodes x npus with payload mode payload:
 * the configuration a layout or estimate hook takes. */
static inline engine_config support_config(int nodes, int npus, engine_payload payload) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    cfg.payload = payload;
    return cfg;
}

/* d's defaults, then kv: NULL-terminated name, value pairs (NULL kv: none).
 * A test names only real options, so an unknown one fails it. */
static inline void support_opts(const kernel_desc *d, kernel_opts *o, const char *const *kv) {
    kopts_init(o, d);
    for (int i = 0; kv && kv[i]; i += 2)
        if (kopts_set(o, kv[i], kv[i + 1]) != 0) fail_msg("%s has no option %s", d->name, kv[i]);
}

/* d's setup on nodes x npus with kv must fail, leave no state and say
 * needle. */
static inline void support_expect_setup_error(const kernel_desc *d, int nodes, int npus,
                                              const char *const *kv, const char *needle) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    engine *e;
    char err[1024];
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    kernel_opts o;
    support_opts(d, &o, kv);
    void *state = NULL;
    int rc = d->setup(e, &o, &state, err, sizeof err);
    engine_destroy(e);
    assert_int_equal(rc, -1);
    assert_null(state);
    if (!strstr(err, needle)) fail_msg("expected '%s' in: %s", needle, err);
}

/* The topology kernels see for cfg (layout and estimate hooks): a pointer to
 * one of four slots that are reused in turn, enough for the calls of one
 * assertion. */
static inline const npurr_topology *support_topo(const engine_config *cfg) {
    static npurr_topology slots[4];
    static int next;
    npurr_topology *t = &slots[next++ % 4];
    char err[128];
    assert_int_equal(kernels_topology(cfg, t, err, sizeof err), 0);
    return t;
}

/* The configuration r's header records (rec_meta_get_config), with the
 * hw keys it lacks in note (NULL allowed): 0, or -1 with err. */
static inline int replay_meta_config(rec_reader *r, engine_config *cfg, char *note,
                                     size_t notelen, char *err, size_t errlen) {
    rec_meta_config_read how;
    int rc = rec_meta_get_config(rec_reader_meta_get, r, cfg, &how, err, errlen);
    if (note && notelen) snprintf(note, notelen, "%.*s", (int)(notelen - 1), how.missing_hw);
    return rc;
}

/* What `npurr layout -k d` prints for o on nodes x npus (free it), or NULL
 * with err when the layout refuses them. */
static inline char *support_layout_text(const kernel_desc *d, const kernel_opts *o, int nodes,
                                        int npus, char *err, size_t errlen) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    engine_config cfg = support_config(nodes, npus, PAYLOAD_REF);
    npurr_topology topo;
    assert_int_equal(kernels_topology(&cfg, &topo, err, errlen), 0);
    int rc = d->layout(o, &topo, f, err, errlen);
    fclose(f);
    if (rc == 0) return buf;
    free(buf);
    return NULL;
}

/* RUN/index.db, read-only. */
static inline sqlite3 *support_open_index(const char *run_dir) {
    char path[4200];
    int n = snprintf(path, sizeof path, "%s/index.db", run_dir);
    assert_true(n > 0 && (size_t)n < sizeof path);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

/* The first column of sql's first row as a malloc'd string, NULL when
 * there is no row or it is NULL; a query that does not prepare fails. */
static inline char *support_query_text(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    char *v = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

/* Every row of every table the recorder writes, as text in a stable
 * order (malloc'd): two indexes are the same when their dumps are. */
static inline char *support_dump_index(const char *run_dir) {
    static const char *const tables[] = {"meta", "strings", "tracks", "sites", "objects",
                                         "rings", "chunks", "waits"};
    sqlite3 *db = support_open_index(run_dir);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s ORDER BY 1", tables[t]);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        fprintf(m, "[%s]\n", tables[t]);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *s = sqlite3_column_text(st, c);
                fprintf(m, "%s%s", c ? "|" : "", s ? (const char *)s : "NULL");
            }
            fputc('\n', m);
        }
        sqlite3_finalize(st);
    }
    fclose(m);
    sqlite3_close(db);
    return text;
}

/* A temporary folder made from a mkdtemp template ("/tmp/npurr_x_XXXXXX",
 * rewritten in place) and the run folder inside it, run_dir = tmp/run. */
static inline int support_tmp_run(char *tmp, size_t tmp_len, char *run_dir, size_t run_len) {
    (void)tmp_len;
    if (!mkdtemp(tmp)) return -1;
    int n = snprintf(run_dir, run_len, "%s/run", tmp);
    return n > 0 && (size_t)n < run_len ? 0 : -1;
}

/* An engine for cfg recorded from its first declaration into run_dir
 * (kernel and command_line name the scenario in meta). 0, or -1 after
 * saying why on stderr. */
static inline int support_record_start(const engine_config *cfg, const char *kernel,
                                       const char *command_line, const char *run_dir,
                                       engine **e, rec_writer **w) {
    char err[ENGINE_ERRLEN];
    *e = NULL;
    *w = NULL;
    if (engine_create(cfg, e, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    rec_run_info info = {kernel, command_line, engine_get_config(*e), engine_cores_per_rank(*e),
                         engine_num_aic(*e), engine_num_aiv(*e), NULL};
    if (rec_open(run_dir, &info, w, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        engine_destroy(*e);
        *e = NULL;
        return -1;
    }
    engine_observer obs;
    rec_observer(*w, &obs);
    engine_set_observer(*e, &obs);
    return 0;
}

/* Runs e (recorded by w into run_dir) to its end, which must be want, then
 * finishes the trace and index and derives the analysis tables. 0, or -1
 * after saying why on stderr (for cmocka group setups). */
static inline int support_record_to_end(engine *e, rec_writer *w, engine_outcome want,
                                        const char *run_dir) {
    char err[ENGINE_ERRLEN];
    engine_result res;
    if (engine_run(e, &res, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (res.outcome != want) {
        fprintf(stderr, "expected %s, got %s: %s\n", engine_outcome_name(want),
                engine_outcome_name(res.outcome), res.message);
        return -1;
    }
    if (rec_close(w, &res, "skipped", "", err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    engine_destroy(e);
    if (ana_open(run_dir, ANA_OPEN_REDERIVE, NULL, NULL, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

/* The row st is on, from "SELECT seq, time, rank, core, pipe, kind, sub,
 * addr, len, value, aux, link, site, object, peer FROM events", is e. */
static inline void support_assert_event_row(sqlite3_stmt *st, const engine_event *e) {
    assert_int_equal(sqlite3_column_int64(st, 0), (int64_t)e->seq);
    assert_int_equal(sqlite3_column_int64(st, 1), (int64_t)e->time);
    assert_int_equal(sqlite3_column_int64(st, 2), e->rank);
    assert_int_equal(sqlite3_column_int64(st, 3), e->core);
    assert_string_equal((const char *)sqlite3_column_text(st, 4), engine_pipe_name(e->pipe));
    assert_string_equal((const char *)sqlite3_column_text(st, 5), engine_event_kind_name(e->kind));
    assert_int_equal(sqlite3_column_int64(st, 6), e->sub);
    assert_int_equal((uint64_t)sqlite3_column_int64(st, 7), e->addr);
    assert_int_equal(sqlite3_column_int64(st, 8), (int64_t)e->len);
    assert_int_equal(sqlite3_column_int64(st, 9), e->value);
    assert_int_equal(sqlite3_column_int64(st, 10), e->aux);
    assert_int_equal(sqlite3_column_int64(st, 11), (int64_t)e->link);
    assert_int_equal(sqlite3_column_int64(st, 12), e->site);
    assert_int_equal(sqlite3_column_int64(st, 13), e->object);
    assert_int_equal(sqlite3_column_int64(st, 14), e->peer);
}

/* Deletes RUN/index.db, rebuilds it from the trace alone, and checks the
 * rebuilt index equals the one the recorder wrote. Returns the dump's
 * length (how much was compared). */
static inline size_t support_assert_reindex_identical(const char *run_dir) {
    char *before = support_dump_index(run_dir);
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/index.db", run_dir);
    assert_int_equal(unlink(path), 0);
    if (rec_reindex(run_dir, err, sizeof err) != 0) fail_msg("reindex: %s", err);
    char *after = support_dump_index(run_dir);
    assert_string_equal(before, after);
    size_t len = strlen(before);
    free(before);
    free(after);
    return len;
}

/* Removes dir and everything in it, unless NPURR_TEST_KEEP is set (then it
 * says where the folder is). 0 or -1, as a cmocka teardown returns. */
static inline int support_remove_dir(const char *dir) {
    if (getenv("NPURR_TEST_KEEP")) {
        fprintf(stderr, "kept %s\n", dir);
        return 0;
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A copy of run_dir at run_dir + "-derived" with the analysis tables
 * derived, leaving the recorder's index as recorded; returns the copy's
 * path (static). */
static inline const char *support_derived_copy(const char *run_dir) {
    static char copy[4200];
    char cmd[3 * sizeof copy];
    snprintf(copy, sizeof copy, "%s-derived", run_dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", copy, run_dir, copy);
    assert_int_equal(system(cmd), 0);
    char err[512];
    if (ana_open(copy, ANA_OPEN_REDERIVE, NULL, NULL, err, sizeof err)) fail_msg("ana_derive %s: %s", copy, err);
    return copy;
}

#endif
