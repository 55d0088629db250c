/* SPDX-License-Identifier: MIT */
/* The one table of tunables: every FMX_* variable, its default, its
 * bounds and what it does (config.c reads it; docs/tuning.md says why
 * each default is what it is). */
#include <stddef.h>

#include "base/config.h"
#include "base/config_int.h"

#define F(field) offsetof(struct fmx_config, field)
#define NUM(name, type, def, lo, hi, field, doc) {name, type, def, doc, F(field), lo, hi, NULL, NULL, {0}, {0}}
#define STR(name, def, choices, field, doc) {name, CFG_STRING, def, doc, F(field), 0, 0, choices, NULL, {0}, {0}}
#define BOOL(name, def, field, doc) {name, CFG_BOOL, def, doc, F(field), 0, 1, NULL, NULL, {0}, {0}}
#define K 1024ull
#define G (1024ull * 1024 * 1024)
struct cfg_entry config_table[] = {
    STR("FMX_LOG", "warn", "none error warn info debug", log, "log level: none, error, warn, info, debug"),
    NUM("FMX_LOG_REPEAT_MS", CFG_INT, "10000", 0, 3600000, log_repeat_ms,
        "a warning of the same id within this many ms is counted, not printed; the next one printed says how many "
        "were held back; 0 = print every one"),
    BOOL("FMX_COUNTERS_PAGE", "1", counters_page,
         "each endpoint keeps its counters in a memory page of its own (a memfd) that fmx_counters --pid reads while "
         "the job runs (same user or root, through /proc); 0 = counters only in the process"),
    BOOL("FMX_MX_ERRORS_FATAL", "1", mx_errors_fatal,
         "the MX face (libmyriexpress): an error ends the process (MX's default) unless the program sets a handler; "
         "0 = calls return it; also read as OMX_FATAL_ERRORS, then MX_ERRORS_ARE_FATAL (not with OMX_IGNORE_MX_ENV)"),
    BOOL("FMX_SELF", "1", self,
         "messages from an endpoint to itself are copied in the process (the self path); 0 = they go through "
         "shared memory like any other local peer's; also read, inverted, as OMX_DISABLE_SELF and MX_DISABLE_SELF"),
    BOOL("FMX_SHM", "1", shm,
         "peers on this host are reached through shared memory; 0 = through the net transport (its UDP wire: "
         "raw frames do not come back to their sender), as between hosts; also read, inverted, as "
         "OMX_DISABLE_SHARED and MX_DISABLE_SHMEM"),
    STR("FMX_CONTEXT_IDS", "", NULL, context_ids,
        "BITS,SHIFT: every endpoint opened without context ids of its own splits its matching space with these "
        "(as FMX_PARAM_CONTEXT_ID: 1-16 bits, BITS+SHIFT <= 64); empty = none; also read as OMX_CTXIDS"),
    NUM("FMX_ANY_ENDPOINT_FROM", CFG_INT, "0", 0, 65535, any_endpoint_from,
        "FMX_ANY_ENDPOINT takes the first free endpoint id from this one on; also read as OMX_ANY_ENDPOINT"),
    NUM("FMX_RNDV_THRESHOLD", CFG_SIZE, "256K", 0, G, rndv_threshold,
        "messages of this size and above go rendezvous (bulk engine); default one L2 (64K-1M)"),
    NUM("FMX_RING_SIZE", CFG_SIZE, "256K", 4 * K, G, ring_size,
        "ring bytes per connection and direction (its capacity); a sender uses one L2 shared among its peers and "
        "the ranks on its core, at least FMX_RING_MIN: pages past that are never touched; records with up to a "
        "quarter of what it uses in payload travel inline, longer ones in a buffer of the sender's pool; default "
        "one L2 (64K-1M)"),
    NUM("FMX_RING_MIN", CFG_SIZE, "8K", 4 * K, G, ring_min,
        "the least of a ring a sender uses, however many peers: a window of one-cell records; default an eighth "
        "of the L1 data cache (at least 4K)"),
    BOOL("FMX_HANDOVER", "1", handover,
         "a record that answers one from its peer (a ping-pong's reply) is handed to the cache all cores share "
         "(CLDEMOTE), so the waiting reader finds it there; only where the CPU has CLDEMOTE and ranks do not "
         "outnumber cores; 0: never"),
    BOOL("FMX_DUPLEX_BOX", "1", duplex_box,
         "tiny records (up to 16 bytes of payload) go through one cache line a pair of endpoints shares, by "
         "turns (the end that took the last one writes the next), when it is the sender's turn: a ping-pong then "
         "skips the ring's bookkeeping; after records crossed (an exchange) the next 1024 take the ring; 0: "
         "always the rings"),
    BOOL("FMX_OWN_AHEAD", "1", own_ahead,
         "after a record, the sender asks for the ring cells the next one will likely fill for writing "
         "(PREFETCHW), so their transfer from the reader's cache runs while it waits, not in its next copy; "
         "only where the CPU has PREFETCHW and ranks do not outnumber cores; 0: never"),
    NUM("FMX_POOL_BUFFERS", CFG_INT, "64", 4, 65536, pool_buffers,
        "buffers of an endpoint's send pool, shared by its connections (medium fragments, ring-engine chunks); "
        "default one L2 of FMX_EAGER_FRAG fragments"),
    NUM("FMX_EAGER_FRAG", CFG_SIZE, "16K", 64, G, eager_frag,
        "eager messages longer than this travel in fragments up to this size (the medium class), so the receiver "
        "copies out while the sender copies in; default a quarter of the L1 data cache (at least 4K)"),
    STR("FMX_BULK", "auto", "auto cma ring coop vmsplice offload", bulk,
        "bulk engine for large messages: auto, cma, ring, coop, vmsplice, offload"),
    BOOL("FMX_CMA", "1", cma, "allow the cma engine (process_vm_readv); 0 forbids it"),
    BOOL("FMX_XMEM", "1", xmem,
         "map a peer's fmx_mem_alloc memory and copy large messages from or into it directly; 0: never (cma, coop, "
         "ring as without it)"),
    NUM("FMX_BULK_SLOTS", CFG_INT, "8", 1, 1024, bulk_slots, "slots of the ring engine per connection and direction"),
    NUM("FMX_BULK_SLOT_SIZE", CFG_SIZE, "64K", 4 * K, G, bulk_slot_size,
        "bytes per ring-engine slot; default one L2 / FMX_BULK_SLOTS (at least 64K)"),
    STR("FMX_COPY", "auto", "auto memcpy regular movsb avx2 avx2_nt avx512_nt avx2_nt_clean", copy,
        "copy routine of the user-space copies of large messages: auto, memcpy, regular, movsb, avx2, avx2_nt, "
        "avx512_nt, avx2_nt_clean"),
    BOOL("FMX_COPY_ALIAS", "1", copy_alias,
         "step around 4K aliasing: a copy of 2 KiB or more whose destination lies less than a line past its source "
         "modulo 4 KiB uses the avx2 loop, not memcpy's rep movsb, and such a large receive takes ring over a kernel "
         "copy; default measured at start: 1 where rep movsb takes more than twice the avx2 loop's time there"),
    NUM("FMX_COPY_NT_THRESHOLD", CFG_SIZE, "8M", 0, UINT64_MAX, copy_nt_threshold,
        "messages above this are copied out with non-temporal stores (auto); default half this core's L3 share, "
        "8M in a VM (its L3 figure is the host's) or where no cache is described"),
    STR("FMX_COST_CMA", "", NULL, cost_cma,
        "measured cost of the cma engine, LEVEL[@FROM]:STARTUP_US:MBPS[;...] per topology level "
        "(CPU L1 L2 L3 NUMA SYS), an entry with @FROM for messages of FROM bytes and more; fmx_tune writes it"),
    STR("FMX_COST_RING", "", NULL, cost_ring, "measured cost of the ring engine, same form as FMX_COST_CMA; fmx_tune writes it"),
    STR("FMX_COST_COOP", "", NULL, cost_coop, "measured cost of the coop engine, same form as FMX_COST_CMA; fmx_tune writes it"),
    STR("FMX_COST_VMSPLICE", "", NULL, cost_vmsplice,
        "measured cost of the vmsplice engine, same form as FMX_COST_CMA; fmx_tune writes it"),
    STR("FMX_COST_OFFLOAD", "", NULL, cost_offload,
        "measured cost of cma run by an offload channel, same form as FMX_COST_CMA; fmx_tune writes it"),
    BOOL("FMX_ADAPT", "1", adapt,
         "without measured costs (FMX_COST_*), the receiver times its own transfers and keeps the fastest engine per "
         "size class and peer, trying the others now and then, and (no FMX_RNDV_THRESHOLD or FMX_BULK set) the "
         "medium class against rendezvous below the threshold; 0 = the topology's rule alone"),
    STR("FMX_OFFLOAD", "auto", "auto on off", offload,
        "offload channels move large transfers (receives; ring sends): auto (from FMX_OFFLOAD_THRESHOLD or measured "
        "costs, what the application leaves while it computes), on (every rendezvous transfer whose engine can be "
        "offloaded), off"),
    NUM("FMX_OFFLOAD_THRESHOLD", CFG_SIZE, "8M", 0, UINT64_MAX, offload_threshold,
        "auto offload from this size (untuned), and where adapt stops timing engines; default L3 / (2 x cores "
        "sharing it), the KNEM paper's switch, 8M in a VM (its L3 figure is the host's) or where no cache is described"),
    NUM("FMX_COPY_ASYNC_THRESHOLD", CFG_SIZE, "512K", 0, UINT64_MAX, copy_async_threshold,
        "fmx_copy_async: shorter copies are done at once by the caller, longer ones by an offload channel; "
        "default one L2 (64K-1M)"),
    NUM("FMX_OFFLOAD_CHANNELS", CFG_INT, "1", 0, 256, offload_channels,
        "helper threads per process moving offloaded transfers (started at the first); 0 = none"),
    STR("FMX_OFFLOAD_CPUS", "", NULL, offload_cpus,
        "CPU list the channels run on (e.g. 2-3); default every other online CPU when the thread is bound to one, "
        "else every online CPU"),
    NUM("FMX_COOP_HELP_MIN", CFG_SIZE, "1M", 0, UINT64_MAX, coop_help_min,
        "coop transfers (through a mapping of fmx_mem_alloc memory, or forced) at least this long are shared with "
        "the sender while it is in fmx; shorter ones the receiver copies alone: its copy runs in its cache, and "
        "the sender's stripes only add traffic between the cores; default one L2"),
    NUM("FMX_CHUNK_MAX", CFG_SIZE, "4M", 4 * K, G, chunk_max,
        "largest chunk one progress call copies (1024 pages): bounds the stall of other peers"),
    NUM("FMX_SPIN_US", CFG_INT, "1000", 0, 10000000, spin_us,
        "longest a waiter polls before it blocks on its futex; it gives the core away at every poll when crowded, "
        "every 16th past 5 us otherwise (until a yield comes back a time slice late: another task's core)"),
    STR("FMX_CROWDED", "auto", "auto on off", crowded,
        "whether ranks outnumber cores: auto (the endpoint's partners on this host, itself included, outnumber its "
        "hardware threads; or, with partners on other hosts, the kernel's runnable tasks exceed them by a quarter "
        "(at least 1), looked at every 10 ms: namespaced hosts share "
        "one machine's cores), on, off. Crowded, waits and idle polls (fmx_idle: the provider's empty fi_cq_read) "
        "give the core away, and messages longer than a fragment go rendezvous; off: fmx_idle never yields"),
    NUM("FMX_ENDPOINT_MAX", CFG_INT, "256", 1, 65536, endpoint_max, "endpoint ids per board (0..max-1)"),
    NUM("FMX_REQUEST_TIMEOUT_MS", CFG_INT, "0", 0, UINT32_MAX - 1, request_timeout_ms,
        "default request timeout (sends not delivered, connects not answered); 0 = none"),
    NUM("FMX_CONNECT_WAIT_MS", CFG_INT, "1000", 0, UINT32_MAX - 1, connect_wait_ms,
        "how long fmx_connect waits for an endpoint that is not open yet (within its own timeout); 0 = fail at once"),
    NUM("FMX_HANDSHAKE_MS", CFG_INT, "1000", 1, 60000, handshake_ms,
        "longest an endpoint waits for a connecting peer's request before it drops the connection"),
    NUM("FMX_HANDSHAKES_PER_UID", CFG_INT, "16", 1, 4096, handshakes_per_uid,
        "connect handshakes one uid may have in flight with an endpoint; more are refused at once"),
    STR("FMX_NET", "auto", "auto on off", net,
        "the transport to other hosts: auto (on when the host has an Ethernet interface up), on, off"),
    STR("FMX_NET_IFACE", "", NULL, net_iface,
        "the interface (board 0) the net transport uses; default the first Ethernet interface that is up"),
    STR("FMX_NET_WIRE", "auto", "auto raw udp", net_wire,
        "how packets travel: raw Ethernet frames (EtherType 0x86DF, needs CAP_NET_RAW), UDP datagrams, or auto "
        "(raw when the process may open a packet socket, else UDP); both ends must use the same wire"),
    NUM("FMX_NET_RING", CFG_SIZE, "2M", 0, 64 * K * K, net_ring,
        "raw wire: bytes of the receive ring each endpoint shares with the kernel (TPACKET_V2, a slot per frame "
        "of the MTU); packets are read there without a system call; 0 = no ring, recvmmsg"),
    NUM("FMX_NET_PORT", CFG_INT, "18008", 1, 65535, net_port,
        "UDP wire: endpoint e listens on this port + e"),
    NUM("FMX_NET_WINDOW", CFG_INT, "256", 1, 4096, net_window,
        "packets in flight per partner, not yet acked, at most (the ceiling of its congestion window)"),
    NUM("FMX_NET_RTO_US", CFG_INT, "2000", 10, 10000000, net_rto_us,
        "a packet not acked this long is sent again; the wait doubles at each resend"),
    NUM("FMX_NET_RTO_MAX_US", CFG_INT, "200000", 10, 60000000, net_rto_max_us,
        "the longest the resend wait grows to; a closing endpoint stays this long for a partner whose CLOSE "
        "came just before"),
    NUM("FMX_NET_TIMEOUT_MS", CFG_INT, "300000", 10, 3600000, net_timeout_ms,
        "a partner that acks nothing this long while packets (or a probe) wait is gone: its requests fail; long, "
        "because a rank that computes outside fmx acks nothing meanwhile (Open-MX: about 500 s)"),
    NUM("FMX_NET_ACK_DELAY_US", CFG_INT, "200", 1, 1000000, net_ack_delay_us,
        "a packet received is acked within this (piggybacked on data when some goes back)"),
    NUM("FMX_NET_ACK_EVERY", CFG_INT, "16", 1, 4096, net_ack_every,
        "an ack goes at once when this many packets are not acked yet"),
    STR("FMX_NET_BULK", "udp", "udp wire", net_bulk,
        "raw wire: how the answers to pulls and eager messages' fragments travel: udp (GSO trains to a UDP socket "
        "beside the raw one, where the interface has an IPv4 address) or wire (raw frames one by one)"),
    NUM("FMX_NET_PULL_THRESHOLD", CFG_SIZE, "0", 0, G, net_pull_threshold,
        "messages to other hosts of this many bytes or more are pulled by the receiver (rendezvous); shorter "
        "ones go eagerly in fragments; 0 = what one GSO train of packets holds where fragments leave in trains "
        "(61,776 bytes at MTU 1500: UDP, or the raw wire with bulk sockets), else the wire's measured ratio (raw 8, "
        "UDP 5 packets' payload)"),
    STR("FMX_NET_PROGRESS", "auto", "auto on off", net_progress,
        "while a message pulled from or by another host waits and the application computes, offload channel 0 "
        "sleeps on the socket and answers (pull requests, acks, the next blocks): auto while the kernel's runnable "
        "tasks (/proc/loadavg, every 10 ms at most) leave a hardware thread free, on, off (docs/progress.md)"),
    NUM("FMX_NET_PULL_WINDOW", CFG_SIZE, "0", 0, G, net_pull_window,
        "the most bytes an endpoint's pulls ask for at once, all partners together (the cap of the receiver's "
        "budget, docs/protocol.md); 0 = half the socket's receive buffer"),
    STR("FMX_PEERS", "", NULL, peers,
        "the peer table: a file of 'MAC hostname:board' lines (Open-MX's omx_init_peers format) naming other "
        "hosts' boards; when none is given, names are found on the wire (FMX_NET_DISCOVER_MS)"),
    NUM("FMX_NET_DISCOVER_MS", CFG_INT, "300", 0, 60000, net_discover_ms,
        "without FMX_PEERS, a name missing from the peer table is asked for by broadcast, and the answers "
        "collected this long (3 queries, a third apart); 0 = never"),
    NUM("FMX_FAULT_ALLOC", CFG_INT, "0", 0, UINT32_MAX, fault_alloc,
        "for tests: the Nth allocation on a message path fails (each must become an error completion on both "
        "sides); 0 = none"),
    STR("FMX_TUNING_FILE", "/etc/fmx/tuning.conf", NULL, tuning_file,
        "NAME=VALUE lines applied where the environment sets nothing; missing file is fine"),
};
#undef F
#undef K
#undef G
const size_t config_nentries = sizeof config_table / sizeof config_table[0];

const struct cfg_alias config_aliases[] = {
    {"FMX_MX_ERRORS_FATAL", "OMX_FATAL_ERRORS", 0, 0},
    {"FMX_MX_ERRORS_FATAL", "MX_ERRORS_ARE_FATAL", 1, 0},
    {"FMX_SELF", "OMX_DISABLE_SELF", 0, 1},
    {"FMX_SELF", "MX_DISABLE_SELF", 1, 1},
    {"FMX_SHM", "OMX_DISABLE_SHARED", 0, 1},
    {"FMX_SHM", "MX_DISABLE_SHMEM", 1, 1},
    {"FMX_CONTEXT_IDS", "OMX_CTXIDS", 0, 0},
    {"FMX_ANY_ENDPOINT_FROM", "OMX_ANY_ENDPOINT", 0, 0},
};
const size_t config_naliases = sizeof config_aliases / sizeof config_aliases[0];
