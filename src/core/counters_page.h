/* SPDX-License-Identifier: MIT */
/* An endpoint's counters, published: a sealed memfd page named
 * "fmx-counters" that the endpoint writes its counters into and keeps open,
 * so that fmx_counters --pid reads a running job's counters through
 * /proc/PID/fd (the kernel lets the same user and root in, nobody else).
 * Nothing is left behind when the process dies. */
#ifndef FMX_CORE_COUNTERS_PAGE_H
#define FMX_CORE_COUNTERS_PAGE_H

#include <stddef.h>
#include <stdint.h>

#define COUNTERS_PAGE_NAME "fmx-counters"
#define COUNTERS_PAGE_MAGIC 0x31305443584d4621ull /* "!FMXCT01" */
#define COUNTERS_PAGE_MAX 4096                    /* counters a reader accepts */

enum counters_page_state { CPAGE_OPENING = 0, CPAGE_OPEN = 1, CPAGE_CLOSED = 2 };

/* 64 bytes, host byte order (writer and reader share the host); the
 * values follow. */
struct counters_page {
  uint64_t magic;
  uint32_t header_size; /* sizeof(struct counters_page) */
  uint32_t count;       /* values after the header */
  uint64_t layout;      /* counters_layout(): which counter is which */
  uint64_t nic;
  uint32_t board, eid;
  uint32_t pid, uid;
  uint64_t opened_ns; /* CLOCK_REALTIME */
  uint32_t state;     /* enum counters_page_state, written last at open */
  uint32_t pad;
  uint64_t values[];
};
_Static_assert(sizeof(struct counters_page) == 64, "counters page header is 64 bytes");

/* A hash of the counter labels in order: a reader of another build
 * refuses a page whose layout differs from its own. */
uint64_t counters_layout(void);

/* A reader's check of a page header (core/counters_peek.c); see there. */
struct fmx_counters_source;
int counters_page_judge(const void *hdr, size_t hdr_len, uint64_t size, int32_t pid,
                        struct fmx_counters_source *src);

struct fmx_endpoint;
/* Give ep a published page (FMX_COUNTERS_PAGE on), else its own array.
 * ep->counters points at the values either way. */
void counters_page_open(struct fmx_endpoint *ep);
/* Fill in who the endpoint is, once it has its id; readers see it from now. */
void counters_page_ready(struct fmx_endpoint *ep);
void counters_page_close(struct fmx_endpoint *ep);

#endif
