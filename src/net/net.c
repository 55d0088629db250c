/* SPDX-License-Identifier: MIT */
/*
 * The net transport: records to endpoints of other hosts, over raw
 * Ethernet frames or UDP (sock.h), one protocol engine for both
 * (docs/protocol.md, "Net transport").
 *
 * A record travels in one DATA packet: its 40-byte header, big endian, and
 * its payload; max_payload keeps every record within the interface's MTU,
 * so the protocol's medium class cuts longer messages into MTU-sized
 * fragments. Each partner's packets are sequenced and acked (rel.c): lost
 * ones are resent, duplicates dropped, early ones held, so records reach
 * the protocol exactly once and in order. A partner that acks nothing for
 * FMX_NET_TIMEOUT_MS fails: its requests complete with an error.
 *
 * Progress is manual (inside fmx calls, ops.progress at every pass); a
 * waiter that sleeps polls the socket (ops.wait_fd) until a packet or a
 * timer is due. While the endpoint has no partner here the socket is read
 * every NET_IDLE_PASSES passes only, so an endpoint that talks to its host
 * alone pays one system call in that many. The board and an endpoint's
 * sockets (open, close, what a waiter polls) are net_ep.c's, its partners
 * (made, found) net_peer.c's, what comes in (parsed, delivered)
 * net_rx.c's.
 */
#include <errno.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "net/net.h"
#include "net/net_int.h"
#include "platform/sys.h"

#define NET_IDLE_PASSES 256

/* ---- sending ------------------------------------------------------------ */

/* The partner's timers are due within the shortest wait one may have
 * (something was sent, or received and not acked yet). */
void net_arm_timers(struct net_ep *ne, struct net_peer *np, uint64_t now) {
  net_wheel_arm(&ne->timers, &np->timer, now + ne->timer_step);
}


void net_xmit(struct fmx_endpoint *ep, const struct net_addr *to, uint32_t eid, const uint8_t *pkt, size_t len) {
  struct net_ep *ne = net_ep(ep);
  struct iovec iov = {(void *)pkt, len};
  /* A full socket loses the packet as a line would: the timer resends it. */
  if (ne->sock.wire->send(&ne->sock, to, eid, &iov, 1) == 0) TRANSPORT_CNT(ep, NET_SENT);
}

void net_hdr_to(struct fmx_endpoint *ep, struct partner *p, struct net_hdr *h, unsigned type) {
  const struct transport_ep *te = transport_ep(ep);
  memset(h, 0, sizeof *h);
  h->type = (uint8_t)type;
  h->src_ep = (uint16_t)te->eid;
  h->src_session = te->session;
  if (p) {
    const struct transport_peer *t = transport_peer(p);
    h->dst_ep = (uint16_t)t->eid;
    h->dst_session = t->session;
  }
}

void net_emit(void *arg, uint8_t *pkt, size_t len) {
  struct net_emit *a = arg;
  net_xmit(a->ep, &((struct net_peer *)transport_state(a->p))->addr, transport_peer(a->p)->eid, pkt, len);
}

void net_send_ack(struct fmx_endpoint *ep, struct partner *p) {
  struct net_ep *ne = net_ep(ep);
  struct net_peer *np = transport_state(p);
  struct net_hdr h;
  net_hdr_to(ep, p, &h, NET_ACK);
  h.ack = net_rel_ack_value(np->rel);
  h.len = (uint16_t)net_put_ack(ne->pkt + NET_HDR_LEN, net_rel_sack(np->rel));
  h.flags = (uint16_t)(net_rel_dups(np->rel) << NET_ACK_DUPS_SHIFT);
  net_put_hdr(ne->pkt, &h);
  net_rel_acked(np->rel);
  net_xmit(ep, &np->addr, transport_peer(p)->eid, ne->pkt, NET_HDR_LEN + h.len);
}

static size_t net_max_payload(struct partner *p) {
  const struct net_peer *np = transport_state(p);
  return np->pkt_max - NET_HDR_LEN - NET_RECORD_HDR;
}

/* Eager up to the point where pulling pays: FMX_NET_PULL_THRESHOLD, or
 * by default net_eager_bytes. */
static uint64_t net_eager_max(struct partner *p) {
  if (fmx_cfg.net_pull_threshold) return fmx_cfg.net_pull_threshold - 1;
  const struct net_peer *np = transport_state(p);
  struct net_ep *ne = net_ep(np->ep);
  return net_eager_bytes(ne->sock.wire, net_train_sock(ne, np) != NULL, np->pkt_max);
}

static void net_batch(struct fmx_endpoint *ep, uint64_t bytes) {
  struct net_ep *ne = net_ep(ep);
  ne->train.want = bytes;
  if (!bytes) net_train_flush(ep);
}

/* The DATA packet whose body (len bytes) is written in b, a buffer of the
 * pool, past the header: into p's stream, which keeps b, and onto the
 * wire from there. 0, or -errno (not sent; b back to the pool). */
static int send_data(struct fmx_endpoint *ep, struct partner *p, uint8_t *b, uint16_t len, uint16_t flags,
                     uint64_t now) {
  struct net_ep *ne = net_ep(ep);
  struct net_peer *np = transport_state(p);
  struct net_hdr nh;
  net_hdr_to(ep, p, &nh, NET_DATA);
  nh.seq = np->rel->next_seq;
  nh.ack = net_rel_ack_value(np->rel);
  nh.len = len;
  nh.flags = net_train_can(ne, np, net_max_payload(p)) ? flags | NET_F_TRAIN : flags;
  net_put_hdr(b, &nh);
  int r = net_rel_keep(np->rel, b, NET_HDR_LEN + len, now);
  if (r < 0) {
    net_pool_put(&ne->pool, b);
    return r;
  }
  net_rel_acked_on_data(np->rel); /* piggybacked */
  if (nh.flags & NET_F_TRAIN)
    net_train_add(ep, p, b, NET_HDR_LEN + len);
  else
    net_xmit(ep, &np->addr, transport_peer(p)->eid, b, NET_HDR_LEN + len);
  net_arm_timers(ne, np, now);
  return 0;
}

static int net_push(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
                    int iovcnt) {
  struct net_ep *ne = net_ep(ep);
  struct net_peer *np = transport_state(p);
  if (h->len > net_max_payload(p)) return -EINVAL;
  if (np->dial) return -EAGAIN; /* its handshake first */
  if (net_peer_live(ne, np) < 0) return -ENOMEM;
  if (!net_rel_can_send(np->rel)) return -EAGAIN; /* room */
  uint8_t *b = net_pool_get(&ne->pool);
  if (!b) return -ENOMEM;
  if (h->type == PROTO_CLOSE) {
    np->close_seq = np->rel->next_seq;
    np->close_sent = 1;
  }
  net_put_record(b + NET_HDR_LEN, h);
  record_gather(b + NET_HDR_LEN + NET_RECORD_HDR, iov, iovcnt, h->len);
  return send_data(ep, p, b, (uint16_t)(NET_RECORD_HDR + h->len), NET_F_FIRST | NET_F_LAST, sys_now_ns());
}

/* A partner we wait for (a rendezvous it has not pulled, a message it has
 * not finished sending us) and that owes us no ack says nothing while it
 * has nothing to say: one that died would leave us waiting forever. So
 * when it has been silent for probe_step we send it a probe, a DATA packet
 * with no byte, in its stream: acked like any packet, or resent until
 * FMX_NET_TIMEOUT_MS fails the partner (net_rel_timers). */
static void probe(struct fmx_endpoint *ep, struct partner *p, uint64_t now) {
  struct net_peer *np = transport_state(p);
  np->probe_ns = now;
  uint8_t *b = net_pool_get(&net_ep(ep)->pool);
  if (b && send_data(ep, p, b, 0, 0, now) == 0) TRANSPORT_CNT(ep, NET_PROBES); /* else (no memory) at the next look */
}

/* ---- timers and progress ------------------------------------------------ */

/* Add what the partners' streams counted since the last look. */
static void count_rel(struct fmx_endpoint *ep) {
  struct net_rel_counts *now = &net_ep(ep)->rel_counts, *seen = &net_ep(ep)->rel_seen;
  uint64_t *c = transport_ep(ep)->bulk->counters;
  c[CNT_NET_RESENT] += now->resent - seen->resent;
  c[CNT_NET_GAP_RESENT] += now->gap_resends - seen->gap_resends;
  c[CNT_NET_EARLY_RESENT] += now->early_resends - seen->early_resends;
  c[CNT_NET_CWND_CUTS] += now->cwnd_cuts - seen->cwnd_cuts;
  c[CNT_NET_CWND_UNDONE] += now->cwnd_undone - seen->cwnd_undone;
  c[CNT_NET_DUPLICATES] += now->dups - seen->dups;
  c[CNT_NET_EARLY] += now->early - seen->early;
  c[CNT_NET_FAR] += now->far - seen->far;
  *seen = *now;
}

void net_resend_before(struct fmx_endpoint *ep, struct partner *p, uint32_t upto) {
  struct net_emit a = {ep, p};
  net_rel_resend_before(((struct net_peer *)transport_state(p))->rel, upto, NET_RESEND_BEFORE_MAX, net_emit, &a);
}

/* A partner leaves the count of those alive (it failed, or is released). */
static void uncount(struct net_ep *ne, struct net_peer *np) {
  net_wheel_cancel(&ne->timers, &np->timer);
  if (np->counted) ne->npeers--;
  np->counted = 0;
  if (np->train_wait) ne->trains_waiting--;
  np->train_wait = 0;
}

/* One partner's timers: resends (at most *budget), a delayed ack, a
 * partner gone silent, its pulls; then its next look: soon while anything
 * of it is pending, now while resends are left for the next pass, after a
 * while when we only wait for it (a probe), else none. */
static void run_peer(struct fmx_endpoint *ep, struct partner *p, uint64_t now, uint32_t *budget) {
  struct net_ep *ne = net_ep(ep);
  struct net_peer *np = transport_state(p);
  if (transport_peer(p)->state != PARTNER_ALIVE) {
    uncount(ne, np);
    return;
  }
  if (np->dial) {
    if (!net_dial_timer(ep, p, now)) uncount(ne, np);
    return;
  }
  if (!np->rel) return; /* it only connected: nothing to time */
  struct net_emit a = {ep, p};
  int sent = net_rel_timers(np->rel, now, *budget, net_emit, &a);
  if (sent == -ETIMEDOUT) {
    TRANSPORT_CNT(ep, NET_TIMEOUTS);
    log_warn("FMX-NET-TIMEOUT", "endpoint %u: endpoint %u of board %012llx acked nothing for %llu ms: gone",
             transport_ep(ep)->eid, transport_peer(p)->eid, (unsigned long long)transport_peer(p)->nic,
             (unsigned long long)fmx_cfg.net_timeout_ms);
    uncount(ne, np);
    transport_up->peer_fail(ep, p, PARTNER_DEAD, FMX_REMOTE_ENDPOINT_UNREACHABLE);
    return;
  }
  *budget -= (uint32_t)sent;
  if (net_rel_ack_due(np->rel, now)) net_send_ack(ep, p);
  int pulls = net_pull_timers(ep, p, now);
  if (pulls < 0) {
    uncount(ne, np); /* it failed */
    return;
  }
  if (!*budget && !net_rel_idle(np->rel)) {
    TRANSPORT_CNT(ep, NET_RESENDS_HELD);
    net_wheel_arm(&ne->timers, &np->timer, now);
  } else if (!net_rel_idle(np->rel) || np->rel->unacked || pulls) {
    net_arm_timers(ne, np, now);
  } else if (transport_up->peer_waited(p)) {
    if (now - np->heard_ns >= ne->probe_step && now - np->probe_ns >= ne->probe_step) probe(ep, p, now);
    net_wheel_arm(&ne->timers, &np->timer, now + ne->probe_step / 2);
  }
}

/* The partners whose timers are due, each taken off the wheel and put
 * back at its next look. A pass resends one packet a partner at most
 * (net_rel_timers), and at most one window's packets (FMX_NET_WINDOW)
 * across all of them: with many partners losing at once (a port that
 * overflowed) the rest go at the next pass, so that no progress call
 * turns into a storm; the partners left go first then. (The rest of a
 * flight whose lone resend's ack says it was lost goes with that ack,
 * at most the partner's window: net_rel_on_ack.) */
static void run_timers(struct fmx_endpoint *ep, uint64_t now) {
  struct net_ep *ne = net_ep(ep);
  uint32_t budget = (uint32_t)fmx_cfg.net_window;
  /* The bulk socket is read only while we pull, and a send may take the
   * error an ICMP reported, leaving its entry queued: errors queued there
   * (net_ep.c, IP_RECVERR) go once per first resend wait. */
  if (ne->bulk_own && now - ne->errq_ns >= fmx_cfg.net_rto_us * 1000ull) {
    ne->errq_ns = now;
    net_sock_drop_errors(&ne->bsock);
  }
  net_pull_tick(ep, now);
  struct net_timer *t;
  while (budget && (t = net_wheel_expire(&ne->timers, now)) != NULL) {
    struct net_peer *np = container_of(t, struct net_peer, timer);
    run_peer(ep, transport_partner(np), now, &budget);
  }
  count_rel(ep);
}

static void net_progress(struct fmx_endpoint *ep, transport_deliver_fn deliver) {
  struct net_ep *ne = net_ep(ep);
  if (!ne->on) return;
  if (!ne->npeers && !ne->pend.busy && !ne->look && ++ne->skipped < NET_IDLE_PASSES) return;
  ne->skipped = 0;
  ne->look = 0;
  /* While we pull, how long we were away between passes: what we asked
   * must keep the port busy meanwhile (the budget's floor, net/grant.h). */
  if (ne->pulling) {
    uint64_t now = sys_now_ns();
    if (ne->pass_ns) net_grant_away(&ne->grant, now - ne->pass_ns, now);
    ne->pass_ns = now;
  } else {
    ne->pass_ns = 0;
  }
  int got = net_drain(ep, &ne->sock, 0, deliver);
  if ((ne->sock.stamps > 0 || ne->bsock.stamps > 0) && !ne->exporting && !ne->pulling &&
      (ne->stamps_quiet += (uint32_t)got) >= NET_GRO_QUIET &&
      (net_sock_stamps(&ne->sock, 0) | net_sock_stamps(&ne->bsock, 0)))
    TRANSPORT_CNT(ep, NET_STAMP_SWITCHES);
  /* The bulk socket while we pull, and after a train's head came
   * (net_bulk_due; a pass that finds nothing there counts down). */
  if (net_bulk_due(ep)) {
    if (!ne->pulling) TRANSPORT_CNT(ep, NET_TRAIN_READS);
    if (!net_drain(ep, &ne->bsock, 1, deliver) && ne->trains_due) ne->trains_due--;
  }
  /* Timers run at a tenth of a millisecond at the finest: a look at the
   * clock every 8th pass is enough, and a spinning waiter saves the rest. */
  if (ne->timers.armed && (++ne->ticks & 7) == 0) {
    uint64_t now = sys_now_ns();
    if (net_wheel_due(&ne->timers, now)) run_timers(ep, now);
  }
}

static struct bulk_conn *net_conn(struct partner *p) {
  struct net_peer *np = transport_state(p);
  return net_peer_live(net_ep(np->ep), np) == 0 ? &np->pull->lend : NULL;
}

/* We give up on p (no memory for what it sent us: proto_abort). A NACK
 * tells it at once, and its requests with us fail. Should the NACK be
 * lost, what it sends next finds no partner here and is refused
 * (NET_NACK_BAD_SESSION), or its probe is, if it only waits. */
static void net_abort(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code) {
  (void)code; /* always a lack of memory (proto_abort's callers) */
  const struct transport_peer *t = transport_peer(p);
  net_nack(ep, &((struct net_peer *)transport_state(p))->addr, t->eid, t->session, NET_NACK_NO_MEMORY, 0);
}

static void net_release(struct fmx_endpoint *ep, struct partner *p) {
  struct net_peer *np = transport_state(p);
  uncount(net_ep(ep), np);
  net_ptab_del(&net_ep(ep)->ptab, &np->hent);
  net_pull_fini(p);
  net_dial_end(np);
  net_peer_unlive(np);
}

const struct fmx_transport_ops net_transport = {
    .name = "net",
    .partner_size = sizeof(struct net_peer), /* aligned as TRANSPORT_STATE_ALIGN allows (below) */
    .ep_size = sizeof(struct net_ep),
    .remote = 1,
    .open = net_open,
    .close = net_close,
    .connect = net_connect,
    .dial = net_dial,
    .dialing = net_dialing,
    .push = net_push,
    .max_payload = net_max_payload,
    .eager_max = net_eager_max,
    .batch = net_batch,
    .conn = net_conn,
    .abort = net_abort,
    .poll = NULL, /* net_progress takes every partner's packets */
    .progress = net_progress,
    .wait_fd = net_wait_fd,
    .nic = net_nic,
    .release = net_release,
    .ep_fini = net_ep_fini,
};

_Static_assert(_Alignof(struct net_peer) <= TRANSPORT_STATE_ALIGN, "a partner's state is placed at that alignment");
