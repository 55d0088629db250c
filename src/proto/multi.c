/* SPDX-License-Identifier: MIT */
/* Multi-receive buffers (fmx_irecv_multi, libfabric's FI_MULTI_RECV): a
 * posted receive that matching leaves in place, each message it takes
 * becoming a receive of its own (the core's, proto_core.slice) over the
 * next 8-byte aligned slice. The buffer is released (it completes) once it
 * is closed (too little room left, cancelled, its source gone) and its
 * last slice has completed, so its completion comes after theirs. */
#include "proto/proto_int.h"

void proto_multi_init(struct proto_msg *b, uint64_t min_free) {
  b->flags |= MSG_F_MULTI;
  b->multi.used = 0;
  b->multi.min_free = min_free;
  b->multi.live = 0;
  b->multi.closed = 0;
  b->multi.code = FMX_SUCCESS;
}

static void release(struct fmx_endpoint *ep, struct proto_msg *b) {
  b->status.flags = FMX_MSG_MULTI_DONE;
  b->status.buffer = b->segs[0].ptr;
  b->status.msg_length = b->status.xfer_length = b->multi.used;
  proto_up->complete(ep, b, b->multi.code);
}

int proto_multi_close(struct fmx_endpoint *ep, struct proto_msg *b, fmx_return_t code) {
  if (!b->multi.closed && list_linked(&b->hnode)) proto_recv_unpost(ep, b);
  b->multi.closed = 1;
  if (b->multi.code == FMX_SUCCESS) b->multi.code = code;
  return b->multi.live == 0;
}

void proto_multi_end(struct fmx_endpoint *ep, struct proto_msg *b, fmx_return_t code) {
  if (proto_multi_close(ep, b, code)) release(ep, b);
}

void proto_multi_slice_done(struct fmx_endpoint *ep, struct proto_msg *b) {
  if (--b->multi.live == 0 && b->multi.closed) release(ep, b);
}

/* The next slice of b for a message of msg_len bytes (truncated to the
 * room left); b closes when what is left falls below its minimum. */
static struct proto_msg *slice(struct fmx_endpoint *ep, struct proto_msg *b, uint64_t msg_len) {
  uint64_t used = b->multi.used, room = b->len - used;
  fmx_seg_t seg = {(char *)b->segs[0].ptr + used, msg_len < room ? msg_len : room};
  struct proto_msg *c = proto_up->slice(ep, b, &seg);
  if (!c) return NULL;
  c->multi_of = b;
  c->status.buffer = seg.ptr;
  b->multi.live++;
  used = (used + seg.len + 7) & ~7ull; /* the next message starts aligned (len <= PTRDIFF_MAX: no wrap) */
  b->multi.used = used < b->len ? used : b->len;
  room = b->len - b->multi.used;
  if (room == 0 || room < b->multi.min_free) proto_multi_close(ep, b, FMX_SUCCESS);
  return c;
}

struct proto_msg *proto_take_posted(struct fmx_endpoint *ep, struct match_queues *mq, uint64_t match,
                                    struct partner *p, uint64_t msg_len) {
  struct proto_msg *r = match_take_posted(mq, match, p);
  if (!r || !(r->flags & MSG_F_MULTI)) return r;
  return slice(ep, r, msg_len);
}

void proto_multi_post(struct fmx_endpoint *ep, struct match_queues *mq, struct proto_msg *b, struct unexp_msg *u) {
  /* A slice that completes at once (an eager message) may release b: it
   * is live until then, counted as one of its own slices. */
  b->multi.live++;
  if (b->len == 0 || b->len < b->multi.min_free) b->multi.closed = 1; /* no room from the start */
  while (u && !b->multi.closed) {
    struct proto_msg *c = slice(ep, b, u->msg_len);
    if (!c) break; /* u stays queued; b is posted for what comes next */
    match_del_unexp(mq, u);
    proto_take_unexpected(ep, c, u);
    u = match_find_unexp(mq, b->match, b->mask, b->from, 0);
  }
  if (!b->multi.closed) match_post(mq, b);
  proto_multi_slice_done(ep, b);
}
