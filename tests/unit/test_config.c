/* SPDX-License-Identifier: MIT */
/* The tunables table: parsing, environment, tuning file, bad values. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "base/config.h"
#include "core/tunables.h"
#include "platform/topo.h"

static void find_row(const struct config_item *it, void *arg) {
  struct find {
    const char *name, *refused;
  } *f = arg;
  if (strcmp(it->name, f->name) == 0) f->refused = it->refused;
}

static void count_row(const struct config_item *it, void *arg) {
  CHECK(it->name && it->value && it->source && it->def && it->doc);
  (*(int *)arg)++;
}

static const char *refused_of(const char *name) {
  struct find {
    const char *name, *refused;
  } f = {name, NULL};
  config_foreach(find_row, &f);
  return f.refused;
}

static void write_file(char *path, const char *text) {
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
  close(fd);
}

/* Issue 12's bad inputs: each refused where the table is read, with one
 * message form, and the value in force is a usable one. */
static void test_refusals(void) {
  unsetenv("FMX_SPIN_US");
  unsetenv("FMX_RING_SIZE");
  setenv("FMX_RNDV_THRESHOLD", "-5", 1);
  setenv("FMX_BULK_SLOTS", "0", 1);
  setenv("FMX_CHUNK_MAX", "0", 1);
  setenv("FMX_RING_SIZE", "1", 1);
  setenv("FMX_LOG", "verbose", 1);
  setenv("FMX_BULK", "nosuch", 1);
  setenv("FMX_ENDPOINT_MAX", "99999999", 1);
  /* A trailing comment, trailing blanks, a line longer than any buffer
   * (the line numbers after it must stay right), a NUL byte. */
  char path[] = "/tmp/fmx-test-tuning-XXXXXX";
  char text[4096];
  char longline[1200];
  memset(longline, 'x', sizeof longline - 1);
  longline[sizeof longline - 1] = '\0';
  snprintf(text, sizeof text, "FMX_SPIN_US = 7   # seven\nFMX_CMA=0 \t\n# %s\nFMX_XMEM=0 # line 4\nFMX_ADAPT=maybe\n",
           longline);
  write_file(path, text);
  setenv("FMX_TUNING_FILE", path, 1);
  config_reload();
  CHECK_EQ(fmx_cfg.spin_us, 7);
  CHECK_EQ(fmx_cfg.cma, 0);
  CHECK_EQ(fmx_cfg.xmem, 0);
  CHECK_EQ(fmx_cfg.adapt, 1);
  CHECK(strstr(refused_of("FMX_ADAPT"), ":5: not a boolean") != NULL);
  CHECK(fmx_cfg.rndv_threshold > 0); /* the topology's value, not -5 */
  CHECK(strstr(refused_of("FMX_RNDV_THRESHOLD"), "'-5' from the environment: not a size") != NULL);
  CHECK_EQ(fmx_cfg.bulk_slots, 8);
  CHECK(strstr(refused_of("FMX_BULK_SLOTS"), "out of range [1, 1024]") != NULL);
  CHECK_EQ(fmx_cfg.chunk_max, 4u << 20);
  CHECK(strstr(refused_of("FMX_CHUNK_MAX"), "out of range [4K, 1G]") != NULL);
  CHECK(fmx_cfg.ring_size >= 4096);
  CHECK(strstr(refused_of("FMX_RING_SIZE"), "out of range [4K, 1G]") != NULL);
  CHECK(strcmp(fmx_cfg.log, "warn") == 0);
  CHECK(strstr(refused_of("FMX_LOG"), "not one of: none error warn info debug") != NULL);
  CHECK(strcmp(fmx_cfg.bulk, "auto") == 0);
  CHECK(strstr(refused_of("FMX_BULK"), "'nosuch'") != NULL);
  CHECK_EQ(fmx_cfg.endpoint_max, 256);
  CHECK(refused_of("FMX_SPIN_US")[0] == '\0');
  unlink(path);
  /* Not a regular file: ignored at once (fgets on /dev/zero never ended). */
  setenv("FMX_TUNING_FILE", "/dev/zero", 1);
  config_reload();
  CHECK_EQ(fmx_cfg.cma, 1);
  /* config_set refuses out-of-range values too, nothing changed. */
  CHECK(config_set("FMX_BULK_SLOTS", "0", "test") < 0);
  CHECK_EQ(fmx_cfg.bulk_slots, 8);
  CHECK(config_set("FMX_COPY", "memcpy", "test") == 0);
  CHECK(config_set("FMX_COPY", "fast", "test") < 0);
  CHECK(strcmp(fmx_cfg.copy, "memcpy") == 0);
  const char *vars[] = {"FMX_RNDV_THRESHOLD", "FMX_BULK_SLOTS", "FMX_CHUNK_MAX", "FMX_RING_SIZE",
                        "FMX_LOG", "FMX_BULK", "FMX_ENDPOINT_MAX", "FMX_TUNING_FILE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* The NT threshold and the offload switch: half the core's L3 share on a
 * host; none from a VM's L3 (the host's), nor from no cache. */
static void test_nt_threshold(void) {
  struct topo_info t;
  memset(&t, 0, sizeof t);
  CHECK_EQ(tunables_llc_half(&t), 0);
  t.l2.size = 2u << 20;
  t.l2.nshare = 1;
  CHECK_EQ(tunables_llc_half(&t), 1u << 20);
  t.l3.size = 480ull << 20;
  t.l3.nshare = 2;
  CHECK_EQ(tunables_llc_half(&t), 120ull << 20);
  t.virtualized = 1;
  CHECK_EQ(tunables_llc_half(&t), 0);
  /* As the library has it on this host. */
  if (topo_get()->virtualized) {
    CHECK(strcmp(config_source("FMX_COPY_NT_THRESHOLD"), "topology") != 0);
    CHECK(strcmp(config_source("FMX_OFFLOAD_THRESHOLD"), "topology") != 0);
  }
}

int main(void) {
  uint64_t v;
  tunables_load(); /* the topology's defaults, as the library has them */
  test_nt_threshold();
  CHECK_EQ(config_parse_size("123", &v), 0);
  CHECK_EQ(v, 123);
  CHECK_EQ(config_parse_size("64K", &v), 0);
  CHECK_EQ(v, 65536);
  CHECK_EQ(config_parse_size("4MiB", &v), 0);
  CHECK_EQ(v, 4u << 20);
  CHECK_EQ(config_parse_size("1g", &v), 0);
  CHECK_EQ(v, 1u << 30);
  CHECK_EQ(config_parse_size("0x10", &v), 0);
  CHECK_EQ(v, 16);
  CHECK(config_parse_size("", &v) < 0);
  CHECK(config_parse_size("-1", &v) < 0);
  CHECK(config_parse_size("12Q", &v) < 0);
  CHECK(config_parse_size("99999999999999999999", &v) < 0);
  CHECK(config_parse_size("17179869184G", &v) < 0); /* overflows 64 bits */

  /* Environment beats the tuning file; the file fills the rest; bad lines skipped. */
  char path[] = "/tmp/fmx-test-tuning-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  const char *text = "# comment\nFMX_RNDV_THRESHOLD = 32K\nFMX_SPIN_US=7\nFMX_NOPE=1\nFMX_CMA=maybe\nno equals\n";
  CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
  close(fd);
  setenv("FMX_TUNING_FILE", path, 1);
  setenv("FMX_SPIN_US", "3", 1);
  setenv("FMX_LOG", "none", 1);
  setenv("FMX_RING_SIZE", "bogus", 1);
  config_reload();
  CHECK_EQ(fmx_cfg.rndv_threshold, 32768);
  CHECK(strcmp(config_source("FMX_RNDV_THRESHOLD"), "tuning file") == 0);
  CHECK_EQ(fmx_cfg.spin_us, 3);
  CHECK(strcmp(config_source("FMX_SPIN_US"), "environment") == 0);
  CHECK_EQ(fmx_cfg.cma, 1); /* "maybe" refused, default kept */
  /* "bogus" refused: the topology-derived default (one L2, 64K-1M) stands */
  uint64_t l2 = topo_get()->l2.size;
  CHECK_EQ(fmx_cfg.ring_size, !l2 ? 256 * 1024 : l2 < 65536 ? 65536 : l2 > 1048576 ? 1048576 : l2);
  CHECK(strcmp(config_source("FMX_RING_SIZE"), "topology") == 0);
  CHECK(config_set("FMX_BULK", "ring", "test") == 0);
  CHECK(strcmp(fmx_cfg.bulk, "ring") == 0);
  CHECK(config_set("FMX_NOT_A_TUNABLE", "1", "test") < 0);
  CHECK(config_source("FMX_NOT_A_TUNABLE") == NULL);
  /* topology-derived default is not applied over a user setting */
  config_set("FMX_BULK_SLOT_SIZE", "128K", "environment");
  config_set_derived("FMX_BULK_SLOT_SIZE", 4096, "topology");
  CHECK_EQ(fmx_cfg.bulk_slot_size, 128 * 1024);
  unlink(path);
  int rows = 0;
  config_foreach(count_row, &rows);
  CHECK(rows >= 10);
  test_refusals();
  CHECK_DONE("test_config");
  return 0;
}
