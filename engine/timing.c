/*
 * timing.c - the timing model's parameters: defaults, their sources, and the
 * key=value file format of `--hw FILE`.
 *
 * One table drives defaults, parsing, printing and documentation, so a new
 * parameter is one line. Figures marked "estimate" are ours, chosen to be of
 * the right order; replace them with measurements when you have a chip.
 */
#include "engine.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct hw_param {
    const char *key;
    size_t offset;
    double def;
    const char *source;
} hw_param;

#define P(field, value, src) { #field, offsetof(engine_hw, field), value, src }
static const hw_param params[] = {
    P(aicore_clock_ghz, 1.85, "DESIGN.md: AI core clock 1.85 GHz (910B)"),
    P(hbm_gbps, 1600.0, "DESIGN.md: HBM about 1.6 TB/s per NPU"),
    P(mte_bytes_per_cycle, 64.0, "estimate: one core's MTE queue, ~118 GB/s at 1.85 GHz"),
    P(mte_latency_ns, 200.0, "estimate: GM access latency, a few hundred cycles (seed 000 s4.3)"),
    P(ub_vector_bytes_per_cycle, 256.0, "Ascend C: one vector repeat processes 256 B"),
    P(vector_latency_cycles, 16.0, "estimate: vector instruction issue-to-result"),
    P(cube_macs_per_cycle, 4096.0, "cube unit: one 16x16x16 fp16 fractal per cycle"),
    P(scalar_op_cycles, 4.0, "estimate: scalar issue cost of one device API call"),
    P(gm_read_ns, 160.0, "seed 000 s4.3: reading Remote_Head costs hundreds of cycles (~300)"),
    P(gm_write_ns, 50.0, "estimate: posted scalar store to GM"),
    P(hccs_link_gbps, 56.0, "DESIGN.md: HCCS full mesh of 8, 56 GB/s per peer link"),
    P(hccs_latency_ns, 800.0, "estimate: one-way HCCS access inside a node"),
    P(roce_gbps, 25.0, "DESIGN.md: RoCE 200 Gb/s per NPU"),
    P(rdma_latency_ns, 3000.0, "estimate: one-way RoCE RDMA write latency between nodes"),
    P(rdma_post_ns, 200.0, "estimate: building and ringing one RDMA work request"),
    P(batchwrite_task_ns, 1500.0, "seed 002 s2.3.1: BatchWrite 1-2 us per task"),
    P(crosscore_latency_ns, 100.0, "estimate: AIC<->AIV cross-core flag"),
    P(barrier_latency_ns, 2000.0, "estimate: an all-rank barrier's last-arrival-to-release"),
};
#undef P
#define N_PARAMS (sizeof params / sizeof params[0])

static double *field(engine_hw *hw, const hw_param *p) {
    return (double *)((char *)hw + p->offset);
}

void engine_hw_defaults(engine_hw *hw) {
    memset(hw, 0, sizeof *hw);
    for (size_t i = 0; i < N_PARAMS; i++) *field(hw, &params[i]) = params[i].def;
}

const char *engine_hw_source(const char *key) {
    for (size_t i = 0; i < N_PARAMS; i++)
        if (strcmp(params[i].key, key) == 0) return params[i].source;
    return "";
}

int engine_hw_set(engine_hw *hw, const char *key, const char *value, char *err, size_t errlen) {
    for (size_t i = 0; i < N_PARAMS; i++) {
        if (strcmp(params[i].key, key) != 0) continue;
        char *end = NULL;
        errno = 0;
        double v = strtod(value, &end);
        while (end && (*end == ' ' || *end == '\t' || *end == '\r')) end++;
        if (errno || end == value || *end != '\0' || !isfinite(v) || v <= 0) {
            snprintf(err, errlen, "hardware parameter %s: '%s' is not a positive number", key, value);
            return ENGINE_ERR;
        }
        *field(hw, &params[i]) = v;
        return ENGINE_OK;
    }
    int n = snprintf(err, errlen, "unknown hardware parameter '%s'; known:", key);
    for (size_t i = 0; i < N_PARAMS && n > 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, " %s", params[i].key);
    return ENGINE_ERR;
}

int engine_hw_load(engine_hw *hw, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--hw %s: cannot open: %s", path, strerror(errno));
        return ENGINE_ERR;
    }
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        size_t n = strlen(s);
        while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
            s[--n] = '\0';
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "--hw %s:%d: expected key=value, got '%s'", path, lineno, s);
            fclose(f);
            return ENGINE_ERR;
        }
        *eq = '\0';
        char *key = s, *val = eq + 1;
        size_t kn = strlen(key);
        while (kn && (key[kn - 1] == ' ' || key[kn - 1] == '\t')) key[--kn] = '\0';
        while (*val == ' ' || *val == '\t') val++;
        char sub[ENGINE_ERRLEN];
        if (engine_hw_set(hw, key, val, sub, sizeof sub) != ENGINE_OK) {
            snprintf(err, errlen, "--hw %s:%d: %s", path, lineno, sub);
            fclose(f);
            return ENGINE_ERR;
        }
    }
    fclose(f);
    return ENGINE_OK;
}

void engine_hw_write(const engine_hw *hw, FILE *out) {
    for (size_t i = 0; i < N_PARAMS; i++)
        fprintf(out, "%s=%.17g\n", params[i].key, *field((engine_hw *)hw, &params[i]));
}

