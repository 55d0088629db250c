/* SPDX-License-Identifier: MIT */
/*
 * Linked into mx_loop_static with libmyriexpress.a: a program's own
 * functions and data named as libfmx's internal ones (and of other
 * types). The archive keeps those local, so this links, and the library
 * still calls its own: mx_loop passes only if both hold.
 */
#include <stdio.h>

int config_load(int x);
int log_emit(const char *s);
int proto_init;
double topo_get(void);
int net_close(void);

int config_load(int x) { return x + 1; }
int log_emit(const char *s) { return puts(s); }
int proto_init = 42;
double topo_get(void) { return 0.5; }
int net_close(void) { return -1; }
