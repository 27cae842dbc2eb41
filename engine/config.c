/*
 * config.c - the engine configuration table: the chips (name, cores) and
 * the accepted range of every numeric engine setting, in one place.
 *
 * Option parsing (cli/run_options.c), the trace header (recorder writes the
 * chip's name, replay reads it back) and engine_create all read these rows,
 * so a new chip or a wider range is one edit here. The timing parameters
 * have their own table (timing.c).
 */
#include "engine.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void engine_config_defaults(engine_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->nodes = 1;
    cfg->npus_per_node = 8;
    cfg->chip = CHIP_910B2;
    cfg->seed = 0;
    cfg->jitter = 0;
    cfg->watchdog_ps = 10ULL * 1000 * 1000 * 1000 * 1000; /* 10 s of virtual time */
    engine_hw_defaults(&cfg->hw);
}

static const engine_chip_info chips[] = {
    {CHIP_910B2, "910B2", 24, 48},
    {CHIP_910B4, "910B4", 20, 40},
};
#define N_CHIPS (sizeof chips / sizeof chips[0])

const engine_chip_info *engine_chip_get(engine_chip chip) {
    for (size_t i = 0; i < N_CHIPS; i++)
        if (chips[i].chip == chip) return &chips[i];
    return NULL;
}

const char *engine_chip_name(engine_chip chip) {
    const engine_chip_info *c = engine_chip_get(chip);
    return c ? c->name : "?";
}

int engine_chip_parse(const char *name, engine_chip *out) {
    for (size_t i = 0; name && i < N_CHIPS; i++)
        if (strcasecmp(name, chips[i].name) == 0) {
            *out = chips[i].chip;
            return 0;
        }
    return -1;
}

const char *engine_chips_text(void) {
    static char text[64];
    if (!text[0])
        for (size_t i = 0; i < N_CHIPS; i++) {
            size_t used = strlen(text);
            snprintf(text + used, sizeof text - used, "%s%s",
                     i == 0 ? "" : i == N_CHIPS - 1 ? " or " : ", ", chips[i].name);
        }
    return text;
}

static const engine_config_limit limits[ENGINE_LIMIT_COUNT] = {
    [ENGINE_LIMIT_NODES] = {"--nodes", "config.nodes", 1, 1024, ""},
    [ENGINE_LIMIT_NPUS_PER_NODE] = {"--npus-per-node", "config.npus_per_node", 1, 8,
                                    " (HCCS full mesh of 8)"},
    [ENGINE_LIMIT_JITTER] = {"--jitter", "config.jitter", 0, 0.5, ""},
};

const engine_config_limit *engine_config_limit_get(engine_config_limit_id id) {
    return (unsigned)id < ENGINE_LIMIT_COUNT ? &limits[id] : NULL;
}

static int out_of(engine_config_limit_id id, double v) {
    return v < limits[id].lo || v > limits[id].hi;
}

int engine_config_check(const engine_config *cfg, char *err, size_t errlen) {
    static const engine_config_limit_id ints[] = {ENGINE_LIMIT_NODES, ENGINE_LIMIT_NPUS_PER_NODE};
    int vals[] = {cfg->nodes, cfg->npus_per_node};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        const engine_config_limit *l = &limits[ints[i]];
        if (out_of(ints[i], vals[i])) {
            snprintf(err, errlen, "%s %d: must be between %g and %g%s", l->option, vals[i], l->lo,
                     l->hi, l->note);
            return ENGINE_ERR;
        }
    }
    if (out_of(ENGINE_LIMIT_JITTER, cfg->jitter)) {
        snprintf(err, errlen, "--jitter %g: must be between 0 and %g", cfg->jitter,
                 limits[ENGINE_LIMIT_JITTER].hi);
        return ENGINE_ERR;
    }
    if (!engine_chip_get(cfg->chip)) {
        snprintf(err, errlen, "chip %d: not %s", (int)cfg->chip, engine_chips_text());
        return ENGINE_ERR;
    }
    return ENGINE_OK;
}
