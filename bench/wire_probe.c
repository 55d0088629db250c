/* SPDX-License-Identifier: MIT */
/*
 * bench/wire_probe.c: the raw wire's two candidate kernel paths, side by
 * side on one interface, as the issue asks ("measure AF_XDP on veth, use
 * it if it beats AF_PACKET"): a ping-pong of frames of EtherType 0x86DF
 * between two processes (two namespaces of a veth pair), each side busy
 * polling, through
 *   packet  an AF_PACKET socket with a TPACKET_V2 receive ring (what fmx's
 *           raw wire does: src/net/sock_ring.c) and sendto per frame;
 *   xdp     an AF_XDP socket (copy mode: veth has no zero-copy) fed by a
 *           4-instruction XDP program that redirects every frame of
 *           EtherType 0x86DF on queue 0 into it; generic (skb) or native
 *           (driver) attach.
 * No libbpf: the program is written as bytecode here and loaded with
 * bpf(2); the link is a BPF link (closing it detaches the program).
 *
 *   wire_probe packet|xdp-skb|xdp-drv IFACE PEER_MAC server|client SIZE ITERS
 *
 * The client prints "PATH SIZE half_rtt_us" (a half round trip, the mean
 * over ITERS after ITERS/10 warm-up exchanges). Exit 0; 1 with a message
 * on failure (2: AF_XDP or this attach mode is refused here). Every wait
 * is bounded (5 s without a frame: failure).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

#define ETYPE 0x86DF
#define FRAME 2048u
#define NFRAMES 4096u
#define RING 2048u

static void die(int code, const char *what) {
  fprintf(stderr, "wire_probe: %s: %s\n", what, strerror(errno));
  exit(code);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int ifindex, is_server;
static unsigned char peer[6], self_mac[6];
static size_t size;

static void read_mac(const char *ifname) {
  char path[128], buf[32];
  snprintf(path, sizeof path, "/sys/class/net/%s/address", ifname);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(buf, sizeof buf, f)) die(1, "reading the interface's MAC");
  fclose(f);
  if (sscanf(buf, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &self_mac[0], &self_mac[1], &self_mac[2], &self_mac[3],
             &self_mac[4], &self_mac[5]) != 6)
    die(1, "parsing the interface's MAC");
}

/* A frame to the peer: Ethernet header, then size bytes. */
static size_t frame(unsigned char *b) {
  memcpy(b, peer, 6);
  memcpy(b + 6, self_mac, 6);
  b[12] = ETYPE >> 8;
  b[13] = ETYPE & 0xff;
  memset(b + 14, 0x5a, size);
  size_t len = 14 + size;
  return len < 60 ? 60 : len;
}

/* ---- AF_PACKET with a TPACKET_V2 receive ring ------------------------- */

static int pfd;
static unsigned char *ring;
static unsigned ring_head, ring_nr;

static void packet_open(void) {
  pfd = socket(AF_PACKET, SOCK_RAW, htons(ETYPE));
  if (pfd < 0) die(1, "AF_PACKET socket");
  int v = TPACKET_V2;
  if (setsockopt(pfd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0) die(1, "PACKET_VERSION");
  struct tpacket_req req = {.tp_block_size = 1 << 16, .tp_block_nr = 32, .tp_frame_size = FRAME,
                            .tp_frame_nr = 32 * ((1 << 16) / FRAME)};
  if (setsockopt(pfd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0) die(1, "PACKET_RX_RING");
  ring = mmap(NULL, (size_t)req.tp_block_size * req.tp_block_nr, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
  if (ring == MAP_FAILED) die(1, "mmap ring");
  ring_nr = req.tp_frame_nr;
  struct sockaddr_ll sa = {.sll_family = AF_PACKET, .sll_protocol = htons(ETYPE), .sll_ifindex = ifindex};
  if (bind(pfd, (struct sockaddr *)&sa, sizeof sa) < 0) die(1, "bind");
}

static void packet_send(void) {
  unsigned char b[FRAME];
  size_t len = frame(b);
  if (send(pfd, b, len, 0) < 0) die(1, "send");
}

static int packet_recv(void) {
  struct tpacket2_hdr *h = (struct tpacket2_hdr *)(ring + (size_t)ring_head * FRAME);
  if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) return 0;
  const struct sockaddr_ll *sll = (const void *)((unsigned char *)h + TPACKET_ALIGN(sizeof *h));
  int ours = sll->sll_pkttype != PACKET_OUTGOING;
  __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
  ring_head = (ring_head + 1) % ring_nr;
  return ours;
}

/* ---- AF_XDP ------------------------------------------------------------ */

static long bpf(int cmd, union bpf_attr *a) { return syscall(__NR_bpf, cmd, a, sizeof *a); }

struct xring {
  uint32_t *prod, *cons;
  void *desc;
  uint32_t cached;
};

static int xfd;
static unsigned char *umem;
static struct xring fill, comp, rx, tx;
static uint32_t tx_free[NFRAMES / 2], ntx_free;

static void map_ring(struct xring *r, const struct xdp_ring_offset *o, uint64_t pgoff, size_t desc_size) {
  size_t len = o->desc + RING * desc_size;
  unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, xfd, (off_t)pgoff);
  if (m == MAP_FAILED) die(1, "mmap an AF_XDP ring");
  r->prod = (uint32_t *)(m + o->producer);
  r->cons = (uint32_t *)(m + o->consumer);
  r->desc = m + o->desc;
}

static void xdp_open(int native) {
  /* The map: queue 0 -> our socket. */
  union bpf_attr a;
  memset(&a, 0, sizeof a);
  a.map_type = BPF_MAP_TYPE_XSKMAP;
  a.key_size = 4;
  a.value_size = 4;
  a.max_entries = 1;
  int map = (int)bpf(BPF_MAP_CREATE, &a);
  if (map < 0) die(2, "BPF_MAP_CREATE xskmap");
  /* if (ethertype == 0x86DF) return bpf_redirect_map(map, rx_queue_index, XDP_PASS); return XDP_PASS; */
  struct bpf_insn prog[] = {
      {.code = BPF_LDX | BPF_W | BPF_MEM, .dst_reg = 2, .src_reg = 1, .off = offsetof(struct xdp_md, data)},
      {.code = BPF_LDX | BPF_W | BPF_MEM, .dst_reg = 3, .src_reg = 1, .off = offsetof(struct xdp_md, data_end)},
      {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = 4, .src_reg = 2},
      {.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = 4, .imm = 14},
      {.code = BPF_JMP | BPF_JGT | BPF_X, .dst_reg = 4, .src_reg = 3, .off = 8}, /* short: pass */
      {.code = BPF_LDX | BPF_H | BPF_MEM, .dst_reg = 4, .src_reg = 2, .off = 12},
      {.code = BPF_JMP | BPF_JNE | BPF_K, .dst_reg = 4, .off = 6, .imm = htons(ETYPE)}, /* not ours: pass */
      {.code = BPF_LDX | BPF_W | BPF_MEM, .dst_reg = 2, .src_reg = 1, .off = offsetof(struct xdp_md, rx_queue_index)},
      {.code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = 1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = map},
      {.code = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 3, .imm = XDP_PASS},
      {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map},
      {.code = BPF_JMP | BPF_EXIT},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = XDP_PASS},
      {.code = BPF_JMP | BPF_EXIT},
  };
  static char log[4096];
  memset(&a, 0, sizeof a);
  a.prog_type = BPF_PROG_TYPE_XDP;
  a.insns = (uint64_t)(uintptr_t)prog;
  a.insn_cnt = sizeof prog / sizeof prog[0];
  a.license = (uint64_t)(uintptr_t) "GPL";
  a.log_buf = (uint64_t)(uintptr_t)log;
  a.log_size = sizeof log;
  a.log_level = 1;
  a.expected_attach_type = BPF_XDP;
  int pf = (int)bpf(BPF_PROG_LOAD, &a);
  if (pf < 0) {
    fprintf(stderr, "%s\n", log);
    die(2, "BPF_PROG_LOAD");
  }
  memset(&a, 0, sizeof a);
  a.link_create.prog_fd = (uint32_t)pf;
  a.link_create.target_ifindex = (uint32_t)ifindex;
  a.link_create.attach_type = BPF_XDP;
  a.link_create.flags = native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
  if (bpf(BPF_LINK_CREATE, &a) < 0) die(2, native ? "attaching XDP (native)" : "attaching XDP (generic)");

  xfd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (xfd < 0) die(2, "AF_XDP socket");
  umem = mmap(NULL, (size_t)NFRAMES * FRAME, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
              0);
  if (umem == MAP_FAILED) die(1, "umem");
  struct xdp_umem_reg reg = {.addr = (uint64_t)(uintptr_t)umem, .len = (uint64_t)NFRAMES * FRAME,
                             .chunk_size = FRAME, .headroom = 0};
  if (setsockopt(xfd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof reg) < 0) die(2, "XDP_UMEM_REG");
  int n = RING;
  if (setsockopt(xfd, SOL_XDP, XDP_UMEM_FILL_RING, &n, sizeof n) < 0 ||
      setsockopt(xfd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &n, sizeof n) < 0 ||
      setsockopt(xfd, SOL_XDP, XDP_RX_RING, &n, sizeof n) < 0 || setsockopt(xfd, SOL_XDP, XDP_TX_RING, &n, sizeof n) < 0)
    die(2, "AF_XDP ring sizes");
  struct xdp_mmap_offsets off;
  socklen_t ol = sizeof off;
  if (getsockopt(xfd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &ol) < 0) die(2, "XDP_MMAP_OFFSETS");
  map_ring(&fill, &off.fr, XDP_UMEM_PGOFF_FILL_RING, sizeof(uint64_t));
  map_ring(&comp, &off.cr, XDP_UMEM_PGOFF_COMPLETION_RING, sizeof(uint64_t));
  map_ring(&rx, &off.rx, XDP_PGOFF_RX_RING, sizeof(struct xdp_desc));
  map_ring(&tx, &off.tx, XDP_PGOFF_TX_RING, sizeof(struct xdp_desc));
  /* The first half of the frames to the fill ring (for receiving), the
   * second half kept for sending. */
  uint64_t *fd = fill.desc;
  for (uint32_t i = 0; i < NFRAMES / 2 && i < RING; i++) fd[i] = (uint64_t)i * FRAME;
  __atomic_store_n(fill.prod, RING < NFRAMES / 2 ? RING : NFRAMES / 2, __ATOMIC_RELEASE);
  for (uint32_t i = 0; i < NFRAMES / 2; i++) tx_free[ntx_free++] = NFRAMES / 2 + i;
  struct sockaddr_xdp sx = {.sxdp_family = AF_XDP, .sxdp_ifindex = (uint32_t)ifindex, .sxdp_queue_id = 0,
                            .sxdp_flags = XDP_COPY};
  if (bind(xfd, (struct sockaddr *)&sx, sizeof sx) < 0) die(2, "bind AF_XDP");
  uint32_t key = 0, val = (uint32_t)xfd;
  memset(&a, 0, sizeof a);
  a.map_fd = (uint32_t)map;
  a.key = (uint64_t)(uintptr_t)&key;
  a.value = (uint64_t)(uintptr_t)&val;
  if (bpf(BPF_MAP_UPDATE_ELEM, &a) < 0) die(2, "xskmap update");
}

static void xdp_send(void) {
  /* Frames the kernel is done with come back on the completion ring. */
  uint32_t cp = __atomic_load_n(comp.prod, __ATOMIC_ACQUIRE), cc = *comp.cons;
  for (; cc != cp; cc++) tx_free[ntx_free++] = (uint32_t)(((uint64_t *)comp.desc)[cc & (RING - 1)] / FRAME);
  __atomic_store_n(comp.cons, cc, __ATOMIC_RELEASE);
  if (!ntx_free) die(1, "no frame free to send");
  uint32_t f = tx_free[--ntx_free];
  size_t len = frame(umem + (size_t)f * FRAME);
  uint32_t p = *tx.prod;
  ((struct xdp_desc *)tx.desc)[p & (RING - 1)] = (struct xdp_desc){.addr = (uint64_t)f * FRAME, .len = (uint32_t)len};
  __atomic_store_n(tx.prod, p + 1, __ATOMIC_RELEASE);
  /* Copy mode: the kernel sends on this call. */
  if (sendto(xfd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN && errno != EBUSY && errno != ENOBUFS)
    die(1, "sendto AF_XDP");
}

static int xdp_recv(void) {
  uint32_t c = *rx.cons;
  if (c == __atomic_load_n(rx.prod, __ATOMIC_ACQUIRE)) return 0;
  struct xdp_desc d = ((struct xdp_desc *)rx.desc)[c & (RING - 1)];
  __atomic_store_n(rx.cons, c + 1, __ATOMIC_RELEASE);
  uint32_t fp = *fill.prod; /* the frame back for the next */
  ((uint64_t *)fill.desc)[fp & (RING - 1)] = d.addr & ~(uint64_t)(FRAME - 1);
  __atomic_store_n(fill.prod, fp + 1, __ATOMIC_RELEASE);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: wire_probe packet|xdp-skb|xdp-drv IFACE PEER_MAC server|client SIZE ITERS\n");
    return 1;
  }
  const char *path = argv[1];
  ifindex = (int)if_nametoindex(argv[2]);
  if (!ifindex) die(1, argv[2]);
  if (sscanf(argv[3], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &peer[0], &peer[1], &peer[2], &peer[3], &peer[4], &peer[5]) !=
      6) {
    fprintf(stderr, "wire_probe: bad MAC %s\n", argv[3]);
    return 1;
  }
  is_server = !strcmp(argv[4], "server");
  size = strtoul(argv[5], NULL, 0);
  long iters = strtol(argv[6], NULL, 0);
  if (size > 1500 - 14 || iters <= 0) {
    fprintf(stderr, "wire_probe: SIZE at most 1486, ITERS > 0\n");
    return 1;
  }
  read_mac(argv[2]);
  int xdp = strncmp(path, "xdp", 3) == 0;
  if (xdp) xdp_open(!strcmp(path, "xdp-drv"));
  else packet_open();
  void (*tx_fn)(void) = xdp ? xdp_send : packet_send;
  int (*rx_fn)(void) = xdp ? xdp_recv : packet_recv;
  if (is_server) {
    /* Answer every frame; leave after 2 s without one (10 s before the
     * first). */
    uint64_t quiet_until = now_ns() + 10000000000ull;
    int got = 0;
    for (unsigned spins = 1;; spins++) {
      if (rx_fn()) {
        tx_fn();
        got = 1;
      }
      if ((spins & 4095) == 0) {
        uint64_t t = now_ns();
        if (got) quiet_until = t + 2000000000ull;
        else if (t > quiet_until) return 0;
        got = 0;
      }
    }
  }
  long warm = iters / 10, total = iters + warm;
  /* Send until the server answers (it may start later), drain the answers
   * to the repeats, then strictly one frame each way. */
  uint64_t until = now_ns() + 5000000000ull, next = 0;
  for (;;) {
    if (now_ns() >= next) {
      tx_fn();
      next = now_ns() + 10000000;
    }
    if (rx_fn()) break;
    if (now_ns() > until) {
      fprintf(stderr, "wire_probe: no server\n");
      return 1;
    }
  }
  for (uint64_t t = now_ns() + 50000000; now_ns() < t;) rx_fn();
  uint64_t t0 = 0;
  for (long i = 0; i < total; i++) {
    if (i == warm) t0 = now_ns();
    tx_fn();
    uint64_t deadline = 0;
    for (unsigned spins = 0; !rx_fn(); spins++) {
      if ((spins & 1023) == 0) {
        uint64_t t = now_ns();
        if (!deadline) deadline = t + 5000000000ull;
        else if (t > deadline) {
          fprintf(stderr, "wire_probe: no frame for 5 s (exchange %ld)\n", i);
          return 1;
        }
      }
    }
  }
  printf("%s %zu %.2f\n", path, size, (double)(now_ns() - t0) / 2e3 / (double)iters);
  return 0;
}
