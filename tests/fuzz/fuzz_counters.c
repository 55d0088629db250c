/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: a counters page as another user may forge it (root's
 * fmx_counters --running reads every user's). The input is a u64 file
 * size, an i32 pid, then the header bytes; counters_page_judge
 * (src/core/counters_peek.c) must accept only a consistent header and
 * never read past what it was given. A crash or a source said usable
 * whose counters would not fit the file is the finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/counters_page.h"
#include "fmx.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t file = 0;
  int32_t pid = 0;
  fuzz_take(&data, &size, &file, sizeof file);
  fuzz_take(&data, &size, &pid, sizeof pid);
  /* The header in memory of its own exact length, so ASan sees any read past it. */
  uint8_t *hdr = malloc(size ? size : 1);
  if (!hdr) return 0;
  memcpy(hdr, data, size);
  fmx_counters_source_t src = {.fd = 3, .uid = 1000};
  int keep = counters_page_judge(hdr, size, file, pid, &src);
  if (keep && src.state == FMX_COUNTERS_OK &&
      (src.count > COUNTERS_PAGE_MAX || sizeof(struct counters_page) + (uint64_t)src.count * 8 > file))
    abort();
  if (keep && (src.pid != pid || src.fd != 3 || src.uid != 1000)) abort();
  free(hdr);
  return 0;
}
