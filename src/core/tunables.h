/* SPDX-License-Identifier: MIT */
#ifndef FMX_CORE_TUNABLES_H
#define FMX_CORE_TUNABLES_H

#include <stdint.h>

/* Load the table of tunables with this machine's derived defaults
 * (topology) and hand the lower layers what they take from it. */
void tunables_load(void);

struct topo_info;
/* The non-temporal copy threshold the topology t gives (half this core's
 * share of the last-level cache), or 0 where it gives none: no cache
 * described, or a VM, whose L3 figure is its host's (docs/tuning.md). */
uint64_t tunables_nt_threshold(const struct topo_info *t);

#endif
