/* SPDX-License-Identifier: MIT */
/*
 * The partners' table by (endpoint id, session) (src/net/ptab.c): every
 * entry is found under its key and under no other, through growths from
 * 64 chains to 16,384; two entries under one key (a peer that came back
 * with the session of a partner not yet released) are both in the chain;
 * an entry added again moves to its new key; deleted ones are gone and a
 * second delete is harmless; and with 10,000 entries whose keys differ
 * only in the session (one endpoint id, as every rank's is), no chain
 * holds more than a few; an entry left in a table freed first is
 * simply out.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "net/ptab.h"

#define N 10000

static int count(const struct net_ptab *t, uint32_t eid, uint32_t session, const struct net_ptab_entry *want) {
  int n = 0, found = 0;
  for (const struct net_ptab_entry *e = net_ptab_chain(t, eid, session); e; e = e->next) {
    if (e->eid == eid && e->session == session) n++;
    found |= e == want;
  }
  return want ? found : n;
}

int main(void) {
  static struct net_ptab_entry e[N];
  struct net_ptab t;
  CHECK_EQ(net_ptab_init(&t, 12345), 0);
  CHECK_EQ(t.nb, NET_PTAB_FIRST);
  CHECK(net_ptab_chain(&t, 0, 1) == NULL);

  /* One endpoint id, sessions 1..N: all found, each once. */
  for (uint32_t i = 0; i < N; i++) {
    net_ptab_add(&t, &e[i], 0, i + 1);
    CHECK(e[i].in);
  }
  CHECK_EQ(t.n, N);
  CHECK(t.nb >= N && t.nb <= 2 * 16384);
  int longest = 0;
  for (uint32_t i = 0; i < N; i++) {
    CHECK(count(&t, 0, i + 1, &e[i]));
    CHECK_EQ(count(&t, 0, i + 1, NULL), 1);
    CHECK_EQ(count(&t, 1, i + 1, NULL), 0); /* another endpoint id */
  }
  for (uint32_t b = 0; b < t.nb; b++) {
    int n = 0;
    for (const struct net_ptab_entry *x = t.b[b]; x; x = x->next) n++;
    if (n > longest) longest = n;
  }
  CHECK(longest <= 12);

  /* A second entry under a key: both there; the first deleted, the
   * second stays; a second delete changes nothing. */
  struct net_ptab_entry twin = {0};
  net_ptab_add(&t, &twin, 0, 7);
  CHECK_EQ(count(&t, 0, 7, NULL), 2);
  net_ptab_del(&t, &e[6]);
  CHECK(!e[6].in);
  CHECK_EQ(count(&t, 0, 7, NULL), 1);
  CHECK(count(&t, 0, 7, &twin));
  net_ptab_del(&t, &e[6]);
  CHECK_EQ(t.n, N);

  /* Added again: under its new key only. */
  net_ptab_add(&t, &twin, 3, 99);
  CHECK_EQ(count(&t, 0, 7, NULL), 0);
  CHECK(count(&t, 3, 99, &twin));
  CHECK_EQ(t.n, N);

  for (uint32_t i = 0; i < N; i++) net_ptab_del(&t, &e[i]);
  net_ptab_del(&t, &twin);
  CHECK_EQ(t.n, 0);
  for (uint32_t b = 0; b < t.nb; b++) CHECK(t.b[b] == NULL);
  /* The table freed with an entry in it (an endpoint closing before its
   * partners are released): the entry's del is harmless. */
  net_ptab_add(&t, &twin, 5, 5);
  net_ptab_fini(&t);
  CHECK(t.b == NULL);
  net_ptab_del(&t, &twin);
  CHECK(!twin.in);
  CHECK_DONE("test_net_ptab");
  return 0;
}
