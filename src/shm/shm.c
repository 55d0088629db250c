/* SPDX-License-Identifier: MIT */
/* The shm transport: records travel through the link's rings, their
 * payload inline when short, else in a buffer of the sender's pool
 * (region/pool.h) that the record names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "platform/copy.h"
#include "platform/topo.h"
#include "shm/shm.h"
#include "shm/link.h"
#include "shm/connect.h"

/* A payload longer than this goes in a pool buffer: a quarter of the ring
 * (half the longest record it takes), so that a few such records and many
 * tiny ones share it. */
static size_t inline_max(const struct shm_ring *r) { return shm_ring_max_payload(r) / 2; }

/* Some endpoint of the process may hand replies over (shm_ep.handover,
 * hand_over): where none does (no CLDEMOTE, FMX_HANDOVER=0, more ranks
 * than cores) a push looks at nothing more than this. */
static int handover_any;

/* Our buffers named by records of ch that its receiver has consumed go
 * back to the pool. */
static void link_reclaim(struct shm_link *ch) {
  if (!ch->lent.n) return;
  uint64_t tail = __atomic_load_n(&ch->tx.sh->tail, __ATOMIC_ACQUIRE);
  while (ch->lent.n && ch->lent.pos[ch->lent.head] < tail) {
    pool_put(ch->bulk.pool, ch->lent.buf[ch->lent.head]);
    ch->bulk.pool_held[POOL_REC]--;
    if (++ch->lent.head == ch->lent.cap) ch->lent.head = 0;
    ch->lent.n--;
  }
}

/* Every buffer of ch back, consumed or not (the partner is gone). */
static void link_reclaim_all(struct shm_link *ch) {
  for (; ch->lent.n; ch->lent.n--) {
    pool_put(ch->bulk.pool, ch->lent.buf[ch->lent.head]);
    if (++ch->lent.head == ch->lent.cap) ch->lent.head = 0;
  }
  if (ch->bulk.pool_held) ch->bulk.pool_held[POOL_REC] = 0;
}

/* The pool is empty: what every partner's receiver consumed comes back. */
static void reclaim_everywhere(struct fmx_endpoint *ep) {
  for (struct partner *q = NULL; (q = transport_up->peer_next(ep, &shm_transport, q)) != NULL;) {
    struct shm_peer *sq = shm_peer(q);
    for (int c = 0; c < sq->nlink; c++) link_reclaim(sq->link[c]);
  }
}

static int push_pooled(struct fmx_endpoint *ep, struct shm_link *ch, const struct proto_hdr *h, const struct iovec *iov,
                       int iovcnt) {
  struct buf_pool *pool = ch->bulk.pool;
  if (!shm_ring_ref_fits(&ch->tx)) return -EAGAIN;
  if (!ch->lent.cap) {
    uint32_t cap = (uint32_t)pool->cls[POOL_REC].n;
    ch->lent.pos = calloc(cap, sizeof *ch->lent.pos);
    ch->lent.buf = calloc(cap, sizeof *ch->lent.buf);
    if (!ch->lent.pos || !ch->lent.buf) return -ENOMEM; /* freed with the link */
    ch->lent.cap = cap;
  }
  /* Reading the tail costs a miss on the receiver's line: once a quarter
   * of the pool is lent on ch (after every 4th record, 64 KiB ping-pong
   * through the pool ran about 0.94x as fast as after every 16th), or when the
   * partner holds its share. What a rank's pool touches stays bounded by
   * the pool. */
  if (ch->lent.n >= ch->lent.cap / 4 || ch->bulk.pool_held[POOL_REC] >= ch->lent.cap / 2) link_reclaim(ch);
  /* No partner holds more than half: one that stops taking its messages
   * cannot stop our sends to the others. */
  if (ch->bulk.pool_held[POOL_REC] >= ch->lent.cap / 2) return -EAGAIN;
  /* Before a buffer whose pages were never touched, or when none is
   * free, take back what every receiver consumed: a rank's pool then
   * keeps pages for what is in flight, not for all its buffers (32 ranks'
   * alltoall of 4 KiB took 10 MB of shared memory more than of 8 B). */
  if (pool_next_is_fresh(pool) || !pool->cls[POOL_REC].nfree) reclaim_everywhere(ep);
  int64_t b = pool_get(pool);
  if (b < 0) return -EAGAIN;
  record_gather(pool_buf(pool, (uint64_t)b), iov, iovcnt, h->len);
  uint64_t pos;
  shm_ring_push_ref(&ch->tx, h, (uint64_t)b, &pos); /* fits: checked above, and only we push */
  uint32_t tail = (ch->lent.head + ch->lent.n) % ch->lent.cap;
  ch->lent.pos[tail] = pos;
  ch->lent.buf[tail] = (uint32_t)b;
  ch->lent.n++;
  ch->bulk.pool_held[POOL_REC]++;
  return 0;
}

/* Send on link[1] from now on (shm_peer.switch_tx), once nothing can tell:
 * the receiver took all we pushed on link[0] (no reordering), no medium
 * message is half pushed (its fragments share a ring) and no rendezvous
 * of ours is in flight. Looked at every 16th push: it reads the peer's
 * line. */
static void maybe_switch(struct partner *p, struct shm_peer *sp) {
  if (++sp->pushes % 16 != 1 || sp->tx_medium_left || sp->nlink < 2) return;
  struct shm_ring *r = &sp->link[0]->tx;
  if (__atomic_load_n(&r->sh->tail, __ATOMIC_ACQUIRE) != r->local || transport_up->peer_lending(p)) return;
  struct shm_link *c = sp->link[0];
  sp->link[0] = sp->link[1];
  sp->link[1] = c;
  sp->switch_tx = 0;
}

/* The cells of a ring our sends use: the receiver's L2 is shared by the
 * peers that write to it and by the ranks on its core, so a ring of L2 /
 * (peers x ranks per core) keeps what each sender has in flight in cache,
 * and a rank's rings together take one L2 of shared memory, however many
 * peers (FMX_RING_MIN at least, FMX_RING_SIZE at most). With one peer on
 * a core of its own: the whole ring. */
static uint64_t ring_cells(struct fmx_endpoint *ep, struct shm_ep *se) {
  uint32_t nlive = transport_ep(ep)->nlive;
  if (se->ring_for == nlive) return se->ring_cells;
  const struct topo_info *t = topo_get();
  uint64_t ranks = nlive ? nlive : 1, peers = ranks > 1 ? ranks - 1 : 1;
  uint64_t npus = t->npus > 0 ? (uint64_t)t->npus : 1, per_core = (ranks + npus - 1) / npus;
  uint64_t bytes = (t->l2.size ? t->l2.size : fmx_cfg.ring_size) / (peers * per_core);
  if (bytes < fmx_cfg.ring_min) bytes = fmx_cfg.ring_min;
  if (bytes > fmx_cfg.ring_size) bytes = fmx_cfg.ring_size;
  se->ring_for = nlive;
  se->ring_cells = bytes / RING_CELL;
  se->handover = fmx_cfg.handover && per_core == 1 && copy_hand_over_usable();
  if (se->handover) __atomic_store_n(&handover_any, 1, __ATOMIC_RELAXED);
  se->own_ahead = fmx_cfg.own_ahead && per_core == 1 && copy_own_usable();
  return se->ring_cells;
}

/* Whether the record we push now goes to the shared cache
 * (copy_hand_over): when it answers one of p's and our record before it
 * answered one too, p waits for it, and the reader of a line written on
 * another core finds it sooner in the L3 than in our L2. Ping-pong on the
 * Intel Xeon VM of 2026-11-27 (CLDEMOTE), 3 reps: 64 B 0.27 -> 0.23 us,
 * 1 KiB 0.56-0.58 -> 0.47-0.48, 4 KiB 0.96-1.03 -> 0.88-0.92, 8 B and
 * 16 KiB within noise. Not a stream's: the writer then waits for the
 * stores of the lines it hands over (bw of 1-16 KiB 0.92-0.95x when every
 * window's first message went too); not with more ranks than cores,
 * where the reader often shares our core and our L2 (8 ranks' alltoall
 * of 4 KiB on 2 cores took 1.25x as long). */
static int hand_over(struct shm_peer *sp) {
  int heard = sp->heard, go = heard && sp->answered && sp->ep->handover;
  sp->answered = (uint8_t)heard;
  return go; /* heard is cleared by the push (shm_push) */
}

/* A reply takes its next cells ahead only when they are this many or more:
 * reading the peer's tail (shm_ring_own_when_read) makes the peer's next
 * store to it a transfer of the line, on its way to its reply, which costs
 * about what taking a line or two ahead saves. Open MPI + fmx ping-pong on
 * the Intel Xeon VM of 2026-11-27, 3 reps, none taken / from 1 / from 4:
 * 64 B 0.318-0.325 / 0.346-0.357 / 0.313-0.331 us, 128 B 0.327-0.341 /
 * 0.343-0.356 / 0.318-0.336, 512 B 0.392-0.406 / 0.36-0.38 / 0.361-0.38;
 * native fmx_perf saw no difference below 512 B. */
#define OWN_REPLY_MIN 4

/* A record into the box of link[0] (shm/duplex_box.h): nothing of the
 * ring's. Kept out of shm_push: inlined there, one build ran the ring's
 * 8 B ping-pong (FMX_DUPLEX_BOX=0) at 0.235-0.245 us against 0.205-0.215
 * without it, the same instructions laid out otherwise. */
__attribute__((noinline)) static int push_boxed(struct fmx_endpoint *ep, struct shm_peer *sp,
                                                const struct proto_hdr *h, const struct iovec *iov, int iovcnt) {
  if (sp->heard) sp->heard = 0;
  if (sp->own_pending) sp->own_pending = 0;
  shm_box_push(&sp->link[0]->box, h, iov, iovcnt, sp->link[0]->tx.records);
  TRANSPORT_CNT(ep, BOXED);
  if (ep_wake(sp->desc)) TRANSPORT_CNT(ep, WAKES);
  return 0;
}

static int shm_push(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
                    int iovcnt) {
  struct shm_peer *sp = shm_peer(p);
  if (sp->switch_tx) maybe_switch(p, sp);
  struct shm_ring *r = &sp->link[0]->tx;
  uint64_t cells = ring_cells(ep, sp->ep);
  /* Faulted in ahead, except on a link we are about to leave (both
   * ends connected at once, shm_peer.switch_tx): it may take only a few
   * records. */
  if (r->limit != cells || (!r->faulted && !sp->switch_tx)) shm_ring_set_limit(r, cells, !sp->switch_tx);
  /* A stream: neither this push nor the one before heard anything from
   * the peer (one is not enough: an exchange's receive may come before
   * its send, and its next send then heard nothing). */
  uint8_t quiet = !sp->heard;
  int stream = quiet && sp->quiet;
  if (sp->quiet != quiet) sp->quiet = quiet; /* stored only when it changes */
  /* Our turn in the box, on the link we keep sending on (maybe_switch). */
  if (fmx_cfg.duplex_box && !sp->switch_tx && shm_box_pick(&sp->link[0]->box, h))
    return push_boxed(ep, sp, h, iov, iovcnt);
  /* Decided before the push; a stream's pushes (nothing heard, nothing
   * answered) store nothing. */
  int handing = __atomic_load_n(&handover_any, __ATOMIC_RELAXED) && (sp->heard | sp->answered) && hand_over(sp);
  if (sp->heard) sp->heard = 0;
  int inline_rec = h->len <= inline_max(r);
  if (inline_rec ? shm_ring_push(r, h, iov, iovcnt) < 0 : push_pooled(ep, sp->link[0], h, iov, iovcnt) < 0)
    return -EAGAIN;
  /* A stream's reader is behind; a reply's reads what we pushed now. A
   * later push replans (and a stream's idle sender must not poll the tail
   * its reader stores at every record). */
  if (sp->own_pending) sp->own_pending = 0;
  /* A short reply (most of a ping-pong's) looks at its length only. */
  if ((stream || h->len > (OWN_REPLY_MIN - 1) * RING_CELL) && inline_rec && sp->ep->own_ahead &&
      shm_ring_own_plan(r, stream) >= (stream ? 1u : OWN_REPLY_MIN)) {
    if (stream)
      TRANSPORT_ADD(ep, OWNED_AHEAD, shm_ring_own_ahead(r));
    else
      sp->own_pending = 1;
  }
  if (handing && inline_rec) {
    shm_ring_hand_over(r, h);
    TRANSPORT_CNT(ep, HANDOVERS);
  }
  if (h->type == PROTO_EAGER && h->msg_len > h->len)
    sp->tx_medium_left = h->msg_len - h->len;
  else if (h->type == PROTO_FRAG)
    sp->tx_medium_left -= h->len < sp->tx_medium_left ? h->len : sp->tx_medium_left;
  if (ep_wake(sp->desc)) TRANSPORT_CNT(ep, WAKES);
  return 0;
}

/* The smallest ring (4 cells, shm_ring_attach) still takes the tiny class. */
_Static_assert((4 / 2) * RING_CELL - RING_CELL >= TRANSPORT_MIN_PAYLOAD, "a tiny message fits any ring");
static size_t shm_max_payload(struct partner *p) {
  struct shm_peer *sp = shm_peer(p);
  size_t ring = shm_ring_max_payload(&sp->link[0]->tx), buf = pool_class_size(sp->pool, POOL_REC);
  return buf > ring ? buf : ring;
}

static int shm_unread(struct partner *p) {
  struct shm_peer *sp = shm_peer(p);
  return sp->nlink && shm_ring_unread(&sp->link[0]->tx);
}

/* Wake the peer if it sleeps. */
static void shm_wake(struct partner *p) { ep_wake(shm_peer(p)->desc); }

void shm_conn_wake(void *partner) { shm_wake(partner); }

/* The bulk engines work on the link our records go on. */
static struct bulk_conn *shm_conn(struct partner *p) {
  struct shm_peer *sp = shm_peer(p);
  return sp->nlink ? &sp->link[0]->bulk : NULL;
}

/* The payload of the record the ring's last peek returned: inline, or the
 * sender's pool buffer it names (NULL: out of its pool). */
static const void *payload_of(struct partner *p, struct shm_ring *r, const struct proto_hdr *h, uint32_t len) {
  if (r->cur_ref == RING_NO_REF) return (const uint8_t *)h + RING_DATA_OFF(len);
  return pool_view_buf(&shm_peer(p)->peer, r->cur_ref, len);
}

int shm_link_chosen(struct fmx_endpoint *ep, struct partner *p, const struct shm_link *ch) {
  uint32_t mine = shm_eid(ep), theirs = transport_peer(p)->eid;
  return (ch->ours ? mine : theirs) == (mine < theirs ? mine : theirs);
}

/* Two links (both ends connected at once): the first record on the one
 * both ends move their sending to (hello.c: the one the lower endpoint id
 * made) means the peer has moved, for good. All it pushed on the other is
 * visible by then: its records, which it waited for us to take
 * (maybe_switch), and maybe its last box record, whose taking it cannot
 * see. That other is polled once more, before ch's record, then no more:
 * polling it cost every 8 B ping-pong 0.20 -> 0.23 us on the Intel Xeon
 * VM of 2026-11-27 (fmx_perf starts its ranks at once). Only where one
 * link is each end's: two of one maker (a reconnect) keep both polled. */
static int retires_other(struct fmx_endpoint *ep, struct partner *p, struct shm_peer *sp, struct shm_link *ch) {
  return sp->link[ch == sp->link[0]]->ours != ch->ours && shm_link_chosen(ep, p, ch);
}

#define POLL_RETIRE 1 /* poll_link stopped before the first record on the chosen link */

/* Deliver what came on ch: ring and box, in order. 0, or POLL_RETIRE. */
static int poll_link(struct fmx_endpoint *ep, struct partner *p, struct shm_link *ch, transport_deliver_fn deliver) {
  struct shm_peer *sp = shm_peer(p);
  struct transport_peer *t = transport_peer(p);
  uint64_t before = ch->rx.local;
  const struct proto_hdr *h;
  int returned = 0, got = 0;
  while (t->state == PARTNER_ALIVE) {
    h = shm_ring_peek(&ch->rx);
    /* The box after the ring: a ring record pushed after the box's is
     * seen only with it (shm/duplex_box.h). */
    int boxed = shm_box_ready(&ch->box, ch->rx.records);
    if (!boxed && !h) break;
    if (sp->nlink == 2 && !sp->rx_done && retires_other(ep, p, sp, ch)) return POLL_RETIRE;
    got = 1;
    if (boxed) {
      struct shm_box_line rec;
      if (shm_box_take(&ch->box, &rec) < 0) {
        ch->rx.broken = 1;
        break;
      }
      /* A box ping-pong leaves our ring idle: its tail's line stays put. */
      if (shm_ring_unread(&ch->tx)) shm_box_crossed(&ch->box);
      if (deliver(ep, p, &ch->bulk, &rec.hdr, rec.data)) break;
      continue;
    }
    /* Copy the header out of shared memory: the peer may rewrite it. */
    struct proto_hdr hdr = *h;
    if (hdr.len != h->len || hdr.type != h->type) hdr.type = PROTO_TYPE_MAX;
    uint64_t ref = ch->rx.cur_ref;
    const void *payload = payload_of(p, &ch->rx, h, hdr.len);
    if (!payload) {
      ch->rx.broken = 1; /* names a buffer its pool does not have */
      break;
    }
    int gone = deliver(ep, p, &ch->bulk, &hdr, payload);
    returned |= ref != RING_NO_REF; /* the pop returns its buffer */
    shm_ring_pop(&ch->rx);
    if (gone) break;
  }
  /* The sender may wait for a pool buffer: we returned some. */
  if (returned) shm_wake(p);
  /* Idle: the cells our next reply will fill, once the peer has read
   * the last (shm_ring_own_when_read). */
  if (!got && sp->own_pending) {
    int64_t taken = shm_ring_own_when_read(&sp->link[0]->tx);
    if (taken >= 0) {
      sp->own_pending = 0;
      TRANSPORT_ADD(ep, OWNED_AHEAD, (uint64_t)taken);
    }
  }
  if (got && !sp->heard) sp->heard = 1; /* hand_over; stored only when it changes */
  /* Nothing came: has the peer given up on us? Checked only when idle,
   * so everything it pushed before is delivered first. */
  if (!got && t->state == PARTNER_ALIVE && __atomic_load_n(ch->rx_abort, __ATOMIC_ACQUIRE) &&
      !shm_ring_peek(&ch->rx) && !shm_box_ready(&ch->box, ch->rx.records)) {
    uint32_t why = *ch->rx_abort;
    fmx_return_t code = why == FMX_NO_RESOURCES || why == FMX_NO_SYSTEM_RESOURCES ? (fmx_return_t)why
                                                                                  : FMX_REMOTE_ENDPOINT_UNREACHABLE;
    TRANSPORT_CNT(ep, PEER_ABORTS);
    log_warn("FMX-PEER-ABORT", "endpoint %u: endpoint %u (pid %d) dropped the connection (%s): its requests with us fail",
             shm_eid(ep), t->eid, (int)t->bulk->pid, fmx_strerror(code));
    transport_up->peer_down(ep, p, PARTNER_DISCONNECTED, code);
    return 0;
  }
  if (ch->rx.broken && t->state == PARTNER_ALIVE) {
    TRANSPORT_CNT(ep, BAD_PACKET);
    log_warn("FMX-SHM-CORRUPT", "endpoint %u: ring or box from endpoint %u (pid %d) is corrupt: peer dropped", shm_eid(ep),
             t->eid, (int)t->bulk->pid);
    transport_up->peer_fail(ep, p, PARTNER_DISCONNECTED, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  }
  /* The sender may sleep waiting for room. Waking costs a fence, so do it
   * once a quarter of the ring is freed: a sender that lacks room for a
   * record (at most half the ring) sees more than half the ring in use, so
   * draining it always crosses a quarter. */
  ch->rx_freed += ch->rx.local - before;
  if (ch->rx_freed >= ch->rx.ncells / 4) {
    ch->rx_freed = 0;
    shm_wake(p);
  }
  return 0;
}

static void shm_poll(struct fmx_endpoint *ep, struct partner *p, transport_deliver_fn deliver) {
  struct shm_peer *sp = shm_peer(p);
  struct transport_peer *t = transport_peer(p);
  for (int c = 0; c < sp->nlink && t->state == PARTNER_ALIVE; c++) {
    struct shm_link *ch = sp->link[c];
    if (ch == sp->rx_done || poll_link(ep, p, ch, deliver) != POLL_RETIRE) continue;
    sp->rx_done = sp->link[ch == sp->link[0]]; /* retires_other: it first, then ch's record */
    poll_link(ep, p, sp->rx_done, deliver);
    poll_link(ep, p, ch, deliver);
  }
}

/* Give up on the connection: the peer sees it once it has drained what we
 * pushed. No record, so it needs neither ring room nor memory. */
static void shm_abort(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code) {
  (void)ep;
  struct shm_peer *sp = shm_peer(p);
  if (!sp->nlink) return;
  __atomic_store_n(sp->link[0]->tx_abort, (uint32_t)code, __ATOMIC_RELEASE);
  shm_wake(p);
}

static void shm_release(struct fmx_endpoint *ep, struct partner *p) {
  struct shm_peer *sp = shm_peer(p);
  if (sp->pool) pool_forget(sp->pool, sp->pool_held);
  sp->pool = NULL;
  pool_view_detach(&sp->peer);
  for (int c = 0; c < sp->nlink; c++) {
    link_reclaim_all(sp->link[c]);
    link_destroy(sp->link[c]);
  }
  sp->nlink = 0;
  sp->rx_done = NULL;
  if (sp->desc) munmap(sp->desc, EP_DESC_SIZE);
  sp->desc = NULL;
  struct bulk_peer *b = transport_peer(p)->bulk;
  if (b->pidfd >= 0) close(b->pidfd);
  b->pidfd = -1;
}

int shm_pool_open(struct fmx_endpoint *ep) {
  struct shm_ep *se = shm_ep(ep);
  if (!se) return -EINVAL; /* not registered (never: fmx_init registers shm) */
  /* Records' buffers hold the longest payload one takes (a medium
   * fragment), as many as the fragments of one L2 (FMX_POOL_BUFFERS); the
   * ring engine's are its chunks, twice FMX_BULK_SLOTS: the slots of two
   * transfers in flight (a partner may hold half a class). */
  uint64_t n[POOL_CLASSES] = {fmx_cfg.pool_buffers, 2 * fmx_cfg.bulk_slots};
  uint64_t size[POOL_CLASSES] = {(fmx_cfg.eager_frag + 4095) & ~4095ull, (fmx_cfg.bulk_slot_size + 4095) & ~4095ull};
  int r = pool_create(&se->pool, n, size);
  se->pool_ready = r == 0;
  return r;
}

int shm_pool_fd(struct fmx_endpoint *ep) {
  struct shm_ep *se = shm_ep(ep);
  return se->pool.fd;
}

int shm_peer_attach(struct fmx_endpoint *ep, struct partner *p, int pool_fd, const char **why) {
  struct shm_ep *se = shm_ep(ep);
  struct shm_peer *sp = shm_peer(p);
  if (pool_fd < 0) {
    *why = "no pool";
    return -EPROTO;
  }
  int err = pool_view_attach(&sp->peer, pool_fd, why);
  if (err < 0) return err;
  sp->pool = &se->pool;
  sp->ep = se;
  return 0;
}

static void shm_ep_fini(struct fmx_endpoint *ep) {
  struct shm_ep *se = shm_ep(ep);
  shm_unlisten(ep);
  if (se->pool_ready) pool_destroy(&se->pool);
  se->pool_ready = 0;
}

/* Serve ep: the watcher thread (connects, peers' deaths). With FMX_SHM=0
 * no peer comes this way: no pool, no watcher (nor its descriptor and
 * thread), only the socket, which holds the endpoint's id on this host
 * and takes no connection (listen.c): a process of this host with shared
 * memory on that connects to it is refused (docs/tuning.md). */
static int shm_ep_open(struct fmx_endpoint *ep) {
  if (!fmx_cfg.shm) return 0;
  int r = shm_pool_open(ep);
  return r < 0 ? r : shm_watcher_start(ep);
}

/* No more connects or deaths served: the watcher ends, then the socket. */
static void shm_ep_close(struct fmx_endpoint *ep) {
  shm_watcher_stop(ep);
  shm_unlisten(ep);
}

const struct fmx_transport_ops shm_transport = {
    .name = "shm",
    .tiny_max = RING_CELL_TINY,
    .partner_size = sizeof(struct shm_peer), /* aligned as TRANSPORT_STATE_ALIGN allows (below) */
    .ep_size = sizeof(struct shm_ep),
    .listen = shm_listen,
    .open = shm_ep_open,
    .close = shm_ep_close,
    .connect = shm_connect,
    .push = shm_push,
    .max_payload = shm_max_payload,
    .unread = shm_unread,
    .poll = shm_poll,
    .abort = shm_abort,
    .conn = shm_conn,
    .release = shm_release,
    .ep_fini = shm_ep_fini,
};

_Static_assert(_Alignof(struct shm_peer) <= TRANSPORT_STATE_ALIGN, "a partner's state is placed at that alignment");
