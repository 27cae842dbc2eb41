/*
 * hb_report.c - the checker's reports: kept once per pair of sites (a race
 * in a loop is one finding, with a count), printed with both sides, and
 * written as the `races` table of a run's index.db.
 */
#include "checker/hb_internal.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>

#define HB_MAX_REPORTS 100000

static const char *hb_kind_name(int kind) {
    switch (kind) {
    case HB_RACE: return "race";
    case HB_FLAG_NEVER_WAITED: return "flag-never-waited";
    case HB_WAIT_NEVER_SET: return "wait-never-set";
    case HB_TAIL_BEFORE_DATA: return "tail-before-data";
    case HB_WAIT_NEVER_SATISFIED: return "wait-never-satisfied";
    default: return "?";
    }
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h;
}

static uint64_t key_of(hb_kind kind, const hb_side *a, const hb_side *b) {
    uint64_t k = mix(0, (uint64_t)kind);
    k = mix(k, (uint64_t)(uintptr_t)a->file);
    k = mix(k, (uint64_t)a->line);
    k = mix(k, (uint64_t)a->pipe);
    if (b) {
        k = mix(k, (uint64_t)(uintptr_t)b->file);
        k = mix(k, (uint64_t)b->line);
        k = mix(k, (uint64_t)b->pipe);
    }
    return k;
}

static int same(const hb_report *r, hb_kind kind, const hb_side *a, const hb_side *b) {
    if (r->kind != kind || r->a.file != a->file || r->a.line != a->line || r->a.pipe != a->pipe)
        return 0;
    if (!b) return r->b.seq == 0 && r->b.line == 0;
    return r->b.file == b->file && r->b.line == b->line && r->b.pipe == b->pipe;
}

static void rehash(hb_reports *rep) {
    size_t cap = rep->hash_cap ? rep->hash_cap * 2 : 1024;
    uint32_t *hash = calloc(cap, sizeof *hash);
    if (!hash) abort();
    for (size_t i = 0; i < rep->n; i++) {
        const hb_report *r = &rep->v[i];
        size_t j = key_of(r->kind, &r->a, r->b.seq || r->b.line ? &r->b : NULL) & (cap - 1);
        while (hash[j]) j = (j + 1) & (cap - 1);
        hash[j] = (uint32_t)i + 1;
    }
    free(rep->hash);
    rep->hash = hash;
    rep->hash_cap = cap;
}

void report_add(hb_checker *h, hb_kind kind, const hb_side *a, const hb_side *b,
                const char *object, const char *what) {
    hb_reports *rep = &h->rep;
    if ((rep->n + 1) * 2 > rep->hash_cap) rehash(rep);
    size_t j = key_of(kind, a, b) & (rep->hash_cap - 1);
    while (rep->hash[j]) {
        hb_report *r = &rep->v[rep->hash[j] - 1];
        if (same(r, kind, a, b)) {
            r->occurrences++;
            return;
        }
        j = (j + 1) & (rep->hash_cap - 1);
    }
    if (kind == HB_RACE) rep->races++;
    else rep->sync_errors++;
    if (rep->n == HB_MAX_REPORTS) {
        rep->dropped++;
        return;
    }
    if (rep->n == rep->cap) {
        rep->cap = rep->cap ? rep->cap * 2 : 64;
        rep->v = realloc(rep->v, rep->cap * sizeof *rep->v);
        if (!rep->v) abort();
    }
    hb_report *r = &rep->v[rep->n];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->a = *a;
    if (b) r->b = *b;
    snprintf(r->object, sizeof r->object, "%s", object ? object : "");
    snprintf(r->what, sizeof r->what, "%s", what ? what : "");
    r->occurrences = 1;
    rep->hash[j] = (uint32_t)++rep->n;
}

void reports_free(hb_reports *r) {
    free(r->v);
    free(r->hash);
    memset(r, 0, sizeof *r);
}

static void core_name(const hb_checker *h, int core, char *buf, size_t n) {
    if (core < h->n_aic) snprintf(buf, n, "AIC%d", core);
    else snprintf(buf, n, "AIV%d", core - h->n_aic);
}

void hb_describe(const hb_checker *h, uint64_t addr, uint64_t len, int rank, int core, char *buf,
                 size_t n) {
    static const char *const spaces[] = {"?", "UB", "L1", "L0A", "L0B", "L0C"};
    if (addr >> 63) {
        unsigned sp = (unsigned)((addr >> 56) & 0x7f);
        char cn[16];
        core_name(h, core, cn, sizeof cn);
        snprintf(buf, n, "%s of rank %d %s +0x%" PRIx64 "..+0x%" PRIx64, sp <= 5 ? spaces[sp] : "?",
                 rank, cn, (uint64_t)(addr & 0xffffffffULL), (uint64_t)((addr & 0xffffffffULL) + len));
        return;
    }
    gm_t g = {addr}, base;
    const char *name = engine_gm_alloc_name(h->e, g, &base);
    if (name)
        snprintf(buf, n, "%s[rank %d] +0x%" PRIx64 "..+0x%" PRIx64, name, gm_rank(g),
                 g.a - base.a, g.a - base.a + len);
    else
        snprintf(buf, n, "GM of rank %d at 0x%" PRIx64 "..0x%" PRIx64, gm_rank(g), gm_offset(g),
                 gm_offset(g) + len);
}

static const char *access_name(const hb_side *s) {
    if (!s->len) return "sync";
    if (s->write) return s->atomic ? "atomic" : "write";
    return "read";
}

static void print_side(const hb_checker *h, const char *label, const hb_side *s, FILE *out) {
    char cn[16];
    core_name(h, s->core, cn, sizeof cn);
    fprintf(out, "  %-7s rank %d %s %-5s %-6s %s:%d  seq %" PRIu64 "\n", label, s->rank, cn,
            engine_pipe_name(s->pipe), access_name(s), s->file && s->file[0] ? s->file : "?",
            s->line, s->seq);
}

void hb_print(const hb_checker *h, FILE *out, size_t max) {
    fprintf(out, "races     %" PRIu64 " race%s, %" PRIu64 " sync error%s (distinct pairs of sites)\n",
            h->rep.races, h->rep.races == 1 ? "" : "s", h->rep.sync_errors,
            h->rep.sync_errors == 1 ? "" : "s");
    for (size_t i = 0; i < h->rep.n && i < max; i++) {
        const hb_report *r = &h->rep.v[i];
        fprintf(out, "\n%s %zu: %s", hb_kind_name(r->kind), i + 1, r->what);
        if (r->occurrences > 1) fprintf(out, " (%" PRIu64 " times)", r->occurrences);
        fprintf(out, "\n");
        if (r->object[0]) fprintf(out, "  object  %s\n", r->object);
        print_side(h, r->b.seq || r->b.line ? "first" : "at", &r->a, out);
        if (r->b.seq || r->b.line) print_side(h, "second", &r->b, out);
    }
    if (h->rep.n > max)
        fprintf(out, "\n(%zu more: npurr stats RUN --races, or SELECT * FROM races)\n", h->rep.n - max);
}

static void bind_side(sqlite3_stmt *st, int col, const hb_checker *h, const hb_side *s) {
    if (!s->seq && !s->line) {
        for (int i = 0; i < 8; i++) sqlite3_bind_null(st, col + i);
        return;
    }
    char cn[16], site[512];
    core_name(h, s->core, cn, sizeof cn);
    snprintf(site, sizeof site, "%s:%d", s->file && s->file[0] ? s->file : "?", s->line);
    sqlite3_bind_int(st, col, s->rank);
    sqlite3_bind_text(st, col + 1, cn, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, col + 2, engine_pipe_name(s->pipe), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, col + 3, access_name(s), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, col + 4, site, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, col + 5, (sqlite3_int64)s->seq);
    sqlite3_bind_int64(st, col + 6, (sqlite3_int64)s->addr);
    sqlite3_bind_int64(st, col + 7, (sqlite3_int64)s->len);
}

int hb_write_db(const hb_checker *h, const char *run_dir, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/index.db", run_dir);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return -1;
    }
    const char *schema =
        "DROP TABLE IF EXISTS races;"
        "CREATE TABLE races(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, occurrences INTEGER NOT "
        "NULL, object TEXT, message TEXT,"
        " a_rank INTEGER, a_core TEXT, a_pipe TEXT, a_access TEXT, a_site TEXT, a_seq INTEGER,"
        " a_addr INTEGER, a_len INTEGER,"
        " b_rank INTEGER, b_core TEXT, b_pipe TEXT, b_access TEXT, b_site TEXT, b_seq INTEGER,"
        " b_addr INTEGER, b_len INTEGER);";
    char *msg = NULL;
    int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, &msg);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, schema, NULL, NULL, &msg);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO races VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                -1, &st, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < h->rep.n; i++) {
        const hb_report *r = &h->rep.v[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(st, 2, hb_kind_name(r->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)r->occurrences);
        sqlite3_bind_text(st, 4, r->object, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, r->what, -1, SQLITE_TRANSIENT);
        bind_side(st, 6, h, &r->a);
        bind_side(st, 14, h, &r->b);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "writing the races table of %s: %s", path,
                 msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        sqlite3_close(db);
        return -1;
    }
    sqlite3_close(db);
    return 0;
}
