/* SPDX-License-Identifier: MIT */
/* The host's interfaces (iface.h). */
#include "net/iface.h"

#include <errno.h>
#include <pthread.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

#define MAX_IFACES 64

static uint32_t sysfs_u32(const char *ifname, const char *what) {
  char path[96], buf[32];
  snprintf(path, sizeof path, "/sys/class/net/%s/%s", ifname, what);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  uint32_t v = 0;
  if (fgets(buf, sizeof buf, f)) v = (uint32_t)strtoul(buf, NULL, 0);
  fclose(f);
  return v;
}

uint32_t net_iface_bcast(uint32_t ip, uint32_t mask, uint32_t given) {
  if (given && given != ip) return given;
  uint32_t host = ~ntohl(mask);
  /* /31 and /32 have no broadcast address (RFC 3021): none. */
  if (!ip || host < 3) return 0;
  return ip | htonl(host);
}

/* Every interface with a link-layer entry, its IPv4 address merged in. */
static int collect(struct net_iface *out, int max) {
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) < 0) return -errno;
  int n = 0;
  for (struct ifaddrs *a = all; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_PACKET || n == max) continue;
    const struct sockaddr_ll *ll = (const struct sockaddr_ll *)a->ifa_addr;
    struct net_iface *f = &out[n++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", a->ifa_name);
    f->index = ll->sll_ifindex;
    for (int i = 0; i < 6 && i < ll->sll_halen; i++) f->nic = f->nic << 8 | ll->sll_addr[i];
    f->up = (a->ifa_flags & IFF_UP) && (a->ifa_flags & IFF_RUNNING);
    f->loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    f->ether = ll->sll_hatype == ARPHRD_ETHER && ll->sll_halen == 6;
    f->mtu = sysfs_u32(a->ifa_name, "mtu");
  }
  for (struct ifaddrs *a = all; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    for (int i = 0; i < n; i++) {
      if (strcmp(out[i].name, a->ifa_name) != 0 || out[i].ip) continue;
      out[i].ip = ((const struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr;
      if (a->ifa_netmask) out[i].mask = ((const struct sockaddr_in *)a->ifa_netmask)->sin_addr.s_addr;
      uint32_t given = 0;
      if ((a->ifa_flags & IFF_BROADCAST) && a->ifa_broadaddr)
        given = ((const struct sockaddr_in *)a->ifa_broadaddr)->sin_addr.s_addr;
      out[i].bcast = net_iface_bcast(out[i].ip, out[i].mask, given);
    }
  }
  freeifaddrs(all);
  return n;
}

int net_iface_count(void) {
  struct net_iface f[MAX_IFACES];
  int n = collect(f, MAX_IFACES);
  return n < 0 ? 0 : n;
}

int net_iface_at(uint32_t i, struct net_iface *out) {
  struct net_iface f[MAX_IFACES];
  int n = collect(f, MAX_IFACES);
  if (n < 0 || i >= (uint32_t)n) return -ENOENT;
  *out = f[i];
  return 0;
}

int net_iface_find(const char *name, struct net_iface *out) {
  struct net_iface f[MAX_IFACES];
  int n = collect(f, MAX_IFACES);
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (name && name[0]) {
      if (strcmp(f[i].name, name) == 0) best = i;
    } else if (f[i].up && f[i].ether && !f[i].loopback && f[i].nic &&
               (best < 0 || f[i].index < f[best].index)) {
      best = i;
    }
  }
  if (best < 0 || !f[best].ether || !f[best].nic) return -ENODEV;
  *out = f[best];
  return 0;
}

int net_mac_parse(const char *s, uint64_t *nic) {
  unsigned b[6];
  char tail;
  if (!s || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
    return -EINVAL;
  uint64_t v = 0;
  for (int i = 0; i < 6; i++) v = v << 8 | b[i];
  *nic = v;
  return 0;
}

void net_mac_str(uint64_t nic, char *buf, unsigned len) {
  snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", (unsigned)(nic >> 40) & 0xff, (unsigned)(nic >> 32) & 0xff,
           (unsigned)(nic >> 24) & 0xff, (unsigned)(nic >> 16) & 0xff, (unsigned)(nic >> 8) & 0xff,
           (unsigned)nic & 0xff);
}

int net_wanted(void) { return !fmx_cfg.net || strcmp(fmx_cfg.net, "off") != 0; }

/* The interface that is board 0, picked once per process (MX's boards
 * are fixed at init): 0, or -ENODEV. */
static pthread_mutex_t board_lock = PTHREAD_MUTEX_INITIALIZER;
static int board_picked;
static struct net_iface board;

void net_board_force(const struct net_iface *f) {
  pthread_mutex_lock(&board_lock);
  if (f) board = *f;
  board_picked = f != NULL; /* NULL: picked again at the next open */
  pthread_mutex_unlock(&board_lock);
}

int net_board(struct net_iface *out) {
  pthread_mutex_lock(&board_lock);
  if (!board_picked && net_wanted() && net_iface_find(fmx_cfg.net_iface, &board) == 0) board_picked = 1;
  *out = board;
  pthread_mutex_unlock(&board_lock);
  return board_picked ? 0 : -ENODEV;
}
