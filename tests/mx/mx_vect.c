/* SPDX-License-Identifier: MIT */
/*
 * mx_vect - segment vectors between two processes of this host (a pair,
 * mx_test.h): messages gathered from 1, 2, 17, 255 and 256 segments of
 * uneven lengths (some empty) are scattered into a different number of
 * segments on the receiver, for totals from 0 B to 4 MiB (eager, medium,
 * rendezvous); the bytes must arrive in order. 257 segments are refused
 * on both sides with MX_BAD_SEG_CNT (MX_MAX_SEGMENTS is 256), and a NULL
 * list with a count with MX_BAD_SEG_LIST.
 */
#include "mx_test.h"

#define M_V 0x4000000000000000ull
static const uint32_t counts[] = {1, 2, 17, 255, 256};
static const uint32_t totals[] = {0, 100, 5000, 40000, 1 << 20, 4 << 20};
#define NC (sizeof counts / sizeof *counts)
#define NT (sizeof totals / sizeof *totals)

/* Split buf[0..total) into n segments: uneven, every fifth empty. */
static void split(mx_segment_t *seg, uint32_t n, unsigned char *buf, uint32_t total, uint32_t salt) {
  uint32_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t left = total - off, share = left / (n - i);
    uint32_t len = i == n - 1 ? left : (i + salt) % 5 == 0 ? 0 : share + (share / 3) * ((i + salt) % 3) / 2;
    if (len > left) len = left;
    seg[i] = (mx_segment_t){buf + off, len};
    off += len;
  }
}

int main(void) {
  mxt_prog = "mx_vect";
  struct mxt t;
  mxt_pair(&t, NULL, 0);
  unsigned char *buf = mxt_alloc(4 << 20);
  mx_segment_t seg[MX_MAX_SEGMENTS + 1];
  mx_request_t req;
  uint32_t seed = 0;
  for (uint32_t c = 0; c < NC; c++)
    for (uint32_t k = 0; k < NT; k++, seed++) {
      uint32_t total = totals[k], n = counts[c], rn = counts[(c + 2) % NC];
      uint64_t match = M_V | seed;
      if (mxt_role) {
        mxt_fill(buf, total, seed);
        split(seg, n, buf, total, seed);
        MXT_OK(mx_isend(t.ep, seg, n, t.peer, match, NULL, &req));
        mxt_wait_ok(t.ep, &req, total, "vector send");
      } else {
        memset(buf, 0, total);
        split(seg, rn, buf, total, seed + 1);
        MXT_OK(mx_irecv(t.ep, seg, rn, match, MX_MATCH_MASK_NONE, NULL, &req));
        mxt_wait_ok(t.ep, &req, total, "vector receive");
        mxt_check(buf, total, seed, "vector");
      }
    }
  split(seg, MX_MAX_SEGMENTS + 1, buf, 1000, 0);
  mx_return_t r = mxt_role ? mx_isend(t.ep, seg, MX_MAX_SEGMENTS + 1, t.peer, M_V, NULL, &req)
                           : mx_irecv(t.ep, seg, MX_MAX_SEGMENTS + 1, M_V, MX_MATCH_MASK_NONE, NULL, &req);
  MXT_EXPECT(r == MX_BAD_SEG_CNT, "%d segments: %s, expected MX_BAD_SEG_CNT", MX_MAX_SEGMENTS + 1, mx_strerror(r));
  r = mxt_role ? mx_isend(t.ep, NULL, 3, t.peer, M_V, NULL, &req) : mx_irecv(t.ep, NULL, 3, M_V, MX_MATCH_MASK_NONE, NULL, &req);
  MXT_EXPECT(r == MX_BAD_SEG_LIST, "a NULL list of 3 segments: %s, expected MX_BAD_SEG_LIST", mx_strerror(r));
  mxt_barrier(&t, 0x1);
  if (!mxt_role) printf("mx_vect: %zu vector sizes x %zu totals\n", NC, NT);
  free(buf);
  return mxt_end(&t);
}
