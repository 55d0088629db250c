/* SPDX-License-Identifier: MIT */
/* The only place the library prints. Level from FMX_LOG (error|warn|info|debug).
 * Every line carries a stable message id such as FMX-CMA-EPERM. */
#ifndef FMX_BASE_LOG_H
#define FMX_BASE_LOG_H

#include <stdint.h>

enum log_level { LOG_NONE = 0, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern int log_level_current;
/* Lines of one id closer than this are counted, not printed (FMX_LOG_REPEAT_MS). */
extern uint64_t log_repeat_ns;

/* The level named (none..debug), or -1. */
int log_level_parse(const char *name);
void log_set_level(const char *name);
/* Print how many lines of each id were held back, and forget them (finalize). */
void log_flush_held(void);
void log_emit(int level, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same without the rate limit: for lines that each say something else
 * and cannot repeat without bound (one per refused tunable). */
void log_emit_all(int level, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_at(lvl, id, ...) \
  do { if ((lvl) <= log_level_current) log_emit((lvl), (id), __VA_ARGS__); } while (0)
#define log_warn_each(id, ...) \
  do { if (LOG_WARN <= log_level_current) log_emit_all(LOG_WARN, (id), __VA_ARGS__); } while (0)
#define log_error(id, ...) log_at(LOG_ERROR, id, __VA_ARGS__)
#define log_warn(id, ...) log_at(LOG_WARN, id, __VA_ARGS__)
#define log_info(id, ...) log_at(LOG_INFO, id, __VA_ARGS__)
#define log_debug(id, ...) log_at(LOG_DEBUG, id, __VA_ARGS__)
/* Once per process and call site (log_emit also limits each id's rate). */
#define log_warn_once(id, ...)                                             \
  do {                                                                     \
    static int warned_;                                                    \
    if (!__atomic_exchange_n(&warned_, 1, __ATOMIC_RELAXED)) log_warn(id, __VA_ARGS__); \
  } while (0)

#endif
