/* SPDX-License-Identifier: MIT */
/*
 * A link: the shared memory between two endpoints, one memfd created by the connecting side and passed over the
 * handshake socket. Layout (offsets, never pointers):
 *
 *   [chan_hdr + both rings' headers + the duplex box][cells 0][cells 1][slots 0][slots 1][coop 0][coop 1]
 *
 * Direction 0 is creator -> acceptor, direction 1 the reverse; each
 * direction has a ring, the ring engine's slot headers (their data lies in
 * the sender's pool, region/pool.h) and the coop engine's transfer descriptor
 * (bulk/coop.c). Nothing is page-aligned but the start: a link costs
 * the pages its rings touch, and the coop pages only once used.
 */
#ifndef FMX_SHM_LINK_H
#define FMX_SHM_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "bulk/conn.h"
#include "transport/record.h"
#include "region/pool.h"
#include "shm/duplex_box.h"
#include "shm/eager_ring.h"

#define CHAN_MAGIC 0x464d5843u /* "FMXC" */
#define CHAN_VERSION 7 /* 2: coop areas, 3: their xmem region, 4: abort words, 5: slot data in the pool, ring headers in chan_hdr, 6: HINT records, 7: the duplex box */

struct chan_hdr {
  uint32_t magic;
  uint32_t version;
  uint64_t size;
  uint64_t ring_off[2];
  uint64_t ring_bytes;
  uint64_t slots_off[2];
  uint64_t nslots;
  uint64_t coop_off[2];
  /* Per direction, written once by its sender: nonzero (an fmx_return_t)
   * when it gave up on the connection (it ran out of memory for a record
   * it must keep): the receiver drains the ring, then fails the partner
   * with it. Its own line: read by every idle poll, written at most once. */
  _Alignas(64) uint32_t abort[2];
  /* Each direction's ring header (cells at ring_off). */
  struct shm_ring_shared ring[2];
  /* Tiny records of either direction, by turns (shm/duplex_box.h). The
   * other line of its 128-byte pair stays idle: a core that reads one
   * line of a pair may fetch the other too (adjacent-line prefetch), and
   * the rings' tails, written at every record, must not be that one. */
  _Alignas(128) struct shm_box_line box;
  uint8_t box_pair[RING_CELL];
};

struct shm_link {
  void *base;
  size_t size;
  /* Our records on tx that name a buffer of our pool, in push order: each
   * buffer goes back to the pool once the tail is past its record. */
  struct {
    uint64_t *pos;
    uint32_t *buf;
    uint32_t head, n, cap;
  } lent;
  struct shm_ring tx, rx;
  struct shm_box box;
  uint32_t *tx_abort, *rx_abort;       /* chan_hdr.abort of our direction and of the peer's */
  uint64_t rx_freed; /* cells consumed since we last woke the sender */
  /* What the bulk engines use of it (slots, coop areas, pipes, the pools
   * its records' payloads and the ring engine's chunks lie in: set when
   * the partner adopts it, shm/hello.c): the lane the shm transport hands
   * the core with each record. */
  struct bulk_conn bulk;
  int ours;                /* we created it (we connected) */
};

/* Create a link memfd with the current config; returns the link and
 * stores the fd in *fd (to pass to the peer). NULL on failure. */
struct shm_link *link_create(int *fd);
/* Map a link received from a peer (we are the acceptor): the memfd must
 * be sealed against shrinking and growing; every offset is validated
 * against its size. NULL on a malformed link, *why says what. */
struct shm_link *link_attach(int fd, const char **why);
void link_destroy(struct shm_link *c);
/* Create the two pipes of a connection, O_NONBLOCK, sized to FMX_CHUNK_MAX
 * (or as much as the kernel grants): our ends go to c, the peer's (read end
 * of direction 0, write end of direction 1) to peer_fds. 0 or -errno. */
/* Whether connections should carry the vmsplice engine's pipes. */
int link_pipes_wanted(void);
int link_pipes_create(struct shm_link *c, int peer_fds[2]);
/* Adopt the pipe ends a connector passed (we are the acceptor): checks they
 * are a read end and a write end of pipes. 0 (fds now the link's) or -errno
 * (fds left to the caller). */
int chan_pipes_attach(struct shm_link *c, int rx_fd, int tx_fd);

#endif
