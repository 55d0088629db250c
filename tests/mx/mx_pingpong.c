/* SPDX-License-Identifier: MIT */
/*
 * mx_pingpong - an MX ping-pong, built against myriexpress.h alone.
 *
 *   mx_pingpong [-r LOCAL_EID]                       wait for a client, answer it
 *   mx_pingpong -d HOST:BOARD [-e EID] [-r LOCAL_EID] [-s MIN] [-S MAX] [-N ITERS] [-V]
 *
 * The client sends its endpoint id in a first message (match 0x1), then
 * for each size from MIN to MAX (doubling; 0 first when MIN is 0) ITERS
 * round trips, and prints "size iters half-round-trip-us MB/s". -V checks
 * every byte (inside the timed loop; the server then echoes what came,
 * else it answers from a buffer of its own). -F leaves MX's default error handler
 * (fatal) in place; otherwise errors are returned and reported here
 * (mx_test.h). The sizes travel in the match info, so the server answers
 * whatever comes; the hello carries the client's MAX, and the server's
 * buffers grow to it (its own -S is only where they start). HOST:BOARD is
 * a peer-table name, or "localhost".
 */
#include "mx_test.h"

#define KEY 0x12345
#define M_HELLO 0x1ull
#define M_DATA 0x2ull
#define M_DONE 0x3ull

/* Wait for a request, which must succeed (no bound: a server waits for
 * its client as long as it takes). */
static void wait_req(mx_endpoint_t ep, mx_request_t *req, mx_status_t *st, const char *what) {
  uint32_t result = 0;
  MXT_OK(mx_wait(ep, req, MX_INFINITE, st, &result));
  MXT_EXPECT(result, "%s: woken without completion", what);
  MXT_EXPECT(st->code == MX_STATUS_SUCCESS, "%s: %s", what, mx_strstatus(st->code));
}

static int finish(mx_endpoint_t ep, unsigned char *buf, unsigned char *rbuf) {
  MXT_OK(mx_close_endpoint(ep));
  MXT_OK(mx_finalize());
  free(buf);
  free(rbuf);
  return 0;
}

int main(int argc, char **argv) {
  mxt_prog = "mx_pingpong";
  const char *host = NULL;
  uint32_t rid = 0, lid = MX_ANY_ENDPOINT, min = 0, max = 1 << 20, iters = 1000;
  int verify = 0, fatal = 0, lid_set = 0, c;
  while ((c = getopt(argc, argv, "d:e:r:s:S:N:VFh")) != -1) {
    switch (c) {
      case 'd': host = optarg; break;
      case 'e': rid = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'r':
        lid = (uint32_t)strtoul(optarg, NULL, 0);
        lid_set = 1;
        break;
      case 's': min = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'S': max = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'N': iters = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'V': verify = 1; break;
      case 'F': fatal = 1; break; /* keep MX's default: errors are fatal */
      default:
        fprintf(stderr, "usage: mx_pingpong [-d host:board [-e eid]] [-r local_eid] [-s min] [-S max] [-N iters] [-V] [-F]\n");
        return c == 'h' ? 0 : 2;
    }
  }
  if (!host && !lid_set) lid = 0; /* a server is endpoint 0 unless told (-r 0xffffffff: any) */
  mx_endpoint_t ep;
  mx_endpoint_addr_t peer;
  mx_segment_t seg;
  mx_request_t sreq, rreq;
  mx_status_t st;
  if (!fatal) mx_set_error_handler(MX_ERRORS_RETURN);
  MXT_OK(mx_init());
  MXT_OK(mx_open_endpoint(MX_ANY_NIC, lid, KEY, NULL, 0, &ep));
  unsigned char *buf = malloc(max ? max : 1), *rbuf = malloc(max ? max : 1);
  if (!buf || !rbuf) return 1;
  /* The pages in before timing, as fmx_perf does. Not with zeros: gcc
   * turns malloc + memset(0) into calloc, which leaves fresh pages
   * untouched, and a send buffer nobody writes is the kernel's one zero
   * page, always in cache: 4 MiB by cma then ran 1.9x as fast as from real
   * pages (187 against 350 us here, 2026-11-27). */
  memset(buf, 0xa5, max ? max : 1);
  memset(rbuf, 0x5a, max ? max : 1);

  if (!host) { /* server: learn the client from its hello, then answer until done */
    uint64_t nic, hello[4];
    uint32_t eid;
    mx_get_endpoint_addr(ep, &peer);
    mx_decompose_endpoint_addr(peer, &nic, &eid);
    printf("ready endpoint %u nic %012" PRIx64 "\n", eid, nic);
    fflush(stdout);
    seg.segment_ptr = hello;
    seg.segment_length = sizeof hello;
    MXT_OK(mx_irecv(ep, &seg, 1, M_HELLO, MX_MATCH_MASK_NONE, NULL, &rreq));
    wait_req(ep, &rreq, &st, "hello");
    MXT_OK(mx_connect(ep, hello[0], (uint32_t)hello[1], KEY, 10000, &peer));
    if (hello[3] > max) { /* this client's largest message: buffers to fit */
      MXT_EXPECT(hello[3] <= UINT32_MAX, "hello: size %" PRIu64 " past MX's 32 bits", hello[3]);
      max = (uint32_t)hello[3];
      free(buf);
      free(rbuf);
      buf = malloc(max);
      rbuf = malloc(max);
      MXT_EXPECT(buf && rbuf, "cannot allocate 2 x %u bytes", max);
      memset(buf, 0xa5, max);
      memset(rbuf, 0x5a, max);
    }
    /* A verifying client gets its bytes back (echo); otherwise the answer
     * comes from the other buffer, which nothing writes, as fmx_perf's
     * answering rank sends from its own: an echo would send bytes the
     * receive just left in this core's cache. */
    unsigned char *answer = hello[2] ? rbuf : buf;
    /* The next receive is posted before the send is waited for, so the
     * next ping finds it (as fmx_perf's answering rank does); that ping
     * comes only once this pong was received whole, so rbuf is read no more. */
    mx_segment_t rseg = {rbuf, max};
    MXT_OK(mx_irecv(ep, &rseg, 1, 0, 0, NULL, &rreq));
    for (;;) {
      wait_req(ep, &rreq, &st, "receive");
      if (st.match_info == M_DONE) break;
      seg.segment_ptr = answer;
      seg.segment_length = st.xfer_length;
      MXT_OK(mx_isend(ep, &seg, 1, peer, st.match_info, NULL, &sreq));
      MXT_OK(mx_irecv(ep, &rseg, 1, 0, 0, NULL, &rreq));
      wait_req(ep, &sreq, &st, "send");
    }
    return finish(ep, buf, rbuf);
  }

  uint64_t nic, mynic;
  uint32_t myeid;
  MXT_OK(mx_hostname_to_nic_id((char *)host, &nic));
  MXT_OK(mx_connect(ep, nic, rid, KEY, 10000, &peer));
  mx_endpoint_addr_t me;
  mx_get_endpoint_addr(ep, &me);
  mx_decompose_endpoint_addr(me, &mynic, &myeid);
  uint64_t hello[4] = {mynic, myeid, (uint64_t)verify, max};
  seg.segment_ptr = hello;
  seg.segment_length = sizeof hello;
  MXT_OK(mx_isend(ep, &seg, 1, peer, M_HELLO, NULL, &sreq));
  wait_req(ep, &sreq, &st, "hello");
  printf("%10s %8s %12s %12s\n", "size", "iters", "latency(us)", "MB/s");
  for (uint64_t len = min; len <= max; len = len ? len * 2 : 1) {
    uint32_t n = iters, warm = iters / 10 + 1;
    double t0 = 0;
    for (uint32_t i = 0; i < n + warm; i++) {
      if (i == warm) t0 = mxt_now();
      if (verify) mxt_fill(buf, len, i);
      /* Send first, as fmx_perf does: the pong cannot come before the ping
       * left, and the receive is posted before we wait. */
      seg.segment_ptr = buf;
      seg.segment_length = (uint32_t)len;
      MXT_OK(mx_isend(ep, &seg, 1, peer, M_DATA << 32 | len, NULL, &sreq));
      seg.segment_ptr = rbuf;
      MXT_OK(mx_irecv(ep, &seg, 1, M_DATA << 32 | len, MX_MATCH_MASK_NONE, NULL, &rreq));
      wait_req(ep, &sreq, &st, "send");
      wait_req(ep, &rreq, &st, "receive");
      MXT_EXPECT(st.xfer_length == len, "got %u bytes, sent %u", st.xfer_length, (uint32_t)len);
      if (verify) mxt_check(rbuf, len, i, "ping-pong");
    }
    double half = (mxt_now() - t0) * 1e6 / n / 2;
    printf("%10u %8u %12.3f %12.2f\n", (uint32_t)len, n, half, half > 0 ? len / half : 0.0);
    fflush(stdout);
    if (len >= max) break;
  }
  seg.segment_length = 0;
  MXT_OK(mx_isend(ep, &seg, 1, peer, M_DONE, NULL, &sreq));
  wait_req(ep, &sreq, &st, "done");
  return finish(ep, buf, rbuf);
}
