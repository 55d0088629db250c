/* SPDX-License-Identifier: MIT */
/* Completion queues: a ring of completions and a list of errors, filled
 * by the endpoints bound to the queue when a read progresses them
 * (manual progress), handed out in the format the queue was opened with.
 * A read that finds nothing gives the core away when ranks outnumber
 * cores (fmx_idle: MPIs poll fi_cq_read, and Open MPI's blocking send
 * does so without ever yielding; docs/progress.md). fi_cq_sread sleeps in
 * fmx (fmx_peek) when one endpoint is bound. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ofi/ofi_int.h"

static size_t entry_size(enum fi_cq_format f) {
  switch (f) {
    case FI_CQ_FORMAT_CONTEXT: return sizeof(struct fi_cq_entry);
    case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
    default: return sizeof(struct fi_cq_tagged_entry);
  }
}

/* Write e at out in format f. */
static void put_entry(enum fi_cq_format f, void *out, const struct fi_cq_tagged_entry *e) {
  switch (f) {
    case FI_CQ_FORMAT_CONTEXT:
      ((struct fi_cq_entry *)out)->op_context = e->op_context;
      return;
    case FI_CQ_FORMAT_MSG: {
      struct fi_cq_msg_entry *m = out;
      m->op_context = e->op_context;
      m->flags = e->flags;
      m->len = e->len;
      return;
    }
    case FI_CQ_FORMAT_DATA: {
      struct fi_cq_data_entry *d = out;
      d->op_context = e->op_context;
      d->flags = e->flags;
      d->len = e->len;
      d->buf = e->buf;
      d->data = e->data;
      return;
    }
    default:
      *(struct fi_cq_tagged_entry *)out = *e;
  }
}

/* Under the lock, after count or err changed. */
static void mark(struct ofx_cq *cq) { __atomic_store_n(&cq->avail, cq->count || cq->err, __ATOMIC_RELEASE); }

void ofx_cq_push(struct ofx_cq *cq, const struct fi_cq_tagged_entry *e, struct ofx_av *av,
                 const fmx_endpoint_addr_t *src) {
  OFX_LOCK(cq);
  if (cq->count == cq->cap) { /* grow: completions are never dropped */
    size_t cap = cq->cap ? 2 * cq->cap : 256; /* a power of two: an index wraps with a mask, not a
                                                 division (which took 9% of Open MPI's 8 B ping-pong) */
    struct ofx_cqe *r = malloc(cap * sizeof *r);
    if (!r) { /* keep the oldest ones: the error list says so */
      OFX_UNLOCK(cq);
      ofx_cq_push_err(cq, e, FI_ENOMEM, FMX_NO_SYSTEM_RESOURCES, 0);
      return;
    }
    for (size_t i = 0; i < cq->count; i++) r[i] = cq->ring[(cq->head + i) & (cq->cap - 1)];
    free(cq->ring);
    cq->ring = r;
    cq->cap = cap;
    cq->head = 0;
  }
  struct ofx_cqe *slot = &cq->ring[(cq->head + cq->count) & (cq->cap - 1)];
  slot->e = *e;
  slot->av = src ? av : NULL;
  if (src) slot->src = *src;
  cq->count++;
  mark(cq);
  OFX_UNLOCK(cq);
}

void ofx_cq_push_err(struct ofx_cq *cq, const struct fi_cq_tagged_entry *e, int err, int prov_errno, size_t olen) {
  struct ofx_err *x = calloc(1, sizeof *x);
  if (!x) return; /* nothing left to report it with */
  x->e = (struct fi_cq_err_entry){.op_context = e->op_context, .flags = e->flags, .len = e->len, .buf = e->buf,
                                  .data = e->data, .tag = e->tag, .olen = olen, .err = err,
                                  .prov_errno = prov_errno};
  OFX_LOCK(cq);
  *cq->err_tail = x;
  cq->err_tail = &x->next;
  mark(cq);
  OFX_UNLOCK(cq);
}

/* Take up to count completions; -FI_EAVAIL when an error waits first. */
static ssize_t take(struct ofx_cq *cq, void *buf, size_t count, fi_addr_t *src) {
  size_t es = entry_size(cq->format), n = 0;
  OFX_LOCK(cq);
  if (cq->err && !cq->count) {
    OFX_UNLOCK(cq);
    return -FI_EAVAIL;
  }
  for (; n < count && cq->count; n++) {
    struct ofx_cqe *c = &cq->ring[cq->head];
    put_entry(cq->format, (char *)buf + n * es, &c->e);
    if (src) src[n] = c->av ? ofx_av_reverse(c->av, c->src) : FI_ADDR_NOTAVAIL;
    cq->head = (cq->head + 1) & (cq->cap - 1);
    cq->count--;
  }
  mark(cq);
  OFX_UNLOCK(cq);
  return n ? (ssize_t)n : -FI_EAGAIN;
}

static int progress(struct ofx_cq *cq) { return ofx_bound_progress(&cq->bound); }

static int has_entry(struct ofx_cq *cq) { return __atomic_load_n(&cq->avail, __ATOMIC_ACQUIRE); }

int ofx_cq_ready(struct ofx_cq *cq) {
  if (has_entry(cq)) return 1;
  progress(cq);
  return has_entry(cq);
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src) {
  struct ofx_cq *cq = (struct ofx_cq *)fcq;
  if (count == 0) return 0;
  if (!buf) return -FI_EINVAL;
  if (has_entry(cq)) {
    ssize_t n = take(cq, buf, count, src);
    if (n != -FI_EAGAIN) return n;
  }
  progress(cq);
  if (has_entry(cq)) return take(cq, buf, count, src);
  /* Nothing: an idle turn of the caller's polling loop (one yield at most,
   * when crowded: the endpoints of one queue share this host). */
  if (cq->bound.n) fmx_idle(cq->bound.ep[0]->fx);
  return -FI_EAGAIN;
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count) { return cq_readfrom(cq, buf, count, NULL); }

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags) {
  (void)flags;
  struct ofx_cq *cq = (struct ofx_cq *)fcq;
  if (!buf) return -FI_EINVAL;
  OFX_LOCK(cq);
  struct ofx_err *x = cq->err;
  if (x) {
    cq->err = x->next;
    if (!cq->err) cq->err_tail = &cq->err;
  }
  mark(cq);
  OFX_UNLOCK(cq);
  if (!x) return -FI_EAGAIN;
  /* Fields up to err_data_size: those of every API version fmx accepts. */
  buf->op_context = x->e.op_context;
  buf->flags = x->e.flags;
  buf->len = x->e.len;
  buf->buf = x->e.buf;
  buf->data = x->e.data;
  buf->tag = x->e.tag;
  buf->olen = x->e.olen;
  buf->err = x->e.err;
  buf->prov_errno = x->e.prov_errno;
  buf->err_data = NULL;
  buf->err_data_size = 0;
  free(x);
  return 1;
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src, const void *cond,
                            int timeout) {
  (void)cond;
  struct ofx_cq *cq = (struct ofx_cq *)fcq;
  uint64_t end = timeout < 0 ? UINT64_MAX : ofx_now_ms() + (uint64_t)timeout;
  for (;;) {
    ssize_t n = cq_readfrom(fcq, buf, count, src);
    if (n != -FI_EAGAIN) return n;
    if (__atomic_exchange_n(&cq->signaled, 0, __ATOMIC_ACQ_REL)) return -FI_EAGAIN;
    uint64_t now = ofx_now_ms();
    if (now >= end) return -FI_EAGAIN;
    uint64_t slice = end - now < 100 ? end - now : 100;
    if (cq->bound.n == 1) { /* sleep in fmx until some request of its completes */
      fmx_request_t r;
      uint32_t res;
      fmx_peek(cq->bound.ep[0]->fx, (uint32_t)slice, &r, &res);
    } else {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond, int timeout) {
  return cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fcq) {
  struct ofx_cq *cq = (struct ofx_cq *)fcq;
  __atomic_store_n(&cq->signaled, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < cq->bound.n; i++) fmx_wakeup(cq->bound.ep[i]->fx);
  return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf, size_t len) {
  (void)cq, (void)err_data;
  return ofx_strerror(prov_errno, buf, len);
}

int ofx_cq_bind_ep(struct ofx_cq *cq, struct ofx_ep *ep) { return ofx_bound_add(&cq->bound, ep); }

void ofx_cq_unbind_ep(struct ofx_cq *cq, struct ofx_ep *ep) { ofx_bound_del(&cq->bound, ep); }

static int cq_close(struct fid *fid) {
  struct ofx_cq *cq = (struct ofx_cq *)fid;
  if (cq->bound.n) return -FI_EBUSY;
  while (cq->err) {
    struct ofx_err *x = cq->err;
    cq->err = x->next;
    free(x);
  }
  pthread_mutex_destroy(&cq->lock);
  free(cq->ring);
  free(cq);
  return 0;
}

static struct fi_ops cq_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

int ofx_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out, void *context) {
  if (!attr) return -FI_EINVAL;
  if (attr->format > FI_CQ_FORMAT_TAGGED) return -FI_ENOSYS;
  if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_YIELD)
    return -FI_ENOSYS; /* no fd or set to wait on: fi_cq_sread sleeps in fmx */
  if (attr->wait_cond != FI_CQ_COND_NONE) return -FI_ENOSYS;
  struct ofx_cq *cq = calloc(1, sizeof *cq);
  if (!cq) return -FI_ENOMEM;
  pthread_mutex_init(&cq->lock, NULL);
  cq->serial = ((struct ofx_domain *)domain)->serial;
  cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_TAGGED : attr->format;
  cq->err_tail = &cq->err;
  cq->cq.fid.fclass = FI_CLASS_CQ;
  cq->cq.fid.context = context;
  cq->cq.fid.ops = &cq_fid_ops;
  cq->cq.ops = &cq_ops;
  *out = &cq->cq;
  return 0;
}
