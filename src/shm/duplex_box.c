/* SPDX-License-Identifier: MIT */
#include "shm/duplex_box.h"

#include <errno.h>
#include <string.h>

void shm_box_attach(struct shm_box *b, struct shm_box_line *line, int creator) {
  b->line = line;
  b->seq = 0;
  b->turn = (uint8_t)(creator != 0);
  b->rest = 0;
}

void shm_box_push(struct shm_box *b, const struct proto_hdr *h, const struct iovec *iov, int iovcnt,
                  uint64_t ring_records) {
  struct shm_box_line *l = b->line;
  memcpy(&l->hdr, h, sizeof *h);
  record_gather(l->data, iov, iovcnt, h->len);
  b->seq++;
  __atomic_store_n(&l->stamp, (uint64_t)(uint32_t)ring_records << 32 | b->seq, __ATOMIC_RELEASE);
  b->turn = 0;
}

int shm_box_take(struct shm_box *b, struct shm_box_line *out) {
  memcpy(out, b->line, sizeof *out);
  b->seq++;
  b->turn = 1;
  if (out->hdr.len > RING_CELL_TINY || out->hdr.type >= PROTO_TYPE_MAX || out->hdr.type == PROTO_PAD ||
      out->hdr.type == PROTO_FRAG)
    return -EPROTO;
  return 0;
}
