/* SPDX-License-Identifier: MIT */
/*
 * The peer table: other hosts' boards by name. A file (FMX_PEERS) of lines
 * `MAC hostname:board`, the format Open-MX's omx_init_peers reads: `#`
 * starts a comment, blank lines are skipped, a bad line is skipped and
 * counted. Read once, at first use; thread-safe.
 */
#ifndef FMX_NET_PEERS_H
#define FMX_NET_PEERS_H

#include <stdint.h>

#define NET_PEER_NAME 80

struct net_peer_entry {
  uint64_t nic;
  char name[NET_PEER_NAME]; /* hostname:board */
};

/* Parse a table's text: the entries kept (at most max), and in *bad the
 * lines refused. */
int net_peers_parse(const char *text, struct net_peer_entry *out, int max, int *bad);
/* The NIC id of a name: "host:board", "host" (board 0), a MAC, or a NIC id
 * in hex (0x...): 0 and *nic, or -ENOENT. */
int net_peer_lookup(const char *name, uint64_t *nic);
/* The name of a NIC id in the table: 0, or -ENOENT. */
int net_peer_name(uint64_t nic, char *buf, unsigned len);
/* Call fn for every entry; the count, and in *bad the lines refused. */
int net_peers_each(void (*fn)(const struct net_peer_entry *e, void *arg), void *arg, int *bad);

#endif
