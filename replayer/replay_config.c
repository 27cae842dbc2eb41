/*
 * replay_config.c - the recorded configuration, from the trace header.
 *
 * The recorded command line rebuilds the kernel and its options (the CLI
 * does that); this file makes sure the engine itself is the one that ran:
 * topology, chip, seed, jitter and watchdog from config.*, and every timing
 * parameter from hw.* (exactly what engine_hw_write printed at record time,
 * %.17g, so doubles round-trip; traces older than the unit-named keys carry
 * hw.roce_gbps and the like, read under their new names). A --hw file named on the recorded command
 * line may have changed or be gone; the header's values are what counts.
 */
#include "replayer/replay_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int meta_u64(rec_reader *r, const char *key, uint64_t lo, uint64_t hi, uint64_t *out,
                    char *err, size_t errlen) {
    const char *v = rec_reader_meta(r, key);
    if (!v) {
        snprintf(err, errlen, "the trace header has no %s", key);
        return -1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) {
        snprintf(err, errlen, "the trace header's %s '%s' is not an integer in %llu..%llu", key, v,
                 (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* Every hw key this engine knows, in engine_hw_write's order. */
static char *hw_keys(const engine_hw *hw, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        snprintf(err, errlen, "cannot list the hardware parameters: out of memory");
        return NULL;
    }
    engine_hw_write(hw, m);
    fclose(m);
    return text;
}

/* Keys whose absence from a header says exactly how the run behaved: set
 * after the loop (replay_config_from_meta's end), not warned about. */
static int legacy_value(const engine_config *cfg, const char *key) {
    (void)cfg;
    return !strcmp(key, "nic_message_ns") || !strcmp(key, "mte_hccs_bytes_per_cycle") ||
           !strcmp(key, "hccs_read_latencies");
}

int replay_config_from_meta(rec_reader *r, engine_config *cfg, char *note, size_t notelen,
                            char *err, size_t errlen) {
    if (note && notelen) note[0] = 0;
    uint64_t nodes, npus, seed, watchdog;
    const engine_config_limit *ln = engine_config_limit_get(ENGINE_LIMIT_NODES);
    const engine_config_limit *lp = engine_config_limit_get(ENGINE_LIMIT_NPUS_PER_NODE);
    const engine_config_limit *lj = engine_config_limit_get(ENGINE_LIMIT_JITTER);
    if (meta_u64(r, ln->key, (uint64_t)ln->lo, (uint64_t)ln->hi, &nodes, err, errlen) ||
        meta_u64(r, lp->key, (uint64_t)lp->lo, (uint64_t)lp->hi, &npus, err, errlen) ||
        meta_u64(r, "config.seed", 0, UINT64_MAX, &seed, err, errlen) ||
        meta_u64(r, "config.watchdog_ps", 0, UINT64_MAX, &watchdog, err, errlen))
        return -1;
    const char *chip = rec_reader_meta(r, "config.chip");
    engine_chip c;
    if (engine_chip_parse(chip, &c) != 0) {
        snprintf(err, errlen, "the trace header's config.chip '%s' is not %s",
                 chip ? chip : "(missing)", engine_chips_text());
        return -1;
    }
    const char *jit = rec_reader_meta(r, lj->key);
    char *end = NULL;
    double jitter = jit ? strtod(jit, &end) : -1;
    if (!jit || end == jit || *end || jitter < lj->lo || jitter > lj->hi) {
        snprintf(err, errlen, "the trace header's %s '%s' is not a number in %g..%g", lj->key,
                 jit ? jit : "(missing)", lj->lo, lj->hi);
        return -1;
    }
    cfg->nodes = (int)nodes;
    cfg->npus_per_node = (int)npus;
    cfg->chip = c;
    cfg->seed = seed;
    cfg->jitter = jitter;
    cfg->watchdog_ps = watchdog;
    /* traces from before payload references have no key; both modes give the
     * same events, so the default replays them as well */
    const char *payload = rec_reader_meta(r, "config.payload");
    if (payload && engine_payload_parse(payload, &cfg->payload)) {
        snprintf(err, errlen, "the trace header's config.payload '%s' is not ref or full", payload);
        return -1;
    }

    char *keys = hw_keys(&cfg->hw, err, errlen);
    if (!keys) return -1;
    int rc = 0;
    for (char *line = keys, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        char name[256];
        snprintf(name, sizeof name, "hw.%s", line);
        const char *v = rec_reader_meta(r, name);
        const engine_hw_param *param = engine_hw_find(line);
        if (!v && param && param->old_key) {
            /* A trace recorded before the key said its unit (hw.roce_gbps):
             * same figure, same unit, older name. */
            snprintf(name, sizeof name, "hw.%s", param->old_key);
            v = rec_reader_meta(r, name);
        }
        if (!v && legacy_value(cfg, line)) continue;   /* reproduced exactly, below */
        if (!v) {
            /* A parameter added after the recording: the recorded run used
             * no such figure, so the default is the best reconstruction;
             * the caller warns that timing may differ. */
            if (note && notelen) {
                size_t used = strlen(note);
                snprintf(note + used, notelen - used, "%shw.%s", used ? ", " : "", line);
            }
            continue;
        }
        char herr[ENGINE_ERRLEN];
        if (engine_hw_set(&cfg->hw, line, v, herr, sizeof herr) != ENGINE_OK) {
            snprintf(err, errlen, "the trace header's %s: %s", name, herr);
            rc = -1;
            break;
        }
    }
    free(keys);
    if (rc == 0 && !rec_reader_meta(r, "hw.nic_message_ns")) {
        /* Recorded before the NIC's message cost and the AICPU's posting of
         * RDMA existed, and before a core's rate over HCCS had its own key:
         * set them so the run behaves as that engine did. */
        cfg->hw.nic_message_ns = 0;
        cfg->rdma_posted_by_core = 1;
        if (!rec_reader_meta(r, "hw.mte_hccs_bytes_per_cycle"))
            cfg->hw.mte_hccs_bytes_per_cycle = cfg->hw.mte_bytes_per_cycle;
    }
    /* Recorded before an MTE read of a peer's GM held its queue for the
     * link's round trip: reads were posted as writes are. */
    if (rc == 0 && !rec_reader_meta(r, "hw.hccs_read_latencies")) cfg->hw.hccs_read_latencies = 0;
    return rc;
}
