/* SPDX-License-Identifier: MIT */
/*
 * Progress while the application computes. A rendezvous is only matched
 * (an RTS, a CTS) when someone makes progress on the endpoint. While an
 * endpoint has large receives posted or large sends waiting for their CTS
 * (progress_watch), offload channel 0, when it has no job, sleeps on that
 * endpoint's futex as one more sleeper and, woken, makes progress on it
 * (trylock: never waits for the application; never while an application
 * thread waits in it), so a transfer starts while the application
 * computes. Whoever is idle moves the bytes: what the application matches
 * outside a wait is deferred (progress_defer) and handed to a channel
 * (offload_start) only once the application has been away for AWAY_NS.
 *
 * A message pulled from another host (or by one) moves only when someone
 * makes progress too: the receiver asks for each block as the last comes,
 * the sender answers, both ack. Such receives and sends stay watched until
 * they complete (FMX_NET_PROGRESS), and channel 0, finding the application
 * away, sleeps in ppoll on the net socket instead of the futex, so a
 * packet wakes it (net_watch).
 *
 * The channels (bulk/offload.c) only run copy jobs; this is the idle work
 * the core gives channel 0 (offload_set_idle).
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "base/config.h"
#include "bulk/engine.h"
#include "core/fmx_int.h"
#include "core/transport.h"
#include "platform/sys.h"
#include "platform/topo.h"

/* A gap longer than a small message's round trip (0.3-1 us here, more in a
 * VM): an application that left fmx_wait this long ago is doing something
 * else; one that left just now is about to call again (a ping-pong between
 * its waits) and matches itself. */
#define AWAY_NS 10000

static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct list_node watched = {&watched, &watched}; /* endpoints with nwatch > 0 */
static int nwatched;

static int idle_pending(void) { return __atomic_load_n(&nwatched, __ATOMIC_ACQUIRE) != 0; }
static void idle_run(void);

/* Kicks for nothing. Woken as a watch begins or a watched wait ends,
 * channel 0 naps AWAY_NS and finds the application back in a wait (a
 * ping-pong or an exchange of large messages): two context switches on a
 * core a rank needs, and a futex wake in the rank's call, for nothing
 * (8 MiB ping-pong on 2 cores: 15 switches per round trip and 735-760 us,
 * against 0.3 and 660-666 us with FMX_OFFLOAD=off). Each time channel 0
 * finds the application in a wait without having found it away since the
 * last, the run of kicks skipped doubles (up to 2^KICK_SKIP_MAX - 1 of
 * each 2^KICK_SKIP_MAX), and channel 0 then looks on its own every
 * SKIP_LOOK_NS. Kicking starts again as soon as the application is seen
 * away: by channel 0, or by the application itself when it enters a wait
 * AWAY_NS or more after its last visit (it posted, then computed: the
 * overlap channel 0 is there for). Channel 0 only ever helps (the
 * application progresses itself in its waits): a skipped kick can cost
 * overlap, never progress. */
#define KICK_SKIP_MAX 6
#define SKIP_LOOK_NS 10000000
static unsigned kick_skip_log, kicks;

void progress_kick(struct fmx_endpoint *ep) {
  unsigned n = __atomic_load_n(&kick_skip_log, __ATOMIC_RELAXED);
  if (n && (__atomic_add_fetch(&kicks, 1, __ATOMIC_RELAXED) & ((1u << n) - 1))) {
    __atomic_fetch_add(&ep->counters[CNT_KICKS_SKIPPED], 1, __ATOMIC_RELAXED);
    return;
  }
  __atomic_fetch_add(&ep->counters[CNT_KICKS], 1, __ATOMIC_RELAXED);
  offload_kick();
}

/* The application enters a wait on ep with something watched: if it was
 * away since its last visit (a post's return, a wait's end) for AWAY_NS or
 * more, a kick would have found it away: kick again from now on. */
void progress_wait_begins(struct fmx_endpoint *ep) {
  if (!__atomic_load_n(&kick_skip_log, __ATOMIC_RELAXED)) return;
  uint64_t left = __atomic_load_n(&ep->wait_left_ns, __ATOMIC_RELAXED);
  uint64_t posted = __atomic_load_n(&ep->post_left_ns, __ATOMIC_RELAXED);
  if (posted > left) left = posted;
  if (sys_now_ns() - left >= AWAY_NS) __atomic_store_n(&kick_skip_log, 0u, __ATOMIC_RELAXED);
}

/* Channel 0 has nothing watched to look at. While kicks are skipped, the
 * one that would bring it back (a large receive posted, then computation)
 * may be skipped too: it looks every SKIP_LOOK_NS. Twice with nothing
 * watched, and the application no longer moves large messages: kick
 * again, and sleep until kicked. Channel 0's only. */
static int empty_looks;
static uint64_t idle_look(void) {
  if (!__atomic_load_n(&kick_skip_log, __ATOMIC_RELAXED)) return 0;
  if (++empty_looks <= 2) return SKIP_LOOK_NS;
  empty_looks = 0;
  __atomic_store_n(&kick_skip_log, 0u, __ATOMIC_RELAXED);
  return 0;
}

/* Channel 0's look at a watched endpoint found the application: 0 about
 * (just left fmx), 1 in a wait, 2 away. Found in a wait with no look
 * finding it away since it was last found in one: the kicks meanwhile were
 * for nothing. (After channel 0 took a transfer from an application away,
 * the application comes back to wait for it: that wait is no sign.) */
static int away_since_wait; /* channel 0's */
static void kick_outcome(int found) {
  empty_looks = 0;
  unsigned n = __atomic_load_n(&kick_skip_log, __ATOMIC_RELAXED);
  if (found == 2) {
    if (n) __atomic_store_n(&kick_skip_log, 0u, __ATOMIC_RELAXED);
    away_since_wait = 1;
  } else if (found == 1) {
    if (!away_since_wait && n < KICK_SKIP_MAX) __atomic_store_n(&kick_skip_log, n + 1, __ATOMIC_RELAXED);
    away_since_wait = 0;
  }
}

/* A forked child has no channel: it forgets what the parent watched. */
static void fork_prepare(void) { pthread_mutex_lock(&watch_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&watch_mu); }
static void fork_child(void) {
  list_init(&watched);
  nwatched = 0;
  kick_skip_log = 0; /* its channel 0 starts afresh */
  empty_looks = away_since_wait = 0;
  pthread_mutex_unlock(&watch_mu);
}

static void setup(void) {
  offload_set_idle(idle_pending, idle_run, idle_look, ep_lock_library_thread);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Whether a posted receive of len bytes may end up offloaded. */
static int may_offload(uint64_t len) {
  if (len < fmx_cfg.rndv_threshold) return 0; /* eager: nothing to offload (every post asks) */
  if (fmx_cfg.offload_channels == 0 || strcmp(fmx_cfg.offload, "off") == 0) return 0;
  if (strcmp(fmx_cfg.bulk, "offload") == 0 || strcmp(fmx_cfg.offload, "on") == 0) return len >= fmx_cfg.rndv_threshold;
  if (strcmp(fmx_cfg.bulk, "auto") != 0) return 0;
  if (fmx_cfg.cost_offload[0]) return len >= fmx_cfg.rndv_threshold; /* the costs decide per message */
  return len >= fmx_cfg.offload_threshold;
}

/* The channels, started if they are not, and channel 0 given its idle
 * work: 0, or -errno (no channels). */
static int channels_up(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, setup);
  return offload_up();
}

/* Count r in ep->nwatch (ep->lock held, the channels running); the first
 * puts the endpoint on the list and tells channel 0. The application is in
 * fmx right now: that counts as its last visit (wait_left_ns). */
static void watch(struct fmx_endpoint *ep, struct fmx_request *r, int net) {
  r->flags |= REQ_F_WATCHED;
  if (net) {
    r->flags |= REQ_F_NETWATCH;
    __atomic_add_fetch(&ep->nnetwatch, 1, __ATOMIC_RELAXED);
  }
  if (__atomic_fetch_add(&ep->nwatch, 1, __ATOMIC_RELAXED)) return;
  __atomic_store_n(&ep->wait_left_ns, sys_now_ns(), __ATOMIC_RELAXED);
  pthread_mutex_lock(&watch_mu);
  list_add_tail(&watched, &ep->watch_node);
  __atomic_add_fetch(&nwatched, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&watch_mu);
  progress_kick(ep);
}

/* Whether r is a message pulled across hosts that channel 0 should move
 * while the application computes: at least the net's pull size, with a
 * partner on another host (a receive from anyone: the endpoint has some),
 * and FMX_NET_PROGRESS on, or auto while a hardware thread is free: the
 * kernel's runnable tasks at the last look (ep_crowd_look) fewer than the
 * threads. Where none is free, channel 0 takes the
 * core of the rank it serves at every packet (LAMMPS on 2 namespaced
 * hosts on 2 cores: 2.8-3.1 s against 2.6 s; 8 hosts: 11.6-12.2 s
 * against 3.7-3.8 s; docs/progress.md). ep->lock held. */
static int net_watch(struct fmx_endpoint *ep, const struct fmx_request *r) {
  uint64_t min = ep->t.pull_min;
  if (!min || r->m.len < min || !__atomic_load_n(&ep->nremote, __ATOMIC_RELAXED)) return 0;
  if (ep->net_mode != CROWD_AUTO) return ep->net_mode == CROWD_ON;
  int npus = topo_get()->npus > 0 ? topo_get()->npus : 1;
  return !ep->pe.crowded && ep->runnable > 0 && ep->runnable < npus;
}

void progress_watch(struct fmx_endpoint *ep, struct fmx_request *r) {
  /* The partner: matched, or the one a receive names (NULL: any). */
  const struct partner *p = r->m.partner ? r->m.partner : r->m.from;
  int net = (!p || p->pp.tp->remote) && net_watch(ep, r);
  int want = net || (!(p && p->pp.tp->remote) && may_offload(r->m.len));
  /* Watched already, but no longer for the same reason: counted afresh. */
  if (!want || ((r->flags & REQ_F_WATCHED) && !(r->flags & REQ_F_NETWATCH) != !net))
    progress_unwatch(ep, r); /* a receive watched when posted, matched here or with no need of channel 0 */
  if (want && !(r->flags & REQ_F_WATCHED) && channels_up() == 0) watch(ep, r, net);
}

static void unlist(struct fmx_endpoint *ep) {
  pthread_mutex_lock(&watch_mu);
  if (list_linked(&ep->watch_node)) {
    list_del(&ep->watch_node);
    __atomic_sub_fetch(&nwatched, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&watch_mu);
  offload_idle_leave(ep->pe.benv.desc);
}

void progress_defer(struct fmx_endpoint *ep, struct fmx_request *r) {
  if (channels_up() != 0) return;
  r->m.flags |= MSG_F_DEFERRED;
  watch(ep, r, 0);
}

void progress_send_cts(struct fmx_endpoint *ep, struct fmx_request *s) {
  if (s->m.partner && s->m.partner->pp.tp->remote) return; /* pulled: watched until done */
  progress_unwatch(ep, s);
  struct bulk_xfer *x = &s->m.xfer;
  if (!x->engine->offload_send_step || x->peer->is_self) return;
  if (strcmp(fmx_cfg.bulk, "offload") == 0 || strcmp(fmx_cfg.offload, "on") == 0)
    offload_start(x);
  else if (!offload_in_wait && may_offload(x->want))
    progress_defer(ep, s);
}

void progress_unwatch(struct fmx_endpoint *ep, struct fmx_request *r) {
  if (!(r->flags & REQ_F_WATCHED)) return;
  if (r->flags & REQ_F_NETWATCH) __atomic_sub_fetch(&ep->nnetwatch, 1, __ATOMIC_RELAXED);
  r->flags &= (uint8_t)~(REQ_F_WATCHED | REQ_F_NETWATCH);
  if (__atomic_sub_fetch(&ep->nwatch, 1, __ATOMIC_RELAXED) == 0) unlist(ep);
}

void progress_forget_ep(struct fmx_endpoint *ep) {
  /* Under the list's lock: unlisting a neighbour rewrites our links. */
  pthread_mutex_lock(&watch_mu);
  int listed_ever = ep->watch_node.next != NULL;
  pthread_mutex_unlock(&watch_mu);
  if (!listed_ever) return; /* never initialised: nothing listed */
  unlist(ep);
  /* Channel 0 may be asleep on it or in its progress: wake it, wait. */
  while (__atomic_load_n(&ep->watch_refs, __ATOMIC_ACQUIRE)) {
    ep_wake(ep->pe.benv.desc);
    sched_yield();
  }
}

/* Deferred transfers (ep->lock held): the application is away, a channel
 * takes over from where it got. */
static void hand_over(struct fmx_endpoint *ep) {
  struct list_node *pos, *tmp;
  list_for_each_safe(pos, tmp, &ep->pe.bulk) {
    struct proto_msg *m = list_entry(pos, struct proto_msg, bnode);
    if (!(m->flags & MSG_F_DEFERRED) || m->xfer.job) continue;
    m->flags &= (uint8_t)~MSG_F_DEFERRED;
    progress_unwatch(ep, req_of(m));
    offload_start(&m->xfer);
  }
}

/* Whether the application has stayed out of its waits for AWAY_NS as
 * channel 0 saw it (called by channel 0 alone): ep_wait's sign of life
 * unchanged and even (no thread inside) since channel 0 first saw that
 * value AWAY_NS ago, and the last counted wait left that long ago. A
 * thread inside ep_wait is counted in nwaiting only after its first poll,
 * and wait_left_ns is stamped only while something is watched: with
 * those alone, a rank preempted between its wait's start and first poll
 * looked away, as did one whose last wait ended its watch, and channel 0
 * took its rendezvous (8 MiB ping-pong on 2 cores: 10-17 of 92 transfers,
 * 826-896 us against 650-673 with FMX_OFFLOAD=off). */
static int app_away(struct fmx_endpoint *ep, uint64_t now) {
  uint32_t g = __atomic_load_n(&ep->wait_gen, __ATOMIC_RELAXED);
  if (g != ep->idle_seen_gen) {
    ep->idle_seen_gen = g;
    ep->idle_seen_ns = now;
    return 0;
  }
  return !(g & 1) && now - ep->idle_seen_ns >= AWAY_NS &&
         now - __atomic_load_n(&ep->wait_left_ns, __ATOMIC_RELAXED) >= AWAY_NS;
}

/* Progress on a watched endpoint, unless the application is in it or just
 * left it: 1 if done (or not needed), 0 if it should be tried again soon.
 * fd (when not NULL): the net socket to sleep on next (its timers within
 * *cap ns), left -1 unless something watched is pulled across hosts. */
static int try_progress(struct fmx_endpoint *ep, int *fd, uint64_t *cap) {
  if (__atomic_load_n(&ep->nwaiting, __ATOMIC_RELAXED)) return 1; /* it waits: it progresses itself */
  if (!app_away(ep, sys_now_ns())) return 0;
  if (ep_trylock(ep) != 0) return 0;
  if (__atomic_load_n(&ep->nwatch, __ATOMIC_RELAXED) && !ep->t.closing) {
    hand_over(ep);
    ep_progress_locked(ep);
    hand_over(ep); /* what that progress matched */
    if (fd && __atomic_load_n(&ep->nnetwatch, __ATOMIC_RELAXED)) *fd = transports_wait_fd(ep, cap);
  }
  ep_unlock(ep);
  return 1;
}

/* Channel 0's sleep on a net socket: until a packet arrives, the net's
 * next timer, or NET_NAP_NS (a wake through the futex, a job queued to
 * channel 0 or the endpoint closing, is seen within it). The socket is
 * the endpoint's until progress_forget_ep, which waits for us. */
#define NET_NAP_NS 1000000ull
static void net_nap(int fd, uint64_t cap, uint64_t most) {
  uint64_t ns = cap < most ? cap : most;
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ns};
  ppoll(&pfd, 1, &ts, NULL);
}

static int app_waits(void *arg) {
  struct fmx_endpoint *ep = arg;
  return __atomic_load_n(&ep->nwaiting, __ATOMIC_RELAXED) != 0;
}

static int app_about(void *arg) { return !app_away(arg, sys_now_ns()); }

/* Channel 0, idle: sleep on the first watched endpoint (rotating), then
 * make progress on it. */
static void idle_run(void) {
  pthread_mutex_lock(&watch_mu);
  if (list_empty(&watched)) {
    pthread_mutex_unlock(&watch_mu);
    return;
  }
  struct fmx_endpoint *ep = list_entry(watched.next, struct fmx_endpoint, watch_node);
  list_del(&ep->watch_node); /* to the back: several endpoints take turns */
  list_add_tail(&watched, &ep->watch_node);
  int several = watched.next->next != &watched;
  __atomic_add_fetch(&ep->watch_refs, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&watch_mu);
  struct ep_desc *d = ep->pe.benv.desc;
  if (app_waits(ep)) {
    /* The application waits in it and progresses itself: do not sleep on
     * its futex (every slot a peer fills would wake us) but on channel 0's
     * own, until it leaves the wait (offload_kick) or a job comes. */
    kick_outcome(1);
    offload_idle_nap(app_waits, ep, __atomic_load_n(&kick_skip_log, __ATOMIC_RELAXED) ? SKIP_LOOK_NS : 100000000);
    __atomic_sub_fetch(&ep->watch_refs, 1, __ATOMIC_ACQ_REL);
    return;
  }
  if (!app_away(ep, sys_now_ns())) {
    /* It is about, between two calls (a ping-pong posts and waits again):
     * nap on channel 0's own futex, not as a sleeper on its endpoint, whose
     * every record or filled slot from a peer would wake us onto a core a
     * rank needs. */
    kick_outcome(0);
    offload_idle_nap(app_about, ep, AWAY_NS);
    __atomic_sub_fetch(&ep->watch_refs, 1, __ATOMIC_ACQ_REL);
    return;
  }
  kick_outcome(2);
  int queued = offload_idle_watch(d);
  __atomic_fetch_add(&d->sleepers, 1, __ATOMIC_SEQ_CST);
  uint32_t seq = __atomic_load_n(&d->wake_seq, __ATOMIC_SEQ_CST);
  if (ep_asym_fence) sys_membarrier_global(); /* as ep_wait: wakers skip their fence */
  int fd = -1;
  uint64_t cap = UINT64_MAX;
  int progressed = try_progress(ep, &fd, &cap);
  /* Asleep until a record arrives (or a job is queued to us, or the
   * endpoint closes); a short nap when several endpoints take turns, and
   * just AWAY_NS when the application held the lock or just left a wait.
   * With partners on another host, until a packet comes (net_nap). */
  if (!queued && __atomic_load_n(&d->wake_seq, __ATOMIC_SEQ_CST) == seq) {
    if (fd >= 0) {
      net_nap(fd, cap, !progressed ? AWAY_NS : NET_NAP_NS);
      __atomic_fetch_add(&ep->counters[CNT_NET_NAPS], 1, __ATOMIC_RELAXED);
    } else {
      sys_futex_wait(&d->wake_seq, seq, !progressed ? AWAY_NS : several ? 1000000 : 100000000);
    }
  }
  __atomic_fetch_sub(&d->sleepers, 1, __ATOMIC_SEQ_CST);
  try_progress(ep, NULL, NULL);
  offload_idle_done();
  __atomic_sub_fetch(&ep->watch_refs, 1, __ATOMIC_ACQ_REL);
}
