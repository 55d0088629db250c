/* SPDX-License-Identifier: MIT */
/*
 * The net transport's packet format, version 7 (docs/protocol.md has it
 * byte by byte). The same bytes travel as the payload of a raw Ethernet
 * frame (EtherType NET_ETHERTYPE) or of a UDP datagram. Every field is in
 * network byte order; nothing here is a C struct laid over the wire: the
 * parser reads each field at its offset after checking the length, and a
 * packet it refuses says why (enum net_bad), for the counters.
 *
 *   0  u16 magic 0x4658 ("FX")      12 u32 src_session
 *   2  u8  version (7)              16 u32 seq (DATA: per partner; PULL_REPLY: the hold; else 0)
 *   3  u8  type (enum net_type)     20 u32 ack (next seq the sender expects)
 *   4  u16 dst_ep                   24 u16 len (body bytes after the header)
 *   6  u16 src_ep                   26 u16 flags
 *   8  u32 dst_session
 */
#ifndef FMX_NET_WIRE_H
#define FMX_NET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "transport/record.h"

#define NET_ETHERTYPE 0x86DF
#define NET_MAGIC 0x4658
#define NET_VERSION 7 /* 6: no core wait in PULL_REPLY; 5: no NACK out of step; 4: no hold in PULL_REPLY; 3: no NET_ACK_DUPS; 2: no NET_F_WIRE; 1: no NET_F_TRAIN */
#define NET_HDR_LEN 28
/* The most one packet's body may hold: a jumbo frame less our header
 * (Ethernet's 14 B are outside it). UDP and smaller MTUs carry less. */
#define NET_BODY_MAX (9000 - NET_HDR_LEN)
/* dst_ep of a packet for whichever endpoint reads it (HOST_QUERY), and
 * src_ep of a querier that is no endpoint. */
#define NET_EP_ANY 0xffff
/* The longest board name a HOST_REPLY carries (MX's MX_MAX_HOSTNAME_LEN
 * less its NUL). */
#define NET_NAME_MAX 79

enum net_type {
  NET_CONNECT = 1,       /* body: u64 nic, u64 dst_nic, u32 key, u32 conn_seq, u32 start_seq, u32 bulk_ip,
                          * u16 bulk_port, u16 mtu (36 B) */
  NET_CONNECT_REPLY = 2, /* body: u32 status, u32 conn_seq, u32 start_seq, u32 bulk_ip, u16 bulk_port, u16 mtu
                          * (20 B) */
  NET_DATA = 3,          /* body: bytes of the record stream (flags FIRST/LAST), sequenced */
  NET_ACK = 4,           /* body: u64 sack: bit i = seq ack+1+i is held (8 B) */
  NET_NACK = 5,          /* body: u32 reason (enum net_nack) (4 B) */
  NET_PULL = 6,          /* body: u64 sreq, u64 rreq, u32 frame, u32 first, u32 count (28 B): send frames
                          * first..first+count-1 of the sender's transfer sreq, frame bytes each */
  NET_PULL_REPLY = 7,    /* body: u64 rreq, u32 index, then the frame's bytes (at least 1) */
  NET_HOST_QUERY = 8,    /* body: u64 nonce (8 B); to dst_ep NET_EP_ANY, broadcast: who is there? */
  NET_HOST_REPLY = 9,    /* body: u64 nonce, u64 nic, then the board's name "host:board" (1 to
                          * NET_NAME_MAX bytes, printable, no NUL) */
  NET_TYPE_MAX
};

/* NET_DATA flags: where the packet lies in its record; NET_F_TRAIN: it
 * left in a GSO train (the receiver's GRO may take such trains whole). */
#define NET_F_FIRST 0x0001
#define NET_F_LAST 0x0002
#define NET_F_TRAIN 0x0004
#define NET_F_KNOWN (NET_F_FIRST | NET_F_LAST | NET_F_TRAIN)
/* NET_PULL flag: answer on your wire socket, to the address our packets
 * come from, not at our bulk socket (its answers stopped coming there:
 * net/pull.c, on_wire). The only flag a PULL has. */
#define NET_F_WIRE 0x0008
/* NET_ACK flags: how many packets came twice since the sender's last ACK
 * (at most 4095): resends its timer or a hole it saw made for nothing
 * (net/rel.h, net_rel_on_dups). The only flags an ACK has. */
#define NET_ACK_DUPS_SHIFT 4
#define NET_ACK_DUPS_MASK 0xfff0

/* A NET_PULL_REPLY's seq: how long its sender held the PULL it answers,
 * from the PULL's arrival (its kernel's stamp) to this answer's send, in
 * ns plus one; 0: not known (no stamp), UINT32_MAX: 4.29 s or more. The
 * receiver takes it off the wait it measures, and what is left is the
 * network's (net/grant.h, net_grant_delay): no clock is shared. */
static inline uint32_t net_hold_put(uint64_t ns) { return ns >= UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)ns + 1; }
/* The hold a seq says: 1 and *ns, or 0 when not known. */
static inline int net_hold_get(uint32_t seq, uint64_t *ns) {
  if (seq == 0 || seq == UINT32_MAX) return 0;
  *ns = seq - 1u;
  return 1;
}

/* NET_PULL_REPLY flags: how long the PULL it answers waited in its
 * sender's socket for the sender to read it (a wait for its core), the
 * part of the hold above that no pacing or queue of its own made: in us,
 * 8 bits of mantissa under a 4-bit exponent (m << e, to 8.4 s), rounded
 * down. The receiver's floor covers such waits (net/grant.h); a sender's
 * pacing it does not. The only flags a PULL_REPLY has. */
#define NET_REPLY_WAIT_SHIFT 4
#define NET_REPLY_WAIT_MASK 0xfff0
static inline uint16_t net_wait_put(uint64_t ns) {
  uint64_t us = ns / 1000;
  unsigned e = 0;
  while (e < 15 && us >> e > 255) e++;
  uint64_t m = us >> e > 255 ? 255 : us >> e;
  return (uint16_t)((e << 8 | m) << NET_REPLY_WAIT_SHIFT);
}
static inline uint64_t net_wait_get(uint16_t flags) {
  unsigned v = (flags & NET_REPLY_WAIT_MASK) >> NET_REPLY_WAIT_SHIFT;
  return ((uint64_t)(v & 255) << (v >> 8)) * 1000;
}

/* NET_NACK_NO_MEMORY: the sender gave up on the connection, without
 * memory for what we sent it. NET_NACK_OUT_OF_STEP: the DATA packet whose
 * seq the NACK's header carries is further from what the sender expects
 * of us than two windows reach: its side of the connection starts
 * elsewhere than ours. A reason not listed here reads as closed. */
enum net_nack {
  NET_NACK_BAD_ENDPOINT = 1,
  NET_NACK_BAD_SESSION = 2,
  NET_NACK_BAD_KEY = 3,
  NET_NACK_CLOSED = 4,
  NET_NACK_NO_MEMORY = 5,
  NET_NACK_OUT_OF_STEP = 6
};

/* Why a packet was refused (0: it was not). */
enum net_bad {
  NET_OK = 0,
  NET_BAD_SHORT,   /* shorter than the header */
  NET_BAD_MAGIC,   /* not ours */
  NET_BAD_VERSION, /* another version of the format */
  NET_BAD_TYPE,    /* unknown type */
  NET_BAD_LENGTH,  /* len beyond the bytes received, or the wrong body size for the type */
  NET_BAD_FLAGS,   /* flags the type does not have */
};

struct net_hdr {
  uint8_t version, type;
  uint16_t dst_ep, src_ep, len, flags;
  uint32_t dst_session, src_session, seq, ack;
};

struct net_pkt {
  struct net_hdr h;
  const uint8_t *body; /* h.len bytes, inside the buffer parsed */
  union {
    /* bulk_ip/bulk_port: where the sender takes the answers to its pulls
     * (UDP, host order), 0 when only on the wire it connects on; mtu: its
     * interface's MTU (0: not said). */
    struct { uint64_t nic, dst_nic; uint32_t key, conn_seq, start_seq, bulk_ip; uint16_t bulk_port, mtu; } connect;
    struct { uint32_t status, conn_seq, start_seq, bulk_ip; uint16_t bulk_port, mtu; } reply;
    struct { uint64_t sack; unsigned dups; } ack;
    struct { uint32_t reason; } nack;
    struct { uint64_t sreq, rreq; uint32_t frame, first, count; } pull;
    struct { uint64_t rreq; uint32_t index; } reply_data; /* the bytes: body + NET_PULL_REPLY_HDR */
    struct { uint64_t nonce; } query;
    struct { uint64_t nonce, nic; uint32_t name_len; } host; /* the name: body + NET_HOST_REPLY_HDR */
  } u;
};

/* Parse n bytes received: 0 and *out filled, or an enum net_bad. Bytes
 * past header + len are ignored (Ethernet pads short frames to 60 B). */
int net_parse(const uint8_t *buf, size_t n, struct net_pkt *out);

/* Write the header (h->len included) into buf (NET_HDR_LEN bytes). */
void net_put_hdr(uint8_t *buf, const struct net_hdr *h);
/* The bodies: write at buf, return their length. */
size_t net_put_connect(uint8_t *buf, uint64_t nic, uint64_t dst_nic, uint32_t key, uint32_t conn_seq,
                       uint32_t start_seq, uint32_t bulk_ip, uint16_t bulk_port, uint16_t mtu);

/* A DATA body is one record: its header (NET_RECORD_HDR bytes, big endian,
 * the fields of struct proto_hdr in its order) and its payload. */
#define NET_RECORD_HDR 40
void net_put_record(uint8_t *buf, const struct proto_hdr *h);
/* Read a record header from a DATA body of n bytes: 0, or -1 when the body
 * is shorter than a header or its payload is not the header's len. */
int net_get_record(const uint8_t *buf, size_t n, struct proto_hdr *h);
size_t net_put_reply(uint8_t *buf, uint32_t status, uint32_t conn_seq, uint32_t start_seq, uint32_t bulk_ip,
                     uint16_t bulk_port, uint16_t mtu);
size_t net_put_ack(uint8_t *buf, uint64_t sack);
size_t net_put_nack(uint8_t *buf, uint32_t reason);
size_t net_put_pull(uint8_t *buf, uint64_t sreq, uint64_t rreq, uint32_t frame, uint32_t first, uint32_t count);
/* A PULL_REPLY body's head; the frame's bytes follow it. */
#define NET_PULL_REPLY_HDR 12
size_t net_put_pull_reply(uint8_t *buf, uint64_t rreq, uint32_t index);
size_t net_put_query(uint8_t *buf, uint64_t nonce);
/* A HOST_REPLY body: its head, then the name (len bytes, at most
 * NET_NAME_MAX; the caller's to check). */
#define NET_HOST_REPLY_HDR 16
size_t net_put_host(uint8_t *buf, uint64_t nonce, uint64_t nic, const char *name, size_t len);
/* Patch the ack field of a header already written (a resent packet
 * carries the ack of when it is resent). */
void net_patch_ack(uint8_t *buf, uint32_t ack);
/* Clear flags of the packet written at buf. */
void net_clear_flags(uint8_t *buf, uint16_t flags);

const char *net_bad_str(int why);
const char *net_type_str(unsigned type);

/* Big-endian fields, bounds checked by the callers. */
static inline uint16_t net_get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t net_get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t net_get64(const uint8_t *p) { return (uint64_t)net_get32(p) << 32 | net_get32(p + 4); }
static inline void net_set16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }
static inline void net_set32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}
static inline void net_set64(uint8_t *p, uint64_t v) { net_set32(p, (uint32_t)(v >> 32)), net_set32(p + 4, (uint32_t)v); }

#endif
