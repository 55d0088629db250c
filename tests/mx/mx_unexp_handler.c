/* SPDX-License-Identifier: MIT */
/*
 * mx_unexp_handler - mx_register_unexp_handler, as Open-MX's own test of it
 * did, and more: messages of 0 B to 4 MiB sent to one's own endpoint
 * (mxt_self; FMX_SELF=0 sends them through shared memory, FMX_SHM=0 as
 * well through the net transport) by mx_isend and mx_issend, no receive
 * posted. The handler must be called once per message, with its source
 * (ourselves), match info and length, and its bytes when it came eagerly
 * (never for a synchronous send), right; mx_iprobe inside it must not see
 * the message yet. Three answers:
 * - post a forgotten receive of nothing, then MX_RECV_CONTINUE: that
 *   receive takes it;
 * - MX_RECV_FINISHED: the message is dropped;
 * - MX_RECV_CONTINUE alone: it is queued unexpected, and a receive posted
 *   after gets it whole.
 * A dropped message, or one taken by a receive of nothing, is seen by its
 * sender as MX has it: success when it went eagerly, MX_STATUS_TRUNCATED
 * for a rendezvous or synchronous one (of any byte). Then the handler is
 * removed (NULL) and a message reaches a receive without it.
 */
#include "mx_test.h"

#define M_U 0x2000000000000000ull
static const uint32_t sizes[] = {0, 16, 100, 1024, 10000, 100000, 1 << 20, 4 << 20};
#define N (sizeof sizes / sizeof *sizes)
enum { FORGET, FINISHED, KEEP };
static const char *const mode_name[] = {"forgotten receive", "MX_RECV_FINISHED", "kept unexpected"};

static struct {
  mx_endpoint_t ep;
  mx_endpoint_addr_t me;
  int mode, sync;
  uint32_t len, seed;
  uint64_t match;
  unsigned calls;
  int had_data;
} h;

static mx_unexp_handler_action_t handler(void *context, mx_endpoint_addr_t source, uint64_t match, uint32_t length,
                                         void *data) {
  MXT_EXPECT(context == &h, "the handler's context");
  h.calls++;
  MXT_EXPECT(match == h.match && length == h.len, "handler: match %" PRIx64 " length %u (want %" PRIx64 " %u)", match,
             length, h.match, h.len);
  uint64_t nic, want_nic;
  uint32_t eid, want_eid;
  MXT_OK(mx_decompose_endpoint_addr(source, &nic, &eid));
  MXT_OK(mx_decompose_endpoint_addr(h.me, &want_nic, &want_eid));
  MXT_EXPECT(nic == want_nic && eid == want_eid, "handler: the source is not ourselves");
  h.had_data = data != NULL;
  if (h.sync) MXT_EXPECT(!data, "handler: data given for a synchronous send of %u bytes", length);
  if (length <= 1024 && !h.sync) MXT_EXPECT(data, "handler: no data for an eager message of %u bytes", length);
  if (length >= (1u << 20)) MXT_EXPECT(!data, "handler: data given for %u bytes", length);
  if (data) mxt_check(data, length, h.seed, "handler's data");
  mx_status_t st;
  uint32_t res = 1;
  MXT_OK(mx_iprobe(h.ep, match, MX_MATCH_MASK_NONE, &st, &res));
  MXT_EXPECT(res == 0, "handler: mx_iprobe sees the message before it is queued");
  if (h.mode == FINISHED) return MX_RECV_FINISHED;
  if (h.mode == FORGET) MXT_OK(mx_irecv(h.ep, NULL, 0, match, MX_MATCH_MASK_NONE, NULL, NULL));
  return MX_RECV_CONTINUE;
}

int main(void) {
  mxt_prog = "mx_unexp_handler";
  struct mxt t;
  mxt_self(&t, NULL, 0);
  h.ep = t.ep;
  MXT_OK(mx_get_endpoint_addr(t.ep, &h.me));
  MXT_OK(mx_register_unexp_handler(t.ep, handler, &h));
  unsigned char *buf = mxt_alloc(4 << 20), *in = mxt_alloc(4 << 20);
  for (int mode = FORGET; mode <= KEEP; mode++)
    for (int sync = 0; sync < 2; sync++)
      for (uint32_t i = 0; i < N; i++) {
        h.mode = mode, h.sync = sync, h.len = sizes[i], h.seed = i + 3 * (uint32_t)mode + 11 * (uint32_t)sync;
        h.match = M_U | (uint64_t)mode << 16 | (uint64_t)sync << 8 | i;
        unsigned before = h.calls;
        mxt_fill(buf, h.len, h.seed);
        mx_segment_t seg = {buf, h.len};
        mx_request_t s;
        MXT_OK((sync ? mx_issend : mx_isend)(t.ep, &seg, 1, t.peer, h.match, NULL, &s));
        if (mode == KEEP) { /* the handler let it be queued: a receive posted now gets it */
          mx_status_t st;
          uint32_t res = 0;
          for (double end = mxt_now() + 60; !res && mxt_now() < end;)
            MXT_OK(mx_iprobe(t.ep, h.match, MX_MATCH_MASK_NONE, &st, &res));
          MXT_EXPECT(res && st.msg_length == h.len, "kept message of %u bytes not queued", h.len);
          memset(in, 0, h.len);
          mx_segment_t rs = {in, h.len};
          mx_request_t r;
          MXT_OK(mx_irecv(t.ep, &rs, 1, h.match, MX_MATCH_MASK_NONE, NULL, &r));
          mxt_wait_ok(t.ep, &r, h.len, "receive of a kept message");
          mxt_check(in, h.len, h.seed, "kept message");
        }
        mx_status_t st = mxt_wait(t.ep, &s, "send");
        /* An eager send completes before the message is delivered. */
        for (double end = mxt_now() + 60; h.calls == before && mxt_now() < end;) MXT_OK(mx_progress(t.ep));
        MXT_EXPECT(h.calls == before + 1, "%s, %u bytes: the handler ran %u times", mode_name[mode], h.len,
                   h.calls - before);
        int dropped = mode != KEEP && h.len && (sync || !h.had_data);
        MXT_EXPECT(st.code == (dropped ? MX_STATUS_TRUNCATED : MX_STATUS_SUCCESS),
                   "%s %s of %u bytes: the sender sees %s", mode_name[mode], sync ? "mx_issend" : "mx_isend", h.len,
                   mx_strstatus(st.code));
        if (dropped)
          MXT_EXPECT(st.msg_length == h.len && st.xfer_length == 0, "sender's status: msg_length %u xfer_length %u",
                     st.msg_length, st.xfer_length);
        printf("%-17s %s %8u: data %s, sender %s\n", mode_name[mode], sync ? "issend" : "isend ", h.len,
               h.had_data ? "given" : "none ", mx_strstatus(st.code));
      }
  /* Without a handler: not called, the receive gets the message. */
  MXT_OK(mx_register_unexp_handler(t.ep, NULL, NULL));
  unsigned before = h.calls;
  mx_segment_t seg = {buf, 100};
  mx_request_t s, r;
  mxt_fill(buf, 100, 1);
  MXT_OK(mx_isend(t.ep, &seg, 1, t.peer, M_U | 0xff, NULL, &s));
  mx_segment_t rs = {in, 100};
  MXT_OK(mx_irecv(t.ep, &rs, 1, M_U | 0xff, MX_MATCH_MASK_NONE, NULL, &r));
  mxt_wait_ok(t.ep, &r, 100, "receive without a handler");
  mxt_wait_ok(t.ep, &s, 100, "send without a handler");
  MXT_EXPECT(h.calls == before, "the handler ran after it was removed");
  mxt_check(in, 100, 1, "message without a handler");
  printf("handler calls %u, \"%s\" %u, net packets %u\n", h.calls, "messages shown to the unexpected-message handler",
         mxt_counter(t.ep, "messages shown to the unexpected-message handler"), mxt_counter(t.ep, "net: packets sent"));
  free(buf);
  free(in);
  return mxt_end(&t);
}
