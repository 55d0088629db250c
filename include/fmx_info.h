/* SPDX-License-Identifier: MIT */
/*
 * fmx_info.h - what fmx_get_info (fmx.h) answers: its keys, and the types
 * the introspection keys fill (what fmx_info and fmx_tune print: engines,
 * tunables, topology, copy routines, network interfaces, the peer table).
 * Included by fmx.h; not meant to be included alone.
 */
#ifndef FMX_INFO_H
#define FMX_INFO_H

#include <stddef.h>
#include <stdint.h>

/* fmx_get_info keys. `in`/`out` are described per key. */
enum fmx_info_key {
  FMX_INFO_RNDV_THRESHOLD = 1,   /* out: uint64_t, eager -> rendezvous switch */
  FMX_INFO_TINY_MAX = 2,         /* out: uint64_t, inline-in-one-cell limit */
  FMX_INFO_COUNTER_COUNT = 3,    /* out: uint32_t */
  FMX_INFO_COUNTER_LABEL = 4,    /* in: uint32_t index; out: char[] */
  FMX_INFO_COUNTER_VALUES = 5,   /* out: uint64_t[count] */
  FMX_INFO_LAST_BULK_ENGINE = 6, /* out: char[], engine of the last large recv */
  FMX_INFO_NIC_ID = 7,           /* out: uint64_t, this host's NIC id */
  FMX_INFO_ENDPOINT_ID = 8,      /* out: uint32_t */
  FMX_INFO_ENGINE_STATUS = 9,    /* in: char[] peer-independent engine name;
                                    out: char[] "available" (maybe followed by
                                    details) or why not */
  /* Introspection (what fmx_info and fmx_tune print; no endpoint needed). */
  FMX_INFO_ENGINE_COUNT = 10,    /* out: uint32_t, bulk engines built in */
  FMX_INFO_ENGINE_NAME = 11,     /* in: uint32_t index < ENGINE_COUNT; out: char[] */
  FMX_INFO_CONFIG_COUNT = 12,    /* out: uint32_t, tunables in the table */
  FMX_INFO_CONFIG_ITEM = 13,     /* in: uint32_t index < CONFIG_COUNT; out: fmx_config_item_t */
  FMX_INFO_TOPOLOGY = 14,        /* out: fmx_topology_t, as the library sees this host */
  FMX_INFO_CORES_SHARE = 15,     /* in: int32_t[2] CPUs; out: char[], the closest level
                                    both share, as cost specs name it: "CPU" (one
                                    core), "L1", "L2", "L3", "NUMA" (no cache
                                    shared, or a CPU the topology lacks), "SYS"
                                    (different NUMA nodes) */
  FMX_INFO_COST_TIME = 16,       /* in: fmx_cost_query_t; out: double, the time in us
                                    the cost spec predicts; negative if the spec is
                                    malformed or names no level */
  FMX_INFO_COPY_ROUTINE_COUNT = 17, /* out: uint32_t, copy routines built in */
  FMX_INFO_COPY_ROUTINE = 18,    /* in: uint32_t index < COPY_ROUTINE_COUNT;
                                    out: fmx_copy_routine_t */
  /* Other hosts (the net transport). */
  FMX_INFO_IFACE_COUNT = 19,     /* out: uint32_t, the host's interfaces with a
                                    link-layer address */
  FMX_INFO_IFACE = 20,           /* in: uint32_t index < IFACE_COUNT; out: fmx_iface_t */
  FMX_INFO_PEER_COUNT = 21,      /* out: uint32_t, entries of the peer table now
                                    (asks nothing on the wire) */
  FMX_INFO_PEER = 22,            /* in: uint32_t index < PEER_COUNT; out: fmx_peer_t */
  FMX_INFO_DISCOVER = 23,        /* out: int32_t, boards that answered a query
                                    broadcast now (takes FMX_NET_DISCOVER_MS; 0
                                    when FMX_PEERS names a file), or -errno */
  FMX_INFO_PEER_SESSION = 24,    /* in: fmx_endpoint_addr_t this endpoint gave
                                    (fmx_connect, a status's source,
                                    fmx_get_endpoint_addr); out: uint32_t, the
                                    session of the endpoint it names (drawn when
                                    that endpoint opened: a new one when it
                                    reopens). FMX_BAD_ADDRESS for an address
                                    this endpoint did not give or no longer
                                    knows */
  FMX_INFO_CONFIG_ENTRY = 25,    /* in: uint32_t index < CONFIG_COUNT; out:
                                    fmx_config_item_t with name, default and doc
                                    only (value, source, refused empty), without
                                    loading the configuration */
};

/* An interface (FMX_INFO_IFACE). Board 0 is the one the net transport
 * uses (FMX_NET_IFACE, else the first Ethernet interface that is up); its
 * MAC is this host's NIC id. */
typedef struct fmx_iface {
  char name[16];
  uint64_t nic_id; /* the MAC, 48 bits */
  uint32_t mtu;
  uint32_t ipv4;   /* network byte order; 0: none */
  uint32_t flags;  /* FMX_IFACE_* */
  uint32_t reserved;
} fmx_iface_t;

#define FMX_IFACE_UP 0x01       /* up and running */
#define FMX_IFACE_LOOPBACK 0x02
#define FMX_IFACE_ETHER 0x04    /* Ethernet: a 6-byte MAC */
#define FMX_IFACE_BOARD 0x08    /* board 0 */
#define FMX_IFACE_RAW 0x10      /* the raw wire: this process may open a packet socket */
#define FMX_IFACE_UDP 0x20      /* the UDP wire: an IPv4 address */

/* A peer-table entry (FMX_INFO_PEER): a board's NIC id and name
 * ("host:board"), and where the entry came from. */
typedef struct fmx_peer {
  uint64_t nic_id;
  char name[80];
  uint32_t source; /* FMX_PEER_* */
  uint32_t reserved;
} fmx_peer_t;

#define FMX_PEER_LOCAL 1      /* this host's board 0, named "<nodename>:0" */
#define FMX_PEER_FILE 2       /* the FMX_PEERS file */
#define FMX_PEER_DISCOVERED 3 /* answered a query on the wire */

/* A bulk engine's cost spec (FMX_INFO_COST_TIME), the value of a
 * FMX_COST_<ENGINE> tunable ("LEVEL[@FROM]:STARTUP_US:MBPS;...", docs/tuning.md),
 * read for the topology level `level` (FMX_INFO_CORES_SHARE's names), and
 * a message length. Texts NUL-terminated. */
typedef struct fmx_cost_query {
  char spec[256];
  char level[16];
  uint64_t len;
} fmx_cost_query_t;

/* One of the library's copy routines (FMX_INFO_COPY_ROUTINE), the ones
 * FMX_COPY names: `copy` has memcpy's contract (no overlap), and may be
 * called only when `usable` (this CPU and OS run it). For benchmarks. */
typedef struct fmx_copy_routine_info {
  char name[32];
  void (*copy)(void *dst, const void *src, size_t len);
  int32_t nontemporal; /* its stores bypass the cache */
  int32_t usable;
} fmx_copy_routine_t;

/* One tunable (FMX_INFO_CONFIG_ITEM): its value in force, where that came
 * from ("default", "topology", "measured", "tuning file", "environment"), its default,
 * its one-line doc, and the last value refused with why ("" if none).
 * Texts are NUL-terminated, cut to fit. */
typedef struct fmx_config_item {
  char name[48];
  char value[128];
  char source[16];
  char def[128];
  char refused[192];
  char doc[1024];
} fmx_config_item_t;

/* A data cache level (FMX_INFO_TOPOLOGY): size 0 when the host has none;
 * the processing units (hardware threads) sharing it, as a count and as a
 * list ("0-1,4", may be cut). */
typedef struct fmx_cache_info {
  uint64_t size;
  int32_t nshare;
  char cpus[64];
} fmx_cache_info_t;

typedef struct fmx_topology {
  int32_t ncores;     /* physical cores */
  int32_t npus;       /* hardware threads */
  int32_t numa_nodes;
  int32_t virtualized; /* 1 under a hypervisor: the cache sizes may be the
                          host's, not this guest's share (docs/tuning.md) */
  fmx_cache_info_t l1d, l2, l3; /* those of the CPU fmx_init ran on */
  char cpu_model[64];
  char source[32];    /* where it was read: "hwloc", "sysfs", "synthetic" */
} fmx_topology_t;

#endif /* FMX_INFO_H */
