/* SPDX-License-Identifier: MIT */
/* The machinery of the tunables: defaults, the environment, the tuning
 * file, derived values, and what the tools list. The rows are in
 * config_table.c. */
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

#include "base/config_int.h"
#include "base/log.h"

struct fmx_config fmx_cfg;

/* A boolean's text: 1, 0, or -1 when it is none. */
static int bool_of(const char *v) {
  if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcasecmp(v, "true")) return 1;
  if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcasecmp(v, "false")) return 0;
  return -1;
}

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
  for (size_t i = 0; i < config_nentries; i++)
    if (strcmp(config_table[i].name, name) == 0) return &config_table[i];
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

/* A boolean's text turned around ("1" -> "0"); anything else as it is, so
 * the table refuses it with its own words. */
static const char *inverted(const char *v) {
  int b = bool_of(v);
  return b < 0 ? v : b ? "0" : "1";
}

static void load_locked(void) {
  for (size_t i = 0; i < config_nentries; i++) {
    char why[96];
    config_table[i].bad[0] = '\0';
    apply(&config_table[i], config_table[i].def, "default", why, sizeof why);
  }
  /* The log level first, so FMX_LOG=none also silences what follows. */
  const char *lv = getenv("FMX_LOG");
  if (lv) log_set_level(lv);
  for (size_t i = 0; i < config_nentries; i++) {
    const char *v = getenv(config_table[i].name);
    if (v) apply_user(&config_table[i], v, "environment", "the environment");
  }
  /* libfabric's name of a tunable, FI_FMX_<NAME> for FMX_<NAME> (the
   * provider registers them, so `fi_info -e` lists them), read when its
   * own is unset. */
  for (size_t i = 0; i < config_nentries; i++) {
    char fi[64];
    if (strcmp(config_table[i].source, "default") != 0 ||
        snprintf(fi, sizeof fi, "FI_%s", config_table[i].name) >= (int)sizeof fi)
      continue;
    const char *v = getenv(fi);
    if (v) apply_user(&config_table[i], v, "environment", fi);
  }
  /* Open-MX's and MX's names of a tunable, read when its own is unset
   * (the first one set wins; MX's are ignored with OMX_IGNORE_MX_ENV, as
   * Open-MX did). */
  for (size_t i = 0; i < config_naliases; i++) {
    struct cfg_entry *e = find(config_aliases[i].name);
    const char *v = getenv(config_aliases[i].alias);
    if (!e || !v || strcmp(e->source, "default") != 0) continue;
    if (config_aliases[i].mx && getenv("OMX_IGNORE_MX_ENV")) continue;
    apply_user(e, config_aliases[i].invert ? inverted(v) : v, "environment", config_aliases[i].alias);
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
  for (size_t i = 0; i < config_nentries; i++)
    if (config_table[i].bad[0])
      log_warn_each("FMX-CFG-VALUE", "%s=%s; %s=%s (%s) in force", config_table[i].name, config_table[i].bad, config_table[i].name,
               config_table[i].text, config_table[i].source);
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

size_t config_count(void) { return config_nentries; }

int config_entry_at(size_t i, struct config_item *it) {
  if (i >= config_nentries) return -ENOENT;
  *it = (struct config_item){config_table[i].name, "", "", config_table[i].def, config_table[i].doc, ""};
  return 0;
}

int config_item_at(size_t i, struct config_item *it) {
  config_load();
  if (i >= config_nentries) return -ENOENT;
  *it = (struct config_item){config_table[i].name, config_table[i].text, config_table[i].source, config_table[i].def, config_table[i].doc, config_table[i].bad};
  return 0;
}

void config_foreach(void (*fn)(const struct config_item *item, void *arg), void *arg) {
  config_load();
  for (size_t i = 0; i < config_nentries; i++) {
    struct config_item it = {config_table[i].name, config_table[i].text, config_table[i].source, config_table[i].def, config_table[i].doc, config_table[i].bad};
    fn(&it, arg);
  }
}
