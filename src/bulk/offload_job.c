/* SPDX-License-Identifier: MIT */
/*
 * The jobs the offload channels run (offload.c runs them): a rendezvous
 * transfer's engine step (offload_start, polled and detached by the
 * endpoint), or any step of the asynchronous copy API (offload_submit).
 * Each is allocated here, filled, posted, and freed once its channel let
 * go of it (`held`). Also the engine table's entry for offload.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "bulk/offload_int.h"
#include "base/config.h"
#include "platform/sys.h"

int offload_start(struct bulk_xfer *x) {
  int (*step)(struct bulk_xfer *, uint64_t *, uint64_t *) =
      x->send ? x->engine->offload_send_step : x->engine->offload_step;
  if (!step) return -EINVAL;
  struct offload_job *j = sys_zalloc(sizeof *j);
  if (!j) return -ENOMEM;
  j->x = x;
  j->step = step;
  j->wake = x->env->desc;
  j->done = x->done;
  int rc = offload_post(j);
  if (rc < 0) {
    free(j);
    return rc;
  }
  x->job = j;
  x->offloaded = 1;
  x->env->counters[CNT_BULK_OFFLOAD]++;
  return 0;
}

int offload_submit(int (*fn)(void *arg, uint64_t *done, uint64_t *moved), void *arg, struct offload_job **out) {
  struct offload_job *j = sys_zalloc(sizeof *j);
  if (!j) return -ENOMEM;
  j->fn = fn;
  j->arg = arg;
  int rc = offload_post(j);
  if (rc < 0) {
    free(j);
    return rc;
  }
  *out = j;
  return 0;
}

int offload_job_status(struct offload_job *j, uint64_t *done) {
  int st = __atomic_load_n(&j->status, __ATOMIC_ACQUIRE);
  if (done) *done = __atomic_load_n(&j->done, __ATOMIC_RELAXED);
  return st == JOB_RUNNING ? BULK_MORE : st == JOB_DONE ? BULK_DONE : st;
}

void offload_job_sleep(struct offload_job *j, int64_t ns) {
  sys_futex_wait((uint32_t *)&j->status, JOB_RUNNING, ns);
}

void offload_job_free(struct offload_job *j) {
  if (!j) return;
  while (__atomic_load_n(&j->held, __ATOMIC_ACQUIRE)) sched_yield();
  free(j);
}

/* Wait until the channel has let go of j, then free it; adds what the
 * channel copied to the engine's byte counter. */
static void release(struct bulk_xfer *x) {
  struct offload_job *j = x->job;
  while (__atomic_load_n(&j->held, __ATOMIC_ACQUIRE)) sched_yield();
  x->env->counters[CNT_BULK_OFFLOAD_BYTES] += j->bytes;
  free(j);
  x->job = NULL;
}

int offload_poll(struct bulk_xfer *x) {
  int st = __atomic_load_n(&x->job->status, __ATOMIC_ACQUIRE);
  if (st == JOB_RUNNING) return BULK_MORE;
  uint64_t done = x->job->done;
  release(x);
  if (st < 0) return st;
  x->done = done;
  return BULK_DONE;
}

void offload_detach(struct bulk_xfer *x) {
  struct offload_job *j = x->job;
  if (!j) return;
  /* Not started: off the queue (its channel may be the one calling us,
   * from its watch, and would never get to it). */
  offload_unqueue(j);
  __atomic_store_n(&j->cancel, 1, __ATOMIC_RELEASE);
  release(x);
}

static int offload_usable(const struct bulk_peer *p, const struct bulk_conn *c) {
  return fmx_cfg.offload_channels > 0 && strcmp(fmx_cfg.offload, "off") != 0 && !p->is_self;
}

/* A table entry so it can be forced (FMX_BULK=offload), measured and
 * costed (FMX_COST_OFFLOAD) like the others; bulk_select turns it into cma
 * (ring where cma is refused) run by a channel. It never moves bytes itself. */
const struct fmx_bulk_engine bulk_offload = {
    .name = "offload",
    .cost_cfg = &fmx_cfg.cost_offload,
    .cost_var = "FMX_COST_OFFLOAD",
    .probe = offload_probe,
    .usable = offload_usable,
};
