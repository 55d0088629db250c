/* SPDX-License-Identifier: MIT */
/*
 * kernels.c - the benchmark kernels over struct perf_comm: pingpong, bw
 * (and msgrate, the same stream counted in messages), alltoall and overlap
 * (run.c drives them: configuration, buffers, output). The same code runs
 * over fmx (fmx_perf) and over any MPI (fmx_perf_mpi), so their numbers
 * differ only by the message layer.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "util.h"

static void pat_check(const uint8_t *p, size_t len, uint64_t seed, uint64_t iter)
{
  size_t first = 0;
  uint8_t got = 0, want = 0;
  size_t bad = pat_errors(p, len, seed, &first, &got, &want);
  if (bad) {
    char hs[32];
    perf_die("verify FAILED: size %s, iteration %" PRIu64 ": %zu of %zu bytes wrong; first at "
             "offset %zu: got 0x%02x, expected 0x%02x",
             human_size(len, hs, sizeof hs), iter, bad, len, first, got, want);
  }
}

void perf_send_wait(struct perf_comm *c, const void *buf, uint64_t len, int peer,
                      enum perf_tag tag, const char *what)
{
  perf_req_t r;
  c->isend(c, buf, len, peer, tag, &r);
  c->wait(c, &r, what, UINT64_MAX);
}

void perf_recv_wait(struct perf_comm *c, void *buf, uint64_t len, int peer,
                      enum perf_tag tag, const char *what)
{
  perf_req_t r;
  c->irecv(c, buf, len, peer, tag, &r);
  c->wait(c, &r, what, len);
}

/* Every rank reports to rank 0, then rank 0 releases them all. */
void perf_barrier(struct perf_comm *c)
{
  char z[8] = {0};
  if (c->rank == 0) {
    for (int p = 1; p < c->size; p++)
      perf_recv_wait(c, z, 0, p, PERF_TAG_BARRIER, "receive (barrier)");
    for (int p = 1; p < c->size; p++)
      perf_send_wait(c, z, 0, p, PERF_TAG_BARRIER, "send (barrier)");
  } else {
    perf_send_wait(c, z, 0, 0, PERF_TAG_BARRIER, "send (barrier)");
    perf_recv_wait(c, z, 0, 0, PERF_TAG_BARRIER, "receive (barrier)");
  }
}

/* Computation that stays off the library and out of memory: a busy loop
 * until the deadline (a vDSO clock read per 64 rounds). */
static volatile uint64_t g_sink;
static void compute_for(double secs)
{
  double end = now() + secs;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  do {
    for (int i = 0; i < 64; i++)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  } while (now() < end);
  g_sink = x;
}

/* ---- kernels ------------------------------------------------------------ */

void perf_pingpong_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                          struct bufs *b, struct perf_result *res)
{
  uint64_t size = cfg->sizes[k], warm = cfg->warmup[k];
  uint64_t n = warm + cfg->iters[k];
  uint8_t *sbuf = b->sbuf[0], *rbuf = b->rbuf[0];
  bool verify = cfg->verify;
  perf_req_t sreq, rreq;
  double t0 = now();

  if (c->rank == 0) {
    for (uint64_t i = 0; i < n; i++) {
      if (i == warm)
        t0 = now();
      if (verify)
        pat_fill(sbuf, size, pat_seed(size, i, 0));
      /* Send first: the pong cannot be matched before we next call into
       * the library, and by then its receive is posted. */
      c->isend(c, sbuf, size, 1, PERF_TAG_DATA, &sreq);
      c->irecv(c, rbuf, size, 1, PERF_TAG_DATA, &rreq);
      c->wait(c, &sreq, "send (ping)", UINT64_MAX);
      c->wait(c, &rreq, "receive (pong)", size);
      if (verify)
        pat_check(rbuf, size, pat_seed(size, i, 1), i);
      if (i >= warm && (size >= 65536 || (i & 255) == 0))
        perf_progress(size, i + 1 - warm, n - warm);
    }
    res->lat_us = (now() - t0) * 1e6 / (double)cfg->iters[k] / 2;
    return;
  }
  if (c->rank != 1)
    return;
  c->irecv(c, rbuf, size, 0, PERF_TAG_DATA, &rreq);
  for (uint64_t i = 0; i < n; i++) {
    c->wait(c, &rreq, "receive (ping)", size);
    if (verify) {
      pat_check(rbuf, size, pat_seed(size, i, 0), i);
      pat_fill(sbuf, size, pat_seed(size, i, 1));
    }
    c->isend(c, sbuf, size, 0, PERF_TAG_DATA, &sreq);
    if (i + 1 < n) /* posted before we next progress: the ping finds it */
      c->irecv(c, rbuf, size, 0, PERF_TAG_DATA, &rreq);
    c->wait(c, &sreq, "send (pong)", UINT64_MAX);
    if ((i & 255) == 0 || size >= 65536)
      perf_progress(size, i, n);
  }
}

void perf_bw_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                    struct bufs *b, struct perf_result *res)
{
  uint64_t size = cfg->sizes[k];
  uint32_t w = cfg->window;
  uint64_t warm = cfg->warmup[k] / w, n = warm + cfg->iters[k] / w;
  bool verify = cfg->verify;
  perf_req_t *reqs = b->reqs, ack;
  char ackbuf[8] = {0};
  double t0 = now();

  if (c->rank == 0) {
    for (uint64_t i = 0; i < n; i++) {
      if (i == warm)
        t0 = now();
      c->irecv(c, ackbuf, 0, 1, PERF_TAG_ACK, &ack);
      for (uint32_t j = 0; j < w; j++) {
        if (verify)
          pat_fill(b->sbuf[j], size, pat_seed(size, i * w + j, 0));
        c->isend(c, b->sbuf[j], size, 1, PERF_TAG_DATA, &reqs[j]);
      }
      for (uint32_t j = 0; j < w; j++)
        c->wait(c, &reqs[j], "send (stream)", UINT64_MAX);
      c->wait(c, &ack, "receive (window ack)", 0);
      if (i >= warm)
        perf_progress(size, (i + 1 - warm) * w, (n - warm) * w);
    }
    res->lat_us = (now() - t0) * 1e6 / (double)cfg->iters[k];
    return;
  }
  if (c->rank != 1)
    return;
  for (uint32_t j = 0; j < w; j++)
    c->irecv(c, b->rbuf[j], size, 0, PERF_TAG_DATA, &reqs[j]);
  for (uint64_t i = 0; i < n; i++) {
    for (uint32_t j = 0; j < w; j++) {
      c->wait(c, &reqs[j], "receive (stream)", size);
      if (verify)
        pat_check(b->rbuf[j], size, pat_seed(size, i * w + j, 0), i * w + j);
    }
    if (i + 1 < n) /* post the next window before acking this one */
      for (uint32_t j = 0; j < w; j++)
        c->irecv(c, b->rbuf[j], size, 0, PERF_TAG_DATA, &reqs[j]);
    c->isend(c, ackbuf, 0, 0, PERF_TAG_ACK, &ack);
    c->wait(c, &ack, "send (window ack)", UINT64_MAX);
    perf_progress(size, i, n);
  }
}

/* Direction tag of the verification pattern for src -> dst in alltoall. */
static int a2a_dir(const struct perf_config *cfg, int src, int dst)
{
  return 2 + src * (int)cfg->np + dst;
}

void perf_alltoall_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                          struct bufs *b, struct perf_result *res)
{
  uint64_t size = cfg->sizes[k], warm = cfg->warmup[k];
  uint64_t n = warm + cfg->iters[k];
  int np = c->size, me = c->rank;
  perf_req_t *reqs = b->reqs;
  double t0 = now();

  for (uint64_t i = 0; i < n; i++) {
    if (i == warm) {
      perf_barrier(c); /* start the timed part together */
      t0 = now();
    }
    /* Receives first, then sends; start with the next rank so that not
     * everybody sends to rank 0 at once. */
    for (int s = 1; s < np; s++) {
      int p = (me + np - s) % np;
      c->irecv(c, b->a2a_r + (size_t)p * size, size, p, PERF_TAG_DATA, &reqs[s - 1]);
    }
    for (int s = 1; s < np; s++) {
      int p = (me + s) % np;
      uint8_t *src = b->a2a_s + (size_t)p * size;
      if (cfg->verify)
        pat_fill(src, size, pat_seed(size, i, a2a_dir(cfg, me, p)));
      c->isend(c, src, size, p, PERF_TAG_DATA, &reqs[np - 2 + s]);
    }
    for (int s = 1; s < np; s++) {
      int p = (me + np - s) % np;
      c->wait(c, &reqs[s - 1], "receive (alltoall)", size);
      if (cfg->verify)
        pat_check(b->a2a_r + (size_t)p * size, size, pat_seed(size, i, a2a_dir(cfg, p, me)),
                  i);
    }
    for (int s = 1; s < np; s++)
      c->wait(c, &reqs[np - 2 + s], "send (alltoall)", UINT64_MAX);
    if (i >= warm && (size >= 65536 || (i & 255) == 0))
      perf_progress(size, i + 1 - warm, n - warm);
  }
  double mine = (now() - t0) * 1e6 / (double)cfg->iters[k];
  /* Rank 0 gathers every rank's mean: the exchange is done when the last
   * rank is done, so the headline is the slowest rank's mean. */
  if (me != 0) {
    perf_send_wait(c, &mine, sizeof mine, 0, PERF_TAG_RESULT, "send (alltoall time)");
    return;
  }
  res->min_us = res->max_us = mine;
  for (int p = 1; p < np; p++) {
    double t;
    perf_recv_wait(c, &t, sizeof t, p, PERF_TAG_RESULT, "receive (alltoall time)");
    res->min_us = t < res->min_us ? t : res->min_us;
    res->max_us = t > res->max_us ? t : res->max_us;
  }
  res->lat_us = res->max_us;
}

/* One overlap phase of n iterations; returns the mean time per iteration on
 * the computing side (`me` is 1 for the receiving side, 0 for the sending
 * side), computing `tc` seconds between post and wait (0: Tcopy alone). */
static double overlap_phase(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                            struct bufs *b, int me_side, double tc)
{
  uint64_t size = cfg->sizes[k], warm = cfg->warmup[k], n = warm + cfg->iters[k];
  perf_req_t data, ctl;
  char z[8] = {0};
  double t0 = now();

  for (uint64_t i = 0; i < n; i++) {
    if (i == warm)
      t0 = now();
    if (me_side == 1) {
      /* Receiving side computes: post the receive, tell the sender to go,
       * compute, then wait. The sender sends as soon as it hears "go". */
      if (c->rank == 1) {
        c->irecv(c, b->rbuf[0], size, 0, PERF_TAG_DATA, &data);
        c->isend(c, z, 0, 0, PERF_TAG_ACK, &ctl);
        if (tc > 0)
          compute_for(tc);
        c->wait(c, &ctl, "send (go)", UINT64_MAX);
        c->wait(c, &data, "receive (overlap)", size);
      } else {
        perf_recv_wait(c, z, 0, 1, PERF_TAG_ACK, "receive (go)");
        perf_send_wait(c, b->sbuf[0], size, 1, PERF_TAG_DATA, "send (overlap)");
      }
    } else {
      /* Sending side computes: post the send, compute, wait for it and for
       * the receiver's "got it". */
      if (c->rank == 0) {
        c->irecv(c, z, 0, 1, PERF_TAG_ACK, &ctl);
        c->isend(c, b->sbuf[0], size, 1, PERF_TAG_DATA, &data);
        if (tc > 0)
          compute_for(tc);
        c->wait(c, &data, "send (overlap)", UINT64_MAX);
        c->wait(c, &ctl, "receive (got it)", 0);
      } else {
        perf_recv_wait(c, b->rbuf[0], size, 0, PERF_TAG_DATA, "receive (overlap)");
        perf_send_wait(c, z, 0, 0, PERF_TAG_ACK, "send (got it)");
      }
    }
    perf_progress(size, i, n);
  }
  return (now() - t0) / (double)cfg->iters[k];
}

void perf_overlap_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                         struct bufs *b, struct perf_result *res)
{
  if (c->rank > 1)
    return;
  /* Receiving side: rank 1 measures, then tells rank 0. */
  double copy_r = overlap_phase(c, cfg, k, b, 1, 0);
  double bcast = copy_r;
  if (c->rank == 1)
    perf_send_wait(c, &bcast, sizeof bcast, 0, PERF_TAG_RESULT, "send (Tcopy)");
  else
    perf_recv_wait(c, &bcast, sizeof bcast, 1, PERF_TAG_RESULT, "receive (Tcopy)");
  double tc_r = cfg->compute_us ? cfg->compute_us * 1e-6 : 1.2 * bcast;
  double total_r = overlap_phase(c, cfg, k, b, 1, tc_r);
  double out[2] = {bcast, total_r};
  if (c->rank == 1)
    perf_send_wait(c, out, sizeof out, 0, PERF_TAG_RESULT, "send (overlap times)");
  else
    perf_recv_wait(c, out, sizeof out, 1, PERF_TAG_RESULT, "receive (overlap times)");

  /* Sending side: rank 0 measures. */
  double copy_s = overlap_phase(c, cfg, k, b, 0, 0);
  double tc_s = cfg->compute_us ? cfg->compute_us * 1e-6 : 1.2 * copy_s;
  double total_s = overlap_phase(c, cfg, k, b, 0, tc_s);
  if (c->rank != 0)
    return;
  res->lat_us = out[0] * 1e6;
  res->tc_us = tc_r * 1e6;
  res->tt_us = out[1] * 1e6;
  res->overlap = out[0] > 0 ? (out[0] + tc_r - out[1]) / out[0] : 0;
  res->copy_s_us = copy_s * 1e6;
  res->tt_s_us = total_s * 1e6;
  res->overlap_s = copy_s > 0 ? (copy_s + tc_s - total_s) / copy_s : 0;
}
