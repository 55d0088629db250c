/* SPDX-License-Identifier: MIT */
/*
 * fmx_counters - print an endpoint's event counters.
 *
 * Alone it opens an endpoint of its own and lists its counters (what
 * exists); with --self-test SIZE it first sends one SIZE-byte message to
 * itself, so a user sees which counters a message of that size moves.
 * With --running or --pid PID it reads the counters of the endpoints of
 * running processes instead (fmx_counters_list: each endpoint's counters
 * page, the caller's own user's or, for root, anyone's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmx.h"

#define COUNTERS_KEY 0x666d7863u /* "fmxc" */
#define SELF_TAG 0x5e1f5e1f00000001ull
#define LABEL_LEN 128 /* the longest counter label, 102 bytes, whole */

static struct {
  bool json, all, self_test, running;
  int32_t pid;
  uint64_t size;
  const char *engine;
  uint32_t timeout_ms;
} opt = {.timeout_ms = 30000};

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "fmx_counters: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

#define die(...) (msg(__VA_ARGS__), exit(1))
#define usage_error(...) (msg(__VA_ARGS__), fprintf(stderr, "Try 'fmx_counters --help'.\n"), exit(2))

static void check(fmx_return_t rc, const char *what)
{
  if (rc != FMX_SUCCESS)
    die("%s failed: %s (%d)", what, fmx_strerror(rc), (int)rc);
}

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: fmx_counters [--json] [--all] [--self-test SIZE] [--engine NAME]\n"
          "       fmx_counters [--json] [--all] --running | --pid PID\n"
          "Open an endpoint and print its counters (label and value); or print the counters\n"
          "of the endpoints of running processes.\n\n"
          "  --running         every endpoint of a running process this user may read\n"
          "                    (its own; root: everyone's)\n"
          "  --pid PID         the endpoints of process PID\n"
          "  --self-test SIZE  first send one SIZE-byte message to this endpoint itself\n"
          "                    (suffixes K/M/G allowed) and check the bytes received\n"
          "  --engine NAME     force the bulk engine (sets FMX_BULK=NAME)\n"
          "  --all             also print counters that are zero\n"
          "  --json            one JSON object: {\"endpoint\":N,...,\"counters\":{...}}; with\n"
          "                    --running/--pid one per line, with \"pid\" and \"uid\"\n"
          "  --help            this text\n\n"
          "Exit status: 0 ok, 1 error (--running/--pid: no readable endpoint), 2 usage error.\n");
}

static bool parse_size(const char *s, uint64_t *out)
{
  char *end;
  if (*s < '0' || *s > '9')
    return false;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  unsigned shift = 0;
  if (errno)
    return false;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  default: break;
  }
  if (shift && *end == 'i' && end[1] == 'B')
    end += 2;
  else if (shift && *end == 'B')
    end++;
  if (*end || (shift && v > (UINT64_MAX >> shift)))
    return false;
  *out = (uint64_t)v << shift;
  return true;
}

static void parse_args(int argc, char **argv)
{
  enum { O_JSON = 256, O_ALL, O_SELF, O_ENGINE, O_HELP, O_RUNNING, O_PID };
  static const struct option lopts[] = {{"json", no_argument, 0, O_JSON},
                                        {"all", no_argument, 0, O_ALL},
                                        {"self-test", required_argument, 0, O_SELF},
                                        {"engine", required_argument, 0, O_ENGINE},
                                        {"help", no_argument, 0, O_HELP},
                                        {"running", no_argument, 0, O_RUNNING},
                                        {"pid", required_argument, 0, O_PID},
                                        {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
    switch (c) {
    case O_JSON: opt.json = true; break;
    case O_ALL: opt.all = true; break;
    case O_SELF:
      if (!parse_size(optarg, &opt.size))
        usage_error("--self-test: bad size '%s' (want a number with an optional K, M or G)",
                    optarg);
      opt.self_test = true;
      break;
    case O_ENGINE:
      if (!*optarg || strlen(optarg) > 63)
        usage_error("--engine: bad engine name '%s'", optarg);
      opt.engine = optarg;
      break;
    case O_RUNNING: opt.running = true; break;
    case O_PID: {
      uint64_t v;
      if (!parse_size(optarg, &v) || v == 0 || v > INT32_MAX || strpbrk(optarg, "kKmMgGB"))
        usage_error("--pid: bad process id '%s'", optarg);
      opt.pid = (int32_t)v;
      opt.running = true;
      break;
    }
    case 'h':
    case O_HELP: usage(stdout); exit(0);
    case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
    default: usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    usage_error("unexpected argument '%s'", argv[optind]);
  if (opt.running && (opt.self_test || opt.engine))
    usage_error("--running and --pid read other processes: no --self-test or --engine with them");
}

/* s as the inside of a JSON string, cut to fit out (len > 0). */
static void json_escape(char *out, size_t len, const char *s)
{
  size_t k = 0;
  for (; *s && k + 3 < len; s++) {
    if (*s == '"' || *s == '\\')
      out[k++] = '\\';
    out[k++] = (unsigned char)*s < 0x20 ? '?' : *s;
  }
  out[k] = '\0';
}

static void json_string(const char *s)
{
  char esc[2 * LABEL_LEN];
  json_escape(esc, sizeof esc, s);
  printf("\"%s\"", esc);
}

static void wait_one(fmx_endpoint_t ep, fmx_request_t *req, const char *what,
                     fmx_status_t *st)
{
  uint32_t done = 0;
  check(fmx_wait(ep, req, opt.timeout_ms, st, &done), "fmx_wait");
  if (!done)
    die("%s: not complete after %u s", what, opt.timeout_ms / 1000);
  if (st->code != FMX_SUCCESS)
    die("%s completed with error: %s (%d)", what, fmx_strerror(st->code), (int)st->code);
}

/* One message to ourselves, through the same protocol a peer would get.
 * Fills `engine` with how it moved. */
static void self_test(fmx_endpoint_t ep, char *engine, size_t engine_len)
{
  fmx_endpoint_addr_t self;
  fmx_request_t sreq, rreq;
  fmx_status_t st;
  size_t len = (size_t)opt.size;
  uint8_t *sbuf = malloc(len ? len : 1), *rbuf = malloc(len ? len : 1);
  uint64_t rndv = 0;

  if (!sbuf || !rbuf)
    die("cannot allocate 2 x %zu bytes", len);
  for (size_t i = 0; i < len; i++)
    sbuf[i] = (uint8_t)(i * 131 + (i >> 8) + 7);
  memset(rbuf, 0, len);

  check(fmx_get_endpoint_addr(ep, &self), "fmx_get_endpoint_addr");
  fmx_seg_t sseg = {sbuf, len}, rseg = {rbuf, len};
  check(fmx_irecv(ep, &rseg, 1, SELF_TAG, FMX_MATCH_MASK_NONE, NULL, &rreq), "fmx_irecv");
  check(fmx_isend(ep, &sseg, 1, self, SELF_TAG, NULL, &sreq), "fmx_isend");
  wait_one(ep, &rreq, "receive", &st);
  if (st.xfer_length != len)
    die("received %" PRIu64 " bytes, expected %zu", st.xfer_length, len);
  wait_one(ep, &sreq, "send", &st);
  for (size_t i = 0; i < len; i++)
    if (rbuf[i] != sbuf[i])
      die("data mismatch at offset %zu of %zu: got 0x%02x, expected 0x%02x", i, len, rbuf[i],
          sbuf[i]);
  free(sbuf);
  free(rbuf);

  memset(engine, 0, engine_len);
  if (fmx_get_info(NULL, FMX_INFO_RNDV_THRESHOLD, NULL, 0, &rndv, sizeof rndv) ==
          FMX_SUCCESS &&
      opt.size < rndv)
    snprintf(engine, engine_len, "eager");
  else if (fmx_get_info(ep, FMX_INFO_LAST_BULK_ENGINE, NULL, 0, engine,
                        (uint32_t)engine_len) != FMX_SUCCESS ||
           !engine[0])
    snprintf(engine, engine_len, "?");
  engine[engine_len - 1] = '\0';
}

/* The labels of this build's counters (fmx_init done). */
static char (*load_labels(uint32_t *count, int *width))[LABEL_LEN]
{
  check(fmx_get_info(NULL, FMX_INFO_COUNTER_COUNT, NULL, 0, count, sizeof *count),
        "fmx_get_info(COUNTER_COUNT)");
  char(*labels)[LABEL_LEN] = calloc(*count ? *count : 1, LABEL_LEN);
  if (!labels)
    die("out of memory");
  *width = 8;
  for (uint32_t i = 0; i < *count; i++) {
    check(fmx_get_info(NULL, FMX_INFO_COUNTER_LABEL, &i, sizeof i, labels[i], LABEL_LEN),
          "fmx_get_info(COUNTER_LABEL)");
    labels[i][LABEL_LEN - 1] = '\0';
    if ((int)strlen(labels[i]) > *width)
      *width = (int)strlen(labels[i]);
  }
  return labels;
}

/* One endpoint's counters: `json_head` opens the JSON object's fields,
 * `text_head` the text form's comment line. */
static void print_counters(const char *json_head, const char *text_head, const uint64_t *values,
                           char (*labels)[LABEL_LEN], uint32_t count, int width)
{
  if (opt.json) {
    printf("{%s,\"counters\":{", json_head);
    bool first = true;
    for (uint32_t i = 0; i < count; i++) {
      if (!values[i] && !opt.all)
        continue;
      if (!first)
        putchar(',');
      first = false;
      json_string(labels[i]);
      printf(":%" PRIu64, values[i]);
    }
    printf("}}\n");
    return;
  }
  uint32_t shown = 0;
  printf("# %s\n", text_head);
  for (uint32_t i = 0; i < count; i++) {
    if (!values[i] && !opt.all)
      continue;
    printf("%-*s  %14" PRIu64 "\n", width, labels[i], values[i]);
    shown++;
  }
  if (shown < count)
    printf("# %" PRIu32 " zero counters hidden (--all shows them)\n", count - shown);
}

/* --running / --pid: the counters pages of running endpoints. */
static int show_running(void)
{
  uint32_t count, found = 0, shown = 0, cap = 64;
  int width;
  char(*labels)[LABEL_LEN] = load_labels(&count, &width);
  fmx_counters_source_t *src = NULL;
  for (;;) { /* list, growing the array until everything fits */
    free(src);
    if (!(src = calloc(cap, sizeof *src)))
      die("out of memory");
    check(fmx_counters_list(opt.pid, src, cap, &found), "fmx_counters_list");
    if (found <= cap)
      break;
    cap = found + 16;
  }
  uint64_t *values = calloc(count ? count : 1, sizeof *values);
  if (!values)
    die("out of memory");
  for (uint32_t i = 0; i < found; i++) {
    fmx_counters_source_t *s = &src[i];
    char jh[256], th[256];
    if (s->state != FMX_COUNTERS_OK) {
      msg("pid %d (uid %u), descriptor %d: %s", (int)s->pid, s->uid, (int)s->fd,
          s->state == FMX_COUNTERS_OTHER_BUILD
              ? "an endpoint of another fmx build (its counters differ from this one's): skipped"
              : "named like a counters page but not one: skipped");
      continue;
    }
    fmx_return_t rc = fmx_counters_read(s, values, count);
    if (rc == FMX_BAD_ENDPOINT)
      continue; /* closed since it was listed */
    if (rc != FMX_SUCCESS) {
      msg("pid %d endpoint %u: %s", (int)s->pid, s->endpoint_id, fmx_strerror(rc));
      continue;
    }
    snprintf(jh, sizeof jh, "\"pid\":%d,\"uid\":%u,\"board\":%u,\"endpoint\":%u,\"nic_id\":\"%012" PRIx64 "\"",
             (int)s->pid, s->uid, s->board, s->endpoint_id, s->nic_id);
    snprintf(th, sizeof th, "pid %d (uid %u) endpoint %u (board %u, NIC id %012" PRIx64 "): %u counters",
             (int)s->pid, s->uid, s->endpoint_id, s->board, s->nic_id, count);
    print_counters(jh, th, values, labels, count, width);
    shown++;
  }
  if (!shown) {
    if (opt.pid)
      msg("process %d has no endpoint whose counters this user can read (not an fmx process, "
          "another user's, or FMX_COUNTERS_PAGE=0)", (int)opt.pid);
    else
      msg("no running endpoint whose counters this user can read");
  }
  free(values);
  free(src);
  free(labels);
  return shown ? 0 : 1;
}

int main(int argc, char **argv)
{
  fmx_endpoint_t ep;
  uint32_t count = 0, eid = 0;
  int width;
  char engine[64] = "", jh[256], th[256];

  parse_args(argc, argv);
  if (opt.engine && setenv("FMX_BULK", opt.engine, 1) != 0)
    die("setenv: %s", strerror(errno));
  /* This endpoint's own page would list it among the running ones. */
  if (opt.running && setenv("FMX_COUNTERS_PAGE", "0", 1) != 0)
    die("setenv: %s", strerror(errno));
  check(fmx_init(), "fmx_init");
  if (opt.running) {
    int rc = show_running();
    check(fmx_finalize(), "fmx_finalize");
    return rc;
  }
  check(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, COUNTERS_KEY, NULL, 0, &ep),
        "fmx_open_endpoint");
  if (fmx_get_info(ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &eid, sizeof eid) != FMX_SUCCESS)
    eid = UINT32_MAX;
  if (opt.self_test)
    self_test(ep, engine, sizeof engine);

  char(*labels)[LABEL_LEN] = load_labels(&count, &width);
  uint64_t *values = calloc(count ? count : 1, sizeof *values);
  if (!values)
    die("out of memory");
  if (count)
    check(fmx_get_info(ep, FMX_INFO_COUNTER_VALUES, NULL, 0, values,
                       (uint32_t)(count * sizeof *values)),
          "fmx_get_info(COUNTER_VALUES)");

  int n = snprintf(jh, sizeof jh, "\"endpoint\":%" PRIu32, eid);
  if (opt.self_test) {
    char esc[2 * sizeof engine];
    json_escape(esc, sizeof esc, engine);
    snprintf(jh + n, sizeof jh - (size_t)n, ",\"self_test\":{\"size\":%" PRIu64 ",\"engine\":\"%s\"}",
             opt.size, esc);
  }
  n = snprintf(th, sizeof th, "endpoint %" PRIu32 ": %" PRIu32 " counters", eid, count);
  if (opt.self_test)
    snprintf(th + n, sizeof th - (size_t)n,
             "; after one %" PRIu64 "-byte message to itself (engine: %s)", opt.size, engine);
  print_counters(jh, th, values, labels, count, width);
  free(values);
  free(labels);
  check(fmx_close_endpoint(ep), "fmx_close_endpoint");
  check(fmx_finalize(), "fmx_finalize");
  return 0;
}
