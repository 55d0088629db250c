/* SPDX-License-Identifier: MIT */
/* Counters (fi_cntr): a count of operations done and one of operations
 * failed, per endpoint event bound (FI_SEND, FI_RECV, FI_READ, FI_WRITE),
 * kept with atomics so that a read takes no lock. Progress is manual: a
 * read or a wait reaps the bound endpoints' finished requests first.
 * MPICH opens one per domain for RMA completions; fabtests count with
 * them. Remote events (FI_REMOTE_READ/WRITE, which need FI_RMA_EVENT) are
 * not offered. */
#include <stdlib.h>

#include "ofi/ofi_int.h"

#define CNTR(f) ((struct ofx_cntr *)(f))

static void progress(struct ofx_cntr *c) {
  pthread_mutex_lock(&c->lock);
  struct ofx_bound b = c->bound; /* progressed unlocked: an endpoint's lock comes before ours */
  pthread_mutex_unlock(&c->lock);
  ofx_bound_progress(&b);
}

uint64_t ofx_cntr_events(struct ofx_cntr *c) {
  progress(c);
  return __atomic_load_n(&c->value, __ATOMIC_ACQUIRE) + __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
}

void ofx_cntr_inc(struct ofx_cntr *c, int failed) {
  __atomic_add_fetch(failed ? &c->err : &c->value, 1, __ATOMIC_RELEASE);
}

static uint64_t cntr_read(struct fid_cntr *f) {
  progress(CNTR(f));
  return __atomic_load_n(&CNTR(f)->value, __ATOMIC_ACQUIRE);
}

static uint64_t cntr_readerr(struct fid_cntr *f) {
  progress(CNTR(f));
  return __atomic_load_n(&CNTR(f)->err, __ATOMIC_ACQUIRE);
}

static int cntr_add(struct fid_cntr *f, uint64_t v) {
  __atomic_add_fetch(&CNTR(f)->value, v, __ATOMIC_RELEASE);
  return 0;
}

static int cntr_set(struct fid_cntr *f, uint64_t v) {
  __atomic_store_n(&CNTR(f)->value, v, __ATOMIC_RELEASE);
  return 0;
}

static int cntr_adderr(struct fid_cntr *f, uint64_t v) {
  __atomic_add_fetch(&CNTR(f)->err, v, __ATOMIC_RELEASE);
  return 0;
}

static int cntr_seterr(struct fid_cntr *f, uint64_t v) {
  __atomic_store_n(&CNTR(f)->err, v, __ATOMIC_RELEASE);
  return 0;
}

/* Until the count reaches threshold (0), an error is counted
 * (-FI_EAVAIL), or timeout ms pass (-FI_ETIMEDOUT; < 0: none). */
static int cntr_wait(struct fid_cntr *f, uint64_t threshold, int timeout) {
  struct ofx_cntr *c = CNTR(f);
  uint64_t err0 = __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
  uint64_t end = timeout < 0 ? UINT64_MAX : ofx_now_ms() + (uint64_t)timeout;
  for (unsigned spin = 0;; spin++) {
    progress(c);
    if (__atomic_load_n(&c->value, __ATOMIC_ACQUIRE) >= threshold) return 0;
    if (__atomic_load_n(&c->err, __ATOMIC_ACQUIRE) != err0) return -FI_EAVAIL;
    if (ofx_now_ms() >= end) return -FI_ETIMEDOUT;
    if (spin > 1000) { /* the peer is slow: stop taking a core from it */
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

int ofx_cntr_bind_ep(struct ofx_cntr *c, struct ofx_ep *ep) {
  pthread_mutex_lock(&c->lock);
  int rc = ofx_bound_add(&c->bound, ep);
  pthread_mutex_unlock(&c->lock);
  return rc;
}

void ofx_cntr_unbind_ep(struct ofx_cntr *c, struct ofx_ep *ep) {
  pthread_mutex_lock(&c->lock);
  ofx_bound_del(&c->bound, ep);
  pthread_mutex_unlock(&c->lock);
}

static int cntr_close(struct fid *fid) {
  struct ofx_cntr *c = CNTR(fid);
  if (c->bound.n) return -FI_EBUSY;
  pthread_mutex_destroy(&c->lock);
  free(c);
  return 0;
}

static struct fi_ops cntr_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = cntr_close,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static struct fi_ops_cntr cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = cntr_read,
    .readerr = cntr_readerr,
    .add = cntr_add,
    .set = cntr_set,
    .wait = cntr_wait,
    .adderr = cntr_adderr,
    .seterr = cntr_seterr,
};

int ofx_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **out, void *context) {
  (void)domain;
  if (attr && attr->events != FI_CNTR_EVENTS_COMP) return -FI_ENOSYS;
  if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_YIELD)
    return -FI_ENOSYS; /* no fd to wait on: fi_cntr_wait polls */
  struct ofx_cntr *c = calloc(1, sizeof *c);
  if (!c) return -FI_ENOMEM;
  pthread_mutex_init(&c->lock, NULL);
  c->cntr.fid.fclass = FI_CLASS_CNTR;
  c->cntr.fid.context = context;
  c->cntr.fid.ops = &cntr_fid_ops;
  c->cntr.ops = &cntr_ops;
  *out = &c->cntr;
  return 0;
}
