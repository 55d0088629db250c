/* SPDX-License-Identifier: MIT */
/* The one table of tunables. Every FMX_* variable is declared in config.c,
 * read there (environment, then tuning file for what the environment left
 * unset) and nowhere else. `fmx_info --config` prints the table. */
#ifndef FMX_BASE_CONFIG_H
#define FMX_BASE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct fmx_config {
  const char *log;          /* FMX_LOG */
  uint64_t rndv_threshold;  /* FMX_RNDV_THRESHOLD */
  uint64_t ring_size;       /* FMX_RING_SIZE: ring bytes per connection and direction */
  uint64_t ring_min;        /* FMX_RING_MIN: the least of it a sender uses */
  int handover;             /* FMX_HANDOVER: replies' records to the shared cache */
  int own_ahead;            /* FMX_OWN_AHEAD: a ring's next cells taken for writing ahead */
  int duplex_box;           /* FMX_DUPLEX_BOX: tiny records by turns through the link's shared line */
  uint64_t pool_buffers;    /* FMX_POOL_BUFFERS: buffers of an endpoint's send pool */
  uint64_t eager_frag;      /* FMX_EAGER_FRAG: fragment of a medium message */
  const char *bulk;         /* FMX_BULK: auto or an engine name */
  int cma;                  /* FMX_CMA */
  int xmem;                 /* FMX_XMEM */
  int adapt;                /* FMX_ADAPT */
  uint64_t bulk_slots;      /* FMX_BULK_SLOTS: ring engine slots */
  uint64_t bulk_slot_size;  /* FMX_BULK_SLOT_SIZE */
  const char *copy;         /* FMX_COPY: auto or a copy routine's name */
  int copy_alias;           /* FMX_COPY_ALIAS: step around 4K aliasing */
  uint64_t copy_nt_threshold; /* FMX_COPY_NT_THRESHOLD */
  const char *cost_cma;     /* FMX_COST_CMA: "LEVEL:STARTUP_US:MBPS;..." or "" */
  const char *cost_ring;    /* FMX_COST_RING */
  const char *cost_coop;    /* FMX_COST_COOP */
  const char *cost_vmsplice; /* FMX_COST_VMSPLICE */
  const char *cost_offload; /* FMX_COST_OFFLOAD */
  const char *offload;      /* FMX_OFFLOAD: auto, on, off */
  const char *net_progress; /* FMX_NET_PROGRESS: auto, on, off */
  uint64_t offload_threshold; /* FMX_OFFLOAD_THRESHOLD */
  uint64_t offload_channels;  /* FMX_OFFLOAD_CHANNELS */
  const char *offload_cpus;   /* FMX_OFFLOAD_CPUS */
  uint64_t chunk_max;       /* FMX_CHUNK_MAX: largest chunk per progress call */
  uint64_t spin_us;         /* FMX_SPIN_US: spin before blocking */
  const char *crowded;      /* FMX_CROWDED: auto, on, off */
  uint64_t endpoint_max;    /* FMX_ENDPOINT_MAX */
  uint64_t request_timeout_ms; /* FMX_REQUEST_TIMEOUT_MS */
  uint64_t connect_wait_ms;    /* FMX_CONNECT_WAIT_MS */
  uint64_t handshake_ms;       /* FMX_HANDSHAKE_MS */
  uint64_t handshakes_per_uid; /* FMX_HANDSHAKES_PER_UID */
  uint64_t log_repeat_ms;      /* FMX_LOG_REPEAT_MS */
  int counters_page;           /* FMX_COUNTERS_PAGE */
  uint64_t copy_async_threshold; /* FMX_COPY_ASYNC_THRESHOLD: fmx_copy_async copies shorter ones at once */
  uint64_t coop_help_min;   /* FMX_COOP_HELP_MIN: coop transfers the sender helps with */
  int self;                    /* FMX_SELF (also OMX_DISABLE_SELF, MX_DISABLE_SELF, inverted) */
  int shm;                     /* FMX_SHM (also OMX_DISABLE_SHARED, MX_DISABLE_SHMEM, inverted) */
  const char *context_ids;     /* FMX_CONTEXT_IDS "BITS,SHIFT" (also OMX_CTXIDS) */
  uint64_t any_endpoint_from;  /* FMX_ANY_ENDPOINT_FROM (also OMX_ANY_ENDPOINT) */
  int mx_errors_fatal;         /* FMX_MX_ERRORS_FATAL (also OMX_FATAL_ERRORS, MX_ERRORS_ARE_FATAL) */
  const char *net;             /* FMX_NET: auto, on, off */
  const char *net_iface;       /* FMX_NET_IFACE */
  const char *net_wire;        /* FMX_NET_WIRE: auto, raw, udp */
  uint64_t net_port;           /* FMX_NET_PORT */
  uint64_t net_window;         /* FMX_NET_WINDOW */
  uint64_t net_rto_us;         /* FMX_NET_RTO_US */
  uint64_t net_rto_max_us;     /* FMX_NET_RTO_MAX_US */
  uint64_t net_timeout_ms;     /* FMX_NET_TIMEOUT_MS */
  uint64_t net_ack_delay_us;   /* FMX_NET_ACK_DELAY_US */
  uint64_t net_ack_every;      /* FMX_NET_ACK_EVERY */
  const char *net_bulk;        /* FMX_NET_BULK */
  uint64_t net_pull_threshold; /* FMX_NET_PULL_THRESHOLD */
  uint64_t net_ring;           /* FMX_NET_RING */
  uint64_t net_pull_window;    /* FMX_NET_PULL_WINDOW */
  const char *peers;           /* FMX_PEERS */
  uint64_t net_discover_ms;    /* FMX_NET_DISCOVER_MS */
  uint64_t fault_alloc;        /* FMX_FAULT_ALLOC (tests) */
  const char *tuning_file;  /* FMX_TUNING_FILE */
};

extern struct fmx_config fmx_cfg;

/* Read the environment and the tuning file; idempotent, thread-safe. */
void config_load(void);
/* Forget everything and load again (tests). */
void config_reload(void);
/* One row of the table, as text. */
struct config_item {
  const char *name;
  const char *value;
  const char *source; /* default, topology, tuning file, environment */
  const char *def;
  const char *doc;
  const char *refused; /* the last refused setting and why, "" if none */
};
/* Call fn for every tunable, in table order (fmx_info prints them; the
 * library itself never prints). */
void config_foreach(void (*fn)(const struct config_item *item, void *arg), void *arg);
/* Rows in the table, and row i (-ENOENT past the end). */
size_t config_count(void);
int config_item_at(size_t i, struct config_item *it);
/* Row i's name, default and doc only, without loading the configuration
 * (value, source and refused are ""): the provider registers the names
 * with libfabric before anything is configured. */
int config_entry_at(size_t i, struct config_item *it);
/* Parse "123", "64K", "4M", "1G" (powers of 1024). 0 on success, -EINVAL on error. */
int config_parse_size(const char *s, uint64_t *out);
/* Set one tunable by name from text; `source` says where it came from.
 * Returns 0, or -EINVAL for an unknown name or a bad value (nothing changed). */
int config_set(const char *name, const char *value, const char *source);
/* Where a tunable's value came from ("default", "topology", "environment",
 * "tuning file"), or NULL for an unknown name. */
const char *config_source(const char *name);
/* A tunable's value in force, as text (the table loaded first), or NULL
 * for an unknown name. */
const char *config_value(const char *name);
/* The function that sets the defaults derived at run time (the core's,
 * from the topology), run once by config_load after the table is read. */
void config_set_deriver(void (*fn)(void));
/* Set a default derived at run time (e.g. from the topology), unless the
 * user set that tunable. */
void config_set_derived(const char *name, uint64_t value, const char *source);

#endif
