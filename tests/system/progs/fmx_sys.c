/* SPDX-License-Identifier: MIT */
/*
 * Driver for the multi-process system tests (tests/system/test_shm.py).
 * One process = one rank with endpoint id BASE + rank; ranks find each other
 * by endpoint id, so no side channel is needed.
 *
 *   fmx_sys exchange --rank R --nprocs N --base B [--msgs M] [--max-size S]
 *                    [--seed X] [--late-recv MS] [--segs]
 *   fmx_sys bigsend  --rank 0|1 --base B --size S     (prints READY, then waits)
 *   fmx_sys lazysend --rank 0|1 --base B --size S     rank 0 sends, then stays out
 *                    of fmx for --late-recv MS; rank 1 receives, verifies and
 *                    prints the engine and the bytes it copied itself
 *   fmx_sys unmatched --rank 0|1 --base B --size S   rank 0 sends S bytes that
 *                    rank 1 sees (probe) but never receives; rank 1 prints READY
 *                    and stays out of fmx until killed; rank 0 prints its
 *                    send's result as JSON (exit 3 when it failed)
 *   fmx_sys issend   --rank 0|1 --base B
 *   fmx_sys token    --rank R --nprocs N --base B [--rounds K]
 *   fmx_sys connect  --base B --target EID --key K    (prints the result name; the
 *                    board FMX_SYS_NIC names, else this host's)
 *   fmx_sys dial     --target EID --key K --msgs M --dial-ms T [--race 1]   fmx_connect_async
 *                    (--race: while a thread connects, waiting), M sends of 64 B at once,
 *                    fmx_connect again; prints each result as JSON. --leave 1: close the
 *                    endpoint and exit once the sends are posted, waiting for none
 *   fmx_sys iconnect --target EID --key K --dial-ms T [--cancel 1]   fmx_iconnect with T the
 *                    endpoint's request timeout: whether the request was pending right
 *                    after the call, its result (or, --cancel 1: fmx_cancel's, then a
 *                    blocking fmx_connect's), and a message sent to the address; JSON
 *   fmx_sys open     --target EID                     (opens endpoint EID; prints the result name)
 *   fmx_sys serve    --base B        endpoint B receives whatever comes until stdin closes
 *                                    (prints READY once open); --late-recv MS: out of
 *                                    fmx that long first; --until N: stop at N messages
 *   fmx_sys churn    --target EID --rounds N   N times: open an endpoint, connect to EID,
 *                                    send 64 bytes, close (a short-lived client)
 *   exchange --tolerate 1: under FMX_FAULT_ALLOC, completions may fail for
 *                    lack of memory (here or at the peer); sends and matched
 *                    receives must still complete; prints errors seen
 *   common: --eat-fds K (once the endpoint is open, take file descriptors
 *           until K are left), --nodump 1 (prctl: not dumpable, so peers of
 *           our uid lack ptrace rights on us)
 *
 * FMX_SYS_NICS="B0,B1,...": the board of each rank (a MAC or a peer-table
 * name), for ranks in other network namespaces (tests/system/test_net.py).
 *
 * Exit 0 on success; 1 with a message on stderr on any failure. Every wait
 * has a finite timeout: a bug gives a failure, never a hang.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmx.h"
#include "prog.h"

#define KEY 0x5eed
#define WAIT_MS 60000

static int rank = 0, nprocs = 2, base = 100, msgs = 8, late_ms = 0, use_segs = 0, rounds = 100, short_recv = 0;
/* --one-way 1: exchange sends only to higher ranks (no exchange then: a
 * rank's receives and sends go to different peers) */
static int one_way = 0;
static uint64_t max_size = 1 << 20, seed = 1, big = 64 << 20;
static uint32_t target = 0, key = KEY;
static int eat_fds = -1, nodump = 0, dial_ms = 5000, race = 0, leave = 0, cancel = 0;
static uint64_t until = 0;
/* --tolerate 1 (with FMX_FAULT_ALLOC): a completion may be an error that a
 * lack of memory explains; every send must still complete, and so must
 * every receive that was matched. */
static int tolerate = 0, errors = 0, unmatched = 0;
static fmx_endpoint_t ep;

static void prog_who(FILE *f) { fprintf(f, "rank %d: ", rank); }

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static uint8_t pattern(int src, int dst, int idx, uint64_t off) {
  return (uint8_t)(off * 7 + (uint64_t)src * 31 + (uint64_t)dst * 17 + (uint64_t)idx * 13 + 1);
}

/* The big buffers: fmx_mem_alloc memory (mapped by the peer) when
 * FMX_SYS_MEM=fmx, else malloc. Never freed: the process exits. */
static uint8_t *big_buf(uint64_t len) {
  const char *m = getenv("FMX_SYS_MEM");
  void *p = NULL;
  if (m && !strcmp(m, "fmx")) {
    if (fmx_mem_alloc(len, &p) != FMX_SUCCESS) p = NULL;
  } else {
    p = malloc(len);
  }
  if (!p) FAIL("cannot allocate %" PRIu64 " bytes", len);
  return p;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The board of a NIC name (a MAC, a peer-table name); this host's own
 * board is FMX_ANY_NIC. */
static uint64_t board(const char *name) {
  uint64_t nic, mine = 0;
  if (fmx_hostname_to_nic_id(name, &nic) != FMX_SUCCESS) FAIL("no board '%s'", name);
  fmx_get_info(ep, FMX_INFO_NIC_ID, NULL, 0, &mine, sizeof mine);
  return nic == mine ? FMX_ANY_NIC : nic;
}

/* FMX_SYS_NICS="B0,B1,...": rank i's board, for ranks on other hosts
 * (network namespaces); unset: every rank on this host. */
static uint64_t nic_of(uint32_t eid) {
  const char *l = getenv("FMX_SYS_NICS");
  if (!l || !*l) return FMX_ANY_NIC;
  char buf[1024], *save = NULL;
  snprintf(buf, sizeof buf, "%s", l);
  int i = 0;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), i++)
    if (i == (int)eid - base) return board(t);
  FAIL("FMX_SYS_NICS names no board for rank %d", (int)eid - base);
}

static fmx_endpoint_addr_t connect_to(uint32_t eid) {
  fmx_endpoint_addr_t a;
  uint64_t nic = nic_of(eid);
  for (int tries = 0; tries < 3000; tries++) { /* peers start at different times */
    fmx_return_t rc = fmx_connect(ep, nic, eid, KEY, nic == FMX_ANY_NIC ? 5000 : 200, &a);
    if (rc == FMX_SUCCESS) return a;
    /* Another host's endpoint not open yet answers nothing. */
    if (rc != FMX_REMOTE_ENDPOINT_BAD_ID && (rc != FMX_TIMEOUT || nic == FMX_ANY_NIC))
      FAIL("connect to %u: %s", eid, fmx_strerror(rc));
    sleep_ms(10);
  }
  FAIL("endpoint %u never appeared", eid);
}

static void wait_req(fmx_request_t *r, fmx_status_t *st, const char *what) {
  uint32_t done = 0;
  OK(fmx_wait(ep, r, WAIT_MS, st, &done));
  if (!done) FAIL("%s: not complete after %d ms", what, WAIT_MS);
}

/* A connection was given up for lack of memory, here or by the peer. */
static int dropped(void) {
  return prog_counter(ep, "connections given up for lack of memory for a record that had to be kept") +
             prog_counter(ep, "connections a peer gave up (it lacked memory)") > 0;
}

/* --tolerate: the errors a failed allocation may explain, here or at the
 * peer (a connection given up for lack of memory). Across hosts a peer
 * that gave up on us no longer knows our session: what we send it later
 * is refused (bad session), or finds it closed once it left. */
static int tolerated(fmx_return_t c) {
  if (!tolerate) return 0;
  if (c == FMX_NO_SYSTEM_RESOURCES || c == FMX_NO_RESOURCES || c == FMX_REMOTE_ENDPOINT_UNREACHABLE) return 1;
  return (c == FMX_REMOTE_ENDPOINT_BAD_SESSION || c == FMX_REMOTE_ENDPOINT_CLOSED) && dropped();
}

/* A receive, under --tolerate: once an error was seen its sender may be
 * gone, so an unmatched receive is cancelled after a while; a matched one
 * must complete. 1 when it completed (st set), 0 when it was cancelled. */
static int wait_recv(fmx_request_t *r, fmx_status_t *st) {
  if (!tolerate) {
    wait_req(r, st, "receive");
    return 1;
  }
  uint32_t done = 0, cancelled = 0;
  for (int t = 0; t < WAIT_MS / 500 && !done; t++) {
    OK(fmx_wait(ep, r, 500, st, &done));
    if (!done && (errors || dropped())) break;
  }
  if (done) return 1;
  if (!errors && !dropped()) FAIL("receive: not complete after %d ms, and no connection dropped", WAIT_MS);
  OK(fmx_cancel(ep, r, &cancelled));
  if (cancelled) {
    unmatched++;
    return 0;
  }
  wait_req(r, st, "matched receive");
  return 1;
}

/* Size: mostly small, sometimes large, up to max_size. */
static uint64_t pick_size(uint64_t *s) {
  uint64_t r = rng(s) % 100;
  uint64_t cap = r < 60 ? 4096 : r < 85 ? 256 * 1024 : max_size;
  if (cap > max_size) cap = max_size;
  return rng(s) % (cap + 1);
}

/* Cut [buf, buf+len) into up to 256 random segments (some empty). */
static uint32_t cut(uint8_t *buf, uint64_t len, fmx_seg_t *segs, uint64_t *s) {
  if (!use_segs || len == 0) {
    segs[0] = (fmx_seg_t){buf, len};
    return 1;
  }
  uint32_t n = 1 + (uint32_t)(rng(s) % FMX_MAX_SEGMENTS);
  uint64_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t l = (i == n - 1) ? len - off : rng(s) % (2 * len / n + 1);
    if (l > len - off) l = len - off;
    segs[i] = (fmx_seg_t){buf + off, l};
    off += l;
  }
  return n;
}

struct msg {
  uint8_t *buf;
  uint64_t len;
  uint64_t room; /* receive: the buffer's length (--trunc: some shorter than len) */
  fmx_request_t req;
  int peer, idx;
};

static void exchange(void) {
  fmx_endpoint_addr_t *peers = calloc((size_t)nprocs, sizeof *peers);
  for (int p = 0; p < nprocs; p++)
    if (p != rank) peers[p] = connect_to((uint32_t)(base + p));
  /* Every rank derives every message size from (seed, sender, receiver). */
  int nm = msgs * (nprocs - 1);
  struct msg *out = calloc((size_t)nm, sizeof *out), *in = calloc((size_t)nm, sizeof *in);
  int no = 0, ni = 0;
  if (late_ms) sleep_ms(late_ms); /* let senders run ahead: unexpected messages */
  for (int p = 0; p < nprocs; p++) {
    if (p == rank || (one_way && p > rank)) continue;
    uint64_t s = seed * 1000003 + (uint64_t)p * 1009 + (uint64_t)rank; /* sizes p -> rank */
    uint64_t cs = s ^ 0xabcdef12345ull;                                 /* our cuts */
    for (int i = 0; i < msgs; i++) {
      struct msg *m = &in[ni++];
      m->peer = p;
      m->idx = i;
      m->len = pick_size(&s);
      /* Some receives longer than the message; with --trunc every fourth
       * one half as long (truncated, whatever the engine). */
      m->room = short_recv && i % 4 == 1 ? m->len / 2 : m->len + (i % 3 == 0 ? 64 : 0);
      m->buf = malloc(m->room + 64);
      memset(m->buf, 0xee, m->room + 64);
      fmx_seg_t segs[FMX_MAX_SEGMENTS];
      uint32_t n = cut(m->buf, m->room, segs, &cs);
      uint64_t tag = ((uint64_t)p << 32) | (uint64_t)i;
      OK(fmx_irecv(ep, segs, n, tag, FMX_MATCH_MASK_NONE, m, &m->req));
    }
  }
  for (int p = 0; p < nprocs; p++) {
    if (p == rank || (one_way && p < rank)) continue;
    uint64_t s = seed * 1000003 + (uint64_t)rank * 1009 + (uint64_t)p; /* sizes rank -> p */
    uint64_t cs = s ^ 0x5a5a5a5a5a5aull;                                /* our cuts */
    for (int i = 0; i < msgs; i++) {
      struct msg *m = &out[no++];
      m->peer = p;
      m->idx = i;
      m->len = pick_size(&s);
      m->buf = malloc(m->len + 1);
      for (uint64_t k = 0; k < m->len; k++) m->buf[k] = pattern(rank, p, i, k);
      fmx_seg_t segs[FMX_MAX_SEGMENTS];
      uint64_t tag = ((uint64_t)rank << 32) | (uint64_t)i;
      uint32_t n = cut(m->buf, m->len, segs, &cs);
      OK((i % 5 == 4 ? fmx_issend : fmx_isend)(ep, segs, n, peers[p], tag, m, &m->req));
    }
  }
  uint64_t bytes = 0;
  for (int k = 0; k < ni; k++) {
    struct msg *m = &in[k];
    fmx_status_t st;
    int got = wait_recv(&m->req, &st);
    if (!got || tolerated(st.code)) {
      errors += got;
      free(m->buf);
      continue;
    }
    uint64_t xfer = m->len < m->room ? m->len : m->room;
    fmx_return_t want = xfer < m->len ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS;
    if (st.code != want) FAIL("receive %d from %d: %s", m->idx, m->peer, fmx_strerror(st.code));
    if (st.msg_length != m->len || st.xfer_length != xfer)
      FAIL("receive %d from %d: length %" PRIu64 "/%" PRIu64 ", expected %" PRIu64 "/%" PRIu64, m->idx, m->peer,
           st.msg_length, st.xfer_length, m->len, xfer);
    if (st.match_info != (((uint64_t)m->peer << 32) | (uint64_t)m->idx)) FAIL("bad match info");
    if (st.context != m) FAIL("bad context");
    uint64_t nic;
    uint32_t eid;
    fmx_decompose_endpoint_addr(st.source, &nic, &eid);
    if (eid != (uint32_t)(base + m->peer)) FAIL("source endpoint %u, expected %d", eid, base + m->peer);
    for (uint64_t o = 0; o < xfer; o++)
      if (m->buf[o] != pattern(m->peer, rank, m->idx, o))
        FAIL("message %d from %d (len %" PRIu64 "): byte %" PRIu64 " is 0x%02x", m->idx, m->peer, m->len, o,
             m->buf[o]);
    for (uint64_t o = xfer; o < m->room + 64; o++)
      if (m->buf[o] != 0xee) FAIL("message %d from %d: written past the message", m->idx, m->peer);
    bytes += xfer;
    free(m->buf);
  }
  for (int k = 0; k < no; k++) {
    fmx_status_t st;
    wait_req(&out[k].req, &st, "send");
    if (tolerated(st.code)) errors++;
    else if (st.code != FMX_SUCCESS) FAIL("send: %s", fmx_strerror(st.code));
    free(out[k].buf);
  }
  char engine[32];
  OK(fmx_get_info(ep, FMX_INFO_LAST_BULK_ENGINE, NULL, 0, engine, sizeof engine));
  printf("{\"rank\":%d,\"received\":%d,\"bytes\":%" PRIu64 ",\"engine\":\"%s\",\"offloaded\":%" PRIu64
         ",\"offload_bytes\":%" PRIu64 ",\"adapt_tries\":%" PRIu64 ",\"by\":{\"cma\":%" PRIu64 ",\"ring\":%" PRIu64
         ",\"coop\":%" PRIu64 ",\"vmsplice\":%" PRIu64 "},\"medium_sent\":%" PRIu64 ",\"medium_received\":%" PRIu64
         "}\n",
         rank, ni, bytes, engine, prog_counter(ep, "large transfers (receives, ring sends) handed to an offload channel"),
         prog_counter(ep, "bytes offload channels copied"),
         prog_counter(ep, "large receives moved by an engine FMX_ADAPT tried beside the one in use"),
         prog_counter(ep, "large messages moved by cma"), prog_counter(ep, "large messages moved by ring"),
         prog_counter(ep, "large messages moved by coop"), prog_counter(ep, "large messages moved by vmsplice"),
         prog_counter(ep, "eager sends in fragments (medium class, longer than FMX_EAGER_FRAG)"),
         prog_counter(ep, "eager messages received in fragments"));
  /* Stay until every peer is done with us: a zero-byte issend each way,
   * every receive posted before any send so nobody waits in a cycle. */
  fmx_request_t *sync = calloc(2 * (size_t)nprocs, sizeof *sync);
  int ns = 0;
  for (int p = 0; p < nprocs; p++)
    if (p != rank) OK(fmx_irecv(ep, NULL, 0, 0xffffffffffull, FMX_MATCH_MASK_NONE, NULL, &sync[ns++]));
  for (int p = 0; p < nprocs; p++)
    if (p != rank) OK(fmx_issend(ep, NULL, 0, peers[p], 0xffffffffffull, NULL, &sync[ns++]));
  for (int k = 0; k < ns; k++) {
    fmx_status_t st;
    if (k < ns / 2 ? wait_recv(&sync[k], &st) : (wait_req(&sync[k], &st, "final sync"), 1)) {
      if (tolerated(st.code)) errors++;
      else if (st.code != FMX_SUCCESS) FAIL("final sync: %s", fmx_strerror(st.code));
    }
  }
  if (tolerate) printf("{\"rank\":%d,\"errors\":%d,\"unmatched\":%d}\n", rank, errors, unmatched);
  free(sync);
  free(in);
  free(out);
  free(peers);
}

/* Rank 0 sends `big` bytes to rank 1; both print READY once the transfer is
 * under way, then wait: the test kills one of them and the survivor must
 * get an error completion. */
static void bigsend(void) {
  fmx_endpoint_addr_t peer = connect_to((uint32_t)(base + 1 - rank));
  uint8_t *buf = big_buf(big);
  memset(buf, rank + 1, big);
  fmx_seg_t seg = {buf, big};
  fmx_request_t r;
  if (rank == 0)
    OK(fmx_isend(ep, &seg, 1, peer, 42, NULL, &r));
  else
    OK(fmx_irecv(ep, &seg, 1, 42, FMX_MATCH_MASK_NONE, NULL, &r));
  uint32_t done = 0;
  fmx_status_t st;
  for (int i = 0; i < 2000 && !done; i++) OK(fmx_test(ep, &r, &st, &done)); /* get it going */
  printf("READY\n");
  fflush(stdout);
  if (!done) OK(fmx_wait(ep, &r, WAIT_MS, &st, &done));
  if (!done) FAIL("still pending after %d ms", WAIT_MS);
  /* t_ns: when the completion was seen (CLOCK_MONOTONIC, as Python's
   * time.monotonic_ns), for the death-detection latency in notes. */
  printf("{\"rank\":%d,\"code\":\"%s\",\"t_ns\":%" PRIu64 "}\n", rank, fmx_strerror(st.code), now_ns());
  exit(st.code == FMX_SUCCESS ? 0 : 3);
}


/* A send its receiver has seen but not matched, when the receiver dies:
 * the sender must learn it (the partner gone), not wait forever. */
static void unmatched_send(void) {
  fmx_endpoint_addr_t peer = connect_to((uint32_t)(base + 1 - rank));
  uint8_t *buf = big_buf(big);
  memset(buf, 7, big);
  fmx_seg_t seg = {buf, big};
  fmx_status_t st;
  if (rank == 1) {
    uint32_t seen = 0;
    OK(fmx_probe(ep, WAIT_MS, 42, FMX_MATCH_MASK_NONE, &st, &seen));
    if (!seen) FAIL("no message in %d ms", WAIT_MS);
    printf("READY\n");
    fflush(stdout);
    sleep_ms(WAIT_MS); /* out of fmx: it is killed meanwhile */
    exit(0);
  }
  fmx_request_t r;
  OK(fmx_isend(ep, &seg, 1, peer, 42, NULL, &r));
  wait_req(&r, &st, "send");
  printf("{\"rank\":0,\"code\":\"%s\",\"t_ns\":%" PRIu64 "}\n", fmx_strerror(st.code), now_ns());
  exit(st.code == FMX_SUCCESS ? 0 : 3);
}

/* The sender posts a large send and then stays out of the library (it
 * computes, or it is descheduled): the receiver must complete alone. */
static void lazysend(void) {
  fmx_endpoint_addr_t peer = connect_to((uint32_t)(base + 1 - rank));
  uint8_t *buf = big_buf(big);
  fmx_seg_t seg = {buf, big};
  fmx_request_t r;
  fmx_status_t st;
  if (rank == 0) {
    for (uint64_t o = 0; o < big; o++) buf[o] = pattern(0, 1, 7, o);
    OK(fmx_isend(ep, &seg, 1, peer, 42, NULL, &r));
    printf("READY\n");
    fflush(stdout);
    sleep_ms(late_ms);
    wait_req(&r, &st, "send");
    if (st.code != FMX_SUCCESS) FAIL("send: %s", fmx_strerror(st.code));
    return;
  }
  memset(buf, 0, big);
  OK(fmx_irecv(ep, &seg, 1, 42, FMX_MATCH_MASK_NONE, NULL, &r));
  wait_req(&r, &st, "receive");
  if (st.code != FMX_SUCCESS || st.xfer_length != big) FAIL("receive: %s", fmx_strerror(st.code));
  for (uint64_t o = 0; o < big; o++)
    if (buf[o] != pattern(0, 1, 7, o)) FAIL("byte %" PRIu64 " is 0x%02x", o, buf[o]);
  char eng[32] = "";
  OK(fmx_get_info(ep, FMX_INFO_LAST_BULK_ENGINE, NULL, 0, eng, sizeof eng));
  printf("{\"engine\":\"%s\",\"coop_bytes\":%" PRIu64 ",\"offload_bytes\":%" PRIu64 "}\n", eng,
         prog_counter(ep, "bytes this side copied for coop transfers"), prog_counter(ep, "bytes offload channels copied"));
  fflush(stdout);
}

/* issend completes only once matched: rank 1 tells rank 0 "about to post"
 * (tag 2) before posting the receive for the issend (tag 1), so rank 0 must
 * never see its issend complete before that notice. */
static void issend_test(void) {
  fmx_endpoint_addr_t peer = connect_to((uint32_t)(base + 1 - rank));
  char b = 'x', n = 0;
  fmx_seg_t s = {&b, 1}, ns = {&n, 1};
  fmx_request_t r, nr;
  fmx_status_t st;
  uint32_t done = 0, ndone = 0;
  if (rank == 0) {
    OK(fmx_irecv(ep, &ns, 1, 2, FMX_MATCH_MASK_NONE, NULL, &nr));
    OK(fmx_issend(ep, &s, 1, peer, 1, NULL, &r));
    while (!ndone && !done) {
      OK(fmx_test(ep, &r, &st, &done));
      /* One progress call may take in both the notice and the issend's
       * acknowledgement; the notice is ahead of it in the ring, so once the
       * issend is done the notice must have arrived too. */
      fmx_status_t nst;
      OK(fmx_test(ep, &nr, &nst, &ndone));
      if (done && !ndone) FAIL("issend completed before the receiver posted its receive");
    }
    if (!done) wait_req(&r, &st, "issend");
    if (st.code != FMX_SUCCESS) FAIL("issend: %s", fmx_strerror(st.code));
    /* a plain isend of one byte is buffered: it completes with no receiver */
    OK(fmx_isend(ep, &s, 1, peer, 3, NULL, &r));
    wait_req(&r, &st, "isend");
    printf("{\"issend\":\"ok\"}\n");
  } else {
    sleep_ms(300);
    OK(fmx_isend(ep, &ns, 1, peer, 2, NULL, &nr));
    wait_req(&nr, &st, "notice");
    OK(fmx_irecv(ep, &s, 1, 1, FMX_MATCH_MASK_NONE, NULL, &r));
    wait_req(&r, &st, "receive");
    OK(fmx_irecv(ep, &s, 1, 3, FMX_MATCH_MASK_NONE, NULL, &r));
    wait_req(&r, &st, "receive 2");
  }
}

/* A token goes around nprocs ranks `rounds` times, every wait blocking. */
static void token(void) {
  fmx_endpoint_addr_t next = connect_to((uint32_t)(base + (rank + 1) % nprocs));
  uint64_t tok = 0;
  fmx_seg_t s = {&tok, sizeof tok};
  fmx_request_t r;
  fmx_status_t st;
  for (int k = 0; k < rounds; k++) {
    if (rank == 0) {
      tok = (uint64_t)k * 1000;
      OK(fmx_isend(ep, &s, 1, next, 7, NULL, &r));
      wait_req(&r, &st, "token send");
      OK(fmx_irecv(ep, &s, 1, 7, FMX_MATCH_MASK_NONE, NULL, &r));
      wait_req(&r, &st, "token receive");
      if (tok != (uint64_t)k * 1000 + (uint64_t)nprocs - 1) FAIL("token %" PRIu64 " in round %d", tok, k);
    } else {
      OK(fmx_irecv(ep, &s, 1, 7, FMX_MATCH_MASK_NONE, NULL, &r));
      wait_req(&r, &st, "token receive");
      tok++;
      OK(fmx_isend(ep, &s, 1, next, 7, NULL, &r));
      wait_req(&r, &st, "token send");
    }
  }
  if (rank == 0) printf("{\"rounds\":%d,\"token\":%" PRIu64 "}\n", rounds, tok);
  sleep_ms(200); /* let the last receiver drain before we close */
}

/* Take descriptors until `left` are free (the fd table is full but for them). */
static void take_fds(int left) {
  int fds[65536], n = 0;
  while (n < 65536) {
    int fd = dup(2);
    if (fd < 0) break;
    fds[n++] = fd;
  }
  if (errno != EMFILE) FAIL("dup: %s", strerror(errno));
  for (int i = 0; i < left && n > 0; i++) close(fds[--n]);
}

static void serve(void) {
  printf("READY\n");
  fflush(stdout);
  static uint8_t buf[1 << 16];
  uint64_t got = 0;
  if (late_ms) sleep_ms(late_ms); /* nothing answers meanwhile: not even a connect */
  while (!until || got < until) {
    struct pollfd in = {0, POLLIN, 0};
    if (poll(&in, 1, 0) > 0) break; /* stdin readable: closed (or a line): stop */
    fmx_status_t st;
    got += prog_take_one(ep, buf, sizeof buf, &st);
  }
  printf("{\"received\":%" PRIu64 "}\n", got); /* messages */
}

static void churn(void) {
  uint8_t msg[64] = {1};
  for (int i = 0; i < rounds; i++) {
    fmx_endpoint_t e;
    OK(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, KEY, NULL, 0, &e));
    fmx_endpoint_addr_t a;
    OK(fmx_connect(e, FMX_ANY_NIC, target, KEY, WAIT_MS, &a));
    fmx_seg_t seg = {msg, sizeof msg};
    fmx_request_t r;
    fmx_status_t st;
    uint32_t done = 0;
    OK(fmx_isend(e, &seg, 1, a, 7, NULL, &r));
    OK(fmx_wait(e, &r, WAIT_MS, &st, &done));
    if (!done || st.code != FMX_SUCCESS) FAIL("send %d: %s", i, fmx_strerror(st.code));
    OK(fmx_close_endpoint(e));
  }
  printf("{\"cycles\":%d}\n", rounds);
}

static void connect_test(void) {
  fmx_endpoint_addr_t a;
  const char *n = getenv("FMX_SYS_NIC"); /* another host's board */
  fmx_return_t rc = fmx_connect(ep, n && *n ? board(n) : FMX_ANY_NIC, target, key, 5000, &a);
  printf("%s\n", fmx_strerror(rc));
}

/* Connect without waiting (fmx_connect_async) and send --msgs messages of
 * 64 B at once, before the handshake can have finished; then connect
 * again, waiting (fmx_connect: the same address; once the first
 * handshake failed, its own, given 1 s more), and wait for every send.
 * Prints what each step gave: the handshake fails (wrong key, no answer
 * within --dial-ms) on the sends. */
struct racer {
  uint64_t nic;
  fmx_endpoint_addr_t a;
  fmx_return_t rc;
};

static void *race_connect(void *arg) {
  struct racer *x = arg;
  x->rc = fmx_connect(ep, x->nic, target, key, (uint32_t)dial_ms, &x->a);
  return NULL;
}

static void dial_test(void) {
  const char *n = getenv("FMX_SYS_NIC");
  uint64_t nic = n && *n ? board(n) : FMX_ANY_NIC;
  fmx_endpoint_addr_t a, again;
  /* --race 1: a thread connects, waiting, at the same time. */
  struct racer x = {.nic = nic};
  pthread_t th;
  if (race && pthread_create(&th, NULL, race_connect, &x) != 0) FAIL("pthread_create");
  fmx_return_t rc = fmx_connect_async(ep, nic, target, key, (uint32_t)dial_ms, &a);
  if (race) pthread_join(th, NULL);
  int raced = race && x.rc == FMX_SUCCESS && rc == FMX_SUCCESS && !memcmp(&a, &x.a, sizeof a);
  if (rc != FMX_SUCCESS) {
    printf("{\"dial\":\"%s\"}\n", fmx_strerror(rc));
    return;
  }
  static uint8_t msg[64];
  fmx_request_t r[64];
  int k = msgs < 64 ? msgs : 64;
  for (int i = 0; i < k; i++) {
    fmx_seg_t seg = {msg, sizeof msg};
    OK(fmx_isend(ep, &seg, 1, a, 5, NULL, &r[i]));
  }
  if (leave) { /* main closes the endpoint: what is queued must still go */
    printf("{\"dial\":\"%s\",\"posted\":%d}\n", fmx_strerror(rc), k);
    return;
  }
  fmx_return_t crc = fmx_connect(ep, nic, target, key, (uint32_t)dial_ms + 1000, &again);
  int same = crc == FMX_SUCCESS && !memcmp(&a, &again, sizeof a);
  int ok = 0;
  fmx_return_t first_err = FMX_SUCCESS;
  for (int i = 0; i < k; i++) {
    fmx_status_t st;
    wait_req(&r[i], &st, "send");
    if (st.code == FMX_SUCCESS) ok++;
    else if (first_err == FMX_SUCCESS) first_err = st.code;
  }
  printf("{\"dial\":\"%s\",\"connect\":\"%s\",\"same\":%d,\"sent\":%d,\"error\":\"%s\",\"raced\":%d}\n",
         fmx_strerror(rc), fmx_strerror(crc), same, ok, fmx_strerror(first_err), raced);
}

/* fmx_iconnect, then its request: pending at once (1: the call did not
 * wait for the handshake), completed by progress, or cancelled. */
static void iconnect_test(void) {
  const char *n = getenv("FMX_SYS_NIC");
  uint64_t nic = n && *n ? board(n) : FMX_ANY_NIC;
  OK(fmx_set_request_timeout(ep, NULL, (uint32_t)dial_ms));
  fmx_request_t r;
  OK(fmx_iconnect(ep, nic, target, key, 0x1c, NULL, &r));
  uint32_t done = 0, cancelled = 0;
  fmx_status_t st;
  OK(fmx_test(ep, &r, &st, &done));
  int pending = !done;
  fmx_return_t res = done ? st.code : FMX_SUCCESS;
  fmx_endpoint_addr_t a = done ? st.source : (fmx_endpoint_addr_t){{0, 0}};
  if (!done && cancel) {
    OK(fmx_cancel(ep, &r, &cancelled));
    if (!cancelled) OK(fmx_wait(ep, &r, FMX_TIMEOUT_INFINITE, &st, &done)); /* it completed meanwhile */
    res = fmx_connect(ep, nic, target, key, 60000, &a);
  } else if (!done) {
    OK(fmx_wait(ep, &r, FMX_TIMEOUT_INFINITE, &st, &done));
    res = st.code;
    a = st.source;
    if (st.match_info != 0x1c) FAIL("iconnect: match info not given back");
  }
  int sent = 0;
  if (res == FMX_SUCCESS) {
    static uint8_t msg[64];
    fmx_seg_t seg = {msg, sizeof msg};
    fmx_request_t s;
    OK(fmx_isend(ep, &seg, 1, a, 5, NULL, &s));
    wait_req(&s, &st, "send");
    sent = st.code == FMX_SUCCESS;
  }
  printf("{\"pending\":%d,\"result\":\"%s\",\"cancelled\":%u,\"sent\":%d}\n", pending, fmx_strerror(res),
         cancelled, sent);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fmx_sys exchange|bigsend|lazysend|issend|token|connect|dial|iconnect|open|serve|churn [options]\n");
    return 2;
  }
  const char *mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *o = argv[i], *v = argv[i + 1];
    if (!strcmp(o, "--rank")) rank = atoi(v);
    else if (!strcmp(o, "--nprocs")) nprocs = atoi(v);
    else if (!strcmp(o, "--base")) base = atoi(v);
    else if (!strcmp(o, "--msgs")) msgs = atoi(v);
    else if (!strcmp(o, "--max-size")) max_size = strtoull(v, NULL, 0);
    else if (!strcmp(o, "--size")) big = strtoull(v, NULL, 0);
    else if (!strcmp(o, "--seed")) seed = strtoull(v, NULL, 0);
    else if (!strcmp(o, "--late-recv")) late_ms = atoi(v);
    else if (!strcmp(o, "--segs")) use_segs = atoi(v);
    else if (!strcmp(o, "--rounds")) rounds = atoi(v);
    else if (!strcmp(o, "--trunc")) short_recv = atoi(v);
    else if (!strcmp(o, "--one-way")) one_way = atoi(v);
    else if (!strcmp(o, "--target")) target = (uint32_t)atoi(v);
    else if (!strcmp(o, "--key")) key = (uint32_t)strtoul(v, NULL, 0);
    else if (!strcmp(o, "--dial-ms")) dial_ms = atoi(v);
    else if (!strcmp(o, "--race")) race = atoi(v);
    else if (!strcmp(o, "--leave")) leave = atoi(v);
    else if (!strcmp(o, "--cancel")) cancel = atoi(v);
    else if (!strcmp(o, "--until")) until = strtoull(v, NULL, 0);
    else if (!strcmp(o, "--eat-fds")) eat_fds = atoi(v);
    else if (!strcmp(o, "--nodump")) nodump = atoi(v);
    else if (!strcmp(o, "--tolerate")) tolerate = atoi(v);
    else {
      fprintf(stderr, "unknown option %s\n", o);
      return 2;
    }
  }
  if (nodump && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) FAIL("prctl: %s", strerror(errno));
  OK(fmx_init());
  if (!strcmp(mode, "open")) {
    fmx_return_t rc = fmx_open_endpoint(0, target, KEY, NULL, 0, &ep);
    printf("%s\n", fmx_strerror(rc));
    if (rc == FMX_SUCCESS) OK(fmx_close_endpoint(ep));
    OK(fmx_finalize());
    return 0;
  }
  if (!strcmp(mode, "churn")) {
    churn();
    OK(fmx_finalize());
    return 0;
  }
  uint32_t eid = !strcmp(mode, "connect") || !strcmp(mode, "dial") || !strcmp(mode, "iconnect") ? FMX_ANY_ENDPOINT
                                                                                               : (uint32_t)(base + rank);
  OK(fmx_open_endpoint(0, eid, KEY, NULL, 0, &ep));
  if (eat_fds >= 0) take_fds(eat_fds);
  if (!strcmp(mode, "exchange")) exchange();
  else if (!strcmp(mode, "bigsend")) bigsend();
  else if (!strcmp(mode, "lazysend")) lazysend();
  else if (!strcmp(mode, "issend")) issend_test();
  else if (!strcmp(mode, "unmatched")) unmatched_send();
  else if (!strcmp(mode, "token")) token();
  else if (!strcmp(mode, "connect")) connect_test();
  else if (!strcmp(mode, "dial")) dial_test();
  else if (!strcmp(mode, "iconnect")) iconnect_test();
  else if (!strcmp(mode, "serve")) serve();
  else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  OK(fmx_close_endpoint(ep));
  OK(fmx_finalize());
  return 0;
}
