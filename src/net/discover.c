/* SPDX-License-Identifier: MIT */
/* Discovery on the wire (discover.h). */
#include "net/discover.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "net/net_int.h"
#include "net/peers.h"
#include "platform/sys.h"

#define QUERIES 3

void net_discover_answer(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  struct net_ep *ne = net_ep(ep);
  uint64_t now = sys_now_ns();
  if (now - ne->query_ns < 1000000) return; /* one answer a millisecond: no reflector for forged sources */
  ne->query_ns = now;
  char name[NET_PEER_NAME];
  net_board_name(name, sizeof name);
  size_t len = strlen(name);
  if (len > NET_NAME_MAX) len = NET_NAME_MAX;
  struct net_hdr h = {.type = NET_HOST_REPLY, .dst_ep = pk->h.src_ep, .src_ep = (uint16_t)transport_ep(ep)->eid};
  h.len = (uint16_t)net_put_host(ne->pkt + NET_HDR_LEN, pk->u.query.nonce, ne->sock.ifc.nic, name, len);
  net_put_hdr(ne->pkt, &h);
  net_xmit(ep, from, pk->h.src_ep, ne->pkt, NET_HDR_LEN + h.len);
  TRANSPORT_CNT(ep, NET_QUERIES_ANSWERED);
}

/* One round of queries on s: a broadcast frame on the raw wire; on UDP a
 * datagram to each endpoint port, broadcast on the subnet. */
static void query(struct net_sock *s, uint64_t nonce) {
  uint8_t pkt[NET_HDR_LEN + 8];
  struct net_hdr h = {.type = NET_HOST_QUERY, .dst_ep = NET_EP_ANY, .src_ep = NET_EP_ANY};
  h.len = (uint16_t)net_put_query(pkt + NET_HDR_LEN, nonce);
  net_put_hdr(pkt, &h);
  struct iovec iov = {pkt, sizeof pkt};
  struct net_addr all = {.nic = 0xffffffffffffull};
  if (s->wire == &net_wire_raw) {
    s->wire->send(s, &all, NET_EP_ANY, &iov, 1);
    return;
  }
  uint32_t ports = (uint32_t)fmx_cfg.endpoint_max;
  if (s->port_base + ports > 65536) ports = 65536 - s->port_base;
  for (uint32_t e = 0; e < ports; e++) s->wire->send(s, &all, e, &iov, 1);
}

#define SEEN_MAX 4096

/* The boards that answered, each once. */
struct seen {
  int n;
  uint64_t nic[SEEN_MAX];
};

static void saw(struct seen *sn, uint64_t nic) {
  for (int i = 0; i < sn->n; i++)
    if (sn->nic[i] == nic) return;
  if (sn->n < SEEN_MAX) sn->nic[sn->n++] = nic;
}

/* The answers that came on s: each one to the peer table. */
static void collect(struct net_sock *s, uint64_t nonce, struct seen *sn) {
  struct net_rx rx[NET_RX_BATCH];
  int n;
  while ((n = s->wire->recv(s, rx, NET_RX_BATCH)) > 0) {
    for (int i = 0; i < n; i++) {
      /* One answer, or a train of them (UDP GRO) at its stride. */
      size_t step = rx[i].seg ? rx[i].seg : rx[i].len;
      for (size_t off = 0; off < rx[i].len; off += step) {
        struct net_pkt pk;
        size_t len = rx[i].len - off < step ? rx[i].len - off : step;
        if (net_parse(rx[i].buf + off, len, &pk) != NET_OK || pk.h.type != NET_HOST_REPLY ||
            pk.h.dst_ep != NET_EP_ANY || pk.u.host.nonce != nonce)
          continue;
        const char *name = (const char *)pk.body + NET_HOST_REPLY_HDR;
        if (net_peers_learn(pk.u.host.nic, name, pk.u.host.name_len) == 0) saw(sn, pk.u.host.nic);
      }
    }
    if (n < NET_RX_BATCH) break;
  }
}

int net_discover(uint32_t wait_ms) {
  struct net_iface ifc;
  if (net_board(&ifc) < 0) return -ENODEV;
  struct seen *sn = calloc(1, sizeof *sn);
  if (!sn) return -ENOMEM;
  struct net_sock s[2];
  int ns = 0;
  const char *w = fmx_cfg.net_wire ? fmx_cfg.net_wire : "auto";
  if (strcmp(w, "udp") != 0 && net_sock_open_wire(&s[ns], &ifc, NET_EP_ANY, &net_wire_raw) == 0) ns++;
  if (strcmp(w, "raw") != 0 && net_sock_open_wire(&s[ns], &ifc, NET_EP_ANY, &net_wire_udp) == 0) ns++;
  if (!ns) {
    free(sn);
    return -EPERM;
  }
  uint64_t nonce = sys_random64(), now = sys_now_ns();
  uint64_t end = now + wait_ms * 1000000ull, step = wait_ms * 1000000ull / QUERIES, next = now;
  int sent = 0;
  while (now < end) {
    if (sent < QUERIES && now >= next) {
      for (int i = 0; i < ns; i++) query(&s[i], nonce);
      sent++;
      next = now + step;
    }
    uint64_t until = sent < QUERIES && next < end ? next : end;
    struct pollfd pf[2] = {{.fd = s[0].fd, .events = POLLIN}, {.fd = ns > 1 ? s[1].fd : -1, .events = POLLIN}};
    poll(pf, 2, (int)((until - now) / 1000000) + 1);
    for (int i = 0; i < ns; i++) collect(&s[i], nonce, sn);
    now = sys_now_ns();
  }
  for (int i = 0; i < ns; i++) net_sock_close(&s[i]);
  int took = sn->n;
  free(sn);
  log_debug("FMX-NET-DISCOVER", "%d answer(s) in %u ms on %s%s", took, wait_ms, s[0].wire->name,
            ns > 1 ? " and udp" : "");
  return took;
}
