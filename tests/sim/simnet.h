/* SPDX-License-Identifier: MIT */
/*
 * A simulated Ethernet for fmx's net transport: N hosts, each one endpoint
 * of this process (endpoint id = host), on one switch. Every host's link
 * and every switch port has the same rate; a switch port holds at most
 * `buffer` bytes queued and drops the rest at its tail (a shallow port, as
 * tbf makes one on the bridge). Time is virtual: the library's clock
 * (sys_sim_set) is the simulator's, and advances only from one event to
 * the next (a frame's arrival, a timer of an endpoint). One thread, no
 * sockets: the wire (net_wire_force) hands frames to the switch, and the
 * same protocol code that runs on raw frames and UDP runs here.
 *
 * Use: sim_init, then fmx_init and sim_open for every host, then the
 * program posts its calls and calls sim_step until it is done.
 */
#ifndef FMX_SIM_SIMNET_H
#define FMX_SIM_SIMNET_H

#include <stdint.h>

#include "fmx.h"

struct sim_cfg {
  uint32_t hosts;
  uint64_t rate_bps;  /* every link and switch port */
  uint32_t buffer;    /* bytes a switch port queues */
  uint64_t delay_ns;  /* one way, host to host, beside serialisation */
  uint32_t mtu;       /* the interface's */
  uint32_t rcvbuf;    /* bytes a host's socket holds received; more are dropped */
  uint32_t loss_ppm;  /* frames lost at random on the way, per million */
  uint64_t seed;      /* the library's random numbers and the losses (not 0) */
};

#define SIM_QUEUE_STEP 512
#define SIM_QUEUE_BUCKETS 1024

struct sim_stats {
  uint64_t frames, bytes;         /* handed to the switch */
  uint64_t port_drops, sock_drops, lost;
  uint64_t max_queue;             /* the most bytes any port held */
  /* Frames a port took, by the bytes they found queued ahead of them: in
   * steps of SIM_QUEUE_STEP, the last bucket for all beyond. */
  uint64_t queue_hist[SIM_QUEUE_BUCKETS];
  uint64_t steps, progress_calls;
  uint64_t sleeps_out; /* times every waiter slept 10 ms with nothing due: a stall the poll broke */
};

/* The bytes queued ahead that a share q (0..1) of the frames a port took
 * found at most (rounded up to SIM_QUEUE_STEP, at most max_queue; beyond
 * the histogram: its top). */
uint64_t sim_queue_pct(double q);
/* Set up the wire, the board and the clock (before fmx_init): 0, or -1. */
int sim_init(const struct sim_cfg *cfg);
/* Open host h's endpoint (id h, key `key`): FMX_SUCCESS or the error. */
fmx_return_t sim_open(uint32_t h, uint32_t key, fmx_endpoint_t *ep);
/* The NIC id every host's address carries (one board: hosts differ by
 * endpoint id). */
uint64_t sim_nic(void);
/* Host h's packet pool (the bytes of its buffers, out and free) and the
 * partners its net transport counts. */
void sim_memory(uint32_t h, uint64_t *pool_bytes, uint32_t *partners);
/* Virtual now. */
uint64_t sim_now(void);
/* Host h has something to do now (the program posted a call on it). */
void sim_kick(uint32_t h);
/* Host h's program waits on a request (1) or not (0): with nothing else
 * due it looks again after 10 ms, as a waiter that sleeps does. */
void sim_wait(uint32_t h, int on);
/* Deliver what is due, run every host that has frames, a timer due or a
 * kick, then advance the clock to the next event: 1, or 0 when nothing
 * is left to happen (no frame in flight, no timer armed). */
int sim_step(void);
/* fn(h, arg) in place of fmx_progress when host h is run: it makes the
 * pass itself (fmx_test_some does one), tests its requests and posts
 * more; its timer is read again after. */
void sim_set_hook(void (*fn)(uint32_t h, void *arg), void *arg);
const struct sim_stats *sim_stats(void);
/* Close every host and free the switch. */
void sim_fini(void);

#endif
