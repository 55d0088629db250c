/* SPDX-License-Identifier: MIT */
/* MPI semantics a message layer must carry (run over the provider by
 * tests/system/test_ofi.py): mpi_semantics CASE, where CASE is
 *   probe   Probe, Iprobe, Improbe/Mrecv, Mprobe/Mrecv (2 ranks)
 *   any     MPI_ANY_SOURCE and MPI_ANY_TAG (3 ranks)
 *   cancel  a receive cancelled, MPI_Test_cancelled (2 ranks)
 *   trunc   MPI_ERR_TRUNCATE on a short receive (2 ranks)
 *   ssend   synchronous sends, small and large (2 ranks)
 *   kill    rank 1 dies (SIGKILL) mid-transfer: the job must end with an
 *           error, never hang (2 ranks)
 *   allocmem  MPI_Alloc_mem buffers (2 ranks), with libfmx-mpi.so
 *           preloaded or linked: they must be fmx_mem_alloc memory (a
 *           memfd named fmx-mem in /proc/self/maps), carry messages of
 *           every class, and go back with MPI_Free_mem
 * Rank 0 prints "ok CASE" when it passed. */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

static void fail(const char *what) {
  fprintf(stderr, "rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

#define EXPECT(c)                                                   \
  do {                                                              \
    if (!(c)) fail("expected " #c);                                 \
  } while (0)

static void fill(char *p, int n, int seed) {
  for (int i = 0; i < n; i++) p[i] = (char)(i * 13 + seed);
}

static int filled(const char *p, int n, int seed) {
  for (int i = 0; i < n; i++)
    if (p[i] != (char)(i * 13 + seed)) return 0;
  return 1;
}

static void probe(void) {
  const int small = 1000, big = 1 << 20;
  char *buf = malloc(big);
  if (rank == 1) {
    fill(buf, small, 5);
    MPI_Send(buf, small, MPI_CHAR, 0, 5, MPI_COMM_WORLD);
    fill(buf, big, 6);
    MPI_Send(buf, big, MPI_CHAR, 0, 6, MPI_COMM_WORLD);
    fill(buf, small, 7);
    MPI_Send(buf, small, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Status st;
    int count, flag = 0;
    MPI_Probe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_CHAR, &count);
    EXPECT(st.MPI_SOURCE == 1 && st.MPI_TAG == 5 && count == small);
    MPI_Message msg6 = MPI_MESSAGE_NULL, msg5;
    while (!flag) MPI_Improbe(1, 6, MPI_COMM_WORLD, &flag, &msg6, &st);
    MPI_Get_count(&st, MPI_CHAR, &count);
    EXPECT(count == big);
    /* Tag 6 is claimed: an Iprobe for any tag sees tag 5 or 7, never 6. */
    flag = 0;
    while (!flag) MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    EXPECT(st.MPI_TAG != 6);
    MPI_Mprobe(1, 5, MPI_COMM_WORLD, &msg5, &st);
    MPI_Mrecv(buf, small, MPI_CHAR, &msg5, &st);
    EXPECT(filled(buf, small, 5));
    MPI_Mrecv(buf, big, MPI_CHAR, &msg6, &st);
    EXPECT(filled(buf, big, 6) && msg6 == MPI_MESSAGE_NULL);
    MPI_Recv(buf, small, MPI_CHAR, 1, 7, MPI_COMM_WORLD, &st);
    EXPECT(filled(buf, small, 7));
  }
  free(buf);
}

static void any(void) {
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank > 0) {
    int v = rank * 100;
    MPI_Send(&v, 1, MPI_INT, 0, 40 + rank, MPI_COMM_WORLD);
    return;
  }
  int seen = 0;
  for (int i = 1; i < size; i++) {
    int v;
    MPI_Status st;
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    EXPECT(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < size && st.MPI_TAG == 40 + st.MPI_SOURCE && v == st.MPI_SOURCE * 100);
    seen |= 1 << st.MPI_SOURCE;
  }
  EXPECT(seen == ((1 << size) - 2));
}

static void cancel(void) {
  if (rank == 0) {
    int v, flag;
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(&v, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    EXPECT(flag);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void trunc_(void) {
  char buf[100];
  if (rank == 1) {
    fill(buf, 100, 1);
    MPI_Send(buf, 100, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Status st;
    int rc = MPI_Recv(buf, 10, MPI_CHAR, 1, 3, MPI_COMM_WORLD, &st), cls;
    MPI_Error_class(rc, &cls);
    EXPECT(cls == MPI_ERR_TRUNCATE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void ssend(void) {
  int sizes[] = {0, 8, 65536, 4 << 20};
  char *buf = malloc(4 << 20);
  for (int k = 0; k < 4; k++) {
    if (rank == 1) {
      fill(buf, sizes[k], k);
      MPI_Ssend(buf, sizes[k], MPI_CHAR, 0, k, MPI_COMM_WORLD);
    } else if (rank == 0) {
      MPI_Recv(buf, sizes[k], MPI_CHAR, 1, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(filled(buf, sizes[k], k));
    }
  }
  free(buf);
}

static void kill_(void) {
  const int n = 16 << 20;
  char *buf = malloc(n);
  memset(buf, 1, n);
  for (int i = 0; i < 1000; i++) {
    if (rank == 1) {
      if (i == 20) raise(SIGKILL);
      MPI_Send(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    } else if (rank == 0) {
      MPI_Recv(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  fail("rank 1 was to die");
}

/* Whether p lies in a mapping of an fmx_mem_alloc memfd. */
static int in_fmx_mem(const void *p) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  int found = 0;
  uintptr_t a = (uintptr_t)p;
  while (f && !found && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) found = strstr(line, "memfd:fmx-mem") != NULL;
  }
  if (f) fclose(f);
  return found;
}

static void allocmem(void) {
  int sizes[] = {0, 8, 65536, 16 << 20};
  for (int k = 0; k < 4; k++) {
    char *buf = NULL;
    EXPECT(MPI_Alloc_mem(sizes[k] ? sizes[k] : 1, MPI_INFO_NULL, &buf) == MPI_SUCCESS);
    EXPECT(in_fmx_mem(buf));
    if (rank == 1) {
      fill(buf, sizes[k], k);
      MPI_Send(buf, sizes[k], MPI_CHAR, 0, k, MPI_COMM_WORLD);
      MPI_Recv(buf, sizes[k], MPI_CHAR, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(filled(buf, sizes[k], k + 1));
    } else if (rank == 0) {
      MPI_Recv(buf, sizes[k], MPI_CHAR, 1, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(filled(buf, sizes[k], k));
      fill(buf, sizes[k], k + 1);
      MPI_Send(buf, sizes[k], MPI_CHAR, 1, k, MPI_COMM_WORLD);
    }
    EXPECT(MPI_Free_mem(buf) == MPI_SUCCESS);
  }
  /* 0 bytes: fmx gives none, the MPI's own does. */
  char *none = NULL;
  EXPECT(MPI_Alloc_mem(0, MPI_INFO_NULL, &none) == MPI_SUCCESS);
  EXPECT(MPI_Free_mem(none) == MPI_SUCCESS);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "probe")) probe();
  else if (!strcmp(c, "any")) any();
  else if (!strcmp(c, "cancel")) cancel();
  else if (!strcmp(c, "trunc")) trunc_();
  else if (!strcmp(c, "ssend")) ssend();
  else if (!strcmp(c, "kill")) kill_();
  else if (!strcmp(c, "allocmem")) allocmem();
  else fail("usage: mpi_semantics probe|any|cancel|trunc|ssend|kill|allocmem");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("ok %s\n", c);
  MPI_Finalize();
  return 0;
}
