/* SPDX-License-Identifier: MIT */
/*
 * The peer table: boards by name. Three sources, in this order:
 * - this host's board 0, named `<nodename>:0` (MX names its boards so);
 * - a file (FMX_PEERS) of lines `MAC hostname:board`, the format Open-MX's
 *   omx_init_peers reads: `#` starts a comment, blank lines are skipped, a
 *   bad line is skipped and counted;
 * - without a file, the boards that answered a broadcast query on the wire
 *   (discover.c): a name missing from the table is asked for then, and
 *   fmx_info asks at once.
 * Read once, at first use; thread-safe.
 */
#ifndef FMX_NET_PEERS_H
#define FMX_NET_PEERS_H

#include <stdint.h>

#define NET_PEER_NAME 80

enum net_peer_source { NET_PEER_LOCAL = 1, NET_PEER_FILE = 2, NET_PEER_FOUND = 3 };

struct net_peer_entry {
  uint64_t nic;
  char name[NET_PEER_NAME]; /* hostname:board */
  int source;               /* enum net_peer_source */
};

/* Parse a table's text: the entries kept (at most max), and in *bad the
 * lines refused. */
int net_peers_parse(const char *text, struct net_peer_entry *out, int max, int *bad);
/* The NIC id of a name: "host:board", "host" (board 0), a MAC, or a NIC id
 * in hex (0x...): 0 and *nic, or -ENOENT. */
int net_peer_lookup(const char *name, uint64_t *nic);
/* The name of a NIC id in the table: 0, or -ENOENT. */
int net_peer_name(uint64_t nic, char *buf, unsigned len);
/* The entries now (this host's, the file's and those found). */
int net_peers_count(void);
/* The entry at index i (this host's board first, then the file's in its
 * order, then those found): 0, or -ENOENT. */
int net_peer_at(uint32_t i, struct net_peer_entry *out);
/* A board that answered a query: added, or its name updated. Refused
 * (-EINVAL) when the name is not "host:board" of printable characters. */
int net_peers_learn(uint64_t nic, const char *name, unsigned len);
/* Ask the wire now when no file is given (FMX_NET_DISCOVER_MS): the
 * boards that answered, or -errno. */
int net_peers_discover(void);
/* This host's board 0's name, "<nodename>:0". */
void net_board_name(char *buf, unsigned len);

#endif
