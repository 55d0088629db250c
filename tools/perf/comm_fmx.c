/* SPDX-License-Identifier: MIT */
/*
 * comm_fmx.c - struct perf_comm over fmx: one endpoint per rank, connected to
 * every other rank; the source rank travels in the match info so a receive
 * names its peer, as an MPI receive does.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_fmx.h"
#include "fmx.h"
#include "kernels.h"
#include "util.h"

#define PERF_KEY 0x666d7870u /* "fmxp" */
/* Match info: a prefix, the tag, the sending rank. */
#define MATCH(tag, src) (0xf0f0000000000000ull | ((uint64_t)(tag) << 32) | (uint32_t)(src))

struct fmx_comm {
  fmx_endpoint_t ep;
  fmx_endpoint_addr_t *peers;
  uint64_t rndv;
  uint64_t rndv_seen; /* rendezvous receives at the last f_engine */
};

static void check(fmx_return_t rc, const char *what)
{
  if (rc != FMX_SUCCESS)
    perf_die("%s failed: %s (%d)", what, fmx_strerror(rc), (int)rc);
}

static struct fmx_comm *priv(struct perf_comm *c)
{
  return c->priv;
}

static void f_isend(struct perf_comm *c, const void *buf, uint64_t len, int peer,
                    enum perf_tag tag, perf_req_t *req)
{
  fmx_seg_t seg = {(void *)buf, len};
  check(fmx_isend(priv(c)->ep, &seg, 1, priv(c)->peers[peer], MATCH(tag, c->rank), NULL,
                  (fmx_request_t *)&req->p),
        "fmx_isend");
}

static void f_irecv(struct perf_comm *c, void *buf, uint64_t len, int peer, enum perf_tag tag,
                    perf_req_t *req)
{
  fmx_seg_t seg = {buf, len};
  /* Across hosts nothing supervises the two ranks: a receive directed to
   * the one peer fails when that peer is found dead, where one from anyone
   * would wait out --timeout (a server killed between its last receive of
   * a window and its ack left the client waiting 120 s). */
  const fmx_endpoint_addr_t *from = perf_opt.client || perf_opt.server ? &priv(c)->peers[peer] : NULL;
  check(fmx_irecvx(priv(c)->ep, &seg, 1, from, MATCH(tag, peer), FMX_MATCH_MASK_NONE, 0, NULL,
                   (fmx_request_t *)&req->p),
        "fmx_irecvx");
}

static void f_status(const fmx_status_t *st, const char *what, uint64_t expect_len)
{
  if (st->code != FMX_SUCCESS)
    perf_die("%s completed with error: %s (%d)", what, fmx_strerror(st->code), (int)st->code);
  if (expect_len != UINT64_MAX && st->xfer_length != expect_len)
    perf_die("%s: %" PRIu64 " bytes delivered, expected %" PRIu64, what, st->xfer_length,
             expect_len);
}

static void f_wait(struct perf_comm *c, perf_req_t *req, const char *what, uint64_t expect_len)
{
  fmx_status_t st;
  uint32_t done = 0;
  /* One wait with the whole timeout: no clock read on the measured path. */
  check(fmx_wait(priv(c)->ep, (fmx_request_t *)&req->p, perf_opt.timeout_ms, &st, &done),
        "fmx_wait");
  if (!done)
    perf_die("%s: nothing from the peer for %u s (peer dead or stuck?)", what,
             perf_opt.timeout_ms / 1000);
  f_status(&st, what, expect_len);
}

static bool f_test(struct perf_comm *c, perf_req_t *req, const char *what, uint64_t expect_len)
{
  fmx_status_t st;
  uint32_t done = 0;
  check(fmx_test(priv(c)->ep, (fmx_request_t *)&req->p, &st, &done), "fmx_test");
  if (done)
    f_status(&st, what, expect_len);
  return done != 0;
}

/* Each counter of the endpoint: fn(label, value, arg). */
static void each_counter(fmx_endpoint_t ep, void (*fn)(const char *label, uint64_t v, void *arg), void *arg)
{
  uint32_t n = 0;
  uint64_t v[128];
  if (fmx_get_info(ep, FMX_INFO_COUNTER_COUNT, NULL, 0, &n, sizeof n) != FMX_SUCCESS || n > 128 ||
      fmx_get_info(ep, FMX_INFO_COUNTER_VALUES, NULL, 0, v, (uint32_t)(n * sizeof *v)) != FMX_SUCCESS)
    return;
  for (uint32_t i = 0; i < n; i++) {
    char l[128] = "";
    if (fmx_get_info(ep, FMX_INFO_COUNTER_LABEL, &i, sizeof i, l, sizeof l) == FMX_SUCCESS)
      fn(l, v[i], arg);
  }
}

/* --counters: those not zero, on stderr. */
static void print_counter(const char *label, uint64_t v, void *arg)
{
  if (v)
    fprintf(stderr, "%s: rank %d: %-70s %llu\n", perf_opt.prog, *(int *)arg, label, (unsigned long long)v);
}

static void take_rndv(const char *label, uint64_t v, void *arg)
{
  if (!strcmp(label, "rendezvous messages received"))
    *(uint64_t *)arg = v;
}

/* The endpoint's "rendezvous messages received" counter. */
static uint64_t rndv_received(fmx_endpoint_t ep)
{
  uint64_t r = 0;
  each_counter(ep, take_rndv, &r);
  return r;
}

/* "eager" when this size's receives went eager (below the threshold, or
 * from fmx_mem_alloc memory down to one fragment: counted), else the bulk
 * engine of the last one. */
static void f_engine(struct perf_comm *c, uint64_t size, char *out, size_t len)
{
  struct fmx_comm *f = priv(c);
  uint64_t seen = rndv_received(f->ep), before = f->rndv_seen;
  f->rndv_seen = seen;
  memset(out, 0, len);
  if (seen == before || (size < f->rndv && !perf_opt.mem_lib))
    snprintf(out, len, "eager");
  else if (fmx_get_info(f->ep, FMX_INFO_LAST_BULK_ENGINE, NULL, 0, out, (uint32_t)len) != FMX_SUCCESS ||
           !out[0])
    snprintf(out, len, "?");
  out[len - 1] = '\0';
}

/* --mem fmx: message buffers that peers map (one copy, no kernel). */
static void *mem_alloc(size_t len)
{
  void *p = NULL;
  return fmx_mem_alloc(len, &p) == FMX_SUCCESS ? p : NULL;
}

static void mem_release(void *p)
{
  check(fmx_mem_free(p), "fmx_mem_free");
}

static void connect_peer(fmx_endpoint_t ep, uint32_t peer_eid, fmx_endpoint_addr_t *addr)
{
  double deadline = now() + perf_opt.timeout_ms / 1000.0;
  for (;;) {
    fmx_return_t rc = fmx_connect(ep, FMX_ANY_NIC, peer_eid, PERF_KEY, 5000, addr);
    if (rc == FMX_SUCCESS)
      return;
    /* By hand, the other rank may not be up yet: keep trying. */
    bool retry = rc == FMX_REMOTE_ENDPOINT_BAD_ID || rc == FMX_TIMEOUT ||
                 rc == FMX_REMOTE_ENDPOINT_CLOSED;
    if (!retry || now() > deadline)
      perf_die("fmx_connect to endpoint %u failed: %s (%d)", peer_eid, fmx_strerror(rc),
               (int)rc);
    usleep(50000);
  }
}

/* --client HOST[:EP]: the whole string as a board's name first, else the
 * part before the last ':' with EP after it. */
static void resolve_client(const char *arg, uint64_t *nic, uint32_t *eid)
{
  *eid = 0;
  if (fmx_hostname_to_nic_id(arg, nic) == FMX_SUCCESS)
    return;
  char host[128];
  snprintf(host, sizeof host, "%s", arg);
  char *colon = strrchr(host, ':');
  char *end = NULL;
  unsigned long ep = colon ? strtoul(colon + 1, &end, 10) : 0;
  if (colon && end && end != colon + 1 && *end == '\0' && ep < 65536) {
    *colon = '\0';
    *eid = (uint32_t)ep;
    if (fmx_hostname_to_nic_id(host, nic) == FMX_SUCCESS)
      return;
  }
  perf_die("--client %s: no such board (want a peer-table name of FMX_PEERS, a MAC or a NIC id, "
           "then :EP)", arg);
}

/* Across hosts: the client connects to the server's endpoint and says
 * hello; the server learns the client's address from that message. */
static void meet_remote(struct fmx_comm *f)
{
  uint64_t hello = 0x68656c6c6full;
  fmx_seg_t seg = {&hello, sizeof hello};
  fmx_request_t req;
  fmx_status_t st;
  uint32_t done = 0;
  if (perf_opt.client) {
    uint64_t nic;
    uint32_t eid;
    resolve_client(perf_opt.client, &nic, &eid);
    double deadline = now() + perf_opt.timeout_ms / 1000.0;
    fmx_return_t rc;
    while ((rc = fmx_connect(f->ep, nic, eid, PERF_KEY, 2000, &f->peers[1])) == FMX_TIMEOUT &&
           now() < deadline) {
    }
    if (rc != FMX_SUCCESS)
      perf_die("fmx_connect to %s (NIC id %012" PRIx64 ", endpoint %u) failed: %s (%d)", perf_opt.client, nic,
               eid, fmx_strerror(rc), (int)rc);
    check(fmx_isend(f->ep, &seg, 1, f->peers[1], MATCH(PERF_TAG_HELLO, 0), NULL, &req), "fmx_isend (hello)");
  } else {
    perf_msg("server: endpoint %ld waits for a client", perf_opt.endpoint_id < 0 ? 0 : perf_opt.endpoint_id);
    check(fmx_irecv(f->ep, &seg, 1, MATCH(PERF_TAG_HELLO, 0), FMX_MATCH_MASK_NONE, NULL, &req), "fmx_irecv (hello)");
  }
  check(fmx_wait(f->ep, &req, perf_opt.timeout_ms, &st, &done), "fmx_wait (hello)");
  if (!done)
    perf_die("%s: nothing within %u s", perf_opt.client ? "hello to the server" : "waiting for a client",
             perf_opt.timeout_ms / 1000);
  f_status(&st, "hello", sizeof hello);
  if (perf_opt.server)
    f->peers[0] = st.source;
}

void comm_fmx_open(struct perf_comm *c, int rank, int np, uint32_t want_eid,
                   void (*exchange)(uint32_t mine, uint32_t *all, int np))
{
  struct fmx_comm *f = calloc(1, sizeof *f);
  uint32_t *eids = calloc((size_t)np, sizeof *eids);
  if (!f || !eids)
    perf_die("out of memory");
  f->peers = calloc((size_t)np, sizeof *f->peers);
  if (!f->peers)
    perf_die("out of memory");
  memset(c, 0, sizeof *c);
  c->name = "fmx";
  c->rank = rank;
  c->size = np;
  c->priv = f;
  c->isend = f_isend;
  c->irecv = f_irecv;
  c->wait = f_wait;
  c->test = f_test;
  c->engine = f_engine;
#ifdef FMX_VERSION_STRING
  snprintf(c->library, sizeof c->library, "fmx %s", FMX_VERSION_STRING);
#else
  snprintf(c->library, sizeof c->library, "fmx");
#endif

  check(fmx_init(), "fmx_init");
  check(fmx_open_endpoint(0, want_eid, PERF_KEY, NULL, 0, &f->ep), "fmx_open_endpoint");
  uint32_t mine = 0;
  check(fmx_get_info(f->ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &mine, sizeof mine),
        "fmx_get_info(ENDPOINT_ID)");
  if (perf_opt.server || perf_opt.client) {
    meet_remote(f);
  } else {
    exchange(mine, eids, np);
    for (int p = 0; p < np; p++)
      if (p != rank)
        connect_peer(f->ep, eids[p], &f->peers[p]);
  }
  free(eids);
  if (fmx_get_info(NULL, FMX_INFO_RNDV_THRESHOLD, NULL, 0, &f->rndv, sizeof f->rndv) !=
      FMX_SUCCESS)
    f->rndv = 0;
  int remote = perf_opt.server || perf_opt.client;
  if (remote)
    f->rndv = 0; /* across hosts the net transport's FMX_NET_PULL_THRESHOLD applies: the counters say */

  if (rank == 0 && perf_opt.engine) {
    char status[128] = "";
    fmx_return_t rc = fmx_get_info(NULL, FMX_INFO_ENGINE_STATUS, perf_opt.engine,
                                   (uint32_t)strlen(perf_opt.engine) + 1, status,
                                   sizeof status);
    status[sizeof status - 1] = '\0';
    if (rc != FMX_SUCCESS)
      perf_msg("warning: engine '%s' is unknown to this library (%s); FMX_BULK is ignored",
               perf_opt.engine, fmx_strerror(rc));
    else if (strncmp(status, "available", 9) != 0)
      perf_msg("warning: engine '%s' not available here: %s", perf_opt.engine, status);
  }
  char hs[32], cores[96] = "not pinned";
  if (perf_opt.ncores > 0) {
    int n = snprintf(cores, sizeof cores, "cores ");
    for (int i = 0; i < np && i < perf_opt.ncores && n < (int)sizeof cores - 8; i++)
      n += snprintf(cores + n, sizeof cores - (size_t)n, "%s%d", i ? "," : "",
                    perf_opt.cores[i]);
  }
  snprintf(c->desc, sizeof c->desc, "%s; rendezvous from %s; FMX_BULK=%s%s", cores,
           remote ? "FMX_NET_PULL_THRESHOLD (across hosts)" : human_size(f->rndv, hs, sizeof hs),
           perf_opt.engine ? perf_opt.engine : "(auto)",
           perf_opt.mem_lib ? "; buffers from fmx_mem_alloc" : "");
  if (perf_opt.mem_lib) {
    c->alloc = mem_alloc;
    c->release = mem_release;
  }
}

void comm_fmx_close(struct perf_comm *c)
{
  struct fmx_comm *f = priv(c);
  if (perf_opt.counters)
    each_counter(f->ep, print_counter, &c->rank);
  check(fmx_close_endpoint(f->ep), "fmx_close_endpoint");
  check(fmx_finalize(), "fmx_finalize");
  free(f->peers);
  free(f);
}
