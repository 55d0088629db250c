/* SPDX-License-Identifier: MIT */
#ifndef FMX_CORE_TUNABLES_H
#define FMX_CORE_TUNABLES_H

/* Load the table of tunables with this machine's derived defaults
 * (topology) and hand the lower layers what they take from it. */
void tunables_load(void);

#endif
