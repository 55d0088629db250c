/* SPDX-License-Identifier: MIT */
/*
 * fmx_tune - measure every usable bulk engine on this host and write what
 * the selector needs into the tuning file: per engine, a cost
 * startup + bytes / bandwidth, for the topology level of the two cores
 * measured (FMX_COST_<ENGINE>=LEVEL:STARTUP_US:MBPS, other levels kept).
 *
 * It runs fmx_perf (the same directory, or --perf) with each engine forced,
 * pingpong over sizes from the rendezvous threshold to 64 MiB, the engines
 * interleaved, REPS times; keeps each size's best time (the least disturbed
 * on a shared machine) and fits the line by least squares on relative error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmx.h"
#include "tune/tune.h"

/* An engine's cost, as the tuning file writes it: up to two lines
 * t = startup_us + len / mbps, the second from `from` bytes on. */
struct cost_line {
  double startup_us, mbps;
  uint64_t from;
};
struct cost_model {
  int n;
  struct cost_line seg[2];
};

struct tune_opt opt = {.reps = 3, .cores = {-1, -1}};

struct engine_run {
  char name[32];
  char cost_var[48]; /* FMX_COST_<NAME> */
  double best[MAX_SIZES]; /* µs, 0 = no number yet */
  struct cost_model model;
  char spec[128]; /* the model as a cost spec for the level measured */
  int picked; /* sizes at which the model picks this engine */
};

const char *config_value(const char *name) {
  static char value[sizeof(((fmx_config_item_t *)0)->value)];
  uint32_t n = 0;
  value[0] = '\0';
  fmx_get_info(NULL, FMX_INFO_CONFIG_COUNT, NULL, 0, &n, sizeof n);
  for (uint32_t i = 0; i < n; i++) {
    fmx_config_item_t it;
    if (fmx_get_info(NULL, FMX_INFO_CONFIG_ITEM, &i, sizeof i, &it, sizeof it) == FMX_SUCCESS &&
        strcmp(it.name, name) == 0) {
      snprintf(value, sizeof value, "%s", it.value);
      break;
    }
  }
  return value;
}

int json_num(const char *line, const char *key, double *v) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(line, pat);
  return p && sscanf(p + strlen(pat), "%lf", v) == 1;
}

/* The time fmx's cost model predicts from spec at level for len bytes, in
 * us (FMX_INFO_COST_TIME); negative if the spec does not parse. */
static double cost_time(const char *spec, const char *level, uint64_t len) {
  fmx_cost_query_t q;
  memset(&q, 0, sizeof q);
  snprintf(q.spec, sizeof q.spec, "%s", spec);
  snprintf(q.level, sizeof q.level, "%s", level);
  q.len = len;
  double t = -1;
  if (fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q, &t, sizeof t) != FMX_SUCCESS) return -1;
  return t;
}

/* The spec entries of one model at one level: "L3:1.20:9000;L3@4194304:...". */
static void model_spec(const struct cost_model *m, const char *level, char *out, size_t len) {
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < m->n && n < len; k++) {
    const struct cost_line *c = &m->seg[k];
    if (c->from)
      n += (size_t)snprintf(out + n, len - n, "%s%s@%" PRIu64 ":%.2f:%.0f", k ? ";" : "", level, c->from,
                            c->startup_us, c->mbps);
    else
      n += (size_t)snprintf(out + n, len - n, "%s%s:%.2f:%.0f", k ? ";" : "", level, c->startup_us, c->mbps);
  }
}

#define usage_error(...) \
  (fprintf(stderr, "fmx_tune: " __VA_ARGS__), fprintf(stderr, "\nTry 'fmx_tune --help'.\n"), exit(2))

static void usage(void) {
  printf("Usage: fmx_tune [options]\n"
         "Measure where rendezvous pays and each usable bulk engine; write\n"
         "FMX_RNDV_THRESHOLD and FMX_COST_<ENGINE> into the tuning file.\n\n"
         "  --output FILE   tuning file to update (default: FMX_TUNING_FILE, %s)\n"
         "  --dry-run       print the new file, write nothing\n"
         "  --cores A,B     the two cores to measure on (default: the first two allowed);\n"
         "                  their topology level (L2, L3, NUMA, ...) is the one written\n"
         "  --reps N        interleaved repetitions, best kept (default 3)\n"
         "  --engines LIST  comma list (default: every usable engine)\n"
         "  --quick         sizes up to 16 MiB, few iterations (a smoke run)\n"
         "  --perf PATH     the fmx_perf to run (default: next to fmx_tune)\n"
         "  --no-threshold  keep FMX_RNDV_THRESHOLD; by default it is measured (eager\n"
         "                  against rendezvous, 4K..1M) and written too\n"
         "  --no-nt         keep FMX_COPY_NT_THRESHOLD; by default it is measured (regular\n"
         "                  against non-temporal stores, fmx_perf copylimit, 1 and 2 threads)\n"
         "                  and written too\n"
         "  --help          this text\n\n"
         "Other levels already in the file stay, as do all other lines. fmx reads the\n"
         "file at fmx_init; FMX_COST_* in the environment override it, FMX_BULK forces.\n"
         "Exit status: 0 ok, 1 error, 2 usage error.\n",
         config_value("FMX_TUNING_FILE"));
}

static int parse_int(const char *s, int lo, int hi, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) usage_error("%s: bad value '%s' (want %d..%d)", what, s, lo, hi);
  return (int)v;
}

static void parse_args(int argc, char **argv) {
  enum { O_OUT = 256, O_DRY, O_CORES, O_REPS, O_ENGINES, O_QUICK, O_PERF, O_NOTHR, O_NONT, O_HELP };
  static const struct option lopts[] = {{"output", required_argument, 0, O_OUT}, {"dry-run", no_argument, 0, O_DRY},
                                        {"cores", required_argument, 0, O_CORES}, {"reps", required_argument, 0, O_REPS},
                                        {"engines", required_argument, 0, O_ENGINES}, {"quick", no_argument, 0, O_QUICK},
                                        {"perf", required_argument, 0, O_PERF},   {"help", no_argument, 0, O_HELP},
                                        {"no-threshold", no_argument, 0, O_NOTHR},
                                        {"no-nt", no_argument, 0, O_NONT},
                                        {0, 0, 0, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
    switch (c) {
    case O_OUT: opt.output = optarg; break;
    case O_DRY: opt.dry_run = 1; break;
    case O_CORES: {
      char *comma = strchr(optarg, ',');
      if (!comma) usage_error("--cores: want A,B, got '%s'", optarg);
      *comma = '\0';
      opt.cores[0] = parse_int(optarg, 0, CPU_SETSIZE - 1, "--cores");
      opt.cores[1] = parse_int(comma + 1, 0, CPU_SETSIZE - 1, "--cores");
      break;
    }
    case O_REPS: opt.reps = parse_int(optarg, 1, 100, "--reps"); break;
    case O_ENGINES: opt.engines = optarg; break;
    case O_QUICK: opt.quick = 1; break;
    case O_PERF: opt.perf = optarg; break;
    case O_NOTHR: opt.no_threshold = 1; break;
    case O_NONT: opt.no_nt = 1; break;
    case 'h':
    case O_HELP: usage(); exit(0);
    case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
    default: usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) usage_error("unexpected argument '%s'", argv[optind]);
}

static void default_cores(void) {
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) != 0) die("sched_getaffinity: %s", strerror(errno));
  for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
    if (CPU_ISSET(c, &set)) opt.cores[n++] = c;
  if (n < 2) die("needs two allowed cores (has %d): the cost of a transfer between two cores is what it measures", n);
}

static const char *perf_path(char *buf, size_t len) {
  if (opt.perf) return opt.perf;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0) die("cannot find my own path: %s (use --perf)", strerror(errno));
  self[n] = '\0';
  snprintf(buf, len, "%s/fmx_perf", dirname(self));
  return buf;
}

/* One fmx_perf run over every size, with `engine` forced (NULL: auto) and
 * FMX_RNDV_THRESHOLD set to `thr`; fold its times into best[]. */
static void run_perf(const char *perf, const char *engine, uint64_t thr, double *best, const uint64_t *sizes,
                     int nsizes) {
  char cmd[4096], val[32];
  int n = snprintf(cmd, sizeof cmd, "'%s' pingpong --json --quiet --cores %d,%d%s%s%s --sizes ", perf, opt.cores[0],
                   opt.cores[1], opt.quick ? " --iters 20" : "", engine ? " --engine " : "", engine ? engine : "");
  for (int i = 0; i < nsizes; i++) n += snprintf(cmd + n, sizeof cmd - (size_t)n, "%s%" PRIu64, i ? "," : "", sizes[i]);
  snprintf(val, sizeof val, "%" PRIu64, thr);
  setenv("FMX_RNDV_THRESHOLD", val, 1);
  FILE *f = popen(cmd, "r");
  if (!f) die("cannot run %s: %s", perf, strerror(errno));
  char line[1024];
  int got = 0;
  while (fgets(line, sizeof line, f)) {
    double sz, lat;
    if (!json_num(line, "size", &sz) || !json_num(line, "latency_us", &lat)) continue;
    uint64_t size = (uint64_t)sz;
    for (int i = 0; i < nsizes; i++)
      if (sizes[i] == size && lat > 0 && (best[i] == 0 || lat < best[i])) best[i] = lat;
    got++;
  }
  int st = pclose(f);
  if (st != 0 || got != nsizes)
    die("'%s' (FMX_RNDV_THRESHOLD=%s) failed (status %d, %d of %d sizes): see its message above", cmd, val,
        WIFEXITED(st) ? WEXITSTATUS(st) : -1, got, nsizes);
}

/* The eager/rendezvous crossover: the smallest size from which rendezvous
 * with the best engine at each size is faster at every larger size
 * measured; twice the largest size when eager always wins. Prints the table. */
static uint64_t measure_threshold(const char *perf, const struct engine_run *runs, int nruns) {
  uint64_t sizes[MAX_SIZES], max = opt.quick ? 128u << 10 : 1024u << 10;
  double eager[MAX_SIZES] = {0}, rndv[8][MAX_SIZES] = {{0}}, best[MAX_SIZES];
  int n = 0, who[MAX_SIZES];
  for (uint64_t sz = 4096; sz <= max; sz *= 2) sizes[n++] = sz;
  for (int rep = 0; rep < opt.reps; rep++) {
    fprintf(stderr, "[fmx_tune] rep %d/%d: eager against rendezvous (each engine), %d sizes\n", rep + 1, opt.reps, n);
    run_perf(perf, runs[0].name, 2 * max, eager, sizes, n); /* all eager */
    for (int k = 0; k < nruns && k < 8; k++) run_perf(perf, runs[k].name, 4096, rndv[k], sizes, n);
  }
  for (int i = 0; i < n; i++) {
    who[i] = 0;
    for (int k = 1; k < nruns && k < 8; k++)
      if (rndv[k][i] > 0 && (rndv[who[i]][i] <= 0 || rndv[k][i] < rndv[who[i]][i])) who[i] = k;
    best[i] = rndv[who[i]][i];
  }
  uint64_t thr = 2 * max;
  for (int i = n - 1; i >= 0 && best[i] > 0 && best[i] < eager[i]; i--) thr = sizes[i];
  printf("# eager against rendezvous (the best engine per size), best of %d, latency in us\n%10s %10s %10s  %s\n",
         opt.reps, "size", "eager", "rndv", "engine");
  for (int i = 0; i < n; i++)
    printf("%10" PRIu64 " %10.2f %10.2f  %s\n", sizes[i], eager[i], best[i], runs[who[i]].name);
  printf("# FMX_RNDV_THRESHOLD=%" PRIu64 "%s\n", thr, thr > max ? " (eager won every size measured)" : "");
  return thr;
}

/* Least squares of t = a + b * len over sizes [i0, i1) on relative error
 * (weights 1/t^2: the small sizes, where startup matters, count as much as
 * the large ones). Returns the weighted squared error, or -1 if the times
 * do not grow with the size. */
static double fit_line(const uint64_t *sizes, const double *t, int i0, int i1, struct cost_line *out) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = i0; i < i1; i++) {
    double w = 1 / (t[i] * t[i]), x = (double)sizes[i];
    sw += w, sx += w * x, sy += w * t[i], sxx += w * x * x, sxy += w * x * t[i];
  }
  double det = sw * sxx - sx * sx;
  if (det <= 0) return -1;
  double a = (sy * sxx - sx * sxy) / det, b = (sw * sxy - sx * sy) / det;
  if (a < 0) { /* a negative startup is noise: the slope through zero */
    a = 0;
    b = sxy / sxx;
  }
  if (b <= 0) return -1;
  double err = 0;
  for (int i = i0; i < i1; i++) {
    double r = (a + b * (double)sizes[i] - t[i]) / t[i];
    err += r * r;
  }
  *out = (struct cost_line){a, 1 / b, sizes[i0]};
  return err;
}

/* One line, or two where the engine changes regime (falls out of a cache):
 * the split with the least error, each side at least 3 sizes, kept only if
 * it halves the error of one line. */
static int fit(const uint64_t *sizes, const double *t, int n, struct cost_model *m) {
  struct cost_line one, lo, hi;
  double e1 = fit_line(sizes, t, 0, n, &one);
  if (e1 < 0) return -1;
  m->n = 1;
  m->seg[0] = one;
  m->seg[0].from = 0;
  double best = e1 / 2;
  for (int k = 3; k + 3 <= n; k++) {
    double el = fit_line(sizes, t, 0, k, &lo), eh = fit_line(sizes, t, k, n, &hi);
    if (el < 0 || eh < 0 || el + eh >= best) continue;
    best = el + eh;
    m->n = 2;
    m->seg[0] = lo;
    m->seg[0].from = 0;
    m->seg[1] = hi;
  }
  return 0;
}

/* The spec with this level's entries replaced by `mine` (or added; none
 * if empty), entries of other levels kept, malformed ones dropped. */
static void merge_spec(const char *old, const char *level, const char *mine, char *out, size_t len) {
  char buf[256] = "";
  size_t n = 0;
  if (old && strlen(old) < sizeof buf) {
    char copy[256], *save = NULL;
    strcpy(copy, old);
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
      while (*tok == ' ') tok++;
      size_t ln = strlen(level);
      if (strncmp(tok, level, ln) == 0 && (tok[ln] == ':' || tok[ln] == '@')) continue;
      /* its own level, as fmx would read it: malformed, dropped */
      char own[16];
      if (sscanf(tok, "%15[A-Z0-9]", own) != 1 || cost_time(tok, own, 0) < 0) continue;
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s;", tok);
    }
  }
  if (mine[0] && n < sizeof buf) n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", mine);
  if (n && n < sizeof buf && buf[n - 1] == ';') buf[n - 1] = '\0';
  snprintf(out, len, "%s", buf);
}

/* Rewrite the tuning file: our FMX_COST_* lines replaced, the rest kept. */
static void write_file(const char *path, struct engine_run *runs, int nruns, const char *level, uint64_t thr,
                       uint64_t nt) {
  char *old_text = NULL;
  size_t old_len = 0;
  FILE *in = fopen(path, "r");
  FILE *mem = open_memstream(&old_text, &old_len);
  if (!mem) die("out of memory");
  char line[1024];
  char specs[8][300], old[8][300];
  memset(old, 0, sizeof old);
  if (in) {
    while (fgets(line, sizeof line, in)) {
      int ours = 0;
      for (int k = 0; k < nruns; k++) {
        size_t ln = strlen(runs[k].cost_var);
        if (strncmp(line, runs[k].cost_var, ln) == 0 && line[ln] == '=') {
          /* This file's measurement of other levels is kept: merged below. */
          snprintf(old[k], sizeof old[k], "%s", line + ln + 1);
          old[k][strcspn(old[k], "\r\n")] = '\0';
          ours = 1;
        }
      }
      if (strncmp(line, "# fmx_tune", 10) == 0) ours = 1; /* our comment: rewritten below */
      if (thr && strncmp(line, "FMX_RNDV_THRESHOLD=", 19) == 0) ours = 1;
      if (nt && strncmp(line, "FMX_COPY_NT_THRESHOLD=", 22) == 0) ours = 1;
      if (!ours) fputs(line, mem);
    }
    fclose(in);
  }
  /* An engine the model never picks here is not written for this level:
   * a measured cost is what makes connections carry what an engine needs
   * (the vmsplice pipes), and it would only be ignored. */
  for (int k = 0; k < nruns; k++)
    merge_spec(old[k], level, runs[k].picked ? runs[k].spec : "", specs[k], sizeof specs[k]);
  fprintf(mem, "# fmx_tune, cores %d,%d (%s)\n", opt.cores[0], opt.cores[1], level);
  if (thr) fprintf(mem, "FMX_RNDV_THRESHOLD=%" PRIu64 "\n", thr);
  if (nt) fprintf(mem, "FMX_COPY_NT_THRESHOLD=%" PRIu64 "\n", nt);
  for (int k = 0; k < nruns; k++)
    if (specs[k][0]) fprintf(mem, "%s=%s\n", runs[k].cost_var, specs[k]);
  fclose(mem);
  if (opt.dry_run) {
    fputs(old_text, stdout);
    free(old_text);
    return;
  }
  char dir[PATH_MAX], tmp[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s", path);
  char *d = dirname(dir);
  if (mkdir(d, 0755) != 0 && errno != EEXIST) die("cannot create %s: %s", d, strerror(errno));
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  FILE *out = fopen(tmp, "w");
  if (!out) die("cannot write %s: %s", tmp, strerror(errno));
  int bad = fputs(old_text, out) < 0;
  bad |= fclose(out) != 0;
  if (bad || rename(tmp, path) != 0) {
    unlink(tmp);
    die("cannot write %s: %s", path, strerror(errno));
  }
  free(old_text);
  printf("wrote %s\n", path);
}

int main(int argc, char **argv) {
  fmx_return_t rc = fmx_init();
  if (rc != FMX_SUCCESS) die("fmx_init: %s", fmx_strerror(rc));
  parse_args(argc, argv);
  if (opt.cores[0] < 0) default_cores();
  char tuning_file[PATH_MAX];
  snprintf(tuning_file, sizeof tuning_file, "%s", config_value("FMX_TUNING_FILE"));
  const char *path = opt.output ? opt.output : tuning_file;
  if (!path[0]) die("no tuning file: FMX_TUNING_FILE is empty (use --output)");
  char pbuf[PATH_MAX + 16];
  const char *perf = perf_path(pbuf, sizeof pbuf);
  if (access(perf, X_OK) != 0) die("cannot run %s: %s (use --perf)", perf, strerror(errno));

  struct engine_run runs[8];
  int nruns = 0;
  uint32_t nengines = 0;
  fmx_get_info(NULL, FMX_INFO_ENGINE_COUNT, NULL, 0, &nengines, sizeof nengines);
  for (uint32_t i = 0; i < nengines && nruns < 8; i++) {
    char name[32], reason[160];
    if (fmx_get_info(NULL, FMX_INFO_ENGINE_NAME, &i, sizeof i, name, sizeof name) != FMX_SUCCESS) continue;
    if (opt.engines) {
      char list[256];
      snprintf(list, sizeof list, ",%s,", opt.engines);
      char want[72];
      snprintf(want, sizeof want, ",%s,", name);
      if (!strstr(list, want)) continue;
    }
    if (fmx_get_info(NULL, FMX_INFO_ENGINE_STATUS, name, (uint32_t)strlen(name) + 1, reason, sizeof reason) !=
            FMX_SUCCESS ||
        strncmp(reason, "available", 9) != 0) {
      fprintf(stderr, "fmx_tune: engine %s not usable here (%s): not measured\n", name, reason);
      continue;
    }
    struct engine_run *r = &runs[nruns++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    int n = snprintf(r->cost_var, sizeof r->cost_var, "FMX_COST_");
    for (const char *c = name; *c && n + 1 < (int)sizeof r->cost_var; c++)
      r->cost_var[n++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    r->cost_var[n] = '\0';
  }
  if (nruns == 0) die("no usable engine to measure%s", opt.engines ? " in --engines" : "");

  /* Where rendezvous starts to pay (unless --no-threshold), then the
   * engines from there: the threshold, the powers of two above it, to 64 MiB. */
  uint64_t thr = opt.no_threshold ? 0 : measure_threshold(perf, runs, nruns);
  uint64_t from = thr;
  if (!from && fmx_get_info(NULL, FMX_INFO_RNDV_THRESHOLD, NULL, 0, &from, sizeof from) != FMX_SUCCESS)
    die("cannot read the rendezvous threshold");
  uint64_t sizes[MAX_SIZES], max = opt.quick ? 16u << 20 : 64u << 20;
  int nsizes = 0;
  sizes[nsizes++] = from;
  for (uint64_t s = 4096; s <= max && nsizes < MAX_SIZES; s *= 2)
    if (s > from) sizes[nsizes++] = s;
  if (nsizes < 2) die("rendezvous threshold %" PRIu64 " leaves fewer than two sizes to measure", from);
  char level[16];
  int32_t cores[2] = {opt.cores[0], opt.cores[1]};
  if (fmx_get_info(NULL, FMX_INFO_CORES_SHARE, cores, sizeof cores, level, sizeof level) != FMX_SUCCESS)
    die("cannot tell what cores %d,%d share", opt.cores[0], opt.cores[1]);

  for (int rep = 0; rep < opt.reps; rep++)
    for (int k = 0; k < nruns; k++) {
      fprintf(stderr, "[fmx_tune] rep %d/%d: %s, %d sizes on cores %d,%d\n", rep + 1, opt.reps, runs[k].name, nsizes,
              opt.cores[0], opt.cores[1]);
      run_perf(perf, runs[k].name, from, runs[k].best, sizes, nsizes);
    }
  for (int k = 0; k < nruns; k++) {
    if (fit(sizes, runs[k].best, nsizes, &runs[k].model) != 0)
      die("engine %s: the times do not grow with the size; machine too noisy? run again", runs[k].name);
    model_spec(&runs[k].model, level, runs[k].spec, sizeof runs[k].spec);
  }

  /* What was measured, what fmx's model says, and what auto would pick
   * (the cheapest by the model; ties to the first engine, as fmx does). */
  printf("# cores %d,%d share: %s; best of %d; latency in us (model in brackets)\n", opt.cores[0], opt.cores[1],
         level, opt.reps);
  printf("%10s", "size");
  for (int k = 0; k < nruns; k++) printf(" %20s", runs[k].name);
  printf("  %-8s %s\n", "auto", "loss vs best");
  double worst = 0;
  for (int i = 0; i < nsizes; i++) {
    int bestk = 0, pick = -1;
    double pick_t = 0;
    printf("%10" PRIu64, sizes[i]);
    for (int k = 0; k < nruns; k++) {
      double t = cost_time(runs[k].spec, level, sizes[i]);
      if (runs[k].best[i] < runs[bestk].best[i]) bestk = k;
      if (t >= 0 && (pick < 0 || t < pick_t)) pick = k, pick_t = t;
      printf(" %10.1f [%7.1f]", runs[k].best[i], t);
    }
    if (pick < 0) die("fmx does not read the cost specs written: %s", runs[0].spec);
    runs[pick].picked++;
    double loss = runs[pick].best[i] / runs[bestk].best[i] - 1;
    worst = loss > worst ? loss : worst;
    printf("  %-8s %5.1f%%\n", runs[pick].name, loss * 100);
  }
  for (int k = 0; k < nruns; k++)
    for (int j = 0; j < runs[k].model.n; j++)
      printf("# %s from %" PRIu64 " B: startup %.2f us, %.0f MB/s\n", runs[k].name, runs[k].model.seg[j].from,
             runs[k].model.seg[j].startup_us, runs[k].model.seg[j].mbps);
  printf("# the model's choice is at most %.1f%% slower than the best measured engine at these sizes\n", worst * 100);
  for (int k = 0; k < nruns; k++)
    if (!runs[k].picked) printf("# %s is never the cheapest here: its cost is not written\n", runs[k].name);
  uint64_t nt = opt.no_nt ? 0 : measure_nt(perf);
  write_file(path, runs, nruns, level, thr, nt);
  fmx_finalize();
  return 0;
}
