/* SPDX-License-Identifier: MIT */
/*
 * fmx_perf - the benchmark kernels (tools/perf/kernels.c) over fmx.
 *
 * By default the parent forks the ranks, pins each to a core and supervises
 * them: a rank that fails makes the whole run fail, and the ranks die with
 * the parent (PR_SET_PDEATHSIG). The ranks learn each other's endpoint ids
 * through the parent (one socketpair per rank). Every wait has a finite
 * timeout, so a dead peer gives an error, never a hang. Rank 0 owns the
 * configuration and sends it to the others, so with --no-spawn only rank 0
 * needs the full options. The copy modes (copylimit, cachepollution:
 * perf/copymodes.c) run in this process and spawn nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmx.h"
#include "perf/comm_fmx.h"
#include "perf/copymodes.h"
#include "perf/kernels.h"

static int g_sock = -1; /* a spawned rank's line to the parent */

static void read_full(int fd, void *buf, size_t len, const char *what)
{
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  size_t got = 0;
  while (got < len) {
    int pr = poll(&pfd, 1, (int)perf_opt.timeout_ms);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr == 0)
      perf_die("%s: nothing within %u s", what, perf_opt.timeout_ms / 1000);
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      perf_die("%s: %s", what, n < 0 ? strerror(errno) : "the other side exited");
    got += (size_t)n;
  }
}

static void write_full(int fd, const void *buf, size_t len, const char *what)
{
  if (write(fd, buf, len) != (ssize_t)len)
    perf_die("%s: %s", what, strerror(errno));
}

/* Spawned: tell the parent our endpoint id, get everybody's back. */
static void exchange_parent(uint32_t mine, uint32_t *all, int np)
{
  write_full(g_sock, &mine, sizeof mine, "send endpoint id to the parent");
  read_full(g_sock, all, sizeof *all * (size_t)np, "endpoint ids from the parent");
}

/* By hand: rank r has endpoint base + r. */
static void exchange_by_hand(uint32_t mine, uint32_t *all, int np)
{
  uint32_t base = mine - (uint32_t)perf_rank;
  for (int p = 0; p < np; p++)
    all[p] = base + (uint32_t)p;
}

static int run_rank(void)
{
  struct perf_comm c;
  uint32_t want = FMX_ANY_ENDPOINT;
  if (perf_opt.server)
    want = (uint32_t)(perf_opt.endpoint_id < 0 ? 0 : perf_opt.endpoint_id);
  else if (perf_opt.client)
    want = FMX_ANY_ENDPOINT;
  else if (perf_opt.no_spawn)
    want = (uint32_t)(perf_opt.endpoint_id < 0 ? 0 : perf_opt.endpoint_id) + (uint32_t)perf_rank;
  comm_fmx_open(&c, perf_rank, perf_opt.np, want,
                perf_opt.no_spawn ? exchange_by_hand : exchange_parent);
  int rc = perf_run(&c);
  comm_fmx_close(&c);
  return rc;
}

static void pin(int core)
{
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    perf_die("cannot pin to core %d: %s", core, strerror(errno));
}

static int core_of(int rank)
{
  return perf_opt.ncores > 0 ? perf_opt.cores[rank % perf_opt.ncores] : -1;
}

/* ---- the supervising parent --------------------------------------------- */

static void kill_all(pid_t *pid, int np)
{
  for (int r = 0; r < np; r++)
    if (pid[r] > 0)
      kill(pid[r], SIGKILL);
}

/* Collect every rank's endpoint id and send the table to all of them. */
static bool relay_ids(int *socks, int np)
{
  uint32_t *eids = calloc((size_t)np, sizeof *eids);
  if (!eids)
    return false;
  for (int r = 0; r < np; r++) {
    struct pollfd pfd = {.fd = socks[r], .events = POLLIN};
    int pr;
    while ((pr = poll(&pfd, 1, (int)perf_opt.timeout_ms)) < 0 && errno == EINTR)
      ;
    if (pr <= 0 || read(socks[r], &eids[r], sizeof eids[r]) != (ssize_t)sizeof eids[r]) {
      /* The rank died before opening its endpoint: its own message says why. */
      free(eids);
      return false;
    }
  }
  for (int r = 0; r < np; r++)
    if (write(socks[r], eids, sizeof *eids * (size_t)np) != (ssize_t)(sizeof *eids * (size_t)np))
      perf_msg("cannot send endpoint ids to rank %d: %s", r, strerror(errno));
  free(eids);
  return true;
}

static int spawn_and_wait(void)
{
  int np = perf_opt.np;
  pid_t parent = getpid();
  pid_t *pid = calloc((size_t)np, sizeof *pid);
  int *socks = calloc((size_t)np, sizeof *socks);
  if (!pid || !socks)
    perf_die("out of memory");
  fflush(NULL);
  for (int r = 0; r < np; r++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      perf_msg("socketpair: %s", strerror(errno));
      kill_all(pid, r);
      return 1;
    }
    pid[r] = fork();
    if (pid[r] < 0) {
      perf_msg("fork: %s", strerror(errno));
      kill_all(pid, r);
      return 1;
    }
    if (pid[r] == 0) {
      perf_rank = r;
      /* Die with the parent; check the parent did not already die. */
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(1);
      for (int q = 0; q < r; q++)
        close(socks[q]);
      close(sv[0]);
      g_sock = sv[1];
      if (core_of(r) >= 0)
        pin(core_of(r));
      exit(run_rank());
    }
    close(sv[1]);
    socks[r] = sv[0];
  }
  int rc = 0;
  if (!relay_ids(socks, np)) {
    rc = 1; /* a rank failed at start; reaped below, its status reported */
  }
  for (int r = 0; r < np; r++)
    close(socks[r]);
  free(socks);

  int left = np;
  bool reported = false;
  while (left > 0) {
    int st;
    pid_t w = waitpid(-1, &st, 0);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      perf_msg("waitpid: %s", strerror(errno));
      return 1;
    }
    int r = -1;
    for (int q = 0; q < np; q++)
      if (pid[q] == w)
        r = q;
    if (r < 0)
      continue;
    left--;
    pid[r] = -1;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
      continue;
    if (!reported) { /* later failures are consequences of the first */
      if (WIFSIGNALED(st))
        perf_msg("rank %d (pid %d) killed by signal %d (%s)", r, (int)w, WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
      else
        perf_msg("rank %d (pid %d) exited with status %d", r, (int)w, WEXITSTATUS(st));
      reported = true;
      kill_all(pid, np); /* no point in letting the others time out */
    }
    rc = 1;
  }
  free(pid);
  return rc;
}

/* An engine name the library does not know is a usage error, before any
 * rank runs (it used to be a warning and a run with the automatic choice). */
static void check_engine(const char *name)
{
  char status[160] = "";
  fmx_return_t rc = fmx_init();
  if (rc == FMX_SUCCESS)
    rc = fmx_get_info(NULL, FMX_INFO_ENGINE_STATUS, name, (uint32_t)strlen(name) + 1, status,
                      sizeof status);
  fmx_finalize();
  if (rc == FMX_BAD_INFO_KEY) {
    fprintf(stderr, "fmx_perf: --engine: unknown engine '%s' (auto, cma, ring, coop, vmsplice, offload)\n",
            name);
    exit(2);
  }
}

int main(int argc, char **argv)
{
  perf_parse_args(argc, argv, "fmx_perf", true);
  if (perf_opt.kernel >= PERF_COPYLIMIT)
    return copymodes_run(); /* one process: nothing to spawn */
  if (perf_opt.engine && setenv("FMX_BULK", perf_opt.engine, 1) != 0)
    perf_die("setenv: %s", strerror(errno));
  if (perf_opt.engine && strcmp(perf_opt.engine, "auto") != 0)
    check_engine(perf_opt.engine);
  if (perf_opt.no_spawn) {
    perf_rank = perf_opt.rank;
    if (perf_opt.ncores > 0)
      pin(perf_opt.cores[perf_rank % perf_opt.ncores]);
    return run_rank();
  }
  return spawn_and_wait();
}
