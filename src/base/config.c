/* SPDX-License-Identifier: MIT */
#include "base/config.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <strings.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"

struct fmx_config fmx_cfg;

/* A boolean's text: 1, 0, or -1 when it is none. */
static int bool_of(const char *v) {
  if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcasecmp(v, "true")) return 1;
  if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcasecmp(v, "false")) return 0;
  return -1;
}

enum cfg_type { CFG_SIZE, CFG_INT, CFG_BOOL, CFG_STRING };

/* One row: numbers are checked against [min, max], strings against
 * `choices` (space-separated; NULL: free text). A refused value leaves
 * the previous one in force and is remembered in `bad`, so the warning
 * (config_report) can name the value that stands once the topology has
 * filled in its defaults. */
struct cfg_entry {
  const char *name;
  enum cfg_type type;
  const char *def;
  const char *doc;
  size_t offset; /* into struct fmx_config */
  uint64_t min, max;
  const char *choices;
  const char *source;
  char text[128]; /* current value as text (strings point here) */
  char bad[192];  /* the last refused setting, "" if none */
};

#define F(field) offsetof(struct fmx_config, field)
#define NUM(name, type, def, lo, hi, field, doc) {name, type, def, doc, F(field), lo, hi, NULL, NULL, {0}, {0}}
#define STR(name, def, choices, field, doc) {name, CFG_STRING, def, doc, F(field), 0, 0, choices, NULL, {0}, {0}}
#define BOOL(name, def, field, doc) {name, CFG_BOOL, def, doc, F(field), 0, 1, NULL, NULL, {0}, {0}}
#define K 1024ull
#define G (1024ull * 1024 * 1024)
static struct cfg_entry table[] = {
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
    NUM("FMX_POOL_BUFFERS", CFG_INT, "64", 4, 65536, pool_buffers,
        "buffers of an endpoint's send pool, shared by its connections (medium fragments, ring-engine chunks); "
        "default one L2 of FMX_EAGER_FRAG fragments"),
    NUM("FMX_EAGER_FRAG", CFG_SIZE, "16K", 64, G, eager_frag,
        "eager messages longer than this travel in fragments up to this size (the medium class), so the receiver "
        "copies out while the sender copies in; default half the L1 data cache"),
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
        "measured cost of the cma engine, LEVEL:STARTUP_US:MBPS[;...] per topology level (L1 L2 L3 NUMA SYS); "
        "fmx_tune writes it"),
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
        "auto offload from this size (untuned); default L3 / (2 x cores sharing it), the KNEM paper's switch"),
    NUM("FMX_COPY_ASYNC_THRESHOLD", CFG_SIZE, "512K", 0, UINT64_MAX, copy_async_threshold,
        "fmx_copy_async: shorter copies are done at once by the caller, longer ones by an offload channel; "
        "default one L2 (64K-1M)"),
    NUM("FMX_OFFLOAD_CHANNELS", CFG_INT, "1", 0, 256, offload_channels,
        "helper threads per process moving offloaded transfers (started at the first); 0 = none"),
    STR("FMX_OFFLOAD_CPUS", "", NULL, offload_cpus,
        "CPU list the channels run on (e.g. 2-3); default every other online CPU when the thread is bound to one, "
        "else every online CPU"),
    NUM("FMX_CHUNK_MAX", CFG_SIZE, "4M", 4 * K, G, chunk_max,
        "largest chunk one progress call copies (1024 pages): bounds the stall of other peers"),
    NUM("FMX_SPIN_US", CFG_INT, "1000", 0, 10000000, spin_us,
        "longest a waiter polls (yielding the core after 5 us) before it blocks on its futex"),
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
        "packets in flight per partner, not yet acked"),
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
        "raw wire: how the answers to pulls travel: udp (GSO trains to a UDP socket beside the raw one, where "
        "the interface has an IPv4 address) or wire (raw frames one by one)"),
    NUM("FMX_NET_PULL_THRESHOLD", CFG_SIZE, "0", 0, G, net_pull_threshold,
        "messages to other hosts of this many bytes or more are pulled by the receiver (rendezvous); shorter "
        "ones go eagerly in fragments; 0 = the MTU's packets times the wire's measured ratio (raw 8, UDP 5)"),
    NUM("FMX_NET_PULL_WINDOW", CFG_SIZE, "0", 0, G, net_pull_window,
        "bytes one pull asks for at once; 0 = half the socket's receive buffer"),
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
#define NENTRIES (sizeof table / sizeof table[0])

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static int cfg_loaded;

int config_parse_size(const char *s, uint64_t *out) {
  if (!s || !*s) return -EINVAL;
  errno = 0;
  char *end;
  if (*s == '-' || isspace((unsigned char)*s)) return -EINVAL;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || end == s) return -EINVAL;
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    default: break;
  }
  if (shift && (*end == 'i' || *end == 'I')) end++;
  if (shift && (*end == 'B' || *end == 'b')) end++;
  if (*end != '\0') return -EINVAL;
  if (shift && v > (UINT64_MAX >> shift)) return -EINVAL;
  *out = (uint64_t)v << shift;
  return 0;
}

static struct cfg_entry *find(const char *name) {
  for (size_t i = 0; i < NENTRIES; i++)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

static int is_choice(const char *choices, const char *v) {
  size_t n = strlen(v);
  for (const char *c = choices; *c;) {
    size_t k = strcspn(c, " ");
    if (k == n && strncmp(c, v, n) == 0) return 1;
    c += k;
    while (*c == ' ') c++;
  }
  return 0;
}

static void fmt_num(const struct cfg_entry *e, uint64_t v, char *buf, size_t len) {
  if (e->type == CFG_SIZE && v && v % (1ull << 30) == 0)
    snprintf(buf, len, "%lluG", (unsigned long long)(v >> 30));
  else if (e->type == CFG_SIZE && v && v % (1ull << 20) == 0)
    snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
  else if (e->type == CFG_SIZE && v && v % 1024 == 0)
    snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
  else
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* Check and apply; NULL, or why the value is refused (nothing changed). */
static const char *apply(struct cfg_entry *e, const char *value, const char *source, char *why, size_t wlen) {
  char *field = (char *)&fmx_cfg + e->offset;
  uint64_t v = 0;
  switch (e->type) {
    case CFG_SIZE:
    case CFG_INT:
      if (config_parse_size(value, &v))
        return e->type == CFG_SIZE ? "not a size (e.g. 4096, 64K, 4M, 1G)" : "not a non-negative integer";
      if (v < e->min || v > e->max) {
        char lo[24], hi[24];
        fmt_num(e, e->min, lo, sizeof lo);
        fmt_num(e, e->max, hi, sizeof hi);
        snprintf(why, wlen, "out of range [%s, %s]", lo, hi);
        return why;
      }
      *(uint64_t *)field = v;
      break;
    case CFG_BOOL:
      if (bool_of(value) < 0) return "not a boolean (1, 0, yes, no, on, off, true, false)";
      *(int *)field = bool_of(value);
      value = *(int *)field ? "1" : "0"; /* the text in force, as a reader of the table expects it */
      break;
    case CFG_STRING:
      if (strlen(value) >= sizeof e->text) return "too long";
      if (e->choices && !is_choice(e->choices, value)) {
        snprintf(why, wlen, "not one of: %s", e->choices);
        return why;
      }
      break;
  }
  snprintf(e->text, sizeof e->text, "%s", value);
  if (e->type == CFG_STRING) *(const char **)field = e->text;
  e->source = source;
  return NULL;
}

/* A user's setting: applied, or remembered as refused for config_report. */
static void apply_user(struct cfg_entry *e, const char *value, const char *source, const char *where) {
  char why[96];
  const char *err = apply(e, value, source, why, sizeof why);
  if (err) snprintf(e->bad, sizeof e->bad, "'%.40s' from %.60s: %.50s", value, where, err);
}

int config_set(const char *name, const char *value, const char *source) {
  struct cfg_entry *e = find(name);
  if (!e || !value) return -EINVAL;
  char why[96];
  pthread_mutex_lock(&cfg_lock);
  int rc = apply(e, value, source, why, sizeof why) ? -EINVAL : 0;
  pthread_mutex_unlock(&cfg_lock);
  return rc;
}

const char *config_source(const char *name) {
  struct cfg_entry *e = find(name);
  return e ? e->source : NULL;
}

const char *config_value(const char *name) {
  config_load();
  struct cfg_entry *e = find(name);
  return e ? e->text : NULL;
}

void config_set_derived(const char *name, uint64_t value, const char *source) {
  struct cfg_entry *e = find(name);
  if (!e || strcmp(e->source, "default") != 0) return;
  char buf[32], why[96];
  if (value < e->min) value = e->min;
  if (value > e->max) value = e->max;
  fmt_num(e, value, buf, sizeof buf);
  apply(e, buf, source, why, sizeof why);
}

/* Tuning file: NAME=VALUE per line; '#' starts a comment anywhere;
 * blanks around names and values are ignored. Applied only to tunables
 * the environment did not set. A bad line is skipped with a warning that
 * names the file and line. The file is read whole, at most TUNING_MAX
 * bytes, and must be a regular file: a path like /dev/zero would
 * otherwise never end (seen: fmx_info hung). */
#define TUNING_MAX (1u << 20)
static char *read_tuning_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  struct stat st;
  char *buf = NULL;
  if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
    log_warn("FMX-CFG-FILE", "%s is not a regular file: ignored", path);
  } else if ((uint64_t)st.st_size > TUNING_MAX) {
    log_warn("FMX-CFG-FILE", "%s is larger than %u bytes: ignored", path, TUNING_MAX);
  } else if ((buf = malloc((size_t)st.st_size + 1)) != NULL) {
    *len = fread(buf, 1, (size_t)st.st_size, f);
    buf[*len] = '\0';
  }
  fclose(f);
  return buf;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *t = s + strlen(s);
  while (t > s && isspace((unsigned char)t[-1])) *--t = '\0';
  return s;
}

static void load_file(const char *path) {
  size_t len = 0;
  char *buf = read_tuning_file(path, &len);
  if (!buf) return;
  int lineno = 0;
  for (char *line = buf; line && line < buf + len;) {
    char *nl = memchr(line, '\n', (size_t)(buf + len - line));
    if (nl) *nl = '\0';
    lineno++;
    char where[300];
    snprintf(where, sizeof where, "%.256s:%d", path, lineno);
    if (strlen(line) != (size_t)((nl ? nl : buf + len) - line)) {
      log_warn_each("FMX-CFG-SYNTAX", "%s: NUL byte in line, skipped", where);
    } else {
      line[strcspn(line, "#")] = '\0';
      char *p = trim(line);
      char *eq = strchr(p, '=');
      if (*p && !eq) {
        log_warn_each("FMX-CFG-SYNTAX", "%s: no '=' in line, skipped", where);
      } else if (*p) {
        *eq = '\0';
        char *name = trim(p), *value = trim(eq + 1);
        struct cfg_entry *e = find(name);
        if (!e)
          log_warn_each("FMX-CFG-UNKNOWN", "%s: unknown tunable %.64s, skipped", where, name);
        else if (strcmp(e->source, "environment") != 0)
          apply_user(e, value, "tuning file", where);
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  free(buf);
}

/* Defaults derived at run time (the core's, from the topology): set once
 * by whoever owns them, since this table sits below every layer. */
static void (*deriver)(void);
void config_set_deriver(void (*fn)(void)) { deriver = fn; }

static void derive(void) {
  if (deriver) deriver();
}

/* Other names of tunables, in the order they are looked at. */
static const struct {
  const char *name, *alias;
  int mx;     /* an MX name (not an Open-MX one) */
  int invert; /* a boolean that means the opposite (DISABLE_...) */
} aliases[] = {
    {"FMX_MX_ERRORS_FATAL", "OMX_FATAL_ERRORS", 0, 0},
    {"FMX_MX_ERRORS_FATAL", "MX_ERRORS_ARE_FATAL", 1, 0},
    {"FMX_SELF", "OMX_DISABLE_SELF", 0, 1},
    {"FMX_SELF", "MX_DISABLE_SELF", 1, 1},
    {"FMX_SHM", "OMX_DISABLE_SHARED", 0, 1},
    {"FMX_SHM", "MX_DISABLE_SHMEM", 1, 1},
    {"FMX_CONTEXT_IDS", "OMX_CTXIDS", 0, 0},
    {"FMX_ANY_ENDPOINT_FROM", "OMX_ANY_ENDPOINT", 0, 0},
};

/* A boolean's text turned around ("1" -> "0"); anything else as it is, so
 * the table refuses it with its own words. */
static const char *inverted(const char *v) {
  int b = bool_of(v);
  return b < 0 ? v : b ? "0" : "1";
}

static void load_locked(void) {
  for (size_t i = 0; i < NENTRIES; i++) {
    char why[96];
    table[i].bad[0] = '\0';
    apply(&table[i], table[i].def, "default", why, sizeof why);
  }
  /* The log level first, so FMX_LOG=none also silences what follows. */
  const char *lv = getenv("FMX_LOG");
  if (lv) log_set_level(lv);
  for (size_t i = 0; i < NENTRIES; i++) {
    const char *v = getenv(table[i].name);
    if (v) apply_user(&table[i], v, "environment", "the environment");
  }
  /* Open-MX's and MX's names of a tunable, read when its own is unset
   * (the first one set wins; MX's are ignored with OMX_IGNORE_MX_ENV, as
   * Open-MX did). */
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
    struct cfg_entry *e = find(aliases[i].name);
    const char *v = getenv(aliases[i].alias);
    if (!e || !v || strcmp(e->source, "default") != 0) continue;
    if (aliases[i].mx && getenv("OMX_IGNORE_MX_ENV")) continue;
    apply_user(e, aliases[i].invert ? inverted(v) : v, "environment", aliases[i].alias);
  }
  log_set_level(fmx_cfg.log);
  load_file(fmx_cfg.tuning_file);
  log_set_level(fmx_cfg.log);
  log_repeat_ns = fmx_cfg.log_repeat_ms * 1000000ull;
  cfg_loaded = 1;
}

/* One warning per refused setting, once the defaults the topology derives
 * are in: it names the value that stands and where it came from. */
static void report(void) {
  for (size_t i = 0; i < NENTRIES; i++)
    if (table[i].bad[0])
      log_warn_each("FMX-CFG-VALUE", "%s=%s; %s=%s (%s) in force", table[i].name, table[i].bad, table[i].name,
               table[i].text, table[i].source);
}

void config_load(void) {
  pthread_mutex_lock(&cfg_lock);
  if (!cfg_loaded) load_locked();
  pthread_mutex_unlock(&cfg_lock);
  static pthread_once_t derived = PTHREAD_ONCE_INIT;
  pthread_once(&derived, derive);
  static pthread_once_t reported = PTHREAD_ONCE_INIT;
  pthread_once(&reported, report);
}

void config_reload(void) {
  pthread_mutex_lock(&cfg_lock);
  load_locked();
  pthread_mutex_unlock(&cfg_lock);
  derive();
  report();
}

size_t config_count(void) { return NENTRIES; }

int config_item_at(size_t i, struct config_item *it) {
  config_load();
  if (i >= NENTRIES) return -ENOENT;
  *it = (struct config_item){table[i].name, table[i].text, table[i].source, table[i].def, table[i].doc, table[i].bad};
  return 0;
}

void config_foreach(void (*fn)(const struct config_item *item, void *arg), void *arg) {
  config_load();
  for (size_t i = 0; i < NENTRIES; i++) {
    struct config_item it = {table[i].name, table[i].text, table[i].source, table[i].def, table[i].doc, table[i].bad};
    fn(&it, arg);
  }
}
