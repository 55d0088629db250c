/* SPDX-License-Identifier: MIT */
/* fmx_get_info: the library's, the endpoint's and the introspection keys
 * (the engines, the table of tunables and the topology, so that tools need
 * nothing but fmx.h). */
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "bulk/engine.h"
#include "core/fmx_int.h"
#include "core/transport.h"
#include "net/iface.h"
#include "net/peers.h"
#include "net/sock.h"
#include "platform/copy.h"
#include "platform/sys.h"
#include "platform/topo.h"

#define API __attribute__((visibility("default")))

static fmx_return_t info_put(void *out, uint32_t out_len, const void *v, size_t n) {
  if (!out || out_len < n) return FMX_BAD_INFO_LENGTH;
  memcpy(out, v, n);
  return FMX_SUCCESS;
}

static fmx_return_t info_put_str(void *out, uint32_t out_len, const char *s) {
  size_t n = strlen(s) + 1;
  if (!out || out_len == 0) return FMX_BAD_INFO_LENGTH;
  if (n > out_len) n = out_len;
  memcpy(out, s, n);
  ((char *)out)[n - 1] = '\0';
  return FMX_SUCCESS;
}

#define TEXT(dst, src) snprintf((dst), sizeof(dst), "%s", (src) ? (src) : "")

static void cache_out(fmx_cache_info_t *d, const struct topo_cache_info *s) {
  d->size = s->size;
  d->nshare = s->nshare;
  TEXT(d->cpus, s->cpus);
}

static uint32_t engine_count(void) {
  uint32_t n = 0;
  while (bulk_engines[n]) n++;
  return n;
}

/* Row i of the tunables; entry_only: name, default and doc, nothing loaded. */
static fmx_return_t config_item(uint32_t i, int entry_only, void *out, uint32_t out_len) {
  struct config_item it;
  fmx_config_item_t o;
  if ((entry_only ? config_entry_at(i, &it) : config_item_at(i, &it)) < 0) return FMX_BAD_INFO_KEY;
  memset(&o, 0, sizeof o);
  TEXT(o.name, it.name);
  TEXT(o.value, it.value);
  TEXT(o.source, it.source);
  TEXT(o.def, it.def);
  TEXT(o.refused, it.refused);
  TEXT(o.doc, it.doc);
  return info_put(out, out_len, &o, sizeof o);
}

static fmx_return_t topology(void *out, uint32_t out_len) {
  const struct topo_info *t = topo_get();
  fmx_topology_t o;
  memset(&o, 0, sizeof o);
  o.ncores = t->ncores;
  o.npus = t->npus;
  o.numa_nodes = t->numa_nodes;
  o.virtualized = t->virtualized;
  cache_out(&o.l1d, &t->l1);
  cache_out(&o.l2, &t->l2);
  cache_out(&o.l3, &t->l3);
  TEXT(o.cpu_model, t->cpu_model);
  TEXT(o.source, t->src);
  return info_put(out, out_len, &o, sizeof o);
}

static fmx_return_t cores_share(const void *in, uint32_t in_len, void *out, uint32_t out_len) {
  int32_t cpu[2];
  if (!in || in_len < sizeof cpu) return FMX_BAD_INFO_LENGTH;
  memcpy(cpu, in, sizeof cpu);
  if (cpu[0] < 0 || cpu[1] < 0) return FMX_BAD_INFO_KEY;
  int level = topo_shared_level(cpu[0], cpu[1]);
  return info_put_str(out, out_len, bulk_level_name(level < 0 ? TOPO_LEVEL_NUMA : level));
}

static fmx_return_t cost_time(const void *in, uint32_t in_len, void *out, uint32_t out_len) {
  fmx_cost_query_t q;
  if (!in || in_len < sizeof q) return FMX_BAD_INFO_LENGTH;
  memcpy(&q, in, sizeof q);
  if (!memchr(q.spec, '\0', sizeof q.spec) || !memchr(q.level, '\0', sizeof q.level)) return FMX_BAD_INFO_LENGTH;
  struct bulk_model m;
  int level = bulk_level_parse(q.level);
  double t = level >= 0 && bulk_cost_parse(q.spec, level, &m) >= 0 ? bulk_cost_time(&m, q.len) : -1;
  return info_put(out, out_len, &t, sizeof t);
}

static fmx_return_t copy_routine(uint32_t i, void *out, uint32_t out_len) {
  size_t n;
  const struct fmx_copy_routine *rt = copy_routines(&n);
  if (i >= n) return FMX_BAD_INFO_KEY;
  fmx_copy_routine_t o;
  memset(&o, 0, sizeof o);
  TEXT(o.name, rt[i].name);
  o.copy = rt[i].fn;
  o.nontemporal = rt[i].nontemporal;
  o.usable = rt[i].usable();
  return info_put(out, out_len, &o, sizeof o);
}

static fmx_return_t iface(uint32_t i, void *out, uint32_t out_len) {
  struct net_iface f, b;
  if (net_iface_at(i, &f) < 0) return FMX_BAD_INFO_KEY;
  fmx_iface_t o;
  memset(&o, 0, sizeof o);
  TEXT(o.name, f.name);
  o.nic_id = f.nic;
  o.mtu = f.mtu;
  o.ipv4 = f.ip;
  o.flags = (f.up ? FMX_IFACE_UP : 0) | (f.loopback ? FMX_IFACE_LOOPBACK : 0) | (f.ether ? FMX_IFACE_ETHER : 0) |
            (f.ip ? FMX_IFACE_UDP : 0);
  if (f.ether && net_raw_permitted()) o.flags |= FMX_IFACE_RAW;
  if (net_board(&b) == 0 && b.index == f.index) o.flags |= FMX_IFACE_BOARD;
  return info_put(out, out_len, &o, sizeof o);
}

static fmx_return_t peer(uint32_t i, void *out, uint32_t out_len) {
  struct net_peer_entry e;
  if (net_peer_at(i, &e) < 0) return FMX_BAD_INFO_KEY;
  fmx_peer_t o;
  memset(&o, 0, sizeof o);
  o.nic_id = e.nic;
  TEXT(o.name, e.name);
  o.source = e.source == NET_PEER_LOCAL ? FMX_PEER_LOCAL : e.source == NET_PEER_FILE ? FMX_PEER_FILE : FMX_PEER_DISCOVERED;
  return info_put(out, out_len, &o, sizeof o);
}

static int introspect_info(uint32_t key, const void *in, uint32_t in_len, void *out, uint32_t out_len, fmx_return_t *rc) {
  uint32_t n, i = 0;
  size_t nrt;
  int32_t found;
  int indexed = key == FMX_INFO_ENGINE_NAME || key == FMX_INFO_CONFIG_ITEM || key == FMX_INFO_CONFIG_ENTRY ||
                key == FMX_INFO_COPY_ROUTINE ||
                key == FMX_INFO_IFACE || key == FMX_INFO_PEER;
  if (indexed) {
    if (!in || in_len < sizeof i) {
      *rc = FMX_BAD_INFO_LENGTH;
      return 1;
    }
    memcpy(&i, in, sizeof i);
  }
  switch (key) {
    case FMX_INFO_ENGINE_COUNT:
      n = engine_count();
      *rc = info_put(out, out_len, &n, sizeof n);
      return 1;
    case FMX_INFO_ENGINE_NAME:
      *rc = i < engine_count() ? info_put_str(out, out_len, bulk_engines[i]->name) : FMX_BAD_INFO_KEY;
      return 1;
    case FMX_INFO_CONFIG_COUNT:
      n = (uint32_t)config_count();
      *rc = info_put(out, out_len, &n, sizeof n);
      return 1;
    case FMX_INFO_CONFIG_ITEM:
    case FMX_INFO_CONFIG_ENTRY:
      *rc = config_item(i, key == FMX_INFO_CONFIG_ENTRY, out, out_len);
      return 1;
    case FMX_INFO_TOPOLOGY:
      *rc = topology(out, out_len);
      return 1;
    case FMX_INFO_CORES_SHARE:
      *rc = cores_share(in, in_len, out, out_len);
      return 1;
    case FMX_INFO_COST_TIME:
      *rc = cost_time(in, in_len, out, out_len);
      return 1;
    case FMX_INFO_COPY_ROUTINE_COUNT:
      copy_routines(&nrt);
      n = (uint32_t)nrt;
      *rc = info_put(out, out_len, &n, sizeof n);
      return 1;
    case FMX_INFO_COPY_ROUTINE:
      *rc = copy_routine(i, out, out_len);
      return 1;
    case FMX_INFO_IFACE_COUNT:
    case FMX_INFO_PEER_COUNT:
      n = (uint32_t)(key == FMX_INFO_IFACE_COUNT ? net_iface_count() : net_peers_count());
      *rc = info_put(out, out_len, &n, sizeof n);
      return 1;
    case FMX_INFO_IFACE:
      *rc = iface(i, out, out_len);
      return 1;
    case FMX_INFO_PEER:
      *rc = peer(i, out, out_len);
      return 1;
    case FMX_INFO_DISCOVER:
      found = net_peers_discover();
      *rc = info_put(out, out_len, &found, sizeof found);
      return 1;
    default:
      return 0;
  }
}

API fmx_return_t fmx_get_info(fmx_endpoint_t ep, uint32_t key, const void *in, uint32_t in_len, void *out,
                              uint32_t out_len) {
  /* The table's shape needs no library: the provider lists it before init. */
  if (!lib_ready() && key != FMX_INFO_CONFIG_COUNT && key != FMX_INFO_CONFIG_ENTRY) return FMX_NOT_INITIALIZED;
  uint64_t v;
  fmx_return_t irc;
  if (introspect_info(key, in, in_len, out, out_len, &irc)) return irc;
  switch (key) {
    case FMX_INFO_RNDV_THRESHOLD:
      v = fmx_cfg.rndv_threshold;
      return info_put(out, out_len, &v, sizeof v);
    case FMX_INFO_TINY_MAX:
      v = transport_local()->tiny_max;
      return info_put(out, out_len, &v, sizeof v);
    case FMX_INFO_NIC_ID:
      v = ep ? ep->t.nic : transports_nic();
      return info_put(out, out_len, &v, sizeof v);
    case FMX_INFO_ENGINE_STATUS: {
      if (!in || in_len == 0 || ((const char *)in)[in_len - 1] != '\0') return FMX_BAD_INFO_LENGTH;
      const struct fmx_bulk_engine *e = bulk_find(in);
      if (!e) return FMX_BAD_INFO_KEY;
      char reason[160];
      e->probe(reason, sizeof reason);
      return info_put_str(out, out_len, reason);
    }
    case FMX_INFO_COUNTER_COUNT: {
      uint32_t n = CNT_MAX;
      return info_put(out, out_len, &n, sizeof n);
    }
    case FMX_INFO_COUNTER_LABEL: {
      uint32_t i;
      if (!in || in_len < sizeof i) return FMX_BAD_INFO_LENGTH;
      memcpy(&i, in, sizeof i);
      return i < CNT_MAX ? info_put_str(out, out_len, counter_labels[i]) : FMX_BAD_INFO_KEY;
    }
    default:
      break;
  }
  if (!ep) return FMX_BAD_ENDPOINT;
  fmx_return_t rc = FMX_SUCCESS;
  ep_lock(ep);
  switch (key) {
    case FMX_INFO_COUNTER_VALUES:
      rc = info_put(out, out_len, ep->counters, CNT_MAX * sizeof *ep->counters);
      break;
    case FMX_INFO_LAST_BULK_ENGINE: {
      char name[32];
      proto_last_engine(&ep->pe, name, sizeof name);
      rc = info_put_str(out, out_len, name);
      break;
    }
    case FMX_INFO_ENDPOINT_ID:
      rc = info_put(out, out_len, &ep->t.eid, sizeof ep->t.eid);
      break;
    case FMX_INFO_PEER_SESSION: {
      fmx_endpoint_addr_t a;
      if (!in || in_len != sizeof a) {
        rc = FMX_BAD_INFO_LENGTH;
        break;
      }
      memcpy(&a, in, sizeof a);
      /* Index and generation find the partner; its board and id must be
       * the address's too (another endpoint's address may carry the same
       * index and generation). */
      struct partner *p = ep_partner_from_addr(ep, a);
      if (!p || ep_partner_addr(p).opaque[1] != a.opaque[1])
        rc = FMX_BAD_ADDRESS;
      else
        rc = info_put(out, out_len, &p->t.session, sizeof p->t.session);
      break;
    }
    default:
      rc = FMX_BAD_INFO_KEY;
  }
  ep_unlock(ep);
  return rc;
}
