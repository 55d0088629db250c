/* SPDX-License-Identifier: MIT */
/* The provider through libfabric's own API, two endpoints of one process
 * (run with FI_PROVIDER_PATH at build/ofi): tagged and untagged messages
 * with remote CQ data and FI_SOURCE, directed receive, inject, truncation
 * (FI_ETRUNC), FI_PEEK (FI_ENOMSG when nothing), FI_PEEK|FI_CLAIM then
 * FI_CLAIM, FI_DISCARD, cancel (FI_ECANCELED), and bad input: an unknown
 * fi_addr, an oversized inject, a name with a wrong key (another job's
 * endpoint), MSG endpoints refused. Prints "fi_provider_check: N checks
 * passed" or fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
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

int main(void) {
  struct fi_info *hints = fi_allocinfo();
  hints->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE;
  hints->ep_attr->type = FI_EP_RDM;
  hints->fabric_attr->prov_name = strdup("fmx");
  CHECK_RC(fi_getinfo(fi_version(), NULL, NULL, 0, hints, &info), 0);
  if (!info) return 1;
  CHECK(strcmp(info->fabric_attr->prov_name, "fmx") == 0);
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

  fi_close(&a.ep->fid);
  fi_close(&b.ep->fid);
  fi_close(&a.cq->fid);
  fi_close(&b.cq->fid);
  fi_close(&a.av->fid);
  fi_close(&b.av->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  if (failed) {
    fprintf(stderr, "fi_provider_check: %d of %d checks failed\n", failed, checks);
    return 1;
  }
  printf("fi_provider_check: %d checks passed\n", checks);
  return 0;
}
