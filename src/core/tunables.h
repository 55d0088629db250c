/* SPDX-License-Identifier: MIT */
#ifndef FMX_CORE_TUNABLES_H
#define FMX_CORE_TUNABLES_H

#include <stdint.h>

/* Load the table of tunables with this machine's derived defaults
 * (topology) and hand the lower layers what they take from it. */
void tunables_load(void);

struct topo_info;
/* Half this core's share of the last-level cache as the topology t gives
 * it, or 0 where it gives none: no cache described, or a VM, whose L3
 * figure is its host's (docs/tuning.md). The non-temporal copy threshold
 * and the offload switch follow it. */
uint64_t tunables_llc_half(const struct topo_info *t);

#endif
