/*
 * ana_timeline_lookup.c - what the timeline's waits look up, read once
 * instead of joined per wait (ana_timeline.h, "Lookups"):
 *
 *   - wake events, by seq: the whole table in one scan in seq order (a
 *     packed table's own) into an array, found by binary search. Joining wake_events per wait probes
 *     a packed table at a key that a long wait's end puts anywhere, and
 *     was a fifth of loading the waits at EP16 x 4096;
 *   - a wake's name parts (kind, xfer, object name) as a shape, one per
 *     distinct triple, so a million flows format and intern a few hundred
 *     names, and the objects table is read once per shape;
 *   - wait labels, merged: wait_labels is in begin_seq order (a packed
 *     table's own order) and the waits come in begin_seq order, so one
 *     scan walks beside them. A wait out of that order is probed;
 *   - the pipe of a track: a small sorted array.
 * And the code of a text in a short list (wake kinds, transfer kinds).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/ana_timeline.h"

static int fail(sqlite3 *db, const char *sql, char *err, size_t errlen) {
    ana_err(err, errlen, "index.db: %s (in: %.300s)", sqlite3_errmsg(db), sql);
    return -1;
}

static int oom(char *err, size_t errlen) {
    ana_err(err, errlen, "out of memory building the timeline");
    return -1;
}

/* ------------------------------------------------------------ texts */

int tl_text_code(char ***list, int *n, const char *t) {
    if (!t) return 0;
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i], t)) return i + 1;
    char **l = realloc(*list, (size_t)(*n + 1) * sizeof *l);
    if (!l) return -1;
    *list = l;
    if (!(l[*n] = strdup(t))) return -1;
    return ++*n;
}

/* ------------------------------------------------------------ wakes */

static size_t shape_hash(int kind, int xfer, int64_t object) {
    uint64_t h = ((uint64_t)kind * 0x9E3779B97F4A7C15ull) ^ (uint64_t)xfer;
    h = (h ^ (uint64_t)object) * 0xff51afd7ed558ccdull;
    return (size_t)(h >> 24);
}

static int same_shape(const tl_wake_shape *s, int kind, int xfer, int64_t object) {
    return s->kind == kind && s->xfer == xfer && s->object_id == object;
}

/* The name of object id, a copy; NULL when it has none (as the LEFT JOIN
 * of objects gave). -1 on error. */
static int object_name(tl_wakes *w, int64_t id, char **out, char *err, size_t errlen) {
    const char *sql = "SELECT name FROM objects WHERE id = ?1";
    *out = NULL;
    if (!w->object_st && !(w->object_st = ana_prepare(w->db, sql, err, errlen))) return -1;
    sqlite3_reset(w->object_st);
    sqlite3_bind_int64(w->object_st, 1, id);
    int rc = sqlite3_step(w->object_st);
    if (rc == SQLITE_ROW && sqlite3_column_type(w->object_st, 0) != SQLITE_NULL &&
        !(*out = strdup((const char *)sqlite3_column_text(w->object_st, 0))))
        return oom(err, errlen);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(w->db, sql, err, errlen);
    return 0;
}

/* The shape (kind, xfer, object) of a wake: its index, made on first
 * sight; -1 on error. */
static int64_t shape_of(tl_wakes *w, int kind, int xfer, int64_t object, int has_object,
                        char *err, size_t errlen) {
    if (!has_object) object = -1;   /* no object: ids are never negative */
    if (2 * (w->nshape + 1) > w->caphash) {
        size_t cap = w->caphash ? w->caphash * 2 : 256;
        uint32_t *h = calloc(cap, sizeof *h);
        if (!h) return oom(err, errlen);
        for (size_t i = 0; i < w->nshape; i++) {
            const tl_wake_shape *o = &w->shape[i];
            size_t j = shape_hash(o->kind, o->xfer, o->object_id) & (cap - 1);
            while (h[j]) j = (j + 1) & (cap - 1);
            h[j] = (uint32_t)i + 1;
        }
        free(w->hash);
        w->hash = h;
        w->caphash = cap;
    }
    size_t j = shape_hash(kind, xfer, object) & (w->caphash - 1);
    for (; w->hash[j]; j = (j + 1) & (w->caphash - 1))
        if (same_shape(&w->shape[w->hash[j] - 1], kind, xfer, object)) return w->hash[j] - 1;
    if (ana_grow((void **)&w->shape, &w->capshape, w->nshape + 1, sizeof *w->shape, 64))
        return oom(err, errlen);
    tl_wake_shape *s = &w->shape[w->nshape];
    *s = (tl_wake_shape){.kind = kind, .xfer = xfer, .object_id = object};
    if (has_object && object_name(w, object, &s->object, err, errlen)) return -1;
    w->hash[j] = (uint32_t)++w->nshape;
    return (int64_t)w->nshape - 1;
}

int tl_wakes_load(sqlite3 *db, tl_wakes *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    w->db = db;
    const char *sql = "SELECT seq, rank, core, pipe, time_ps, kind, xfer, object FROM wake_events"
                      " ORDER BY seq";
    sqlite3_stmt *st = ana_prepare(db, sql, err, errlen);
    if (!st) return -1;
    int rc, bad = 0;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (ana_grow((void **)&w->row, &w->cap, w->n + 1, sizeof *w->row, 4096)) {
            bad = oom(err, errlen);
            break;
        }
        const char *pipe = (const char *)sqlite3_column_text(st, 3);
        int kind = tl_text_code(&w->kinds, &w->nkinds, (const char *)sqlite3_column_text(st, 5));
        int xfer = tl_text_code(&w->kinds, &w->nkinds, (const char *)sqlite3_column_text(st, 6));
        if (kind < 0 || xfer < 0) {
            bad = oom(err, errlen);
            break;
        }
        int64_t shape = shape_of(w, kind, xfer, sqlite3_column_int64(st, 7),
                                 sqlite3_column_type(st, 7) != SQLITE_NULL, err, errlen);
        if (shape < 0) {
            bad = -1;
            break;
        }
        tl_wake *r = &w->row[w->n];
        *r = (tl_wake){.seq = sqlite3_column_int64(st, 0), .time_ps = sqlite3_column_int64(st, 4),
                       .rank = sqlite3_column_type(st, 1) == SQLITE_NULL
                                   ? -1 : (int32_t)sqlite3_column_int64(st, 1),
                       .core = sqlite3_column_type(st, 2) == SQLITE_NULL
                                   ? -1 : (int32_t)sqlite3_column_int64(st, 2),
                       .pipe = (int16_t)(pipe ? ana_pipe_from_text(pipe) : PIPE_S),
                       .shape = (uint32_t)shape};
        w->n++;
    }
    sqlite3_finalize(st);
    if (!bad && rc != SQLITE_DONE) bad = fail(db, sql, err, errlen);
    if (bad) {
        tl_wakes_free(w);
        return -1;
    }
    return 0;
}

const tl_wake *tl_wakes_find(const tl_wakes *w, int64_t seq) {
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->row[mid].seq < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < w->n && w->row[lo].seq == seq ? &w->row[lo] : NULL;
}

void tl_wake_name(const tl_wakes *w, const tl_wake *e, char *buf, size_t len) {
    const tl_wake_shape *s = &w->shape[e->shape];
    const char *kind = s->kind ? w->kinds[s->kind - 1] : "?";
    const char *xfer = s->xfer ? w->kinds[s->xfer - 1] : NULL, *obj = s->object;
    snprintf(buf, len, "wake: %s%s%s%s%s", kind, xfer ? " " : "", xfer ? xfer : "",
             obj ? " " : "", obj ? obj : "");
}

void tl_wakes_free(tl_wakes *w) {
    for (int i = 0; i < w->nkinds; i++) free(w->kinds[i]);
    for (size_t i = 0; i < w->nshape; i++) free(w->shape[i].object);
    free(w->kinds);
    free(w->shape);
    free(w->hash);
    free(w->row);
    sqlite3_finalize(w->object_st);
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------ labels */

int tl_labels_open(sqlite3 *db, tl_labels *l, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    l->db = db;
    l->scan = ana_prepare(db, "SELECT begin_seq, label FROM wait_labels ORDER BY begin_seq", err,
                          errlen);
    l->probe = l->scan ? ana_prepare(db, "SELECT label FROM wait_labels WHERE begin_seq = ?1",
                                     err, errlen)
                       : NULL;
    if (!l->probe) {
        tl_labels_close(l);
        return -1;
    }
    l->rc = SQLITE_ROW;
    l->asked = INT64_MIN;
    return 0;
}

/* Steps the scan to its first row at or after seq. */
static int scan_to(tl_labels *l, int64_t seq) {
    while (l->rc == SQLITE_ROW && (!l->have || l->key < seq)) {
        l->rc = sqlite3_step(l->scan);
        l->have = l->rc == SQLITE_ROW;
        if (l->have) l->key = sqlite3_column_int64(l->scan, 0);
    }
    return l->rc == SQLITE_ROW || l->rc == SQLITE_DONE ? 0 : -1;
}

int tl_labels_get(tl_labels *l, int64_t seq, const char **label, char *err, size_t errlen) {
    *label = NULL;
    if (seq >= l->asked) {   /* in order: the scan never passed a key at or after seq */
        l->asked = seq;
        if (scan_to(l, seq))
            return fail(l->db, "SELECT begin_seq, label FROM wait_labels", err, errlen);
        if (l->have && l->key == seq && sqlite3_column_type(l->scan, 1) != SQLITE_NULL)
            *label = (const char *)sqlite3_column_text(l->scan, 1);
        return 0;
    }
    sqlite3_reset(l->probe);
    sqlite3_bind_int64(l->probe, 1, seq);
    int rc = sqlite3_step(l->probe);
    if (rc == SQLITE_ROW && sqlite3_column_type(l->probe, 0) != SQLITE_NULL)
        *label = (const char *)sqlite3_column_text(l->probe, 0);
    else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(l->db, "SELECT label FROM wait_labels WHERE begin_seq = ?1", err, errlen);
    return 0;
}

void tl_labels_close(tl_labels *l) {
    sqlite3_finalize(l->scan);
    sqlite3_finalize(l->probe);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------ track pipes */

static int by_id(const void *a, const void *b) {
    const tl_track_pipe *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

int tl_pipes_load(sqlite3 *db, tl_pipes *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    const char *sql = "SELECT id, pipe FROM tracks";
    sqlite3_stmt *st = ana_prepare(db, sql, err, errlen);
    if (!st) return -1;
    int rc, bad = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (ana_grow((void **)&p->row, &p->cap, p->n + 1, sizeof *p->row, 256)) {
            bad = oom(err, errlen);
            break;
        }
        const char *pipe = (const char *)sqlite3_column_text(st, 1);
        p->row[p->n++] = (tl_track_pipe){sqlite3_column_int64(st, 0),
                                         pipe ? ana_pipe_from_text(pipe) : PIPE_S};
    }
    sqlite3_finalize(st);
    if (!bad && rc != SQLITE_DONE) bad = fail(db, sql, err, errlen);
    if (bad) {
        tl_pipes_free(p);
        return -1;
    }
    qsort(p->row, p->n, sizeof *p->row, by_id);
    return 0;
}

int tl_pipe_of(const tl_pipes *p, int64_t track) {
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->row[mid].id < track) lo = mid + 1;
        else hi = mid;
    }
    return lo < p->n && p->row[lo].id == track ? p->row[lo].pipe : PIPE_S;
}

void tl_pipes_free(tl_pipes *p) {
    free(p->row);
    memset(p, 0, sizeof *p);
}
