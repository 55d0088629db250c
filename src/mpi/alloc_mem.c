/* SPDX-License-Identifier: MIT */
/*
 * libfmx-mpi.so: MPI_Alloc_mem and MPI_Free_mem over fmx_mem_alloc and
 * fmx_mem_free (docs/ofi.md, "MPI_Alloc_mem"), for any MPI: link it before
 * the MPI library, or LD_PRELOAD it. Memory an MPI program allocates the
 * MPI way then lies in fmx_mem_alloc regions, which a peer on the same host
 * maps and copies once through the provider.
 *
 * Built without any MPI's header, one binary for all: what differs between
 * MPIs is the MPI_Info handle (a pointer in Open MPI, an int in MPICH and
 * Intel MPI), which is ignored and travels in a register either way; the
 * size is an MPI_Aint (64 bits everywhere here) and MPI_SUCCESS is 0. What
 * fmx cannot give (0 bytes, no memory) is asked of the MPI itself
 * (PMPI_Alloc_mem), and MPI_Free_mem hands back to the MPI what fmx does
 * not know. The Fortran bindings call the MPI's C code directly and are
 * not covered.
 */
#include <stdint.h>

#include "fmx.h"

#define API __attribute__((visibility("default")))

/* The MPI's own, resolved at run time from the MPI library; and ours. */
int PMPI_Alloc_mem(intptr_t size, void *info, void *baseptr);
int PMPI_Free_mem(void *base);
int MPI_Alloc_mem(intptr_t size, void *info, void *baseptr);
int MPI_Free_mem(void *base);

API int MPI_Alloc_mem(intptr_t size, void *info, void *baseptr) {
  void *p = NULL;
  if (size > 0 && baseptr && fmx_mem_alloc((size_t)size, &p) == FMX_SUCCESS) {
    *(void **)baseptr = p;
    return 0;
  }
  return PMPI_Alloc_mem(size, info, baseptr);
}

API int MPI_Free_mem(void *base) {
  if (base && fmx_mem_free(base) == FMX_SUCCESS) return 0;
  return PMPI_Free_mem(base);
}
