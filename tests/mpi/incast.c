/* SPDX-License-Identifier: MIT */
/*
 * incast: every rank but 0 sends --msgs messages of --size bytes to rank 0,
 * --window in flight, all at once: the many-to-one pattern that fills the
 * switch port in front of a receiver (a gather, a checkpoint, the root of a
 * reduction of large vectors). Rank 0 keeps --window receives posted per
 * sender and checks every byte.
 *
 *   incast [--size BYTES] [--msgs N] [--window W] [--probe N] [--spin MS] [--pairs] [--hold PATH]
 *          [--hold-start PATH]
 *
 * --pairs: not many to one but pairs: rank n/2+i sends to rank i (n even),
 * every pair at once; across a shared uplink (the senders on one switch,
 * the receivers on another) it is the oversubscription no receiver sees
 * on its own. The line gives all receivers' bytes over the slowest's time.
 *
 * --probe N: the last rank sends nothing large: it times 8-byte ping-pongs
 * with rank 0, 200 us apart (a sporadic short message, not a flood that
 * would take rank 0's core from the bulk), N before the others start
 * (unloaded), then while they send (loaded) until rank 0 has everything,
 * and prints a second JSON line: the half round trips' p50, p99 and max for
 * both (us), and how many of each.
 *
 * --spin MS: each sender first computes MS milliseconds (a busy loop, no
 * MPI call) before it sends: with --probe and a few small messages, the
 * loaded pings then meet ranks that want the cores and no traffic in the
 * port, what the cores alone add to a ping's tail.
 *
 * --hold PATH: once the line is printed, every rank waits (sleeping, a
 * probe for messages every millisecond, about 60 s at most) until PATH exists
 * before it finalizes: the bench and the test
 * read the ranks' endpoint counters meanwhile (fmx_counters --running).
 * --hold-start PATH: first every sender sends 8 bytes to its receiver (the
 * connections are made and a round trip or so measured), then rank 0
 * prints {"app":"incast-start"} and every rank waits as with --hold until
 * PATH exists: the counters read meanwhile are the start's, and what they
 * count after it is the steady state's.
 * Prints one JSON line from rank 0: the senders, the bytes received, the
 * time from the barrier before the first send to rank 0's last completion,
 * the goodput (MB/s, 10^6 bytes) and the bytes that came wrong (0).
 * Exit status: 0 ok, 1 wrong data, 2 usage.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct opts {
  long size;
  int msgs, window, probe, pairs, spin_ms;
  const char *hold, *hold_start;
};

#define PING_TAG 1000001 /* above any message number */

static int parse(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.size = 1 << 20, .msgs = 16, .window = 8};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--pairs") == 0) {
      o->pairs = 1;
      continue;
    }
    if (i + 1 >= argc) return -1;
    if (strcmp(argv[i], "--hold") == 0) {
      o->hold = argv[++i];
      continue;
    }
    if (strcmp(argv[i], "--hold-start") == 0) {
      o->hold_start = argv[++i];
      continue;
    }
    long v = strtol(argv[i + 1], NULL, 0);
    if (strcmp(argv[i], "--size") == 0 && v >= 1 && v <= 256L << 20) o->size = v;
    else if (strcmp(argv[i], "--msgs") == 0 && v >= 1 && v <= 1000000) o->msgs = (int)v;
    else if (strcmp(argv[i], "--window") == 0 && v >= 1 && v <= 64) o->window = (int)v;
    else if (strcmp(argv[i], "--probe") == 0 && v >= 1 && v <= 1000000) o->probe = (int)v;
    else if (strcmp(argv[i], "--spin") == 0 && v >= 1 && v <= 600000) o->spin_ms = (int)v;
    else return -1;
    i++;
  }
  return 0;
}

/* The byte at offset i of message m from rank r. */
static uint8_t pattern(int r, int m, long i) { return (uint8_t)(r * 131 + m * 31 + i * 7 + (i >> 12)); }

static void fill(uint8_t *b, long n, int r, int m) {
  for (long i = 0; i < n; i++) b[i] = pattern(r, m, i);
}

static long check(const uint8_t *b, long n, int r, int m) {
  long bad = 0;
  for (long i = 0; i < n; i++) bad += b[i] != pattern(r, m, i);
  return bad;
}

/* --spin: the core kept busy for ms milliseconds, nothing else done. */
static void spin(int ms) {
  double end = MPI_Wtime() + ms / 1e3;
  volatile unsigned long x = 0;
  while (MPI_Wtime() < end)
    for (int i = 0; i < 10000; i++) x += (unsigned long)i;
}

static int send_all(const struct opts *o, int rank, int to) {
  if (o->spin_ms) spin(o->spin_ms);
  uint8_t *buf = malloc((size_t)o->size * (size_t)o->window);
  MPI_Request *rq = calloc((size_t)o->window, sizeof *rq);
  if (!buf || !rq) return -1;
  for (int m = 0; m < o->msgs; m++) {
    int slot = m % o->window;
    if (m >= o->window) MPI_Wait(&rq[slot], MPI_STATUS_IGNORE);
    uint8_t *b = buf + (size_t)slot * (size_t)o->size;
    fill(b, o->size, rank, m);
    MPI_Isend(b, (int)o->size, MPI_BYTE, to, m, MPI_COMM_WORLD, &rq[slot]);
  }
  MPI_Waitall(o->msgs < o->window ? o->msgs : o->window, rq, MPI_STATUSES_IGNORE);
  free(rq);
  free(buf);
  return 0;
}

/* Rank 0 (or a receiver of --pairs): window receives posted per sender
 * (ranks first..first+nsend-1), each checked and reposted for the sender's
 * next message as it completes. */
static long recv_all(const struct opts *o, int first, int nsend, long *wrong) {
  int w = o->msgs < o->window ? o->msgs : o->window, n = nsend * w;
  uint8_t *buf = malloc((size_t)o->size * (size_t)n);
  MPI_Request *rq = calloc((size_t)n + 1, sizeof *rq); /* + the prober's ping */
  uint64_t ping = 0;
  rq[n] = MPI_REQUEST_NULL;
  if (o->probe) MPI_Irecv(&ping, 8, MPI_BYTE, nsend + 1, PING_TAG, MPI_COMM_WORLD, &rq[n]);
  int *next = calloc((size_t)nsend, sizeof *next); /* the next message each sender's slot gets */
  int *msg = calloc((size_t)n, sizeof *msg);
  if (!buf || !rq || !next || !msg) return -1;
  for (int s = 0; s < nsend; s++)
    for (int k = 0; k < w; k++) {
      int i = s * w + k;
      msg[i] = next[s]++;
      MPI_Irecv(buf + (size_t)i * (size_t)o->size, (int)o->size, MPI_BYTE, first + s, msg[i], MPI_COMM_WORLD, &rq[i]);
    }
  long got = 0;
  for (long left = (long)nsend * o->msgs; left > 0; left--) {
    int i;
    MPI_Waitany(n + 1, rq, &i, MPI_STATUS_IGNORE);
    if (i == n) { /* a ping: pong 0, more to come */
      uint64_t more = 0;
      MPI_Send(&more, 8, MPI_BYTE, nsend + 1, PING_TAG, MPI_COMM_WORLD);
      MPI_Irecv(&ping, 8, MPI_BYTE, nsend + 1, PING_TAG, MPI_COMM_WORLD, &rq[n]);
      left++;
      continue;
    }
    int s = i / w;
    *wrong += check(buf + (size_t)i * (size_t)o->size, o->size, first + s, msg[i]);
    got += o->size;
    if (next[s] < o->msgs) {
      msg[i] = next[s]++;
      MPI_Irecv(buf + (size_t)i * (size_t)o->size, (int)o->size, MPI_BYTE, first + s, msg[i], MPI_COMM_WORLD, &rq[i]);
    }
  }
  if (o->probe) { /* the next ping hears that it was the last */
    uint64_t done = 1;
    MPI_Wait(&rq[n], MPI_STATUS_IGNORE);
    MPI_Send(&done, 8, MPI_BYTE, nsend + 1, PING_TAG, MPI_COMM_WORLD);
  }
  free(msg);
  free(next);
  free(rq);
  free(buf);
  return got;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* p50, p99 and max of n half round trips (us), sorted in place. */
static void print_pcts(const char *name, double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  printf("\"%s_n\":%d,\"%s_p50_us\":%.2f,\"%s_p99_us\":%.2f,\"%s_max_us\":%.2f", name, n, name,
         n ? t[n / 2] : 0.0, name, n ? t[(int)((n - 1) * 0.99)] : 0.0, name, n ? t[n - 1] : 0.0);
}

/* One ping to rank 0 and its pong: the half round trip (us); *done set
 * when rank 0 said it was the last. */
static double ping_once(uint64_t *done) {
  struct timespec gap = {0, 200000};
  nanosleep(&gap, NULL);
  uint64_t x = 0;
  double t = MPI_Wtime();
  MPI_Send(&x, 8, MPI_BYTE, 0, PING_TAG, MPI_COMM_WORLD);
  MPI_Recv(done, 8, MPI_BYTE, 0, PING_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return (MPI_Wtime() - t) * 1e6 / 2;
}

/* The last rank with --probe: N pings while nobody sends (rank 0 answers
 * them before the barrier), then pings until rank 0 has everything. */
static int probe(const struct opts *o, int nsend) {
  (void)nsend;
  int cap = 1 << 20, nl = 0;
  double *idle = calloc((size_t)o->probe, sizeof *idle), *load = calloc((size_t)cap, sizeof *load);
  if (!idle || !load) return -1;
  uint64_t done = 0;
  for (int i = 0; i < o->probe; i++) idle[i] = ping_once(&done);
  MPI_Barrier(MPI_COMM_WORLD);
  for (done = 0; !done;) {
    double t = ping_once(&done);
    if (!done && nl < cap) load[nl++] = t;
  }
  printf("{\"app\":\"incast-probe\",");
  print_pcts("idle", idle, o->probe);
  printf(",");
  print_pcts("loaded", load, nl);
  printf("}\n");
  fflush(stdout);
  free(idle);
  free(load);
  return 0;
}

/* Rank 0 with --probe: the unloaded pings answered before the barrier. */
static void answer_idle(const struct opts *o, int prober) {
  for (int i = 0; i < o->probe; i++) {
    uint64_t x;
    MPI_Recv(&x, 8, MPI_BYTE, prober, PING_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    x = 0;
    MPI_Send(&x, 8, MPI_BYTE, prober, PING_TAG, MPI_COMM_WORLD);
  }
}

/* Wait until path exists (at most 60,000 sleeps of a millisecond), probing
 * for messages between them: the MPI's progress runs, so what the ranks
 * sent last is acked while the counters are read, and no transport
 * resends it by the timer for want of an ack from a sleeping peer. */
static void hold_for(const char *path) {
  for (int i = 0; i < 60000 && access(path, F_OK) != 0; i++) {
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

/* --hold-start: each sender's 8 bytes to its receiver, then the hold. */
static void hold_start(const struct opts *o, int rank, int nsend) {
  uint64_t x = 0;
  if (o->pairs && rank < nsend) {
    MPI_Recv(&x, 8, MPI_BYTE, rank + nsend, PING_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (o->pairs) {
    MPI_Send(&x, 8, MPI_BYTE, rank - nsend, PING_TAG, MPI_COMM_WORLD);
  } else if (rank == 0) {
    for (int r = 1; r <= nsend; r++) MPI_Recv(&x, 8, MPI_BYTE, r, PING_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank <= nsend) {
    MPI_Send(&x, 8, MPI_BYTE, 0, PING_TAG, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("{\"app\":\"incast-start\"}\n");
    fflush(stdout);
  }
  hold_for(o->hold_start);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct opts o;
  if (parse(argc, argv, &o) < 0 || size < 2 + (o.probe > 0) || (o.pairs && (o.probe || size % 2))) {
    if (rank == 0)
      fprintf(stderr,
              "usage: mpirun -np N>=2 incast [--size BYTES] [--msgs N] [--window W] [--probe N (N>=3 ranks)] "
              "[--spin MS] [--pairs (N even, no --probe)] [--hold PATH] [--hold-start PATH]\n");
    MPI_Finalize();
    return 2;
  }
  int nsend = o.pairs ? size / 2 : size - 1 - (o.probe > 0);
  if (o.hold_start) hold_start(&o, rank, nsend);
  if (o.probe && rank == 0) answer_idle(&o, size - 1);
  long wrong = 0, got = 0;
  int rc = 0;
  if (o.probe && rank == size - 1) {
    rc = probe(&o, nsend); /* its barrier inside, after the idle pings */
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  double t0 = MPI_Wtime();
  if (o.pairs && rank < nsend)
    got = recv_all(&o, rank + nsend, 1, &wrong);
  else if (o.pairs)
    rc = send_all(&o, rank, rank - nsend);
  else if (rank == 0)
    got = recv_all(&o, 1, nsend, &wrong);
  else if (rank <= nsend)
    rc = send_all(&o, rank, 0);
  double t = MPI_Wtime() - t0;
  if (got < 0 || rc < 0) {
    fprintf(stderr, "incast: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* All receivers' bytes over the slowest's time (rank 0 alone receives
   * without --pairs). */
  long mine[2] = {got, wrong}, all[2];
  double tmax;
  MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  got = all[0], wrong = all[1], t = tmax;
  if (rank == 0) {
    printf("{\"app\":\"incast\",\"senders\":%d,\"size\":%ld,\"msgs\":%d,\"window\":%d,\"bytes\":%ld,\"time_s\":%.6f,"
           "\"goodput_MBps\":%.2f,\"wrong_bytes\":%ld}\n",
           nsend, o.size, o.msgs, o.window, got, t, t > 0 ? got / t / 1e6 : 0.0, wrong);
    fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (o.hold) hold_for(o.hold);
  MPI_Finalize();
  return rank == 0 && wrong ? 1 : 0;
}
