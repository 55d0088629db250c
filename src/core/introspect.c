/* SPDX-License-Identifier: MIT */
/* fmx_get_info's introspection keys: the engines, the table of tunables
 * and the topology, so that tools need nothing but fmx.h. */
#include "core/introspect.h"

#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "bulk/engine.h"
#include "platform/topo.h"

static void copy_str(char *dst, size_t len, const char *src) { snprintf(dst, len, "%s", src ? src : ""); }

static void copy_cache(fmx_cache_info_t *d, const struct topo_cache_info *s) {
  d->size = s->size;
  d->nshare = s->nshare;
  copy_str(d->cpus, sizeof d->cpus, s->cpus);
}

static int index_in(const void *in, uint32_t in_len, uint32_t *i) {
  if (!in || in_len < sizeof *i) return -1;
  memcpy(i, in, sizeof *i);
  return 0;
}

int introspect_info(uint32_t key, const void *in, uint32_t in_len, void *out, uint32_t out_len,
                    fmx_return_t *rc) {
  uint32_t i, n = 0;
  switch (key) {
    case FMX_INFO_ENGINE_COUNT:
      while (bulk_engines[n]) n++;
      break;
    case FMX_INFO_ENGINE_NAME:
      for (n = 0; bulk_engines[n]; n++) {}
      if (index_in(in, in_len, &i)) {
        *rc = FMX_BAD_INFO_LENGTH;
        return 1;
      }
      if (i >= n) {
        *rc = FMX_BAD_INFO_KEY;
        return 1;
      }
      if (!out || out_len == 0) {
        *rc = FMX_BAD_INFO_LENGTH;
        return 1;
      }
      copy_str(out, out_len, bulk_engines[i]->name);
      *rc = FMX_SUCCESS;
      return 1;
    case FMX_INFO_CONFIG_COUNT:
      n = (uint32_t)config_count();
      break;
    case FMX_INFO_CONFIG_ITEM: {
      struct config_item it;
      fmx_config_item_t o;
      if (index_in(in, in_len, &i) || !out || out_len < sizeof o) {
        *rc = FMX_BAD_INFO_LENGTH;
        return 1;
      }
      if (config_item_at(i, &it) < 0) {
        *rc = FMX_BAD_INFO_KEY;
        return 1;
      }
      memset(&o, 0, sizeof o);
      copy_str(o.name, sizeof o.name, it.name);
      copy_str(o.value, sizeof o.value, it.value);
      copy_str(o.source, sizeof o.source, it.source);
      copy_str(o.def, sizeof o.def, it.def);
      copy_str(o.refused, sizeof o.refused, it.refused);
      copy_str(o.doc, sizeof o.doc, it.doc);
      memcpy(out, &o, sizeof o);
      *rc = FMX_SUCCESS;
      return 1;
    }
    case FMX_INFO_TOPOLOGY: {
      const struct topo_info *t = topo_get();
      fmx_topology_t o;
      if (!out || out_len < sizeof o) {
        *rc = FMX_BAD_INFO_LENGTH;
        return 1;
      }
      memset(&o, 0, sizeof o);
      o.ncores = t->ncores;
      o.npus = t->npus;
      o.numa_nodes = t->numa_nodes;
      copy_cache(&o.l1d, &t->l1);
      copy_cache(&o.l2, &t->l2);
      copy_cache(&o.l3, &t->l3);
      copy_str(o.cpu_model, sizeof o.cpu_model, t->cpu_model);
      copy_str(o.source, sizeof o.source, t->src);
      memcpy(out, &o, sizeof o);
      *rc = FMX_SUCCESS;
      return 1;
    }
    default:
      return 0;
  }
  /* the counts */
  if (!out || out_len < sizeof n) {
    *rc = FMX_BAD_INFO_LENGTH;
    return 1;
  }
  memcpy(out, &n, sizeof n);
  *rc = FMX_SUCCESS;
  return 1;
}
