/* SPDX-License-Identifier: MIT */
/*
 * Discovery on the wire, where no peer file is given: a querier broadcasts
 * a HOST_QUERY on board 0 (a raw frame to ff:ff:ff:ff:ff:ff where it may
 * open a packet socket, and UDP datagrams to the subnet's broadcast address
 * at every endpoint's port), and every open endpoint that reads it answers
 * with a HOST_REPLY: its board's NIC id and name. Open-MX's omxoed did this
 * with a daemon; fmx has none, so a host answers while one of its endpoints
 * makes progress (inside fmx calls, or asleep in a wait: the packet wakes
 * it). Answers are not trusted for more than names: connecting still needs
 * the endpoint's key.
 */
#ifndef FMX_NET_DISCOVER_H
#define FMX_NET_DISCOVER_H

#include <stdint.h>

struct fmx_endpoint;
struct net_pkt;
struct net_addr;

/* Query and collect the answers for wait_ms (three queries, a third
 * apart), each one into the peer table: the count of answers taken, or
 * -errno when nothing could be sent. */
int net_discover(uint32_t wait_ms);
/* An endpoint's answer to a HOST_QUERY that came from `from`. */
void net_discover_answer(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from);

#endif
