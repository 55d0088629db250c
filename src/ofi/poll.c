/* SPDX-License-Identifier: MIT */
/* Poll sets (fi_poll): CQs and counters polled together. fi_poll makes
 * progress on each member and hands back the contexts of those with
 * something new: a CQ holding a completion or an error, a counter whose
 * count or error count moved since the last fi_poll. */
#include <stdlib.h>

#include "ofi/ofi_int.h"

#define OFX_POLL_MAX 64

struct ofx_poll {
  struct fid_poll poll;
  pthread_mutex_t lock;
  struct fid *m[OFX_POLL_MAX];
  uint64_t seen[OFX_POLL_MAX]; /* counters: count + errors at the last report */
  int n;
};

#define POLL(f) ((struct ofx_poll *)(f))

static int poll_poll(struct fid_poll *f, void **context, int count) {
  struct ofx_poll *p = POLL(f);
  if (count < 0 || (count && !context)) return -FI_EINVAL;
  int k = 0;
  pthread_mutex_lock(&p->lock);
  for (int i = 0; i < p->n && k < count; i++) {
    struct fid *m = p->m[i];
    if (m->fclass == FI_CLASS_CQ) {
      if (ofx_cq_ready((struct ofx_cq *)m)) context[k++] = m->context;
    } else {
      uint64_t v = ofx_cntr_events((struct ofx_cntr *)m);
      if (v != p->seen[i]) {
        p->seen[i] = v;
        context[k++] = m->context;
      }
    }
  }
  pthread_mutex_unlock(&p->lock);
  return k;
}

static int poll_add(struct fid_poll *f, struct fid *event_fid, uint64_t flags) {
  (void)flags;
  struct ofx_poll *p = POLL(f);
  if (!event_fid || (event_fid->fclass != FI_CLASS_CQ && event_fid->fclass != FI_CLASS_CNTR)) return -FI_EINVAL;
  pthread_mutex_lock(&p->lock);
  int rc = 0;
  if (p->n == OFX_POLL_MAX) {
    rc = -FI_ENOSPC;
  } else {
    p->seen[p->n] = 0;
    p->m[p->n++] = event_fid;
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

static int poll_del(struct fid_poll *f, struct fid *event_fid, uint64_t flags) {
  (void)flags;
  struct ofx_poll *p = POLL(f);
  int rc = -FI_EINVAL;
  pthread_mutex_lock(&p->lock);
  for (int i = 0; i < p->n; i++)
    if (p->m[i] == event_fid) {
      p->n--;
      p->m[i] = p->m[p->n];
      p->seen[i] = p->seen[p->n];
      rc = 0;
      break;
    }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

static int poll_close(struct fid *fid) {
  pthread_mutex_destroy(&POLL(fid)->lock);
  free(fid);
  return 0;
}

static struct fi_ops poll_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = poll_close,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static struct fi_ops_poll poll_ops = {
    .size = sizeof(struct fi_ops_poll),
    .poll = poll_poll,
    .poll_add = poll_add,
    .poll_del = poll_del,
};

int ofx_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **out) {
  (void)domain;
  if (attr && attr->flags) return -FI_EINVAL;
  struct ofx_poll *p = calloc(1, sizeof *p);
  if (!p) return -FI_ENOMEM;
  pthread_mutex_init(&p->lock, NULL);
  p->poll.fid.fclass = FI_CLASS_POLL;
  p->poll.fid.ops = &poll_fid_ops;
  p->poll.ops = &poll_ops;
  *out = &p->poll;
  return 0;
}
