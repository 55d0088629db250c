/* SPDX-License-Identifier: MIT */
/*
 * Records exchanged between two endpoints, whatever the transport.
 *
 * Every record starts with this 40-byte header. Fixed-width integers, not
 * enums, because the layout is shared between processes (and later the wire).
 *
 *   EAGER  match, msg_len = payload bytes (the payload follows the header).
 *          flags & PROTO_F_SYNC never set (issend always goes rendezvous).
 *          msg_len > len: the first fragment of a medium message (longer
 *          than FMX_EAGER_FRAG); sreq = sender request id, and FRAG records
 *          carry the rest, right behind it in the same ring.
 *   FRAG   the next fragment of the medium message in flight on this ring:
 *          sreq as in its first fragment, msg_len = offset of this fragment,
 *          len = its bytes. Nothing else comes between two fragments.
 *   RTS    rendezvous request: match, msg_len, sreq = sender request id,
 *          nseg = sender segments; payload = nseg x {u64 addr, u64 len}.
 *          flags & PROTO_F_XMEM: the segments lie in one fmx_mem_alloc
 *          region, announced by 2 more {u64, u64}: {fd, inode}, {base, len}
 *          (region/region.h); the receiver may map it and copy directly.
 *   CTS    receiver -> sender, ring and coop engines: sreq, rreq, msg_len =
 *          bytes wanted (already truncated to the receive buffer); flags &
 *          PROTO_F_COOP: the coop engine (the transfer is published in the
 *          channel's coop area of this direction); PROTO_F_VMSPLICE: the
 *          vmsplice engine (the sender pushes into the channel's pipe of
 *          this direction); else the ring engine.
 *   FIN    receiver -> sender: sreq, msg_len = bytes taken; match = status
 *          code when flags & PROTO_F_ERROR.
 *   CLOSE  the sender closed its endpoint.
 *   PAD    filler to the end of a ring.
 */
#ifndef FMX_TRANSPORT_RECORD_H
#define FMX_TRANSPORT_RECORD_H

#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "region/region.h"

enum proto_type {
  PROTO_PAD = 0,
  PROTO_EAGER = 1,
  PROTO_RTS = 2,
  PROTO_CTS = 3,
  PROTO_FIN = 4,
  PROTO_CLOSE = 5,
  PROTO_FRAG = 6,
  PROTO_TYPE_MAX
};

/* The longest eager message (a medium one, in fragments): a receiver
 * refuses longer ones, since it may have to buffer it whole. */
#define PROTO_EAGER_MAX (1ull << 30)

#define PROTO_F_SYNC 0x01
#define PROTO_F_ERROR 0x02
#define PROTO_F_COOP 0x04 /* CTS: join the coop transfer published in the channel */
#define PROTO_F_VMSPLICE 0x08 /* CTS: push the message into the channel's pipe (vmsplice engine) */
#define PROTO_F_XMEM 0x10 /* RTS: its segments lie in one fmx_mem_alloc region, announced after them */

struct proto_hdr {
  uint8_t type;     /* 0: enum proto_type */
  uint8_t flags;    /* 1 */
  uint16_t nseg;    /* 2: RTS segment count */
  uint32_t len;     /* 4: payload bytes following this header */
  uint64_t match;   /* 8 */
  uint64_t msg_len; /* 16 */
  uint64_t sreq;    /* 24: sender request id */
  uint64_t rreq;    /* 32: receiver request id */
};
_Static_assert(sizeof(struct proto_hdr) == 40, "record header layout is shared");

/* struct proto_seg, a segment as the records carry it: region/region.h. */

const char *proto_type_str(unsigned type);

/* An fmx_mem_alloc region's wire form: 2 proto_seg after an RTS's
 * segments, or in a coop area. */
static inline void proto_region_to_wire(const struct region_ref *r, struct proto_seg w[2]) {
  w[0] = (struct proto_seg){r->fd, r->ino};
  w[1] = (struct proto_seg){r->base, r->len};
}
static inline struct region_ref proto_region_from_wire(const struct proto_seg w[2]) {
  return (struct region_ref){w[0].addr, w[0].len, w[1].addr, w[1].len};
}

/* A record's payload, len bytes gathered from iov, copied to dst (what a
 * transport's push does with it). */
static inline void record_gather(void *dst, const struct iovec *iov, int iovcnt, size_t len) {
  uint8_t *d = dst;
  for (int i = 0; i < iovcnt && len; i++) {
    size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;
    memcpy(d, iov[i].iov_base, n);
    d += n;
    len -= n;
  }
}

#endif
