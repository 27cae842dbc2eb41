/*
 * timing.c - the timing model's parameters: defaults, their sources, the
 * key=value file format of `--hw FILE`, and the rates a run prices with
 * (engine_rates_of).
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
#include <sys/stat.h>

/* Physical sense, per unit: a bandwidth of 1e-300 GB/s would make one byte
 * take 1e303 ps, past the 64-bit picosecond clock. Every range keeps the
 * longest plausible transfer (a few GB at the lowest bandwidth) inside
 * it; the top ends are loose enough for "make this instantaneous" runs
 * (tests set HBM to 1e9 GB/s). Latencies and cycle counts only add, so any
 * positive value is safe below their maximum. */
#define BW_MIN 1e-3   /* GB/s */
#define BW_MAX 1e9
#define NS_MIN 0      /* ns: any positive cost (tests make costs vanish with 1e-9) */
#define NS_MAX 1e9    /* one second */

/* A parameter whose default is its source's figure; uses: what it prices
 * (ENGINE_USED_* bits, 0 for every run), for a calibration's reruns. */
#define P(k, old, field, value, uses, lo, hi, unit, what, src) \
    { k, old, offsetof(engine_hw, field), value, lo, hi, unit, what, src, ENGINE_HW_SOURCED, value, uses }
/* Fitted by `npurr calibrate` to the training rows: value is the fit's
 * output (tools/fit_timing.sh), est its sourced estimate, the documented
 * start of that fit and the centre of its box. */
#define F(k, old, field, value, est, uses, lo, hi, unit, what, src) \
    { k, old, offsetof(engine_hw, field), value, lo, hi, unit, what, src, ENGINE_HW_FITTED, est, uses }
/* Tried, and not identified by the training rows: keeps its estimate. */
#define U(k, old, field, value, uses, lo, hi, unit, what, src) \
    { k, old, offsetof(engine_hw, field), value, lo, hi, unit, what, src, ENGINE_HW_UNIDENTIFIED, \
      value, uses }
/* Where a fitted parameter's source says what it was fitted on. */
#define FITTED_ON "fitted on the training rows T1-T3 (tools/fit_timing.sh, tools/fidelity_anchors.csv)"
static const engine_hw_param params[] = {
    P("aicore_clock_ghz", NULL, aicore_clock_ghz, 1.85, 0, 0.01, 100.0, "GHz",
      "AI core clock: scalar, vector and cube cycles",
      "DESIGN.md: AI core clock 1.85 GHz (910B)"),
    P("hbm_gbytes_per_s", "hbm_gbps", hbm_gbps, 1600.0, 0, BW_MIN, BW_MAX, "GB/s",
      "HBM bandwidth of one NPU, shared by its cores",
      "DESIGN.md: HBM about 1.6 TB/s per NPU"),
    P("mte_bytes_per_cycle", NULL, mte_bytes_per_cycle, 64.0, 0, 1e-3, 1e9, "B/cycle",
      "one core's MTE2/MTE3 queue bandwidth",
      "estimate: one core's MTE queue, ~118 GB/s at 1.85 GHz"),
    P("mte_hccs_bytes_per_cycle", NULL, mte_hccs_bytes_per_cycle, 8.0, ENGINE_USED_HCCS,
      1e-3, 1e9, "B/cycle",
      "one core's MTE2/MTE3 queue bandwidth when the GM at the other end is a peer NPU's, "
      "over HCCS (its outstanding requests over the link's latency)",
      "estimate: 8 B/cycle (15 GB/s a core), where an earlier fit of it ended"),
    P("mte_latency_ns", NULL, mte_latency_ns, 200.0, 0, NS_MIN, NS_MAX, "ns",
      "fixed cost of one GM<->local transfer",
      "estimate: GM access latency, a few hundred cycles (seed 000 s4.3)"),
    P("ub_vector_bytes_per_cycle", NULL, ub_vector_bytes_per_cycle, 256.0, 0, 1e-3, 1e9, "B/cycle",
      "vector unit throughput on UB", "Ascend C: one vector repeat processes 256 B"),
    P("vector_latency_cycles", NULL, vector_latency_cycles, 16.0, 0, 0, 1e9, "cycles",
      "fixed cost of one vector instruction", "estimate: vector instruction issue-to-result"),
    P("cube_macs_per_cycle", NULL, cube_macs_per_cycle, 4096.0, 0, 1e-3, 1e12, "MAC/cycle",
      "cube unit throughput", "cube unit: one 16x16x16 fp16 fractal per cycle"),
    U("scalar_op_cycles", NULL, scalar_op_cycles, 4.0, 0, 0, 1e9, "cycles",
      "issue cost of one device API call on the scalar unit",
      "estimate: a few cycles a call; not identified by the rows (an earlier fit of it ended "
      "at the edge of its box, 16x below)"),
    P("gm_read_ns", NULL, gm_read_ns, 160.0, 0, NS_MIN, NS_MAX, "ns",
      "scalar GetValue on GM (a head or tail read)",
      "seed 000 s4.3: reading Remote_Head costs hundreds of cycles (~300)"),
    P("gm_write_ns", NULL, gm_write_ns, 50.0, 0, NS_MIN, NS_MAX, "ns",
      "scalar SetValue or atomic on GM", "estimate: posted scalar store to GM"),
    P("hccs_link_gbytes_per_s", "hccs_link_gbps", hccs_link_gbps, 56.0, ENGINE_USED_HCCS, BW_MIN,
      BW_MAX, "GB/s",
      "one HCCS peer link (full mesh inside a node), each way",
      "secondary claim: HCCS 56 GB/s a peer link (DESIGN.md); the A2 measurements move 50-80 "
      "GB/s a rank over 7 links"),
    F("hccs_port_gbytes_per_s", NULL, hccs_port_gbps, 108.6, 80.0, ENGINE_USED_HCCS, BW_MIN,
      BW_MAX, "GB/s",
      "one NPU's HCCS traffic each way, over all its links together (a transfer to a peer "
      "holds its link and the ports at both ends)",
      FITTED_ON "; the fit starts at 80 GB/s, the top of the 50-80 GB/s a rank the A2 "
      "measurements move over 7 links"),
    F("hccs_transfer_ns", NULL, hccs_transfer_ns, 42.62, 50.0, ENGINE_USED_HCCS, NS_MIN, NS_MAX,
      "ns",
      "time one transfer holds an NPU's HCCS port, each way, beyond its bytes (request, "
      "headers, completion): what makes many small rows slower than one large copy",
      FITTED_ON "; the fit starts at 50 ns (estimate: about a hundred link cycles)"),
    P("hccs_latency_ns", NULL, hccs_latency_ns, 800.0, ENGINE_USED_HCCS, NS_MIN, NS_MAX, "ns",
      "one-way latency of an HCCS access", "estimate: one-way HCCS access inside a node"),
    U("hccs_read_latencies", NULL, hccs_read_latencies, 2.0, ENGINE_USED_HCCS_READ, 0, 1e3,
      "latencies",
      "what an MTE read of a peer's GM holds its queue for beyond its bytes, in one-way HCCS "
      "latencies: a read is not posted, its request crosses before the queue takes the next "
      "(its data then lands a latency later, as a write's does); 1e-9 makes reads posted",
      "estimate: 2, the round trip (a scalar GetValue of a peer's word waits likewise, seed 000 "
      "s4.3); not identified by the rows (fitted with the others it ended at its box's edge, "
      "16x below, where a 2x move changed no row by 1 %)"),
    P("roce_gbytes_per_s", "roce_gbps", roce_gbps, 25.0, ENGINE_USED_NIC, BW_MIN, BW_MAX, "GB/s",
      "RoCE NIC of one NPU, each way: what a write to the same-numbered NPU of another server "
      "gets of the 200GE line",
      "the 200GE line rate (25 GB/s) a secondary claim gives each NPU"),
    F("roce_cross_plane_gbytes_per_s", NULL, roce_cross_plane_gbps, 13.14, 12.5, ENGINE_USED_NIC,
      BW_MIN, BW_MAX, "GB/s",
      "what one NPU's RDMA to a different-numbered NPU of another server gets, each way: A2 "
      "servers are joined by planes (NPU i of every server on plane i), so such a write leaves "
      "its plane and shares the spine; a write to the same-numbered NPU (the layered kernels) "
      "stays on its plane at the NIC's rate",
      FITTED_ON "; the fit starts at 12.5 GB/s, half the line rate: a spine oversubscribed "
      "2:1 (estimate)"),
    P("rdma_latency_ns", NULL, rdma_latency_ns, 3000.0, ENGINE_USED_NIC, NS_MIN, NS_MAX, "ns",
      "one-way RDMA write latency between nodes",
      "estimate: one-way RoCE RDMA write latency between nodes"),
    P("rdma_post_ns", NULL, rdma_post_ns, 200.0, ENGINE_USED_NIC, NS_MIN, NS_MAX, "ns",
      "scalar cost of posting one RDMA operation",
      "estimate: building and ringing one RDMA work request"),
    U("batchwrite_task_ns", NULL, batchwrite_task_ns, 1500.0, ENGINE_USED_AICPU, NS_MIN,
      NS_MAX, "ns",
      "AICPU time per BatchWrite item, one after another per NPU (Hccl<HCCL_SERVER_TYPE_AICPU>: "
      "the HCCL server on the rank's AICPU posts it)",
      "seed 002 s2.3.1: 1-2 us a task; not identified by the rows (fitted with the others it "
      "ended at its box's edge, 16x above)"),
    U("nic_message_ns", NULL, nic_message_ns, 100.0, ENGINE_USED_NIC, NS_MIN, NS_MAX, "ns",
      "time one RDMA message holds the sending NIC beyond its bytes (work request, doorbell, "
      "headers): 1/message rate",
      "estimate: 10 M messages/s for a 200GE RoCE NIC; not identified by the rows (fitted with "
      "the HCCS port it ended at its box's edge, 16x above, moving T3 by 1 %)"),
    P("crosscore_latency_ns", NULL, crosscore_latency_ns, 100.0, 0, NS_MIN, NS_MAX, "ns",
      "AIC<->AIV cross-core flag propagation", "estimate: AIC<->AIV cross-core flag"),
    P("barrier_latency_ns", NULL, barrier_latency_ns, 2000.0, 0, NS_MIN, NS_MAX, "ns",
      "added by a cross-rank barrier",
      "estimate: an all-rank barrier's last-arrival-to-release"),
};
#undef P
#undef F
#undef U
#undef FITTED_ON
#define N_PARAMS (sizeof params / sizeof params[0])

static double *field(engine_hw *hw, const engine_hw_param *p) {
    return (double *)((char *)hw + p->offset);
}

size_t engine_hw_count(void) { return N_PARAMS; }

const engine_hw_param *engine_hw_param_at(size_t i) { return i < N_PARAMS ? &params[i] : NULL; }

const engine_hw_param *engine_hw_find(const char *key) {
    for (size_t i = 0; i < N_PARAMS; i++)
        if (strcmp(params[i].key, key) == 0 || (params[i].old_key && strcmp(params[i].old_key, key) == 0))
            return &params[i];
    return NULL;
}

double engine_hw_get(const engine_hw *hw, const engine_hw_param *p) {
    return *field((engine_hw *)hw, p);
}

int engine_hw_put(engine_hw *hw, const engine_hw_param *p, double v, char *err, size_t errlen) {
    if (!isfinite(v) || v <= 0 || v < p->min || v > p->max) {
        snprintf(err, errlen, "hardware parameter %s: %.17g %s is outside %g..%g %s (npurr hw)",
                 p->key, v, p->unit, p->min, p->max, p->unit);
        return ENGINE_ERR;
    }
    *field(hw, p) = v;
    return ENGINE_OK;
}

void engine_hw_defaults(engine_hw *hw) {
    memset(hw, 0, sizeof *hw);
    for (size_t i = 0; i < N_PARAMS; i++) *field(hw, &params[i]) = params[i].def;
}

int engine_hw_set(engine_hw *hw, const char *key, const char *value, char *err, size_t errlen) {
    const engine_hw_param *p = engine_hw_find(key);
    if (p) {
        char *end = NULL;
        errno = 0;
        double v = strtod(value, &end);
        while (end && (*end == ' ' || *end == '\t' || *end == '\r')) end++;
        if (errno == ERANGE && v != 0 && isfinite(v)) errno = 0;   /* subnormal: range check below */
        if (errno || end == value || *end != '\0' || !isfinite(v) || v <= 0) {
            snprintf(err, errlen, "hardware parameter %s: '%s' is not a positive number", key, value);
            return ENGINE_ERR;
        }
        if (v < p->min || v > p->max) {
            snprintf(err, errlen, "hardware parameter %s: %s %s is outside %g..%g %s (npurr hw)",
                     key, value, p->unit, p->min, p->max, p->unit);
            return ENGINE_ERR;
        }
        *field(hw, p) = v;
        return ENGINE_OK;
    }
    int n = snprintf(err, errlen, "unknown hardware parameter '%s'; known:", key);
    for (size_t i = 0; i < N_PARAMS && n > 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, " %s", params[i].key);
    return ENGINE_ERR;
}

/* What a line of a .hw file says: its comment cut, a first line's UTF-8
 * byte order mark skipped (as some editors write; CSVs accept it too), the
 * blanks around it trimmed. In place. */
static char *line_content(char *line, int lineno) {
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *s = line;
    if (lineno == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        s += 3;
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

int engine_hw_load(engine_hw *hw, const char *path, char *err, size_t errlen) {
    /* A directory would read as an empty file, a FIFO would hang. */
    char why[200];
    FILE *f = engine_fopen_input(path, why, sizeof why);
    if (!f) {
        snprintf(err, errlen, "--hw %s: cannot open: %s (give a key=value file; `npurr hw "
                 "--file` prints one)", path, why);
        return ENGINE_ERR;
    }
    /* Lines of any length: `npurr hw --file` writes each parameter's
     * source as one comment line, and some are longer than any fixed
     * buffer would be. */
    char *line = NULL;
    size_t line_cap = 0;
    int lineno = 0;
    ssize_t got;
    int rc = ENGINE_OK;
    int set_at[N_PARAMS] = {0};   /* the line that set each key: a second one is an error */
    while ((got = getline(&line, &line_cap, f)) != -1) {
        lineno++;
        if (got > 65536) {
            snprintf(err, errlen, "--hw %s:%d: a line of %zd bytes: not a key=value file", path,
                     lineno, got);
            rc = ENGINE_ERR;
            break;
        }
        const char *nul = memchr(line, 0, (size_t)got);
        if (nul) {
            snprintf(err, errlen, "--hw %s:%d: a NUL byte at column %zd: not a key=value file",
                     path, lineno, nul - line + 1);
            rc = ENGINE_ERR;
            break;
        }
        char *s = line_content(line, lineno);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "--hw %s:%d: expected key=value, got '%s'", path, lineno, s);
            rc = ENGINE_ERR;
            break;
        }
        *eq = '\0';
        char *key = s, *val = eq + 1;
        size_t kn = strlen(key);
        while (kn && (key[kn - 1] == ' ' || key[kn - 1] == '\t')) key[--kn] = '\0';
        while (*val == ' ' || *val == '\t') val++;
        const engine_hw_param *p = engine_hw_find(key);
        if (p && set_at[p - params]) {   /* which of the two did the user mean? */
            snprintf(err, errlen, "--hw %s:%d: %s is set again (first at line %d)", path, lineno,
                     p->key, set_at[p - params]);
            rc = ENGINE_ERR;
            break;
        }
        if (p) set_at[p - params] = lineno;
        if (p && p->old_key && strcmp(key, p->old_key) == 0)
            /* The old name said "gbps" (gigabits) of a figure in gigabytes:
             * read it as before, and say so once per line. */
            fprintf(stderr, "npurr: --hw %s:%d: '%s' is the old name of %s (in %s, not Gb/s); "
                    "read as %s=%s\n", path, lineno, key, p->key, p->unit, p->key, val);
        char sub[ENGINE_ERRLEN];
        if (engine_hw_set(hw, key, val, sub, sizeof sub) != ENGINE_OK) {
            snprintf(err, errlen, "--hw %s:%d: %s", path, lineno, sub);
            rc = ENGINE_ERR;
            break;
        }
    }
    free(line);
    if (rc == ENGINE_OK && ferror(f)) {
        snprintf(err, errlen, "--hw %s: read error: %s", path, strerror(errno));
        rc = ENGINE_ERR;
    }
    fclose(f);
    return rc;
}

const char *engine_hw_text(double v, char buf[32]) {
    int digits = 1;
    for (; digits < 17; digits++) {   /* 17 always reads back */
        snprintf(buf, 32, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* 800, not 8e+02: %g turns to an exponent once it has more integer
     * digits than significant ones */
    int exponent = v != 0 && isfinite(v) ? (int)floor(log10(fabs(v))) : 0;
    if (exponent >= digits && exponent < 17) digits = exponent + 1;
    snprintf(buf, 32, "%.*g", digits, v);
    return buf;
}

void engine_hw_write(const engine_hw *hw, FILE *out) {
    char text[32];
    for (size_t i = 0; i < N_PARAMS; i++)
        fprintf(out, "%s=%s\n", params[i].key,
                engine_hw_text(*field((engine_hw *)hw, &params[i]), text));
}


static uint64_t ns_to_ps(double ns) { return (uint64_t)llround(ns * 1000.0); }

void engine_rates_of(const engine_hw *hw, engine_rates *r) {
    memset(r, 0, sizeof *r);
    r->ps_per_cycle = 1000.0 / hw->aicore_clock_ghz;
    r->scalar_ps = (uint64_t)llround(hw->scalar_op_cycles * r->ps_per_cycle);
    r->gm_read_ps = ns_to_ps(hw->gm_read_ns);
    r->gm_write_ps = ns_to_ps(hw->gm_write_ns);
    r->vec_latency_ps = (uint64_t)llround(hw->vector_latency_cycles * r->ps_per_cycle);
    r->mte_latency_ps = ns_to_ps(hw->mte_latency_ns);
    r->hccs_latency_ps = ns_to_ps(hw->hccs_latency_ns);
    r->rdma_latency_ps = ns_to_ps(hw->rdma_latency_ns);
    r->rdma_post_ps = ns_to_ps(hw->rdma_post_ns);
    r->hccs_read_held_ps = ns_to_ps(hw->hccs_read_latencies * hw->hccs_latency_ns);
    r->batch_task_ps = ns_to_ps(hw->batchwrite_task_ns);
    r->nic_message_ps = ns_to_ps(hw->nic_message_ns);
    r->xcore_latency_ps = ns_to_ps(hw->crosscore_latency_ns);
    r->barrier_latency_ps = ns_to_ps(hw->barrier_latency_ns);
    r->mte_ps_per_byte = r->ps_per_cycle / hw->mte_bytes_per_cycle;
    r->mte_hccs_ps_per_byte = r->ps_per_cycle / hw->mte_hccs_bytes_per_cycle;
    r->vec_ps_per_byte = r->ps_per_cycle / hw->ub_vector_bytes_per_cycle;
    r->ps_per_mac = r->ps_per_cycle / hw->cube_macs_per_cycle;
    /* GB/s = bytes per ns = 1e-3 bytes per ps */
    r->hbm_ps_per_byte = 1000.0 / hw->hbm_gbps;
    r->hccs_link_ps_per_byte = 1000.0 / hw->hccs_link_gbps;
    r->hccs_port_ps_per_byte = 1000.0 / hw->hccs_port_gbps;
    r->hccs_transfer_ps = ns_to_ps(hw->hccs_transfer_ns);
    r->nic_ps_per_byte = 1000.0 / hw->roce_gbps;
    r->cross_plane_ps_per_byte = 1000.0 / hw->roce_cross_plane_gbps;
}
