/* SPDX-License-Identifier: MIT */
/* The shm transport: records travel through the channel's eager rings. */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "shm/shm.h"
#include "core/fmx_int.h"
#include "shm/channel.h"
#include "shm/connect.h"

static int shm_push(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
                    int iovcnt) {
  if (shm_ring_push(&p->chan[0]->tx, h, iov, iovcnt) < 0) return -1;
  if (p->desc && __atomic_load_n(&p->desc->sleepers, __ATOMIC_SEQ_CST)) CNT(ep, WAKES);
  ep_wake(p->desc);
  return 0;
}

static size_t shm_max_payload(struct partner *p) { return shm_ring_max_payload(&p->chan[0]->tx); }

static void shm_poll(struct fmx_endpoint *ep, struct partner *p, transport_deliver_fn deliver) {
  for (int c = 0; c < p->nchan && p->state == PARTNER_ALIVE; c++) {
    struct channel *ch = p->chan[c];
    uint64_t before = ch->rx.local;
    const struct proto_hdr *h;
    while (p->state == PARTNER_ALIVE && (h = shm_ring_peek(&ch->rx)) != NULL) {
      /* Copy the header out of shared memory: the peer may rewrite it. */
      struct proto_hdr hdr = *h;
      if (hdr.len != h->len || hdr.type != h->type) hdr.type = PROTO_TYPE_MAX;
      int gone = deliver(ep, p, ch, &hdr, (const uint8_t *)h + RING_DATA_OFF(hdr.len));
      shm_ring_pop(&ch->rx);
      if (gone) break;
    }
    /* Nothing came: has the peer given up on us? Checked only when idle,
     * so everything it pushed before is delivered first. */
    if (ch->rx.local == before && p->state == PARTNER_ALIVE &&
        __atomic_load_n(ch->rx_abort, __ATOMIC_ACQUIRE) && !shm_ring_peek(&ch->rx)) {
      uint32_t why = *ch->rx_abort;
      fmx_return_t code = why == FMX_NO_RESOURCES || why == FMX_NO_SYSTEM_RESOURCES ? (fmx_return_t)why
                                                                                    : FMX_REMOTE_ENDPOINT_UNREACHABLE;
      CNT(ep, PEER_ABORTS);
      log_warn("FMX-PEER-ABORT", "endpoint %u: endpoint %u (pid %d) dropped the connection (%s): its requests with us fail",
               ep->eid, p->eid, (int)p->pid, fmx_strerror(code));
      ep_partner_down(ep, p, PARTNER_DISCONNECTED, code);
      return;
    }
    if (ch->rx.broken && p->state == PARTNER_ALIVE) {
      CNT(ep, BAD_PACKET);
      log_warn("FMX-SHM-CORRUPT", "endpoint %u: ring from endpoint %u (pid %d) is corrupt: peer dropped", ep->eid,
               p->eid, (int)p->pid);
      ep_partner_fail(ep, p, PARTNER_DISCONNECTED, FMX_REMOTE_ENDPOINT_UNREACHABLE);
    }
    /* The sender may sleep waiting for room. Waking costs a fence, so do it
     * once a quarter of the ring is freed: a sender that lacks room for a
     * record (at most half the ring) sees more than half the ring in use, so
     * draining it always crosses a quarter. */
    ch->rx_freed += ch->rx.local - before;
    if (ch->rx_freed >= ch->rx.ncells / 4) {
      ch->rx_freed = 0;
      ep_wake(p->desc);
    }
  }
}

/* Give up on the connection: the peer sees it once it has drained what we
 * pushed. No record, so it needs neither ring room nor memory. */
static void shm_abort(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code) {
  (void)ep;
  if (!p->nchan) return;
  __atomic_store_n(p->chan[0]->tx_abort, (uint32_t)code, __ATOMIC_RELEASE);
  ep_wake(p->desc);
}

static void shm_release(struct fmx_endpoint *ep, struct partner *p) {
  for (int c = 0; c < p->nchan; c++) chan_destroy(p->chan[c]);
  p->nchan = 0;
  if (p->desc) munmap(p->desc, EP_DESC_SIZE);
  p->desc = NULL;
  if (p->pidfd >= 0) close(p->pidfd);
  p->pidfd = -1;
}

/* Serve ep: the watcher thread (connects, peers' deaths). */
static int shm_ep_open(struct fmx_endpoint *ep) { return shm_watcher_start(ep); }

const struct fmx_transport_ops shm_transport = {
    .name = "shm",
    .tiny_max = RING_CELL_TINY,
    .listen = shm_listen,
    .open = shm_ep_open,
    .close = shm_watcher_stop,
    .connect = shm_connect,
    .push = shm_push,
    .max_payload = shm_max_payload,
    .poll = shm_poll,
    .abort = shm_abort,
    .release = shm_release,
};
