/* SPDX-License-Identifier: MIT */
/*
 * The host's network interfaces as the net transport sees them: which one
 * is board 0 (FMX_NET_IFACE, else the first Ethernet interface that is up),
 * its NIC id (the 48-bit MAC, MX's), MTU and IPv4 address. Read from
 * getifaddrs and sysfs; nothing is cached but the pick.
 */
#ifndef FMX_NET_IFACE_H
#define FMX_NET_IFACE_H

#include <net/if.h>
#include <stdint.h>

struct net_iface {
  char name[IF_NAMESIZE];
  int index;
  uint64_t nic;      /* MAC, 48 bits */
  uint32_t mtu;
  uint32_t ip, bcast; /* IPv4, network order; 0: none */
  uint32_t mask;      /* ip's netmask, network order */
  int up, loopback, ether;
};

/* The broadcast address of ip/mask (network order): the one the
 * interface was given, else derived from the mask when none was (`ip addr
 * add A/24` sets none, and getifaddrs then gives the address itself);
 * 0 for /31 and /32, which have none. */
uint32_t net_iface_bcast(uint32_t ip, uint32_t mask, uint32_t given);
/* How many interfaces net_iface_at has now. */
int net_iface_count(void);
/* The i-th interface with a link-layer address, as getifaddrs orders
 * them: 0, or -ENOENT past the last. */
int net_iface_at(uint32_t i, struct net_iface *out);
/* The interface called name (NULL or "": the first Ethernet interface that
 * is up, loopback aside): 0 and *out, or -ENODEV. */
int net_iface_find(const char *name, struct net_iface *out);

/* The interface that is board 0, picked once per process (MX's boards
 * are fixed at init): 0 and *out, or -ENODEV (none, or FMX_NET=off). */
int net_board(struct net_iface *out);
/* Make f board 0 of this process from now on (the simulator's); NULL:
 * the host's interface again, picked at the next open. */
void net_board_force(const struct net_iface *f);
/* Whether the net transport may run at all (FMX_NET is not off). */
int net_wanted(void);

/* "aa:bb:cc:dd:ee:ff" <-> NIC id. Parse: 0, or -EINVAL. */
int net_mac_parse(const char *s, uint64_t *nic);
void net_mac_str(uint64_t nic, char *buf, unsigned len);

#endif
