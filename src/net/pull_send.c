/* SPDX-License-Identifier: MIT */
/*
 * The sender's side of the pull protocol (pull.c says the whole of it):
 * the transfers a partner pulls from us, and our answers to its PULLs,
 * each frame in its packet, a run of them in one GSO send where the wire
 * has it.
 *
 * Answers are paced (pace.h): while our socket holds the limit, a PULL
 * waits in the endpoint's queue, one for all partners in the order their
 * PULLs came (as the socket would have sent them: a receiver whose answers
 * stopped while another's went would read a silence and ask again; and
 * it reads answers that overtake an earlier PULL's as a loss), and goes at
 * the next look: the next PULL, or a partner's timer (pull_timer.c,
 * net_pull_timers). A PULL asked again while the first ask waits takes its
 * place (one answer). The queue grows by doubling up to
 * NET_PULL_QUEUED_MAX runs; a PULL that finds it full is dropped, and its
 * receiver asks again, as for a lost one.
 *
 * A receiver whose timer finds nothing came for a while asks again for
 * all it misses. When we were the silent one (off our core, or busy
 * outside the library) its first asks and the second wait in our socket
 * together, and we would answer both: twice its budget on its way at once,
 * more than its socket may hold (fmx_perf bw --verify, 16 MiB, where the
 * sender fills each buffer between sends). So a PULL that reached our
 * socket before we answered the frames it asks for gets none of them: it
 * was sent before our answer could reach its receiver. Should that answer
 * be lost, the receiver's next ask comes after it, and is answered. The
 * time is the kernel's stamp of the PULL's arrival (net_sock_stamps, on
 * while we have transfers to be pulled), against the runs we answered last
 * (a ring of NET_PULL_RECENT: those answered while the PULL waited in our
 * socket; when more went, fewer are skipped).
 *
 * A receiver asks right behind its CTS. Should the CTS be lost, its PULLs
 * come before the CTS is sent again, for a transfer we do not know yet:
 * the last NET_PULL_EARLY of them are kept (no older than the longest
 * resend wait), and answered when the CTS starts the transfer. Dropped,
 * their receiver would wait out its timer first: a 16 MiB ping-pong at
 * 10% loss had a pull in ten or so stalled 1-3 ms so.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "bulk/engine.h"
#include "net/net_int.h"
#include "platform/copy.h"
#include "platform/sys.h"

/* A transfer we send (its receiver pulls it). */
struct net_export {
  struct list_node node;
  struct bulk_xfer *x;
  uint64_t heard_ns; /* when its receiver last pulled (or the CTS came) */
};

/* A PULL that waits for room in our socket (its partner NULL: gone). */
struct net_pull_run {
  struct partner *p;
  uint64_t sreq;
  uint32_t frame, first, count;
  uint8_t wire;
  uint8_t guessed; /* at_ns is when we read it, not the kernel's stamp: no hold is said (serve) */
  uint16_t waited; /* its answers' flags: how long its PULL waited for us to read it (wire.h, net_wait_put) */
  uint64_t at_ns;  /* when its PULL reached our socket (sys_now_ns's clock; 0: not known) */
};

/* A PULL kept until its CTS comes, and when it came (sys_now_ns). */
struct net_pull_early {
  struct net_pull_run run;
  uint64_t kept_ns;
};
/* A budget's runs at its cap (NET_PULL_QUEUED_MAX's), and some late asks. */
#define NET_PULL_EARLY 128

/* A run we answered, and when. */
struct net_pull_sent {
  const struct partner *p;
  uint64_t sreq, ns;
  uint32_t first, count;
};
#define NET_PULL_RECENT 256

/* What the queue may hold: the runs of a receiver's budget at its cap
 * (half an 8 MiB socket buffer, blocks of 64 KiB) for 64 of them. */
#define NET_PULL_QUEUED_MAX 4096
#define NET_PULL_QUEUED_FIRST 64

static struct net_export *export_of(struct net_peer *np, uint64_t id) {
  struct list_node *pos;
  if (!np->pull) return NULL;
  list_for_each(pos, &np->pull->exports) {
    struct net_export *e = list_entry(pos, struct net_export, node);
    if (e->x->id == id) return e;
  }
  return NULL;
}

static void take_early(struct fmx_endpoint *ep, struct net_peer *np, struct net_export *e, uint64_t now);
static void take_run(struct fmx_endpoint *ep, struct net_peer *np, struct net_export *e, struct net_pull_run run,
                     uint64_t now);

int net_pull_send_start(void *arg, struct bulk_xfer *x) {
  struct net_peer *np = arg;
  if (transport_peer(transport_partner(np))->state != PARTNER_ALIVE) return -ESRCH;
  if (export_of(np, x->id)) return -EPROTO; /* a second CTS for it */
  struct net_export *e = calloc(1, sizeof *e);
  if (!e) return -ENOMEM;
  net_ep(np->ep)->exporting++;
  e->x = x;
  e->heard_ns = sys_now_ns();
  list_add_tail(&np->pull->exports, &e->node);
  net_stamps_want(np->ep);
  net_arm_timers(net_ep(np->ep), np, e->heard_ns);
  take_early(np->ep, np, e, e->heard_ns);
  return 0;
}

void net_pull_exports_drop(struct net_peer *np, const struct bulk_xfer *x) {
  struct list_node *pos, *tmp;
  if (np->pull)
    list_for_each_safe(pos, tmp, &np->pull->exports) {
      struct net_export *e = list_entry(pos, struct net_export, node);
      if (x && e->x != x) continue;
      list_del(&e->node);
      net_ep(np->ep)->exporting--;
      free(e);
    }
  /* Runs of a transfer gone are skipped as they come up (net_pull_serve);
   * a partner gone leaves none. */
  if (!x) {
    struct net_pull_queue *q = &net_ep(np->ep)->answers;
    for (uint32_t i = 0; i < q->n; i++)
      if (q->run[(q->head + i) & (q->cap - 1)].p == transport_partner(np)) q->run[(q->head + i) & (q->cap - 1)].p = NULL;
    for (uint32_t i = 0; q->sent && i < NET_PULL_RECENT; i++)
      if (q->sent[i].p == transport_partner(np)) q->sent[i].p = NULL;
    for (uint32_t i = 0; q->early && i < NET_PULL_EARLY; i++)
      if (q->early[i].run.p == transport_partner(np)) q->early[i].run.p = NULL;
  }
}

void net_pull_queue_fini(struct net_pull_queue *q) {
  free(q->run);
  free(q->sent);
  free(q->early);
  *q = (struct net_pull_queue){0};
}

uint64_t net_pull_exports_heard(struct net_peer *np) {
  uint64_t last = 0;
  struct list_node *pos;
  if (!np->pull) return 0;
  list_for_each(pos, &np->pull->exports) {
    uint64_t h = list_entry(pos, struct net_export, node)->heard_ns;
    if (!last || h < last) last = h;
  }
  return last;
}

/* Send `frames` answers (n pieces of iov; frame f's from start[f]), as one
 * GSO send of seg-byte packets where sock takes it. Those our bulk socket
 * refuses (no neighbour for the peer's address, a full device queue: IP_RECVERR
 * tells) go on the wire at once, one per frame. The frames sent. */
static uint32_t answer(struct fmx_endpoint *ep, struct net_peer *np, struct net_sock *sock, const struct net_addr *to,
                       const struct iovec *iov, int n, const int *start, uint32_t frames, uint16_t seg) {
  struct net_ep *ne = net_ep(ep);
  uint32_t eid = transport_peer(transport_partner(np))->eid, sent = 0;
  if (!frames) return 0;
  int r = frames > 1 ? sock->wire->send_segs(sock, to, eid, iov, n, seg) : sock->wire->send(sock, to, eid, iov, n);
  /* Our send buffer full is a queue's: the receiver asks again, as for a
   * loss, and its budget reads it (under load, sending those on the wire
   * moved a shaped uplink's pairs off their trains). */
  if (r == 0) return frames;
  if (sock == &ne->sock || r == -EAGAIN) return 0;
  net_sock_send_failed(sock, r);
  for (uint32_t f = 0; f < frames; f++) {
    int b = f + 1 < frames ? start[f + 1] : n;
    if (ne->sock.wire->send(&ne->sock, &np->addr, eid, iov + start[f], b - start[f]) < 0) break; /* full too */
    sent++;
  }
  TRANSPORT_ADD(ep, NET_PULL_BULK_REFUSED, sent);
  return sent;
}

/* The socket a PULL's answers go on: its bulk socket when both of us have
 * one and it did not ask for the wire, else our wire. */
static struct net_sock *answer_sock(struct net_ep *ne, const struct net_peer *np, int wire) {
  return !wire && net_pull_bulk_answers(np) ? &ne->bsock : &ne->sock;
}

static struct net_pace *pace_of(struct net_ep *ne, const struct net_sock *s) { return &ne->pace[s == &ne->bsock]; }

/* A run answered whole (one refused in part goes again when asked). */
static void sent_note(struct net_pull_queue *q, const struct partner *p, const struct net_pull_run *run, uint64_t now) {
  if (!q->sent && !(q->sent = calloc(NET_PULL_RECENT, sizeof *q->sent))) return; /* asked twice, answered twice */
  q->sent[q->sent_n++ % NET_PULL_RECENT] = (struct net_pull_sent){p, run->sreq, now, run->first, run->count};
}

/* The frames of run (bit i: frame first + i) we answered after at_ns:
 * the ring from its newest back. */
static uint64_t sent_after(const struct net_pull_queue *q, const struct partner *p, const struct net_pull_run *run,
                           uint64_t at_ns) {
  uint64_t m = 0;
  uint32_t n = q->sent_n < NET_PULL_RECENT ? q->sent_n : NET_PULL_RECENT;
  for (uint32_t k = 1; at_ns && q->sent && k <= n; k++) {
    const struct net_pull_sent *s = &q->sent[(q->sent_n - k) % NET_PULL_RECENT];
    if (s->ns <= at_ns) break;
    if (s->p != p || s->sreq != run->sreq) continue;
    uint64_t lo = s->first > run->first ? s->first : run->first;
    uint64_t hi = (uint64_t)s->first + s->count, rhi = (uint64_t)run->first + run->count;
    if (hi > rhi) hi = rhi;
    for (uint64_t f = lo; f < hi; f++) m |= 1ull << (f - run->first);
  }
  return m;
}

/* Answer a run: frames first..first+count-1 of e's transfer, each in its
 * packet; one GSO send for all of them where the wire has it. */
static void serve(struct fmx_endpoint *ep, struct partner *p, struct net_export *e, const struct net_pull_run *run,
                  uint64_t now) {
  struct net_ep *ne = net_ep(ep);
  struct net_peer *np = transport_state(p);
  struct bulk_xfer *x = e->x;
  uint32_t frame = run->frame, first = run->first, count = run->count;
  struct net_sock *sock = answer_sock(ne, np, run->wire);
  const struct net_addr *to = sock == &ne->bsock ? &np->baddr : &np->addr;
  int gso = sock->wire->send_segs && sock->gso;
  struct iovec iov[NET_PULL_IOV];
  int start[NET_PULL_FRAMES_MAX];
  int n = 0;
  uint32_t batch = 0, sent = 0;
  uint16_t seg = (uint16_t)(NET_HDR_LEN + NET_PULL_REPLY_HDR + frame);
  struct net_hdr h;
  net_hdr_to(ep, p, &h, NET_PULL_REPLY);
  h.ack = net_rel_ack_value(np->rel);
  /* How long we held its PULL (wire.h): the receiver takes our wait for
   * a core off what it measures. */
  if (run->at_ns && !run->guessed) {
    uint64_t t = sys_now_ns();
    h.seq = net_hold_put(t > run->at_ns ? t - run->at_ns : 0);
    h.flags = run->waited;
  }
  uint32_t tried = 0;
  for (uint32_t i = first; i < first + count && (uint64_t)i * frame < x->want; i++, tried++) {
    uint64_t off = (uint64_t)i * frame;
    size_t len = x->want - off < frame ? (size_t)(x->want - off) : frame;
    uint8_t *hb = ne->hdrs + (size_t)(i - first) * (NET_HDR_LEN + NET_PULL_REPLY_HDR);
    h.len = (uint16_t)(NET_PULL_REPLY_HDR + len);
    net_put_hdr(hb, &h);
    net_put_pull_reply(hb + NET_HDR_LEN, x->peer_id, i);
    iov[n] = (struct iovec){hb, NET_HDR_LEN + NET_PULL_REPLY_HDR};
    int k = bulk_iov_local(x->segs, x->nseg, off, len, iov + n + 1, NET_FRAME_IOV);
    size_t got = 0;
    for (int j = 0; j < k; j++) got += iov[n + 1 + j].iov_len;
    int bounced = got != len;
    if (bounced) {
      /* A segment list finer than a frame's iovec holds: this frame alone,
       * its bytes gathered (the batch so far goes first, in order). */
      sent += answer(ep, np, sock, to, iov, n, start, batch, seg);
      n = 0;
      batch = 0;
      iov[0] = (struct iovec){hb, NET_HDR_LEN + NET_PULL_REPLY_HDR};
      iov[1] = (struct iovec){ne->pkt, len};
      copy_segs(x->segs, x->nseg, off, ne->pkt, len, 0, NULL); /* x->want is within them (rndv_on_cts) */
      k = 1;
    }
    start[batch++] = n;
    n += 1 + k;
    if (!gso || bounced || n + 1 + NET_FRAME_IOV > NET_PULL_IOV) {
      /* One packet at a time, the bounce buffer in use, or the iovec full:
       * what we have goes. */
      sent += answer(ep, np, sock, to, iov, n, start, batch, seg);
      n = 0;
      batch = 0;
    }
  }
  sent += answer(ep, np, sock, to, iov, n, start, batch, seg);
  struct net_pace *pc = pace_of(ne, sock);
  if (net_pace_sampling(pc)) net_pace_sent(pc, net_sock_queued(sock)); /* a system call: only when it counts */
  TRANSPORT_ADD(ep, NET_SENT, sent);
  TRANSPORT_ADD(ep, NET_PULL_SERVED, sent);
  if (run->wire) TRANSPORT_ADD(ep, NET_PULL_WIRE_SERVED, sent);
  if (sent < tried) TRANSPORT_ADD(ep, NET_PULL_REFUSED, tried - sent);
  else sent_note(&ne->answers, p, run, now);
}

/* Answer what of a run we did not answer since its PULL came (the head
 * comment), in runs. */
static void serve_new(struct fmx_endpoint *ep, struct partner *p, struct net_export *e, const struct net_pull_run *run,
                      uint64_t now) {
  uint64_t way = sent_after(&net_ep(ep)->answers, p, run, run->at_ns);
  if (!way) {
    serve(ep, p, e, run, now);
    return;
  }
  TRANSPORT_ADD(ep, NET_PULL_ON_WAY, (uint64_t)__builtin_popcountll(way));
  for (uint32_t i = 0, n; (n = net_mask_run(~way, run->count, &i)) != 0; i += n) {
    struct net_pull_run part = *run;
    part.first = run->first + i;
    part.count = n;
    serve(ep, p, e, &part, now);
  }
}

/* Room in the socket a run's answers go on (pace.h). */
static int room(struct fmx_endpoint *ep, const struct net_peer *np, int wire, uint64_t now) {
  struct net_ep *ne = net_ep(ep);
  struct net_sock *s = answer_sock(ne, np, wire);
  return net_pace_room(pace_of(ne, s), net_sock_queued(s), now);
}

int net_pull_serve(struct fmx_endpoint *ep, uint64_t now) {
  struct net_pull_queue *q = &net_ep(ep)->answers;
  while (q->n) {
    const struct net_pull_run *run = &q->run[q->head];
    struct partner *p = run->p;
    struct net_peer *np = p ? transport_state(p) : NULL;
    struct net_export *e = np && transport_peer(p)->state == PARTNER_ALIVE ? export_of(np, run->sreq) : NULL;
    if (e && !room(ep, np, (int)run->wire, now)) return 1;
    if (e) serve_new(ep, p, e, run, now);
    q->head = (q->head + 1) & (q->cap - 1);
    q->n--;
  }
  return 0;
}

/* Room for one more run: 0, or -ENOMEM (at NET_PULL_QUEUED_MAX too). */
static int queue_grow(struct net_pull_queue *q) {
  if (q->n < q->cap) return 0;
  uint32_t cap = q->cap ? 2 * q->cap : NET_PULL_QUEUED_FIRST;
  if (cap > NET_PULL_QUEUED_MAX) return -ENOMEM;
  struct net_pull_run *r = malloc(cap * sizeof *r);
  if (!r) return -ENOMEM;
  for (uint32_t i = 0; i < q->n; i++) r[i] = q->run[(q->head + i) & (q->cap - 1)];
  free(q->run);
  q->run = r;
  q->cap = cap;
  q->head = 0;
  return 0;
}

/* Keep run, a PULL for a transfer we do not know, until its CTS comes
 * (the oldest kept gives way). */
static void keep_early(struct net_pull_queue *q, const struct net_pull_run *run, uint64_t now) {
  if (!q->early && !(q->early = calloc(NET_PULL_EARLY, sizeof *q->early))) return; /* dropped: asked again */
  q->early[q->early_n++ % NET_PULL_EARLY] = (struct net_pull_early){*run, now};
}

void net_pull_on_pull(struct fmx_endpoint *ep, struct partner *p, const struct net_pkt *pk, uint64_t at_ns) {
  struct net_peer *np = transport_state(p);
  struct net_export *e = export_of(np, pk->u.pull.sreq);
  struct net_pull_run run = {p, pk->u.pull.sreq, pk->u.pull.frame, pk->u.pull.first, pk->u.pull.count,
                             (pk->h.flags & NET_F_WIRE) != 0, 0, 0, at_ns};
  uint64_t now = sys_now_ns();
  run.at_ns = net_stamp_now(at_ns, now); /* one from before we started is not believed: nothing is skipped */
  if (run.at_ns && run.at_ns < now) run.waited = net_wait_put(now - run.at_ns);
  if (!e) {
    /* Ended already (asked again late), not ours, or before its CTS: kept
     * only from a partner with its pull state (taken at the first record
     * either way; our RTS comes before any pull of it), which is cleared
     * of them when the partner goes (net_pull_exports_drop). */
    TRANSPORT_CNT(ep, NET_LATE);
    if (np->pull) keep_early(&net_ep(ep)->answers, &run, now);
    return;
  }
  take_run(ep, np, e, run, now);
}

/* PULLs for e's transfer that came before its CTS (keep_early), in the
 * order they came. One whose arrival the kernel did not stamp (stamps go on
 * with our first export) counts as come when it was kept, so that two of
 * them asking the same frames get one answer (serve_new). */
static void take_early(struct fmx_endpoint *ep, struct net_peer *np, struct net_export *e, uint64_t now) {
  struct net_pull_queue *q = &net_ep(ep)->answers;
  uint64_t young = fmx_cfg.net_rto_max_us * 1000ull;
  for (uint32_t k = NET_PULL_EARLY; q->early && k > 0; k--) {
    struct net_pull_early *kept = &q->early[(q->early_n - k) % NET_PULL_EARLY];
    if (kept->run.p != transport_partner(np) || kept->run.sreq != e->x->id) continue;
    struct net_pull_run run = kept->run;
    kept->run.p = NULL;
    if (now - kept->kept_ns > young) continue; /* its CTS took longer than any resend wait: asked again since */
    if (!run.at_ns) {
      run.at_ns = kept->kept_ns;
      run.guessed = 1;
    }
    TRANSPORT_CNT(ep, NET_PULL_EARLY);
    take_run(ep, np, e, run, now);
  }
}

/* A PULL for e's transfer: answered at once, or queued behind those that wait. */
static void take_run(struct fmx_endpoint *ep, struct net_peer *np, struct net_export *e, struct net_pull_run run,
                     uint64_t now) {
  struct partner *p = transport_partner(np);
  if (run.frame == 0 || run.frame > net_pull_frame_bytes(np) || run.count == 0 || run.count > NET_PULL_FRAMES_MAX ||
      (uint64_t)run.first * run.frame >= e->x->want) {
    TRANSPORT_CNT(ep, NET_DROPPED); /* malformed */
    return;
  }
  e->heard_ns = now;
  /* After those that wait, in order; at once when none does and there is room. */
  if (!net_pull_serve(ep, now) && room(ep, np, (int)run.wire, now)) {
    serve_new(ep, p, e, &run, now);
    return;
  }
  struct net_pull_queue *q = &net_ep(ep)->answers;
  /* Asked again while the first ask waits: one answer. */
  for (uint32_t i = 0; i < q->n; i++) {
    struct net_pull_run *w = &q->run[(q->head + i) & (q->cap - 1)];
    if (w->p == p && w->sreq == run.sreq && w->first == run.first) {
      run.wire = w->wire; /* a probe for the wire (pull.c) finds the first ask unanswered: not the wire's fault */
      *w = run;
      return;
    }
  }
  if (queue_grow(q) < 0) {
    TRANSPORT_CNT(ep, NET_PULL_PACE_DROPPED); /* asked again, as if lost */
    return;
  }
  q->run[(q->head + q->n++) & (q->cap - 1)] = run;
  TRANSPORT_CNT(ep, NET_PULL_PACED);
  net_arm_timers(net_ep(ep), np, now);
}
