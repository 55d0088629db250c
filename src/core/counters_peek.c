/* SPDX-License-Identifier: MIT */
/* fmx_counters_list / fmx_counters_read: other processes' counters pages
 * (core/counters_page.h), reached through /proc/PID/fd. The kernel decides
 * who may open them (the same user, or root). A page is read with pread
 * into our own memory, never mapped: root reading a hostile user's "page"
 * must not fault or block on it, so only a sealed tmpfs memfd of a bounded
 * size is read, and every field is checked before it is used. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/counters_page.h"
#include "fmx.h"
#include "platform/sys.h"

#define API __attribute__((visibility("default")))
#define LINK_NAME "/memfd:" COUNTERS_PAGE_NAME " (deleted)"

/* Open (pid, fd)'s page: a negative errno, or a descriptor whose size is
 * in *size. */
static int page_open(int32_t pid, int32_t fd, uint64_t *size, uint32_t *uid) {
  char path[64];
  struct statfs sfs;
  struct stat st;
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)fd);
  int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f < 0) return -errno;
  int r = 0;
  if (fstatfs(f, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC || fstat(f, &st) < 0)
    r = -EBADF;
  else
    r = sys_memfd_check(f, sizeof(struct counters_page),
                        sizeof(struct counters_page) + COUNTERS_PAGE_MAX * sizeof(uint64_t), size);
  if (r < 0) {
    close(f);
    return r == -ENOENT ? -EBADF : r;
  }
  *uid = (uint32_t)st.st_uid;
  return f;
}

/* Judge a page's first bytes (hdr, hdr_len of them; the file is `size`
 * bytes): 1 and *src filled (its state says whether it is usable), or 0
 * for a page to pass over (not open yet, closed, or a forked child's copy
 * of its parent's). Only what the header says is read, each field checked
 * before it is used (fuzz_counters). */
int counters_page_judge(const void *hdr, size_t hdr_len, uint64_t size, int32_t pid, fmx_counters_source_t *src) {
  struct counters_page h;
  int32_t fd = src->fd;
  uint32_t uid = src->uid;
  memset(src, 0, sizeof *src);
  src->pid = pid;
  src->fd = fd;
  src->uid = uid;
  if (hdr_len < sizeof h) {
    src->state = FMX_COUNTERS_MALFORMED;
    return 1;
  }
  memcpy(&h, hdr, sizeof h);
  if (h.magic != COUNTERS_PAGE_MAGIC || h.header_size != sizeof h || h.count > COUNTERS_PAGE_MAX ||
      sizeof h + (uint64_t)h.count * sizeof(uint64_t) > size) {
    src->state = FMX_COUNTERS_MALFORMED;
    return 1;
  }
  if (h.state != CPAGE_OPEN || h.pid != (uint32_t)pid) return 0;
  src->state = h.layout == counters_layout() ? FMX_COUNTERS_OK : FMX_COUNTERS_OTHER_BUILD;
  src->board = h.board;
  src->endpoint_id = h.eid;
  src->count = h.count;
  src->nic_id = h.nic;
  src->opened_ns = h.opened_ns;
  return 1;
}

/* The same for the open page f. */
static int page_judge(int f, uint64_t size, int32_t pid, int32_t fd, uint32_t uid, fmx_counters_source_t *src) {
  struct counters_page h;
  ssize_t n = pread(f, &h, sizeof h, 0);
  src->fd = fd;
  src->uid = uid;
  return counters_page_judge(&h, n < 0 ? 0 : (size_t)n, size, pid, src);
}

/* A /proc directory name that is a number (a pid, a descriptor). */
static int name_num(const char *s, int32_t *num) {
  long v = 0;
  if (!*s) return 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > 0x7fffffff / 10) return 0;
    v = v * 10 + (*s - '0');
  }
  *num = (int32_t)v;
  return 1;
}

/* The pages of one process, counted into *found, the first `max` into out. */
static void scan_pid(int32_t pid, fmx_counters_source_t *out, uint32_t max, uint32_t *found) {
  char path[64], link[sizeof LINK_NAME + 1];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(path); /* fails for processes we may not look into */
  if (!d) return;
  struct dirent *e;
  int32_t fd;
  while ((e = readdir(d))) {
    if (!name_num(e->d_name, &fd)) continue;
    ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof link);
    if (n != (ssize_t)strlen(LINK_NAME) || memcmp(link, LINK_NAME, (size_t)n) != 0) continue;
    uint64_t size;
    uint32_t uid;
    fmx_counters_source_t src;
    int f = page_open(pid, fd, &size, &uid);
    if (f < 0) continue; /* gone since, or not ours */
    int keep = page_judge(f, size, pid, fd, uid, &src);
    close(f);
    if (!keep) continue;
    if (*found < max) out[*found] = src;
    (*found)++;
  }
  closedir(d);
}

static int by_pid_fd(const void *a, const void *b) {
  const fmx_counters_source_t *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return (x->fd > y->fd) - (x->fd < y->fd);
}

API fmx_return_t fmx_counters_list(int32_t pid, fmx_counters_source_t *out, uint32_t max, uint32_t *found) {
  if ((max && !out) || !found || pid < 0) return FMX_BAD_INFO_LENGTH;
  *found = 0;
  if (pid) {
    scan_pid(pid, out, max, found);
  } else {
    DIR *d = opendir("/proc");
    if (!d) return FMX_NO_SYSTEM_RESOURCES;
    struct dirent *e;
    int32_t p;
    while ((e = readdir(d)))
      if (name_num(e->d_name, &p) && p > 0) scan_pid(p, out, max, found);
    closedir(d);
  }
  qsort(out, *found < max ? *found : max, sizeof *out, by_pid_fd);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_counters_read(const fmx_counters_source_t *src, uint64_t *values, uint32_t count) {
  if (!src || (count && !values)) return FMX_BAD_INFO_LENGTH;
  if (src->state != FMX_COUNTERS_OK) return FMX_BAD_INFO_KEY;
  uint64_t size;
  uint32_t uid;
  fmx_counters_source_t now;
  int f = page_open(src->pid, src->fd, &size, &uid);
  if (f == -EACCES || f == -EPERM) return FMX_ACCESS_DENIED;
  if (f < 0) return FMX_BAD_ENDPOINT;
  fmx_return_t rc = FMX_SUCCESS;
  size_t len = (size_t)count * sizeof *values;
  if (!page_judge(f, size, src->pid, src->fd, uid, &now) || now.state != FMX_COUNTERS_OK ||
      now.endpoint_id != src->endpoint_id || now.opened_ns != src->opened_ns || now.nic_id != src->nic_id)
    rc = FMX_BAD_ENDPOINT; /* closed, or the descriptor now holds another endpoint's page */
  else if (count != now.count)
    rc = FMX_BAD_INFO_LENGTH;
  else if (pread(f, values, len, sizeof(struct counters_page)) != (ssize_t)len)
    rc = FMX_BAD_ENDPOINT;
  close(f);
  return rc;
}
