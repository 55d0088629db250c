/* SPDX-License-Identifier: MIT */
/*
 * The pull protocol: how the bytes of a rendezvous cross hosts
 * (docs/protocol.md, "Large messages"). The engine `pull` (bulk/pull.c)
 * drives it through what each partner lends (struct bulk_conn, its pull
 * ops below).
 *
 * The sender's side, its answers paced, is pull_send.c's; the receiver's
 * scheduler (which pull asks next) is pull_grant.c's, its timers (asking
 * again after a silence, failing a silent sender) pull_timer.c's, and what
 * the receiver's files share pull_int.h's.
 *
 * The receiver cuts the message into frames (the bytes one packet carries)
 * and the frames into blocks (at most 64 frames and 64 KiB of packets, so
 * one UDP GSO send carries a block). It asks for runs of frames (PULL), in
 * order, a block or a quarter of its budget at most, while its budget of
 * bytes on their way (net/grant.h), shared by every pull of the endpoint,
 * has room: the pull with the fewest bytes left to ask goes first (shortest
 * remaining first), and the frames that come make room for the next. The
 * sender
 * answers each PULL from its buffer (PULL_REPLY, one per frame), and keeps
 * no state but the transfer it serves. Frames are written straight into
 * the receive buffer at their offset; a bitmap per block says which came.
 *
 * Nothing of this is sequenced: a lost PULL or reply is found by the
 * receiver, who asks for the missing frames again
 *  - at once, when frames of a block it asked later arrive while an
 *    earlier one still misses some (the sender answers in order: those are
 *    lost), and
 *  - after FMX_NET_RTO_US without any frame (backing off to
 *    FMX_NET_RTO_MAX_US): the tail of a message, or a sender that is busy.
 * A sender silent for FMX_NET_TIMEOUT_MS while we pull fails the partner.
 * Duplicates (a frame asked twice, a duplicated packet) find their bit
 * clear and are dropped. The receiver's FIN (a record) completes the
 * sender.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/config.h"
#include "base/log.h"
#include "bulk/engine.h"
#include "net/net_int.h"
#include "net/pull_int.h"
#include "platform/copy.h"
#include "platform/sys.h"

/* How a run was asked (net_pull_send): at our bulk socket, on the wire while
 * its sender answers there (ask_wire), on the wire once to see whether it
 * answers there (wire_probe), or at our bulk socket while on the wire, to
 * see whether the bulk answers come again. */
enum ask_way { ASK_BULK, ASK_WIRE_HELD, ASK_WIRE_PROBE, ASK_BULK_TRY };

/* ---- the receiver ------------------------------------------------------- */

/* Its answers to our pulls stopped coming to our bulk socket: a firewall
 * in front of the bulk port, or a kernel on the way that drops them (a
 * sender's own refusals it sends on the wire itself: answer), while it
 * answers on the wire (a PULL that asked so after silences,
 * net_pull_timers). Ask it to answer on the wire for FMX_NET_RTO_MAX_US, twice
 * that each time in a row (up to 64 times), then try our bulk socket
 * again: a slow partner loses only its GSO sends for that long; a gone one
 * is failed by its timeout either way. */
static void on_wire(struct fmx_endpoint *ep, struct net_peer *np, uint64_t now, const char *why) {
  if (np->pull->ask_wire || !net_pull_bulk_answers(np)) return;
  uint64_t hold = fmx_cfg.net_rto_max_us * 1000ull << (np->pull->wire_holds < 6 ? np->pull->wire_holds : 6);
  if (!np->pull->wire_logged) {
    uint32_t ip;
    uint16_t port;
    net_bulk_addr(ep, &ip, &port);
    log_warn("FMX-NET-BULK-SILENT",
             "endpoint %u: endpoint %u of board %012llx %s: its answers to our pulls come on the wire, not to our "
             "UDP port %u, from now on for a while (a firewall, a full neighbour table?)",
             transport_ep(ep)->eid, transport_peer(transport_partner(np))->eid, (unsigned long long)transport_peer(transport_partner(np))->nic,
             why, (unsigned)port);
    np->pull->wire_logged = 1;
  }
  np->pull->ask_wire = 1;
  np->pull->wire_until_ns = now + hold;
  np->pull->wire_holds++;
  np->pull->bulk_try_ns = now; /* the first try two waits on */
  TRANSPORT_CNT(ep, NET_PULL_ON_WIRE);
}

/* A pull's silent waits in a row become n (its partner counts the silent). */
void net_pull_silence(struct net_peer *np, struct net_pull *pl, uint32_t n) {
  np->pull->pulls_silent += (n > 0) - (pl->silences > 0);
  pl->silences = n;
}

/* Why a block is asked again (ask_block). */
enum { ASK_GAP, ASK_TIMER };

/* While we ask on the wire, a run every two waits goes to our bulk socket
 * all the same: should its answer come there, the bulk socket works
 * (net_pull_on_reply). Losses it did not cause moved us (a probe's answer
 * came on the wire while random loss, not a firewall, had kept the others
 * from coming): a 16 MiB ping-pong at 10% loss then stayed on the wire,
 * at 340-600 MB/s against 2,000-2,500, until the hold ran out. Where the
 * bulk answers do not come, the try's run is asked again on the wire
 * when the wire's answers to what was asked after it come (ask_lost). */
static enum ask_way ask_way(struct net_peer *np, uint64_t now) {
  struct net_pull_peer *pp = np->pull;
  if (pp->wire_probe) {
    pp->wire_probe = 0;
    return ASK_WIRE_PROBE;
  }
  if (!pp->ask_wire) return ASK_BULK;
  if (now - pp->bulk_try_ns < 2 * net_pull_wait(np)) return ASK_WIRE_HELD;
  pp->bulk_try_ns = now;
  return ASK_BULK_TRY;
}

void net_pull_send(struct net_peer *np, struct net_pull *pl, uint32_t first, uint32_t count, uint64_t now) {
  struct fmx_endpoint *ep = np->ep;
  struct net_ep *ne = net_ep(ep);
  struct net_hdr h;
  net_hdr_to(ep, transport_partner(np), &h, NET_PULL);
  h.ack = net_rel_ack_value(np->rel);
  enum ask_way way = ask_way(np, now);
  if (way == ASK_WIRE_HELD || way == ASK_WIRE_PROBE) h.flags = NET_F_WIRE;
  h.len = (uint16_t)net_put_pull(ne->pkt + NET_HDR_LEN, pl->x->peer_id, pl->x->id, pl->frame, first, count);
  net_put_hdr(ne->pkt, &h);
  net_xmit(ep, &np->addr, transport_peer(transport_partner(np))->eid, ne->pkt, NET_HDR_LEN + h.len);
  struct pull_block *blk = &pl->blk[first / pl->bframes]; /* a run stays within its block */
  blk->lo = (uint8_t)(first % pl->bframes);
  blk->hi = (uint8_t)(blk->lo + count);
  blk->wire = (uint8_t)way;
  if (way == ASK_BULK_TRY) blk->tried = 1;
}

/* Ask again for what block b still misses, one PULL per run of missing
 * frames: later frames came without them (ASK_GAP), or nothing came for a
 * wait (ASK_TIMER). */
static void ask_block(struct net_peer *np, struct net_pull *pl, uint32_t b, int why, uint64_t now) {
  uint64_t m = pl->blk[b].missing;
  pl->blk[b].asked = ++np->pull->stamp;
  /* After a gap the asks before were lost: all it misses is in this one.
   * After a silence they may still come (a sender off its core answers
   * them late), and a frame that comes may answer the first. */
  if (why == ASK_GAP) pl->blk[b].oldest = pl->blk[b].asked;
  pl->blk[b].again = 1;
  for (uint32_t i = 0, n; (n = net_mask_run(m, pl->bframes, &i)) != 0; i += n) {
    net_pull_send(np, pl, b * pl->bframes + i, n, now);
    TRANSPORT_ADD(np->ep, NET_PULL_REASKED, n);
  }
}

/* Block b has all its frames asked and come. */
static int block_done(const struct net_pull *pl, uint32_t b) {
  return !pl->blk[b].missing && (uint64_t)(b + 1) * pl->bframes <= pl->nextf;
}


/* The last run asked of block b lost its end to a queue (net/grant.h). */
static int tail_dropped(const struct net_pull *pl, uint32_t b) {
  const struct pull_block *blk = &pl->blk[b];
  return net_grant_tail(blk->missing, blk->lo, blk->hi);
}

/* Stamp a was given before stamp b (they wrap). */
static int before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

/* Whether the answers to a run asked `way` come to our bulk socket (else
 * on the wire). */
static int way_bulk(const struct net_peer *np, uint8_t way) {
  return (way == ASK_BULK || way == ASK_BULK_TRY) && net_pull_bulk_answers(np);
}

/* Frames asked with `stamp` came, to our bulk socket or not (`bulk`):
 * whatever an earlier request to the same partner, for any of its pulls,
 * asked to come the same way and still misses was lost (the sender
 * answers its requests in order). The budget is cut when the loss is a
 * queue's (net_pull_crowded, or a tail drop). */
static void ask_lost(struct net_peer *np, uint32_t stamp, int bulk, uint64_t now) {
  int lost = 0, crowd = net_pull_crowded(net_ep(np->ep)), tail = 0;
  uint64_t asked = 0; /* the newest ask of what was lost */
  struct list_node *pos;
  list_for_each(pos, &np->pull->pulls) {
    struct net_pull *pl = list_entry(pos, struct net_pull, node);
    if (pl->low >= pl->next || !before(pl->blk[pl->low].asked, stamp)) continue; /* the common case */
    for (uint32_t b = pl->low; b < pl->next; b++) {
      /* Answers keep their order on one way, not across two (the bulk
       * socket and the wire while we change from one to the other); but
       * a try of our bulk socket, passed by the wire's answers asked
       * after it, is taken as lost (a blocked port never answers it; one
       * that works answers it twice at most). */
      int try = pl->blk[b].wire == ASK_BULK_TRY;
      if (!pl->blk[b].missing || !before(pl->blk[b].asked, stamp) || (way_bulk(np, pl->blk[b].wire) != bulk && !try))
        continue;
      lost |= !try; /* a try says nothing of a queue */
      if (!crowd && !try && tail_dropped(pl, b)) tail = 1;
      if (pl->blk[b].asked_ns > asked) asked = pl->blk[b].asked_ns;
      ask_block(np, pl, b, ASK_GAP, now);
      pl->asked_ns = now;
    }
  }
  if (tail) TRANSPORT_CNT(np->ep, NET_GRANT_TAILS);
  if (lost && (crowd || tail) && net_grant_lost(&net_ep(np->ep)->grant, asked, now)) {
    TRANSPORT_CNT(np->ep, NET_GRANT_CUTS);
    TRANSPORT_SET(np->ep, NET_GRANT_QUEUE, 0);
  }
}

/* How long after asking a block we wait before asking again: what a block
 * asked once took to come whole, smoothed, plus four times its deviation
 * (Karn's rule, as TCP's: blocks wait behind others' in the port's queue,
 * and a wait that ignores it asks again for frames on their way), no
 * shorter than the timers can tell (rto_min_ns, as rel.c's), at most
 * FMX_NET_RTO_MAX_US (a sender that waits for a core answers late, and is
 * not asked again for it: rel.c, base_rto); FMX_NET_RTO_US, the first
 * guess, until a block is timed. */
uint64_t net_pull_wait(const struct net_peer *np) {
  uint64_t rto = fmx_cfg.net_rto_us * 1000ull, most = fmx_cfg.net_rto_max_us * 1000ull,
           least = net_ep(np->ep)->rto_min_ns;
  if (!np->pull->srtt_ns) return rto;
  uint64_t w = np->pull->srtt_ns + 4 * np->pull->var_ns;
  return w < least ? least : w > most ? most : w;
}

static void block_timed(struct net_peer *np, const struct pull_block *blk, uint64_t now) {
  if (blk->again) return;
  net_rtt_sample(&np->pull->srtt_ns, &np->pull->var_ns, now - blk->asked_ns);
}

static struct net_pull *pull_of(struct net_peer *np, uint64_t id) {
  struct list_node *pos;
  if (!np->pull) return NULL;
  list_for_each(pos, &np->pull->pulls) {
    struct net_pull *pl = list_entry(pos, struct net_pull, node);
    if (pl->x->id == id) return pl;
  }
  return NULL;
}

/* pl's sender knows of it now. */
static void now_known(struct net_peer *np, struct net_pull *pl) {
  pl->known = 1;
  np->pull->pulls_unknown--;
}

/* Ask again, after a wait, for all that pl misses. */
void net_pull_ask_missing(struct net_peer *np, struct net_pull *pl, uint64_t now) {
  for (uint32_t b = pl->low; b < pl->next; b++)
    if (pl->blk[b].missing) ask_block(np, pl, b, ASK_TIMER, now);
}

/* The first answer to a run asked once came (its kernel's stamp at_ns),
 * its sender having held our PULL for what `hold` says, `waited` of it
 * before it read the PULL (wire.h): the rest of the wait is the
 * network's, there and back, and what it takes beyond the shortest is a
 * queue's (net_grant_delay). */
static void answer_timed(struct fmx_endpoint *ep, struct net_grant *g, uint32_t hold, uint16_t waited,
                         uint64_t asked_ns, uint64_t at_ns, uint64_t now) {
  /* Both clocks read together: `now` was read before the datagram's
   * earlier packets were taken. A GSO train has one stamp, its head's: the
   * first frame of a run is its train's. */
  uint64_t held, came = net_stamp_now(at_ns, sys_now_ns());
  if (!came || came < asked_ns || !net_hold_get(hold, &held) || held > came - asked_ns) return;
  /* Its wait for a core, which the floor covers; not the rest of its hold,
   * its pacing: the bytes it holds then wait behind those it sends, for
   * which the budget need not grow. */
  uint64_t core = net_wait_get(waited);
  net_grant_away(g, core < held ? core : held, now);
  if (net_grant_delay(g, came - asked_ns - held, now)) TRANSPORT_CNT(ep, NET_GRANT_DELAY_CUTS);
  if (g->qdelay_ns > transport_ep(ep)->bulk->counters[CNT_NET_GRANT_QDELAY])
    TRANSPORT_SET(ep, NET_GRANT_QDELAY, g->qdelay_ns);
}

void net_pull_on_reply(struct fmx_endpoint *ep, struct partner *p, const struct net_pkt *pk, int bulk, uint64_t at_ns,
                       uint64_t now) {
  struct net_peer *np = transport_state(p);
  if (!np->pull) {
    TRANSPORT_CNT(ep, NET_LATE); /* nothing was ever pulled from it: a forged answer */
    return;
  }
  struct net_pull *pl = pull_of(np, pk->u.reply_data.rreq);
  uint32_t i = pk->u.reply_data.index;
  if (!pl || !pl->started || i >= pl->nframes) {
    TRANSPORT_CNT(ep, NET_LATE); /* a late answer to a pull that ended, or a forged one */
    return;
  }
  uint32_t b = i / pl->bframes;
  /* Its bulk answers come again: to a try while on the wire (taken as
   * lost and asked again on the wire meanwhile, maybe), the hold ends; not
   * to a late ask from before it (a sender whose bulk socket refuses now
   * and then would end each hold at once). Off the wire, the holds'
   * doubling starts over. */
  if (bulk && np->pull->wire_holds && (!np->pull->ask_wire || (b < pl->next && pl->blk[b].tried))) {
    if (np->pull->ask_wire) TRANSPORT_CNT(ep, NET_PULL_BULK_BACK);
    np->pull->ask_wire = 0;
    np->pull->wire_holds = 0;
  }
  /* Asked at our bulk socket, answered on the wire: its bulk socket
   * refused them (answer); or our probe was answered there. Our next asks
   * say so: the answers then come one way, in the order asked (ask_lost),
   * within the wire's window. An answer to a run asked on the wire while
   * we did (on its way when the hold ended) says nothing. */
  if (!bulk && !np->pull->ask_wire && net_pull_bulk_answers(np) && (b >= pl->next || pl->blk[b].wire != ASK_WIRE_HELD))
    on_wire(ep, np, now, "answered on the wire");
  uint32_t in = i % pl->bframes;
  uint64_t bit = 1ull << in;
  if (b >= pl->next || !(pl->blk[b].missing & bit)) {
    TRANSPORT_CNT(ep, NET_DUPLICATES);
    return;
  }
  uint64_t off = (uint64_t)i * pl->frame;
  size_t n = pk->h.len - NET_PULL_REPLY_HDR;
  if (n != (pl->x->want - off < pl->frame ? pl->x->want - off : pl->frame)) {
    TRANSPORT_CNT(ep, NET_DROPPED);
    return;
  }
  copy_segs(pl->x->segs, pl->x->nseg, off, (void *)(pk->body + NET_PULL_REPLY_HDR), n, 1, NULL);
  pl->x->done += n;
  TRANSPORT_ADD(ep, BULK_PULL_BYTES, n);
  pl->heard_ns = now;
  if (!pl->known) now_known(np, pl); /* answered: it knows of the pull */
  net_pull_silence(np, pl, 0);
  struct net_grant *g = &net_ep(ep)->grant;
  uint64_t had = n < pl->out ? n : pl->out;
  pl->out -= had;
  net_grant_came(g, had, now);
  if (!pl->blk[b].heard) {
    pl->blk[b].heard = 1;
    /* One of the run timed, asked once (its PULL lost, the next run's
     * answers would time the wait between the two asks too). */
    if (!pl->blk[b].again && in >= pl->blk[b].tlo && in < pl->blk[b].thi) {
      net_grant_rtt(g, now - pl->blk[b].timed_ns, now);
      answer_timed(ep, g, pk->h.seq, pk->h.flags, pl->blk[b].timed_ns, at_ns, now);
    }
  }
  if (!(pl->blk[b].missing &= ~bit)) {
    block_timed(np, &pl->blk[b], now);
    pl->open--;
    while (pl->low < pl->next && block_done(pl, pl->low)) pl->low++;
  }
  /* The frame answers a request no older than the block's oldest on its
   * way (which one, its runs do not say). */
  ask_lost(np, pl->blk[b].oldest, bulk, now);
  net_pull_grant(ep, now, 0);
}

static int pull_recv_start(void *arg, struct bulk_xfer *x) {
  struct net_peer *np = arg;
  if (transport_peer(transport_partner(np))->state != PARTNER_ALIVE) return -ESRCH;
  struct net_pull *pl = calloc(1, sizeof *pl);
  if (!pl) return -ENOMEM;
  pl->x = x;
  pl->np = np;
  pl->unasked = x->want;
  pl->frame = net_pull_frame_bytes(np);
  pl->nframes = (uint32_t)((x->want + pl->frame - 1) / pl->frame);
  pl->per = pl->frame + NET_HDR_LEN + NET_PULL_REPLY_HDR; /* the largest answer */
  pl->bframes = NET_PULL_BLOCK_BYTES / pl->per;
  if (pl->bframes > NET_PULL_FRAMES_MAX) pl->bframes = NET_PULL_FRAMES_MAX;
  if (pl->bframes < 1) pl->bframes = 1;
  pl->nblocks = (pl->nframes + pl->bframes - 1) / pl->bframes;
  pl->blk = calloc(pl->nblocks, sizeof *pl->blk);
  if ((uint64_t)pl->nframes * pl->frame < x->want || !pl->blk) { /* beyond 2^32 frames, or no memory */
    free(pl->blk);
    free(pl);
    return -ENOMEM;
  }
  list_add_tail(&np->pull->pulls, &pl->node);
  net_ep(np->ep)->pulling++;
  /* Its answers may come as GSO trains to our own socket (the UDP wire),
   * and their arrivals time the network (answer_timed). */
  net_gro_want(np->ep);
  net_stamps_want(np->ep);
  return 0;
}

static int pull_recv_progress(void *arg, struct bulk_xfer *x) {
  struct net_peer *np = arg;
  struct net_pull *pl = pull_of(np, x->id);
  if (!pl) return -ESRCH; /* the partner failed: its pulls went */
  if (!pl->started) {
    /* After recv_start the CTS went: now the sender knows the transfer. */
    uint64_t now = sys_now_ns();
    pl->started = 1;
    pl->heard_ns = now;
    pl->cts_seq = np->rel->next_seq; /* the CTS went before (or waits in the backlog: then known too soon) */
    pl->known = !net_seq_lt(np->rel->una, pl->cts_seq);
    if (!pl->known) np->pull->pulls_unknown++;
    if (!np->pull->pulls_begun++) net_ep(np->ep)->senders++;
    net_pull_queue(net_ep(np->ep), pl);
    net_pull_grant(np->ep, now, 0);
    net_arm_timers(net_ep(np->ep), np, now);
  }
  return x->done == x->want ? BULK_DONE : BULK_MORE;
}

/* Whether pl's sender knows of it (its CTS acked, the packets before it
 * too). */
int net_pull_known(struct net_peer *np, struct net_pull *pl) {
  if (!pl->known && !net_seq_lt(np->rel->una, pl->cts_seq)) now_known(np, pl);
  return pl->known;
}

/* Asked before its CTS came, a pull's PULLs may have been dropped (the
 * sender knew nothing of it, and keeps only the last so many such): when
 * the CTS is acked, and nothing of the pull came for a wait (its timer
 * found it so), all it misses is asked again at once, unless the ack came
 * on an answer to it, or its answers come another way than the ack (the
 * sender answered the PULLs it kept as the CTS came: asked again, they
 * would all come twice). Before, its timer read the drops as silences and
 * backed off: a lost CTS held 16 MiB ping-pongs at 10% loss for 50-100 ms
 * (the re-asks 1.6, 3.1, 6.2 ... 50 ms apart). */
void net_pull_acked(struct fmx_endpoint *ep, struct partner *p, uint64_t answered, uint64_t now) {
  struct net_peer *np = transport_state(p);
  struct list_node *pos;
  list_for_each(pos, &np->pull->pulls) {
    struct net_pull *pl = list_entry(pos, struct net_pull, node);
    /* Only one its timer found silent: the first answers carry the
     * CTS's ack themselves. */
    if (!pl->started || pl->known || !net_pull_known(np, pl) || !pl->reasked_ns || pl->x->id == answered) continue;
    pl->kicks = 0;
    net_pull_silence(np, pl, 0);
    if (net_pull_bulk_answers(np) && !np->pull->ask_wire) {
      /* Its answers come to our bulk socket, this ack came on the wire:
       * the sender may have answered the PULLs it kept already, behind
       * it. A sign of life: its timer asks again for what is still
       * missing after a wait from now, not at once (asked at once, a
       * budget's worth came twice, 1,804 frames, in one of three 16 MiB
       * ping-pongs at 10% loss). */
      pl->heard_ns = now;
      continue;
    }
    TRANSPORT_CNT(ep, NET_PULL_CTS_ACKED);
    net_pull_ask_missing(np, pl, now);
    pl->reasked_ns = pl->asked_ns = now;
  }
}

/* ---- both --------------------------------------------------------------- */

static void pull_free(struct net_peer *np, struct net_pull *pl) {
  net_pull_silence(np, pl, 0);
  if (pl->started && !pl->known) np->pull->pulls_unknown--;
  list_del(&pl->node);
  net_pull_unqueue(pl);
  net_grant_forget(&net_ep(np->ep)->grant, pl->out);
  if (pl->started && !--np->pull->pulls_begun) net_ep(np->ep)->senders--;
  net_ep(np->ep)->pulling--;
  free(pl->blk);
  free(pl);
}

/* Forget transfer x (NULL: every one) of np's, both ways. */
static void drop(struct net_peer *np, const struct bulk_xfer *x) {
  struct list_node *pos, *tmp;
  if (!np->pull) return;
  list_for_each_safe(pos, tmp, &np->pull->pulls) {
    struct net_pull *pl = list_entry(pos, struct net_pull, node);
    if (!x || pl->x == x) pull_free(np, pl);
  }
  net_pull_exports_drop(np, x);
}

static void pull_end(void *arg, struct bulk_xfer *x) {
  struct net_peer *np = arg;
  drop(np, x);
  net_pull_grant(np->ep, sys_now_ns(), 0); /* what it had on its way is room now */
}

static const struct bulk_pull_ops pull_ops = {
    .recv_start = pull_recv_start,
    .recv_progress = pull_recv_progress,
    .send_start = net_pull_send_start,
    .end = pull_end,
};

void net_pull_init(struct fmx_endpoint *ep, struct partner *p) {
  struct net_peer *np = transport_state(p);
  np->ep = ep;
}

int net_pull_attach(struct net_peer *np) {
  if (np->pull) return 0;
  struct net_pull_peer *pp = sys_zalloc(sizeof *pp);
  if (!pp) return -ENOMEM;
  list_init(&pp->pulls);
  list_init(&pp->exports);
  pp->lend.pull = &pull_ops;
  pp->lend.pull_arg = np;
  pp->lend.pipe_tx = pp->lend.pipe_rx = -1;
  np->pull = pp;
  return 0;
}

void net_pull_fini(struct partner *p) {
  struct net_peer *np = transport_state(p);
  if (np->ep) drop(np, NULL); /* net_pull_init ran */
  free(np->pull);
  np->pull = NULL;
}
