/* SPDX-License-Identifier: MIT */
/*
 * comm_mpi.c - struct perf_comm over MPI point-to-point (MPI_Isend/Irecv/
 * Wait/Test on MPI_COMM_WORLD), so fmx_perf_mpi measures an MPI with the
 * very kernels fmx_perf uses. MPI_Wait has no timeout: the kernels' watchdog
 * (alarm) ends a rank whose peer went silent.
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <string.h>

#include "comm_mpi.h"
#include "kernels.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(perf_req_t), "perf_req_t too small");

static MPI_Request *mreq(perf_req_t *r)
{
  return (MPI_Request *)(void *)r;
}

static void check(int rc, const char *what)
{
  if (rc != MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    perf_die("%s failed: %s", what, s);
  }
}

/* Messages longer than INT_MAX bytes go as MPI_BYTE runs of 1 MiB blocks. */
static void dtype(uint64_t len, int *count, MPI_Datatype *t)
{
  static MPI_Datatype mib = MPI_DATATYPE_NULL;
  if (len <= 0x7fffffff) {
    *count = (int)len;
    *t = MPI_BYTE;
    return;
  }
  if (len % (1u << 20))
    perf_die("messages over 2 GiB must be whole MiB under MPI");
  if (mib == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(1 << 20, MPI_BYTE, &mib);
    MPI_Type_commit(&mib);
  }
  *count = (int)(len >> 20);
  *t = mib;
}

static void m_isend(struct perf_comm *c, const void *buf, uint64_t len, int peer,
                    enum perf_tag tag, perf_req_t *req)
{
  (void)c;
  int n;
  MPI_Datatype t;
  dtype(len, &n, &t);
  check(MPI_Isend(buf, n, t, peer, (int)tag, MPI_COMM_WORLD, mreq(req)), "MPI_Isend");
}

static void m_irecv(struct perf_comm *c, void *buf, uint64_t len, int peer, enum perf_tag tag,
                    perf_req_t *req)
{
  (void)c;
  int n;
  MPI_Datatype t;
  dtype(len, &n, &t);
  check(MPI_Irecv(buf, n, t, peer, (int)tag, MPI_COMM_WORLD, mreq(req)), "MPI_Irecv");
}

static void m_status(MPI_Status *st, const char *what, uint64_t expect_len)
{
  if (expect_len == UINT64_MAX)
    return;
  MPI_Count n = 0;
  MPI_Get_elements_x(st, MPI_BYTE, &n);
  if ((uint64_t)n != expect_len)
    perf_die("%s: %" PRIu64 " bytes delivered, expected %" PRIu64, what, (uint64_t)n,
             expect_len);
}

static void m_wait(struct perf_comm *c, perf_req_t *req, const char *what, uint64_t expect_len)
{
  (void)c;
  MPI_Status st;
  check(MPI_Wait(mreq(req), &st), what);
  m_status(&st, what, expect_len);
}

static bool m_test(struct perf_comm *c, perf_req_t *req, const char *what, uint64_t expect_len)
{
  (void)c;
  MPI_Status st;
  int done = 0;
  check(MPI_Test(mreq(req), &done, &st), what);
  if (done)
    m_status(&st, what, expect_len);
  return done != 0;
}

static void m_engine(struct perf_comm *c, uint64_t size, char *out, size_t len)
{
  (void)c;
  (void)size;
  snprintf(out, len, "mpi");
}

/* --mem mpi: MPI_Alloc_mem (what an MPI may register or share). */
static void *mem_alloc(size_t len)
{
  void *p = NULL;
  return MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &p) == MPI_SUCCESS ? p : NULL;
}

static void mem_release(void *p)
{
  check(MPI_Free_mem(p), "MPI_Free_mem");
}

void comm_mpi_open(struct perf_comm *c, int *argc, char ***argv)
{
  memset(c, 0, sizeof *c);
  check(MPI_Init(argc, argv), "MPI_Init");
  /* Errors come back to us (and end the run with a message), not abort
   * silently inside the library. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size);
  c->name = "mpi";
  c->isend = m_isend;
  c->irecv = m_irecv;
  c->wait = m_wait;
  c->test = m_test;
  c->engine = m_engine;
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  v[len < (int)sizeof v ? len : (int)sizeof v - 1] = '\0';
  /* The name and version only: the first line up to a comma ("Open MPI
   * v4.1.4, package: ..."), blanks squeezed ("MPICH Version:\t4.0.2"). */
  v[strcspn(v, "\n\r,")] = '\0';
  size_t o = 0;
  for (size_t i = 0; v[i] && o < sizeof c->library - 1; i++) {
    bool blank = v[i] == ' ' || v[i] == '\t';
    if (blank && (o == 0 || c->library[o - 1] == ' '))
      continue;
    c->library[o++] = blank ? ' ' : v[i];
  }
  while (o && c->library[o - 1] == ' ')
    o--;
  c->library[o] = '\0';
}

void comm_mpi_options(struct perf_comm *c)
{
  snprintf(c->desc, sizeof c->desc, "%s; binding as mpirun set it%s", c->library,
           perf_opt.mem_lib ? "; buffers from MPI_Alloc_mem" : "");
  if (perf_opt.mem_lib) {
    c->alloc = mem_alloc;
    c->release = mem_release;
  }
}

void comm_mpi_close(struct perf_comm *c)
{
  (void)c;
  MPI_Finalize();
}
