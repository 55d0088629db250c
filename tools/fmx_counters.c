/* SPDX-License-Identifier: MIT */
/*
 * fmx_counters - print an endpoint's event counters.
 *
 * Counters live in each endpoint of a process, so this tool opens its own
 * endpoint. Alone it lists the counters of a fresh endpoint (what exists);
 * with --self-test SIZE it first sends one SIZE-byte message to itself, so a
 * user sees which counters a message of that size moves.
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
#define LABEL_LEN 64

static struct {
  bool json, all, self_test;
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
          "Open an endpoint and print its counters (label and value).\n\n"
          "  --self-test SIZE  first send one SIZE-byte message to this endpoint itself\n"
          "                    (suffixes K/M/G allowed) and check the bytes received\n"
          "  --engine NAME     force the bulk engine (sets FMX_BULK=NAME)\n"
          "  --all             also print counters that are zero\n"
          "  --json            one JSON object: {\"endpoint\":N,...,\"counters\":{...}}\n"
          "  --help            this text\n\n"
          "Exit status: 0 ok, 1 error, 2 usage error.\n");
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
  enum { O_JSON = 256, O_ALL, O_SELF, O_ENGINE, O_HELP };
  static const struct option lopts[] = {{"json", no_argument, 0, O_JSON},
                                        {"all", no_argument, 0, O_ALL},
                                        {"self-test", required_argument, 0, O_SELF},
                                        {"engine", required_argument, 0, O_ENGINE},
                                        {"help", no_argument, 0, O_HELP},
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
    case 'h':
    case O_HELP: usage(stdout); exit(0);
    case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
    default: usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    usage_error("unexpected argument '%s'", argv[optind]);
}

static void json_string(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      putchar('\\');
    putchar((unsigned char)*s < 0x20 ? '?' : *s);
  }
  putchar('"');
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

int main(int argc, char **argv)
{
  fmx_endpoint_t ep;
  uint32_t count = 0, eid = 0;
  char engine[64] = "";

  parse_args(argc, argv);
  if (opt.engine && setenv("FMX_BULK", opt.engine, 1) != 0)
    die("setenv: %s", strerror(errno));
  check(fmx_init(), "fmx_init");
  check(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, COUNTERS_KEY, NULL, 0, &ep),
        "fmx_open_endpoint");
  if (fmx_get_info(ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &eid, sizeof eid) != FMX_SUCCESS)
    eid = UINT32_MAX;
  if (opt.self_test)
    self_test(ep, engine, sizeof engine);

  check(fmx_get_info(ep, FMX_INFO_COUNTER_COUNT, NULL, 0, &count, sizeof count),
        "fmx_get_info(COUNTER_COUNT)");
  uint64_t *values = calloc(count ? count : 1, sizeof *values);
  char(*labels)[LABEL_LEN] = calloc(count ? count : 1, LABEL_LEN);
  if (!values || !labels)
    die("out of memory");
  /* Take the values in one snapshot, then the labels. */
  if (count)
    check(fmx_get_info(ep, FMX_INFO_COUNTER_VALUES, NULL, 0, values,
                       (uint32_t)(count * sizeof *values)),
          "fmx_get_info(COUNTER_VALUES)");
  int width = 8;
  for (uint32_t i = 0; i < count; i++) {
    check(fmx_get_info(ep, FMX_INFO_COUNTER_LABEL, &i, sizeof i, labels[i], LABEL_LEN),
          "fmx_get_info(COUNTER_LABEL)");
    labels[i][LABEL_LEN - 1] = '\0';
    if ((int)strlen(labels[i]) > width)
      width = (int)strlen(labels[i]);
  }

  if (opt.json) {
    printf("{\"endpoint\":%" PRIu32, eid);
    if (opt.self_test) {
      printf(",\"self_test\":{\"size\":%" PRIu64 ",\"engine\":", opt.size);
      json_string(engine);
      putchar('}');
    }
    printf(",\"counters\":{");
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
  } else {
    uint32_t shown = 0;
    printf("# endpoint %" PRIu32 ": %" PRIu32 " counters", eid, count);
    if (opt.self_test)
      printf("; after one %" PRIu64 "-byte message to itself (engine: %s)", opt.size,
             engine);
    printf("\n");
    for (uint32_t i = 0; i < count; i++) {
      if (!values[i] && !opt.all)
        continue;
      printf("%-*s  %14" PRIu64 "\n", width, labels[i], values[i]);
      shown++;
    }
    if (shown < count)
      printf("# %" PRIu32 " zero counters hidden (--all shows them)\n", count - shown);
  }
  free(values);
  free(labels);
  check(fmx_close_endpoint(ep), "fmx_close_endpoint");
  check(fmx_finalize(), "fmx_finalize");
  return 0;
}
