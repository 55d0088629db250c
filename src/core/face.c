/* SPDX-License-Identifier: MIT */
/* What faces built over fmx.h (the MX face) take from the library beyond
 * messages: the tunables' values, and the log. */
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "fmx.h"

#define API __attribute__((visibility("default")))

API fmx_return_t fmx_config_get(const char *name, char *value, uint32_t len) {
  if (!name || !value) return FMX_BAD_ADDRESS;
  const char *v = config_value(name);
  if (!v) return FMX_BAD_INFO_KEY;
  if (strlen(v) >= len) return FMX_BAD_INFO_LENGTH;
  memcpy(value, v, strlen(v) + 1);
  return FMX_SUCCESS;
}

API void fmx_log_error(const char *id, const char *text) {
  config_load(); /* FMX_LOG's level, also before fmx_init */
  log_error(id ? id : "FMX-FACE", "%s", text ? text : "");
}
