/*
 * routing.c - deterministic MoE routing generator (see routing.h).
 *
 * Every kind is one row of `kinds`: its name, whether it takes an argument,
 * how the argument is parsed, and how one rank's [tokens, topk] arrays are
 * generated. The generators share one recipe: a per-expert log-bias (the
 * kind's idea of expert popularity or eligibility), Gumbel top-k per token,
 * then random affinities normalised into weights.
 */
#include "routing.h"

#include "kit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ building blocks */

void routing_pick_topk(kit_rng *r, const double *log_bias, int n, int topk, int32_t *ids,
                       double *keys) {
    int filled = 0;
    for (int e = 0; e < n; e++) {
        double bias = log_bias ? log_bias[e] : 0.0;
        /* Draw even for ineligible experts so a kind's eligibility does not
         * shift the random stream of the others. */
        double g = -log(-log(kit_rng_open01(r)));
        if (isinf(bias) && bias < 0) continue;
        double key = bias + g;
        if (filled == topk && key <= keys[topk - 1]) continue;
        int pos = filled < topk ? filled++ : topk - 1;
        while (pos > 0 && keys[pos - 1] < key) {
            keys[pos] = keys[pos - 1];
            ids[pos] = ids[pos - 1];
            pos--;
        }
        keys[pos] = key;
        ids[pos] = e;
    }
    for (int k = filled; k < topk; k++) ids[k] = -1;
}

void routing_draw_weights(kit_rng *r, const int32_t *ids, int topk, float *weights) {
    double sum = 0.0;
    for (int k = 0; k < topk; k++) {
        /* bounded away from 0 so no kept slot is negligible in the sum */
        weights[k] = ids[k] >= 0 ? (float)(0.05 + 0.95 * kit_rng_open01(r)) : 0.0f;
        sum += weights[k];
    }
    for (int k = 0; k < topk; k++) weights[k] = sum > 0 ? (float)(weights[k] / sum) : 0.0f;
}

/* ------------------------------------------------------------------ kinds */

typedef struct kind_def {
    const char *name;
    int takes_arg;    /* 1: KIND:ARG required; 0: no argument; 2: KIND or KIND:ARG */
    const char *arg_help;
    int (*parse_arg)(const char *arg, routing_spec *spec, char *err, size_t errlen);
    int (*generate)(const routing_spec *spec, const routing_shape *shape, uint64_t seed, int rank,
                    int tokens, int32_t *ids, float *weights, char *err, size_t errlen);
    /* Kinds that read rows from outside (npy) also need the rank's first
     * row; they set this instead of generate. */
    int (*generate_rows)(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                         int rank, int64_t first_row, int tokens, int32_t *ids, float *weights,
                         char *err, size_t errlen);
} kind_def;

/* Shared driver: per-expert log-bias (NULL = uniform), then per token a
 * Gumbel top-k and normalised weights. Stream 0 of (seed, rank) is the
 * tokens' randomness; kinds use other streams for global choices. */
static int generate_biased(const double *log_bias, const routing_shape *shape, uint64_t seed,
                           int rank, int tokens, int32_t *ids, float *weights, char *err,
                           size_t errlen) {
    double *keys = malloc(sizeof(double) * (size_t)shape->topk);
    if (!keys) {
        snprintf(err, errlen, "routing: out of memory for %d top-k keys", shape->topk);
        return -1;
    }
    kit_rng r;
    kit_rng_seed(&r, seed, 0, (uint64_t)rank);
    for (int t = 0; t < tokens; t++) {
        int32_t *row = ids + (size_t)t * (size_t)shape->topk;
        routing_pick_topk(&r, log_bias, shape->experts, shape->topk, row, keys);
        routing_draw_weights(&r, row, shape->topk, weights + (size_t)t * (size_t)shape->topk);
    }
    free(keys);
    return 0;
}

static int gen_uniform(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                       int rank, int tokens, int32_t *ids, float *weights, char *err,
                       size_t errlen) {
    (void)spec;
    return generate_biased(NULL, shape, seed, rank, tokens, ids, weights, err, errlen);
}

/* spec->param from a family's argument arg: a number (a whole one when
 * integer) in [lo, hi]. 0, else -1 with err "--routing SPEC: WHAT'ARG' must
 * be MUST" (what ends with a space when not empty). */
static int parse_param(const char *arg, int integer, double lo, double hi, const char *what,
                       const char *must, routing_spec *spec, char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    double v = integer ? (double)strtol(arg, &end, 10) : strtod(arg, &end);
    if (errno || end == arg || *end != '\0' || !isfinite(v) || v < lo || v > hi) {
        snprintf(err, errlen, "--routing %s: %s'%s' must be %s", spec->text, what, arg, must);
        return -1;
    }
    spec->param = v;
    return 0;
}

static int parse_zipf(const char *arg, routing_spec *spec, char *err, size_t errlen) {
    return parse_param(arg, 0, 0.0, 16.0, "zipf exponent ", "a number between 0 and 16", spec, err,
                       errlen);
}

static int gen_zipf(const routing_spec *spec, const routing_shape *shape, uint64_t seed, int rank,
                    int tokens, int32_t *ids, float *weights, char *err, size_t errlen) {
    int n = shape->experts;
    int *perm = malloc(sizeof(int) * (size_t)n);
    double *log_bias = malloc(sizeof(double) * (size_t)n);
    if (!perm || !log_bias) {
        free(perm);
        free(log_bias);
        snprintf(err, errlen, "routing: out of memory for %d experts", n);
        return -1;
    }
    /* The popularity order is global (stream 1, rank 0): a hot expert is hot
     * for every rank's tokens, which is what makes a destination rank hot. */
    kit_rng g;
    kit_rng_seed(&g, seed, 1, 0);
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(kit_rng_next(&g) % (uint64_t)(i + 1));
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    for (int r = 0; r < n; r++) log_bias[perm[r]] = -spec->param * log(1.0 + (double)r);
    int rc = generate_biased(log_bias, shape, seed, rank, tokens, ids, weights, err, errlen);
    free(perm);
    free(log_bias);
    return rc;
}


/* ---- group-limited[:M]: DeepSeek-V3's device-limited routing. Experts
 * are grouped by node; a token scores each node by the sum of its two best
 * expert keys, keeps the best M nodes (default 4) and takes its top-k
 * among their experts, so it reaches at most M nodes. Keys are Gumbel
 * noise, i.e. "top-k of random scores" restricted to the chosen nodes. */
#define GROUP_LIMITED_DEFAULT 4

static int parse_group_limited(const char *arg, routing_spec *spec, char *err, size_t errlen) {
    if (!*arg) {
        spec->param = GROUP_LIMITED_DEFAULT;
        return 0;
    }
    return parse_param(arg, 1, 1, 1024, "node limit ", "an integer from 1 to 1024", spec, err,
                       errlen);
}

/* Writes the topk largest of key[0..n) (skipping -INFINITY) into ids,
 * in descending key order; -1 where fewer are eligible. */
static void top_by_key(const double *key, int n, int topk, int32_t *ids, double *best) {
    int filled = 0;
    for (int e = 0; e < n; e++) {
        if (isinf(key[e]) && key[e] < 0) continue;
        if (filled == topk && key[e] <= best[topk - 1]) continue;
        int pos = filled < topk ? filled++ : topk - 1;
        while (pos > 0 && best[pos - 1] < key[e]) {
            best[pos] = best[pos - 1];
            ids[pos] = ids[pos - 1];
            pos--;
        }
        best[pos] = key[e];
        ids[pos] = e;
    }
    for (int k = filled; k < topk; k++) ids[k] = -1;
}

static int gen_group_limited(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                             int rank, int tokens, int32_t *ids, float *weights, char *err,
                             size_t errlen) {
    int n = shape->experts, groups = shape->nodes > 0 ? shape->nodes : 1;
    if (n % groups) {
        snprintf(err, errlen, "--routing %s: %d experts do not split evenly over %d nodes",
                 spec->text, n, groups);
        return -1;
    }
    int per = n / groups, keep = (int)spec->param < groups ? (int)spec->param : groups;
    double *key = malloc(sizeof(double) * (size_t)n);
    double *score = malloc(sizeof(double) * (size_t)groups);
    double *best = malloc(sizeof(double) * (size_t)(shape->topk > groups ? shape->topk : groups));
    int32_t *chosen = malloc(sizeof(int32_t) * (size_t)groups);
    if (!key || !score || !best || !chosen) {
        free(key); free(score); free(best); free(chosen);
        snprintf(err, errlen, "routing: out of memory for %d experts", n);
        return -1;
    }
    kit_rng r;
    kit_rng_seed(&r, seed, 0, (uint64_t)rank);
    for (int t = 0; t < tokens; t++) {
        for (int e = 0; e < n; e++) key[e] = -log(-log(kit_rng_open01(&r)));
        for (int g = 0; g < groups; g++) {
            double a = -INFINITY, b = -INFINITY;   /* two best keys of the group */
            for (int e = g * per; e < (g + 1) * per; e++) {
                if (key[e] > a) { b = a; a = key[e]; }
                else if (key[e] > b) b = key[e];
            }
            score[g] = per > 1 ? a + b : a;
        }
        top_by_key(score, groups, keep, chosen, best);
        for (int g = 0; g < groups; g++) {
            int kept = 0;
            for (int i = 0; i < keep; i++) kept |= chosen[i] == g;
            if (!kept)
                for (int e = g * per; e < (g + 1) * per; e++) key[e] = -INFINITY;
        }
        int32_t *row = ids + (size_t)t * (size_t)shape->topk;
        top_by_key(key, n, shape->topk, row, best);
        routing_draw_weights(&r, row, shape->topk, weights + (size_t)t * (size_t)shape->topk);
    }
    free(key); free(score); free(best); free(chosen);
    return 0;
}

/* ---- active-ranks:N: every token goes only to experts of N ranks, taken
 * round robin over the nodes (rank 0 of node 0, rank 0 of node 1, ..., then
 * the second rank of each node) so the traffic still crosses nodes; all
 * other ranks receive nothing. Slots that N ranks' experts cannot fill are
 * -1. */
static int parse_active_ranks(const char *arg, routing_spec *spec, char *err, size_t errlen) {
    return parse_param(arg, 1, 1, 1 << 20, "", "a positive number of ranks", spec, err, errlen);
}

int routing_active_rank(const routing_shape *shape, int k) {
    int nodes = shape->nodes > 0 ? shape->nodes : 1;
    return (k % nodes) * shape->npus_per_node + k / nodes;
}

static int gen_active_ranks(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                            int rank, int tokens, int32_t *ids, float *weights, char *err,
                            size_t errlen) {
    int active = (int)spec->param, n = shape->experts;
    if (active > shape->num_ranks) {
        snprintf(err, errlen, "--routing %s: only %d ranks exist", spec->text, shape->num_ranks);
        return -1;
    }
    if (shape->num_ranks < 1 || n % shape->num_ranks) {
        snprintf(err, errlen, "--routing %s: %d experts do not split over %d ranks", spec->text, n,
                 shape->num_ranks);
        return -1;
    }
    int per = n / shape->num_ranks;
    double *log_bias = malloc(sizeof(double) * (size_t)n);
    if (!log_bias) {
        snprintf(err, errlen, "routing: out of memory for %d experts", n);
        return -1;
    }
    for (int e = 0; e < n; e++) log_bias[e] = -INFINITY;
    for (int k = 0; k < active; k++) {
        int r = routing_active_rank(shape, k);
        for (int e = r * per; e < (r + 1) * per; e++) log_bias[e] = 0.0;
    }
    int rc = generate_biased(log_bias, shape, seed, rank, tokens, ids, weights, err, errlen);
    free(log_bias);
    return rc;
}

/* ---- drop:P: uniform routing, then each top-k slot is set to -1 with
 * probability P (stream 3, so the drops do not shift the experts drawn);
 * the kept slots' weights are drawn and normalised afterwards. */
static int parse_drop(const char *arg, routing_spec *spec, char *err, size_t errlen) {
    return parse_param(arg, 0, 0.0, 1.0, "drop probability ", "between 0 and 1", spec, err, errlen);
}

static int gen_drop(const routing_spec *spec, const routing_shape *shape, uint64_t seed, int rank,
                    int tokens, int32_t *ids, float *weights, char *err, size_t errlen) {
    double *keys = malloc(sizeof(double) * (size_t)shape->topk);
    if (!keys) {
        snprintf(err, errlen, "routing: out of memory for %d top-k keys", shape->topk);
        return -1;
    }
    kit_rng r, drop;
    kit_rng_seed(&r, seed, 0, (uint64_t)rank);
    kit_rng_seed(&drop, seed, 3, (uint64_t)rank);
    for (int t = 0; t < tokens; t++) {
        int32_t *row = ids + (size_t)t * (size_t)shape->topk;
        routing_pick_topk(&r, NULL, shape->experts, shape->topk, row, keys);
        for (int k = 0; k < shape->topk; k++)
            if (kit_rng_open01(&drop) < spec->param) row[k] = -1;
        routing_draw_weights(&r, row, shape->topk, weights + (size_t)t * (size_t)shape->topk);
    }
    free(keys);
    return 0;
}

static const kind_def kinds[] = {
    {"uniform", 0, "", NULL, gen_uniform, NULL},
    {"zipf", 1, "S", parse_zipf, gen_zipf, NULL},
    {"group-limited", 2, "M", parse_group_limited, gen_group_limited, NULL},
    {"active-ranks", 1, "N", parse_active_ranks, gen_active_ranks, NULL},
    {"drop", 1, "P", parse_drop, gen_drop, NULL},
    {"npy", 1, "PATH", NULL, NULL, routing_npy_generate_rows},
};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

const char *routing_kinds_help(void) {
    /* Made from the table, so help and errors list every kind there is. */
    static char text[256];
    if (text[0]) return text;
    size_t n = 0;
    for (int i = 0; i < N_KINDS && n < sizeof text; i++) {
        const kind_def *k = &kinds[i];
        int w = snprintf(text + n, sizeof text - n, "%s%s%s%s%s%s", i ? " | " : "", k->name,
                         k->takes_arg == 2 ? "[" : "", k->takes_arg ? ":" : "", k->arg_help,
                         k->takes_arg == 2 ? "]" : "");
        if (w < 0) break;
        n += (size_t)w;
    }
    return text;
}

int routing_parse(const char *text, routing_spec *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!text || !*text) {
        snprintf(err, errlen, "--routing: empty value (expected one of %s)", routing_kinds_help());
        return -1;
    }
    if (strlen(text) >= ROUTING_SPEC_MAX) {
        snprintf(err, errlen, "--routing: value is longer than %d characters",
                 ROUTING_SPEC_MAX - 1);
        return -1;
    }
    snprintf(out->text, sizeof out->text, "%s", text);
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    for (int i = 0; i < N_KINDS; i++) {
        if (strlen(kinds[i].name) != name_len || strncmp(kinds[i].name, text, name_len) != 0)
            continue;
        out->kind = i;
        if (kinds[i].takes_arg == 1 && (!colon || !colon[1])) {
            snprintf(err, errlen, "--routing %s: '%s' needs an argument (%s:%s)", text,
                     kinds[i].name, kinds[i].name, kinds[i].arg_help);
            return -1;
        }
        if (kinds[i].takes_arg == 2 && colon && !colon[1]) {
            snprintf(err, errlen, "--routing %s: '%s:' needs an argument after the colon", text,
                     kinds[i].name);
            return -1;
        }
        if (!kinds[i].takes_arg && colon) {
            snprintf(err, errlen, "--routing %s: '%s' takes no argument", text, kinds[i].name);
            return -1;
        }
        if (colon) snprintf(out->arg, sizeof out->arg, "%s", colon + 1);
        return kinds[i].parse_arg ? kinds[i].parse_arg(out->arg, out, err, errlen) : 0;
    }
    snprintf(err, errlen, "--routing %s: unknown routing (expected one of %s)", text,
             routing_kinds_help());
    return -1;
}

int routing_generate(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                     int rank, int tokens, int32_t *expert_ids, float *topk_weights, char *err,
                     size_t errlen) {
    /* One file for every rank, each with the same token count: it must
     * hold exactly ranks x tokens rows, not merely enough of them. */
    if (spec->kind >= 0 && spec->kind < N_KINDS && kinds[spec->kind].generate_rows == routing_npy_generate_rows &&
        !routing_npy_per_rank(spec->arg) && rank == 0) {
        int64_t rows, cols;
        int per_rank;
        if (routing_npy_shape(spec, 0, &rows, &cols, &per_rank, err, errlen)) return -1;
        if (rows != (int64_t)shape->num_ranks * tokens) {
            snprintf(err, errlen,
                     "--routing %s: the file has %lld rows but %d ranks x --tokens %d need "
                     "exactly %lld", spec->text, (long long)rows, shape->num_ranks, tokens,
                     (long long)shape->num_ranks * tokens);
            return -1;
        }
    }
    return routing_generate_at(spec, shape, seed, rank, (int64_t)rank * tokens, tokens, expert_ids,
                               topk_weights, err, errlen);
}

int routing_generate_at(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                        int rank, int64_t first_row, int tokens, int32_t *expert_ids,
                        float *topk_weights, char *err, size_t errlen) {
    if (spec->kind < 0 || spec->kind >= N_KINDS) {
        snprintf(err, errlen, "--routing %s: not a parsed routing spec", spec->text);
        return -1;
    }
    if (shape->experts < 1 || shape->topk < 1 || shape->topk > shape->experts) {
        snprintf(err, errlen, "--topk %d must be between 1 and --experts %d", shape->topk,
                 shape->experts);
        return -1;
    }
    if (tokens < 0) {
        snprintf(err, errlen, "--tokens %d must not be negative", tokens);
        return -1;
    }
    if (kinds[spec->kind].generate_rows)
        return kinds[spec->kind].generate_rows(spec, shape, seed, rank, first_row, tokens,
                                               expert_ids, topk_weights, err, errlen);
    return kinds[spec->kind].generate(spec, shape, seed, rank, tokens, expert_ids, topk_weights,
                                      err, errlen);
}

int routing_check_ranks(const routing_spec *spec, int num_ranks, char *err, size_t errlen) {
    if (strcmp(kinds[spec->kind].name, "active-ranks") != 0 || (int)spec->param <= num_ranks)
        return 0;
    snprintf(err, errlen, "--routing %s: the run has only %d ranks", spec->text, num_ranks);
    return -1;
}

int routing_check_experts(int experts, int num_ranks, char *err, size_t errlen) {
    if (num_ranks > 0 && experts % num_ranks == 0) return 0;
    snprintf(err, errlen, "--experts %d: must be a multiple of the %d ranks", experts, num_ranks);
    return -1;
}

int routing_check_topk(int topk, int experts, char *err, size_t errlen) {
    if (topk <= experts) return 0;
    snprintf(err, errlen, "--topk %d: larger than --experts %d", topk, experts);
    return -1;
}
