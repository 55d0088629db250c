/* SPDX-License-Identifier: MIT */
/*
 * mx_stream - one-way streams between two processes of this host (a pair,
 * mx_test.h): the child sends, the parent receives with W receives posted
 * ahead and prints "size count MB/s" per size. Every byte is checked with
 * -V (inside the timed loop). Last it prints the net packets the parent
 * sent (0 through shared memory, MX_DISABLE_SHMEM=1 aside).
 *
 *   mx_stream [-S MAX] [-N COUNT] [-W WINDOW] [-V]
 *
 * Sizes: 0, 8, 100, 4000, 16K, 64K, 300K, 1M, 4M, ... up to MAX (4M);
 * COUNT messages each (200), at most 64 MiB a size.
 */
#include "mx_test.h"

#define M_DATA(len) (0x5000000000000000ull | (len))
#define M_ACK 0x6000000000000000ull
#define WMAX 64

static const uint32_t sizes[] = {0, 8, 100, 4000, 16384, 65536, 300000, 1 << 20, 4 << 20, 16 << 20};

static uint32_t count_for(uint32_t len, uint32_t count) {
  uint32_t most = len ? (uint32_t)((64u << 20) / len) : count;
  return count < most ? count : most ? most : 1;
}

static void sender(struct mxt *t, uint32_t len, uint32_t n, uint32_t w, int verify) {
  unsigned char *buf[WMAX];
  mx_request_t req[WMAX];
  for (uint32_t k = 0; k < w; k++) buf[k] = mxt_alloc(len);
  for (uint32_t i = 0; i < n + w; i++) {
    uint32_t k = i % w;
    if (i >= w) mxt_wait_ok(t->ep, &req[k], len, "send");
    if (i >= n) continue;
    if (verify) mxt_fill(buf[k], len, i);
    mx_segment_t seg = {buf[k], len};
    MXT_OK(mx_isend(t->ep, &seg, 1, t->peer, M_DATA(len), NULL, &req[k]));
  }
  mx_request_t ack;
  MXT_OK(mx_irecv(t->ep, NULL, 0, M_ACK, MX_MATCH_MASK_NONE, NULL, &ack));
  mxt_wait_ok(t->ep, &ack, 0, "ack");
  for (uint32_t k = 0; k < w; k++) free(buf[k]);
}

static void receiver(struct mxt *t, uint32_t len, uint32_t n, uint32_t w, int verify) {
  unsigned char *buf[WMAX];
  mx_request_t req[WMAX];
  double t0 = mxt_now();
  for (uint32_t k = 0; k < w; k++) buf[k] = mxt_alloc(len);
  for (uint32_t i = 0; i < n + w; i++) {
    uint32_t k = i % w;
    if (i >= w) {
      mx_status_t st = mxt_wait_ok(t->ep, &req[k], len, "receive");
      MXT_EXPECT(st.match_info == M_DATA(len), "match 0x%" PRIx64, st.match_info);
      if (verify) mxt_check(buf[k], len, i - w, "stream");
    }
    if (i >= n) continue;
    mx_segment_t seg = {buf[k], len};
    MXT_OK(mx_irecv(t->ep, &seg, 1, M_DATA(len), MX_MATCH_MASK_NONE, NULL, &req[k]));
  }
  double s = mxt_now() - t0;
  mx_request_t ack;
  MXT_OK(mx_isend(t->ep, NULL, 0, t->peer, M_ACK, NULL, &ack));
  mxt_wait_ok(t->ep, &ack, 0, "ack");
  printf("%10u %8u %10.1f\n", len, n, s > 0 ? (double)len * n / s / 1e6 : 0.0);
  fflush(stdout);
  for (uint32_t k = 0; k < w; k++) free(buf[k]);
}

int main(int argc, char **argv) {
  uint32_t max = 4 << 20, count = 200, w = 8;
  int verify = 0, c;
  mxt_prog = "mx_stream";
  while ((c = getopt(argc, argv, "S:N:W:V")) != -1) {
    switch (c) {
      case 'S': max = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'N': count = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'W': w = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'V': verify = 1; break;
      default: fprintf(stderr, "usage: mx_stream [-S max] [-N count] [-W window] [-V]\n"); return 2;
    }
  }
  if (w < 1 || w > WMAX || count < 1) {
    fprintf(stderr, "mx_stream: -W 1..%d, -N at least 1\n", WMAX);
    return 2;
  }
  struct mxt t;
  mxt_pair(&t, NULL, 0);
  if (!mxt_role) printf("%10s %8s %10s\n", "size", "count", "MB/s");
  uint32_t sent0 = mxt_counter(t.ep, "net: packets sent");
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes && sizes[i] <= max; i++) {
    uint32_t n = count_for(sizes[i], count);
    if (mxt_role)
      sender(&t, sizes[i], n, w, verify);
    else
      receiver(&t, sizes[i], n, w, verify);
  }
  /* 0 through shared memory; with MX_DISABLE_SHMEM=1 the net transport
   * carried the stream. */
  if (!mxt_role) printf("mx_stream: net packets sent %u\n", mxt_counter(t.ep, "net: packets sent") - sent0);
  return mxt_end(&t);
}
