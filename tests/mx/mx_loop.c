/* SPDX-License-Identifier: MIT */
/*
 * mx_loop - messages from an endpoint to itself (MX's self path): for each
 * size from 0 to MAX (4 MiB, doubling), a message sent before its receive
 * is posted (unexpected: mx_iprobe must see its length first) and one
 * received after (expected), by mx_isend and by mx_issend, gathered from
 * three segments into one and scattered from one into three; then 32
 * messages in flight at once before any receive. Every byte is checked.
 * It prints the endpoint's connections (0 on the self path: with
 * MX_DISABLE_SELF=1 the messages go through shared memory instead).
 *
 *   mx_loop [-S MAX]
 */
#include "mx_test.h"

#define M_LOOP 0x7000000000000000ull
#define BURST 32

/* len bytes as three segments of buf (thirds; the last takes the rest). */
static void thirds(mx_segment_t seg[3], unsigned char *buf, uint32_t len) {
  uint32_t a = len / 3, b = len / 3;
  seg[0] = (mx_segment_t){buf, a};
  seg[1] = (mx_segment_t){buf + a, b};
  seg[2] = (mx_segment_t){buf + a + b, len - a - b};
}

static void one(struct mxt *t, unsigned char *sbuf, unsigned char *rbuf, uint32_t len, int unexpected, int sync,
                uint32_t seed) {
  mx_segment_t s3[3], r3[3], s1 = {sbuf, len}, r1 = {rbuf, len};
  thirds(s3, sbuf, len);
  thirds(r3, rbuf, len);
  int gather = seed & 1; /* three segments on the send side, else on the receive side */
  uint64_t match = M_LOOP | (uint64_t)seed << 32 | len;
  mx_request_t s, r;
  mxt_fill(sbuf, len, seed);
  memset(rbuf, 0, len);
  if (!unexpected) MXT_OK(mx_irecv(t->ep, gather ? &r1 : r3, gather ? 1 : 3, match, MX_MATCH_MASK_NONE, NULL, &r));
  MXT_OK((sync ? mx_issend : mx_isend)(t->ep, gather ? s3 : &s1, gather ? 3 : 1, t->peer, match, NULL, &s));
  if (unexpected) {
    mx_status_t st;
    uint32_t found = 0;
    double end = mxt_now() + 30;
    while (!found && mxt_now() < end) MXT_OK(mx_iprobe(t->ep, match, MX_MATCH_MASK_NONE, &st, &found));
    MXT_EXPECT(found, "%u bytes to self: mx_iprobe never saw it", len);
    MXT_EXPECT(st.msg_length == len, "mx_iprobe: msg_length %u, sent %u", st.msg_length, len);
    MXT_OK(mx_irecv(t->ep, gather ? &r1 : r3, gather ? 1 : 3, match, MX_MATCH_MASK_NONE, NULL, &r));
  }
  mx_status_t st = mxt_wait_ok(t->ep, &r, len, "receive from self");
  MXT_EXPECT(st.match_info == match && st.msg_length == len, "status: match 0x%" PRIx64 " length %u", st.match_info,
             st.msg_length);
  mxt_wait_ok(t->ep, &s, len, "send to self");
  mxt_check(rbuf, len, seed, "loop");
}

int main(int argc, char **argv) {
  uint32_t max = 4 << 20;
  int c;
  mxt_prog = "mx_loop";
  while ((c = getopt(argc, argv, "S:")) != -1) {
    if (c != 'S') {
      fprintf(stderr, "usage: mx_loop [-S max]\n");
      return 2;
    }
    max = (uint32_t)strtoul(optarg, NULL, 0);
  }
  struct mxt t;
  mxt_self(&t, NULL, 0);
  unsigned char *sbuf = mxt_alloc(max), *rbuf = mxt_alloc(max);
  uint32_t seed = 0, sizes = 0;
  for (uint64_t len = 0; len <= max; len = len ? len * 2 : 1, sizes++)
    for (int unexpected = 0; unexpected < 2; unexpected++)
      for (int sync = 0; sync < 2; sync++) one(&t, sbuf, rbuf, (uint32_t)len, unexpected, sync, seed++);

  /* A burst: BURST messages to ourselves, none received yet. */
  uint32_t blen = max < 65536 ? max : 65536;
  unsigned char *bs = mxt_alloc((size_t)blen * BURST), *br = mxt_alloc((size_t)blen * BURST);
  mx_request_t s[BURST], r[BURST];
  for (uint32_t i = 0; i < BURST; i++) {
    uint32_t len = (blen >> (i % 8)) - i % 3;
    if (len > blen) len = 0;
    mxt_fill(bs + (size_t)i * blen, len, 1000 + i);
    mx_segment_t seg = {bs + (size_t)i * blen, len};
    MXT_OK(mx_isend(t.ep, &seg, 1, t.peer, M_LOOP | 0xffffull << 32, NULL, &s[i]));
  }
  for (uint32_t i = 0; i < BURST; i++) {
    mx_segment_t seg = {br + (size_t)i * blen, blen};
    MXT_OK(mx_irecv(t.ep, &seg, 1, M_LOOP | 0xffffull << 32, MX_MATCH_MASK_NONE, NULL, &r[i]));
  }
  for (uint32_t i = 0; i < BURST; i++) {
    uint32_t len = (blen >> (i % 8)) - i % 3;
    if (len > blen) len = 0;
    mxt_wait_ok(t.ep, &r[i], len, "burst receive"); /* in send order */
    mxt_wait_ok(t.ep, &s[i], len, "burst send");
    mxt_check(br + (size_t)i * blen, len, 1000 + i, "burst");
  }
  printf("mx_loop: %u sizes x 4 ways and a burst of %d to self\n", sizes, BURST);
  /* 0 on the self path; through shared memory (MX_DISABLE_SELF=1) the
   * endpoint connected to itself: made and accepted. */
  printf("mx_loop: connections %u\n", mxt_counter(t.ep, "connections accepted or made"));
  free(sbuf);
  free(rbuf);
  free(bs);
  free(br);
  return mxt_end(&t);
}
