/*
 * routing.h - the MoE routing generator shared by the kernels.
 *
 * A routing says, for every token of a rank, which top-k experts it goes to
 * and with which weights: expert_ids [tokens, topk] (int32, -1 = dropped
 * slot) and topk_weights [tokens, topk] (float). Kernels build their
 * dispatch/combine metadata from it and their CPU references check against it.
 *
 * The generator is deterministic: the same spec, shape, seed and rank give the
 * same arrays on every machine (the kit's xoshiro stream, kit_rng, no libc
 * rand, no floating point that depends on the platform's libm beyond log()).
 *
 * Spec grammar (`--routing`): KIND[:ARG]. Kinds today:
 *   uniform   every expert equally likely: top-k of i.i.d. random scores
 *   zipf:S    skewed expert load: expert popularity p ∝ 1/(1+r)^S over a
 *             seeded permutation r of the experts (the same on every rank,
 *             as a real hot expert is hot everywhere); S >= 0, 0 = uniform
 *   group-limited[:M]  DeepSeek-V3's node-limited routing: a token picks
 *             its best M nodes (default 4; score = sum of the node's two
 *             best expert keys) and its top-k among their experts
 *   active-ranks:N  only the experts of N ranks (taken round robin over the
 *             nodes: routing_active_rank) are eligible; the rest get nothing
 *   drop:P    uniform, then each slot becomes -1 with probability P
 *   npy:PATH  a real [tokens, topk] int32/int64 array from a NumPy file;
 *             "{rank}" in PATH names one file per rank, otherwise one file
 *             holds every rank's rows back to back in rank order
 * Adding a kind is one entry in the table of routing.c plus its generate
 * function; the shared pieces it needs (kit_rng, Gumbel top-k over per-expert
 * log-biases, weight normalisation) are exported below. The shape carries
 * the topology those kinds need (nodes, npus per node, ranks).
 */
#ifndef NPURR_ROUTING_H
#define NPURR_ROUTING_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"   /* the input-file grammar */

#define ROUTING_SPEC_MAX 256

typedef struct routing_spec {
    int kind;                    /* index into routing.c's table */
    double param;                /* numeric argument (zipf S, drop P, ...) */
    char arg[ROUTING_SPEC_MAX];  /* the text after ':' ("" if none) */
    char text[ROUTING_SPEC_MAX]; /* the spec as given, for messages */
} routing_spec;

typedef struct routing_shape {
    int num_ranks;
    int nodes;
    int npus_per_node;
    int experts;                 /* total, across all ranks */
    int topk;
} routing_shape;

/* The checks every MoE kernel makes of its shape, with messages naming
 * --experts / --topk: experts split evenly over the ranks; top-k at most
 * the number of experts. Return 0, or -1 with err. */
int routing_check_experts(int experts, int num_ranks, char *err, size_t errlen);
/* What a routing needs of the run's size (active-ranks:N at most num_ranks). */
int routing_check_ranks(const routing_spec *spec, int num_ranks, char *err, size_t errlen);
int routing_check_topk(int topk, int experts, char *err, size_t errlen);

/* Parses a --routing value. On error fills err with a sentence naming
 * --routing and the value, and returns -1. */
int routing_parse(const char *text, routing_spec *out, char *err, size_t errlen);

/* Fills expert_ids and topk_weights ([tokens * topk] each) for one rank.
 * The experts of one token are distinct; weights of a token's kept slots sum
 * to 1. Returns 0, or -1 with err naming the input at fault. */
int routing_generate(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                     int rank, int tokens, int32_t *expert_ids, float *topk_weights, char *err,
                     size_t errlen);

/* Same, for a rank whose rows start at first_row of a routing that covers
 * every rank (npy:PATH without "{rank}"); routing_generate uses
 * rank * tokens, right when every rank has the same token count. */
int routing_generate_at(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                        int rank, int64_t first_row, int tokens, int32_t *expert_ids,
                        float *topk_weights, char *err, size_t errlen);

/* The input-file grammar (ROUTING_NPY_SCHEME, routing_npy_file, ...) is in
 * kernels.h: the CLI and the session library use it too. */

/* npy:PATH: the array shape of rank's file (rows, columns) and whether the
 * path has a "{rank}" placeholder (one file per rank). routing_npy_rows.c. */
int routing_npy_shape(const routing_spec *spec, int rank, int64_t *rows, int64_t *cols,
                      int *per_rank, char *err, size_t errlen);
/* The npy kind's generator, which routing.c's kind table calls: rank's rows
 * from first_row on (per-rank files from their first row), weights drawn as
 * for the other kinds. routing_npy_rows.c. */
int routing_npy_generate_rows(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                              int rank, int64_t first_row, int tokens, int32_t *ids,
                              float *weights, char *err, size_t errlen);

/* The header of a .npy file, as routing_npy_parse accepts it. */
typedef struct routing_npy_header {
    int64_t rows, cols;
    int elem;              /* 4 (int32) or 8 (int64) */
    int swap;              /* big-endian data */
    size_t data_off;       /* where the array starts */
    uint64_t data_bytes;   /* rows * cols * elem: the file must hold exactly this after data_off */
} routing_npy_header;
/* Parses the first len bytes of a .npy file (magic, version 1-3, header
 * dict): 0 only for a 2-D C-order int32/int64 array, else -1 with err
 * saying what the file is instead ("holds dtype '<f8'..."); reads nothing
 * past len. routing_npy.c. */
int routing_npy_parse(const unsigned char *buf, size_t len, routing_npy_header *h, char *err,
                      size_t errlen);

/* active-ranks:N: the k-th active rank (k < N). */
int routing_active_rank(const routing_shape *shape, int k);

/* routing_kinds_help (kernels.h): the known kinds, made from the one table. */

/* ---- building blocks for new kinds ---- */

/* The kit's random stream (kit.h). */
typedef struct kit_rng kit_rng;

/* Picks topk distinct experts out of n by the largest log_bias[e] + Gumbel
 * noise (sampling without replacement proportional to exp(log_bias)); an
 * expert with log_bias -INFINITY is never picked. log_bias NULL = all equal,
 * which is "top-k of i.i.d. random scores". Writes topk ids in descending key
 * order; slots that cannot be filled (fewer eligible experts) get -1. */
void routing_pick_topk(kit_rng *r, const double *log_bias, int n, int topk, int32_t *ids,
                       double *keys_scratch);

/* Draws random affinities for the kept slots of one token and normalises
 * them to sum to 1 (dropped slots, id -1, get weight 0). */
void routing_draw_weights(kit_rng *r, const int32_t *ids, int topk, float *weights);

#endif
