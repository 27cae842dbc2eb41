/*
 * rec_fingerprint.c - what trace an index (and analysis) was built from.
 *
 * index.db is derived from trace.zst, and every table derived later from
 * either is only as good as the match between the two. A fingerprint names
 * one exact trace file: its size, its complete zstd frames and a 64-bit
 * hash of every byte. The recorder and reindex store it in meta
 * (trace_fingerprint); whoever opens an index compares it with the trace
 * next to it, so an index copied from another run, or a trace truncated,
 * flipped or replaced after indexing, is refused by name instead of being
 * served. Hashing reads the mapped file once, four words per step (several
 * GB/s): cheap next to opening the index.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "recorder/rec_internal.h"

static inline uint64_t mix(uint64_t h, uint64_t w) {
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 31) | (h >> 33);
    return h * 0xC2B2AE3D27D4EB4Full;
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Four independent lanes, so the multiplies of one step overlap. */
static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull,
                     0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 4; l++) h[l] = mix(h[l], load64(p + i + 8 * l));
    uint8_t tail[32] = {0};
    memcpy(tail, p + i, n - i);
    for (int l = 0; l < 4; l++) h[l] = mix(h[l], load64(tail + 8 * l));
    uint64_t out = (uint64_t)n;
    for (int l = 0; l < 4; l++) out = mix(out, h[l]);
    return out ^ (out >> 29);
}

int rec_trace_fingerprint(const char *trace_path, rec_fingerprint *fp, char *err,
                          size_t errlen) {
    memset(fp, 0, sizeof *fp);
    rec_trace t;
    if (rec_trace_map(trace_path, &t, err, errlen)) return -1;
    fp->bytes = t.size;
    uint64_t off = 0, len;
    while (rec_trace_frame(&t, off, &len) == 1) {
        fp->frames++;
        off += len;
    }
    fp->hash = t.size ? hash_bytes(t.base, t.size) : 0;
    rec_trace_unmap(&t);
    return 0;
}

void rec_fingerprint_format(const rec_fingerprint *fp, char *out, size_t len) {
    snprintf(out, len, "%" PRIu64 " bytes, %" PRIu64 " frames, hash %016" PRIx64, fp->bytes,
             fp->frames, fp->hash);
}

void rec_index_meta_text(sqlite3 *db, const char *key, char *out, size_t len) {
    sqlite3_stmt *st = NULL;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
}

int rec_index_matches_trace(sqlite3 *db, const char *run_dir, char *fp_out, size_t fp_len,
                            char *err, size_t errlen) {
    char trace[4200], actual[128], stored[128];
    if (rec_path(trace, sizeof trace, run_dir, "trace.zst")) {
        snprintf(err, errlen, "%s: path too long", run_dir);
        return -1;
    }
    rec_fingerprint fp;
    if (rec_trace_fingerprint(trace, &fp, err, errlen)) return -1;
    rec_fingerprint_format(&fp, actual, sizeof actual);
    if (fp_out) snprintf(fp_out, fp_len, "%s", actual);
    rec_index_meta_text(db, "trace_fingerprint", stored, sizeof stored);
    if (!stored[0]) {
        snprintf(err, errlen,
                 "%s/index.db does not say which trace it was built from (no meta "
                 "trace_fingerprint: an index from before npurr checked this, or not an npurr "
                 "index); run `npurr reindex %s`",
                 run_dir, run_dir);
        return -1;
    }
    if (strcmp(stored, actual) != 0) {
        snprintf(err, errlen,
                 "%s/index.db was not built from %s/trace.zst: it indexes a trace of %s, the "
                 "trace has %s (an index from another run, or a trace changed, truncated or "
                 "damaged since it was indexed); run `npurr reindex %s`",
                 run_dir, run_dir, stored, actual, run_dir);
        return -1;
    }
    return 0;
}

void rec_index_unreadable(const char *run_dir, const char *sqlite_msg, char *err, size_t errlen) {
    char journal[4200];
    struct stat st;
    if (rec_path(journal, sizeof journal, run_dir, "index.db-journal") == 0 &&
        stat(journal, &st) == 0)
        snprintf(err, errlen,
                 "%s/index.db cannot be read (%s) because of %s, a rollback journal left by an "
                 "interrupted write (or a file that only has its name): SQLite must roll it back "
                 "before anyone reads the index. If it is not SQLite's, remove it and run "
                 "`npurr reindex %s`", run_dir, sqlite_msg, journal, run_dir);
    else
        snprintf(err, errlen, "%s/index.db is not an npurr index (%s); run `npurr reindex %s`",
                 run_dir, sqlite_msg, run_dir);
}

/* The chunks table in file order must cover seqs 1..events without a gap,
 * an overlap or a step back; out says what is missing ("" when whole). */
void rec_index_chunk_gaps(sqlite3 *db, uint64_t events, char *out, size_t len) {
    sqlite3_stmt *st;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, "SELECT offset, first_seq, last_seq, events FROM chunks "
                           "ORDER BY offset", -1, &st, NULL) != SQLITE_OK)
        return;
    uint64_t end = 0, total = 0;
    while (!out[0] && sqlite3_step(st) == SQLITE_ROW) {
        uint64_t off = (uint64_t)sqlite3_column_int64(st, 0);
        uint64_t first = (uint64_t)sqlite3_column_int64(st, 1);
        uint64_t last = (uint64_t)sqlite3_column_int64(st, 2);
        total += (uint64_t)sqlite3_column_int64(st, 3);
        if (first > end + 1)
            snprintf(out, len, "events %llu..%llu are missing (the chunk at byte %llu starts at "
                     "seq %llu)", (unsigned long long)end + 1, (unsigned long long)first - 1,
                     (unsigned long long)off, (unsigned long long)first);
        else if (first <= end)
            snprintf(out, len, "the chunk at byte %llu starts at seq %llu, at or before the end "
                     "of the previous one (seq %llu): chunks duplicated or out of order",
                     (unsigned long long)off, (unsigned long long)first,
                     (unsigned long long)end);
        end = last;
    }
    sqlite3_finalize(st);
    if (!out[0] && total != events)
        snprintf(out, len, "the run had %llu events but its chunks hold %llu",
                 (unsigned long long)events, (unsigned long long)total);
}
