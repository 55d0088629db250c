/* SPDX-License-Identifier: MIT */
/*
 * offload_int.h - between the offload channels (offload.c: the threads,
 * their queues, channel 0's idle work) and the jobs they run
 * (offload_job.c: rendezvous transfers and the asynchronous copy API's
 * copies). A job is filled by its submitter, then posted; from then on the
 * channel owns it until it clears `held`.
 */
#ifndef FMX_BULK_OFFLOAD_INT_H
#define FMX_BULK_OFFLOAD_INT_H
#include <stdint.h>

#define JOB_RUNNING 0
#define JOB_DONE 1

struct bulk_xfer;
struct ep_desc;
struct offload_chan;

struct offload_job {
  struct bulk_xfer *x;
  int (*step)(struct bulk_xfer *x, uint64_t *done, uint64_t *moved);
  /* A job of another kind (offload_submit: the asynchronous copy API):
   * fn(arg, ...) instead of step(x, ...), and no endpoint to wake: the
   * status word itself is the futex its waiter sleeps on. */
  int (*fn)(void *arg, uint64_t *done, uint64_t *moved);
  void *arg;
  struct offload_chan *chan;
  struct ep_desc *wake;     /* the endpoint to wake when done */
  uint64_t done;            /* channel: bytes of the transfer done */
  uint64_t bytes;           /* channel: bytes this channel copied */
  int status;               /* the status word: JOB_RUNNING, JOB_DONE or -fmx_return_t */
  int cancel;               /* application: stop at the next step */
  int held;                 /* the channel may still touch the job */
  int started;              /* taken off the queue (under the channel's lock) */
  struct offload_job *next; /* channel queue */
};

/* Queue the filled job j on the next channel, round robin (the pool
 * started if it is not), held by it: 0, or -ENODEV when no channel runs. */
int offload_post(struct offload_job *j);
/* A job not started yet is taken off its channel's queue and let go (held
 * cleared); one started is left to its channel. */
void offload_unqueue(struct offload_job *j);

#endif /* FMX_BULK_OFFLOAD_INT_H */
