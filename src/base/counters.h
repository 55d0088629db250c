/* SPDX-License-Identifier: MIT */
/* Per-endpoint event counters, printed by fmx_counters. */
#ifndef FMX_BASE_COUNTERS_H
#define FMX_BASE_COUNTERS_H

#define FMX_COUNTERS(X)                                                       \
  X(SEND_EAGER, "eager sends")                                                \
  X(SEND_RNDV, "rendezvous sends")                                            \
  X(RECV_EAGER, "eager messages received")                                    \
  X(RECV_RNDV, "rendezvous messages received")                                \
  X(UNEXPECTED, "messages queued unexpected")                                 \
  X(TRUNCATED, "receives truncated")                                          \
  X(RING_FULL, "sends delayed by a full ring")                                \
  X(BULK_CMA, "large messages moved by cma")                                  \
  X(BULK_RING, "large messages moved by ring")                                \
  X(BULK_CMA_BYTES, "bytes moved by cma")                                     \
  X(BULK_RING_BYTES, "bytes moved by ring")                                   \
  X(BULK_FALLBACK, "cma refused, ring used instead")                          \
  X(BULK_ERROR, "large transfers failed")                                     \
  X(CONNECT_OK, "connections accepted or made")                               \
  X(CONNECT_REFUSED, "connections refused (key, uid, malformed)")             \
  X(NET_DIALS, "net: connects begun without waiting (fmx_connect_async)")     \
  X(NET_DIALS_FAILED, "net: connects begun without waiting that failed")      \
  X(PEER_DEATH, "peers seen dying")                                           \
  X(BAD_PACKET, "malformed records dropped")                                  \
  X(CANCELLED, "requests cancelled")                                          \
  X(TIMEOUT, "requests timed out")                                            \
  X(SLEEPS, "waits that blocked on the futex")                                \
  X(WAKES, "futex wakes sent to peers")                                       \
  X(BULK_COOP, "large messages moved by coop")                                \
  X(BULK_COOP_BYTES, "bytes this side copied for coop transfers")             \
  X(BULK_VMSPLICE, "large messages moved by vmsplice")                        \
  X(BULK_VMSPLICE_BYTES, "bytes read from vmsplice pipes")                   \
  X(BULK_OFFLOAD, "large transfers (receives, ring sends) handed to an offload channel") \
  X(BULK_OFFLOAD_BYTES, "bytes offload channels copied")                     \
  X(ADAPT_TRIES, "large receives moved by an engine FMX_ADAPT tried beside the one in use") \
  X(ADAPT_CHANGES, "engine changes by FMX_ADAPT (a peer's size class found a faster engine)") \
  X(SEND_MEDIUM, "eager sends in fragments (medium class, longer than FMX_EAGER_FRAG)")          \
  X(RECV_MEDIUM, "eager messages received in fragments")                    \
  X(XMEM_RECV, "large receives copied straight from a peer's fmx_mem_alloc memory, mapped here") \
  X(XMEM_SEND_BYTES, "bytes this side copied straight into a peer's mapped fmx_mem_alloc memory (coop)") \
  X(RMA_READ, "region reads answered (this endpoint owns the region)")      \
  X(RMA_WRITE, "region writes taken (this endpoint owns the region)")       \
  X(RMA_REFUSED, "region accesses refused (cookie, access, range)")         \
  X(XMEM_UNMAPPED, "fmx_mem_alloc regions a peer announced that could not be mapped here") \
  X(NOMEM_ABORTS, "connections given up for lack of memory for a record that had to be kept") \
  X(PEER_ABORTS, "connections a peer gave up (it lacked memory)")            \
  X(NET_SENT, "net: packets sent")                                          \
  X(NET_RECEIVED, "net: packets received")                                  \
  X(NET_RESENT, "net: packets resent after a timeout (retransmits)")        \
  X(NET_RESENDS_HELD, "net: timer passes that left resends for the next (a window's worth a pass)") \
  X(NET_GAP_RESENT, "net: packets resent at once on a gap the peer reported") \
  X(NET_CWND_CUTS, "net: congestion windows halved on a hole a peer reported or a resend on the timer") \
  X(NET_CWND_UNDONE, "net: window cuts undone: the peer got every resend behind them twice") \
  X(NET_EARLY_RESENT, "net: packets sent again before their resend wait (the last as a probe; a CTS our pulls wait for)") \
  X(NET_DUPLICATES, "net: duplicate packets dropped")                      \
  X(NET_EARLY, "net: packets that arrived after a gap (kept until it filled)") \
  X(NET_DROPPED, "net: packets dropped (malformed, or for another endpoint, session or board)") \
  X(NET_STRANGERS, "net: packets from no partner or connect of ours dropped (a stranger, an old session)") \
  X(NET_LATE, "net: pull packets for a transfer that ended dropped (late answers and asks)") \
  X(NET_FAR, "net: packets beyond the window dropped") \
  X(NET_TIMEOUTS, "net: partners that stopped answering (their requests failed)") \
  X(NET_NACKS, "net: nacks sent (unknown session or endpoint, closed, bad key, out of step)") \
  X(NET_OUT_OF_STEP, "net: connections failed out of step (the peer expected our packets elsewhere)") \
  X(BULK_PULL, "large messages pulled from another host")                  \
  X(BULK_PULL_BYTES, "bytes pulled from other hosts")                      \
  X(NET_PULL_REASKED, "net: pulled frames asked for again (lost or late)")  \
  X(NET_PULL_SERVED, "net: frames sent for peers' pulls")                  \
  X(NET_PULL_REFUSED, "net: pulled frames our socket refused (full): asked again") \
  X(NET_PULL_ON_WIRE, "net: partners asked to answer pulls on the wire (their bulk answers stopped coming)") \
  X(NET_PULL_WIRE_SERVED, "net: frames sent on the wire for pulls that asked so") \
  X(NET_PULL_CTS_ACKED, "net: pulls asked again at once when our CTS was acked (their first asks dropped)") \
  X(NET_PULL_BULK_BACK, "net: partners whose pull answers came back to our bulk socket (asked there while on the wire)") \
  X(NET_PULL_BULK_REFUSED, "net: pulled frames our bulk socket refused, sent on the wire instead") \
  X(NET_PULL_PACED, "net: peers' pulls that waited for room in our socket (pacing)") \
  X(NET_PULL_PACE_DROPPED, "net: peers' pulls dropped, too many waiting (asked again)") \
  X(NET_PULL_EARLY, "net: peers' pulls that came before their CTS, answered when it came") \
  X(NET_PULL_ON_WAY, "net: peers' pulled frames asked again before our answer could reach them (not sent twice)") \
  X(NET_GRANTS, "net: blocks granted: asked by the receiver for the first time")          \
  X(NET_GRANT_WAITS, "net: blocks granted late: they waited for room in the budget") \
  X(NET_GRANT_CUTS, "net: budget halved on a loss (a gap in a pull's answers)") \
  X(NET_GRANT_DELAY_CUTS, "net: budget cut on a queue's delay (the network's wait beyond its shortest)") \
  X(NET_GRANT_TAILS, "net: tail drops read from one partner (the end of a run lost)") \
  X(NET_GRANT_PROBES, "net: runs asked beyond the budget: nothing came for 2 round trips") \
  X(NET_GRANT_RESETS, "net: budget back to its floor (a block asked again on a timer)") \
  X(NET_GRANT_BUDGET, "net: budget: bytes that may be on their way to us (now)") \
  X(NET_GRANT_BDP, "net: bandwidth-delay product measured, bytes (now)") \
  X(NET_GRANT_QUEUE, "net: queue estimate: bytes on their way beyond the BDP (most)") \
  X(NET_GRANT_QDELAY, "net: queue's delay in front of us, ns: the network's wait beyond its shortest (most)") \
  X(NET_QUERIES_ANSWERED, "net: host queries answered (discovery)") \
  X(NET_PROBES, "net: probes sent to a partner we wait for (keepalive)")    \
  X(NET_TRAINS, "net: GSO trains of an eager message's fragments (one send each)") \
  X(NET_GRO_SWITCHES, "net: UDP receive GRO switched on (pull, train) or off (a while)") \
  X(NET_STAMP_SWITCHES, "net: arrival stamps switched on (a pull either way) or off (a while)") \
  X(UNEXP_HANDLER, "messages shown to the unexpected-message handler")     \
  X(BULK_ALIASED, "large receives moved by ring, not a kernel copy, for 4K aliasing") \
  X(CLASS_TRIALS, "medium or rendezvous: trials of the other for a size class (receiver)") \
  X(CLASS_TO_RNDV, "medium or rendezvous: size classes moved to rendezvous by measurement") \
  X(CLASS_TO_MEDIUM, "medium or rendezvous: size classes moved back to the medium class by measurement") \
  X(HANDOVERS, "records handed to the cache all cores share (CLDEMOTE): replies a peer waits for")                    \
  X(OWNED_AHEAD, "ring cells taken for writing before the record that fills them (PREFETCHW)") \
  X(BOXED, "tiny records sent through a link's duplex box (the line both directions share by turns)") \
  X(KICKS, "wakes of offload channel 0 to look at this endpoint (a large transfer watched)") \
  X(KICKS_SKIPPED, "wakes of offload channel 0 skipped: its last looks found the application back in a wait") \
  X(NET_NAPS, "channel 0 naps on the net socket for an application away (FMX_NET_PROGRESS), each then a progress pass") \
  X(YIELDS, "polls that gave the core away (sched_yield)")                 \
  X(NET_TRAIN_READS, "net: reads of the bulk socket for the rest of a train whose head came")

enum fmx_counter {
#define X(name, doc) CNT_##name,
  FMX_COUNTERS(X)
#undef X
      CNT_MAX
};

extern const char *const counter_labels[CNT_MAX];

#endif
