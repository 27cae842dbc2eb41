/*
 * kit.h - the kernel kit: what every kernel of kernels/ shares, so a
 * kernel's own files hold only what is its own.
 *
 * Internal to the kernels library (kernels.h stays its public header):
 *   alignment        kit_align_up, the one rounding helper (this header)
 *   RNG              kit_mix64 / kit_splitmix64 (this header, inline: the
 *                    payload generators call them per element) and the
 *                    xoshiro256** stream the routing draws from (kit_rng.c)
 *   shared options   the MoE options most kernels take (tokens, hidden,
 *                    topk, experts, routing, data-seed, inject), declared by
 *                    the KIT_OPT_* entries below and read by kit_options.c
 *   guard regions    buffers followed by bytes that must stay as written,
 *                    allocated, filled and verified by kit_guard.c
 *   payload tags     the small-integer fields a generated row starts with,
 *                    so a misplaced row says whose it is (kit_tag.c)
 *   setup            the host state's allocation and the one-node topology
 *                    check every setup and shape begins with (kit_setup.c)
 *   memory estimate  the per-slot plan cost and the page a ring record
 *                    costs, for the kernels' estimate hooks (this header)
 *   host API         the engine calls a kernel's host side (setup, check,
 *                    layout, estimate) makes are the plugin ABI's host
 *                    table (npurr/plugin.h's npurr_* calls), which
 *                    kit_host.c builds; plus the routing reader's input
 *                    file (kit_fopen_input)
 *
 * Kernel files are written against npurr/device.h and npurr/plugin.h, as a
 * plugin is; the engine's host API (engine/engine.h) is reached only
 * through the host table, whose one implementation, kit_host.c, is the only
 * file of kernels/ that includes that header or calls a function it
 * declares (tools/check_layering.sh refuses any other). So the engine calls
 * the kernels make are the ABI's short list, and the rest of the host API
 * (running, observers, split runs, reports) is out of a kernel's reach.
 */
#ifndef NPURR_KERNEL_KIT_H
#define NPURR_KERNEL_KIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "npurr/device.h"
#include "npurr/plugin.h"
#include "kernels.h"

struct routing_spec;

/* ------------------------------------------------------------ alignment */

static inline uint64_t kit_align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
static inline uint64_t kit_align_down(uint64_t v, uint64_t a) { return v / a * a; }

/* The signed integer of width bytes (4, else 8) at p, host byte order: a
 * word of a GM host view or of a file's bytes. */
static inline int64_t kit_int_at(const void *p, int width) {
    if (width == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ------------------------------------------------------------------ RNG */

/* The splitmix64 finalizer: a 64-bit mixing function, the base of every
 * seeded stream in the kernels (payload rows, routing, matrices). */
static inline uint64_t kit_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* splitmix64: the next value of the sequence whose state is *state. */
static inline uint64_t kit_splitmix64(uint64_t *state) {
    return kit_mix64(*state += 0x9e3779b97f4a7c15ULL);
}

/* xorshift64*: one cheap step per element of a generated row. */
static inline uint64_t kit_xorshift64s(uint64_t *x) {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545f4914f6cdd1dULL;
}

/* xoshiro256**: the routing's stream, independent per (seed, stream, rank). */
typedef struct kit_rng { uint64_t s[4]; } kit_rng;
void kit_rng_seed(kit_rng *r, uint64_t seed, uint64_t stream, uint64_t rank);
uint64_t kit_rng_next(kit_rng *r);
/* Uniform in (0, 1): never exactly 0 or 1, so log() is safe. */
double kit_rng_open01(kit_rng *r);

/* ------------------------------------------------------- shared options */

/* The option entries the MoE kernels share, with their help written once.
 * A kernel lists the ones it takes in its kernel_option table with its own
 * default; `inject` also names the kernel's faults ("none | FAULT (...)"). */
#define KIT_OPT_TOKENS(dflt) {"tokens", dflt, "tokens per rank"}
#define KIT_OPT_HIDDEN(dflt, more) {"hidden", dflt, "hidden size: elements per token row" more}
#define KIT_OPT_TOPK(dflt) {"topk", dflt, "experts per token (1..64)"}
#define KIT_OPT_EXPERTS(dflt, more) \
    {"experts", dflt, "experts in total; each rank holds experts / ranks" more}
/* The CLI lists the routing kinds from routing.c's one table. */
#define KIT_OPT_ROUTING(dflt) {"routing", dflt, "how tokens pick their experts"}
#define KIT_OPT_DATA_SEED(what) {"data-seed", "1", "seed of " what}
#define KIT_OPT_INJECT(faults) {"inject", "none", "none | " faults}

/* Upper bounds a kernel puts on the shared shape options (lower bound 1),
 * and on tokens x topk x ranks, the rows its int32 tables count (0: none). */
typedef struct kit_moe_limits {
    int64_t tokens, hidden, topk, experts, rows;
} kit_moe_limits;

/* The shared MoE shape, validated against the rank count: experts divide
 * evenly over the ranks, topk <= experts. tokens is 0 when the kernel reads
 * tokens itself. */
#define KIT_MOE_FIELDS int tokens, hidden, topk, experts, local_experts
typedef struct kit_moe { KIT_MOE_FIELDS; } kit_moe;
/* In a kernel's shape: the shared fields by their own names (sh->tokens)
 * and, over the same bytes, as the one kit_moe (sh->moe) kit_read_moe fills. */
#define KIT_MOE_IN_SHAPE union { kit_moe moe; struct { KIT_MOE_FIELDS; }; }

/* Reads --tokens (unless lim->tokens is 0), --hidden, --experts and --topk,
 * in that order, each against its limit, then the rows. 0, or -1 with err
 * naming the option. */
int kit_read_moe(const npurr_opts *o, int num_ranks, const kit_moe_limits *lim,
                 kit_moe *m, char *err, size_t errlen);
/* A string option that must have a value. */
int kit_read_str(const npurr_opts *o, const char *name, const char **out, char *err,
                 size_t errlen);
/* --routing parsed into spec. */
/* --routing, parsed and checked against the run's num_ranks (a routing that
 * names ranks the run does not have is a usage error, found before the run). */
int kit_read_routing(const npurr_opts *o, int num_ranks, struct routing_spec *spec,
                     char *err, size_t errlen);
/* --data-seed. */
int kit_read_seed(const npurr_opts *o, uint64_t *seed, char *err, size_t errlen);
/* --inject against the kernel's faults: faults[0] is "none", the list ends
 * with NULL; *which is the index of the named fault. */
int kit_read_inject(const npurr_opts *o, const char *const *faults, int *which, char *err,
                    size_t errlen);

/* ------------------------------------------------------ memory estimate */

/* The routing plan on the host: ids, weights, expand index per (t, k). */
#define KIT_PLAN_BYTES_PER_SLOT 16ull
/* A ring record is backed only where written: at least a page (its
 * metadata), at most the record. */
static inline uint64_t kit_page_of(uint64_t record) { return record < 4096 ? record : 4096; }

/* ----------------------------------------------------------- setup */

/* *state = NULL, then a zeroed host state of `bytes`; NULL with err
 * "OWNER: out of host memory" when there is no memory. */
void *kit_state_new(size_t bytes, const char *owner, void **state, char *err, size_t errlen);
/* The end of a setup: when nothing failed, *state = st and 0; else
 * destroy(st) and -1 (*state stays as kit_state_new left it, NULL). */
int kit_setup_finish(int failed, void *st, void (*destroy)(void *), void **state);
/* For kernels that run inside one node: --nodes 1 and 1..max_ranks NPUs,
 * else -1 with err saying why ("KERNEL WHY: --nodes must be 1"). */
int kit_check_one_node(const char *kernel, const char *why, int nodes, int npus_per_node,
                       int max_ranks, char *err, size_t errlen);

/* 0 when need bytes fit one core's UB (UB_BYTES); else -1 with err the
 * caller's fmt (who needs need bytes, for what, and the options that size
 * it) followed by ", more than the UB_BYTES B UB". */
int kit_check_ub(uint32_t need, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------- host API */

/* A kernel's host side calls the engine through the plugin ABI's host table
 * (npurr/plugin.h: npurr_gm_alloc, npurr_launch, ...), as a plugin does;
 * kit_host.c builds that table. Beside it, for the built-in kernels: */

/* AI cores of type (CORE_AIV, else AIC) per rank on topo's chip. */
static inline int kit_cores(const npurr_topology *topo, engine_core_type type) {
    return type == CORE_AIV ? topo->aiv : topo->aic;
}
/* An input file opened for reading ("rb"), refused if it is a FIFO or a
 * device; NULL with why. The caller fcloses it. */
FILE *kit_fopen_input(const char *path, char *why, size_t whylen);
/* SHA-256 of the file at path as hex (a plugin's identity): 0, or -1 with why. */
int kit_sha256_file(const char *path, char hex[65], char *why, size_t whylen);
/* The plugin ABI's MoE inputs (npurr_host.moe_routing, .moe_row): the
 * routing and the tagged rows the built-in MoE kernels use. kit_moe.c. */
int kit_moe_routing(const npurr_topology *t, const char *spec, uint64_t seed, int experts,
                    int topk, int rank, int tokens, int32_t *expert_ids, float *weights,
                    char *err, size_t errlen);
void kit_moe_row(uint64_t seed, int s, int t, int k, int p, int hidden, uint16_t *row);

/* --------------------------------------------------------- guard regions */

/* Bytes after a buffer that must still hold `value` after the run: a write
 * past the end of the buffer is caught by kit_guards_check. */
#define KIT_GUARD_BYTES 64u

typedef struct kit_guard {
    gm_t at;
    uint32_t bytes;
    uint8_t value;
    const char *what;
} kit_guard;

/* Every guard region of one run. owner prefixes the setup's messages
 * ("combine setup"); value is the kernel's guard byte. */
typedef struct kit_guards {
    const char *owner;
    uint8_t value;
    kit_guard *v;
    int n, cap;
} kit_guards;

void kit_guards_init(kit_guards *g, const char *owner, uint8_t value);
void kit_guards_free(kit_guards *g);
/* Fills bytes at `at` with the guard byte and remembers the region. */
int kit_guard_fill(engine *e, kit_guards *g, gm_t at, uint32_t bytes, const char *what,
                   char *err, size_t errlen);
/* Remembers a region that must still hold `value` (not the guard byte: the
 * unused bytes of a zeroed control block) without writing it. */
int kit_guard_expect(kit_guards *g, gm_t at, uint32_t bytes, uint8_t value, const char *what,
                     char *err, size_t errlen);
/* A symmetric area of bytes on each of num_ranks ranks with a
 * KIT_GUARD_BYTES guard right after it on every one (remembered in g). */
int kit_sym_guarded(engine *e, kit_guards *g, int num_ranks, uint64_t bytes, const char *what,
                    gm_t *out, char *err, size_t errlen);
/* One buffer of a kernel's per-rank list, for kit_alloc_all: bytes (room
 * for at least UB_ALIGN, so an empty buffer still exists), then
 * KIT_GUARD_BYTES more when guarded. The guard starts right at the end of
 * the data, so a write one byte too far is caught; it covers the alignment
 * padding too, which also absorbs the kernels' 32 B over-reads. */
typedef struct kit_buffer {
    uint64_t bytes;
    const char *what;
    int guarded;
    gm_t *out;
} kit_buffer;
/* Allocates every buffer of the list on one rank, in order. */
int kit_alloc_all(engine *e, kit_guards *g, int rank, const kit_buffer *bufs, size_t n,
                  char *err, size_t errlen);
/* Names [p, ...) a rows x cols tensor of dtype for `--dump name@RANK`
 * (kit_alloc_all names every buffer as its bytes): 0, or -1 with err. */
int kit_name_rows(engine *e, gm_t p, const char *name, npurr_dtype dtype, uint64_t rows,
                  uint64_t cols, char *err, size_t errlen);
/* After the run: 0 when every guard byte is intact, else 1 with msg naming
 * the buffer, the rank, the byte and its GM offset. */
int kit_guards_check(engine *e, const kit_guards *g, char *msg, size_t msglen);

/* ---------------------------------------------------------- payload tags */

/* A generated row starts with a tag: a few fields (token id, rank, ...),
 * each spread over `width` little-endian bytes, one byte per element, so
 * every element is a small integer, exact in bf16 and a raw fp8 byte. */
#define KIT_TAG_MAX_ELEMS 8

/* The tag's elements: elems[j] = byte j of the fields in order; returns how
 * many elements (the sum of the widths). */
int kit_tag_bytes(const int *values, const int *widths, int nfields, uint8_t *elems);
/* Reads the fields back from a bf16 row of `hidden` elements; 0 when the
 * row is too short or its first elements are not a well-formed tag. */
int kit_tag_decode_bf16(const void *row, int hidden, const int *widths, int nfields, int *values);
/* The same for a row of raw bytes (fp8): every byte is an element. */
void kit_tag_decode_bytes(const uint8_t *row, const int *widths, int nfields, int *values);
/* A bf16 row of `hidden` elements: the tag, then values in [-1, 1) drawn
 * with kit_xorshift64s from x (the row's own state, mixed from its origin). */
void kit_fill_tagged_bf16(uint16_t *row, int hidden, const int *values, const int *widths,
                          int nfields, uint64_t x);

#endif
