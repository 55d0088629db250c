/* SPDX-License-Identifier: MIT */
#include "core/counters_page.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "core/fmx_int.h"
#include "platform/sys.h"

#define PAGE_BYTES (sizeof(struct counters_page) + CNT_MAX * sizeof(uint64_t))

uint64_t counters_layout(void) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the labels, '\n' between */
  for (int i = 0; i < CNT_MAX; i++) {
    for (const char *s = counter_labels[i]; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    h = (h ^ '\n') * 0x100000001b3ull;
  }
  return h;
}

void counters_page_open(struct fmx_endpoint *ep) {
  ep->counters = ep->counters_own;
  ep->cpage = NULL;
  ep->cpage_fd = -1;
  if (!fmx_cfg.counters_page) return;
  int fd = sys_memfd(COUNTERS_PAGE_NAME, PAGE_BYTES);
  if (fd < 0) {
    log_warn_once("FMX-CNT-PAGE", "counters not published (fmx_counters --pid cannot see them): memfd: %s",
                  strerror(-fd));
    return;
  }
  struct counters_page *pg = sys_map_shared(fd, PAGE_BYTES);
  if (!pg) {
    close(fd);
    return;
  }
  pg->magic = COUNTERS_PAGE_MAGIC;
  pg->header_size = sizeof *pg;
  pg->count = CNT_MAX;
  pg->layout = counters_layout();
  ep->cpage = pg;
  ep->cpage_fd = fd;
  ep->counters = pg->values;
}

void counters_page_ready(struct fmx_endpoint *ep) {
  struct counters_page *pg = ep->cpage;
  if (!pg) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  pg->nic = ep->t.nic;
  pg->board = ep->t.board;
  pg->eid = ep->t.eid;
  pg->pid = (uint32_t)getpid();
  pg->uid = (uint32_t)geteuid();
  pg->opened_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  atomic_store_explicit((_Atomic uint32_t *)&pg->state, CPAGE_OPEN, memory_order_release);
}

void counters_page_close(struct fmx_endpoint *ep) {
  if (!ep->cpage) return;
  ep->counters = ep->counters_own; /* nothing counts after this, but be safe */
  atomic_store_explicit((_Atomic uint32_t *)&ep->cpage->state, CPAGE_CLOSED, memory_order_release);
  munmap(ep->cpage, PAGE_BYTES);
  close(ep->cpage_fd);
  ep->cpage = NULL;
  ep->cpage_fd = -1;
}
