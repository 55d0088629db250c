/* SPDX-License-Identifier: MIT */
/* The simulated wire, switch and clock (simnet.h). */
#include "simnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/iface.h"
#include "net/net.h"
#include "net/net_int.h"
#include "net/sock.h"
#include "platform/sys.h"

/* Bytes a frame takes on the link beside the packet: IPv4 and UDP headers
 * (28), Ethernet header and FCS (18), preamble and gap (20). */
#define SIM_WIRE_EXTRA 66
#define SIM_NEVER UINT64_MAX
#define SIM_START_NS 1000000000ull
#define SIM_SLEEP_NS 10000000ull

enum { ARRIVE, DELIVER };

struct frame {
  uint64_t t, seq;
  uint32_t src, dst, len;
  int stage;
  struct frame *next;
  uint8_t data[];
};

struct host {
  fmx_endpoint_t ep;
  uint64_t nic_free;  /* when its link is free to send again */
  uint64_t port_free; /* when the switch port toward it is free */
  struct frame *head, *tail;
  uint64_t in_bytes;
  uint64_t timer; /* its endpoint's next timer (virtual ns) */
  int kick;
  int waiting; /* its program waits on a request (sim_wait) */
};

static struct sim {
  struct sim_cfg cfg;
  struct host *h;
  struct frame **heap;
  size_t nheap, capheap;
  uint64_t now, seq;
  int closing; /* sim_fini: the clock runs on by itself, frames go nowhere */
  uint64_t sndbuf_ns; /* the most a host's link queues ahead, in time */
  struct net_iface board;
  struct sim_stats st;
  void (*hook)(uint32_t h, void *arg);
  void *hook_arg;
  int null_fd; /* every host's wire descriptor (sim_wire_open) */
} S;

static uint64_t ser_ns(uint32_t len) { return ((uint64_t)len + SIM_WIRE_EXTRA) * 8000000000ull / S.cfg.rate_bps; }

/* ---- the event heap, ordered by (time, seq): the same run, the same order */

static int before(const struct frame *a, const struct frame *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

static int heap_push(struct frame *f) {
  if (S.nheap == S.capheap) {
    size_t cap = S.capheap ? S.capheap * 2 : 1024;
    struct frame **n = realloc(S.heap, cap * sizeof *n);
    if (!n) return -ENOMEM;
    S.heap = n, S.capheap = cap;
  }
  f->seq = S.seq++;
  size_t i = S.nheap++;
  while (i && before(f, S.heap[(i - 1) / 2])) {
    S.heap[i] = S.heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  S.heap[i] = f;
  return 0;
}

static struct frame *heap_pop(void) {
  struct frame *top = S.heap[0], *last = S.heap[--S.nheap];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= S.nheap) break;
    if (c + 1 < S.nheap && before(S.heap[c + 1], S.heap[c])) c++;
    if (!before(S.heap[c], last)) break;
    S.heap[i] = S.heap[c];
    i = c;
  }
  if (S.nheap) S.heap[i] = last;
  return top;
}

/* ---- the wire ------------------------------------------------------------ */

/* The descriptor is /dev/null's, one for all hosts: the transport hands
 * a waiter its socket's to poll (net_wait_fd), and says so only while it
 * has one. A descriptor each would spend 10,000 of the 20,000 a process
 * may hold here on 10,000 hosts. */
static int sim_wire_open(struct net_sock *s, const struct net_iface *ifc, uint32_t eid) {
  (void)ifc;
  if (eid >= S.cfg.hosts || (uint32_t)s->port_base + eid > 65535) return -ERANGE; /* as udp_open */
  if (S.null_fd < 0 && (S.null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) return -errno;
  s->fd = S.null_fd;
  return 0;
}

static void sim_wire_close(struct net_sock *s) { s->fd = -1; /* S.null_fd stays, closed by sim_fini */ }

static int sim_wire_send(struct net_sock *s, const struct net_addr *to, uint32_t eid, const struct iovec *iov,
                         int iovcnt) {
  uint32_t dst = to->port ? (uint32_t)(ntohs(to->port) - s->port_base) : eid;
  if (S.closing) return 0;
  /* No port: to endpoint eid of the board, broadcast on the UDP wire (a
   * CONNECT); here one host has it. */
  struct host *src = &S.h[s->eid];
  uint64_t start = src->nic_free > S.now ? src->nic_free : S.now;
  if (start - S.now > S.sndbuf_ns) return -EAGAIN; /* its socket's buffer is full */
  size_t len = 0;
  for (int i = 0; i < iovcnt; i++) len += iov[i].iov_len;
  struct frame *f = malloc(sizeof *f + len);
  if (!f) return -ENOBUFS;
  len = 0;
  for (int i = 0; i < iovcnt; i++) {
    memcpy(f->data + len, iov[i].iov_base, iov[i].iov_len);
    len += iov[i].iov_len;
  }
  f->src = s->eid, f->dst = dst, f->len = (uint32_t)len, f->stage = ARRIVE, f->next = NULL;
  src->nic_free = start + ser_ns(f->len);
  f->t = src->nic_free + S.cfg.delay_ns / 2;
  S.st.frames++;
  S.st.bytes += len;
  if (heap_push(f) < 0) {
    free(f);
    return -ENOBUFS;
  }
  return 0;
}

static int sim_wire_recv(struct net_sock *s, struct net_rx *rx, int max) {
  struct host *h = &S.h[s->eid];
  int n = 0;
  while (n < max && h->head) {
    struct frame *f = h->head;
    h->head = f->next;
    if (!h->head) h->tail = NULL;
    h->in_bytes -= f->len;
    uint8_t *buf = s->rxmem + (size_t)n * s->rx_buf;
    uint32_t len = f->len < s->rx_buf ? f->len : s->rx_buf;
    memcpy(buf, f->data, len);
    rx[n++] = (struct net_rx){.buf = buf,
                              .len = len,
                              .from = {.ip = S.board.ip, .port = htons((uint16_t)(s->port_base + f->src))},
                              .at_ns = f->t}; /* delivered at its time */
    free(f);
  }
  return n;
}

static uint32_t sim_wire_rcvbuf(const struct net_sock *s) {
  (void)s;
  return S.cfg.rcvbuf;
}

/* What the host's link has yet to serialize (both of its sockets share
 * it): a kernel's SIOCOUTQ counts a packet until its device sent it. */
static uint32_t sim_wire_queued(const struct net_sock *s) {
  const struct host *h = &S.h[s->eid];
  if (h->nic_free <= S.now) return 0;
  uint64_t b = (h->nic_free - S.now) * S.cfg.rate_bps / 8000000000ull;
  return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

static const struct net_wire sim_wire = {
    .name = "sim",
    .overhead = 28,
    .pull_frames = 5,
    .open = sim_wire_open,
    .send = sim_wire_send,
    .recv = sim_wire_recv,
    .rcvbuf = sim_wire_rcvbuf,
    .close = sim_wire_close,
    .queued = sim_wire_queued,
};

/* ---- the switch ---------------------------------------------------------- */

static void arrive(struct frame *f) {
  if (f->dst >= S.cfg.hosts || (S.cfg.loss_ppm && sys_random64() % 1000000 < S.cfg.loss_ppm)) {
    S.st.lost++;
    free(f);
    return;
  }
  struct host *d = &S.h[f->dst];
  uint64_t queued = d->port_free > f->t ? (d->port_free - f->t) * S.cfg.rate_bps / 8000000000ull : 0;
  uint64_t wire = (uint64_t)f->len + SIM_WIRE_EXTRA;
  if (queued + wire > S.cfg.buffer) {
    S.st.port_drops++;
    free(f);
    return;
  }
  if (queued + wire > S.st.max_queue) S.st.max_queue = queued + wire;
  S.st.queue_hist[queued / SIM_QUEUE_STEP < SIM_QUEUE_BUCKETS ? queued / SIM_QUEUE_STEP : SIM_QUEUE_BUCKETS - 1]++;
  d->port_free = (d->port_free > f->t ? d->port_free : f->t) + ser_ns(f->len);
  f->t = d->port_free + S.cfg.delay_ns / 2;
  f->stage = DELIVER;
  if (heap_push(f) < 0) {
    S.st.lost++;
    free(f);
  }
}

/* The receive buffer is charged the packet's bytes alone (the kernel
 * charges a buffer's truesize, more for small packets): sock_drops is a
 * lower bound. */
static void deliver(struct frame *f) {
  struct host *d = &S.h[f->dst];
  if (d->in_bytes + f->len > S.cfg.rcvbuf || !d->ep) {
    S.st.sock_drops++;
    free(f);
    return;
  }
  f->next = NULL;
  if (d->tail) d->tail->next = f;
  else d->head = f;
  d->tail = f;
  d->in_bytes += f->len;
}

/* ---- the clock and the loop ---------------------------------------------- */

/* While the endpoints close (their close waits for acks nobody sends any
 * more, in a loop that reads the clock) the clock moves 1 s a read. Atomic:
 * each endpoint's shm watcher thread reads it too. */
static uint64_t sim_clock(void) {
  if (__atomic_load_n(&S.closing, __ATOMIC_RELAXED))
    return __atomic_add_fetch(&S.now, 1000000000ull, __ATOMIC_RELAXED);
  return __atomic_load_n(&S.now, __ATOMIC_RELAXED);
}

int sim_init(const struct sim_cfg *cfg) {
  memset(&S, 0, sizeof S);
  S.null_fd = -1;
  S.cfg = *cfg;
  if (!S.cfg.hosts || !S.cfg.rate_bps || S.cfg.mtu < 576 || !S.cfg.rcvbuf || !S.cfg.seed) return -1;
  if (!(S.h = calloc(S.cfg.hosts, sizeof *S.h))) return -1;
  S.now = SIM_START_NS;
  S.sndbuf_ns = (4ull << 20) * 8000000000ull / S.cfg.rate_bps; /* a 4 MiB socket buffer's worth */
  for (uint32_t i = 0; i < S.cfg.hosts; i++) S.h[i].timer = SIM_NEVER;
  S.board = (struct net_iface){.name = "sim0", .index = 1, .nic = 0x02005e000001ull, .mtu = S.cfg.mtu,
                               .ip = htonl(0x0a000001), .bcast = htonl(0x0affffff), .mask = htonl(0xff000000),
                               .up = 1, .ether = 1};
  /* One process, one thread: no shm peers, no offload channels, no
   * progress thread, no counters files, nothing asked on a real wire. */
  static const char *const env[][2] = {{"FMX_SHM", "0"},           {"FMX_OFFLOAD", "off"},
                                       {"FMX_NET_PROGRESS", "off"}, {"FMX_COUNTERS_PAGE", "0"},
                                       {"FMX_NET_DISCOVER_MS", "0"}, {"FMX_CROWDED", "off"}};
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) setenv(env[i][0], env[i][1], 1);
  char max[16];
  snprintf(max, sizeof max, "%u", S.cfg.hosts < 256 ? 256 : S.cfg.hosts);
  setenv("FMX_ENDPOINT_MAX", max, 1);
  sys_sim_set(sim_clock, cfg->seed);
  net_board_force(&S.board);
  net_wire_force(&sim_wire);
  return 0;
}

fmx_return_t sim_open(uint32_t h, uint32_t key, fmx_endpoint_t *ep) {
  if (h >= S.cfg.hosts) return FMX_BAD_ENDPOINT;
  fmx_return_t rc = fmx_open_endpoint(0, h, key, NULL, 0, ep);
  if (rc == FMX_SUCCESS) S.h[h].ep = *ep;
  return rc;
}

uint64_t sim_nic(void) { return S.board.nic; }

void sim_memory(uint32_t h, uint64_t *pool_bytes, uint32_t *partners) {
  const struct net_ep *ne = net_ep(S.h[h].ep);
  *pool_bytes = (uint64_t)(ne->pool.out + ne->pool.nfree) * ne->pool.size;
  *partners = ne->npeers;
}
uint64_t sim_now(void) { return S.now; }
void sim_kick(uint32_t h) { S.h[h].kick = 1; }
void sim_wait(uint32_t h, int on) { S.h[h].waiting = on; }
void sim_set_hook(void (*fn)(uint32_t h, void *arg), void *arg) { S.hook = fn, S.hook_arg = arg; }
const struct sim_stats *sim_stats(void) { return &S.st; }

uint64_t sim_queue_pct(double q) {
  uint64_t n = 0, seen = 0;
  for (int i = 0; i < SIM_QUEUE_BUCKETS; i++) n += S.st.queue_hist[i];
  for (int i = 0; i < SIM_QUEUE_BUCKETS; i++) {
    seen += S.st.queue_hist[i];
    if (n && (double)seen >= q * (double)n) {
      uint64_t top = (uint64_t)(i + 1) * SIM_QUEUE_STEP;
      return top < S.st.max_queue ? top : S.st.max_queue;
    }
  }
  return 0;
}

static void refresh_timer(struct host *h) {
  uint64_t m = SIM_NEVER;
  int fd = net_transport.wait_fd(h->ep, &m);
  h->timer = fd < 0 || m == SIM_NEVER ? SIM_NEVER : S.now + m;
}

int sim_step(void) {
  S.st.steps++;
  while (S.nheap && S.heap[0]->t <= S.now) {
    struct frame *f = heap_pop();
    if (f->stage == ARRIVE) arrive(f);
    else deliver(f);
  }
  int busy = 0;
  for (uint32_t i = 0; i < S.cfg.hosts; i++) {
    struct host *h = &S.h[i];
    if (!h->ep || !(h->head || h->kick || h->timer <= S.now)) continue;
    h->kick = 0;
    if (S.hook) S.hook(i, S.hook_arg); /* its pass */
    else fmx_progress(h->ep);
    S.st.progress_calls++;
    refresh_timer(h);
    busy |= h->head != NULL || h->kick;
  }
  if (busy) return 1; /* frames left to read at this same instant */
  uint64_t next = S.nheap ? S.heap[0]->t : SIM_NEVER;
  uint32_t waiting = 0;
  for (uint32_t i = 0; i < S.cfg.hosts; i++) {
    if (S.h[i].timer < next) next = S.h[i].timer;
    waiting += S.h[i].waiting;
  }
  /* A waiter that sleeps with nothing due looks again SIM_SLEEP_NS later
   * (wait.c's SLEEP_POLL_NS): the protocol left waiting on a poll. */
  if (waiting && (next == SIM_NEVER || next > S.now + SIM_SLEEP_NS)) {
    __atomic_store_n(&S.now, S.now + SIM_SLEEP_NS, __ATOMIC_RELAXED);
    S.st.sleeps_out++;
    for (uint32_t i = 0; i < S.cfg.hosts; i++)
      if (S.h[i].waiting) S.h[i].kick = 1;
    return 1;
  }
  if (next == SIM_NEVER) return 0;
  /* A timer due runs at a pass that reads the clock, every 8th
   * (net_progress): its endpoint is run again 1 us on until it has. */
  __atomic_store_n(&S.now, next > S.now ? next : S.now + 1000, __ATOMIC_RELAXED);
  return 1;
}

void sim_fini(void) {
  __atomic_store_n(&S.closing, 1, __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < S.cfg.hosts; i++) {
    struct host *h = &S.h[i];
    if (h->ep) fmx_close_endpoint(h->ep);
    h->ep = NULL;
    while (h->head) {
      struct frame *f = h->head;
      h->head = f->next;
      free(f);
    }
  }
  while (S.nheap) free(heap_pop());
  free(S.heap);
  free(S.h);
  S.heap = NULL, S.h = NULL;
  if (S.null_fd >= 0) close(S.null_fd);
  S.null_fd = -1;
  net_wire_force(NULL);
  net_board_force(NULL);
  sys_sim_set(NULL, 0);
}
