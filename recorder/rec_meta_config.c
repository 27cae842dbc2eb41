/*
 * rec_meta_config.c - a run's engine configuration as typed meta keys: the
 * one writer (rec_meta_put_config, for the trace header and so the index's
 * meta table) and the one reader (rec_meta_get_config) that record, replay,
 * info, critical and calibrate all use.
 *
 * Each key has a type, and a value is read back exactly as it was written:
 * integers in decimal, the jitter with as few digits as read back bit for
 * bit (0.1, not 0.1000...01), timing values with 17 significant digits, the
 * chip and the payload mode by name. The timing values are written from the timing
 * table itself (engine_hw_param_at, engine_hw_get), one hw.<key> each, and
 * read back through engine_hw_set, which checks each against its range; no
 * text is printed and parsed back. Readers take the keys from wherever the
 * run keeps them (rec_meta_get_fn): the trace header of a reader, or the
 * meta table of an index.
 *
 * Older runs: keys a timing parameter had before it said its unit
 * (hw.roce_gbps) are read under the new one; a parameter added after the
 * recording is left at its default and named in how->missing_hw, except
 * those whose absence says exactly how the old engine behaved, which are
 * set to that behaviour; the PCT schedule of a run from before the typed
 * keys is read from its one text key, config.pct.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_internal.h"

void rec_fmt_double(char *out, size_t outlen, double v) {
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(out, outlen, "%.*g", prec, v);
        if (strtod(out, NULL) == v) return;
    }
}

int rec_meta_put_config(rec_kv *kv, const engine_config *cfg) {
    char num[64];
    int rc = 0;
    rc |= rec_kv_setf(kv, "config.nodes", "%d", cfg->nodes);
    rc |= rec_kv_setf(kv, "config.npus_per_node", "%d", cfg->npus_per_node);
    rc |= rec_kv_set(kv, "config.chip", engine_chip_name(cfg->chip));
    rc |= rec_kv_setf(kv, "config.seed", "%llu", (unsigned long long)cfg->seed);
    rec_fmt_double(num, sizeof num, cfg->jitter);
    rc |= rec_kv_set(kv, "config.jitter", num);
    rc |= rec_kv_setf(kv, "config.watchdog_ps", "%llu", (unsigned long long)cfg->watchdog_ps);
    rc |= rec_kv_set(kv, "config.payload", engine_payload_name(cfg->payload));
    if (cfg->pct_points) {   /* only then, so other runs' headers stay as they were */
        rc |= rec_kv_setf(kv, "config.pct_points", "%u", cfg->pct_points);
        rc |= rec_kv_setf(kv, "config.pct_span", "%llu", (unsigned long long)cfg->pct_span);
        rc |= rec_kv_setf(kv, "config.pct_delay_ps", "%llu",
                          (unsigned long long)cfg->pct_delay_ps);
    }
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        char key[128];
        snprintf(key, sizeof key, "hw.%s", p->key);
        /* %.17g, as runs have always carried them: a header rebuilt for a
         * replay matches an older run's text for text */
        rc |= rec_kv_setf(kv, key, "%.17g", engine_hw_get(&cfg->hw, p));
    }
    /* Who posts an AI core's RDMA work requests: said only by runs where
     * the core does (as every new run does), so that a replay of an older
     * run, whose AICPU posted them, rebuilds its header text for text. */
    if (!cfg->rdma_posted_by_aicpu && !cfg->rdma_posted_by_core)
        rc |= rec_kv_set(kv, "config.rdma_post", "core");
    return rc ? -1 : 0;
}

/* The unsigned integer of key in lo..hi into *out: 1 read, 0 absent, -1
 * malformed (err names key and value). */
static int get_u64(rec_meta_get_fn *get, void *ctx, const char *key, uint64_t lo, uint64_t hi,
                   uint64_t *out, char *err, size_t errlen) {
    const char *v = get(ctx, key);
    if (!v) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) {
        snprintf(err, errlen, "the run's %s '%s' is not an integer in %llu..%llu", key, v,
                 (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = x;
    return 1;
}

/* A key every run has: absent is an error. */
static int need_u64(rec_meta_get_fn *get, void *ctx, const char *key, uint64_t lo, uint64_t hi,
                    uint64_t *out, char *err, size_t errlen) {
    int rc = get_u64(get, ctx, key, lo, hi, out, err, errlen);
    if (rc == 0) snprintf(err, errlen, "the run has no %s", key);
    return rc == 1 ? 0 : -1;
}

static int read_topology(rec_meta_get_fn *get, void *ctx, engine_config *cfg, char *err,
                         size_t errlen) {
    const engine_config_limit *ln = engine_config_limit_get(ENGINE_LIMIT_NODES);
    const engine_config_limit *lp = engine_config_limit_get(ENGINE_LIMIT_NPUS_PER_NODE);
    const engine_config_limit *lj = engine_config_limit_get(ENGINE_LIMIT_JITTER);
    uint64_t nodes, npus, seed, watchdog;
    if (need_u64(get, ctx, ln->key, (uint64_t)ln->lo, (uint64_t)ln->hi, &nodes, err, errlen) ||
        need_u64(get, ctx, lp->key, (uint64_t)lp->lo, (uint64_t)lp->hi, &npus, err, errlen) ||
        need_u64(get, ctx, "config.seed", 0, UINT64_MAX, &seed, err, errlen) ||
        need_u64(get, ctx, "config.watchdog_ps", 0, UINT64_MAX, &watchdog, err, errlen))
        return -1;
    const char *chip = get(ctx, "config.chip");
    if (engine_chip_parse(chip, &cfg->chip) != 0) {
        snprintf(err, errlen, "the run's config.chip '%s' is not %s", chip ? chip : "(missing)",
                 engine_chips_text());
        return -1;
    }
    const char *jit = get(ctx, lj->key);
    char *end = NULL;
    double jitter = jit ? strtod(jit, &end) : -1;
    if (!jit || end == jit || *end || jitter < lj->lo || jitter > lj->hi) {
        snprintf(err, errlen, "the run's %s '%s' is not a number in %g..%g", lj->key,
                 jit ? jit : "(missing)", lj->lo, lj->hi);
        return -1;
    }
    cfg->nodes = (int)nodes;
    cfg->npus_per_node = (int)npus;
    cfg->seed = seed;
    cfg->jitter = jitter;
    cfg->watchdog_ps = watchdog;
    /* runs from before payload references have no key: both modes give the
     * same events, so the default replays them as well */
    const char *payload = get(ctx, "config.payload");
    if (payload && engine_payload_parse(payload, &cfg->payload)) {
        snprintf(err, errlen, "the run's config.payload '%s' is not ref or full", payload);
        return -1;
    }
    return 0;
}

static int read_pct(rec_meta_get_fn *get, void *ctx, engine_config *cfg, char *err,
                    size_t errlen) {
    uint64_t points = 0, span = 0, delay = 0;
    int have = get_u64(get, ctx, "config.pct_points", 1, UINT32_MAX, &points, err, errlen);
    if (have < 0) return -1;
    if (have) {
        if (need_u64(get, ctx, "config.pct_span", 1, UINT64_MAX, &span, err, errlen) ||
            need_u64(get, ctx, "config.pct_delay_ps", 1, UINT64_MAX, &delay, err, errlen))
            return -1;
    } else {
        const char *text = get(ctx, "config.pct");   /* before the typed keys */
        unsigned p = 0;
        unsigned long long s = 0, d = 0;
        if (text && (sscanf(text, "%u points over %llu steps, %llu ps each", &p, &s, &d) != 3 ||
                     !p || !s || !d)) {
            snprintf(err, errlen, "the run's config.pct '%s' is not \"N points over S steps, "
                     "D ps each\"", text);
            return -1;
        }
        points = p;
        span = s;
        delay = d;
    }
    cfg->pct_points = (uint32_t)points;
    cfg->pct_span = span;
    cfg->pct_delay_ps = delay;
    return 0;
}

/* Timing parameters whose absence from a run says exactly how the engine
 * that recorded it behaved: set after the loop, not reported missing. */
static int legacy_value(const char *key) {
    return !strcmp(key, "nic_message_ns") || !strcmp(key, "mte_hccs_bytes_per_cycle") ||
           !strcmp(key, "hccs_read_latencies") || !strcmp(key, "hccs_port_gbytes_per_s") ||
           !strcmp(key, "roce_cross_plane_gbytes_per_s") || !strcmp(key, "hccs_transfer_ns");
}

static void note_missing(rec_meta_config_read *how, const char *key) {
    size_t used = strlen(how->missing_hw);
    snprintf(how->missing_hw + used, sizeof how->missing_hw - used, "%shw.%s", used ? ", " : "",
             key);
}

static int read_timing(rec_meta_get_fn *get, void *ctx, engine_config *cfg,
                       rec_meta_config_read *how, char *err, size_t errlen) {
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        char key[128];
        snprintf(key, sizeof key, "hw.%s", p->key);
        const char *v = get(ctx, key);
        if (!v && p->old_key) {
            /* recorded before the key said its unit: same figure, older name */
            snprintf(key, sizeof key, "hw.%s", p->old_key);
            v = get(ctx, key);
        }
        if (!v) {
            if (!legacy_value(p->key)) note_missing(how, p->key);
            continue;
        }
        if (i < sizeof how->hw_recorded) how->hw_recorded[i] = 1;
        char herr[ENGINE_ERRLEN];
        if (engine_hw_set(&cfg->hw, p->key, v, herr, sizeof herr) != ENGINE_OK) {
            snprintf(err, errlen, "the run's %s: %s", key, herr);
            return -1;
        }
    }
    if (!get(ctx, "hw.nic_message_ns")) {
        /* Recorded before the NIC's message cost and the AICPU's posting of
         * RDMA existed, and before a core's rate over HCCS had its own key:
         * the run behaves as that engine did. */
        cfg->hw.nic_message_ns = 0;
        cfg->rdma_posted_by_core = 1;
        if (!get(ctx, "hw.mte_hccs_bytes_per_cycle"))
            cfg->hw.mte_hccs_bytes_per_cycle = cfg->hw.mte_bytes_per_cycle;
    }
    /* Recorded with the NIC's message cost but before a core posted its own
     * RDMA work requests (config.rdma_post): the AICPU posted them. */
    else if (!get(ctx, "config.rdma_post"))
        cfg->rdma_posted_by_aicpu = 1;
    /* Recorded before an MTE read of a peer's GM held its queue for the
     * link's round trip: reads were posted as writes are. */
    if (!get(ctx, "hw.hccs_read_latencies")) cfg->hw.hccs_read_latencies = 0;
    /* Recorded before an NPU's HCCS links shared a port, and before RDMA off
     * its plane shared the spine: neither held anything. */
    if (!get(ctx, "hw.hccs_port_gbytes_per_s")) cfg->hw.hccs_port_gbps = 1e9;
    if (!get(ctx, "hw.roce_cross_plane_gbytes_per_s")) cfg->hw.roce_cross_plane_gbps = 1e9;
    if (!get(ctx, "hw.hccs_transfer_ns")) cfg->hw.hccs_transfer_ns = 0;
    return 0;
}

int rec_meta_get_config(rec_meta_get_fn *get, void *ctx, engine_config *cfg,
                        rec_meta_config_read *how, char *err, size_t errlen) {
    rec_meta_config_read scratch;
    if (!how) how = &scratch;
    memset(how, 0, sizeof *how);
    engine_config_defaults(cfg);
    if (read_topology(get, ctx, cfg, err, errlen) || read_pct(get, ctx, cfg, err, errlen) ||
        read_timing(get, ctx, cfg, how, err, errlen))
        return -1;
    return 0;
}

const char *rec_reader_meta_get(void *reader, const char *key) {
    return rec_reader_meta((rec_reader *)reader, key);
}
