/* SPDX-License-Identifier: MIT */
/* The provider through libfabric's own API, two endpoints of one process
 * (run with FI_PROVIDER_PATH at build/ofi): tagged and untagged messages
 * with remote CQ data and FI_SOURCE, directed receive, inject, truncation
 * (FI_ETRUNC), FI_PEEK (FI_ENOMSG when nothing), FI_PEEK|FI_CLAIM then
 * FI_CLAIM, FI_DISCARD, cancel (FI_ECANCELED), and bad input: an unknown
 * fi_addr, an oversized inject, a name with a wrong key (another job's
 * endpoint), MSG endpoints refused. Then RMA in a domain of its own:
 * fi_read and fi_write of a registration, inject write, and refusals
 * (read-only: FI_EACCES; a wrong or closed key, another job's cookie:
 * FI_EKEYREJECTED; past the end: FI_EINVAL) with nothing moved; a
 * multi-receive buffer; counters; a poll set. Prints "fi_provider_check: N checks
 * passed" or fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

static int checks, failed;
#define CHECK(c)                                                                  \
  do {                                                                            \
    checks++;                                                                     \
    if (!(c)) {                                                                   \
      failed++;                                                                   \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);       \
    }                                                                             \
  } while (0)
#define CHECK_RC(expr, want)                                                      \
  do {                                                                            \
    long _r = (long)(expr);                                                       \
    checks++;                                                                     \
    if (_r != (long)(want)) {                                                     \
      failed++;                                                                   \
      fprintf(stderr, "%s:%d: %s = %ld (%s), want %ld\n", __FILE__, __LINE__, #expr, _r, \
              fi_strerror((int)-_r), (long)(want));                               \
    }                                                                             \
  } while (0)

struct side {
  struct fid_ep *ep;
  struct fid_cq *cq;
  struct fid_av *av;
  fi_addr_t peer; /* the other side */
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fi_info *info;

static void open_side(struct side *s) {
  struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC};
  struct fi_av_attr ava = {.type = FI_AV_TABLE};
  CHECK_RC(fi_endpoint(domain, info, &s->ep, NULL), 0);
  CHECK_RC(fi_cq_open(domain, &cqa, &s->cq, NULL), 0);
  CHECK_RC(fi_av_open(domain, &ava, &s->av, NULL), 0);
  CHECK_RC(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV), 0);
  CHECK_RC(fi_ep_bind(s->ep, &s->av->fid, 0), 0);
  CHECK_RC(fi_enable(s->ep), 0);
}

/* One completion (or error, as -err) from cq, polling both sides. */
static long one(struct side *s, struct side *other, struct fi_cq_tagged_entry *e, fi_addr_t *src,
                struct fi_cq_err_entry *err) {
  for (long i = 0; i < 20000000; i++) {
    ssize_t n = fi_cq_readfrom(s->cq, e, 1, src);
    if (n == 1) return 0;
    if (n == -FI_EAVAIL) {
      CHECK_RC(fi_cq_readerr(s->cq, err, 0), 1);
      return -err->err;
    }
    struct fi_cq_tagged_entry x;
    if (other && fi_cq_read(other->cq, &x, 1) == 1) { /* the other side's sends complete */
    }
  }
  fprintf(stderr, "no completion\n");
  exit(1);
}

static void close_side(struct side *s) {
  fi_close(&s->ep->fid);
  fi_close(&s->cq->fid);
  fi_close(&s->av->fid);
}

/* a's read or write completes (0) or fails (-err), nothing else. */
static long rma_done(struct side *a, struct side *b, void *ctx, uint64_t flags) {
  struct fi_cq_tagged_entry e;
  struct fi_cq_err_entry err;
  long rc = one(a, b, &e, NULL, &err);
  CHECK((rc ? err.op_context : e.op_context) == ctx);
  if (!rc) CHECK((e.flags & (FI_RMA | FI_READ | FI_WRITE)) == (FI_RMA | flags));
  return rc;
}

static void rma_checks(void) {
  struct fi_info *hints = fi_allocinfo(), *none = NULL;
  hints->caps = FI_TAGGED | FI_RMA;
  hints->ep_attr->type = FI_EP_RDM;
  hints->fabric_attr->prov_name = strdup("fmx");
  hints->domain_attr->mr_mode = 0; /* keys of the application's choosing: not ours */
  CHECK_RC(fi_getinfo(fi_version(), NULL, NULL, 0, hints, &none), -FI_ENODATA);
  hints->domain_attr->mr_mode = FI_MR_PROV_KEY;
  CHECK_RC(fi_getinfo(fi_version(), NULL, NULL, 0, hints, &info), 0);
  fi_freeinfo(hints);
  if (!info) return;
  CHECK((info->caps & (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)) ==
        (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE));
  CHECK(info->domain_attr->mr_mode == FI_MR_PROV_KEY);
  CHECK_RC(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
  CHECK_RC(fi_domain(fabric, info, &domain, NULL), 0);
  struct side a, b;
  open_side(&a);
  open_side(&b);
  char nb[64];
  size_t lb = sizeof nb;
  CHECK_RC(fi_getname(&b.ep->fid, nb, &lb), 0);
  CHECK_RC(fi_av_insert(a.av, nb, 1, &a.peer, 0, NULL), 1);
  enum { N = 1 << 20 };
  unsigned char *reg = malloc(N), *ro = malloc(N), *mine = malloc(N);
  for (int i = 0; i < N; i++) reg[i] = ro[i] = (unsigned char)(i * 7 + 1);
  struct fid_mr *mr, *mro, *bad;
  CHECK_RC(fi_mr_reg(domain, reg, N, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL), 0);
  CHECK_RC(fi_mr_reg(domain, ro, N, FI_REMOTE_READ, 0, 0, 0, &mro, NULL), 0);
  CHECK_RC(fi_mr_reg(domain, ro, N, FI_REMOTE_READ, 4096, 0, 0, &bad, NULL), -FI_EINVAL); /* offsets: none */
  uint64_t key = fi_mr_key(mr), rokey = fi_mr_key(mro);
  CHECK(key != rokey && key && rokey);
  /* Reads: small, across the region, the whole. */
  const size_t at[][2] = {{100, 1000}, {4000, 300000}, {0, N}};
  for (int k = 0; k < 3; k++) {
    memset(mine, 0, N);
    CHECK_RC(fi_read(a.ep, mine, at[k][1], NULL, a.peer, at[k][0], key, (void *)(uintptr_t)(10 + k)), 0);
    CHECK_RC(rma_done(&a, &b, (void *)(uintptr_t)(10 + k), FI_READ), 0);
    CHECK(memcmp(mine, reg + at[k][0], at[k][1]) == 0);
  }
  /* A write, then an inject write, read back. */
  memset(mine, 0xab, N);
  CHECK_RC(fi_write(a.ep, mine, 500000, NULL, a.peer, 2000, key, (void *)20), 0);
  CHECK_RC(rma_done(&a, &b, (void *)20, FI_WRITE), 0);
  CHECK(reg[1999] == (unsigned char)(1999 * 7 + 1) && reg[2000] == 0xab && reg[501999] == 0xab &&
        reg[502000] == (unsigned char)(502000 * 7 + 1));
  unsigned char small[16] = "injected bytes!";
  CHECK_RC(fi_inject_write(a.ep, small, sizeof small, a.peer, 10, key), 0);
  memset(small, 0, sizeof small); /* the caller's buffer is free at once */
  /* No completion tells when it landed (no read-after-write order is
   * offered, FI_ORDER_SAS only): read until it shows, a bounded number
   * of times. */
  int seen = 0;
  for (int tries = 0; tries < 1000 && !seen; tries++) {
    memset(mine, 0, 16);
    CHECK_RC(fi_read(a.ep, mine, 16, NULL, a.peer, 10, key, (void *)21), 0);
    CHECK_RC(rma_done(&a, &b, (void *)21, FI_READ), 0);
    seen = memcmp(mine, "injected bytes!", 16) == 0;
  }
  CHECK(seen);
  /* Refusals: nothing moves. */
  memset(mine, 0xcd, N);
  CHECK_RC(fi_write(a.ep, mine, 64, NULL, a.peer, 0, rokey, (void *)30), 0);
  CHECK_RC(rma_done(&a, &b, (void *)30, FI_WRITE), -FI_EACCES);
  CHECK_RC(fi_read(a.ep, mine, 64, NULL, a.peer, 0, key ^ 0x40, (void *)31), 0);
  CHECK_RC(rma_done(&a, &b, (void *)31, FI_READ), -FI_EKEYREJECTED);
  CHECK_RC(fi_read(a.ep, mine, 64, NULL, a.peer, N - 10, key, (void *)32), 0);
  CHECK_RC(rma_done(&a, &b, (void *)32, FI_READ), -FI_EINVAL);
  CHECK(mine[0] == 0xcd && mine[63] == 0xcd && ro[0] == 1);
  fi_close(&mro->fid);
  CHECK_RC(fi_read(a.ep, mine, 64, NULL, a.peer, 0, rokey, (void *)33), 0); /* closed: revoked */
  CHECK_RC(rma_done(&a, &b, (void *)33, FI_READ), -FI_EKEYREJECTED);
  fi_close(&mr->fid);
  close_side(&a);
  close_side(&b);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  free(reg);
  free(ro);
  free(mine);
}

/* Counters: c counts its sends and receives, and their failures; b, its
 * peer, answers. */
static void cntr_checks(struct side *b, const char *nb, size_t lb) {
  struct side c;
  struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
  struct fid_cntr *cnt;
  struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED};
  struct fi_av_attr ava = {.type = FI_AV_TABLE};
  CHECK_RC(fi_cntr_open(domain, &ca, &cnt, NULL), 0);
  CHECK_RC(fi_endpoint(domain, info, &c.ep, NULL), 0);
  CHECK_RC(fi_cq_open(domain, &cqa, &c.cq, NULL), 0);
  CHECK_RC(fi_av_open(domain, &ava, &c.av, NULL), 0);
  CHECK_RC(fi_ep_bind(c.ep, &c.cq->fid, FI_TRANSMIT | FI_RECV), 0);
  CHECK_RC(fi_ep_bind(c.ep, &c.av->fid, 0), 0);
  CHECK_RC(fi_ep_bind(c.ep, &cnt->fid, FI_REMOTE_WRITE), -FI_ENOSYS); /* no FI_RMA_EVENT */
  CHECK_RC(fi_ep_bind(c.ep, &cnt->fid, 0), -FI_EBADFLAGS);
  CHECK_RC(fi_ep_bind(c.ep, &cnt->fid, FI_SEND | FI_RECV), 0);
  CHECK_RC(fi_enable(c.ep), 0);
  CHECK_RC(fi_av_insert(c.av, nb, 1, &c.peer, 0, NULL), 1);
  char cn[64];
  size_t lc = sizeof cn;
  CHECK_RC(fi_getname(&c.ep->fid, cn, &lc), 0);
  fi_addr_t b_to_c;
  CHECK_RC(fi_av_insert(b->av, cn, 1, &b_to_c, 0, NULL), 1);
  (void)lb;
  char buf[64] = "counted", in[64];
  struct fi_cq_tagged_entry e;
  struct fi_cq_err_entry err;
  CHECK(fi_cntr_read(cnt) == 0);
  /* A poll set of c's CQ and counter: nothing, then both after a send. */
  struct fid_poll *ps;
  struct fi_poll_attr pa = {0};
  void *pctx[4];
  CHECK_RC(fi_poll_open(domain, &pa, &ps), 0);
  CHECK_RC(fi_poll_add(ps, &c.cq->fid, 0), 0);
  CHECK_RC(fi_poll_add(ps, &cnt->fid, 0), 0);
  CHECK_RC(fi_poll(ps, pctx, 4), 0);
  CHECK_RC(fi_tsend(c.ep, buf, 8, NULL, c.peer, 23, (void *)30), 0);
  long np = 0;
  for (int i = 0; i < 100000 && np < 2; i++) {
    long r = fi_poll(ps, pctx + np, 4 - (int)np);
    if (r == 1 && np == 1 && pctx[1] == pctx[0]) continue; /* the CQ again, not yet read */
    np += r;
  }
  CHECK(np == 2);
  CHECK_RC(fi_cq_read(c.cq, &e, 1), 1);
  CHECK(e.op_context == (void *)30);
  CHECK_RC(fi_poll(ps, pctx, 4), 0); /* the counter reported once, the CQ read */
  CHECK_RC(fi_poll_del(ps, &cnt->fid, 0), 0);
  CHECK_RC(fi_poll_del(ps, &cnt->fid, 0), -FI_EINVAL);
  CHECK_RC(fi_poll_add(ps, &c.ep->fid, 0), -FI_EINVAL); /* CQs and counters only */
  CHECK_RC(fi_close(&ps->fid), 0);
  CHECK_RC(fi_trecv(b->ep, in, sizeof in, NULL, FI_ADDR_UNSPEC, 23, 0, (void *)36), 0);
  CHECK_RC(one(b, &c, &e, NULL, &err), 0);
  CHECK_RC(fi_cntr_set(cnt, 0), 0);
  /* An inject (no completion) and a send: both counted. */
  CHECK_RC(fi_tinject(c.ep, buf, 8, c.peer, 21), 0);
  CHECK_RC(fi_tsend(c.ep, buf, 8, NULL, c.peer, 21, (void *)31), 0);
  CHECK_RC(fi_cntr_wait(cnt, 2, 5000), 0);
  CHECK(fi_cntr_read(cnt) == 2 && fi_cntr_readerr(cnt) == 0);
  CHECK_RC(fi_trecv(b->ep, in, sizeof in, NULL, FI_ADDR_UNSPEC, 21, 0, (void *)32), 0);
  CHECK_RC(one(b, &c, &e, NULL, &err), 0);
  CHECK_RC(fi_trecv(b->ep, in, sizeof in, NULL, FI_ADDR_UNSPEC, 21, 0, (void *)33), 0);
  CHECK_RC(one(b, &c, &e, NULL, &err), 0);
  /* A receive cut short: an error counted, and fi_cntr_wait says so. */
  CHECK_RC(fi_trecv(c.ep, in, 2, NULL, FI_ADDR_UNSPEC, 22, 0, (void *)34), 0);
  CHECK_RC(fi_tsend(b->ep, buf, 8, NULL, b_to_c, 22, (void *)35), 0);
  CHECK_RC(fi_cntr_wait(cnt, 10, 5000), -FI_EAVAIL);
  CHECK(fi_cntr_readerr(cnt) == 1 && fi_cntr_read(cnt) == 2);
  CHECK_RC(one(b, &c, &e, NULL, &err), 0);
  CHECK_RC(fi_cq_readerr(c.cq, &err, 0), 1);
  CHECK(err.err == FI_ETRUNC);
  /* Nothing more comes: a wait times out. */
  CHECK_RC(fi_cntr_wait(cnt, 4, 10), -FI_ETIMEDOUT);
  CHECK_RC(fi_cntr_set(cnt, 100), 0);
  CHECK_RC(fi_cntr_add(cnt, 5), 0);
  CHECK(fi_cntr_read(cnt) == 105);
  CHECK_RC(fi_cntr_seterr(cnt, 0), 0);
  CHECK(fi_cntr_readerr(cnt) == 0);
  CHECK_RC(fi_close(&cnt->fid), -FI_EBUSY); /* still bound */
  fi_close(&c.ep->fid);
  CHECK_RC(fi_close(&cnt->fid), 0);
  fi_close(&c.cq->fid);
  fi_close(&c.av->fid);
}

/* argv[1] "domain": the application serializes its calls on the domain
 * (FI_THREAD_DOMAIN, as Open MPI asks): the provider takes no locks, and
 * every check must pass just the same. */
int main(int argc, char **argv) {
  struct fi_info *hints = fi_allocinfo();
  int serial = argc > 1 && strcmp(argv[1], "domain") == 0;
  if (serial) hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE;
  hints->ep_attr->type = FI_EP_RDM;
  hints->fabric_attr->prov_name = strdup("fmx");
  CHECK_RC(fi_getinfo(fi_version(), NULL, NULL, 0, hints, &info), 0);
  if (!info) return 1;
  CHECK(strcmp(info->fabric_attr->prov_name, "fmx") == 0);
  CHECK(info->domain_attr->threading == (serial ? FI_THREAD_DOMAIN : FI_THREAD_SAFE));
  CHECK(info->tx_attr->inject_size >= 64);
  CHECK(info->ep_attr->mem_tag_format >> 63);
  /* MSG endpoints are not ours: no rxm on top of fmx. */
  struct fi_info *none = NULL;
  hints->ep_attr->type = FI_EP_MSG;
  CHECK_RC(fi_getinfo(fi_version(), NULL, NULL, 0, hints, &none), -FI_ENODATA);
  fi_freeinfo(hints);

  CHECK_RC(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
  CHECK_RC(fi_domain(fabric, info, &domain, NULL), 0);
  struct side a, b;
  open_side(&a);
  open_side(&b);
  char na[64], nb[64];
  size_t la = sizeof na, lb = sizeof nb, tiny = 4;
  CHECK_RC(fi_getname(&a.ep->fid, na, &la), 0);
  CHECK_RC(fi_getname(&b.ep->fid, nb, &lb), 0);
  CHECK_RC(fi_getname(&b.ep->fid, nb, &tiny), -FI_ETOOSMALL);
  CHECK(la == lb);
  CHECK_RC(fi_av_insert(a.av, nb, 1, &a.peer, 0, NULL), 1);
  CHECK_RC(fi_av_insert(b.av, na, 1, &b.peer, 0, NULL), 1);

  struct fi_cq_tagged_entry e;
  struct fi_cq_err_entry err;
  fi_addr_t src;
  char sbuf[4096], rbuf[4096];
  memset(sbuf, 0x5a, sizeof sbuf);

  /* Tagged with data, FI_SOURCE; the receive for tag 7 only. */
  CHECK_RC(fi_trecv(b.ep, rbuf, sizeof rbuf, NULL, FI_ADDR_UNSPEC, 7, 0, (void *)1), 0);
  CHECK_RC(fi_tsenddata(a.ep, sbuf, 100, NULL, 0xfeed, a.peer, 7, (void *)2), 0);
  CHECK_RC(one(&b, &a, &e, &src, &err), 0);
  CHECK(e.op_context == (void *)1 && e.len == 100 && e.tag == 7 && e.data == 0xfeed);
  CHECK(e.flags & FI_REMOTE_CQ_DATA);
  CHECK(src == b.peer);
  CHECK_RC(one(&a, &b, &e, NULL, &err), 0);
  CHECK(e.op_context == (void *)2 && (e.flags & FI_SEND));

  /* Untagged apart from tagged; inject: no completion. */
  CHECK_RC(fi_recv(b.ep, rbuf, sizeof rbuf, NULL, FI_ADDR_UNSPEC, (void *)3), 0);
  CHECK_RC(fi_tinject(a.ep, sbuf, 8, a.peer, 0), 0);
  CHECK_RC(fi_inject(a.ep, sbuf, 16, a.peer), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), 0);
  CHECK(e.op_context == (void *)3 && e.len == 16 && (e.flags & FI_MSG));
  /* Directed: a receive for b's peer (a) takes the tagged inject. */
  CHECK_RC(fi_trecv(b.ep, rbuf, sizeof rbuf, NULL, b.peer, 0, ~0ull, (void *)4), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), 0);
  CHECK(e.op_context == (void *)4 && e.len == 8);

  /* Truncation: FI_ETRUNC with the overflow in olen. */
  CHECK_RC(fi_trecv(b.ep, rbuf, 10, NULL, FI_ADDR_UNSPEC, 9, 0, (void *)5), 0);
  CHECK_RC(fi_tsend(a.ep, sbuf, 300, NULL, a.peer, 9, (void *)6), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), -FI_ETRUNC);
  CHECK(err.op_context == (void *)5 && err.len == 10 && err.olen == 290);
  CHECK_RC(one(&a, &b, &e, NULL, &err), 0);

  /* Peek: nothing (FI_ENOMSG); then a message seen, claimed, received. */
  struct iovec iov = {rbuf, sizeof rbuf};
  struct fi_msg_tagged m = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = 11, .ignore = 0,
                            .context = (void *)7};
  CHECK_RC(fi_trecvmsg(b.ep, &m, FI_PEEK), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), -FI_ENOMSG);
  CHECK_RC(fi_tsend(a.ep, sbuf, 2000, NULL, a.peer, 11, (void *)8), 0);
  long rc = -FI_ENOMSG;
  for (int i = 0; i < 1000 && rc == -FI_ENOMSG; i++) {
    CHECK_RC(fi_trecvmsg(b.ep, &m, FI_PEEK | FI_CLAIM), 0);
    checks--; /* counted once below */
    rc = one(&b, &a, &e, NULL, &err);
  }
  CHECK_RC(rc, 0);
  CHECK(e.len == 2000 && e.tag == 11);
  /* Claimed: a receive for anything does not take it. */
  CHECK_RC(fi_trecv(b.ep, rbuf, sizeof rbuf, NULL, FI_ADDR_UNSPEC, 0, ~0ull, (void *)9), 0);
  CHECK_RC(fi_trecvmsg(b.ep, &m, FI_CLAIM), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), 0);
  CHECK(e.op_context == (void *)7 && e.len == 2000);
  /* A claim nobody made. */
  m.context = (void *)70;
  CHECK_RC(fi_trecvmsg(b.ep, &m, FI_CLAIM), -FI_EINVAL);
  /* Cancel the receive for anything: FI_ECANCELED; cancel of nothing. */
  CHECK_RC(fi_cancel(&b.ep->fid, (void *)9), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), -FI_ECANCELED);
  CHECK(err.op_context == (void *)9);
  CHECK_RC(fi_cancel(&b.ep->fid, (void *)99), -FI_ENOENT);
  /* Peek and discard. */
  CHECK_RC(fi_tsend(a.ep, sbuf, 64, NULL, a.peer, 12, (void *)10), 0);
  m.tag = 12;
  m.context = (void *)11;
  rc = -FI_ENOMSG;
  for (int i = 0; i < 1000 && rc == -FI_ENOMSG; i++) {
    fi_trecvmsg(b.ep, &m, FI_PEEK | FI_DISCARD);
    rc = one(&b, &a, &e, NULL, &err);
  }
  CHECK_RC(rc, 0);
  CHECK_RC(fi_trecvmsg(b.ep, &m, FI_PEEK), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), -FI_ENOMSG); /* gone */

  /* A multi-receive buffer (FI_MULTI_RECV): messages one after the other,
   * each its own completion with its place; the release, only
   * FI_MULTI_RECV, once less than the minimum is left; not for tagged. */
  CHECK(info->caps & FI_MULTI_RECV);
  size_t minr = 1000;
  CHECK_RC(fi_setopt(&b.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &minr, sizeof minr), 0);
  static char mbuf[3000];
  struct iovec miov = {mbuf, sizeof mbuf};
  struct fi_msg mm = {.msg_iov = &miov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = (void *)12};
  CHECK_RC(fi_recvmsg(b.ep, &mm, FI_MULTI_RECV), 0);
  for (int k = 0; k < 3; k++) {
    memset(sbuf, 'a' + k, 700);
    CHECK_RC(fi_senddata(a.ep, sbuf, 700, NULL, (uint64_t)k, a.peer, (void *)13), 0);
  }
  char *expect = mbuf;
  for (int k = 0; k < 3; k++) {
    CHECK_RC(one(&b, &a, &e, NULL, &err), 0);
    CHECK(e.op_context == (void *)12 && e.len == 700 && (e.flags & FI_RECV) && (e.flags & FI_MSG));
    CHECK(!(e.flags & FI_MULTI_RECV) && e.data == (uint64_t)k);
    CHECK(e.buf == expect && ((char *)e.buf)[0] == 'a' + k && ((char *)e.buf)[699] == 'a' + k);
    expect += 704; /* 8-byte aligned */
  }
  CHECK_RC(one(&b, &a, &e, NULL, &err), 0); /* 3000 - 3 * 704 < 1000: released */
  CHECK(e.op_context == (void *)12 && e.flags == FI_MULTI_RECV && e.len == 0);
  struct fi_msg_tagged mt = {.msg_iov = &miov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = (void *)14};
  CHECK_RC(fi_trecvmsg(b.ep, &mt, FI_MULTI_RECV), -FI_EINVAL);
  /* Cancelled while empty: FI_ECANCELED. */
  CHECK_RC(fi_recvmsg(b.ep, &mm, FI_MULTI_RECV), 0);
  CHECK_RC(fi_cancel(&b.ep->fid, (void *)12), 0);
  CHECK_RC(one(&b, &a, &e, NULL, &err), -FI_ECANCELED);
  CHECK(err.op_context == (void *)12);

  /* Bad input. */
  CHECK_RC(fi_tsend(a.ep, sbuf, 8, NULL, 12345, 1, NULL), -FI_EINVAL);                   /* unknown address */
  CHECK_RC(fi_tinject(a.ep, sbuf, info->tx_attr->inject_size + 1, a.peer, 1), -FI_EMSGSIZE); /* oversized */
  char forged[64];
  memcpy(forged, nb, lb);
  forged[12] ^= 0x55; /* the key's bytes: another job's name for that endpoint */
  fi_addr_t fa;
  CHECK_RC(fi_av_insert(a.av, forged, 1, &fa, 0, NULL), 1);
  long bad = fi_tsend(a.ep, sbuf, 8, NULL, fa, 1, NULL);
  CHECK(bad == -FI_EACCES || bad == -FI_EINVAL);
  CHECK_RC(fi_av_insert(a.av, NULL, 1, &fa, 0, NULL), -FI_EINVAL);

  cntr_checks(&b, nb, lb);
  close_side(&a);
  close_side(&b);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  rma_checks();
  if (failed) {
    fprintf(stderr, "fi_provider_check: %d of %d checks failed\n", failed, checks);
    return 1;
  }
  printf("fi_provider_check: %d checks passed\n", checks);
  return 0;
}
