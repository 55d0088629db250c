/* SPDX-License-Identifier: MIT */
/*
 * offload: helper threads ("channels") move the bytes of a rendezvous
 * transfer for the application thread (KNEM's kernel-thread mode, the I/OAT
 * asynchronous copy engine). One channel per message, messages dealt to
 * channels round-robin; the channel runs the chosen engine's offload step
 * (receives: cma pulls chunks, ring copies full slots out, coop takes
 * stripes beside receiver and sender; sends: ring fills slots) until the
 * transfer is done, then publishes the outcome in the job's status word,
 * which the application polls, and wakes the endpoint. Idle channels sleep
 * on their condition variable; a job that stalls on its peer goes back
 * behind the others queued on its channel.
 *
 * A channel never takes the endpoint lock and touches only the job, the
 * transfer's segment lists (stable while it runs) and the engine's own
 * shared words. The application detaches a job (cancel, peer
 * death, close) by raising its cancel flag and waiting until the channel
 * lets go, which is at most one step (one chunk) later: no channel write
 * lands in a buffer the user got back; a job not started yet is just taken
 * off its channel's queue.
 *
 * Channel 0, when it has no job, does the idle work the core gave it
 * (offload_set_idle: core/progress.c makes progress on endpoints whose
 * application computes); offload_idle_* let that work sleep where a job
 * queued to channel 0 still wakes it.
 *
 * This file holds the channels: threads, queues, pinning, the idle work.
 * The jobs they run, and the engine table's entry, are offload_job.c's
 * (offload_int.h between the two).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bulk/engine.h"
#include "bulk/offload_int.h"
#include "base/config.h"
#include "base/log.h"
#include "platform/sys.h"

#define MAX_CHANNELS 64

struct offload_chan {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct offload_job *head, *tail;
  struct ep_desc *watching; /* channel 0: the endpoint it sleeps on, or NULL */
  int index;
  int quit; /* offload_shutdown */
};

__thread int offload_in_wait;
__thread int offload_in_channel;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct offload_chan *chans;
static int nchans;
static unsigned next_chan;
static char pool_error[128];
/* Channel 0's work while no job is queued (offload_set_idle). */
static int (*idle_pending)(void);
static void (*idle_run)(void);
static uint64_t (*idle_look)(void);
static void (*thread_init)(void);
static struct offload_chan *chan0; /* set once the pool runs */


/* Waiting on the peer (ring slots it has not filled): yield a while, then
 * sleep on the endpoint's futex as one more sleeper (the peer wakes it per
 * slot), at most 1 ms (a wake may fall before we count ourselves). */
static void wait_peer(struct offload_job *j, unsigned idle) {
  if (idle < 64) {
    sched_yield();
    return;
  }
  struct ep_desc *d = j->wake;
  __atomic_fetch_add(&d->sleepers, 1, __ATOMIC_SEQ_CST);
  uint32_t seq = __atomic_load_n(&d->wake_seq, __ATOMIC_SEQ_CST);
  sys_futex_wait(&d->wake_seq, seq, 1000000);
  __atomic_fetch_sub(&d->sleepers, 1, __ATOMIC_SEQ_CST);
}

/* A stalled job goes back behind the others queued on its channel: jobs
 * depend on each other (a ring receive waits for slots its sender fills only
 * after another transfer's slots are drained by that transfer's job), so one
 * channel running one stalled job to the end could wait forever. 1 if
 * requeued. */
static int requeue(struct offload_chan *c, struct offload_job *j) {
  pthread_mutex_lock(&c->mu);
  int others = c->head != NULL;
  if (others) {
    j->started = 0;
    j->next = NULL;
    c->tail->next = j;
    c->tail = j;
  }
  pthread_mutex_unlock(&c->mu);
  return others;
}

static void run_job(struct offload_chan *c, struct offload_job *j) {
  int rc = BULK_MORE;
  for (unsigned idle = 0; rc == BULK_MORE;) {
    if (__atomic_load_n(&j->cancel, __ATOMIC_ACQUIRE)) {
      rc = -ECANCELED;
      break;
    }
    uint64_t moved = 0;
    rc = j->fn ? j->fn(j->arg, &j->done, &moved) : j->step(j->x, &j->done, &moved);
    j->bytes += moved;
    if (rc == BULK_MORE && !moved) {
      if (idle >= 16 && requeue(c, j)) return;
      wait_peer(j, idle++);
    } else {
      idle = 0;
    }
  }
  __atomic_store_n(&j->status, rc == BULK_DONE ? JOB_DONE : rc, __ATOMIC_RELEASE);
  if (j->wake)
    ep_wake(j->wake);
  else
    sys_futex_wake((uint32_t *)&j->status);
  __atomic_store_n(&j->held, 0, __ATOMIC_RELEASE);
}

/* Sleep on c's condition (c->mu held) until signalled or ns passed. */
static void cond_wait_ns(struct offload_chan *c, uint64_t ns) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)(ns / 1000000000u);
  ts.tv_nsec += (long)(ns % 1000000000u);
  if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
  pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

static void *chan_main(void *arg) {
  struct offload_chan *c = arg;
  offload_in_channel = 1;
  void (*init)(void) = __atomic_load_n(&thread_init, __ATOMIC_ACQUIRE);
  if (init) init();
  for (;;) {
    pthread_mutex_lock(&c->mu);
    while (!c->head) {
      if (c->quit) {
        pthread_mutex_unlock(&c->mu);
        return NULL;
      }
      int (*pending)(void) = __atomic_load_n(&idle_pending, __ATOMIC_ACQUIRE);
      if (c->index == 0 && pending && pending()) {
        pthread_mutex_unlock(&c->mu);
        __atomic_load_n(&idle_run, __ATOMIC_ACQUIRE)();
        pthread_mutex_lock(&c->mu);
        continue;
      }
      uint64_t (*look)(void) = __atomic_load_n(&idle_look, __ATOMIC_ACQUIRE);
      uint64_t ns = c->index == 0 && look ? look() : 0;
      if (ns)
        cond_wait_ns(c, ns); /* idle, but asked to look now and then */
      else
        pthread_cond_wait(&c->cv, &c->mu); /* idle: sleep */
    }
    struct offload_job *j = c->head;
    c->head = j->next;
    if (!c->head) c->tail = NULL;
    j->started = 1;
    pthread_mutex_unlock(&c->mu);
    run_job(c, j);
  }
  return NULL;
}

/* "0-3,8" -> set; 0 on success. */
static int parse_cpus(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  while (*s) {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0 || a >= CPU_SETSIZE) return -EINVAL;
    s = end;
    if (*s == '-') {
      b = strtol(s + 1, &end, 10);
      if (end == s + 1 || b < a || b >= CPU_SETSIZE) return -EINVAL;
      s = end;
    }
    for (long i = a; i <= b; i++) CPU_SET((int)i, set);
    if (*s == ',') s++;
    else if (*s) return -EINVAL;
  }
  return CPU_COUNT(set) ? 0 : -EINVAL;
}

/* The CPUs channels run on: FMX_OFFLOAD_CPUS; else, for an application
 * thread bound to one CPU (the usual MPI binding), every other online CPU:
 * a channel on the application's own core could never overlap it, and the
 * scheduler tends to wake it there; else every online CPU. */
static void chan_cpus(cpu_set_t *set) {
  if (fmx_cfg.offload_cpus[0] && parse_cpus(fmx_cfg.offload_cpus, set) == 0) return;
  if (fmx_cfg.offload_cpus[0])
    log_warn_once("FMX-OFFLOAD-CPUS", "FMX_OFFLOAD_CPUS=%s is no CPU list (want e.g. 2-3,6); the default used",
                  fmx_cfg.offload_cpus);
  cpu_set_t mine;
  CPU_ZERO(&mine);
  int bound = pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0 && CPU_COUNT(&mine) == 1;
  CPU_ZERO(set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < n && i < CPU_SETSIZE; i++)
    if (!bound || !CPU_ISSET((int)i, &mine)) CPU_SET((int)i, set);
  if (CPU_COUNT(set) == 0) *set = mine; /* one CPU in all */
}

/* A forked child inherits the parent's pool but none of its threads: it
 * forgets it and starts its own when it needs one.
 * pool_mu is held across fork so the child finds it consistent. */
static void fork_prepare(void) { pthread_mutex_lock(&pool_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&pool_mu); }
static void fork_child(void) {
  chans = NULL;
  nchans = 0;
  __atomic_store_n(&chan0, NULL, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&pool_mu);
}
static void register_atfork(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* Start the channels (pool_mu held). 0, or -1 with pool_error set. */
static int pool_start(void) {
  int want = (int)fmx_cfg.offload_channels;
  if (want <= 0) {
    snprintf(pool_error, sizeof pool_error, "FMX_OFFLOAD_CHANNELS=0");
    return -ENODEV;
  }
  if (want > MAX_CHANNELS) want = MAX_CHANNELS;
  struct offload_chan *c = calloc((size_t)want, sizeof *c);
  if (!c) {
    snprintf(pool_error, sizeof pool_error, "out of memory");
    return -ENOMEM;
  }
  cpu_set_t cpus;
  chan_cpus(&cpus);
  /* Channels must not take signals meant for the application. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int n = 0, err = 0;
  for (; n < want; n++) {
    c[n].index = n;
    pthread_mutex_init(&c[n].mu, NULL);
    pthread_cond_init(&c[n].cv, NULL);
    int rc = pthread_create(&c[n].th, NULL, chan_main, &c[n]);
    if (rc) {
      err = -rc;
      snprintf(pool_error, sizeof pool_error, "pthread_create: %s", strerror(rc));
      break;
    }
    pthread_setaffinity_np(c[n].th, sizeof cpus, &cpus); /* best effort: a cpuset may forbid it */
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (n == 0) {
    free(c);
    return err;
  }
  chans = c;
  nchans = n;
  __atomic_store_n(&chan0, c, __ATOMIC_RELEASE);
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_atfork);
  return 0;
}

/* The pool, started if it is not (pool_mu held): 0, or -1 (pool_error). */
static int pool_up_locked(void) { return chans ? 0 : pool_start(); }

int offload_probe(char *reason, size_t len) {
  pthread_mutex_lock(&pool_mu);
  int rc = pool_up_locked();
  if (rc == 0)
    snprintf(reason, len, "available (%d channel%s)", nchans, nchans == 1 ? "" : "s");
  else
    snprintf(reason, len, "no channels: %s", pool_error);
  pthread_mutex_unlock(&pool_mu);
  return rc;
}

/* The pool, started if it is not: 0, or -errno. */
int offload_up(void) {
  pthread_mutex_lock(&pool_mu);
  int rc = pool_up_locked();
  pthread_mutex_unlock(&pool_mu);
  return rc;
}

/* The next channel, round robin (the pool started if it is not); NULL
 * when none can run (logged once). */
static struct offload_chan *next_channel(void) {
  pthread_mutex_lock(&pool_mu);
  struct offload_chan *c = pool_up_locked() == 0 ? &chans[next_chan++ % (unsigned)nchans] : NULL;
  if (!c) log_warn_once("FMX-OFFLOAD-NONE", "offload: no channels: %s; the application thread copies", pool_error);
  pthread_mutex_unlock(&pool_mu);
  return c;
}

static void enqueue(struct offload_chan *c, struct offload_job *j) {
  j->chan = c;
  pthread_mutex_lock(&c->mu);
  if (c->tail) c->tail->next = j;
  else c->head = j;
  c->tail = j;
  pthread_cond_signal(&c->cv);
  if (c->watching) ep_wake(c->watching); /* it sleeps on an endpoint, not on cv */
  pthread_mutex_unlock(&c->mu);
}

int offload_post(struct offload_job *j) {
  struct offload_chan *c = next_channel();
  if (!c) return -ENODEV;
  j->held = 1;
  enqueue(c, j);
  return 0;
}

void offload_unqueue(struct offload_job *j) {
  struct offload_chan *c = j->chan;
  pthread_mutex_lock(&c->mu);
  if (!j->started) {
    struct offload_job **pp = &c->head, *prev = NULL;
    while (*pp && *pp != j) prev = *pp, pp = &(*pp)->next;
    if (*pp) {
      *pp = j->next;
      if (c->tail == j) c->tail = prev;
      j->held = 0;
    }
  }
  pthread_mutex_unlock(&c->mu);
}

void offload_shutdown(void) {
  pthread_mutex_lock(&pool_mu);
  struct offload_chan *c = chans;
  int n = nchans;
  chans = NULL;
  nchans = 0;
  __atomic_store_n(&chan0, NULL, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&pool_mu);
  if (!c) return;
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&c[i].mu);
    c[i].quit = 1;
    pthread_cond_signal(&c[i].cv);
    pthread_mutex_unlock(&c[i].mu);
  }
  for (int i = 0; i < n; i++) {
    pthread_join(c[i].th, NULL);
    pthread_mutex_destroy(&c[i].mu);
    pthread_cond_destroy(&c[i].cv);
  }
  free(c);
}

/* ---- channel 0's idle work ------------------------------------------- */

void offload_kick(void) {
  struct offload_chan *c = __atomic_load_n(&chan0, __ATOMIC_ACQUIRE);
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

void offload_set_idle(int (*pending)(void), void (*run)(void), uint64_t (*look)(void), void (*init)(void)) {
  __atomic_store_n(&thread_init, init, __ATOMIC_RELEASE);
  __atomic_store_n(&idle_look, look, __ATOMIC_RELEASE);
  __atomic_store_n(&idle_run, run, __ATOMIC_RELEASE);
  __atomic_store_n(&idle_pending, pending, __ATOMIC_RELEASE);
}

void offload_idle_nap(int (*still)(void *), void *arg, uint64_t ns) {
  struct offload_chan *c = __atomic_load_n(&chan0, __ATOMIC_ACQUIRE);
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  if (!c->head && still(arg)) cond_wait_ns(c, ns);
  pthread_mutex_unlock(&c->mu);
}

int offload_idle_watch(struct ep_desc *d) {
  struct offload_chan *c = __atomic_load_n(&chan0, __ATOMIC_ACQUIRE);
  if (!c) return 1;
  pthread_mutex_lock(&c->mu);
  c->watching = d;
  int queued = c->head != NULL;
  pthread_mutex_unlock(&c->mu);
  return queued;
}

void offload_idle_done(void) {
  struct offload_chan *c = __atomic_load_n(&chan0, __ATOMIC_ACQUIRE);
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  c->watching = NULL;
  pthread_mutex_unlock(&c->mu);
}

void offload_idle_leave(struct ep_desc *d) {
  struct offload_chan *c = __atomic_load_n(&chan0, __ATOMIC_ACQUIRE);
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  if (c->watching == d) ep_wake(d); /* asleep on it: go elsewhere */
  pthread_mutex_unlock(&c->mu);
}
