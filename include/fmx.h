/* SPDX-License-Identifier: MIT */
/*
 * fmx.h - the native fmx API: tagged message passing with MX semantics.
 *
 * Model (docs/protocol.md has the details):
 *  - An endpoint is opened on a board with an endpoint id and a 32-bit filter
 *    key. Peers present that key to connect.
 *  - Messages carry a 64-bit match info. A receive posted with (info, mask)
 *    takes the first incoming message with (msg & mask) == info. Receives
 *    match in posting order; messages from one peer match in send order,
 *    whatever their size or the path that moves them.
 *  - Every call returns an fmx_return_t; fmx_strerror() names it. Completion
 *    status codes use the same enum.
 *
 * Thread safety: every function may be called from any thread at any time,
 * except fmx_init/fmx_finalize which must not race with other calls. An
 * endpoint is fastest when driven by the thread that opened it: its lock
 * costs that thread no atomic instruction. Other application threads may
 * use it too; after a few of their calls the endpoint takes a plain mutex
 * for every thread (docs/protocol.md, Endpoint lock).
 *
 * Buffers: a send buffer must stay untouched and a receive buffer must stay
 * allocated until the request completes (or is cancelled). The library never
 * keeps a pointer to a buffer after completion.
 *
 * Lengths: segment and message lengths are 64-bit. A segment list has at most
 * FMX_MAX_SEGMENTS entries; a list with zero entries is a zero-length message.
 */
#ifndef FMX_H
#define FMX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FMX_API_VERSION 0x0100       /* major.minor of this header */
#define FMX_MAX_SEGMENTS 256
#define FMX_ANY_NIC UINT64_MAX       /* "this host" in fmx_connect */
#define FMX_ANY_ENDPOINT UINT32_MAX  /* "pick a free one" in fmx_open_endpoint */
#define FMX_ANY_BOARD UINT32_MAX
#define FMX_TIMEOUT_INFINITE UINT32_MAX
#define FMX_MATCH_MASK_NONE UINT64_MAX /* exact match */

/* Return and completion codes (one enum, as in Open-MX). Values are stable. */
typedef enum fmx_return {
  FMX_SUCCESS = 0,
  FMX_BAD_ERROR = 1,
  FMX_ALREADY_INITIALIZED = 3,
  FMX_NOT_INITIALIZED = 4,
  FMX_ACCESS_DENIED = 7,
  FMX_BOARD_NOT_FOUND = 8,
  FMX_BAD_ENDPOINT = 9,
  FMX_SEGMENTS_BAD_COUNT = 12,
  FMX_BAD_REQUEST = 13,
  FMX_BAD_MATCH_MASK = 14,
  FMX_NO_RESOURCES = 15,
  FMX_BUSY = 20,
  FMX_BAD_INFO_KEY = 21,
  FMX_BAD_ADDRESS = 22,
  FMX_ENDPOINT_PARAM_BAD_KEY = 24,
  FMX_ENDPOINT_PARAM_BAD_VALUE = 25,
  FMX_PEER_NOT_FOUND = 28,
  FMX_TIMEOUT = 30,
  FMX_REMOTE_ENDPOINT_BAD_ID = 32,
  FMX_REMOTE_ENDPOINT_CLOSED = 33,
  FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY = 34,
  FMX_BAD_INFO_LENGTH = 35,
  FMX_NIC_ID_NOT_FOUND = 36,
  FMX_BAD_LIB_ABI = 38,
  FMX_BAD_MATCHING_FOR_CONTEXT_ID_MASK = 42,
  FMX_CANCELLED = 90,
  FMX_REMOTE_ENDPOINT_UNREACHABLE = 92,
  FMX_REMOTE_ENDPOINT_BAD_SESSION = 93,
  FMX_MESSAGE_ABORTED = 94,
  FMX_MESSAGE_TRUNCATED = 95,
  FMX_NO_SYSTEM_RESOURCES = 97,
  FMX_NOT_IMPLEMENTED = 99,
  FMX_REGION_NOT_FOUND = 100,    /* no live region of that cookie at that endpoint */
  FMX_REGION_OUT_OF_RANGE = 101, /* offset + length past the region's end */
} fmx_return_t;

typedef struct fmx_endpoint *fmx_endpoint_t;
typedef struct fmx_request *fmx_request_t;

/* An address: process-local and opaque; it means nothing in another process.
 * Obtained from fmx_connect, fmx_get_endpoint_addr or a completion status. */
typedef struct fmx_endpoint_addr {
  uint64_t opaque[2];
} fmx_endpoint_addr_t;

typedef struct fmx_seg {
  void *ptr;
  size_t len;
} fmx_seg_t;

typedef struct fmx_status {
  fmx_return_t code;          /* FMX_SUCCESS, FMX_MESSAGE_TRUNCATED, ... */
  uint32_t flags;             /* receives: FMX_MSG_DATA, FMX_MSG_UNTAGGED as the message came */
  fmx_endpoint_addr_t source; /* sender (receives), destination (sends) */
  uint64_t match_info;        /* the message's match info */
  uint64_t msg_length;        /* length sent */
  uint64_t xfer_length;       /* bytes delivered (< msg_length if truncated) */
  void *context;              /* the request's context pointer */
  uint64_t data;              /* receives: the sender's data when flags & FMX_MSG_DATA, else 0 */
  void *buffer;               /* FMX_MSG_MULTI: where the message begins in its multi-receive buffer;
                                 FMX_MSG_MULTI_DONE: the buffer; else NULL */
} fmx_status_t; /* 72 bytes: flags sit in what was code's padding */

/* Flags of fmx_isendx and fmx_irecvx, and of a receive's status. */
#define FMX_MSG_UNTAGGED 0x1u /* the untagged space: an untagged send matches only untagged receives, in
                                 order, and a tagged one only tagged receives; match info is 0 there */
#define FMX_MSG_DATA 0x2u     /* send: carry `data` (64 bits) to the receiver's status */
#define FMX_MSG_SYNC 0x4u     /* send: complete only once a receive has matched it (fmx_issend) */
#define FMX_MSG_MULTI 0x8u    /* status: a message that landed in a multi-receive buffer (fmx_irecv_multi) */
#define FMX_MSG_MULTI_DONE 0x10u /* status: the multi-receive buffer itself, released */
#define FMX_MSG_NOW 0x20u     /* send: now or not at all. The message is handed to the peer's transport
                                 before the call returns, and no request is made (*request = NULL): the
                                 buffer is free at once and nothing completes later. Where it cannot go
                                 so (longer than one record, sends of ours to that peer still queued, a
                                 full ring, a peer not connected yet), FMX_NO_RESOURCES and nothing is
                                 sent: post it without the flag; a partner gone, its error code. Not
                                 with FMX_MSG_SYNC */

/* Endpoint parameters (fmx_open_endpoint). */
enum fmx_param_key {
  FMX_PARAM_CONTEXT_ID = 1, /* .context_id: split matching on match bits */
  FMX_PARAM_TIMEOUT_MS = 2, /* .timeout_ms: default request timeout */
};
typedef struct fmx_endpoint_param {
  uint32_t key; /* enum fmx_param_key */
  union {
    struct {
      uint8_t bits;  /* 1..16 */
      uint8_t shift; /* bits + shift <= 64 */
    } context_id;
    uint32_t timeout_ms;
  } val;
} fmx_endpoint_param_t;

/* fmx_get_info keys and the types they fill. */
#include "fmx_info.h"

/* --- library ------------------------------------------------------------ */

/* Initialise the library. Reads the FMX_* tunables. Returns
 * FMX_ALREADY_INITIALIZED if called twice without fmx_finalize. */
fmx_return_t fmx_init(void);
/* Close every endpoint still open and release the library. */
fmx_return_t fmx_finalize(void);
/* A constant string naming a code; never NULL. */
const char *fmx_strerror(fmx_return_t code);

/* --- endpoints ------------------------------------------------------------ */

/* Open an endpoint on `board` (0 or FMX_ANY_BOARD: this host's shared-memory
 * board) with id `endpoint_id` (0..FMX_ENDPOINT_MAX-1, or FMX_ANY_ENDPOINT),
 * protected by `key`. Returns FMX_BUSY if the id is open in a process of
 * this user, FMX_ACCESS_DENIED if another user holds its name (endpoint
 * names are abstract sockets anyone may bind: an error line FMX-EP-SQUATTED
 * names the holder; FMX_ANY_ENDPOINT skips such ids), FMX_BAD_ENDPOINT if it
 * is out of range, FMX_BOARD_NOT_FOUND for an unknown board,
 * FMX_ENDPOINT_PARAM_* for bad parameters, FMX_NO_SYSTEM_RESOURCES when out
 * of file descriptors or memory (logged with the cause). */
fmx_return_t fmx_open_endpoint(uint32_t board, uint32_t endpoint_id, uint32_t key,
                               const fmx_endpoint_param_t *params, uint32_t nparams,
                               fmx_endpoint_t *endpoint);
/* Close: every pending request is dropped, peers see this endpoint as closed.
 * Other threads must have left their calls on this endpoint. */
fmx_return_t fmx_close_endpoint(fmx_endpoint_t endpoint);
/* Wake every thread blocked in wait/peek/probe on this endpoint; they
 * return FMX_SUCCESS with result 0. A thread blocked in fmx_connect on it
 * (waiting for an endpoint not open yet, or for a remote answer) returns
 * FMX_TIMEOUT. */
fmx_return_t fmx_wakeup(fmx_endpoint_t endpoint);
/* Run one progress pass (the library also progresses inside every call). */
fmx_return_t fmx_progress(fmx_endpoint_t endpoint);
/* The caller polled this endpoint (fmx_test*, fmx_progress) and found
 * nothing to do: a polling loop's idle turn, such as an MPI progress
 * engine's. When ranks outnumber the cores (FMX_CROWDED) the one it waits
 * for may be queued behind it on this core: fmx then gives the core away
 * (sched_yield); otherwise it returns at once, but for a look at the
 * kernel's runnable tasks (/proc/loadavg) at most every 10 ms when the
 * endpoint has partners on other hosts. Thread safe; FMX_BAD_ENDPOINT for
 * NULL. */
fmx_return_t fmx_idle(fmx_endpoint_t endpoint);
/* The endpoint's own address (usable to send to itself). */
fmx_return_t fmx_get_endpoint_addr(fmx_endpoint_t endpoint, fmx_endpoint_addr_t *addr);
/* Split an address into its NIC id and endpoint id. */
fmx_return_t fmx_decompose_endpoint_addr(fmx_endpoint_addr_t addr, uint64_t *nic_id,
                                         uint32_t *endpoint_id);
/* The NIC id of a board by name: "host:board" or "host" (board 0) from the
 * peer table (FMX_PEERS, lines "MAC hostname:board"), a MAC written
 * aa:bb:cc:dd:ee:ff, or a NIC id in hex (0x...). FMX_PEER_NOT_FOUND when
 * it is none of these. */
fmx_return_t fmx_hostname_to_nic_id(const char *name, uint64_t *nic_id);
/* The peer table's name of a NIC id (at most len bytes, NUL included);
 * FMX_NIC_ID_NOT_FOUND when the table has none. */
fmx_return_t fmx_nic_id_to_hostname(uint64_t nic_id, char *name, uint32_t len);
/* Blocking connect to (nic_id, endpoint_id) presenting `key`. nic_id may be
 * FMX_ANY_NIC for this host; another host's NIC id (its board's MAC, the
 * net transport) is reached over Ethernet, this host's through shared
 * memory. An endpoint not open yet is waited for, up to
 * FMX_CONNECT_WAIT_MS (1 s) within timeout_ms. Only endpoints of the
 * caller's own uid are reachable: another user's endpoints live under other
 * names and are invisible. Errors: FMX_REMOTE_ENDPOINT_BAD_ID (no such
 * endpoint of this user, also after the wait), FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY
 * (wrong key), FMX_ACCESS_DENIED (the endpoint's name is held by a process
 * of another user: nothing was sent to it), FMX_REMOTE_ENDPOINT_CLOSED (the
 * peer went away or answered with something unusable), FMX_NIC_ID_NOT_FOUND
 * (host not reachable), FMX_NO_SYSTEM_RESOURCES (out of file descriptors,
 * here or at the peer; logged), FMX_TIMEOUT. Connecting twice returns the
 * same address. */
fmx_return_t fmx_connect(fmx_endpoint_t endpoint, uint64_t nic_id, uint32_t endpoint_id,
                         uint32_t key, uint32_t timeout_ms, fmx_endpoint_addr_t *addr);
/* Asynchronous connect: completes the request with status.code the result of
 * the handshake, status.source the address and status.match_info `match`.
 * To another host it returns at once and progress carries the handshake on
 * (as fmx_connect_async); it gives up after 10 s, or with FMX_TIMEOUT at the
 * endpoint's request timeout when one is set. To this host's endpoints the
 * handshake is done before it returns. */
fmx_return_t fmx_iconnect(fmx_endpoint_t endpoint, uint64_t nic_id, uint32_t endpoint_id,
                          uint32_t key, uint64_t match, void *context,
                          fmx_request_t *request);
/* Connect without waiting for the peer: the address at once, the
 * handshake carried on by progress (this endpoint's, any call that makes
 * it). Sends to the address wait until the handshake is done; if it fails
 * they complete with why: FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY,
 * FMX_REMOTE_ENDPOINT_CLOSED, or FMX_REMOTE_ENDPOINT_UNREACHABLE when
 * nothing answered within timeout_ms. Errors at once as fmx_connect's
 * (FMX_NIC_ID_NOT_FOUND, ...). An endpoint of this host is connected
 * before it returns, as by fmx_connect. Connecting again (either way)
 * gives the same address; fmx_connect to a peer being dialed waits for
 * that handshake. */
fmx_return_t fmx_connect_async(fmx_endpoint_t endpoint, uint64_t nic_id, uint32_t endpoint_id,
                               uint32_t key, uint32_t timeout_ms, fmx_endpoint_addr_t *addr);
/* Drop the connection: pending requests with that peer complete with
 * FMX_REMOTE_ENDPOINT_UNREACHABLE. */
fmx_return_t fmx_disconnect(fmx_endpoint_t endpoint, fmx_endpoint_addr_t addr);

/* --- communication ------------------------------------------------------ */

/* Send a segment list (eager or rendezvous as size dictates). The request
 * completes when the send buffer may be reused. A segment with a NULL
 * pointer and a nonzero length, one that runs past the end of the address
 * space, or a list whose total overflows 64 bits gives FMX_BAD_ADDRESS
 * (nothing is sent); more than FMX_MAX_SEGMENTS gives FMX_SEGMENTS_BAD_COUNT.
 * The same holds for fmx_irecv. */
fmx_return_t fmx_isend(fmx_endpoint_t endpoint, const fmx_seg_t *segs, uint32_t nsegs,
                       fmx_endpoint_addr_t dest, uint64_t match_info, void *context,
                       fmx_request_t *request);
/* Synchronous send: completes only once a receive has matched it. */
fmx_return_t fmx_issend(fmx_endpoint_t endpoint, const fmx_seg_t *segs, uint32_t nsegs,
                        fmx_endpoint_addr_t dest, uint64_t match_info, void *context,
                        fmx_request_t *request);
/* Post a receive. FMX_BAD_MATCH_MASK if (match_info & ~match_mask) != 0;
 * FMX_BAD_MATCHING_FOR_CONTEXT_ID_MASK if the mask does not cover the
 * endpoint's context-id bits. A longer message is truncated: the status says
 * FMX_MESSAGE_TRUNCATED with msg_length > xfer_length; nothing overflows. */
fmx_return_t fmx_irecv(fmx_endpoint_t endpoint, const fmx_seg_t *segs, uint32_t nsegs,
                       uint64_t match_info, uint64_t match_mask, void *context,
                       fmx_request_t *request);

/* What MPI asks of a message layer (the libfabric provider, docs/ofi.md):
 * fmx_isend with `flags` (FMX_MSG_*) and 64 bits of `data` delivered in the
 * receiver's status (FMX_MSG_DATA), and fmx_irecv with flags and a
 * `source`: non-NULL, it takes only messages from that address (a directed
 * receive; FMX_BAD_ADDRESS if the endpoint knows no such partner), and
 * fails with FMX_REMOTE_ENDPOINT_UNREACHABLE or _CLOSED when that partner
 * goes. FMX_MSG_UNTAGGED receives ignore match_info and match_mask.
 * Unknown flags (or FMX_MSG_DATA, FMX_MSG_SYNC on a receive) give
 * FMX_BAD_REQUEST, and nothing is posted. */
fmx_return_t fmx_isendx(fmx_endpoint_t endpoint, const fmx_seg_t *segs, uint32_t nsegs,
                        fmx_endpoint_addr_t dest, uint64_t match_info, uint64_t data, uint32_t flags,
                        void *context, fmx_request_t *request);
fmx_return_t fmx_irecvx(fmx_endpoint_t endpoint, const fmx_seg_t *segs, uint32_t nsegs,
                        const fmx_endpoint_addr_t *source, uint64_t match_info, uint64_t match_mask,
                        uint32_t flags, void *context, fmx_request_t *request);
/* A multi-receive buffer (libfabric's FI_MULTI_RECV; docs/protocol.md): one
 * posted receive, taken as fmx_irecvx's would be, by one message after the
 * other, each placed at the next 8-byte boundary of [buf, buf + len).
 * Each message completes a request of its own, made by fmx, which only
 * the fmx_*_any calls and fmx_ipeek/fmx_peek hand out: its status has the
 * buffer's context, flags FMX_MSG_MULTI and `buffer` where the message
 * begins. A message longer than the room left is truncated to it
 * (FMX_MESSAGE_TRUNCATED). Once fewer than min_free bytes are left (or
 * none), the buffer takes no more; *request completes after every message
 * it took has, with flags FMX_MSG_MULTI_DONE, `buffer` = buf and
 * xfer_length = the bytes used. fmx_cancel takes it back at once when no
 * message it took is still arriving; otherwise it takes no more messages
 * and completes so, later (*result 0). */
fmx_return_t fmx_irecv_multi(fmx_endpoint_t endpoint, void *buf, uint64_t len, uint64_t min_free,
                             const fmx_endpoint_addr_t *source, uint64_t match_info, uint64_t match_mask,
                             uint32_t flags, void *context, fmx_request_t *request);

/* --- completion --------------------------------------------------------- */

/* If *request is complete: fill *status, free it, set *request to NULL and
 * *result to 1. Otherwise *result = 0. */
fmx_return_t fmx_test(fmx_endpoint_t endpoint, fmx_request_t *request, fmx_status_t *status,
                      uint32_t *result);
/* As fmx_test, blocking up to timeout_ms (FMX_TIMEOUT_INFINITE: forever).
 * On timeout or fmx_wakeup returns FMX_SUCCESS with *result = 0. */
fmx_return_t fmx_wait(fmx_endpoint_t endpoint, fmx_request_t *request, uint32_t timeout_ms,
                      fmx_status_t *status, uint32_t *result);
/* *result = 1 when *request is complete (a send: its buffer may be
 * reused), without freeing it: fmx_test or fmx_wait still reports it. */
fmx_return_t fmx_ibuffered(fmx_endpoint_t endpoint, fmx_request_t *request, uint32_t *result);
/* Complete (and free) any finished request whose match info fits. */
fmx_return_t fmx_test_any(fmx_endpoint_t endpoint, uint64_t match_info, uint64_t match_mask,
                          fmx_status_t *status, uint32_t *result);
fmx_return_t fmx_wait_any(fmx_endpoint_t endpoint, uint32_t timeout_ms, uint64_t match_info,
                          uint64_t match_mask, fmx_status_t *status, uint32_t *result);
/* One progress pass, then up to max finished requests, oldest first,
 * completed (and freed) as fmx_test_any's with a mask of 0: their statuses
 * in statuses[0..*count). What a library that turns completions into
 * queue entries of its own calls (the libfabric provider): a polling loop
 * pays one pass of the transports per call, not one per completion plus
 * one to find none left. max 0: progress only. */
fmx_return_t fmx_test_some(fmx_endpoint_t endpoint, fmx_status_t *statuses, uint32_t max, uint32_t *count);
/* Return some completed request without freeing it (test it afterwards). */
fmx_return_t fmx_ipeek(fmx_endpoint_t endpoint, fmx_request_t *request, uint32_t *result);
fmx_return_t fmx_peek(fmx_endpoint_t endpoint, uint32_t timeout_ms, fmx_request_t *request,
                      uint32_t *result);
/* Look for an unexpected message that fits, without receiving it. The
 * status gives its source, match info and length. */
fmx_return_t fmx_iprobe(fmx_endpoint_t endpoint, uint64_t match_info, uint64_t match_mask,
                        fmx_status_t *status, uint32_t *result);
fmx_return_t fmx_probe(fmx_endpoint_t endpoint, uint32_t timeout_ms, uint64_t match_info,
                       uint64_t match_mask, fmx_status_t *status, uint32_t *result);
/* fmx_iprobe with the source and flags of fmx_irecvx: only messages from
 * *source when it is non-NULL (FMX_BAD_ADDRESS if the endpoint knows no
 * such partner), and the untagged space with FMX_MSG_UNTAGGED. The status
 * gives flags and data as a receive's would. */
fmx_return_t fmx_iprobex(fmx_endpoint_t endpoint, const fmx_endpoint_addr_t *source, uint64_t match_info,
                         uint64_t match_mask, uint32_t flags, fmx_status_t *status, uint32_t *result);
/* Matched probe (MPI_Improbe, libfabric's FI_CLAIM): as fmx_iprobex, and
 * the message found leaves matching, so that no receive takes it, as
 * *message. Hand that to fmx_imrecv (MPI_Mrecv) or to fmx_mdiscard (it is
 * dropped; a sender waiting for it completes); each sets *message to
 * NULL. A handle not from fmx_improbe, or used twice, gives
 * FMX_BAD_REQUEST. Closing the endpoint frees the handles it holds. */
typedef struct fmx_message *fmx_message_t;
fmx_return_t fmx_improbe(fmx_endpoint_t endpoint, const fmx_endpoint_addr_t *source, uint64_t match_info,
                         uint64_t match_mask, uint32_t flags, fmx_message_t *message, fmx_status_t *status,
                         uint32_t *result);
fmx_return_t fmx_imrecv(fmx_endpoint_t endpoint, const fmx_seg_t *segs, uint32_t nsegs, fmx_message_t *message,
                        void *context, fmx_request_t *request);
fmx_return_t fmx_mdiscard(fmx_endpoint_t endpoint, fmx_message_t *message);
/* Cancel an unmatched receive or an unanswered iconnect: *result = 1 and the
 * request is freed. A matched receive gives *result = 0; a send gives
 * FMX_BAD_REQUEST. */
fmx_return_t fmx_cancel(fmx_endpoint_t endpoint, fmx_request_t *request, uint32_t *result);
/* No completion will be reported; the request is freed when done. */
fmx_return_t fmx_forget(fmx_endpoint_t endpoint, fmx_request_t *request);
/* An unexpected-message handler (MX's mx_register_unexp_handler): called
 * for each tagged message that no posted receive takes, as it arrives and
 * before it is queued unexpected, from within the fmx call that made the
 * progress, on its thread. It gets the message's source, match info and
 * length, and its bytes when all are here (eager messages; NULL for a
 * rendezvous or synchronous one), valid during the call only. It may post
 * receives and sends and probe on this endpoint; no progress is made
 * inside it (a wait there ends at its timeout; give 0), and it may not
 * close the endpoint or disconnect (FMX_BAD_ENDPOINT). It returns
 * FMX_UNEXP_CONTINUE: matching goes on (a receive the handler posted takes
 * the message, else it is queued unexpected), or FMX_UNEXP_FINISHED: the
 * message is dropped, as fmx_mdiscard would (a sender waiting for it
 * completes with FMX_MESSAGE_TRUNCATED, nothing received). A NULL handler
 * removes it. */
typedef enum { FMX_UNEXP_CONTINUE = 0, FMX_UNEXP_FINISHED = 1 } fmx_unexp_action_t;
typedef fmx_unexp_action_t (*fmx_unexp_handler_t)(void *context, fmx_endpoint_addr_t source, uint64_t match_info,
                                                  uint64_t length, const void *data_if_available);
fmx_return_t fmx_set_unexp_handler(fmx_endpoint_t endpoint, fmx_unexp_handler_t handler, void *context);
/* The context pointer given when the request was posted. */
fmx_return_t fmx_context(fmx_request_t *request, void **context);
/* Timeout for one request, or the endpoint's default when request is NULL.
 * A send not delivered to its peer in time, or an iconnect not answered,
 * completes with FMX_TIMEOUT. 0 means none. */
fmx_return_t fmx_set_request_timeout(fmx_endpoint_t endpoint, fmx_request_t request,
                                     uint32_t timeout_ms);
/* Memory for message buffers that local peers map (like MPI_Alloc_mem). A
 * large message sent from it is copied once by the receiver with plain
 * loads and stores (no kernel on the way), and received into it, the
 * sender copies part too; from malloc'd memory the kernel copies it (CMA)
 * or it goes through shared rings. A message qualifies when all its
 * segments lie in one fmx_mem_alloc region and it is longer than one eager
 * fragment (FMX_EAGER_FRAG, a quarter of the L1d). The memory is zero-filled,
 * page-aligned and shared with a forked child. Errors: FMX_BAD_ADDRESS
 * (ptr NULL, len 0; fmx_mem_free of a pointer fmx_mem_alloc did not
 * return), FMX_NO_SYSTEM_RESOURCES. fmx_mem_free(NULL) does nothing. A peer
 * that mapped a region keeps its pages until its endpoint closes. Usable
 * before fmx_init. */
fmx_return_t fmx_mem_alloc(size_t len, void **ptr);
fmx_return_t fmx_mem_free(void *ptr);

/* Asynchronous copies within this process (the I/OAT ADCE paper's API,
 * docs/copy.md): the copy runs on an offload channel (a helper thread,
 * one channel per copy, round robin, pinned off the caller's core when the
 * caller is bound to one) while the caller computes. A copy shorter than
 * FMX_COPY_ASYNC_THRESHOLD (default one L2), or one no channel can take
 * (FMX_OFFLOAD_CHANNELS=0), is done at once in the caller; its *handle is
 * then NULL, which fmx_copy_test and fmx_copy_wait report as complete.
 * The memory must stay valid and untouched by others until the copy
 * completes; wait for every copy before fmx_finalize. The vector form
 * copies every byte of src (at most FMX_MAX_SEGMENTS segments on each
 * side) into dst, which must hold at least as many. Errors:
 * FMX_NOT_INITIALIZED, FMX_BAD_REQUEST (handle NULL), FMX_SEGMENTS_BAD_COUNT,
 * FMX_BAD_ADDRESS (a NULL pointer with a length, dst shorter than src),
 * FMX_NO_RESOURCES. */
typedef struct fmx_copy *fmx_copy_t;
fmx_return_t fmx_copy_async(void *dst, const void *src, size_t len, fmx_copy_t *handle);
fmx_return_t fmx_copy_asyncv(const fmx_seg_t *dst, uint32_t ndst, const fmx_seg_t *src, uint32_t nsrc,
                             fmx_copy_t *handle);
/* *result 1 once the copy is complete (the handle is freed and set to
 * NULL), else 0. */
fmx_return_t fmx_copy_test(fmx_copy_t *handle, uint32_t *result);
/* The same, waiting up to timeout_ms (FMX_TIMEOUT_INFINITE: until done): it
 * polls for FMX_SPIN_US, then sleeps on the copy's status word. */
fmx_return_t fmx_copy_wait(fmx_copy_t *handle, uint32_t timeout_ms, uint32_t *result);

/* Declared regions (KNEM's cookies, docs/regions.md). fmx_region_create
 * declares segs (at most FMX_MAX_SEGMENTS; 0-byte ones are dropped) on
 * the endpoint with access FMX_REGION_READ, FMX_REGION_WRITE or both, and
 * gives a random 64-bit cookie, never 0. Hand the cookie to a peer of this
 * host (in a message): holding it and connected to this endpoint, it may
 * read or write [offset, offset + length) of the region, seen as the
 * concatenation of its segments. The owner's endpoint must make progress
 * (any fmx call on it) for a request to be answered; the bytes are then
 * copied once, by the engines: a mapping when the region lies in one
 * fmx_mem_alloc region, CMA otherwise. fmx_region_destroy revokes the
 * cookie (only the endpoint that made it can); copies already granted
 * finish on the memory, which the owner must keep until they complete.
 * Closing the endpoint destroys its regions. */
#define FMX_REGION_READ 0x1u
#define FMX_REGION_WRITE 0x2u
fmx_return_t fmx_region_create(fmx_endpoint_t endpoint, const fmx_seg_t *segs, uint32_t nsegs, uint32_t access,
                               uint64_t *cookie);
fmx_return_t fmx_region_destroy(fmx_endpoint_t endpoint, uint64_t cookie);
/* Read the owner's region into segs (iread), or write segs into it
 * (iwrite); the length is the sum of segs. The request completes with
 * FMX_SUCCESS and xfer_length bytes moved, or with an error and nothing
 * read or written: FMX_REGION_NOT_FOUND (a wrong or destroyed cookie, a
 * cookie of another endpoint), FMX_ACCESS_DENIED (the region lacks that
 * access), FMX_REGION_OUT_OF_RANGE, FMX_REMOTE_ENDPOINT_CLOSED or
 * _UNREACHABLE (the owner went away). Not cancellable. fmx_region_read and
 * fmx_region_write wait for it (status may be NULL) and return its code. */
fmx_return_t fmx_region_iread(fmx_endpoint_t endpoint, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                              const fmx_seg_t *segs, uint32_t nsegs, void *context, fmx_request_t *request);
fmx_return_t fmx_region_iwrite(fmx_endpoint_t endpoint, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                               const fmx_seg_t *segs, uint32_t nsegs, void *context, fmx_request_t *request);
fmx_return_t fmx_region_read(fmx_endpoint_t endpoint, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                             const fmx_seg_t *segs, uint32_t nsegs, fmx_status_t *status);
fmx_return_t fmx_region_write(fmx_endpoint_t endpoint, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                              const fmx_seg_t *segs, uint32_t nsegs, fmx_status_t *status);

/* --- counters of running endpoints ---------------------------------------- */

/* An endpoint of a running process whose counters page (FMX_COUNTERS_PAGE)
 * this caller can read: its own user's, or anyone's for root. */
enum fmx_counters_state {
  FMX_COUNTERS_OK = 0,         /* readable with fmx_counters_read */
  FMX_COUNTERS_OTHER_BUILD = 1, /* an fmx build whose counters differ from this one's */
  FMX_COUNTERS_MALFORMED = 2,  /* a page by that name that is not a valid one */
};
typedef struct fmx_counters_source {
  int32_t pid;
  int32_t fd;    /* the page's descriptor in that process */
  uint32_t uid;  /* the process's user */
  uint32_t state; /* enum fmx_counters_state */
  uint32_t board, endpoint_id;
  uint32_t count; /* counters on the page (the labels: FMX_INFO_COUNTER_LABEL) */
  uint32_t pad;
  uint64_t nic_id;
  uint64_t opened_ns; /* when the endpoint opened, ns since the epoch */
} fmx_counters_source_t;
/* The counters pages of running endpoints (of process `pid`, or of every
 * process when pid is 0), found through /proc: at most `max` into out,
 * the number found into *found. Needs no fmx_init. FMX_BAD_INFO_LENGTH if
 * out is NULL while max > 0. */
fmx_return_t fmx_counters_list(int32_t pid, fmx_counters_source_t *out, uint32_t max, uint32_t *found);
/* One snapshot of a listed endpoint's `count` values (count must be the
 * source's). FMX_BAD_ENDPOINT when it has closed or its process has gone,
 * FMX_ACCESS_DENIED when this caller may not read it, FMX_BAD_INFO_LENGTH
 * for a wrong count, FMX_BAD_INFO_KEY for a page not FMX_COUNTERS_OK. */
fmx_return_t fmx_counters_read(const fmx_counters_source_t *src, uint64_t *values, uint32_t count);

/* --- for faces built over fmx (the MX face) ------------------------------- */

/* The value in force of tunable `name` (the table fmx_info --config prints),
 * as text, at most len bytes with the NUL; works before fmx_init.
 * FMX_BAD_INFO_KEY for an unknown name, FMX_BAD_INFO_LENGTH if it does not
 * fit. */
fmx_return_t fmx_config_get(const char *name, char *value, uint32_t len);
/* One line at error level through fmx's log (FMX_LOG decides whether it is
 * printed; `id` is its message id): a face's message before it ends the
 * process. */
void fmx_log_error(const char *id, const char *text);

/* Library facts; see enum fmx_info_key. endpoint may be NULL for keys that
 * do not need one (RNDV_THRESHOLD, TINY_MAX, NIC_ID, ENGINE_STATUS, COUNTER_COUNT,
 * COUNTER_LABEL, and the introspection keys of fmx_info.h). CONFIG_COUNT
 * and CONFIG_ENTRY work before fmx_init too; every other key needs it. */
fmx_return_t fmx_get_info(fmx_endpoint_t endpoint, uint32_t key, const void *in,
                          uint32_t in_len, void *out, uint32_t out_len);

#ifdef __cplusplus
}
#endif
#endif /* FMX_H */
