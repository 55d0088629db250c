/* SPDX-License-Identifier: MIT */
/* The packet format (wire.h, docs/protocol.md): parse with bounds checks,
 * write field by field. */
#include "net/wire.h"

/* The body each type must carry exactly; DATA: any length up to the max,
 * at least one byte. */
static const uint16_t body_len[NET_TYPE_MAX] = {
    [NET_CONNECT] = 36, [NET_CONNECT_REPLY] = 20, [NET_ACK] = 8, [NET_NACK] = 4, [NET_PULL] = 28,
    [NET_HOST_QUERY] = 8,
};

int net_parse(const uint8_t *buf, size_t n, struct net_pkt *out) {
  if (!buf || n < NET_HDR_LEN) return NET_BAD_SHORT;
  if (net_get16(buf) != NET_MAGIC) return NET_BAD_MAGIC;
  struct net_hdr *h = &out->h;
  h->version = buf[2];
  h->type = buf[3];
  if (h->version != NET_VERSION) return NET_BAD_VERSION;
  if (h->type == 0 || h->type >= NET_TYPE_MAX) return NET_BAD_TYPE;
  h->dst_ep = net_get16(buf + 4);
  h->src_ep = net_get16(buf + 6);
  h->dst_session = net_get32(buf + 8);
  h->src_session = net_get32(buf + 12);
  h->seq = net_get32(buf + 16);
  h->ack = net_get32(buf + 20);
  h->len = net_get16(buf + 24);
  h->flags = net_get16(buf + 26);
  if (h->len > n - NET_HDR_LEN || h->len > NET_BODY_MAX) return NET_BAD_LENGTH;
  const uint8_t *b = buf + NET_HDR_LEN;
  out->body = b;
  if (h->type == NET_DATA) {
    if (h->flags & ~NET_F_KNOWN) return NET_BAD_FLAGS;
    if (h->len == 0 && h->flags) return NET_BAD_LENGTH; /* a probe has no byte and no flag */
    return NET_OK;
  }
  if (h->type == NET_PULL_REPLY) {
    if (h->len <= NET_PULL_REPLY_HDR) return NET_BAD_LENGTH;
    if (h->flags & ~NET_REPLY_WAIT_MASK) return NET_BAD_FLAGS;
    out->u.reply_data.rreq = net_get64(b);
    out->u.reply_data.index = net_get32(b + 8);
    return NET_OK;
  }
  if (h->type == NET_HOST_REPLY) {
    if (h->len <= NET_HOST_REPLY_HDR || h->len > NET_HOST_REPLY_HDR + NET_NAME_MAX) return NET_BAD_LENGTH;
    if (h->flags) return NET_BAD_FLAGS;
    for (const uint8_t *c = b + NET_HOST_REPLY_HDR; c < b + h->len; c++)
      if (*c <= ' ' || *c > '~') return NET_BAD_LENGTH; /* a name: printable, no spaces */
    out->u.host.nonce = net_get64(b);
    out->u.host.nic = net_get64(b + 8);
    out->u.host.name_len = h->len - NET_HOST_REPLY_HDR;
    return NET_OK;
  }
  if (h->len != body_len[h->type]) return NET_BAD_LENGTH;
  if (h->flags & ~(h->type == NET_PULL ? NET_F_WIRE : h->type == NET_ACK ? NET_ACK_DUPS_MASK : 0)) return NET_BAD_FLAGS;
  switch (h->type) {
    case NET_CONNECT:
      out->u.connect.nic = net_get64(b);
      out->u.connect.dst_nic = net_get64(b + 8);
      out->u.connect.key = net_get32(b + 16);
      out->u.connect.conn_seq = net_get32(b + 20);
      out->u.connect.start_seq = net_get32(b + 24);
      out->u.connect.bulk_ip = net_get32(b + 28);
      out->u.connect.bulk_port = net_get16(b + 32);
      out->u.connect.mtu = net_get16(b + 34);
      break;
    case NET_CONNECT_REPLY:
      out->u.reply.status = net_get32(b);
      out->u.reply.conn_seq = net_get32(b + 4);
      out->u.reply.start_seq = net_get32(b + 8);
      out->u.reply.bulk_ip = net_get32(b + 12);
      out->u.reply.bulk_port = net_get16(b + 16);
      out->u.reply.mtu = net_get16(b + 18);
      break;
    case NET_ACK:
      out->u.ack.sack = net_get64(b);
      out->u.ack.dups = (h->flags & NET_ACK_DUPS_MASK) >> NET_ACK_DUPS_SHIFT;
      break;
    case NET_PULL:
      out->u.pull.sreq = net_get64(b);
      out->u.pull.rreq = net_get64(b + 8);
      out->u.pull.frame = net_get32(b + 16);
      out->u.pull.first = net_get32(b + 20);
      out->u.pull.count = net_get32(b + 24);
      break;
    case NET_HOST_QUERY:
      out->u.query.nonce = net_get64(b);
      break;
    default: /* NET_NACK */
      out->u.nack.reason = net_get32(b);
      break;
  }
  return NET_OK;
}

void net_put_hdr(uint8_t *buf, const struct net_hdr *h) {
  net_set16(buf, NET_MAGIC);
  buf[2] = NET_VERSION;
  buf[3] = h->type;
  net_set16(buf + 4, h->dst_ep);
  net_set16(buf + 6, h->src_ep);
  net_set32(buf + 8, h->dst_session);
  net_set32(buf + 12, h->src_session);
  net_set32(buf + 16, h->seq);
  net_set32(buf + 20, h->ack);
  net_set16(buf + 24, h->len);
  net_set16(buf + 26, h->flags);
}

size_t net_put_query(uint8_t *buf, uint64_t nonce) {
  net_set64(buf, nonce);
  return 8;
}

size_t net_put_host(uint8_t *buf, uint64_t nonce, uint64_t nic, const char *name, size_t len) {
  net_set64(buf, nonce);
  net_set64(buf + 8, nic);
  for (size_t i = 0; i < len; i++) buf[NET_HOST_REPLY_HDR + i] = (uint8_t)name[i];
  return NET_HOST_REPLY_HDR + len;
}

void net_patch_ack(uint8_t *buf, uint32_t ack) { net_set32(buf + 20, ack); }

void net_clear_flags(uint8_t *buf, uint16_t flags) { net_set16(buf + 26, (uint16_t)(net_get16(buf + 26) & ~flags)); }

size_t net_put_connect(uint8_t *buf, uint64_t nic, uint64_t dst_nic, uint32_t key, uint32_t conn_seq,
                       uint32_t start_seq, uint32_t bulk_ip, uint16_t bulk_port, uint16_t mtu) {
  net_set64(buf, nic);
  net_set64(buf + 8, dst_nic);
  net_set32(buf + 16, key);
  net_set32(buf + 20, conn_seq);
  net_set32(buf + 24, start_seq);
  net_set32(buf + 28, bulk_ip);
  net_set16(buf + 32, bulk_port);
  net_set16(buf + 34, mtu);
  return 36;
}

/* The record header, 40 bytes, as struct proto_hdr orders its fields. */
void net_put_record(uint8_t *buf, const struct proto_hdr *h) {
  buf[0] = h->type;
  buf[1] = h->flags;
  net_set16(buf + 2, h->nseg);
  net_set32(buf + 4, h->len);
  net_set64(buf + 8, h->match);
  net_set64(buf + 16, h->msg_len);
  net_set64(buf + 24, h->sreq);
  net_set64(buf + 32, h->rreq);
}

int net_get_record(const uint8_t *buf, size_t n, struct proto_hdr *h) {
  if (n < NET_RECORD_HDR) return -1;
  h->type = buf[0];
  h->flags = buf[1];
  h->nseg = net_get16(buf + 2);
  h->len = net_get32(buf + 4);
  h->match = net_get64(buf + 8);
  h->msg_len = net_get64(buf + 16);
  h->sreq = net_get64(buf + 24);
  h->rreq = net_get64(buf + 32);
  return h->len == n - NET_RECORD_HDR ? 0 : -1;
}

size_t net_put_reply(uint8_t *buf, uint32_t status, uint32_t conn_seq, uint32_t start_seq, uint32_t bulk_ip,
                     uint16_t bulk_port, uint16_t mtu) {
  net_set32(buf, status);
  net_set32(buf + 4, conn_seq);
  net_set32(buf + 8, start_seq);
  net_set32(buf + 12, bulk_ip);
  net_set16(buf + 16, bulk_port);
  net_set16(buf + 18, mtu);
  return 20;
}

size_t net_put_ack(uint8_t *buf, uint64_t sack) {
  net_set64(buf, sack);
  return 8;
}

size_t net_put_nack(uint8_t *buf, uint32_t reason) {
  net_set32(buf, reason);
  return 4;
}

size_t net_put_pull(uint8_t *buf, uint64_t sreq, uint64_t rreq, uint32_t frame, uint32_t first, uint32_t count) {
  net_set64(buf, sreq);
  net_set64(buf + 8, rreq);
  net_set32(buf + 16, frame);
  net_set32(buf + 20, first);
  net_set32(buf + 24, count);
  return 28;
}

size_t net_put_pull_reply(uint8_t *buf, uint64_t rreq, uint32_t index) {
  net_set64(buf, rreq);
  net_set32(buf + 8, index);
  return NET_PULL_REPLY_HDR;
}

const char *net_bad_str(int why) {
  static const char *const s[] = {"ok", "short", "bad magic", "bad version", "bad type", "bad length", "bad flags"};
  return why >= 0 && why < (int)(sizeof s / sizeof s[0]) ? s[why] : "?";
}

const char *net_type_str(unsigned type) {
  static const char *const s[] = {"?", "CONNECT", "CONNECT_REPLY", "DATA", "ACK", "NACK", "PULL", "PULL_REPLY", "HOST_QUERY", "HOST_REPLY"};
  return type < NET_TYPE_MAX ? s[type] : "?";
}
