/* SPDX-License-Identifier: MIT */
/*
 * Records exchanged between two endpoints, whatever the transport.
 *
 * Every record starts with this 40-byte header. Fixed-width integers, not
 * enums, because the layout is shared between processes (and later the wire).
 *
 *   EAGER  match, msg_len = payload bytes (the payload follows the header).
 *          flags & PROTO_F_DATA: rreq = 64 bits of data for the receiver's
 *          status (so too RTS); flags & PROTO_F_UNTAGGED: an untagged
 *          message, matched only by untagged receives (so too RTS).
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
 *          bytes wanted (already truncated to the receive buffer); match = the
 *          engine's tag of the transfer; PROTO_CTS_ENGINE(flags): the
 *          engine the receiver chose, by its wire id (bulk/engine.h:
 *          0 ring, 1 coop, 2 vmsplice), which works through what the
 *          connection of this direction lends it (bulk/conn.h).
 *   FIN    receiver -> sender: sreq, msg_len = bytes taken; match = status
 *          code when flags & PROTO_F_ERROR.
 *   CLOSE  the sender closed its endpoint.
 *   RGET   a region read (proto/rma.c), reader -> owner: match = cookie,
 *          msg_len = bytes, sreq = the reader's request, rreq = offset.
 *   RPUT   a region write, writer -> owner, shaped as an RTS (segments,
 *          PROTO_F_XMEM): match = cookie, rreq = offset, sreq = the
 *          writer's request. The owner takes it as a receive into the
 *          region's slice, or refuses with an error FIN (match = code).
 *   RGRANT owner -> reader, the answer to RGET, shaped as an RTS: the
 *          slice's segments, sreq = the owner's send of them, rreq = the
 *          reader's request; the reader pulls and FINs as a receiver.
 *          flags & PROTO_F_ERROR: refused, match = code, no payload.
 *   PAD    filler to the end of a ring.
 */
#ifndef FMX_TRANSPORT_RECORD_H
#define FMX_TRANSPORT_RECORD_H

#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "platform/copy.h"
#include "region/region.h"

enum proto_type {
  PROTO_PAD = 0,
  PROTO_EAGER = 1,
  PROTO_RTS = 2,
  PROTO_CTS = 3,
  PROTO_FIN = 4,
  PROTO_CLOSE = 5,
  PROTO_FRAG = 6,
  PROTO_RGET = 7,
  PROTO_RPUT = 8,
  PROTO_RGRANT = 9,
  PROTO_HINT = 10, /* receiver to sender: rreq = the size classes it wants by rendezvous (proto/classes.c) */
  PROTO_TYPE_MAX
};

/* The longest eager message (a medium one, in fragments): a receiver
 * refuses longer ones, since it may have to buffer it whole. */
#define PROTO_EAGER_MAX (1ull << 30)

#define PROTO_F_SYNC 0x01
#define PROTO_F_ERROR 0x02
#define PROTO_CTS_ENGINE_SHIFT 2 /* CTS: flags bits 2-3 carry the engine's wire id */
#define PROTO_CTS_ENGINE(flags) (((flags) >> PROTO_CTS_ENGINE_SHIFT) & 3u)
#define PROTO_F_XMEM 0x10 /* RTS: its segments lie in one fmx_mem_alloc region, announced after them */
#define PROTO_F_DATA 0x20     /* EAGER (first fragment), RTS: rreq carries 64 bits of the sender's data */
#define PROTO_F_UNTAGGED 0x40 /* EAGER (first fragment), RTS: the untagged space (match 0), apart from tagged */

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

/* Records that carry a sender's segments (RTS and the region ones shaped
 * like it): their payload is nseg segments, and a region after them with
 * PROTO_F_XMEM. */
static inline int record_rts_shaped(unsigned type) {
  return type == PROTO_RTS || type == PROTO_RPUT || type == PROTO_RGRANT;
}
static inline int record_rts_len_ok(const struct proto_hdr *h) {
  return h->nseg <= FMX_MAX_SEGMENTS &&
         h->len == (h->nseg + (h->flags & PROTO_F_XMEM ? 2u : 0u)) * sizeof(struct proto_seg);
}

/* struct proto_seg, a segment as the records carry it: region/region.h. */

const char *proto_type_str(unsigned type);

/* A record's payload, len bytes gathered from iov, copied to dst (what a
 * transport's push does with it). */
static inline void record_gather(void *dst, const struct iovec *iov, int iovcnt, size_t len) {
  uint8_t *d = dst;
  for (int i = 0; i < iovcnt && len; i++) {
    size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;
    copy_regular(d, iov[i].iov_base, n);
    d += n;
    len -= n;
  }
}

#endif
