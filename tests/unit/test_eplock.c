/* SPDX-License-Identifier: MIT */
/* ep->lock biased to its owner (core/eplock.h): the owner's plain-store
 * path and other threads' mutex path exclude each other. A plain counter
 * bumped in a read-modify-write spread over the critical section (so an
 * overlap loses updates) must end exactly at the sum; a library thread
 * keeps the bias, an application thread other than the owner ends it after
 * a few takes, and a try by another thread fails while the owner is in. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "check.h"
#include "core/eplock.h"

#define OWNER_TAKES 1000000
#define OTHER_TAKES 20000

static struct ep_lock lk;
static volatile uint64_t counter;
static int other_is_library, other_done;
static pthread_barrier_t start;

static void bump(void) {
  uint64_t v = counter;
  for (int i = 0; i < 8; i++) __asm__ volatile("" ::: "memory");
  counter = v + 1;
}

static void *other(void *arg) {
  (void)arg;
  if (other_is_library) ep_lock_library_thread();
  pthread_barrier_wait(&start);
  for (int i = 0; i < OTHER_TAKES; i++) {
    ep_lock_take(&lk);
    bump();
    ep_lock_give(&lk);
  }
  __atomic_store_n(&other_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void run(int library) {
  ep_lock_init(&lk); /* this thread is the owner */
  counter = 0;
  other_is_library = library;
  other_done = 0;
  pthread_barrier_init(&start, NULL, 2);
  int biased = lk.mode == EPL_BIASED;
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, other, NULL), 0);
  pthread_barrier_wait(&start);
  /* for as long as the other runs: their sections overlap in time */
  uint64_t i = 0;
  for (; i < OWNER_TAKES || !__atomic_load_n(&other_done, __ATOMIC_ACQUIRE); i++) {
    ep_lock_take(&lk);
    bump();
    ep_lock_give(&lk);
  }
  CHECK_EQ(pthread_join(t, NULL), 0);
  pthread_barrier_destroy(&start);
  CHECK_EQ(counter, i + OTHER_TAKES);
  printf("owner %llu takes, other %d (%s thread)\n", (unsigned long long)i, OTHER_TAKES,
         library ? "library" : "application");
  /* fmx's own threads never end the bias; a second application thread does */
  if (biased) CHECK_EQ(lk.mode, library ? EPL_BIASED : EPL_OFF);
  ep_lock_fini(&lk);
}

static int try_result;
static void *try_other(void *arg) {
  (void)arg;
  ep_lock_library_thread();
  try_result = ep_lock_try(&lk);
  if (try_result == 0) ep_lock_give(&lk);
  return NULL;
}

int main(void) {
  run(1);
  run(0);
  /* The owner inside: another thread's try is refused, then granted. */
  ep_lock_init(&lk);
  pthread_t t;
  ep_lock_take(&lk);
  CHECK_EQ(pthread_create(&t, NULL, try_other, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK(try_result != 0);
  ep_lock_give(&lk);
  CHECK_EQ(pthread_create(&t, NULL, try_other, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(try_result, 0);
  /* and the owner's own try while nobody holds it */
  CHECK_EQ(ep_lock_try(&lk), 0);
  ep_lock_give(&lk);
  ep_lock_fini(&lk);
  CHECK_DONE("test_eplock");
  return 0;
}
