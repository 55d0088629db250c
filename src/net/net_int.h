/* SPDX-License-Identifier: MIT */
/* The net transport's own state (src/net only). */
#ifndef FMX_NET_NET_INT_H
#define FMX_NET_NET_INT_H

#include <stdint.h>

#include "base/list.h"
#include "bulk/conn.h"
#include "net/grant.h"
#include "net/pace.h"
#include "net/ptab.h"
#include "net/rel.h"
#include "net/sock.h"
#include "net/wheel.h"
#include "net/wire.h"
#include "transport/transport.h"

/* The pull protocol's sizes: a block (one request) is at most
 * NET_PULL_FRAMES_MAX frames (its bitmap is a word) and at most one UDP
 * GSO send (an IPv4 datagram: 65535 B less the IP and UDP headers). */
#define NET_PULL_FRAMES_MAX 64
#define NET_PULL_BLOCK_BYTES (65535 - 20 - 8)
/* A frame's bytes in at most NET_FRAME_IOV pieces of the sender's segments
 * (more: gathered into one); a GSO send's iovec. */
#define NET_FRAME_IOV 8
/* The UDP wire's socket takes GSO trains whole only while they come: GRO
 * costs every datagram (sock_udp.c). On as a pull begins or a packet sent
 * in a train comes (NET_F_TRAIN); off once NET_GRO_QUIET other packets
 * came with neither meanwhile, not at each pull's end: a switch is a system
 * call, and a pull of every other message would pay two. Kernel stamps
 * go off the same way (net.c). */
#define NET_GRO_QUIET 64
/* Passes that find nothing on the bulk socket after a train was announced
 * before it is left alone again (its packets are resent on the wire if
 * they came later still). */
#define NET_TRAIN_PASSES 256
#define NET_PULL_IOV (NET_PULL_FRAMES_MAX * (1 + NET_FRAME_IOV))

/* The next run of set bits of m at or after bit *i and below n (n <= 64):
 * its first bit in *i and its length (0: none left). Walks a block's
 * frames asked again (pull.c) and a run's frames to answer (pull_send.c). */
static inline uint32_t net_mask_run(uint64_t m, uint32_t n, uint32_t *i) {
  while (*i < n && !(m >> *i & 1)) (*i)++;
  uint32_t j = *i;
  while (j < n && (m >> j & 1)) j++;
  return j - *i;
}

/* What the net transport keeps of an endpoint (ops.ep_size). */
struct net_ep {
  int on;                  /* the socket is open */
  struct net_sock sock;
  /* Where the answers to our pulls come: sock itself on the UDP wire; a
   * UDP socket of its own beside the raw wire (bsock, bulk_own), whose GSO
   * trains move bulk faster than frames one by one (docs/protocol.md);
   * without it, raw frames one at a time. */
  struct net_sock bsock;
  int bulk_own;
  int epfd;                /* sock and bsock, for a waiter while we pull (with bulk_own only) */
  uint32_t pulling;        /* pulls that have begun and not ended */
  uint64_t pass_ns;        /* the last progress pass while we pulled (0: none since) */
  uint32_t gro_quiet;      /* DATA packets since the last pull began (sock's GRO goes off at NET_GRO_QUIET) */
  uint32_t pkt_max;        /* the largest packet, header included */
  uint32_t npeers;         /* partners alive at the last timer pass, or made since */
  uint32_t skipped;        /* progress passes that left the socket alone (no partner) */
  uint32_t ticks;          /* progress passes (the clock is read every 8th) */
  int look;                /* read the socket at the next pass */
  struct net_wheel timers; /* each partner with something pending (wheel.h), a tick timer_step wide */
  struct net_ptab ptab;    /* partners by (endpoint id, session) once their session is known (ptab.h) */
  struct net_pool pool;    /* the packets their streams keep (pool.h), pkt_max bytes each */
  uint64_t timer_step;     /* how soon a partner is looked at after something becomes pending */
  uint64_t probe_step;     /* how often a partner we wait for and that owes us no ack is probed */
  uint64_t rto_min_ns;     /* the least a measured resend wait may be */
  struct net_rel_cfg rel_cfg; /* every partner's stream's (net_rel_cfg_init, at open) */
  /* What they all counted (rel_cfg.counts), and of it what was already
   * added to the endpoint's counters (net.c, count_rel). */
  struct net_rel_counts rel_counts, rel_seen;
  uint64_t nack_ns;        /* when the last nack went (one per millisecond at most) */
  uint64_t query_ns;       /* when we last answered a HOST_QUERY (as often at most) */
  uint64_t errq_ns;        /* when the bulk socket's error queue was last emptied (net.c, run_timers) */
  uint32_t conn_seq;       /* the last connect's number */
  struct {                 /* our connect in flight (one at a time: ep->connect_lock) */
    int busy;
    int status;            /* -1: no answer yet; else an fmx_return_t */
    uint64_t nic;
    uint32_t eid, key, conn_seq, start;
    struct partner *p;     /* made (status FMX_SUCCESS); the core checks it is still the one asked for */
  } pend;
  uint64_t pull_window;     /* bytes a pull asks for at once (pull.c) */
  uint64_t pull_window_wire; /* the same from a peer that answers on the wire (no UDP address: it has none
                              * of ours it would take either, the subnet rule being the same both ways) */
  /* The receiver's scheduler (pull.c): the budget of bytes on their way to
   * us from every partner, and the pulls with blocks still to ask, fewest
   * bytes left first. */
  struct net_grant grant;
  struct list_node granting;
  /* The sender's pacing of its answers (pull_send.c, pace.h), one per
   * socket they go on (0: sock, 1: bsock), and the PULLs of all partners
   * that wait for room, in the order they came: a ring of cap (a power of
   * two) runs from head. */
  struct net_pace pace[2];
  struct net_pull_queue {
    struct net_pull_run *run;
    uint32_t cap, head, n;
    /* The runs answered last, a ring of NET_PULL_RECENT from sent_n - 1
     * back (allocated at the first): a PULL that came before one of them
     * gets none of the frames they answered (pull_send.c). */
    struct net_pull_sent *sent;
    uint32_t sent_n;
    /* PULLs that came before their transfer's CTS, a ring of
     * NET_PULL_EARLY (allocated at the first), answered when the CTS
     * comes (pull_send.c). */
    struct net_pull_early *early;
    uint32_t early_n;
  } answers;
  uint64_t grant_probe_ns; /* when a run last went beyond the budget (a probe) */
  uint32_t senders;        /* partners we pull from (a pull begun and not ended) */
  uint32_t trains_due;      /* passes left that read the bulk socket for trains announced (NET_TRAIN_PASSES) */
  uint32_t trains_waiting;  /* partners whose train's head came and not the packet after it (net_peer.train_wait) */
  uint32_t exporting;       /* transfers partners pull from us */
  uint32_t stamps_quiet;    /* datagrams on sock with no export nor pull left (stamps go off at NET_GRO_QUIET) */
  /* An eager message's fragments on their way out as one GSO send (net.c):
   * the packets, as their partner's rel slots keep them (nothing frees
   * those between a batch's pushes), every one seg bytes but the last. */
  struct {
    uint64_t want; /* payload bytes of the batch (ops.batch); 0: none */
    int n;
    uint16_t seg;
    uint32_t bytes;
    struct partner *p;
    struct iovec iov[NET_PULL_FRAMES_MAX];
  } train;
  uint8_t pkt[NET_HDR_LEN + NET_BODY_MAX]; /* a packet being written */
  uint8_t hdrs[NET_PULL_FRAMES_MAX * (NET_HDR_LEN + NET_PULL_REPLY_HDR)]; /* the heads of a PULL's answers */
};

/* A handshake of ours under way (net_conn.c, net_dial): nothing goes to
 * the partner but CONNECT, resent with backoff, until its reply completes
 * it (or its own CONNECT, when we dial each other) or the deadline fails
 * it. */
struct net_dial {
  uint32_t key, conn_seq;
  uint64_t next_ns, wait_ns, deadline_ns;
};

/* A partner's part of the pull protocol (pull.c): what we lend the engine
 * `pull`, the transfers we pull from the partner and those it pulls from
 * us. */
struct net_pull_peer {
  struct bulk_conn lend;
  struct list_node pulls, exports;
  uint64_t srtt_ns; /* how long a block takes to come, smoothed (0: not seen yet) */
  uint64_t var_ns;  /* its mean deviation, smoothed */
  uint32_t stamp;   /* pull requests sent to it: it answers them in this order */
  /* Our PULLs ask it to answer on the wire (NET_F_WIRE, ask_wire) until
   * wire_until_ns: its answers stopped coming to our bulk socket (pull.c,
   * on_wire); wire_holds: how many times in a row, each hold twice the one
   * before. */
  uint8_t ask_wire;
  uint8_t wire_logged; /* FMX-NET-BULK-SILENT was said of it (once a partner) */
  uint8_t wire_probe;  /* our next PULL asks for its answer on the wire (pull_timer.c, net_pull_timers) */
  uint64_t wire_until_ns;
  uint32_t wire_holds;
  /* While we ask on the wire: when a PULL last asked at our bulk socket
   * instead (pull.c, send_pull): its answer there ends the hold. */
  uint64_t bulk_try_ns;
  uint32_t pulls_begun;  /* our pulls from it begun and not ended */
  uint32_t pulls_silent; /* those its timer found silent (pull.c, net_pull_silence) */
  uint32_t pulls_unknown; /* those whose CTS it has not acked yet (pull.c, net_pull_acked) */
};

/* What it keeps of a partner (ops.partner_size). */
struct net_peer {
  /* Its stream, taken with its pull state at its first record either way
   * (net_peer_live), NULL before: an idle partner's bytes. */
  struct net_rel *rel;
  uint8_t counted;        /* in ne->npeers */
  uint8_t close_sent;     /* our CLOSE went (its seq: close_seq) */
  /* The head of a train of its came (in a frame) and not yet the packet
   * after it, train_next (the rest comes to our bulk socket: net_rx.c,
   * on_data). */
  uint8_t train_wait;
  uint32_t train_next;
  struct net_timer timer; /* its next look (ne->timers) */
  struct net_ptab_entry hent; /* in ne->ptab under its (eid, session), once known */
  struct net_addr addr;  /* where its packets go */
  struct net_addr baddr; /* where the answers to its pulls go (UDP); port 0: to addr, on our wire */
  uint32_t start;        /* our first seq (a repeated CONNECT is answered with it) */
  uint32_t peer_start;   /* its first seq: a CONNECT with another is a new connection */
  uint32_t pkt_max;      /* the largest packet to it: the smaller MTU of the two, our wire's share */
  uint32_t mtu;          /* the smaller MTU of the two */
  /* The pull protocol's (pull.c): taken with rel (net_peer_live). */
  struct net_pull_peer *pull;
  struct fmx_endpoint *ep;
  uint64_t probe_ns;     /* when we last probed it (net.c) */
  uint64_t heard_ns;     /* when a packet of it last came */
  uint32_t close_seq;    /* the seq of our CLOSE record to it (net_close)... */
  uint64_t left_ns;      /* when its CLOSE came (0: it did not) */
  /* Our handshake with it while under way (net_dial; NULL: none). */
  struct net_dial *dial;
};

extern const struct fmx_transport_ops net_transport;

static inline struct net_ep *net_ep(struct fmx_endpoint *ep) { return transport_ep_state(ep, &net_transport); }

/* Our bulk socket is read while we pull, and for NET_TRAIN_PASSES passes
 * that find nothing after a train's head came (net_rx.c, train_head); when
 * crowded, only while a train's rest is due. */
static inline int net_bulk_due(struct fmx_endpoint *ep) {
  const struct net_ep *ne = net_ep(ep);
  return ne->bulk_own && (ne->pulling || (ne->trains_due && (ne->trains_waiting || !transport_ep(ep)->crowded)));
}

/* net.c */
void net_xmit(struct fmx_endpoint *ep, const struct net_addr *to, uint32_t eid, const uint8_t *pkt, size_t len);
/* What a stream sends (rel.h's emit): to partner p of ep. */
struct net_emit {
  struct fmx_endpoint *ep;
  struct partner *p;
};
void net_emit(void *arg, uint8_t *pkt, size_t len);
/* An ACK to p of what its stream has received. */
void net_send_ack(struct fmx_endpoint *ep, struct partner *p);
/* Our packets to p before seq `upto` that are not acked go again now, at
 * most NET_RESEND_BEFORE_MAX of them (pull_timer.c: its sender drops our PULLs
 * until our CTS comes). */
#define NET_RESEND_BEFORE_MAX 8
void net_resend_before(struct fmx_endpoint *ep, struct partner *p, uint32_t upto);
/* A header to partner p (or to eid/session when p is NULL). */
void net_hdr_to(struct fmx_endpoint *ep, struct partner *p, struct net_hdr *h, unsigned type);
/* net_rx.c: read what sock holds (the bulk socket's when bulk), each
 * record to deliver: the packets taken. */
int net_drain(struct fmx_endpoint *ep, struct net_sock *sock, int bulk, transport_deliver_fn deliver);
/* A pull of ours begins, or a packet sent in a train came: the UDP wire's
 * socket takes GSO trains whole until NET_GRO_QUIET other packets come
 * with neither. */
void net_gro_want(struct fmx_endpoint *ep);
/* A transfer to be pulled from us, or one we pull, began: both our
 * sockets stamp arrivals (pull_send.c reads a PULL's, pull.c an answer's),
 * until NET_GRO_QUIET datagrams came to the wire socket with neither
 * left (net.c). */
void net_stamps_want(struct fmx_endpoint *ep);
/* net_nack.c: a NACK of reason to endpoint eid of session at `to`, about
 * its packet seq (0: none). */
void net_nack(struct fmx_endpoint *ep, const struct net_addr *to, uint32_t eid, uint32_t session, uint32_t reason,
              uint32_t seq);
/* The same answering packet `in`: one a millisecond at most (a flood of
 * strangers). */
void net_send_nack(struct fmx_endpoint *ep, const struct net_pkt *in, const struct net_addr *to, uint32_t reason);

/* net_peer.c: partners. A packet from `from` comes from the partner at addr (raw: its MAC; UDP:
 * its address and port). */
int net_same_source(const struct net_addr *from, const struct net_addr *addr);
struct partner *net_find(struct fmx_endpoint *ep, uint64_t nic, const struct net_addr *from, uint32_t eid,
                         uint32_t session);
/* p's session is known now (its handshake): found by net_find from its packets. */
void net_peer_known(struct fmx_endpoint *ep, struct partner *p);
/* The streams' configuration, from the tunables and rto_min_ns; crowded: the
 * endpoint's flag (transport_ep), which their tail probes read. */
void net_rel_cfg_init(struct net_ep *ne, const int *crowded);
int net_peer_init(struct fmx_endpoint *ep, struct partner *p, uint64_t nic, uint32_t eid, uint32_t session,
                  const struct net_addr *addr, uint32_t tx_start, uint32_t rx_start);
/* np's stream (from np->start and np->peer_start) and pull state, taken
 * at its first record sent or received: 0, or -ENOMEM (then maybe the
 * stream only: np->pull, taken last, says both are there). A partner
 * that only connected holds neither. */
int net_peer_live(struct net_ep *ne, struct net_peer *np);
void net_peer_unlive(struct net_peer *np); /* its stream gone (its pull state: net_pull_fini) */
/* What a CONNECT or its reply says of the peer's bulk socket (ip, port in
 * host order; 0: none) and of its MTU (0: not said), and ours to tell it. */
void net_peer_link(struct fmx_endpoint *ep, struct partner *p, uint32_t ip, uint16_t port, uint16_t mtu);
uint16_t net_mtu(struct fmx_endpoint *ep);
/* An MTU a peer says below this is ignored (IPv4's least datagram). */
#define NET_MTU_MIN 576
/* The largest packet between our bulk socket and np's: UDP's within the
 * smaller MTU of the two. */
uint32_t net_bulk_packet_max(const struct net_peer *np);

/* net_ep.c: the board and an endpoint's sockets (ops of the table). */
uint64_t net_nic(void);
int net_open(struct fmx_endpoint *ep);
void net_close(struct fmx_endpoint *ep);
int net_wait_fd(struct fmx_endpoint *ep, uint64_t *max_ns);
void net_ep_fini(struct fmx_endpoint *ep);
void net_bulk_addr(struct fmx_endpoint *ep, uint32_t *ip, uint16_t *port);


/* train.c: an eager message's fragments as one GSO send. */
/* Socket s takes GSO sends (the UDP wire, GSO not refused). */
int net_train_wire(const struct net_sock *s);
/* The longest message worth sending eagerly by default on wire w to a
 * partner of packets up to pkt_max: the wire's pull_frames packets'
 * payload, or a GSO train's where fragments leave in trains. */
uint64_t net_eager_bytes(const struct net_wire *w, int trains, uint32_t pkt_max);
/* The socket trains to np leave on (ours, or beside the raw wire our bulk
 * socket toward its), NULL: none. */
struct net_sock *net_train_sock(struct net_ep *ne, const struct net_peer *np);
/* Whether the packets pushed now to np (records of up to payload bytes)
 * go in a train: a batch is open (ops.batch) and long enough. */
int net_train_can(struct net_ep *ne, const struct net_peer *np, size_t payload);
/* The packet of p's stream just queued (len bytes, in its rel slot), into
 * the train; one of another partner or longer sends the train first. */
void net_train_add(struct fmx_endpoint *ep, struct partner *p, const uint8_t *pkt, uint32_t len);
/* The train leaves now. */
void net_train_flush(struct fmx_endpoint *ep);
/* np's timers are due soon: something of it is pending. */
void net_arm_timers(struct net_ep *ne, struct net_peer *np, uint64_t now);

/* pull.c: the pull protocol. */
void net_pull_init(struct fmx_endpoint *ep, struct partner *p);
/* np's pull state, taken once (at its first record sent or received):
 * 0, or -ENOMEM. */
int net_pull_attach(struct net_peer *np);
void net_pull_fini(struct partner *p);
/* Both of us have a bulk socket: the answers to our pulls from np go to
 * ours, unless we ask it otherwise (pull.c, on_wire). */
static inline int net_pull_bulk_answers(const struct net_peer *np) {
  return net_ep(np->ep)->bulk_own && np->baddr.port;
}
/* The bytes of a frame between us and np: of the largest answer to a
 * pull, UDP's when both have a bulk socket (the answers go there), else
 * our wire's, within the smaller MTU of the two. A UDP answer fits a
 * frame of the wire too (its IP and UDP headers are part of the MTU, a
 * raw frame's Ethernet header is not). */
static inline uint32_t net_pull_frame_bytes(const struct net_peer *np) {
  return (net_pull_bulk_answers(np) ? net_bulk_packet_max(np) : np->pkt_max) - NET_HDR_LEN - NET_PULL_REPLY_HDR;
}
/* Our packets to p were acked up to its stream's una: a pull it did not
 * know of (its CTS not acked) may be now (pull.c). answered: the pull the
 * packet that acked answers (its frame comes next), else 0. */
void net_pull_acked(struct fmx_endpoint *ep, struct partner *p, uint64_t answered, uint64_t now);
/* pull_send.c: the sender's side. A PULL came: answered now, or queued
 * behind those that wait for room in our socket (pacing). */
/* A PULL that reached our socket at at_ns (the kernel's stamp, sys_wall_ns's clock; 0: not known). */
void net_pull_on_pull(struct fmx_endpoint *ep, struct partner *p, const struct net_pkt *pk, uint64_t at_ns);
/* The PULLs that wait, while there is room: 1 while some still wait. */
int net_pull_serve(struct fmx_endpoint *ep, uint64_t now);
void net_pull_queue_fini(struct net_pull_queue *q);
/* bulk_pull_ops.send_start. */
int net_pull_send_start(void *arg, struct bulk_xfer *x);
/* Forget transfer x (NULL: every one) we send to np. */
void net_pull_exports_drop(struct net_peer *np, const struct bulk_xfer *x);
/* When the receiver of the export heard from longest ago last pulled
 * (0: none). */
uint64_t net_pull_exports_heard(struct net_peer *np);
/* A frame pk answering our pull came, to our bulk socket (bulk) or our wire's. */
void net_pull_on_reply(struct fmx_endpoint *ep, struct partner *p, const struct net_pkt *pk, int bulk, uint64_t at_ns,
                       uint64_t now);
/* pull_timer.c: the pulls' timers. */
int net_pull_timers(struct fmx_endpoint *ep, struct partner *p, uint64_t now);
/* The receiver's scheduler, once per timer pass: a probe after a silence,
 * then what the budget has room for. */
void net_pull_tick(struct fmx_endpoint *ep, uint64_t now);

/* net_conn.c: the handshake. net_dial (the endpoint's lock held) makes
 * the partner at once and sends CONNECT; records pushed to it wait
 * (-EAGAIN) until the handshake completes, and fail with it. */
fmx_return_t net_dial(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                      struct partner **out);
int net_dialing(struct partner *p);
/* np's handshake is over, or it is released: its dial state goes. */
void net_dial_end(struct net_peer *np);
/* A dialed partner's timer: CONNECT again when due, fail it at its
 * deadline. 1 while it dials on (its timer set), 0 when it failed. */
int net_dial_timer(struct fmx_endpoint *ep, struct partner *p, uint64_t now);
/* We are connecting to endpoint eid at `from` (a dial, or a blocking
 * connect): its data before our answer came is not a stranger's. */
int net_connecting(struct fmx_endpoint *ep, const struct net_addr *from, uint32_t eid);
fmx_return_t net_connect(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                         struct partner **out);
void net_on_connect(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from);
void net_on_reply(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from);
/* net_nack.c */
void net_on_nack(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from);

#endif
