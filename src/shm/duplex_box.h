/* SPDX-License-Identifier: MIT */
/*
 * A link's duplex box: one cache line both directions share, carrying one
 * tiny record (a header and up to RING_CELL_TINY bytes) at a time. It goes
 * by turns: the end that holds the turn may write one record into it, and
 * the turn passes to the peer when the peer takes that record (so the two
 * never write it at once, and neither needs to tell the other it read).
 * The link's creator holds the first turn.
 *
 * Why: a tiny message through a ring also publishes a tail, meets PADs
 * and limits, and decides hand-over and own-ahead. (One line for both
 * directions is not the gain in itself: two cores passing a counter, on
 * the Intel Xeon VM of 2026-11-27, took 150-157 ns each way through two
 * lines and 60-73 through one, but with 20-50 ns of work at each end
 * 160-166 and 156-177.) 8 B ping-pong 0.211 -> 0.193 us (docs/tuning.md).
 *
 * Order with the ring: the stamp, stored last, is the number of the box's
 * record (both directions count together, from 1) in its low 32 bits and,
 * in the high 32, how many ring records its sender had pushed before it.
 * The reader takes it when it has popped that many (shm_box_ready), and
 * looks at the box after peeking the ring (shm.c): a ring record pushed
 * after the box's is visible only with it.
 *
 * A peer may write anything there at any time: the reader copies the
 * line out before it looks at it (shm_box_take), and a record that cannot
 * be breaks the link as a ring's would.
 */
#ifndef FMX_SHM_DUPLEX_BOX_H
#define FMX_SHM_DUPLEX_BOX_H

#include <stdint.h>
#include <sys/uio.h>

#include "shm/eager_ring.h"

struct shm_box_line {
  uint64_t stamp;
  struct proto_hdr hdr;
  uint8_t data[RING_CELL_TINY];
};
_Static_assert(sizeof(struct shm_box_line) == RING_CELL, "the box is one cache line");

struct shm_box {
  struct shm_box_line *line;
  uint32_t seq; /* the number of the box's last record, ours or the peer's */
  uint8_t turn; /* ours: we may write, the peer writes nothing */
  uint16_t rest; /* records still to send through the ring after a crossing (shm_box_crossed) */
};

/* Records that go through the ring after two ends' records crossed. */
#define BOX_REST 1024

void shm_box_attach(struct shm_box *b, struct shm_box_line *line, int creator);

/* Whether h may go through the box now: our turn, and a tiny record (not
 * a medium message's fragment, which follow each other in the ring). */
static inline int shm_box_fits(const struct shm_box *b, const struct proto_hdr *h) {
  return b->turn && h->len <= RING_CELL_TINY && h->type != PROTO_FRAG;
}

/* Whether h goes through the box now: it fits, and the two ends have not
 * crossed lately (shm_box_crossed). Counts the records it is asked
 * about: call it once per record sent. */
static inline int shm_box_pick(struct shm_box *b, const struct proto_hdr *h) {
  if (!shm_box_fits(b, h)) return 0;
  if (b->rest) {
    b->rest--;
    return 0;
  }
  return 1;
}

/* The record just taken crossed one of ours: it was written while a
 * record we pushed was still unread (an exchange: both ends send at
 * once, and through the box every other record would wait for the line
 * to come back: 2 ranks' alltoall of 8 B 0.27 -> 0.31 us). The next
 * BOX_REST records we could send there go through the ring, and the turn
 * stays ours meanwhile. A ping-pong's records never cross. With 64, the
 * box still carried 3% of an exchange's records (its reader does not
 * always see its own record unread) and cost it 1-6%; with 1024, 0.1%. */
static inline void shm_box_crossed(struct shm_box *b) { b->rest = BOX_REST; }

/* Write h and its payload (gathered from iov) and publish it, after the
 * `ring_records` records pushed to the ring so far. Only when it fits. */
void shm_box_push(struct shm_box *b, const struct proto_hdr *h, const struct iovec *iov, int iovcnt,
                  uint64_t ring_records);

/* Reader: whether the peer's next record is in the box and its turn has
 * come (`ring_records` ring records popped). */
static inline int shm_box_ready(const struct shm_box *b, uint64_t ring_records) {
  if (b->turn) return 0;
  uint64_t want = (uint64_t)(uint32_t)ring_records << 32 | (uint32_t)(b->seq + 1);
  return __atomic_load_n(&b->line->stamp, __ATOMIC_ACQUIRE) == want;
}

/* Take the ready record: copied to *out, the turn ours. 0, or -EPROTO if
 * it cannot be (its length or type). */
int shm_box_take(struct shm_box *b, struct shm_box_line *out);

#endif
