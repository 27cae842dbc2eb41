/*
 * ana_pack.h - packed derived tables: a table stored as zstd-compressed
 * column chunks in a shadow table of index.db, served under its own name
 * by the `npurr_packed` virtual table module (ana_packed_vtab.c).
 *
 * A packed table `T` is two schema objects:
 *   T_packed(chunk INTEGER PRIMARY KEY, first INT, last INT, rows INT, data BLOB)
 *     one row per chunk of up to ANA_PACK_ROWS rows, in key order; first and
 *     last are the chunk's smallest and largest key;
 *   CREATE VIRTUAL TABLE T USING npurr_packed(key, col1 TYPE, col2 TYPE, ...)
 *     the old columns and types; `key` names the INTEGER PRIMARY KEY column
 *     the rows ascend by (it is also the rowid);
 *   T_packed_patch(key INT, col INT, value INT, PRIMARY KEY(key, col))
 *     integer values learnt after their row's chunk was stored (word_writes
 *     values a later event reveals): rare, applied to a chunk as it is
 *     decoded.
 * Chunks are written by ana_bulk in packed mode (ana_bulk.c) through
 * ana_pack_build below; this header is the derivation room's own.
 *
 * The chunk encoding: varint rows, varint cols, then per column a tag
 * byte, for integers a reference byte, the varint length of the zstd frame
 * of the column's body, and that frame (a reader decompresses only the
 * columns it wants). The bodies:
 *   tag 0, integers: a byte saying whether a NULL bitmap (rows bits)
 *     follows, the bitmap, then the non-NULL values as zigzag varints of
 *     their difference to the reference: 0 the previous non-NULL value of
 *     the column (the first to 0), j + 1 column j (an earlier integer
 *     column, not NULL there) of the same row;
 *   tag 1, text: varint dictionary size D, D entries (varint length,
 *     bytes), then rows varint codes: 0 NULL, k the k-th entry.
 */
#ifndef NPURR_ANA_PACK_H
#define NPURR_ANA_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define ANA_PACK_ROWS 32768    /* rows per chunk */
#define ANA_PACK_MAX_COLS 16

/* One column of rows being built or decoded. Integers: val (NULL where
 * null[r]); text: val is the 1-based dictionary code, 0 NULL. */
typedef struct ana_pack_col {
    int is_text;
    int64_t *val;
    uint8_t *null;           /* integer columns: 1 where NULL */
    /* text dictionary: entry k-1 is text[k-1] of len[k-1] bytes */
    char **text;
    uint32_t *len;
    uint32_t ntext;
    size_t captext, caplen;
    uint32_t *hash;          /* builder only: open addressing over codes */
    int interned;            /* decoded: text[] point to strings that outlive the chunk */
    uint32_t caphash;
} ana_pack_col;

/* A chunk's columns: rows appended by the builder, or decoded. */
typedef struct ana_pack_chunk {
    int cols;
    size_t rows, cap;
    ana_pack_col col[ANA_PACK_MAX_COLS];
    char *raw;               /* decoded chunks: the decompressed bytes texts point into */
    uint32_t decoded;        /* decoded chunks: bit i, column i was decoded */
} ana_pack_chunk;

/* An empty chunk of cols columns for up to cap rows: 0, or -1 out of memory. */
int ana_pack_init(ana_pack_chunk *c, int cols, size_t cap);
/* Forgets the rows (and dictionaries), keeps the memory. */
void ana_pack_reset(ana_pack_chunk *c);
void ana_pack_free(ana_pack_chunk *c);
/* Appends a value to column col of row c->rows (ana_pack_row_done ends the
 * row). Text is copied into the column's dictionary: -1 out of memory, or
 * when a column gets both integers and text. */
int ana_pack_put_int(ana_pack_chunk *c, int col, int64_t v);
int ana_pack_put_null(ana_pack_chunk *c, int col);
int ana_pack_put_text(ana_pack_chunk *c, int col, const char *s);
static inline void ana_pack_row_done(ana_pack_chunk *c) { c->rows++; }

/* The chunk encoded and zstd-compressed into a malloc'd buffer (*out,
 * *outlen): 0, or -1 with err. */
int ana_pack_encode(const ana_pack_chunk *c, void **out, size_t *outlen, char *err,
                    size_t errlen);
/* Decodes what ana_pack_encode made into c (zeroed, or decoded into
 * before: its memory is reused): the columns of cols_wanted (bit i: column
 * i) and those they are encoded against, the others left out of
 * c->decoded. 0, or -1 with err when the bytes are no chunk of cols
 * columns. */
int ana_pack_decode(ana_pack_chunk *c, int cols, uint32_t cols_wanted, const void *data,
                    size_t len, char *err, size_t errlen);

/* The patches a statement selects (key, col, value rows of T_packed_patch
 * with ?1 <= key <= ?2, bound here to first and last) applied to the
 * decoded chunk ch whose keys are column key (ana_packed_vtab.c): an
 * SQLite result code, SQLITE_OK when every patch row was read. */
int ana_pack_patch(ana_pack_chunk *ch, int key, sqlite3_stmt *patches, int64_t first,
                   int64_t last);
/* Chunks decoded by every npurr_packed table of the process: how the
 * tests see that a query was served from the chunks it needed only. */
uint64_t ana_packed_chunks_decoded(void);

#endif
