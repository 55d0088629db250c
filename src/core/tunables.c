/* SPDX-License-Identifier: MIT */
/* The tunables' defaults that follow this machine: the core derives them
 * from the topology and hands them to the table (base/config_table.c), which
 * sits below every layer and knows no topology. */
#include "core/tunables.h"

#include <string.h>

#include "base/config.h"
#include "platform/copy.h"
#include "platform/sys.h"
#include "platform/topo.h"

/* One core's share of the last-level cache (L3, else L2); 0: none known. */
static uint64_t llc_share(const struct topo_info *t) {
  const struct topo_cache_info *llc = t->l3.size ? &t->l3 : &t->l2;
  return llc->size / (uint64_t)(llc->nshare > 0 ? llc->nshare : 1);
}

/* Half the cache share of one core, where the guest can know it. Two
 * switches follow it: a destination larger than it evicts its own first
 * lines before the reader comes (non-temporal stores then save the
 * read-for-ownership and spare the cache, platform/copy.h), and a message
 * larger than it no longer stays in cache, so a channel on another core
 * costs nothing the cache would have saved (the KNEM paper's offload
 * switch). Not in a VM: there the L3 is the host's, shared with cores the
 * guest cannot see (the Xeon VM of 2026-11-27: 480 MiB "shared by" 2 CPUs
 * gave NT from 120 MiB, while regular stores fell from 32 MiB; and the
 * offload switch at 120 MiB left 16 and 64 MiB to adapt's tries, whose
 * rounds cost their short runs 15-25%); the table's defaults stand until
 * fmx_tune measures them. */
uint64_t tunables_llc_half(const struct topo_info *t) { return t->virtualized ? 0 : llc_share(t) / 2; }

/* Defaults that follow the cache topology instead of a magic number
 * (measurements behind them: docs/tuning.md):
 *  - rendezvous threshold = one L2: below it the eager class, in fragments
 *    (FMX_EAGER_FRAG) from one page up, beat every bulk engine 1.1-1.7x here
 *    (no round trip, both copies overlap), at one L2 they are even;
 *  - a connection's ring = one L2 per direction: 512K moved medium messages
 *    1.2-2x faster than 128K, 256K, 2M or 8M in ping-pong (a ring shorter
 *    than L2 hands the sender lines still in the receiver's cache: 64 KiB
 *    ping-pong about 0.95x of a 1M ring through 256K, 0.89x through pool
 *    buffers reused at once, 2026-11-24). A sender uses L2 / (peers x ranks per core) of it, so a rank's
 *    rings together take one L2 (docs/protocol.md, "Memory");
 *  - at least an eighth of the L1 data cache (FMX_RING_MIN, 4K at least:
 *    64 one-cell records, msgrate's window); 6K and 12K moved 8 B to 4 KiB
 *    messages at the same rate here;
 *  - the pool holds one L2 of medium fragments, what the eager ring held
 *    when it was one L2 per connection (512K moved medium messages 1.2-2x
 *    faster than 128K, 256K, 2M or 8M in ping-pong);
 *  - a fragment of a medium message is a quarter of the L1 data cache: the
 *    receiver's copy-out of one (its ring lines and the user's lines it
 *    fills) takes half the L1, and the next one comes in beside it. It is
 *    also the longest message sent as one record, whose two copies do not
 *    overlap: with half the L1d (24K on the Xeon VM of 2026-11-27) 16 KiB
 *    and 24 KiB ping-pong took 2.06 and 3.05 us, as one record each, against
 *    1.65 and 2.10 in fragments (8K, 16K and 32K were even on the EPYC VM
 *    for longer messages);
 *  - the ring engine's slots together take one L2 (8 x 64K beat 4 x 64K
 *    1.05-1.4x from 64K to 16M). */
static void derive_from_topology(void) {
  const struct topo_info *t = topo_get();
  if (t->l1.size) {
    uint64_t frag = t->l1.size / 4;
    if (frag < 4096) frag = 4096;
    config_set_derived("FMX_EAGER_FRAG", frag, "topology");
    uint64_t ring = t->l1.size / 8;
    if (ring < 4096) ring = 4096;
    config_set_derived("FMX_RING_MIN", ring, "topology");
  }
  if (t->l2.size) {
    uint64_t thr = t->l2.size;
    if (thr < 64 * 1024) thr = 64 * 1024;
    if (thr > 1024 * 1024) thr = 1024 * 1024;
    config_set_derived("FMX_RNDV_THRESHOLD", thr, "topology");
    config_set_derived("FMX_RING_SIZE", thr, "topology");
    /* A copy that fits in L2 is done by the caller before a channel on
     * another core would have woken and pulled the lines over, and its
     * destination stays in the caller's cache (docs/copy.md). */
    config_set_derived("FMX_COPY_ASYNC_THRESHOLD", thr, "topology");
    config_set_derived("FMX_COOP_HELP_MIN", t->l2.size, "topology");
    uint64_t bufs = t->l2.size / (fmx_cfg.eager_frag ? fmx_cfg.eager_frag : 4096);
    config_set_derived("FMX_POOL_BUFFERS", bufs < 4 ? 4 : bufs > 65536 ? 65536 : bufs, "topology");
    uint64_t slot = t->l2.size / (fmx_cfg.bulk_slots ? fmx_cfg.bulk_slots : 8);
    if (slot < 64 * 1024) slot = 64 * 1024;
    slot &= ~(uint64_t)4095;
    config_set_derived("FMX_BULK_SLOT_SIZE", slot, "topology");
  }
  uint64_t half = tunables_llc_half(t);
  if (half) {
    config_set_derived("FMX_COPY_NT_THRESHOLD", half, "topology");
    config_set_derived("FMX_OFFLOAD_THRESHOLD", half, "topology");
  }
}

/* Defaults measured on this core: whether its rep movsb stalls on 4K
 * aliasing (platform/copy.c; docs/tuning.md, "4K aliasing"). */
static void derive(void) {
  derive_from_topology();
  /* Not timed when the user set it: the probe is start-up time. */
  const char *src = config_source("FMX_COPY_ALIAS");
  if (src && strcmp(src, "default") == 0)
    config_set_derived("FMX_COPY_ALIAS", (uint64_t)copy_alias_measure(), "measured");
}

void tunables_load(void) {
  config_set_deriver(derive);
  config_load();
  copy_alias_set(fmx_cfg.copy_alias);
  sys_alloc_fail_set(fmx_cfg.fault_alloc); /* counted from fmx_init */
}
