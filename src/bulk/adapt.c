/* SPDX-License-Identifier: MIT */
/*
 * adapt: the receiver's own measurement of the engines, where nothing was
 * measured for it (no fmx_tune costs, FMX_BULK=auto, FMX_ADAPT=1).
 *
 * The topology says which cores share a cache, not how fast this kernel
 * pins pages: on one host cma beats ring 1.7x at 256 KiB, on another ring
 * beats cma 2x at the same size with the same cache sharing (docs/engines.md).
 * So per partner and size class (a power of two) the engine the topology
 * suggests (bulk.c's untuned rule) moves the first message; then each other
 * engine usable with that peer moves ADAPT_TRIES, and the fastest of that round
 * (its fastest transfer, in ns per byte) moves the next `span` messages,
 * after which the round repeats. span grows 4x while the choice holds, up to
 * ADAPT_SPAN_MAX, and starts again from ADAPT_SPAN_MIN when it changes:
 * once the choice is settled the others cost ADAPT_TRIES messages in
 * ADAPT_SPAN_MAX each, and a change of the machine's behaviour is seen
 * within that many.
 *
 * A round leaves out the engines that were more than ADAPT_PRUNE times
 * slower in the round before (all are tried again once span reaches
 * ADAPT_SPAN_MAX), and a class met for the first time starts from the
 * nearest smaller class that timed the engine the topology suggests for
 * the new one (and so chose against it, or kept it knowingly): its engine
 * first for ADAPT_SPAN_MIN messages, its far losers left out of the first
 * round (costs change smoothly with size: an engine about to cross is close
 * before it does). So a benchmark that doubles its size does not pay a
 * round of slow engines at every size and every round (a 4 MiB class of
 * 140 messages measured 0.84x the best engine with every round from message
 * 2 and span doubling from 8; these rules leave it 3 rounds).
 *
 * The engine in use is judged by its recent transfers only (the fastest of
 * its last ADAPT_WINDOW to 2 x ADAPT_WINDOW), the others by the one each
 * just moved: a host whose speed changes (a VM whose neighbours come and
 * go) changes the choice within a round.
 *
 * From FMX_OFFLOAD_THRESHOLD on (the KNEM switch, where a message no longer
 * fits the cores' share of the cache) bulk.c keeps the topology's rule.
 *
 * Only clean samples count: a transfer the receiving thread moved itself
 * (not offloaded), alone on the endpoint from start to end, completed while
 * that thread waited in fmx, timed from the later of its match and the
 * start of that wait. A transfer matched while the application computed
 * and finished when it came back would otherwise look as slow as the
 * computation was long. Transfers in flight together (a window of
 * messages) are not timed: the receiver's work on the others lands in each
 * one's time (a ring transfer in a stream of cma pulls timed 20x slower
 * than alone), and the time between two completions (tried instead) does
 * not tell an engine's cost when the sender moves bytes meanwhile (coop's
 * sender finished a transfer while the receiver pulled another, which then
 * looked 50x faster than it is, 2026-11-23). A stream whose every transfer
 * overlaps another keeps the topology's rule, or what its size class (or
 * the nearest smaller one that timed the rule's engine) measured alone.
 */
#include <stdio.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "base/log.h"
#include "platform/sys.h"

#define ADAPT_SPAN_MIN 8
#define ADAPT_SPAN_MAX 1024
#define ADAPT_PRUNE 2
#define ADAPT_WINDOW 8
/* Messages in a row per try; the fastest counts. Two were too few: cma's
 * first two 1 MiB transfers after a run of ring moved 6 GB/s against 17-23
 * warm (Intel Xeon VM, 2026-11-27), so a try lost to ring and ring stayed
 * (80 against 52 us a message in 6 of 16 mx_pingpong runs; 0 of 16 with 4). */
#define ADAPT_TRIES 4

__thread uint64_t adapt_wait_ns;
__thread int adapt_in_pass;

static int size_class(uint64_t len) {
  int c = 63 - __builtin_clzll(len | 1);
  return c < ADAPT_CLASSES ? c : ADAPT_CLASSES - 1;
}

/* The engines adapt chooses among, usable with this peer: not offload (its
 * own switch, bulk.c), and not coop, whose sender copies stripes the
 * receiver's clock does not see whole: its receiver timed it at 9-10 GB/s
 * at 64 KiB in a ping-pong that coop moved at 5-6 GB/s (ring: 7-8 timed,
 * 10-12 moved; 2026-11-23). fmx_tune times it end to end. */
static int candidate(const int *usable, int n, int i) {
  return i >= 0 && i < n && usable[i] && bulk_engines[i] != &bulk_offload && bulk_engines[i] != &bulk_coop &&
         bulk_engines[i] != &bulk_pull;
}

static int index_of(const struct fmx_bulk_engine *e) {
  for (int i = 0; bulk_engines[i] && i < BULK_MAX_ENGINES; i++)
    if (bulk_engines[i] == e) return i;
  return -1;
}

/* The engines more than ADAPT_PRUNE times slower than w in a round. */
static uint8_t far_behind(const float *t, int w) {
  uint8_t skip = 0;
  for (int i = 0; i < BULK_MAX_ENGINES; i++)
    if (i != w && t[i] > 0 && t[w] > 0 && t[i] > ADAPT_PRUNE * t[w]) skip |= (uint8_t)(1u << i);
  return skip;
}

/* End of a round: the fastest engine sampled in it (the incumbent if none
 * was), and the span it keeps. */
static void decide(struct bulk_env *env, const struct bulk_peer *p, struct adapt_class *a, const int *usable, int n) {
  int inc = a->inc - 1, best = -1;
  float recent = a->win > 0 && (a->prev_win <= 0 || a->win < a->prev_win) ? a->win : a->prev_win;
  if (recent > 0) a->best[inc] = recent;
  char seen[160] = "";
  size_t o = 0;
  for (int i = 0; i < n; i++) {
    if (!candidate(usable, n, i) || a->best[i] <= 0) continue;
    if (best < 0 || a->best[i] < a->best[best]) best = i;
    a->timed |= (uint8_t)(1u << i);
    if (o < sizeof seen)
      o += (size_t)snprintf(seen + o, sizeof seen - o, " %s %.0f MB/s", bulk_engines[i]->name, 1e3 / a->best[i]);
  }
  if (best < 0) best = inc;
  log_debug("FMX-ADAPT", "endpoint %u, messages of 2^%d bytes: %s (was %s);%s", p->eid, (int)(a - p->tab->adapt),
            bulk_engines[best]->name, bulk_engines[inc]->name, *seen ? seen : " no clean sample");
  if (best != inc) a->win = a->prev_win = 0, a->nwin = 0;
  if (best == inc) {
    a->span = a->span * 4 > ADAPT_SPAN_MAX ? ADAPT_SPAN_MAX : a->span * 4;
  } else {
    a->span = ADAPT_SPAN_MIN;
    env->counters[CNT_ADAPT_CHANGES]++;
  }
  a->inc = (uint8_t)(best + 1);
  memcpy(a->last, a->best, sizeof a->last);
  memset(a->best, 0, sizeof a->best);
  /* The next round leaves out what lost by far, but a long one tries all. */
  a->skip = a->span < ADAPT_SPAN_MAX ? far_behind(a->last, best) : 0;
  if (a->rounds < 255) a->rounds++;
}

/* A new class: from the nearest smaller one that timed prior (pi), else
 * from prior. */
static void start(struct bulk_peer *p, struct adapt_class *a, int pi) {
  memset(a, 0, sizeof *a);
  a->inc = (uint8_t)(pi + 1);
  a->span = ADAPT_SPAN_MIN / 4;
  /* As many messages as a try of another engine, and for the same reason
   * (the fastest counts): the first pays for what is cold. With one, cma's
   * first 1 MiB transfer with a partner timed 1.1-3.1 GB/s against 17-23
   * warm, and every first round went to ring (mx_pingpong, 2026-11-27). */
  a->left = ADAPT_TRIES;
  for (const struct adapt_class *nb = a; nb-- > p->tab->adapt;) {
    /* Only a class that timed the engine the topology suggests here and
     * found another faster (or kept it): one that never timed it says
     * nothing against it. */
    if (!nb->rounds || !(nb->timed >> pi & 1)) continue;
    a->inc = nb->inc;
    a->skip = far_behind(nb->last, nb->inc - 1);
    a->span = ADAPT_SPAN_MIN;
    a->left = ADAPT_SPAN_MIN;
    break;
  }
}

const struct fmx_bulk_engine *adapt_kept(const struct bulk_peer *p, uint64_t len, const int *usable, int n,
                                         const struct fmx_bulk_engine *prior) {
  int inc = p->tab->adapt[size_class(len)].inc - 1;
  return candidate(usable, n, inc) ? bulk_engines[inc] : prior;
}

const struct fmx_bulk_engine *adapt_pick(struct bulk_env *env, struct bulk_peer *p, uint64_t len, const int *usable,
                                         int n, const struct fmx_bulk_engine *prior) {
  struct adapt_class *a = &p->tab->adapt[size_class(len)];
  int inc = a->inc - 1;
  if (!candidate(usable, n, inc)) {
    /* First message of the class (or the incumbent is no longer usable). */
    int pi = index_of(prior);
    if (!candidate(usable, n, pi)) return prior;
    start(p, a, pi);
    inc = a->inc - 1;
    if (!candidate(usable, n, inc)) a->inc = (uint8_t)((inc = pi) + 1);
  }
  if (a->left) {
    a->left--;
    return bulk_engines[inc];
  }
  /* The round: ADAPT_TRIES messages in a row on each other candidate, in
   * table order (the first after a while of another engine pays for its
   * cold slots and a peer not yet spinning on them: the fastest counts). */
  for (int k = a->probe; k < n * ADAPT_TRIES; k++) {
    int i = k / ADAPT_TRIES;
    if (i == inc || !candidate(usable, n, i) || (a->skip >> i & 1)) continue;
    a->probe = (uint8_t)(k + 1);
    env->counters[CNT_ADAPT_TRIES]++;
    return bulk_engines[i];
  }
  decide(env, p, a, usable, n);
  a->probe = 0;
  a->left = a->span - 1;
  return bulk_engines[a->inc - 1];
}

void adapt_record(struct bulk_xfer *x) {
  if (!x->adapt || x->offloaded || x->job || !adapt_timed() || !x->want) return;
  if (x->env->starts != x->adapt_seq) return; /* another began meanwhile */
  int i = index_of(x->engine);
  if (i < 0) return;
  uint64_t since = offload_in_wait ? adapt_wait_ns : 0; /* a pass: from the transfer's start */
  uint64_t now = sys_now_ns(), from = x->adapt_ns > since ? x->adapt_ns : since;
  if (now <= from) return;
  float per_byte = (float)(now - from) / (float)x->want;
  struct adapt_class *a = &x->peer->tab->adapt[size_class(x->want)];
  if (i != a->inc - 1) {
    if (a->best[i] == 0 || per_byte < a->best[i]) a->best[i] = per_byte;
    return;
  }
  if (a->nwin++ % ADAPT_WINDOW == 0) a->prev_win = a->win, a->win = 0;
  if (a->win == 0 || per_byte < a->win) a->win = per_byte;
}
