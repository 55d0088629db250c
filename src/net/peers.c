/* SPDX-License-Identifier: MIT */
/* The peer table (peers.h). */
#include "net/peers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "base/config.h"
#include "base/log.h"
#include "net/discover.h"
#include "net/iface.h"

#define PEERS_MAX 4096
#define PEERS_FILE_MAX (1 << 20)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct net_peer_entry *table; /* PEERS_MAX; NULL when out of memory */
static int ntable;

static int valid_name(const char *name, size_t len) {
  if (len == 0 || len >= NET_PEER_NAME || !memchr(name, ':', len)) return 0;
  for (size_t i = 0; i < len; i++)
    if (name[i] <= ' ' || name[i] > '~') return 0;
  return 1;
}

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
      } else if (k != 2 || net_mac_parse(mac, &nic) < 0 || nic == 0 || !valid_name(name, strlen(name))) {
        (*bad)++;
      } else if (n < max) {
        out[n].nic = nic;
        memcpy(out[n].name, name, strlen(name) + 1); /* shorter than NET_PEER_NAME: checked above */
        out[n].source = NET_PEER_FILE;
        n++;
      } else {
        (*bad)++;
      }
    }
    text = end ? end + 1 : text + len;
  }
  return n;
}

void net_board_name(char *buf, unsigned len) {
  struct utsname u;
  if (uname(&u) < 0) snprintf(u.nodename, sizeof u.nodename, "localhost");
  /* A name longer than a board name may be keeps its head. */
  snprintf(buf, len, "%.*s:0", NET_PEER_NAME - 3, u.nodename);
}

static void load_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    log_warn("FMX-PEERS", "FMX_PEERS=%s: %s; no peer table", path, strerror(errno));
    return;
  }
  char *text = calloc(1, PEERS_FILE_MAX + 1);
  int nbad = 0;
  if (text) {
    size_t got = fread(text, 1, PEERS_FILE_MAX, f);
    text[got] = '\0';
    ntable += net_peers_parse(text, table + ntable, PEERS_MAX - ntable, &nbad);
    if (nbad) log_warn("FMX-PEERS", "FMX_PEERS=%s: %d line(s) skipped (want 'MAC hostname:board')", path, nbad);
  }
  free(text);
  fclose(f);
}

static void load(void) {
  table = calloc(PEERS_MAX, sizeof *table);
  if (!table) return;
  struct net_iface b;
  if (net_board(&b) == 0) {
    table[0] = (struct net_peer_entry){.nic = b.nic, .source = NET_PEER_LOCAL};
    net_board_name(table[0].name, sizeof table[0].name);
    ntable = 1;
  }
  if (fmx_cfg.peers && fmx_cfg.peers[0]) load_file(fmx_cfg.peers);
}

static int find_name(const char *full, uint64_t *nic) {
  int r = -ENOENT;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < ntable && r < 0; i++)
    if (strcmp(table[i].name, full) == 0) *nic = table[i].nic, r = 0;
  pthread_mutex_unlock(&lock);
  return r;
}

static int find_nic(uint64_t nic, char *buf, unsigned len) {
  int r = -ENOENT;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < ntable && r < 0; i++)
    if (table[i].nic == nic) snprintf(buf, len, "%s", table[i].name), r = 0;
  pthread_mutex_unlock(&lock);
  return r;
}

int net_peers_discover(void) {
  pthread_once(&once, load);
  /* The wire is asked only without a file, and while asking is on. */
  if ((fmx_cfg.peers && fmx_cfg.peers[0]) || fmx_cfg.net_discover_ms == 0) return 0;
  return net_discover((uint32_t)fmx_cfg.net_discover_ms);
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
  if (find_name(full, nic) == 0) return 0;
  return net_peers_discover() > 0 ? find_name(full, nic) : -ENOENT;
}

int net_peer_name(uint64_t nic, char *buf, unsigned len) {
  pthread_once(&once, load);
  if (find_nic(nic, buf, len) == 0) return 0;
  return net_peers_discover() > 0 ? find_nic(nic, buf, len) : -ENOENT;
}

int net_peers_learn(uint64_t nic, const char *name, unsigned len) {
  if (!nic || nic > 0xffffffffffffull || !valid_name(name, len)) return -EINVAL;
  pthread_once(&once, load);
  if (!table) return -ENOMEM;
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < ntable && table[i].nic != nic) i++;
  int r = 0;
  if (i == ntable && ntable == PEERS_MAX) {
    r = -ENOSPC;
  } else if (i == ntable || table[i].source == NET_PEER_FOUND) {
    /* New, or found before (renamed); this host's board and the file's
     * entries are kept as they are. */
    if (i == ntable) ntable++;
    table[i] = (struct net_peer_entry){.nic = nic, .source = NET_PEER_FOUND};
    memcpy(table[i].name, name, len);
    table[i].name[len] = '\0';
  }
  pthread_mutex_unlock(&lock);
  return r;
}

int net_peers_count(void) {
  pthread_once(&once, load);
  pthread_mutex_lock(&lock);
  int n = ntable;
  pthread_mutex_unlock(&lock);
  return n;
}

int net_peer_at(uint32_t i, struct net_peer_entry *out) {
  pthread_once(&once, load);
  int r = -ENOENT;
  pthread_mutex_lock(&lock);
  if (i < (uint32_t)ntable) *out = table[i], r = 0;
  pthread_mutex_unlock(&lock);
  return r;
}
