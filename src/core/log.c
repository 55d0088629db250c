/* SPDX-License-Identifier: MIT */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int log_level_current = LOG_WARN;

static const char *const level_names[] = {"none", "error", "warn", "info", "debug"};

void log_set_level(const char *name) {
  for (int i = 0; i <= LOG_DEBUG; i++)
    if (name && strcmp(name, level_names[i]) == 0) log_level_current = i;
}

void log_emit(int level, const char *id, const char *fmt, ...) {
  char line[512];
  int n = snprintf(line, sizeof line, "fmx[%d] %s %s: ", (int)getpid(), level_names[level], id);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* One write per line so lines of concurrent processes do not interleave. */
  fprintf(stderr, "%s\n", line);
}
