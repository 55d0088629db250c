/* SPDX-License-Identifier: MIT */
/* The tunables table: parsing, environment, tuning file, bad values. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/config.h"
#include "platform/topo.h"

static void count_row(const struct config_item *it, void *arg) {
  CHECK(it->name && it->value && it->source && it->def && it->doc);
  (*(int *)arg)++;
}

int main(void) {
  uint64_t v;
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
  CHECK_DONE("test_config");
  return 0;
}
