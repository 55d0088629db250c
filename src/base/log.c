/* SPDX-License-Identifier: MIT */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int log_level_current = LOG_WARN;
uint64_t log_repeat_ns = 10ull * 1000000000ull;

static const char *const level_names[] = {"none", "error", "warn", "info", "debug"};

int log_level_parse(const char *name) {
  for (int i = 0; i <= LOG_DEBUG; i++)
    if (name && strcmp(name, level_names[i]) == 0) return i;
  return -1;
}

void log_set_level(const char *name) {
  int l = log_level_parse(name);
  if (l >= 0) log_level_current = l;
}

/* Rate limit per message id: a hostile or broken peer can make every
 * connect attempt fail, and one line per attempt would bury the log (760
 * lines seen in one run). The first line of an id is printed; more of the
 * same id within log_repeat_ns are only counted, and the next line printed
 * after the interval says how many were held back. A fixed table: ids are
 * string literals of the library, a few dozen in all; an id that finds no
 * room is never limited. */
#define LOG_IDS 64
static struct {
  const char *id;
  uint64_t last_ns;
  uint64_t held;
} ids[LOG_IDS];
static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 1: print (with *held lines held back before it), 0: count it only. */
static int admit(const char *id, uint64_t *held) {
  *held = 0;
  if (!log_repeat_ns) return 1;
  uint64_t now = now_ns();
  int print = 1;
  pthread_mutex_lock(&ids_lock);
  for (int i = 0; i < LOG_IDS; i++) {
    if (ids[i].id && strcmp(ids[i].id, id) != 0) continue;
    if (!ids[i].id) {
      ids[i].id = id;
    } else if (now - ids[i].last_ns < log_repeat_ns) {
      ids[i].held++;
      print = 0;
      break;
    }
    *held = ids[i].held;
    ids[i].held = 0;
    ids[i].last_ns = now;
    break;
  }
  pthread_mutex_unlock(&ids_lock);
  return print;
}

static void emit(int level, const char *id, uint64_t held, const char *fmt, va_list ap) {
  char line[1024];
  int n = snprintf(line, sizeof line, "fmx[%d] %s %s: ", (int)getpid(), level_names[level], id);
  if (n > 0 && (size_t)n < sizeof line) n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  if (held && n > 0 && (size_t)n < sizeof line)
    snprintf(line + n, sizeof line - (size_t)n, " (%llu more %s since the last shown)", (unsigned long long)held,
             id);
  /* One write per line so lines of concurrent processes do not interleave. */
  fprintf(stderr, "%s\n", line);
}

void log_emit(int level, const char *id, const char *fmt, ...) {
  uint64_t held;
  if (!admit(id, &held)) return;
  va_list ap;
  va_start(ap, fmt);
  emit(level, id, held, fmt, ap);
  va_end(ap);
}

void log_emit_all(int level, const char *id, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(level, id, 0, fmt, ap);
  va_end(ap);
}

void log_flush_held(void) {
  pthread_mutex_lock(&ids_lock);
  for (int i = 0; i < LOG_IDS; i++) {
    if (ids[i].id && ids[i].held && log_level_current >= LOG_WARN)
      fprintf(stderr, "fmx[%d] warn FMX-LOG-HELD: %llu more %s lines were held back\n", (int)getpid(),
              (unsigned long long)ids[i].held, ids[i].id);
    ids[i].held = 0;
    ids[i].last_ns = 0;
    ids[i].id = NULL;
  }
  pthread_mutex_unlock(&ids_lock);
}
