/* SPDX-License-Identifier: MIT */
/*
 * mx_session - mx_decompose_endpoint_addr2's session id: the session of
 * the endpoint an address names, the same whether the address came from
 * mx_get_endpoint_addr at that endpoint, from mx_connect, or as the source
 * of a message; a new one when that endpoint is closed and opened again
 * under the same id; 0 once no open endpoint of this process knows the
 * address. Two endpoints of one process, through shared memory
 * (MX_DISABLE_SELF does not matter: they are two endpoints).
 */
#include "mx_test.h"

#define M_HI 0x5e55000000000000ull

static uint32_t session_of(mx_endpoint_addr_t a, uint64_t want_nic, uint32_t want_eid, const char *what) {
  uint64_t nic = 0;
  uint32_t eid = 0, session = 0;
  MXT_OK(mx_decompose_endpoint_addr2(a, &nic, &eid, &session));
  MXT_EXPECT(nic == want_nic && eid == want_eid, "%s: nic %012" PRIx64 " endpoint %u, want %012" PRIx64 " %u", what,
             nic, eid, want_nic, want_eid);
  return session;
}

static uint32_t own_session(mx_endpoint_t ep, uint64_t nic, uint32_t eid) {
  mx_endpoint_addr_t me;
  MXT_OK(mx_get_endpoint_addr(ep, &me));
  return session_of(me, nic, eid, "own address");
}

int main(void) {
  mxt_prog = "mx_session";
  mx_set_error_handler(MX_ERRORS_RETURN);
  MXT_OK(mx_init());
  mx_endpoint_t a, b;
  MXT_OK(mx_open_endpoint(MX_ANY_NIC, MX_ANY_ENDPOINT, MXT_KEY, NULL, 0, &a));
  MXT_OK(mx_open_endpoint(MX_ANY_NIC, MX_ANY_ENDPOINT, MXT_KEY, NULL, 0, &b));
  uint64_t nic;
  uint32_t ea, eb;
  mxt_whoami(a, &nic, &ea);
  mxt_whoami(b, &nic, &eb);
  uint32_t sa = own_session(a, nic, ea), sb = own_session(b, nic, eb);

  /* a's address of b, from mx_connect, gives b's session. */
  mx_endpoint_addr_t a_to_b, b_to_a;
  MXT_OK(mx_connect(a, nic, eb, MXT_KEY, 10000, &a_to_b));
  MXT_EXPECT(session_of(a_to_b, nic, eb, "mx_connect's address") == sb, "mx_connect's address: not b's session");

  /* b's message to a: its source at a gives b's session too. */
  MXT_OK(mx_connect(b, nic, ea, MXT_KEY, 10000, &b_to_a));
  MXT_EXPECT(session_of(b_to_a, nic, ea, "b's address of a") == sa, "b's address of a: not a's session");
  mx_request_t s, r;
  MXT_OK(mx_irecv(a, NULL, 0, M_HI, MX_MATCH_MASK_NONE, NULL, &r));
  MXT_OK(mx_isend(b, NULL, 0, b_to_a, M_HI, NULL, &s));
  mxt_wait_ok(b, &s, 0, "send to a");
  mx_status_t st = mxt_wait_ok(a, &r, 0, "receive from b");
  MXT_EXPECT(session_of(st.source, nic, eb, "the source of b's message") == sb, "a message's source: not b's session");

  /* b closed and opened again under its id: a new session, which a's new
   * connection gives. */
  MXT_OK(mx_close_endpoint(b));
  mx_endpoint_t b2;
  MXT_OK(mx_open_endpoint(MX_ANY_NIC, eb, MXT_KEY, NULL, 0, &b2));
  uint32_t sb2 = own_session(b2, nic, eb);
  MXT_EXPECT(sb2 != sb, "b opened again kept its session %08x", sb);
  mx_endpoint_addr_t a_to_b2;
  MXT_OK(mx_connect(a, nic, eb, MXT_KEY, 10000, &a_to_b2));
  MXT_EXPECT(session_of(a_to_b2, nic, eb, "the new connection's address") == sb2,
             "the new connection: not the new session");

  /* No open endpoint knows a's addresses once a is closed: session 0, the
   * board and id still read. */
  MXT_OK(mx_close_endpoint(a));
  MXT_EXPECT(session_of(a_to_b2, nic, eb, "an address of a closed endpoint") == 0,
             "an address of a closed endpoint: a session");
  MXT_OK(mx_close_endpoint(b2));
  MXT_OK(mx_finalize());
  printf("sessions: a %08x, b %08x, b again %08x\nmx_session: ok\n", sa, sb, sb2);
  return 0;
}
