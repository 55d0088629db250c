/* SPDX-License-Identifier: MIT */
/* What fmx_tune's parts share: the options, the tunables as fmx reads
 * them, fmx_perf's JSON lines, and each measurement it writes. */
#ifndef FMX_TOOLS_TUNE_H
#define FMX_TOOLS_TUNE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_SIZES 32

#define die(...) (fprintf(stderr, "fmx_tune: " __VA_ARGS__), fputc('\n', stderr), exit(1))

struct tune_opt {
  const char *output, *perf, *engines;
  int reps, cores[2];
  int dry_run, quick, no_threshold, no_nt;
};
extern struct tune_opt opt;

/* What fmx reads for a tunable (FMX_INFO_CONFIG_ITEM), "" if none. */
const char *config_value(const char *name);
/* The number after "key": in one of fmx_perf's JSON lines: 1, or 0 if it
 * has none. */
int json_num(const char *line, const char *key, double *v);

/* nt.c: FMX_COPY_NT_THRESHOLD measured on the two cores (0: keep it). */
uint64_t measure_nt(const char *perf);

#endif
