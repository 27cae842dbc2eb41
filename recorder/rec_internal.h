/*
 * rec_internal.h - what the recorder's files share; not a public API.
 *
 * The pieces, bottom up:
 *   rec_buf.c     growable byte buffer, LEB128 varints, zigzag
 *   rec_kv.c      ordered key/value lists (header, trailer, meta table)
 *   rec_names.c   kind and pipe names as index.db and SQL spell them
 *   rec_chunk.c   chunk payload codec: declarations + column-transposed events
 *   rec_frame.c   zstd frames, the trace file mapped and walked frame by frame
 *   rec_index.c   the index builder: declarations + events -> derived rows
 *                 (rows shared with rec_db.c through rec_index.h)
 *   rec_db.c      the index builder's rows -> index.db
 *   rec_writer.c  observer -> chunks -> trace.zst; index.db at close
 *   rec_split.c   a split run recorded where it runs: each process's parts,
 *                 process 0 writes the groups (rec_ix_parts.c: the index)
 *   rec_group.c   a chunk, or a group's parts merged by seq (readers)
 *   rec_reader.c  trace.zst -> chunks -> events (replay, reindex)
 *   rec_worker.c  one background thread, one job at a time (the writer
 *                 compresses and the events table decodes ahead on it)
 *   rec_reindex.c, rec_info.c, rec_vtab.c  the public operations
 * The writer and reindex feed the same index builder the same chunk data
 * (declaration bytes + events), so index.db does not depend on which of the
 * two built it.
 */
#ifndef NPURR_REC_INTERNAL_H
#define NPURR_REC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/recorder.h"

/* ---------------------------------------------------------------- buffers */

typedef struct rec_buf {
    uint8_t *p;
    size_t len, cap;
    int oom;          /* sticky: an append failed to grow */
} rec_buf;

void rec_buf_free(rec_buf *b);
int rec_buf_reserve(rec_buf *b, size_t extra);
void rec_buf_put(rec_buf *b, const void *src, size_t n);
void rec_buf_byte(rec_buf *b, uint8_t v);
void rec_buf_varint(rec_buf *b, uint64_t v);
void rec_buf_bytes(rec_buf *b, const char *s, size_t n);   /* varint length + bytes */
/* bytes of memory (free with free()), on huge pages when large and the
 * kernel agrees; NULL when out of memory */
void *rec_big_alloc(size_t bytes);
/* *arr with room for need elements of elem bytes (*cap doubled from 4096
 * until it does); -1 out of memory, *arr untouched. */
int rec_grow(void **arr, size_t *cap, size_t need, size_t elem);
int rec_grow_events(engine_event **evs, size_t *cap, size_t need);

static inline uint64_t rec_zigzag(int64_t v) {
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t rec_unzigzag(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}
/* Writes v at p (which has room for 10 bytes); returns bytes written. */
static inline size_t rec_varint_put(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) { p[n++] = (uint8_t)(v | 0x80); v >>= 7; }
    p[n++] = (uint8_t)v;
    return n;
}

/* Bounds-checked cursor over a byte range; any overrun sets bad. */
typedef struct rec_cur {
    const uint8_t *p, *end;
    int bad;
} rec_cur;

/* The general case of rec_cur_varint (several bytes, or at the end). */
uint64_t rec_cur_varint_slow(rec_cur *c);
/* Inline: most varints of a chunk column are one byte, and the decoders
 * read tens of millions of them per second. */
static inline uint64_t rec_cur_varint(rec_cur *c) {
    const uint8_t *p = c->p;
    if (c->end - p >= 2) {
        if (p[0] < 0x80) {
            c->p = p + 1;
            return p[0];
        }
        if (p[1] < 0x80) {
            c->p = p + 2;
            return (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        }
    } else if (p < c->end && p[0] < 0x80) {
        c->p = p + 1;
        return p[0];
    }
    return rec_cur_varint_slow(c);
}
static inline uint8_t rec_cur_byte(rec_cur *c) {
    if (c->p < c->end) return *c->p++;
    c->bad = 1;
    return 0;
}
/* Borrowed pointer to a varint-length-prefixed string (not NUL-terminated). */
const char *rec_cur_bytes(rec_cur *c, size_t *len);
const uint8_t *rec_cur_take(rec_cur *c, size_t n);

/* ---------------------------------------------------------------- key/value */

typedef struct rec_kv {
    char **keys, **values;
    size_t n, cap;
} rec_kv;

int rec_kv_set(rec_kv *kv, const char *key, const char *value);
int rec_kv_setf(rec_kv *kv, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *rec_kv_get(const rec_kv *kv, const char *key);
void rec_kv_free(rec_kv *kv);
/* Serialises as varint count, then varint-length-prefixed key and value. */
void rec_kv_encode(const rec_kv *kv, rec_buf *b);
int rec_kv_decode(rec_kv *kv, rec_cur *c);
/* Header meta of a run: kernel, command_line, config.*, hw.*, cores... */
int rec_meta_from_info(rec_kv *kv, const rec_run_info *info, char *err, size_t errlen);
/* rec_meta_config.c: cfg's config.* and hw.* keys into kv (the writer of
 * rec_meta_get_config's keys): 0, or -1 out of memory. */
int rec_meta_put_config(rec_kv *kv, const engine_config *cfg);
/* v as the fewest digits that read back bit for bit ("0.1"). */
void rec_fmt_double(char *out, size_t outlen, double v);

/* ---------------------------------------------------------------- chunks */

/* Frame payload tags: the first 4 bytes of every decompressed frame. */
#define REC_TAG_HEADER "NPRH"
#define REC_TAG_CHUNK "NPRC"
#define REC_TAG_PART "NPRP"
#define REC_TAG_TRAILER "NPRT"

enum {
    REC_DECL_STRING = 1, REC_DECL_SITE = 2, REC_DECL_OBJECT = 3, REC_DECL_OBJECT_DELTA = 4,
    REC_DECL_STRING_NEXT = 5
};

/* A string record; *prev_id is the id of the previous string record of the
 * same chunk's declarations (0 at every chunk start), updated to id. Ids
 * are dense, so a string declared right after id - 1 is stored without its
 * id (type 5). */
void rec_decl_string(rec_buf *b, uint32_t *prev_id, uint32_t id, const char *text);
void rec_decl_site(rec_buf *b, const engine_site *s);
void rec_decl_object(rec_buf *b, const engine_object *o);
/* An object record stored as differences against the previous object
 * record of the same chunk's declarations: prev is that record (zeroed at
 * every chunk start), updated to o. What the writer uses. */
void rec_decl_object_delta(rec_buf *b, engine_object *prev, const engine_object *o);

/* Receives declarations while they are decoded. file/func/text are borrowed
 * and not NUL-terminated: their lengths are given. */
typedef struct rec_decl_sink {
    void *ctx;
    void (*string)(void *ctx, uint32_t id, const char *text, size_t len);
    void (*site)(void *ctx, uint32_t id, int line, const char *file, size_t file_len,
                 const char *func, size_t func_len);
    void (*object)(void *ctx, const engine_object *o);
} rec_decl_sink;
int rec_decl_decode(const uint8_t *p, size_t len, const rec_decl_sink *sink);

/* The event columns. Value-like columns are split into one stream per
 * event group (rec_chunk.c): a column of one kind of event is far more
 * regular than the same column of all events interleaved. */
enum {
    REC_COL_SEQ, REC_COL_TIME, REC_COL_RANK, REC_COL_CORE, REC_COL_KIND, REC_COL_PIPE,
    REC_COL_SUB, REC_COL_ADDR, REC_COL_LEN, REC_COL_VALUE, REC_COL_AUX, REC_COL_LINK,
    REC_COL_SITE, REC_COL_OBJECT, REC_COL_PEER,
    /* format 5: the derived order (rec_order.c) replaces rank, core, time */
    REC_COL_ORDER_CORES, REC_COL_ORDER_TIMES, REC_COL_ORDER_EXC, REC_COL_COUNT
};

/* Event groups: (kind & 63) << 5 | (sub & 31); group 0..31 (kind 0, which
 * no event has) holds the copied XFER_DONEs. A stream id is
 * column << REC_GROUP_BITS | group. Part of the format (traces/FORMAT.md). */
#define REC_GROUP_BITS 11
#define REC_GROUPS (1u << REC_GROUP_BITS)
#define REC_STREAMS (REC_COL_COUNT * REC_GROUPS)

/* Delta contexts, reset at every chunk start (chunks stay independent).
 * ctx is indexed by a hash of (rank, call site, kind): the previous event
 * of the same statement on the same rank - one queue's previous transfer,
 * or the same loop step of a sibling core - has nearly the same address,
 * length, value and object, so the deltas are small and repetitive. time
 * and prev_site are indexed by a hash of (rank, core): a core's local
 * clock advances smoothly and its code walks a short cycle of call sites
 * even when the global order interleaves cores; next_site, indexed by a
 * hash of a site, is the site that followed it last time on any core. The
 * hashes are part of the format (traces/FORMAT.md). */
#define REC_CTX_BITS 14
#define REC_CTX_SLOTS (1u << REC_CTX_BITS)
#define REC_SITE_SLOTS 4096
typedef struct rec_ctx {
    uint64_t addr, aux, value, len;
    uint32_t peer, object;
} rec_ctx;
/* Which core each event of a chunk comes from (rec_order.c): a table of
 * the chunk's cores sorted by (rank, core), each core's event times (core
 * after core, from start[c]), and the merge on (time, rank, core) that
 * rebuilds the engine's order, with exceptions where it differs. */
typedef struct rec_order {
    uint32_t ncores, heap_n;
    size_t cap_cores, cap_ev, cap_hash;
    uint32_t *rank, *core, *count, *start, *pos, *heap, *heap_at;
    uint64_t *time;       /* n times, core-major */
    uint32_t *ev_core;    /* each event's core (table index) */
    uint32_t *pend_next, *pend_head, *pend_tail;  /* pending issues per core */
    uint64_t *hash;       /* encoder: open-addressed set of (rank, core) keys */
    /* encoder: what the codec's one pass over the events (rec_chunk.c)
     * left for the order, so that the order never walks the events
     * themselves (a chunk's 16 MiB of them is far larger than a core's
     * cache): each event's core as rank << REC_ORDER_CORE_BITS | core and
     * its time */
    uint32_t *in_key;
    uint64_t *in_time;
} rec_order;
/* What the codec's pass over a chunk's events found (rec_order_reserve
 * first; in_key and in_time filled for every event when keyed). */
#define REC_ORDER_CORE_BITS 8
#define REC_ORDER_MAX_RANK 4096    /* keyed: every rank below it, every core below 256 */
typedef struct rec_order_scan {
    int keyed;       /* in_key and in_time hold every event's */
    int ordered;     /* times never go back */
    uint32_t max_rank;
} rec_order_scan;
/* Room for n events' in_key and in_time; -1 on OOM. */
int rec_order_reserve(rec_order *o, size_t n);
/* Writes the core table, the times and the exceptions for evs (read only
 * when scan is not keyed); -1 on OOM. */
int rec_order_encode(rec_order *o, const engine_event *evs, size_t n, const rec_order_scan *scan,
                     uint8_t **cores_w, uint8_t **times_w, uint8_t **exc_w);
/* Reads them back for n events; -1 if they are corrupt. */
int rec_order_decode(rec_order *o, size_t n, rec_cur *cores, rec_cur *times, rec_cur *exc);
/* Rank, core and time of event i (called once per event, in order). */
void rec_order_event(rec_order *o, size_t i, engine_event *e);
void rec_order_free(rec_order *o);
/* Pending XFER_ISSUEs per core, for copied DONEs (format 5): reset at a
 * chunk's start (after the order is known), add issue i, and take the
 * issue at src for DONE i (returning its rank among its core's pending
 * issues) or select the k-th for DONE i (SIZE_MAX if there is none). */
void rec_order_pending_reset(rec_order *o);
void rec_order_pending_add(rec_order *o, size_t i);
uint64_t rec_order_pending_take(rec_order *o, size_t i, size_t src);
size_t rec_order_pending_select(rec_order *o, size_t i, uint64_t k);

/* Summary of one chunk (a row of the chunks table). */
typedef struct rec_chunk_row {
    uint64_t first_seq, last_seq, first_time, last_time;  /* times: min and max */
    uint64_t offset, compressed_bytes, raw_bytes, events;
    uint32_t rank_min, rank_max, core_min, core_max;
    uint64_t kind_mask;
} rec_chunk_row;

typedef struct rec_codec {
    rec_ctx ctx[REC_CTX_SLOTS];
    uint64_t time[REC_CTX_SLOTS];
    uint32_t prev_site[REC_CTX_SLOTS];  /* by core slot: the core's previous site */
    uint32_t next_site[REC_CTX_SLOTS];  /* by site slot: the site that followed it */
    uint64_t flag_aux[REC_CTX_SLOTS];   /* by core slot: aux of the core's last FLAG_SET */
    uint32_t site[REC_SITE_SLOTS];  /* kind | pipe << 8 | sub << 16 | 1 << 24 */
    /* Pending XFER_ISSUEs of the chunk by position (rec_chunk.c): a bit
     * per position, a count per block of 512 positions, then one per
     * group of 16 blocks. */
    uint64_t *pend_bits;
    uint32_t *pend_cnt;
    size_t pend_cap, pend_words, pend_blocks, pend_groups, pend_first;
    /* The chunk's non-empty streams, in stream id order: the encoder's
     * output (with where each starts in the payload, the writer's zstd
     * block cuts) and the decoder's directory. */
    size_t nstreams;
    uint32_t stream_id[REC_STREAMS];
    size_t stream_at[REC_STREAMS];
    size_t stream_len[REC_STREAMS];
    /* Per stream, indexed group * REC_COL_COUNT + column (an event's
     * streams side by side): the encoder's write position and start in
     * arena, the decoder's read cursor. */
    uint8_t *w[REC_STREAMS];
    uint8_t *w0[REC_STREAMS];
    rec_cur cur[REC_STREAMS];
    int cur_ready;                       /* decoder: cur[] set to empty once */
    uint8_t group_seen[REC_GROUPS];      /* decoder: groups the chunk read */
    rec_buf arena;
    uint32_t group_events[REC_GROUPS];   /* encoder: events per group */
    rec_order order;
    /* encoder: the chunks row of the events last encoded (offset and sizes
     * 0), what rec_chunk_summarize gives, found in the encoder's pass */
    rec_chunk_row summary;
    /* encoder, a part's events (seqs with gaps): the position of each seq
     * of first_seq .. first_seq + seq_span - 1 among them (UINT32_MAX: not
     * the part's), for a DONE to find its issue without a search; seq_span
     * 0 when the seqs are dense (a chunk) or the range too wide */
    uint32_t *seq_pos;
    size_t seq_span, cap_seq_pos;
} rec_codec;
void rec_codec_free(rec_codec *codec);   /* frees codec and its buffers */

/* Kind byte: bit 7 = an XFER_DONE copied from its XFER_ISSUE in the same
 * chunk (only seq, time and the rank among pending issues are
 * stored); exactly 0x40 = kind, pipe and sub are those of the previous
 * event of the same site slot; else the low 6 bits are the kind (63 escapes a kind >= 63,
 * stored as an extra byte in the sub column). */
#define REC_KIND_COPY 0x80
#define REC_KIND_SITE 0x40
#define REC_KIND_ESCAPE 0x3f

/* Appends a chunk payload (tag, declarations, columns) for evs to out. */
void rec_chunk_encode(rec_codec *codec, const uint8_t *decls, size_t decl_len,
                      const engine_event *evs, size_t n, rec_buf *out);
/* A part (format 6): one process's events of the seqs first_seq..last_seq
 * of a run split over processes; the group's parts are consecutive frames,
 * part 0 to parts - 1, and hold every seq of the range once. */
#define REC_MAX_PARTS 256
typedef struct rec_part_head {
    uint64_t first_seq, last_seq;
    uint32_t part, parts;     /* parts 0: a whole chunk, not a part */
} rec_part_head;
/* Appends a part payload (tag, part head, declarations, columns): evs are
 * in seq order within the head's range, with gaps. */
void rec_chunk_encode_part(rec_codec *codec, const rec_part_head *h, const uint8_t *decls,
                           size_t decl_len, const engine_event *evs, size_t n, rec_buf *out);
/* Decodes a chunk or part payload: declarations are borrowed from p; events
 * go into *evs (grown as needed, *cap its capacity). Returns 0 or -1 with
 * err. rec_group.c decodes a whole group. */
typedef struct rec_chunk_view {
    const uint8_t *decls;
    size_t decl_len;
    size_t n;
    rec_part_head part;       /* parts 0 for a chunk */
} rec_chunk_view;
int rec_chunk_decode(rec_codec *codec, const uint8_t *p, size_t len, rec_chunk_view *view,
                     engine_event **evs, size_t *cap, char *err, size_t errlen);
void rec_chunk_summarize(const engine_event *evs, size_t n, rec_chunk_row *row);

/* zstd for chunks: the stream split does most of the work, so the
 * cheapest strategy (fast: one hash probe per position) loses little, and
 * most of zstd's time goes into entropy coding anyway, about in proportion
 * to the bytes it puts out. Issue 29 wants the recorder under 0.15 us per
 * event and the trace under 3.8 bytes. On the layered dispatch at EP64 x
 * 4096 (bench_rec_cpu, 32 chunks of 262144 events, format 6): level 3
 * (dfast) 3.65 bytes per event in 0.047 us of CPU per event, level 1 3.82
 * in 0.029, fast with a 2^16 hash table and 5-byte matches 3.76 in 0.036
 * (level 7: 3.53 in 0.124, level 2: 3.78 in 0.037). Chunks of 524288
 * events (REC_CHUNK_EVENTS) take all of them 3-4 % smaller, so the fast
 * parameters give the size level 3 gave at 262144 (3.62) for 0.012 us less.
 * Then 7-byte matches in a 2^14 table (bench_rec_cpu --min-match 7
 * --hash-log 14, EP64 chunks 0-19, least of 3): 0.025 us against 0.032
 * for 3.28 bytes against 3.22 (5-byte matches in 2^14: 0.027, 7 in
 * 2^15: 0.026 for 3.26, 7 in 2^13: 0.024 for 3.30; an acceleration,
 * targetLength 1, 0.029 for 3.74). Over the whole run (105 chunks):
 * 0.027 us against 0.035, 3.60 bytes per event against 3.54. */
#define REC_ZSTD_LEVEL 1
#define REC_ZSTD_WINDOW_LOG 21
#define REC_ZSTD_HASH_LOG 14
#define REC_ZSTD_MIN_MATCH 7
/* Sets those parameters on a ZSTD_CCtx (cctx; checksum and content size
 * are the frame writer's business). */
void rec_frame_params(void *cctx);

/* ---------------------------------------------------------------- frames */

/* Compresses payload into one zstd frame (content size and checksum set). */
int rec_frame_compress(void *cctx, const rec_buf *payload, rec_buf *out);
/* The same, ending a zstd block at each of the ncuts increasing payload
 * offsets (a chunk's column starts). */
int rec_frame_compress_cut(void *cctx, const rec_buf *payload, const size_t *cuts,
                           size_t ncuts, rec_buf *out);
/* The trace file mapped read-only, walked frame by frame. */
typedef struct rec_trace {
    const uint8_t *base;
    size_t size;
    int fd;
} rec_trace;
int rec_trace_map(const char *path, rec_trace *t, char *err, size_t errlen);
void rec_trace_unmap(rec_trace *t);
/* Mapped traces a SIGBUS is looked up in (rec_map_guard.c): a fault inside
 * one says that file changed while it was read and exits 1; any other
 * SIGBUS goes to the handler before npurr's, or the default action. */
void rec_map_guard_add(const void *base, size_t size, const char *path);
void rec_map_guard_remove(const void *base);
/* Finds the frame at off: 1 and its compressed size, 0 at end of file,
 * -1 if the file ends inside the frame (truncated) or is not zstd. */
int rec_trace_frame(const rec_trace *t, uint64_t off, uint64_t *frame_len);
/* Decompresses one frame (whose size is known) into out. */
int rec_frame_decompress(void *dctx, const uint8_t *src, size_t len, rec_buf *out, char *err,
                         size_t errlen);
/* One chunk as readers see it (rec_group.c): a chunk frame, or the part
 * frames of one group merged by seq. */
typedef struct rec_group {
    rec_codec *codec;
    void *dctx;
    rec_buf frame;               /* a later part's decompressed frame */
    engine_event *evs;           /* the group's events, in seq order */
    size_t cap, n;
    engine_event *one, *part;    /* one part decoded; the parts, one after another */
    size_t one_cap, part_cap, npart;
    rec_buf decls;               /* the group's declarations, parts in order */
    uint64_t raw_bytes;          /* decompressed bytes of its frames */
} rec_group;
int rec_group_init(rec_group *g);   /* -1: out of memory (rec_group_free it) */
void rec_group_free(rec_group *g);
/* Decodes the group whose first frame, decompressed, is first; its other
 * parts follow at next in t, and *more is their compressed bytes. */
int rec_group_decode(rec_group *g, const uint8_t *first, size_t first_len, const rec_trace *t,
                     uint64_t next, uint64_t *more, char *err, size_t errlen);
/* 0 if t (mapped from path) starts with a header frame of
 * REC_FORMAT_VERSION; -1 with err naming both versions otherwise. */
int rec_trace_check_version(const rec_trace *t, const char *path, char *err, size_t errlen);
/* True if path's first frame decodes to an npurr header (an npurr run). */
int rec_trace_is_npurr(const char *path);
/* The chunks table of index db in file order must cover seqs 1..events
 * without a gap, an overlap or a step back; out says what is wrong ("" when
 * whole). `info` and the events table both check it. */
void rec_index_chunk_gaps(sqlite3 *db, uint64_t events, char *out, size_t len);

/* ---------------------------------------------------------------- reader */

/* The next chunk with its declarations and summary (offset, sizes): 1, or
 * 0 after the trailer, or -1 (error or truncated, see rec_reader_error). */
int rec_reader_chunk(rec_reader *r, rec_chunk_view *view, const engine_event **evs,
                     rec_chunk_row *row);
const rec_kv *rec_reader_header(const rec_reader *r);
const rec_kv *rec_reader_trailer(const rec_reader *r);
uint64_t rec_reader_size(const rec_reader *r);     /* trace file bytes */
uint64_t rec_reader_events(const rec_reader *r);   /* events in them */

/* ---------------------------------------------------------------- index builder */

typedef struct rec_index rec_index;

rec_index *rec_ix_new(void);
void rec_ix_free(rec_index *ix);
/* Header meta: copied; cores_per_rank / num_aic are taken from it. */
int rec_ix_header(rec_index *ix, const rec_kv *header);
/* One chunk: its declarations, then its events, then its chunks row (if
 * it has events). Returns -1 on corrupt declarations or memory. */
int rec_ix_chunk(rec_index *ix, const uint8_t *decls, size_t decl_len,
                 const engine_event *evs, size_t n, const rec_chunk_row *row);
/* Ends the run: trailer meta (outcome, end_time_ps, events, check...), and
 * the trace's size and fingerprint. Waits still open end at end_time_ps. */
int rec_ix_finish(rec_index *ix, const rec_kv *trailer, const rec_fingerprint *trace);
/* Whether end_ps can be the end time of the events fed: the time of their
 * RUN_END event (the engine stamps both from one clock), or, in a trace
 * without one (a run cut before its end), at or after the latest event and
 * within the signed 64-bit range readers compute in. */
int rec_ix_end_time_fits(const rec_index *ix, uint64_t end_ps);
/* The time of the latest event fed so far (0 before any). */
uint64_t rec_ix_last_time(const rec_index *ix);
/* Writes the whole index to path (through path.tmp, renamed at the end). */
int rec_ix_write_db(rec_index *ix, const char *path, char *err, size_t errlen);
/* Starts index.db.tmp for path early, so that rec_ix_db_flush can write the
 * rows that are final while the run goes on (the live recorder's worker);
 * rec_ix_write_db finishes it. rec_ix_free discards an unfinished one. */
int rec_ix_db_open(rec_index *ix, const char *path, char *err, size_t errlen);
int rec_ix_db_flush(rec_index *ix, char *err, size_t errlen);
void rec_ix_db_discard(rec_index *ix);
/* A split run's index (rec_ix_parts.c). With each part: the begin seqs of
 * the waits begun since the last (u64 each, in begin order) onto begins,
 * and the rows of those that ended (ix_wait, in id order) onto rows, which
 * leave ix. After the run: a process's open waits, tracks, roles and
 * counts packed, merged into process 0's, each wait's id made the run's by
 * id_of (0: the wait goes); process 0's own by rec_ix_renumber. And a
 * chunks row of process 0's (a group it wrote). */
typedef uint64_t (*rec_ix_id_fn)(void *ctx, uint64_t local_id);
void rec_ix_take_part(rec_index *ix, rec_buf *begins, rec_buf *rows);
void rec_ix_pack(const rec_index *ix, engine_buf *out);
int rec_ix_merge(rec_index *ix, const uint8_t *p, size_t len, rec_ix_id_fn id_of, void *ctx);
void rec_ix_renumber(rec_index *ix, rec_ix_id_fn id_of, void *ctx);
void rec_ix_chunk_row(rec_index *ix, const rec_chunk_row *row);

/* ---------------------------------------------------------------- worker */

/* rec_worker (one background thread, one job at a time): see recorder.h. */

/* ---------------------------------------------------------------- names */

/* rec_kind_name, rec_kind_from_name, rec_pipe_name: see recorder.h. */

/* Formats "RUN/name" into out; -1 if it does not fit. */
int rec_path(char *out, size_t outlen, const char *dir, const char *name);

#endif
