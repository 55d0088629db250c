/* SPDX-License-Identifier: MIT */
#include "platform/wake.h"

#include "platform/sys.h"

int ep_asym_fence;

void ep_wake_sleepers(struct ep_desc *d) {
  __atomic_fetch_add(&d->wake_seq, 1, __ATOMIC_SEQ_CST);
  sys_futex_wake(&d->wake_seq);
}
