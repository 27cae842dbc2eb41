/*
 * sweep.h - what `npurr sweep` (cmd_sweep.c) hands its writers
 * (sweep_out.c): the grid and each point's result.
 */
#ifndef NPURR_CLI_SWEEP_H
#define NPURR_CLI_SWEEP_H

#include <stdio.h>

#include "run_pool.h"

#define SWEEP_MAX_KEYS 8

typedef struct sweep_key {
    char name[64];        /* as given: "--tokens", "hw.roce_gbytes_per_s" */
    int hw;               /* 1: a timing parameter (name after "hw.") */
    char **values;        /* as given */
    size_t nvalues;
} sweep_key;

typedef struct sweep {
    sweep_key keys[SWEEP_MAX_KEYS];
    size_t nkeys;
    size_t npoints;        /* the product of the keys' value counts */
    point_result *res;     /* one per point; done 0: not run (interrupted) */
} sweep;

/* Point p's value index of key k: the first key varies slowest. */
size_t sweep_value_index(const sweep *s, size_t p, size_t k);

/* DIR/sweep.csv: one row per point that ran. */
int sweep_write_csv(const sweep *s, FILE *out);
/* DIR/sweep.partial.csv while the sweep runs: the header, then each point's
 * row as it finishes (flushed, so a killed sweep keeps every finished
 * point), without the per-role columns, which need every point. 0 or -1. */
int sweep_write_partial_head(const sweep *s, FILE *out);
int sweep_write_partial_row(const sweep *s, size_t p, FILE *out);
/* DIR/sweep.html: one SVG plot of end time against each key. */
int sweep_write_html(const sweep *s, const char *title, FILE *out);

#endif
