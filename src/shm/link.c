/* SPDX-License-Identifier: MIT */
#include "shm/link.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "platform/sys.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))

static size_t layout(struct chan_hdr *h) {
  uint64_t ring = ALIGN_UP(shm_ring_cells_bytes(fmx_cfg.ring_size), 64);
  uint64_t slots = fmx_cfg.bulk_slots * sizeof(struct bulk_slot);
  uint64_t coop = ALIGN_UP(sizeof(struct coop_area), 64);
  memset(h, 0, sizeof *h);
  h->magic = CHAN_MAGIC;
  h->version = CHAN_VERSION;
  h->ring_bytes = fmx_cfg.ring_size;
  h->nslots = fmx_cfg.bulk_slots;
  /* The cells right behind the header, the ring engine's slots and the
   * coop areas (used only by those engines) after them: a ring a sender
   * uses a few KiB of costs that many pages and no more. */
  h->ring_off[0] = ALIGN_UP(sizeof *h, 64);
  h->ring_off[1] = h->ring_off[0] + ring;
  h->slots_off[0] = h->ring_off[1] + ring;
  h->slots_off[1] = h->slots_off[0] + slots;
  h->coop_off[0] = h->slots_off[1] + slots;
  h->coop_off[1] = h->coop_off[0] + coop;
  h->size = ALIGN_UP(h->coop_off[1] + coop, 4096);
  return h->size;
}

static void slots_view(struct bulk_slots *s, uint8_t *base, const struct chan_hdr *h, int dir) {
  s->hdr = (struct bulk_slot *)(base + h->slots_off[dir]);
  s->n = h->nslots;
  s->next = 0;
}

/* Pipes cost two fds per connection on each side and count against the
 * user's pipe-buffer budget (fs.pipe-user-pages-soft, shared with every
 * other pipe of the user): made only when the vmsplice engine may be used,
 * i.e. forced (FMX_BULK=vmsplice) or measured by fmx_tune (FMX_COST_VMSPLICE).
 * They keep the default size, 64 KiB: the chunk the engine moves per call. */
int link_pipes_wanted(void) { return strcmp(fmx_cfg.bulk, "vmsplice") == 0 || fmx_cfg.cost_vmsplice[0] != '\0'; }

int link_pipes_create(struct shm_link *c, int peer_fds[2]) {
  int d0[2], d1[2]; /* direction 0: we write; direction 1: we read */
  if (pipe2(d0, O_CLOEXEC | O_NONBLOCK) < 0) return -errno;
  if (pipe2(d1, O_CLOEXEC | O_NONBLOCK) < 0) {
    int e = errno;
    close(d0[0]);
    close(d0[1]);
    return -e;
  }
  c->bulk.pipe_tx = d0[1];
  c->bulk.pipe_rx = d1[0];
  peer_fds[0] = d0[0];
  peer_fds[1] = d1[1];
  return 0;
}

static int is_pipe_end(int fd, int mode) {
  struct stat st;
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && (fl & O_ACCMODE) == mode && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

int chan_pipes_attach(struct shm_link *c, int rx_fd, int tx_fd) {
  if (!is_pipe_end(rx_fd, O_RDONLY) || !is_pipe_end(tx_fd, O_WRONLY)) return -EPROTO;
  /* The connector made them non-blocking; a peer that did not must not
   * block our progress. */
  if (fcntl(rx_fd, F_SETFL, O_RDONLY | O_NONBLOCK) < 0 || fcntl(tx_fd, F_SETFL, O_WRONLY | O_NONBLOCK) < 0) return -errno;
  c->bulk.pipe_rx = rx_fd;
  c->bulk.pipe_tx = tx_fd;
  return 0;
}

/* Build the local view; `tx_dir` is the direction we send on. */
static int view(struct shm_link *c, const struct chan_hdr *h, int tx_dir, int rx_dir) {
  uint8_t *b = c->base;
  struct chan_hdr *live = c->base;
  uint64_t ring_fp = shm_ring_cells_bytes(h->ring_bytes);
  if (shm_ring_attach(&c->tx, &live->ring[tx_dir], b + h->ring_off[tx_dir], ring_fp) ||
      shm_ring_attach(&c->rx, &live->ring[rx_dir], b + h->ring_off[rx_dir], ring_fp))
    return -EPROTO;
  slots_view(&c->bulk.tx_slots, b, h, tx_dir);
  slots_view(&c->bulk.rx_slots, b, h, rx_dir);
  c->bulk.tx_coop = (struct coop_area *)(b + h->coop_off[tx_dir]);
  c->bulk.rx_coop = (struct coop_area *)(b + h->coop_off[rx_dir]);
  c->tx_abort = &((struct chan_hdr *)b)->abort[tx_dir];
  c->rx_abort = &((struct chan_hdr *)b)->abort[rx_dir];
  shm_box_attach(&c->box, &live->box, tx_dir == 0);
  return 0;
}

static void format(struct shm_link *c) {
  struct chan_hdr *h = c->base;
  for (int d = 0; d < 2; d++) shm_ring_format(&h->ring[d], h->ring_bytes);
}

struct shm_link *link_create(int *fd) {
  struct chan_hdr h;
  size_t size = layout(&h);
  struct shm_link *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  *fd = sys_memfd("fmx-link", size);
  if (*fd < 0) goto fail;
  c->base = sys_map_shared(*fd, size);
  if (!c->base) goto fail_fd;
  c->size = size;
  c->bulk.pipe_tx = c->bulk.pipe_rx = -1;
  memcpy(c->base, &h, sizeof h);
  format(c);
  if (view(c, &h, 0, 1)) goto fail_map;
  return c;
fail_map:
  munmap(c->base, size);
fail_fd:
  close(*fd);
fail:
  free(c);
  return NULL;
}

/* An area of len bytes at off, 64-aligned, past the header and inside a
 * file of size bytes. */
static int area_ok(uint64_t off, uint64_t len, uint64_t size) {
  return off >= sizeof(struct chan_hdr) && off % 64 == 0 && off <= size && len <= size - off;
}

struct shm_link *link_attach(int fd, const char **why) {
  /* Sealed and sized before it is mapped: a peer that could truncate it
   * would make every later access of ours fault (SIGBUS). */
  uint64_t fsize;
  int err = sys_memfd_check(fd, 4096, 1ull << 40, &fsize);
  if (err < 0) {
    *why = sys_memfd_error(err);
    return NULL;
  }
  *why = "a malformed header";
  size_t size = (size_t)fsize;
  struct shm_link *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->base = sys_map_shared(fd, size);
  if (!c->base) {
    free(c);
    return NULL;
  }
  c->size = size;
  c->bulk.pipe_tx = c->bulk.pipe_rx = -1;
  struct chan_hdr h;
  memcpy(&h, c->base, sizeof h); /* one snapshot: the peer may keep writing */
  uint64_t ring_fp = shm_ring_cells_bytes(h.ring_bytes);
  uint64_t slots = h.nslots * sizeof(struct bulk_slot);
  int ok = h.magic == CHAN_MAGIC && h.version == CHAN_VERSION && h.size == size && h.ring_bytes >= 4096 &&
           h.ring_bytes < size && h.nslots >= 1 && h.nslots <= 1024;
  /* Each area inside the file, written so that no sum can wrap: a forged
   * offset near 2^64 once passed `off + len <= size` (fuzz_shared). */
  for (int d = 0; ok && d < 2; d++)
    ok = area_ok(h.ring_off[d], ring_fp, size) && area_ok(h.slots_off[d], slots, size) &&
         area_ok(h.coop_off[d], sizeof(struct coop_area), size);
  if (!ok || view(c, &h, 1, 0)) {
    munmap(c->base, size);
    free(c);
    return NULL;
  }
  /* Our view uses the snapshot's numbers, not the live header. */
  return c;
}

void link_destroy(struct shm_link *c) {
  if (!c) return;
  free(c->lent.pos);
  free(c->lent.buf);
  if (c->bulk.pipe_tx >= 0) close(c->bulk.pipe_tx);
  if (c->bulk.pipe_rx >= 0) close(c->bulk.pipe_rx);
  munmap(c->base, c->size);
  free(c);
}
