/* SPDX-License-Identifier: MIT */
/*
 * The medium class or rendezvous, measured by the receiver per partner and
 * size class (a power of two), for messages longer than one fragment and
 * shorter than the rendezvous threshold.
 *
 * The threshold comes from the topology (one L2: core/tunables.c), and the
 * topology does not say how fast another core's dirty lines come over. On
 * the AMD EPYC VMs of 2026-11 the medium class beat every engine up to one
 * L2 (512 KiB-1 MiB); on the Intel Xeon VM of 2026-11-27 (L2 2 MiB) cma's
 * single copy beat it from 8 KiB (fmx_tune: FMX_RNDV_THRESHOLD=8192), and
 * ping-pong at 64 KiB and 256 KiB ran at 0.55-0.57x Open MPI vader's (CMA)
 * by the medium class, 1.02-1.05x with fmx_tune's threshold. So, as adapt.c does
 * for the engines, the receiver times both and asks the sender for the
 * faster:
 *  - a medium message: from its first fragment, matched to a posted
 *    receive, to its last one copied out;
 *  - a rendezvous it asked for: from the RTS to the end of the transfer.
 * Both count from the first record of the message the receiver handles, so
 * neither counts the sender's time before it or the record's trip. Only
 * clean samples count, as adapt.c's: alone on the endpoint from start to
 * end (no transfer or other medium message in progress meanwhile).
 *
 * Per class, the mode in use (medium first) moves `span` messages, the
 * fastest of them (ns per 4 KiB) kept; then the other mode is tried: the
 * receiver asks the sender for it (a HINT record carrying the mask of the
 * classes it wants by rendezvous) and times CLASS_TRIES clean messages:
 * enough to cover a round of adapt.c's, which tries the slower engines
 * within a rendezvous class's first messages (with 2, the trial met them
 * and kept the medium class that lost 1.6x to cma). The faster mode
 * stays; span grows 4x while the choice holds (8 to 1024 messages), and
 * starts again from 8 when it changes. A trial that sees no
 * clean sample within CLASS_TRIAL_MAX messages of the class ends with the
 * mode in use, and the next waits the longest span. Messages of the mode
 * just left, still on their way, are not counted.
 *
 * The sender only obeys the mask (proto_send_start): any mask is safe, a
 * class moves either way, in order. Not between endpoints of one process
 * or to ourselves, nor across hosts (their transport has its own eager
 * limit), nor when ranks outnumber cores (send.c's rule), nor when the
 * threshold or an engine was set (FMX_RNDV_THRESHOLD, FMX_BULK,
 * FMX_ADAPT=0: fmx_tune's file sets the threshold).
 */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "platform/sys.h"
#include "proto/proto_int.h"

#define CLASS_SPAN_MIN 8
#define CLASS_SPAN_MAX 1024
#define CLASS_TRIES 8
#define CLASS_TRIAL_MAX 64

static int class_of(uint64_t len) { return 63 - __builtin_clzll(len | 1); }

/* The slot of a message of len bytes (longer than one fragment, shorter
 * than the threshold), or -1 when its class is not chosen by measurement. */
static int slot_of(uint64_t len) {
  uint64_t frag = fmx_cfg.eager_frag;
  if (len <= frag || len >= fmx_cfg.rndv_threshold) return -1;
  int s = class_of(len) - class_of(frag);
  return s >= 0 && s < PROTO_CLASSES ? s : -1;
}

int proto_class_step(struct proto_class *k, int mode, uint64_t ns) {
  if (!k->span) { /* the first sample of the class: medium, the topology's choice */
    k->span = k->left = CLASS_SPAN_MIN;
    k->best[0] = k->best[1] = UINT64_MAX;
  }
  int other = !k->mode;
  if (!k->trial) {
    if (mode != k->mode) return k->mode; /* sent before we asked: not counted */
    if (ns < k->best[mode]) k->best[mode] = ns;
    if (--k->left) return k->mode;
    k->trial = 1;
    k->got = 0;
    k->seen = 0;
    k->best[other] = UINT64_MAX;
    return other;
  }
  if (mode != other || ns == UINT64_MAX) {
    /* The old mode still on its way, or a sample that is not clean. */
    if (++k->seen < CLASS_TRIAL_MAX) return other;
    k->trial = 0;
    k->span = k->left = CLASS_SPAN_MAX;
    return k->mode;
  }
  if (ns < k->best[other]) k->best[other] = ns;
  if (++k->got < CLASS_TRIES) return other;
  k->trial = 0;
  /* The mode in use changes only against a clean time of its own. */
  if (k->best[k->mode] != UINT64_MAX && proto_class_cost(k, other) < proto_class_cost(k, k->mode)) {
    k->mode = (uint8_t)other;
    k->span = CLASS_SPAN_MIN;
  } else {
    k->span = k->span * 4 < CLASS_SPAN_MAX ? k->span * 4 : CLASS_SPAN_MAX;
  }
  k->left = k->span;
  k->best[k->mode] = UINT64_MAX; /* judged by its recent messages only */
  return k->mode;
}

int proto_class_adapts(struct fmx_endpoint *ep, struct partner *p) {
  const struct proto_ep *pe = proto_ep(ep);
  const struct proto_peer *pp = proto_peer(p);
  const struct bulk_peer *b = transport_peer(p)->bulk;
  return fmx_cfg.adapt && !pe->rndv_explicit && !pe->crowded && !pp->tp->remote && !pp->tp->eager_max &&
         !b->is_self && !b->same_process && fmx_cfg.bulk && strcmp(fmx_cfg.bulk, "auto") == 0;
}

uint64_t proto_class_start(struct fmx_endpoint *ep, struct partner *p, uint64_t len, uint64_t *snap) {
  const struct proto_ep *pe = proto_ep(ep);
  if (slot_of(len) < 0 || !list_empty(&pe->bulk) || pe->medium_live || !proto_class_adapts(ep, p)) return 0;
  *snap = pe->benv.starts + pe->medium_starts;
  return sys_now_ns() | 1;
}

/* The receiver's clock sees its own copy of a medium message, not the
 * sender's copy into the ring, which a ping-pong's sender makes while the
 * receiver waits and copies out behind it. In an exchange (both sides
 * send at once) each core makes both copies, its send's and its
 * receive's, so the one the receiver did not see counts as long as the one
 * it did (same bytes, same host). Rendezvous's single copy is all in the
 * receiver's clock. A class is judged an exchange's for CLASS_SPAN_MAX
 * messages after one of its medium messages came while the peer still had
 * records of ours to take: only some do (whichever side reads first sees
 * the other's taken), and the fastest sample, which decides, would be one
 * that did not. Alltoall of 2 ranks, 16 KiB, Intel Xeon VM of 2026-11-27:
 * the receiver timed the medium class at 175-182 ns per 4 KiB and
 * rendezvous at 280-321, and kept the medium class in half the runs
 * (3.7-3.85 us an exchange, against 2.03 where it chose rendezvous; forced
 * 3.86-3.87 against 2.04-2.05). */
uint64_t proto_class_cost(const struct proto_class *k, int mode) {
  uint64_t ns = k->best[mode];
  if (mode != 0 || !k->xleft || ns == UINT64_MAX) return ns;
  return ns < UINT64_MAX / 2 ? 2 * ns : UINT64_MAX - 1;
}

void proto_class_done(struct fmx_endpoint *ep, struct partner *p, uint64_t len, int mode, uint64_t start,
                      uint64_t snap, int both) {
  struct proto_ep *pe = proto_ep(ep);
  int s = slot_of(len);
  if (s < 0 || !start || transport_peer(p)->state != PARTNER_ALIVE) return;
  struct proto_live *l = proto_live(p);
  if (!l || (!l->cls && !(l->cls = calloc(PROTO_CLASSES, sizeof *l->cls)))) return; /* no memory: no choice made */
  /* Clean: nothing else started, or was still in progress, meanwhile. */
  uint64_t ns = UINT64_MAX;
  if (pe->benv.starts + pe->medium_starts == snap && list_empty(&pe->bulk) && !pe->medium_live)
    ns = (sys_now_ns() - start) * 4096 / len;
  struct proto_class *k = &l->cls[s];
  if (both && mode == 0)
    k->xleft = CLASS_SPAN_MAX;
  else if (k->xleft)
    k->xleft--;
  int mode_was = k->mode, trial_was = k->trial, bit = class_of(len);
  int want = proto_class_step(k, mode, ns);
  if (k->trial && !trial_was) PROTO_CNT(pe, CLASS_TRIALS);
  if (k->mode != mode_was) pe->benv.counters[k->mode ? CNT_CLASS_TO_RNDV : CNT_CLASS_TO_MEDIUM]++;
  if (want == (int)((l->asked >> bit) & 1)) return;
  l->asked ^= 1ull << bit;
  struct proto_hdr h = {.type = PROTO_HINT, .rreq = l->asked};
  proto_send_ctl(ep, p, &h);
}

void proto_class_hint(struct partner *p, const struct proto_hdr *h) {
  if (proto_peer(p)->tp->remote) return; /* across hosts the transport sets the eager limit */
  struct proto_live *l = h->rreq || proto_peer(p)->live ? proto_live(p) : NULL;
  if (l) l->rndv_mask = h->rreq; /* without memory the hint is not taken: a choice, not a duty */
}

int proto_class_wants_rndv(const struct proto_peer *pp, uint64_t len) {
  uint64_t mask = pp->live ? pp->live->rndv_mask : 0;
  return mask && ((mask >> class_of(len)) & 1);
}
