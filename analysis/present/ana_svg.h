/*
 * ana_svg.h - the drawing only `npurr report` needs, as inline SVG text in
 * an HTML page: a virtual-time axis, colour scales, the causes' colours;
 * private to analysis/. The pieces every plot draws with (escaped text,
 * boxes with hover titles, lines: svg_* in analysis.h) serve the sweep's
 * plots too. Plots are drawn by the report's sections (ana_report.c,
 * ana_waitfor.c) from these pieces.
 */
#ifndef NPURR_ANA_SVG_H
#define NPURR_ANA_SVG_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/present/present.h"

/* A virtual-time axis at y from x0 to x0 + w for [0, end_ps]: about six
 * ticks at round values, labelled in human units. */
void svg_time_axis(FILE *out, double x0, double w, double y, uint64_t end_ps);
/* Colour for v in [0, 1] on a white -> orange -> dark red scale, "#rrggbb". */
void svg_heat(double v, char buf[8]);
/* The legend of svg_heat: a bar of its colours from 0 to 1 with what the
 * two ends mean (lo, hi: "0%", "100% of the line rate"), as its own small
 * <svg class="scale"> after a heat map. */
void svg_heat_scale(FILE *out, const char *what, const char *lo, const char *hi);
/* The colour of a wait cause (and "busy"), shared by every plot. */
const char *svg_cause_color(const char *cause);

#endif
