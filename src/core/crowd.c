/* SPDX-License-Identifier: MIT */
/* Whether ranks outnumber cores (FMX_CROWDED, docs/progress.md): what the
 * endpoint's waits, fmx_idle and the message classes read as pe.crowded,
 * and giving the core away, counted. */
#include <sched.h>
#include <string.h>

#include "base/config.h"
#include "core/fmx_int.h"
#include "platform/sys.h"
#include "platform/topo.h"

void ep_crowd_init(struct fmx_endpoint *ep) {
  ep->crowd_mode = !strcmp(fmx_cfg.crowded, "on")    ? CROWD_ON
                   : !strcmp(fmx_cfg.crowded, "off") ? CROWD_OFF
                                                     : CROWD_AUTO;
  /* FMX_NET_PROGRESS auto reads the load too (core/progress.c). */
  ep->net_mode = !strcmp(fmx_cfg.net_progress, "on")    ? CROWD_ON
                 : !strcmp(fmx_cfg.net_progress, "off") ? CROWD_OFF
                                                        : CROWD_AUTO;
}

/* pe.crowded: 0, or how many tasks share the host's hardware threads when
 * they outnumber them (FMX_CROWDED). auto: the partners on this host in
 * use (ourselves included) outnumber them; or, with partners on other
 * hosts, the kernel's runnable tasks did at the last look (ep_crowd_look),
 * by a quarter of the threads at least (at least one):
 * hosts in network namespaces of one machine share its cores, and nothing
 * else tells a rank that the remote peer it waits for is queued behind it,
 * while a node running one rank per core also runs daemons and our own
 * helper threads now and then (4 ranks on 2 cores: 4 against 3; 64 cores:
 * 80). Partners on other hosts never count themselves: 256 ranks on hosts
 * of 64 cores each are not crowded. Under the lock (the proto layer reads
 * it there; waits read it unlocked). */
void ep_crowd_set(struct fmx_endpoint *ep) {
  int npus = topo_get()->npus > 0 ? topo_get()->npus : 1;
  int n = 0;
  if (ep->crowd_mode == CROWD_ON) {
    n = ep->t.nlive > (uint32_t)npus ? (int)ep->t.nlive : npus + 1;
  } else if (ep->crowd_mode == CROWD_AUTO) {
    uint32_t nremote = __atomic_load_n(&ep->nremote, __ATOMIC_RELAXED), nlocal = ep->t.nlive - nremote;
    if (nlocal > (uint32_t)npus) n = (int)nlocal;
    else if (nremote && ep->runnable >= npus + (npus / 4 > 1 ? npus / 4 : 1)) n = ep->runnable;
  }
  __atomic_store_n(&ep->pe.crowded, n, __ATOMIC_RELAXED);
  ep->t.crowded = n > 0;
}

/* Reading /proc/loadavg costs a few microseconds: once per CROWD_LOOK_NS
 * is 0.05% of a core. */
#define CROWD_LOOK_NS 10000000ull

void ep_crowd_look(struct fmx_endpoint *ep, uint64_t now) {
  if ((ep->crowd_mode != CROWD_AUTO && ep->net_mode != CROWD_AUTO) || !__atomic_load_n(&ep->nremote, __ATOMIC_RELAXED))
    return;
  if (!now) {
    if (__atomic_add_fetch(&ep->crowd_polls, 1, __ATOMIC_RELAXED) & 63) return;
    now = sys_now_ns();
  }
  uint64_t last = __atomic_load_n(&ep->crowd_look_ns, __ATOMIC_RELAXED);
  if (now <= last || now - last < CROWD_LOOK_NS) return; /* a thread's older clock: not time yet */
  if (!__atomic_compare_exchange_n(&ep->crowd_look_ns, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  int runnable = sys_runnable_tasks();
  ep_lock(ep);
  ep->runnable = runnable;
  ep_crowd_set(ep);
  ep_unlock(ep);
}

void ep_give_core(struct fmx_endpoint *ep) {
  __atomic_fetch_add(&ep->counters[CNT_YIELDS], 1, __ATOMIC_RELAXED);
  sched_yield();
}
