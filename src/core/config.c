/* SPDX-License-Identifier: MIT */
#include "core/config.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "platform/topo.h"

struct fmx_config fmx_cfg;

enum cfg_type { CFG_SIZE, CFG_INT, CFG_BOOL, CFG_STRING };

struct cfg_entry {
  const char *name;
  enum cfg_type type;
  const char *def;
  const char *doc;
  size_t offset; /* into struct fmx_config */
  const char *source;
  char text[128]; /* current value as text (strings point here) */
};

#define F(field) offsetof(struct fmx_config, field)
static struct cfg_entry table[] = {
    {"FMX_LOG", CFG_STRING, "warn", "log level: none, error, warn, info, debug", F(log), NULL, {0}},
    {"FMX_RNDV_THRESHOLD", CFG_SIZE, "256K",
     "messages of this size and above go rendezvous (bulk engine); default one L2 (64K-1M)", F(rndv_threshold), NULL,
     {0}},
    {"FMX_RING_SIZE", CFG_SIZE, "256K",
     "eager ring bytes per connection and direction; default one L2 (64K-1M)", F(ring_size), NULL, {0}},
    {"FMX_EAGER_FRAG", CFG_SIZE, "16K",
     "eager messages longer than this travel in fragments up to this size (the medium class), so the receiver "
     "copies out while the sender copies in; default half the L1 data cache",
     F(eager_frag), NULL, {0}},
    {"FMX_BULK", CFG_STRING, "auto", "bulk engine for large messages: auto, cma, ring, coop, vmsplice, offload", F(bulk), NULL, {0}},
    {"FMX_CMA", CFG_BOOL, "1", "allow the cma engine (process_vm_readv); 0 forbids it", F(cma), NULL, {0}},
    {"FMX_XMEM", CFG_BOOL, "1",
     "map a peer's fmx_mem_alloc memory and copy large messages from or into it directly; 0: never (cma, coop, ring as without it)",
     F(xmem), NULL, {0}},
    {"FMX_BULK_SLOTS", CFG_INT, "8", "slots of the ring engine per connection and direction", F(bulk_slots), NULL, {0}},
    {"FMX_BULK_SLOT_SIZE", CFG_SIZE, "64K",
     "bytes per ring-engine slot; default one L2 / FMX_BULK_SLOTS (at least 64K)", F(bulk_slot_size), NULL, {0}},
    {"FMX_COPY", CFG_STRING, "auto",
     "copy routine of the user-space copies of large messages: auto, memcpy, movsb, avx2_nt, avx512_nt, avx2_nt_clean",
     F(copy), NULL, {0}},
    {"FMX_COPY_NT_THRESHOLD", CFG_SIZE, "8M",
     "messages above this are copied out with non-temporal stores (auto); default half this core's L3 share",
     F(copy_nt_threshold), NULL, {0}},
    {"FMX_COST_CMA", CFG_STRING, "",
     "measured cost of the cma engine, LEVEL:STARTUP_US:MBPS[;...] per topology level (L1 L2 L3 NUMA SYS); fmx_tune writes it",
     F(cost_cma), NULL, {0}},
    {"FMX_COST_RING", CFG_STRING, "",
     "measured cost of the ring engine, same form as FMX_COST_CMA; fmx_tune writes it", F(cost_ring), NULL, {0}},
    {"FMX_COST_COOP", CFG_STRING, "",
     "measured cost of the coop engine, same form as FMX_COST_CMA; fmx_tune writes it", F(cost_coop), NULL, {0}},
    {"FMX_COST_VMSPLICE", CFG_STRING, "",
     "measured cost of the vmsplice engine, same form as FMX_COST_CMA; fmx_tune writes it", F(cost_vmsplice), NULL,
     {0}},
    {"FMX_COST_OFFLOAD", CFG_STRING, "",
     "measured cost of cma run by an offload channel, same form as FMX_COST_CMA; fmx_tune writes it",
     F(cost_offload), NULL, {0}},
    {"FMX_ADAPT", CFG_BOOL, "1",
     "without measured costs (FMX_COST_*), the receiver times its own transfers and keeps the fastest engine per "
     "size class and peer, trying the others now and then; 0 = the topology's rule alone",
     F(adapt), NULL, {0}},
    {"FMX_OFFLOAD", CFG_STRING, "auto",
     "offload channels move large transfers (receives; ring sends): auto (from FMX_OFFLOAD_THRESHOLD or measured "
     "costs, what the application leaves while it computes), on (every rendezvous transfer whose engine can be "
     "offloaded), off",
     F(offload), NULL, {0}},
    {"FMX_OFFLOAD_THRESHOLD", CFG_SIZE, "8M",
     "auto offload from this size (untuned); default L3 / (2 x cores sharing it), the KNEM paper's switch",
     F(offload_threshold), NULL, {0}},
    {"FMX_OFFLOAD_CHANNELS", CFG_INT, "1",
     "helper threads per process moving offloaded transfers (started at the first); 0 = none", F(offload_channels),
     NULL, {0}},
    {"FMX_OFFLOAD_CPUS", CFG_STRING, "",
     "CPU list the channels run on (e.g. 2-3); default every other online CPU when the thread is bound to one, "
     "else every online CPU",
     F(offload_cpus), NULL, {0}},
    {"FMX_CHUNK_MAX", CFG_SIZE, "4M",
     "largest chunk one progress call copies (1024 pages): bounds the stall of other peers", F(chunk_max), NULL, {0}},
    {"FMX_SPIN_US", CFG_INT, "1000", "longest a waiter polls (yielding the core after 5 us) before it blocks on its futex", F(spin_us), NULL, {0}},
    {"FMX_ENDPOINT_MAX", CFG_INT, "256", "endpoint ids per board (0..max-1)", F(endpoint_max), NULL, {0}},
    {"FMX_REQUEST_TIMEOUT_MS", CFG_INT, "0",
     "default request timeout (sends not delivered, connects not answered); 0 = none", F(request_timeout_ms), NULL, {0}},
    {"FMX_TUNING_FILE", CFG_STRING, "/etc/fmx/tuning.conf",
     "NAME=VALUE lines applied where the environment sets nothing; missing file is fine", F(tuning_file), NULL, {0}},
};
#undef F
#define NENTRIES (sizeof table / sizeof table[0])

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static int cfg_loaded;

int config_parse_size(const char *s, uint64_t *out) {
  if (!s || !*s) return -1;
  errno = 0;
  char *end;
  if (*s == '-') return -1;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || end == s) return -1;
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    default: break;
  }
  if (shift && (*end == 'i' || *end == 'I')) end++;
  if (shift && (*end == 'B' || *end == 'b')) end++;
  if (*end != '\0') return -1;
  if (shift && v > (UINT64_MAX >> shift)) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

static struct cfg_entry *find(const char *name) {
  for (size_t i = 0; i < NENTRIES; i++)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

static int apply(struct cfg_entry *e, const char *value, const char *source) {
  char *field = (char *)&fmx_cfg + e->offset;
  uint64_t v = 0;
  switch (e->type) {
    case CFG_SIZE:
    case CFG_INT:
      if (config_parse_size(value, &v)) return -1;
      *(uint64_t *)field = v;
      break;
    case CFG_BOOL:
      if (!strcmp(value, "1") || !strcasecmp(value, "yes") || !strcasecmp(value, "on") || !strcasecmp(value, "true"))
        *(int *)field = 1;
      else if (!strcmp(value, "0") || !strcasecmp(value, "no") || !strcasecmp(value, "off") || !strcasecmp(value, "false"))
        *(int *)field = 0;
      else
        return -1;
      break;
    case CFG_STRING:
      if (strlen(value) >= sizeof e->text) return -1;
      break;
  }
  snprintf(e->text, sizeof e->text, "%s", value);
  if (e->type == CFG_STRING) *(const char **)field = e->text;
  e->source = source;
  return 0;
}

int config_set(const char *name, const char *value, const char *source) {
  struct cfg_entry *e = find(name);
  if (!e || !value) return -1;
  pthread_mutex_lock(&cfg_lock);
  int rc = apply(e, value, source);
  pthread_mutex_unlock(&cfg_lock);
  return rc;
}

const char *config_source(const char *name) {
  struct cfg_entry *e = find(name);
  return e ? e->source : NULL;
}

void config_set_derived(const char *name, uint64_t value, const char *source) {
  struct cfg_entry *e = find(name);
  if (!e || strcmp(e->source, "default") != 0) return;
  char buf[32];
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)value);
  apply(e, buf, source);
}

/* Tuning file: NAME=VALUE per line, '#' comments. Applied only to tunables
 * the environment did not set. A malformed line is skipped with a warning. */
static void load_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '#' || *p == '\0') continue;
    p[strcspn(p, "\r\n")] = '\0';
    char *eq = strchr(p, '=');
    if (!eq) {
      log_warn("FMX-CFG-SYNTAX", "%s:%d: no '=' in line, skipped", path, lineno);
      continue;
    }
    *eq = '\0';
    char *name = p, *value = eq + 1;
    for (char *t = eq - 1; t >= name && isspace((unsigned char)*t); t--) *t = '\0';
    while (isspace((unsigned char)*value)) value++;
    struct cfg_entry *e = find(name);
    if (!e) {
      log_warn("FMX-CFG-UNKNOWN", "%s:%d: unknown tunable %s, skipped", path, lineno, name);
      continue;
    }
    if (strcmp(e->source, "environment") == 0) continue;
    if (apply(e, value, "tuning file"))
      log_warn("FMX-CFG-VALUE", "%s:%d: bad value '%s' for %s, skipped", path, lineno, value, name);
  }
  fclose(f);
}

/* Defaults that follow the cache topology instead of a magic number
 * (measurements behind them: docs/tuning.md):
 *  - rendezvous threshold = one L2: below it the eager class, in fragments
 *    (FMX_EAGER_FRAG) from one page up, beat every bulk engine 1.1-1.7x here
 *    (no round trip, both copies overlap), at one L2 they are even;
 *  - eager ring = one L2 per direction: 512K moved medium messages 1.2-2x
 *    faster than 128K, 256K, 2M or 8M in ping-pong;
 *  - a fragment of a medium message is half the L1 data cache, so the one
 *    being copied out stays in L1 while the next one comes in (8K, 16K and
 *    32K measured even here);
 *  - the ring engine's slots together take one L2 (8 x 64K beat 4 x 64K
 *    1.05-1.4x from 64K to 16M). */
static void derive_from_topology(void) {
  const struct topo_info *t = topo_get();
  if (t->l1.size) {
    uint64_t frag = t->l1.size / 2;
    if (frag < 4096) frag = 4096;
    config_set_derived("FMX_EAGER_FRAG", frag, "topology");
  }
  if (t->l2.size) {
    uint64_t thr = t->l2.size;
    if (thr < 64 * 1024) thr = 64 * 1024;
    if (thr > 1024 * 1024) thr = 1024 * 1024;
    config_set_derived("FMX_RNDV_THRESHOLD", thr, "topology");
    config_set_derived("FMX_RING_SIZE", thr, "topology");
    uint64_t slot = t->l2.size / (fmx_cfg.bulk_slots ? fmx_cfg.bulk_slots : 8);
    if (slot < 64 * 1024) slot = 64 * 1024;
    slot &= ~(uint64_t)4095;
    config_set_derived("FMX_BULK_SLOT_SIZE", slot, "topology");
  }
  /* A destination larger than half the cache the copying core may fill
   * evicts its own first lines before the reader comes: non-temporal stores
   * then save the read-for-ownership and spare the cache (platform/copy.h). */
  const struct topo_cache_info *llc = t->l3.size ? &t->l3 : &t->l2;
  if (llc->size) {
    uint64_t share = llc->size / (uint64_t)(llc->nshare > 0 ? llc->nshare : 1);
    config_set_derived("FMX_COPY_NT_THRESHOLD", share / 2, "topology");
    /* The KNEM paper's offload switch: a message larger than its half of
     * the cache share of one process no longer stays in cache; a channel on
     * another core then costs nothing the cache would have saved. */
    config_set_derived("FMX_OFFLOAD_THRESHOLD", share / 2, "topology");
  }
}

static void load_locked(void) {
  for (size_t i = 0; i < NENTRIES; i++) {
    apply(&table[i], table[i].def, "default");
  }
  /* The log level first, so FMX_LOG=none also silences what follows. */
  const char *lv = getenv("FMX_LOG");
  if (lv) log_set_level(lv);
  for (size_t i = 0; i < NENTRIES; i++) {
    const char *v = getenv(table[i].name);
    if (v && apply(&table[i], v, "environment"))
      log_warn("FMX-CFG-VALUE", "bad value '%s' for %s, default %s kept", v, table[i].name, table[i].def);
  }
  log_set_level(fmx_cfg.log);
  load_file(fmx_cfg.tuning_file);
  log_set_level(fmx_cfg.log);
  cfg_loaded = 1;
}

void config_load(void) {
  pthread_mutex_lock(&cfg_lock);
  if (!cfg_loaded) load_locked();
  pthread_mutex_unlock(&cfg_lock);
  static pthread_once_t derived = PTHREAD_ONCE_INIT;
  pthread_once(&derived, derive_from_topology);
}

void config_reload(void) {
  pthread_mutex_lock(&cfg_lock);
  load_locked();
  pthread_mutex_unlock(&cfg_lock);
  derive_from_topology();
}

void config_foreach(void (*fn)(const struct config_item *item, void *arg), void *arg) {
  config_load();
  for (size_t i = 0; i < NENTRIES; i++) {
    struct config_item it = {table[i].name, table[i].text, table[i].source, table[i].def, table[i].doc};
    fn(&it, arg);
  }
}
