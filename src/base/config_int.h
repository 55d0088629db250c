/* SPDX-License-Identifier: MIT */
/* The table of tunables (config_table.c) as the machinery that reads it
 * (config.c) sees it: inside src/base only. */
#ifndef FMX_BASE_CONFIG_INT_H
#define FMX_BASE_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

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

extern struct cfg_entry config_table[];
extern const size_t config_nentries;

/* Other names of tunables, in the order they are looked at. */
struct cfg_alias {
  const char *name, *alias;
  int mx;     /* an MX name (not an Open-MX one) */
  int invert; /* a boolean that means the opposite (DISABLE_...) */
};
extern const struct cfg_alias config_aliases[];
extern const size_t config_naliases;

#endif
