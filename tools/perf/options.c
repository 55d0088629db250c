/* SPDX-License-Identifier: MIT */
/*
 * options.c - the command line of fmx_perf and fmx_perf_mpi (one parser, so
 * the two accept the same kernels, sizes and output options), and messages.
 * fmx_perf's copy modes (copylimit, cachepollution: copymodes.h) are parsed
 * here too; fmx_perf_mpi refuses them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "util.h"

struct perf_opts perf_opt = {.kernel = PERF_PINGPONG, .window = 16, .timeout_ms = 30000,
                             .np = 0, .rank = -1, .endpoint_id = -1};
int perf_rank = -1;

void perf_msg(const char *fmt, ...)
{
  /* One write per line: the ranks share stderr. */
  char line[1024];
  const char *prog = perf_opt.prog ? perf_opt.prog : "fmx_perf";
  int n = perf_rank >= 0 ? snprintf(line, sizeof line, "%s: rank %d: ", prog, perf_rank)
                         : snprintf(line, sizeof line, "%s: ", prog);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  strcat(line, "\n");
  fputs(line, stderr);
}

#define usage_error(...)                                                                    \
  (perf_msg(__VA_ARGS__), fprintf(stderr, "Try '%s --help'.\n", perf_opt.prog), exit(2))

static void usage(FILE *f, bool native)
{
  fprintf(f,
          "Usage: %s [pingpong|bw|msgrate|alltoall|overlap%s] [options]\n"
          "%s (default kernel: pingpong).\n\n"
          "  pingpong         rank 0 sends, rank 1 answers; latency = round trip / 2\n"
          "  bw               rank 0 streams windows of messages, rank 1 acks each window\n"
          "  msgrate          bw counted in messages per second (osu_mbw_mr's kind, one\n"
          "                   pair): window 64, default sizes 0 to 64K\n"
          "  alltoall         every rank sends SIZE bytes to every other rank and receives\n"
          "                   as much; time of one exchange (mean per rank, max over ranks)\n"
          "  overlap          Tcopy: a transfer alone; then the same transfer with Tcompute\n"
          "                   (1.2 x Tcopy, or --compute) of computation between post and\n"
          "                   wait, no calls into the library meanwhile; overlap = (Tcopy\n"
          "                   + Tcompute - Ttotal) / Tcopy, on the receiving side and on\n"
          "                   the sending side\n\n"
          "Options:\n"
          "  --sizes LIST     comma list of sizes, suffixes K/M/G (powers of 1024),\n"
          "                   e.g. 0,8,4K,1M (default 0,1,2,4,...,64M; alltoall to 1M)\n"
          "  --iters N        measured iterations per size (default: scaled to the size,\n"
          "                   10000 for small messages down to 20 at 64M)\n"
          "  --window W       bw, msgrate: messages in flight (default 16; msgrate 64)\n"
          "  --compute US     overlap: Tcompute is US microseconds on both sides, not\n"
          "                   1.2 x each side's Tcopy (two builds then compute alike)\n"
          "  --verify         check every received byte (timings then include the checks)\n"
          "  --json           one JSON object per size per line\n"
          "  --timeout SEC    give up when a peer is silent this long (default 30)\n"
          "  --quiet          no progress line on stderr\n"
          "  --buf-offset N[,M]  message buffers start N bytes past a page boundary\n"
          "                   (0-4095, default 0; malloc puts large blocks at 16); with\n"
          "                   M, rank 0's at N and the other ranks' at M\n",
          perf_opt.prog, native ? "|copylimit|cachepollution" : "",
          native ? "Benchmark over fmx; starts and pins its own ranks"
                 : "The fmx_perf kernels over MPI; run it under mpirun/mpiexec");
  if (native)
    fprintf(f,
            "\nSingle-process modes (fmx_perf only; no ranks, no message layer):\n"
            "  copylimit        copy bandwidth of each usable copy routine (memcpy, movsb,\n"
            "                   avx2_nt, avx512_nt) on 1 thread and on 2 threads pinned to\n"
            "                   two cores, each copying its own buffers (total reported);\n"
            "                   best of 3 repetitions of --iters copies (default: ~50 ms).\n"
            "                   Default sizes 4K,64K,1M,4M,16M,64M; --verify checks the copies\n"
            "  cachepollution   one pass over a warm probe buffer (L2 / 4) right after one\n"
            "                   copy of SIZE bytes, per routine, against no copy (\"none\");\n"
            "                   median of --iters passes (fmx_copy_async among them).\n"
            "                   Default sizes 1M,4M,16M,64M\n"
            "  copy-overlap     fmx_copy_async beside a computation as long as the copy:\n"
            "                   Tcopy, Tcompute, Ttotal and the overlap, against memcpy\n"
            "                   (--iters reps, default 21). Default sizes 1M,4M,16M,64M\n"
            "  copy-pollution   cachepollution under the ADCE paper's name\n"
            "                   They take --sizes, --iters, --cores (the first two cores),\n"
            "                   --json, --quiet (and copylimit --verify) only\n\n");
  if (native)
    fprintf(f,
            "  --np N           ranks (default 2; alltoall: every allowed core, at least 2)\n"
            "  --engine NAME    force the bulk engine (sets FMX_BULK=NAME in every rank)\n"
            "  --mem fmx|malloc where the message buffers come from (default malloc):\n"
            "                   fmx_mem_alloc memory is mapped by peers, so large\n"
            "                   messages are copied once with plain loads and stores\n"
            "  --cores LIST     pin rank i to the i-th core of the list, round robin\n"
            "                   (default: the allowed cores in order)\n"
            "  --no-spawn       run one rank by hand; needs --rank; rank r opens endpoint\n"
            "                   N+r (--endpoint-id N, default 0); the other ranks take\n"
            "                   kernel, sizes and iterations from rank 0\n"
            "  --rank R         with --no-spawn\n"
            "  --endpoint-id N  with --no-spawn; with --server, the endpoint it opens\n"
            "                   (default 0)\n"
            "  --server         across hosts: run the answering rank here and wait for a\n"
            "                   client (kernel, sizes and iterations come from it)\n"
            "  --client HOST[:EP]  across hosts: run rank 0 here against the server's\n"
            "                   endpoint EP (default 0) on HOST: a peer-table name\n"
            "                   (FMX_PEERS), a MAC or a NIC id\n"
            "  --counters       at the end, each rank prints its endpoint's counters that\n"
            "                   are not zero (retransmits, pulls, drops...) on stderr\n");
  if (!native)
    fprintf(f, "  --mem mpi|malloc where the message buffers come from (default malloc):\n"
               "                   MPI_Alloc_mem, or posix_memalign\n");
  fprintf(f,
          "  --help           this text\n\n"
          "Columns: latency_us is half the round trip (bw: time per message; alltoall:\n"
          "time of one exchange; overlap: Tcopy); bandwidth is size / latency in MB/s\n"
          "(10^6 bytes/s; alltoall: bytes sent per rank). engine is the bulk engine of\n"
          "the last large receive, \"eager\" when the size's receives went eager, \"mpi\" over MPI.\n"
          "Exit status: 0 ok, 1 error, 2 usage error.\n");
}

static void parse_sizes(const char *arg)
{
  char *copy = strdup(arg), *save = NULL, *tok;
  if (!copy)
    perf_die("out of memory");
  perf_opt.nsizes = 0;
  (void)save;
  /* Every comma separates two sizes: "1K,,2K" or a trailing comma is an
   * error, not a shorter list (strtok would skip the empty ones). */
  for (char *next = copy; (tok = next) != NULL;) {
    next = strchr(tok, ',');
    if (next)
      *next++ = '\0';
    if (perf_opt.nsizes == PERF_MAX_SIZES)
      usage_error("--sizes: at most %d sizes", PERF_MAX_SIZES);
    if (!parse_u64(tok, &perf_opt.sizes[perf_opt.nsizes], true))
      usage_error("--sizes: bad size '%s' (want a number with an optional K, M or G)", tok);
    perf_opt.nsizes++;
  }
  if (perf_opt.nsizes == 0)
    usage_error("--sizes: empty list");
  free(copy);
}

static long parse_int(const char *what, const char *s, long lo, long hi)
{
  uint64_t v;
  if (!parse_u64(s, &v, false) || v < (uint64_t)lo || v > (uint64_t)hi)
    usage_error("%s: bad value '%s' (want an integer in %ld..%ld)", what, s, lo, hi);
  return (long)v;
}

/* --buf-offset N[,M]: rank 0's buffers N bytes into their page, the other
 * ranks' M (default N). */
static void parse_offsets(const char *arg)
{
  char first[32];
  const char *comma = strchr(arg, ',');
  size_t n = comma ? (size_t)(comma - arg) : strlen(arg);
  if (n == 0 || n >= sizeof first)
    usage_error("--buf-offset: want N or N,M (bytes, 0..4095; got '%s')", arg);
  memcpy(first, arg, n);
  first[n] = '\0';
  perf_opt.buf_offset[0] = (uint32_t)parse_int("--buf-offset", first, 0, 4095);
  perf_opt.buf_offset[1] = comma ? (uint32_t)parse_int("--buf-offset", comma + 1, 0, 4095) : perf_opt.buf_offset[0];
}

static void parse_cores(char *arg)
{
  char *save = NULL, *tok;
  perf_opt.ncores = 0;
  for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (perf_opt.ncores == PERF_MAX_NP)
      usage_error("--cores: at most %d cores", PERF_MAX_NP);
    perf_opt.cores[perf_opt.ncores++] = (int)parse_int("--cores", tok, 0, CPU_SETSIZE - 1);
  }
  if (perf_opt.ncores == 0)
    usage_error("--cores: empty list");
}

/* Cores this process may run on, in order; they become the default list. */
static int allowed_cores(int *out, int max)
{
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    perf_die("sched_getaffinity: %s", strerror(errno));
  for (int c = 0; c < CPU_SETSIZE && n < max; c++)
    if (CPU_ISSET(c, &set))
      out[n++] = c;
  return n;
}

/* Every --cores entry must be in this process's allowed CPU set. */
static void check_cores(void)
{
  cpu_set_t set;
  if (perf_opt.ncores > 0 && sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < perf_opt.ncores; i++)
      if (!CPU_ISSET(perf_opt.cores[i], &set))
        usage_error("--cores: core %d is not in this process's allowed CPU set",
                    perf_opt.cores[i]);
}

/* --server / --client: two ranks by hand, one per host. */
static void check_remote(void)
{
  if (perf_opt.server && perf_opt.client)
    usage_error("--server and --client: one or the other");
  if (perf_opt.no_spawn || perf_opt.rank >= 0)
    usage_error("--server/--client run one rank each; --no-spawn and --rank are implied");
  if (perf_opt.kernel == PERF_ALLTOALL && perf_opt.np > 2)
    usage_error("--server/--client: two ranks, one per host");
  perf_opt.no_spawn = true;
  perf_opt.rank = perf_opt.server ? 1 : 0;
  if (perf_opt.client && perf_opt.endpoint_id >= 0)
    usage_error("--endpoint-id is the server's own endpoint; a client names it in --client HOST:EP");
}

static void check_native(void)
{
  if (perf_opt.server || perf_opt.client)
    check_remote();
  if (perf_opt.no_spawn && perf_opt.rank < 0)
    usage_error("--no-spawn needs --rank");
  if (!perf_opt.no_spawn && !perf_opt.server && (perf_opt.rank >= 0 || perf_opt.endpoint_id >= 0))
    usage_error("--rank and --endpoint-id only make sense with --no-spawn");
  int allowed[PERF_MAX_NP];
  int nallowed = allowed_cores(allowed, PERF_MAX_NP);
  if (perf_opt.np == 0)
    perf_opt.np = perf_opt.kernel == PERF_ALLTOALL && nallowed > 2 ? nallowed : 2;
  if (perf_opt.kernel != PERF_ALLTOALL && perf_opt.np != 2)
    usage_error("--np: %s runs on 2 ranks (only alltoall takes more)", perf_kernel_name(perf_opt.kernel));
  if (perf_opt.rank >= perf_opt.np)
    usage_error("--rank %d: want 0..%d (--np %d)", perf_opt.rank, perf_opt.np - 1,
                perf_opt.np);
  if (perf_opt.ncores > 0) {
    check_cores();
  } else if (!perf_opt.no_spawn) {
    memcpy(perf_opt.cores, allowed, sizeof(int) * (size_t)nallowed);
    perf_opt.ncores = nallowed;
    if (nallowed < perf_opt.np && !perf_opt.quiet)
      perf_msg("note: %d ranks on %d allowed cores; ranks share cores", perf_opt.np,
               nallowed);
  }
}

/* getopt_long codes of the long options. */
enum { O_SIZES = 256, O_ITERS, O_WINDOW, O_ENGINE, O_VERIFY, O_JSON, O_CORES, O_TIMEOUT,
       O_QUIET, O_NOSPAWN, O_RANK, O_EID, O_NP, O_MEM, O_SERVER, O_CLIENT, O_COUNTERS, O_OFFSET, O_COMPUTE,
       O_HELP };

/* copylimit, cachepollution: one process, no ranks; refuse what has no
 * meaning there, default the sizes and the cores. */
static void check_copy(uint32_t given)
{
  static const struct { int opt; const char *name; } refused[] = {
      {O_WINDOW, "--window"}, {O_ENGINE, "--engine"}, {O_TIMEOUT, "--timeout"},
      {O_NOSPAWN, "--no-spawn"}, {O_RANK, "--rank"}, {O_EID, "--endpoint-id"},
      {O_NP, "--np"}, {O_MEM, "--mem"}, {O_SERVER, "--server"}, {O_CLIENT, "--client"},
      {O_OFFSET, "--buf-offset"}, {O_COMPUTE, "--compute"}};
  const char *mode = perf_kernel_name(perf_opt.kernel);
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    if (given & (1u << (refused[i].opt - O_SIZES)))
      usage_error("%s: %s makes no sense here (one process, no ranks, no message layer; "
                  "--cores pins the threads)", mode, refused[i].name);
  if (perf_opt.verify && perf_opt.kernel != PERF_COPYLIMIT)
    usage_error("%s: --verify makes no sense here (copylimit --verify checks the copies)", mode);
  static const uint64_t copylimit_sizes[] = {4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20,
                                             64 << 20};
  if (perf_opt.nsizes == 0)
    for (size_t i = perf_opt.kernel == PERF_COPYLIMIT ? 0 : 2; i < 6; i++)
      perf_opt.sizes[perf_opt.nsizes++] = copylimit_sizes[i];
  for (uint32_t k = 0; k < perf_opt.nsizes; k++)
    if (perf_opt.sizes[k] == 0 || perf_opt.sizes[k] > (1ull << 30))
      usage_error("--sizes: %s copies 1 byte to 1G (got %" PRIu64 ")", mode, perf_opt.sizes[k]);
  check_cores();
  if (perf_opt.ncores == 0) {
    perf_opt.ncores = allowed_cores(perf_opt.cores, PERF_MAX_NP);
    if (perf_opt.ncores > 2)
      perf_opt.ncores = 2;
  }
}

void perf_parse_args(int argc, char **argv, const char *prog, bool native)
{
  static const struct option lopts[] = {
      {"sizes", required_argument, 0, O_SIZES},   {"iters", required_argument, 0, O_ITERS},
      {"window", required_argument, 0, O_WINDOW}, {"engine", required_argument, 0, O_ENGINE},
      {"verify", no_argument, 0, O_VERIFY},       {"json", no_argument, 0, O_JSON},
      {"cores", required_argument, 0, O_CORES},   {"timeout", required_argument, 0, O_TIMEOUT},
      {"quiet", no_argument, 0, O_QUIET},         {"no-spawn", no_argument, 0, O_NOSPAWN},
      {"rank", required_argument, 0, O_RANK},     {"endpoint-id", required_argument, 0, O_EID},
      {"np", required_argument, 0, O_NP},         {"mem", required_argument, 0, O_MEM},
      {"server", no_argument, 0, O_SERVER},       {"client", required_argument, 0, O_CLIENT},
      {"counters", no_argument, 0, O_COUNTERS},   {"help", no_argument, 0, O_HELP},
      {"buf-offset", required_argument, 0, O_OFFSET}, {"compute", required_argument, 0, O_COMPUTE},
      {0, 0, 0, 0}};
  uint32_t given = 0; /* bit (option - O_SIZES) per option seen */
  perf_opt.prog = prog;
  perf_opt.native = native;
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    perf_opt.kernel = 0;
    for (int k = PERF_PINGPONG; k <= PERF_COPY_POLLUTION; k++)
      if (!strcmp(argv[1], perf_kernel_name((enum perf_kernel)k)))
        perf_opt.kernel = (enum perf_kernel)k;
    if (!perf_opt.kernel)
      usage_error("unknown kernel '%s' (want pingpong, bw, msgrate, alltoall, overlap%s)", argv[1],
                  native ? ", copylimit, cachepollution, copy-overlap or copy-pollution" : "");
    if (!native && perf_opt.kernel >= PERF_COPYLIMIT)
      usage_error("'%s' is fmx_perf's: it measures this machine's copy routines in one "
                  "process, with no message layer; run 'fmx_perf %s'", argv[1], argv[1]);
    first = 2;
  }
  optind = first;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
    if (!native && (c == O_ENGINE || c == O_CORES || c == O_NOSPAWN || c == O_RANK ||
                    c == O_EID || c == O_NP || c == O_SERVER || c == O_CLIENT || c == O_COUNTERS))
      usage_error("option '%s' is fmx_perf's; under MPI, mpirun sets ranks and binding",
                  argv[optind - 1]);
    if (c >= O_SIZES && c <= O_HELP)
      given |= 1u << (c - O_SIZES);
    switch (c) {
    case O_SIZES: parse_sizes(optarg); break;
    case O_ITERS: perf_opt.iters = (uint64_t)parse_int("--iters", optarg, 1, 1000000000L); break;
    case O_WINDOW:
      perf_opt.window = (uint32_t)parse_int("--window", optarg, 1, PERF_MAX_WINDOW);
      break;
    case O_ENGINE:
      if (!*optarg || strlen(optarg) > 63)
        usage_error("--engine: bad engine name '%s'", optarg);
      perf_opt.engine = optarg;
      break;
    case O_VERIFY: perf_opt.verify = true; break;
    case O_JSON: perf_opt.json = true; break;
    case O_CORES: parse_cores(optarg); break;
    case O_TIMEOUT:
      perf_opt.timeout_ms = (uint32_t)parse_int("--timeout", optarg, 1, 86400) * 1000u;
      break;
    case O_QUIET: perf_opt.quiet = true; break;
    case O_NOSPAWN: perf_opt.no_spawn = true; break;
    case O_RANK: perf_opt.rank = (int)parse_int("--rank", optarg, 0, PERF_MAX_NP - 1); break;
    case O_EID: perf_opt.endpoint_id = parse_int("--endpoint-id", optarg, 0, 0x7ffffffe); break;
    case O_NP: perf_opt.np = (int)parse_int("--np", optarg, 2, PERF_MAX_NP); break;
    case O_SERVER: perf_opt.server = true; break;
    case O_COUNTERS: perf_opt.counters = true; break;
    case O_OFFSET: parse_offsets(optarg); break;
    case O_COMPUTE: perf_opt.compute_us = (uint32_t)parse_int("--compute", optarg, 1, 60000000L); break;
    case O_CLIENT:
      if (!*optarg || strlen(optarg) > 127)
        usage_error("--client: want HOST[:EP] (a peer-table name, a MAC or a NIC id)");
      perf_opt.client = optarg;
      break;
    case O_MEM:
      if (strcmp(optarg, native ? "fmx" : "mpi") && strcmp(optarg, "malloc"))
        usage_error("--mem: want %s or malloc (got '%s')", native ? "fmx" : "mpi", optarg);
      perf_opt.mem_lib = strcmp(optarg, "malloc") != 0;
      break;
    case 'h':
    case O_HELP: usage(stdout, native); exit(0);
    case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
    default: usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    usage_error("unexpected argument '%s'", argv[optind]);
  if (perf_opt.kernel >= PERF_COPYLIMIT) {
    check_copy(given);
    return;
  }
  if (perf_opt.compute_us && perf_opt.kernel != PERF_OVERLAP)
    usage_error("--compute: only the overlap kernel computes");
  if (perf_opt.kernel == PERF_MSGRATE && !(given & 1u << (O_WINDOW - O_SIZES)))
    perf_opt.window = 64;
  if (perf_opt.nsizes == 0) {
    uint64_t max = perf_opt.kernel == PERF_ALLTOALL ? 1u << 20
                   : perf_opt.kernel == PERF_MSGRATE ? 64u << 10 : 64u << 20;
    perf_opt.sizes[perf_opt.nsizes++] = 0;
    for (uint64_t s = 1; s <= max; s <<= 1)
      perf_opt.sizes[perf_opt.nsizes++] = s;
  }
  if (native)
    check_native();
}
