/* SPDX-License-Identifier: MIT */
/* The address vector: peers' names (struct ofx_name) by fi_addr_t, which
 * is the index for FI_AV_TABLE and FI_AV_MAP alike, and the way back from
 * (NIC id, endpoint id) to fi_addr_t for FI_SOURCE. Endpoints connect to a
 * name the first time they use it (ep.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi/ofi_int.h"

static uint64_t hkey_of(uint64_t nic, uint32_t eid) { return (nic << 16) ^ eid ^ ((uint64_t)eid << 48); }

static size_t hslot(uint64_t k, size_t cap) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return (size_t)k & (cap - 1);
}

/* Keep the table at most half full. */
static int rehash(struct ofx_av *av, size_t cap) {
  uint64_t *k = calloc(cap, sizeof *k);
  size_t *v = calloc(cap, sizeof *v);
  if (!k || !v) {
    free(k);
    free(v);
    return -FI_ENOMEM;
  }
  for (size_t i = 0; i < av->hcap; i++) {
    if (!av->hval[i]) continue;
    size_t s = hslot(av->hkey[i], cap);
    while (v[s]) s = (s + 1) & (cap - 1);
    k[s] = av->hkey[i];
    v[s] = av->hval[i];
  }
  free(av->hkey);
  free(av->hval);
  av->hkey = k;
  av->hval = v;
  av->hcap = cap;
  return 0;
}

static int hash_put(struct ofx_av *av, const struct ofx_name *n, size_t index) {
  if (2 * (av->n + 1) > av->hcap) {
    int rc = rehash(av, av->hcap ? 2 * av->hcap : 64);
    if (rc) return rc;
  }
  uint64_t k = hkey_of(n->nic, n->eid);
  size_t s = hslot(k, av->hcap);
  while (av->hval[s]) {
    const struct ofx_name *o = &av->names[av->hval[s] - 1];
    if (o->nic == n->nic && o->eid == n->eid) break; /* a name again: the later index wins */
    s = (s + 1) & (av->hcap - 1);
  }
  av->hkey[s] = k;
  av->hval[s] = index + 1;
  return 0;
}

fi_addr_t ofx_av_reverse(struct ofx_av *av, fmx_endpoint_addr_t a) {
  uint64_t nic;
  uint32_t eid;
  fmx_decompose_endpoint_addr(a, &nic, &eid);
  fi_addr_t found = FI_ADDR_NOTAVAIL;
  pthread_mutex_lock(&av->lock);
  if (av->hcap) {
    uint64_t k = hkey_of(nic, eid);
    for (size_t s = hslot(k, av->hcap); av->hval[s]; s = (s + 1) & (av->hcap - 1)) {
      size_t i = av->hval[s] - 1;
      if (av->names[i].nic == nic && av->names[i].eid == eid) {
        if (av->live[i]) found = i;
        break;
      }
    }
  }
  pthread_mutex_unlock(&av->lock);
  return found;
}

int ofx_av_name(struct ofx_av *av, fi_addr_t addr, struct ofx_name *out) {
  int ok = 0;
  pthread_mutex_lock(&av->lock);
  if (addr < av->n && av->live[addr]) {
    *out = av->names[addr];
    ok = 1;
  }
  pthread_mutex_unlock(&av->lock);
  return ok;
}

static int grow(struct ofx_av *av, size_t need) {
  if (need <= av->cap) return 0;
  size_t cap = av->cap ? av->cap : 64;
  while (cap < need) cap *= 2;
  struct ofx_name *n = realloc(av->names, cap * sizeof *n);
  if (!n) return -FI_ENOMEM;
  av->names = n;
  uint8_t *l = realloc(av->live, cap);
  if (!l) return -FI_ENOMEM;
  av->live = l;
  av->cap = cap;
  return 0;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
                     void *context) {
  (void)context;
  struct ofx_av *av = (struct ofx_av *)fav;
  if (flags & ~(uint64_t)FI_MORE) return -FI_EBADFLAGS;
  if (count && !addr) return -FI_EINVAL;
  pthread_mutex_lock(&av->lock);
  int rc = grow(av, av->n + count);
  size_t done = 0;
  for (; rc == 0 && done < count; done++) {
    const struct ofx_name *n = (const struct ofx_name *)addr + done;
    size_t i = av->n;
    av->names[i] = *n;
    av->live[i] = 1;
    rc = hash_put(av, n, i);
    if (rc) break;
    av->n++;
    if (fi_addr) fi_addr[done] = i;
  }
  pthread_mutex_unlock(&av->lock);
  if (fi_addr)
    for (size_t i = done; i < count; i++) fi_addr[i] = FI_ADDR_NOTAVAIL;
  return rc ? rc : (int)done;
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service, fi_addr_t *fi_addr,
                        uint64_t flags, void *context) {
  (void)av, (void)node, (void)service, (void)fi_addr, (void)flags, (void)context;
  return -FI_ENOSYS; /* names only: no host/service addressing */
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service, size_t svccnt,
                        fi_addr_t *fi_addr, uint64_t flags, void *context) {
  (void)av, (void)node, (void)nodecnt, (void)service, (void)svccnt, (void)fi_addr, (void)flags, (void)context;
  return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags) {
  (void)flags;
  struct ofx_av *av = (struct ofx_av *)fav;
  int rc = 0;
  pthread_mutex_lock(&av->lock);
  for (size_t i = 0; i < count; i++) {
    if (fi_addr[i] < av->n && av->live[fi_addr[i]])
      av->live[fi_addr[i]] = 0;
    else
      rc = -FI_EINVAL;
  }
  pthread_mutex_unlock(&av->lock);
  return rc;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen) {
  struct ofx_av *av = (struct ofx_av *)fav;
  if (!addrlen) return -FI_EINVAL;
  struct ofx_name n;
  int ok = ofx_av_name(av, fi_addr, &n);
  if (!ok) return -FI_EINVAL;
  if (addr) memcpy(addr, &n, *addrlen < sizeof n ? *addrlen : sizeof n);
  size_t have = *addrlen;
  *addrlen = sizeof n;
  return have < sizeof n ? -FI_ETOOSMALL : 0;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len) {
  (void)av;
  const struct ofx_name *n = addr;
  char s[64];
  int k = snprintf(s, sizeof s, "fmx://%012llx:%u", (unsigned long long)n->nic, n->eid);
  if (buf && *len) snprintf(buf, *len, "%s", s);
  *len = (size_t)k + 1;
  return buf;
}

static int no_av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **set, void *context) {
  (void)av, (void)attr, (void)set, (void)context;
  return -FI_ENOSYS;
}

static int av_close(struct fid *fid) {
  struct ofx_av *av = (struct ofx_av *)fid;
  pthread_mutex_destroy(&av->lock);
  free(av->names);
  free(av->live);
  free(av->hkey);
  free(av->hval);
  free(av);
  return 0;
}

static struct fi_ops av_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static struct fi_ops_av av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = no_av_set,
};

int ofx_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **out, void *context) {
  (void)domain;
  if (!attr || (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE))
    return -FI_EINVAL;
  if (attr->flags & FI_EVENT) return -FI_ENOSYS; /* inserts complete at once */
  if (attr->name) return -FI_ENOSYS;             /* no shared AVs */
  struct ofx_av *av = calloc(1, sizeof *av);
  if (!av) return -FI_ENOMEM;
  pthread_mutex_init(&av->lock, NULL);
  av->av.fid.fclass = FI_CLASS_AV;
  av->av.fid.context = context;
  av->av.fid.ops = &av_fid_ops;
  av->av.ops = &av_ops;
  *out = &av->av;
  return 0;
}
