/* SPDX-License-Identifier: MIT */
/*
 * fmx_info - what fmx sees on this host: version, NIC id, CPU and cache
 * topology, which bulk engines can run here (or why not), and with --config
 * the table of tunables. -d, -c and -b print one section each (devices,
 * configuration, build), -v the version alone, in the manner of ucx_info.
 * --json gives the same facts as one JSON object for scripts and bug reports.
 */
#define _GNU_SOURCE
#include <fmx.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ENGINES 16
#define MAX_IFACES 32
#define MAX_PEERS 4096

/* Everything through fmx_get_info: this tool uses the public API only. */
struct facts {
  char host[256];
  uint64_t nic_id;
  fmx_return_t nic_rc; /* FMX_SUCCESS or why nic_id is missing */
  fmx_topology_t topo;
  int nengines;
  char engine[MAX_ENGINES][32];
  char engine_status[MAX_ENGINES][256];
  char ofi[4096]; /* where libfabric would load libfmx-fi.so from; "" = nowhere */
  const char *ofi_how; /* "FI_PROVIDER_PATH" or "installed" */
  int nifaces;
  fmx_iface_t iface[MAX_IFACES];
  int npeers;
  fmx_peer_t *peer;   /* npeers */
  int32_t discovered; /* boards that answered the query; -1: not asked */
};

#ifndef FMX_FI_DIR
#define FMX_FI_DIR "" /* built without libfabric-dev */
#endif
/* How this fmx was built (CMakeLists.txt passes them). */
#ifndef FMX_BUILD_PREFIX
#define FMX_BUILD_PREFIX "?"
#endif
#ifndef FMX_BUILD_TYPE
#define FMX_BUILD_TYPE "?"
#endif
#ifndef FMX_BUILD_CC
#define FMX_BUILD_CC "?"
#endif
#ifndef FMX_BUILD_FLAGS
#define FMX_BUILD_FLAGS ""
#endif
#ifndef FMX_BUILD_FABRIC
#define FMX_BUILD_FABRIC ""
#endif
#ifndef FMX_BUILD_MX
#define FMX_BUILD_MX 0
#endif
#ifndef FMX_BUILD_MPI
#define FMX_BUILD_MPI ""
#endif
#ifndef FMX_BUILD_MAN
#define FMX_BUILD_MAN 0
#endif

/* What to print: the host (version, CPU, caches, provider), the devices
 * (engines, interfaces, peers), the tunables, the build. */
enum { SEC_HOST = 1, SEC_DEVICES = 2, SEC_CONFIG = 4, SEC_BUILD = 8 };

/* Where libfabric finds the provider: the directories of FI_PROVIDER_PATH
 * (only those, when it is set), else where it was installed: beside this
 * program's prefix when FMX_FI_DIR was relative to it (so that
 * `cmake --install --prefix P` is found under P), else FMX_FI_DIR. */
static void find_provider(struct facts *fx)
{
  const char *path = getenv("FI_PROVIDER_PATH");
  fx->ofi[0] = 0;
  fx->ofi_how = path ? "FI_PROVIDER_PATH" : "installed";
  char dirs[4096];
  snprintf(dirs, sizeof dirs, "%s", path ? path : FMX_FI_DIR);
#ifdef FMX_FI_FROM_BIN
  char exe[2048];
  ssize_t n = path ? -1 : readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      snprintf(dirs, sizeof dirs, "%s/%s:%s", exe, FMX_FI_FROM_BIN, FMX_FI_DIR);
    }
  }
#endif
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    char f[4096];
    snprintf(f, sizeof f, "%s/libfmx-fi.so", d);
    if (access(f, R_OK) == 0) {
      char real[PATH_MAX];
      snprintf(fx->ofi, sizeof fx->ofi, "%s", realpath(f, real) ? real : f);
      return;
    }
  }
}

/* Call fn for every tunable of the library's table, in order. */
static void for_each_item(void (*fn)(const fmx_config_item_t *it, void *arg), void *arg)
{
  uint32_t n = 0;
  if (fmx_get_info(NULL, FMX_INFO_CONFIG_COUNT, NULL, 0, &n, sizeof n) != FMX_SUCCESS)
    return;
  for (uint32_t i = 0; i < n; i++) {
    fmx_config_item_t it;
    if (fmx_get_info(NULL, FMX_INFO_CONFIG_ITEM, &i, sizeof i, &it, sizeof it) == FMX_SUCCESS)
      fn(&it, arg);
  }
}

static void usage(FILE *f)
{
  fprintf(f,
          "usage: fmx_info [-v|--version] [-d] [-c] [-b] [--config] [--json] [--no-discover] [--help]\n"
          "  Print what fmx sees on this host: version, NIC id, CPU and caches,\n"
          "  whether each bulk copy engine can run here (or why not), the network\n"
          "  interfaces (board 0 is the one fmx uses to reach other hosts) and the\n"
          "  peer table. Without a peer file (FMX_PEERS) the table is filled by a\n"
          "  query broadcast on board 0, answered by every host where an fmx\n"
          "  endpoint is open (FMX_NET_DISCOVER_MS).\n"
          "  -v, --version  print the version and exit\n"
          "  -d, --devices  only the devices: bulk engines, interfaces and wires, peers\n"
          "  -c             only the configuration: the tunables, their values and sources\n"
          "  -b, --build    only how this fmx was built: prefix, compiler, parts built\n"
          "  --config       the tunables after the rest (by default: everything)\n"
          "  --json         print the same facts as one JSON object\n"
          "  --no-discover  print the peer table as it is, asking nothing on the wire\n"
          "  --help         this text\n");
}

/* The interfaces and the peer table, after a query on the wire when
 * discover is set (and no peer file is given). */
static void gather_net(struct facts *fx, int discover)
{
  uint32_t n = 0;
  fmx_get_info(NULL, FMX_INFO_IFACE_COUNT, NULL, 0, &n, sizeof n);
  fx->nifaces = 0;
  for (uint32_t i = 0; i < n && fx->nifaces < MAX_IFACES; i++)
    if (fmx_get_info(NULL, FMX_INFO_IFACE, &i, sizeof i, &fx->iface[fx->nifaces], sizeof fx->iface[0]) == FMX_SUCCESS)
      fx->nifaces++;
  fx->discovered = -1;
  if (discover)
    fmx_get_info(NULL, FMX_INFO_DISCOVER, NULL, 0, &fx->discovered, sizeof fx->discovered);
  n = 0;
  fmx_get_info(NULL, FMX_INFO_PEER_COUNT, NULL, 0, &n, sizeof n);
  if (n > MAX_PEERS)
    n = MAX_PEERS;
  fx->peer = calloc(n ? n : 1, sizeof *fx->peer);
  fx->npeers = 0;
  for (uint32_t i = 0; fx->peer && i < n; i++)
    if (fmx_get_info(NULL, FMX_INFO_PEER, &i, sizeof i, &fx->peer[fx->npeers], sizeof fx->peer[0]) == FMX_SUCCESS)
      fx->npeers++;
}

static void gather(struct facts *fx)
{
  if (gethostname(fx->host, sizeof(fx->host)) < 0)
    snprintf(fx->host, sizeof(fx->host), "unknown");
  fx->host[sizeof(fx->host) - 1] = '\0'; /* POSIX leaves truncation unterminated */
  find_provider(fx);

  fx->nic_rc = fmx_get_info(NULL, FMX_INFO_NIC_ID, NULL, 0, &fx->nic_id, sizeof(fx->nic_id));
  memset(&fx->topo, 0, sizeof fx->topo);
  if (fmx_get_info(NULL, FMX_INFO_TOPOLOGY, NULL, 0, &fx->topo, sizeof fx->topo) != FMX_SUCCESS)
    snprintf(fx->topo.source, sizeof fx->topo.source, "unknown");

  /* Names from the library's engine list, so a new engine shows up here
   * without touching this file. */
  uint32_t n = 0;
  fmx_get_info(NULL, FMX_INFO_ENGINE_COUNT, NULL, 0, &n, sizeof n);
  fx->nengines = 0;
  for (uint32_t i = 0; i < n && i < MAX_ENGINES; i++) {
    char *name = fx->engine[i];
    char *buf = fx->engine_status[i];
    size_t len = sizeof(fx->engine_status[i]);
    if (fmx_get_info(NULL, FMX_INFO_ENGINE_NAME, &i, sizeof i, name, sizeof fx->engine[i]) != FMX_SUCCESS)
      break;
    fx->nengines++;
    memset(buf, 0, len);
    fmx_return_t rc = fmx_get_info(NULL, FMX_INFO_ENGINE_STATUS, name,
                                   (uint32_t)strlen(name) + 1, buf, (uint32_t)len - 1);
    if (rc != FMX_SUCCESS)
      snprintf(buf, len, "unknown (%s)", fmx_strerror(rc));
    else if (!buf[0])
      snprintf(buf, len, "unknown");
  }
}

static const char *fmt_size(uint64_t v, char *buf, size_t len)
{
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, "%" PRIu64 " %s", v, unit[u]);
  return buf;
}

static const char *mac_str(uint64_t nic, char *buf, size_t len)
{
  snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", (unsigned)(nic >> 40) & 0xff, (unsigned)(nic >> 32) & 0xff,
           (unsigned)(nic >> 24) & 0xff, (unsigned)(nic >> 16) & 0xff, (unsigned)(nic >> 8) & 0xff,
           (unsigned)nic & 0xff);
  return buf;
}

static const char *ip_str(uint32_t ip, char *buf, size_t len)
{
  const unsigned char *b = (const unsigned char *)&ip; /* network order */
  if (!ip)
    snprintf(buf, len, "-");
  else
    snprintf(buf, len, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
  return buf;
}

static const char *wires_str(uint32_t flags, char *buf, size_t len)
{
  snprintf(buf, len, "%s%s%s", flags & FMX_IFACE_RAW ? "raw" : "",
           (flags & FMX_IFACE_RAW) && (flags & FMX_IFACE_UDP) ? "," : "", flags & FMX_IFACE_UDP ? "udp" : "");
  if (!buf[0] || !(flags & FMX_IFACE_ETHER) || (flags & FMX_IFACE_LOOPBACK))
    snprintf(buf, len, "none");
  return buf;
}

static const char *peer_source(uint32_t s)
{
  return s == FMX_PEER_LOCAL ? "this host" : s == FMX_PEER_FILE ? "file" : "discovered";
}

/* --- text ----------------------------------------------------------------- */

static void print_cache(const char *name, const fmx_cache_info_t *c)
{
  char sz[32];
  if (!c->size) {
    printf("%-14s none\n", name);
    return;
  }
  printf("%-14s %s, shared by %d PU%s (cpus %s)\n", name, fmt_size(c->size, sz, sizeof(sz)),
         c->nshare, c->nshare == 1 ? "" : "s", c->cpus);
}

static void print_item(const fmx_config_item_t *it, void *arg)
{
  (void)arg;
  printf("%-24s %-22s %-12s %s (default %s)\n", it->name, it->value, it->source, it->doc, it->def);
  if (it->refused[0]) printf("%-24s   refused: %s\n", "", it->refused);
}

/* The build: prefix, type, compiler, which optional parts are in. */
static void print_build(void)
{
  printf("build:\n");
  printf("  %-14s %s\n", "prefix", FMX_BUILD_PREFIX " (as configured)");
  printf("  %-14s %s%s%s%s\n", "build type", FMX_BUILD_TYPE, FMX_BUILD_FLAGS[0] ? " (" : "", FMX_BUILD_FLAGS,
         FMX_BUILD_FLAGS[0] ? ")" : "");
  printf("  %-14s %s\n", "compiler", FMX_BUILD_CC);
  if (FMX_FI_DIR[0])
    printf("  %-14s libfmx-fi.so for libfabric %s, installed into %s\n", "provider", FMX_BUILD_FABRIC, FMX_FI_DIR);
  else
    printf("  %-14s not built (FMX_WITH_OFI)\n", "provider");
  printf("  %-14s %s\n", "mx face", FMX_BUILD_MX ? "built (libmyriexpress, omx_* tools)" : "not built (FMX_WITH_MX)");
  if (FMX_BUILD_MPI[0])
    printf("  %-14s fmx_perf_mpi built with MPI %s\n", "mpi", FMX_BUILD_MPI);
  else
    printf("  %-14s fmx_perf_mpi not built (FMX_WITH_MPI)\n", "mpi");
  printf("  %-14s %s\n", "man pages", FMX_BUILD_MAN ? "built" : "not built (FMX_WITH_MAN)");
}

static void print_host(const struct facts *fx)
{
  const fmx_topology_t *t = &fx->topo;
  printf("%-14s %s\n", "host", fx->host);
  if (fx->nic_rc == FMX_SUCCESS)
    printf("%-14s 0x%016" PRIx64 "\n", "nic id", fx->nic_id);
  else
    printf("%-14s unknown (%s)\n", "nic id", fmx_strerror(fx->nic_rc));
  printf("%-14s %s\n", "cpu", t->cpu_model);
  printf("%-14s %d (%d PUs)\n", "cores", t->ncores, t->npus);
  printf("%-14s %d\n", "numa nodes", t->numa_nodes);
  if (t->virtualized) printf("%-14s %s\n", "virtualized", "yes (cache sizes may be the host's)");
  print_cache("L1d", &t->l1d);
  print_cache("L2", &t->l2);
  print_cache("L3", &t->l3);
  printf("%-14s %s\n", "topology from", t->source);
  if (fx->ofi[0])
    printf("%-14s %s (%s)\n", "libfabric", fx->ofi, fx->ofi_how);
  else if (FMX_FI_DIR[0])
    printf("%-14s provider not found (make install puts libfmx-fi.so into %s; from a build tree set "
           "FI_PROVIDER_PATH=<build>/ofi)\n", "libfabric", FMX_FI_DIR);
  else
    printf("%-14s provider not built (no libfabric-dev: make deps installs it)\n", "libfabric");
}

static void print_devices(const struct facts *fx)
{
  printf("engines:\n");
  for (int i = 0; i < fx->nengines; i++)
    printf("  %-12s %s\n", fx->engine[i], fx->engine_status[i]);
  char a[32], b[32], w[16];
  printf("interfaces:\n");
  for (int i = 0; i < fx->nifaces; i++) {
    const fmx_iface_t *f = &fx->iface[i];
    printf("  %-10s %s  mtu %-5u  ipv4 %-15s  %-4s  wires %-7s%s\n", f->name, mac_str(f->nic_id, a, sizeof a), f->mtu,
           ip_str(f->ipv4, b, sizeof b), f->flags & FMX_IFACE_UP ? "up" : "down", wires_str(f->flags, w, sizeof w),
           f->flags & FMX_IFACE_BOARD ? "  board 0" : "");
  }
  const char *how = getenv("FMX_PEERS");
  if (how && how[0])
    printf("peer table: %d entr%s, from %s\n", fx->npeers, fx->npeers == 1 ? "y" : "ies", how);
  else if (fx->discovered >= 0)
    printf("peer table: %d entr%s; %d answer%s to a query on the wire\n", fx->npeers, fx->npeers == 1 ? "y" : "ies",
           fx->discovered, fx->discovered == 1 ? "" : "s");
  else
    printf("peer table: %d entr%s (not discovered%s)\n", fx->npeers, fx->npeers == 1 ? "y" : "ies",
           fx->discovered == -1 ? "" : ": no board");
  for (int i = 0; i < fx->npeers; i++)
    printf("  %d) %s %s (%s)\n", i, mac_str(fx->peer[i].nic_id, a, sizeof a), fx->peer[i].name,
           peer_source(fx->peer[i].source));
}

static void print_text(const struct facts *fx, int sections)
{
  printf("fmx %s\n", FMX_VERSION_STRING);
  if (sections & SEC_HOST)
    print_host(fx);
  if (sections & SEC_DEVICES)
    print_devices(fx);
  if (sections & SEC_CONFIG) {
    printf("config:\n%-24s %-22s %-12s %s\n", "tunable", "value", "source", "meaning");
    for_each_item(print_item, NULL);
  }
  if (sections & SEC_BUILD)
    print_build();
}

/* --- JSON ----------------------------------------------------------------- */

static void json_str(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c == '\n')
      fputs("\\n", stdout);
    else if (c == '\t')
      fputs("\\t", stdout);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

static void json_cache(const char *name, const fmx_cache_info_t *c, int last)
{
  printf("    \"%s\": {\"size\": %" PRIu64 ", \"nshare\": %d, \"cpus\": ", name, c->size, c->nshare);
  json_str(c->cpus);
  printf("}%s\n", last ? "" : ",");
}

static void json_item(const fmx_config_item_t *it, void *arg)
{
  int *first = arg;
  printf("%s\n    {\"name\": ", *first ? "" : ",");
  json_str(it->name);
  printf(", \"value\": ");
  json_str(it->value);
  printf(", \"source\": ");
  json_str(it->source);
  printf(", \"default\": ");
  json_str(it->def);
  printf(", \"doc\": ");
  json_str(it->doc);
  printf(", \"refused\": ");
  json_str(it->refused);
  putchar('}');
  *first = 0;
}

/* The tunables as objects: name, value, source, default, doc. */
static void json_config(void)
{
  int first = 1;
  printf(",\n  \"config\": [");
  for_each_item(json_item, &first);
  printf("\n  ]");
}

/* Each section's keys, after a ",\n" (the version key comes first). */
static void json_host(const struct facts *fx)
{
  const fmx_topology_t *t = &fx->topo;
  printf(",\n  \"host\": ");
  json_str(fx->host);
  /* A string: a 64-bit id does not survive JSON readers that use doubles. */
  if (fx->nic_rc == FMX_SUCCESS)
    printf(",\n  \"nic_id\": \"0x%016" PRIx64 "\",\n", fx->nic_id);
  else
    printf(",\n  \"nic_id\": null,\n");
  printf("  \"ofi_provider\": ");
  if (fx->ofi[0])
    json_str(fx->ofi);
  else
    printf("null");
  printf(",\n  \"cpu_model\": ");
  json_str(t->cpu_model);
  printf(",\n  \"cores\": %d,\n  \"pus\": %d,\n  \"numa_nodes\": %d,\n  \"virtualized\": %s,\n", t->ncores,
         t->npus, t->numa_nodes, t->virtualized ? "true" : "false");
  printf("  \"topology_source\": ");
  json_str(t->source);
  printf(",\n  \"caches\": {\n");
  json_cache("l1d", &t->l1d, 0);
  json_cache("l2", &t->l2, 0);
  json_cache("l3", &t->l3, 1);
  printf("  }");
}

static void json_devices(const struct facts *fx)
{
  char a[32], b[32];
  printf(",\n  \"interfaces\": [");
  for (int i = 0; i < fx->nifaces; i++) {
    const fmx_iface_t *f = &fx->iface[i];
    printf("%s\n    {\"name\": ", i ? "," : "");
    json_str(f->name);
    printf(", \"mac\": \"%s\", \"mtu\": %u, \"ipv4\": \"%s\", \"up\": %s, \"board\": %s, \"raw\": %s, \"udp\": %s}",
           mac_str(f->nic_id, a, sizeof a), f->mtu, ip_str(f->ipv4, b, sizeof b),
           f->flags & FMX_IFACE_UP ? "true" : "false", f->flags & FMX_IFACE_BOARD ? "true" : "false",
           f->flags & FMX_IFACE_RAW ? "true" : "false", f->flags & FMX_IFACE_UDP ? "true" : "false");
  }
  printf("\n  ],\n  \"discovered\": %d,\n  \"peers\": [", fx->discovered);
  for (int i = 0; i < fx->npeers; i++) {
    printf("%s\n    {\"mac\": \"%s\", \"name\": ", i ? "," : "", mac_str(fx->peer[i].nic_id, a, sizeof a));
    json_str(fx->peer[i].name);
    printf(", \"source\": \"%s\"}", peer_source(fx->peer[i].source));
  }
  printf("\n  ],\n");
  printf("  \"engines\": {");
  for (int i = 0; i < fx->nengines; i++) {
    printf("%s\n    ", i ? "," : "");
    json_str(fx->engine[i]);
    printf(": ");
    json_str(fx->engine_status[i]);
  }
  printf("\n  }");
}

static void json_build(void)
{
  printf(",\n  \"build\": {\"prefix\": ");
  json_str(FMX_BUILD_PREFIX);
  printf(", \"type\": ");
  json_str(FMX_BUILD_TYPE);
  printf(", \"flags\": ");
  json_str(FMX_BUILD_FLAGS);
  printf(", \"compiler\": ");
  json_str(FMX_BUILD_CC);
  printf(", \"provider_dir\": ");
  if (FMX_FI_DIR[0])
    json_str(FMX_FI_DIR);
  else
    printf("null");
  printf(", \"libfabric\": ");
  if (FMX_BUILD_FABRIC[0])
    json_str(FMX_BUILD_FABRIC);
  else
    printf("null");
  printf(", \"mx\": %s, \"mpi\": ", FMX_BUILD_MX ? "true" : "false");
  if (FMX_BUILD_MPI[0])
    json_str(FMX_BUILD_MPI);
  else
    printf("null");
  printf(", \"man\": %s}", FMX_BUILD_MAN ? "true" : "false");
}

static void print_json(const struct facts *fx, int sections)
{
  printf("{\n  \"version\": ");
  json_str(FMX_VERSION_STRING);
  if (sections & SEC_HOST)
    json_host(fx);
  if (sections & SEC_CONFIG)
    json_config();
  if (sections & SEC_DEVICES)
    json_devices(fx);
  if (sections & SEC_BUILD)
    json_build();
  printf("\n}\n");
}

int main(int argc, char **argv)
{
  int sections = 0, config = 0, json = 0, discover = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0) {
      config = 1;
    } else if (strcmp(argv[i], "-d") == 0 || strcmp(argv[i], "--devices") == 0) {
      sections |= SEC_DEVICES;
    } else if (strcmp(argv[i], "-c") == 0) {
      sections |= SEC_CONFIG;
    } else if (strcmp(argv[i], "-b") == 0 || strcmp(argv[i], "--build") == 0) {
      sections |= SEC_BUILD;
    } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--version") == 0) {
      printf("fmx %s\n", FMX_VERSION_STRING);
      return 0;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--no-discover") == 0) {
      discover = 0;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "fmx_info: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (!sections)
    sections = SEC_HOST | SEC_DEVICES;
  if (config) /* --config: the tunables after whatever else is printed */
    sections |= SEC_CONFIG;
  /* The build section needs no library state: -b works where fmx_init
   * would fail (a build host, a container). */
  struct facts fx = {0};
  int need_lib = sections & ~SEC_BUILD;
  if (need_lib) {
    fmx_return_t rc = fmx_init();
    if (rc != FMX_SUCCESS) {
      fprintf(stderr, "fmx_info: fmx_init: %s\n", fmx_strerror(rc));
      return 1;
    }
    if (sections & (SEC_HOST | SEC_DEVICES))
      gather(&fx);
    if (sections & SEC_DEVICES)
      gather_net(&fx, discover);
  }
  if (json)
    print_json(&fx, sections);
  else
    print_text(&fx, sections);
  free(fx.peer);
  if (need_lib)
    fmx_finalize();
  return 0;
}
