/* SPDX-License-Identifier: MIT */
/* The peer table (peers.h). */
#include "net/peers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "net/iface.h"

#define PEERS_MAX 4096
#define PEERS_FILE_MAX (1 << 20)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct net_peer_entry *table;
static int ntable, nbad;

int net_peers_parse(const char *text, struct net_peer_entry *out, int max, int *bad) {
  int n = 0;
  *bad = 0;
  while (text && *text) {
    const char *end = strchr(text, '\n');
    size_t len = end ? (size_t)(end - text) : strlen(text);
    char line[256];
    if (len >= sizeof line) {
      (*bad)++;
    } else {
      memcpy(line, text, len);
      line[len] = '\0';
      char *hash = strchr(line, '#');
      if (hash) *hash = '\0';
      char mac[64], name[NET_PEER_NAME + 1], extra[8];
      int k = sscanf(line, "%63s %80s %7s", mac, name, extra);
      uint64_t nic;
      if (k == EOF || k <= 0) {
        /* blank */
      } else if (k != 2 || net_mac_parse(mac, &nic) < 0 || nic == 0 || strlen(name) >= NET_PEER_NAME ||
                 !strchr(name, ':')) {
        (*bad)++;
      } else if (n < max) {
        out[n].nic = nic;
        memcpy(out[n].name, name, strlen(name) + 1); /* shorter than NET_PEER_NAME: checked above */
        n++;
      } else {
        (*bad)++;
      }
    }
    text = end ? end + 1 : text + len;
  }
  return n;
}

static void load(void) {
  const char *path = fmx_cfg.peers;
  if (!path || !path[0]) return;
  FILE *f = fopen(path, "r");
  if (!f) {
    log_warn("FMX-PEERS", "FMX_PEERS=%s: %s; no peer table", path, strerror(errno));
    return;
  }
  char *text = calloc(1, PEERS_FILE_MAX + 1);
  table = calloc(PEERS_MAX, sizeof *table);
  if (text && table) {
    size_t got = fread(text, 1, PEERS_FILE_MAX, f);
    text[got] = '\0';
    ntable = net_peers_parse(text, table, PEERS_MAX, &nbad);
    if (nbad) log_warn("FMX-PEERS", "FMX_PEERS=%s: %d line(s) skipped (want 'MAC hostname:board')", path, nbad);
  }
  free(text);
  fclose(f);
}

int net_peer_lookup(const char *name, uint64_t *nic) {
  if (!name || !name[0]) return -ENOENT;
  if (net_mac_parse(name, nic) == 0) return 0;
  if (name[0] == '0' && (name[1] == 'x' || name[1] == 'X')) {
    char *end;
    unsigned long long v = strtoull(name, &end, 16);
    if (*end == '\0' && v && v <= 0xffffffffffffull) {
      *nic = v;
      return 0;
    }
  }
  pthread_once(&once, load);
  char full[NET_PEER_NAME + 8];
  snprintf(full, sizeof full, strchr(name, ':') ? "%s" : "%s:0", name);
  for (int i = 0; i < ntable; i++)
    if (strcmp(table[i].name, full) == 0) {
      *nic = table[i].nic;
      return 0;
    }
  return -ENOENT;
}

int net_peer_name(uint64_t nic, char *buf, unsigned len) {
  pthread_once(&once, load);
  for (int i = 0; i < ntable; i++)
    if (table[i].nic == nic) {
      snprintf(buf, len, "%s", table[i].name);
      return 0;
    }
  return -ENOENT;
}

int net_peers_each(void (*fn)(const struct net_peer_entry *e, void *arg), void *arg, int *bad) {
  pthread_once(&once, load);
  for (int i = 0; i < ntable; i++) fn(&table[i], arg);
  if (bad) *bad = nbad;
  return ntable;
}
