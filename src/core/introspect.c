/* SPDX-License-Identifier: MIT */
/* fmx_get_info's introspection keys: the engines, the table of tunables
 * and the topology, so that tools need nothing but fmx.h. */
#include "core/introspect.h"

#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "bulk/engine.h"
#include "platform/topo.h"

fmx_return_t info_put(void *out, uint32_t out_len, const void *v, size_t n) {
  if (!out || out_len < n) return FMX_BAD_INFO_LENGTH;
  memcpy(out, v, n);
  return FMX_SUCCESS;
}

fmx_return_t info_put_str(void *out, uint32_t out_len, const char *s) {
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

static fmx_return_t config_item(uint32_t i, void *out, uint32_t out_len) {
  struct config_item it;
  fmx_config_item_t o;
  if (config_item_at(i, &it) < 0) return FMX_BAD_INFO_KEY;
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
  cache_out(&o.l1d, &t->l1);
  cache_out(&o.l2, &t->l2);
  cache_out(&o.l3, &t->l3);
  TEXT(o.cpu_model, t->cpu_model);
  TEXT(o.source, t->src);
  return info_put(out, out_len, &o, sizeof o);
}

int introspect_info(uint32_t key, const void *in, uint32_t in_len, void *out, uint32_t out_len, fmx_return_t *rc) {
  uint32_t n, i = 0;
  int indexed = key == FMX_INFO_ENGINE_NAME || key == FMX_INFO_CONFIG_ITEM;
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
      *rc = config_item(i, out, out_len);
      return 1;
    case FMX_INFO_TOPOLOGY:
      *rc = topology(out, out_len);
      return 1;
    default:
      return 0;
  }
}
