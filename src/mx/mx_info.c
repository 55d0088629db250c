/* SPDX-License-Identifier: MIT */
/* mx_get_info: MX's keys answered from fmx_get_info and the counters
 * pages. Every output length is checked (MX_BAD_INFO_LENGTH), and
 * MX_NIC_IDS is filled (Open-MX returned before filling it). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mx/mx_int.h"

static mx_return_t put_u32(mx_endpoint_t e, void *out, uint32_t out_len, uint32_t v, const char *what) {
  if (!out) return mx_fail(e, MX_BAD_INFO_VAL, "mx_get_info(%s): NULL output", what);
  if (out_len < sizeof v) return mx_fail(e, MX_BAD_INFO_LENGTH, "mx_get_info(%s): %u bytes, need 4", what, out_len);
  memcpy(out, &v, sizeof v);
  return MX_SUCCESS;
}

static mx_return_t put_str(mx_endpoint_t e, void *out, uint32_t out_len, const char *s, const char *what) {
  if (!out) return mx_fail(e, MX_BAD_INFO_VAL, "mx_get_info(%s): NULL output", what);
  if (out_len < strlen(s) + 1) return mx_fail(e, MX_BAD_INFO_LENGTH, "mx_get_info(%s): %u bytes", what, out_len);
  memcpy(out, s, strlen(s) + 1);
  return MX_SUCCESS;
}

static uint32_t counter_count(void) {
  uint32_t n = 0;
  return fmx_get_info(NULL, FMX_INFO_COUNTER_COUNT, NULL, 0, &n, sizeof n) == FMX_SUCCESS ? n : 0;
}

/* MX's counters are the board's: with an endpoint, that endpoint's; without,
 * the sum over this process's endpoints (their counters pages). 32 bits
 * each, as MX has them (a larger count shows as UINT32_MAX). */
static mx_return_t counter_values(mx_endpoint_t e, uint32_t *out, uint32_t n) {
  uint64_t *v = calloc(n ? n : 1, sizeof *v), *one = calloc(n ? n : 1, sizeof *one);
  mx_return_t r = MX_SUCCESS;
  if (!v || !one) {
    r = mx_fail(e, MX_NO_RESOURCES, "mx_get_info(MX_COUNTERS_VALUES): out of memory");
  } else if (e) {
    if (n && fmx_get_info(e->ep, FMX_INFO_COUNTER_VALUES, NULL, 0, v, (uint32_t)(n * sizeof *v)) != FMX_SUCCESS)
      r = mx_fail(e, MX_BAD_ENDPOINT, "mx_get_info(MX_COUNTERS_VALUES)");
  } else {
    fmx_counters_source_t src[64];
    uint32_t found = 0;
    if (fmx_counters_list((int32_t)getpid(), src, 64, &found) == FMX_SUCCESS)
      for (uint32_t i = 0; i < found && i < 64; i++)
        if (src[i].count == n && fmx_counters_read(&src[i], one, n) == FMX_SUCCESS)
          for (uint32_t k = 0; k < n; k++) v[k] += one[k];
  }
  if (r == MX_SUCCESS)
    for (uint32_t k = 0; k < n; k++) out[k] = v[k] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[k];
  free(v);
  free(one);
  return r;
}

MX_FACE mx_return_t mx_get_info(mx_endpoint_t e, mx_get_info_key_t key, void *in_val, uint32_t in_len,
                                void *out_val, uint32_t out_len) {
  (void)in_val;
  (void)in_len; /* the board number: this host has board 0 only */
  uint64_t v = 0;
  switch (key) {
    case MX_NIC_COUNT:
      return put_u32(e, out_val, out_len, 1, "MX_NIC_COUNT");
    case MX_NIC_IDS: {
      uint64_t ids[2] = {mx_local_nic(), 0};
      if (!out_val) return mx_fail(e, MX_BAD_INFO_VAL, "mx_get_info(MX_NIC_IDS): NULL output");
      if (out_len < sizeof ids)
        return mx_fail(e, MX_BAD_INFO_LENGTH, "mx_get_info(MX_NIC_IDS): %u bytes, need 16", out_len);
      memcpy(out_val, ids, sizeof ids);
      return MX_SUCCESS;
    }
    case MX_MAX_NATIVE_ENDPOINTS: {
      char n[24];
      if (fmx_config_get("FMX_ENDPOINT_MAX", n, sizeof n) != FMX_SUCCESS) return mx_fail(e, MX_BAD_BAD_BAD, "FMX_ENDPOINT_MAX");
      return put_u32(e, out_val, out_len, (uint32_t)strtoul(n, NULL, 10), "MX_MAX_NATIVE_ENDPOINTS");
    }
    case MX_NATIVE_REQUESTS:
      return put_u32(e, out_val, out_len, UINT32_MAX, "MX_NATIVE_REQUESTS");
    case MX_COUNTERS_COUNT:
      return put_u32(e, out_val, out_len, counter_count(), "MX_COUNTERS_COUNT");
    case MX_COUNTERS_LABELS: {
      uint32_t n = counter_count();
      if (!out_val) return mx_fail(e, MX_BAD_INFO_VAL, "mx_get_info(MX_COUNTERS_LABELS): NULL output");
      if ((uint64_t)out_len < (uint64_t)n * MX_MAX_STR_LEN)
        return mx_fail(e, MX_BAD_INFO_LENGTH, "mx_get_info(MX_COUNTERS_LABELS): %u bytes, need %u", out_len,
                       n * MX_MAX_STR_LEN);
      char *o = out_val;
      for (uint32_t i = 0; i < n; i++) {
        if (fmx_get_info(NULL, FMX_INFO_COUNTER_LABEL, &i, sizeof i, o + (size_t)i * MX_MAX_STR_LEN, MX_MAX_STR_LEN) !=
            FMX_SUCCESS)
          o[(size_t)i * MX_MAX_STR_LEN] = '\0';
        o[(size_t)i * MX_MAX_STR_LEN + MX_MAX_STR_LEN - 1] = '\0';
      }
      return MX_SUCCESS;
    }
    case MX_COUNTERS_VALUES: {
      uint32_t n = counter_count();
      if (!out_val) return mx_fail(e, MX_BAD_INFO_VAL, "mx_get_info(MX_COUNTERS_VALUES): NULL output");
      if ((uint64_t)out_len < (uint64_t)n * sizeof(uint32_t))
        return mx_fail(e, MX_BAD_INFO_LENGTH, "mx_get_info(MX_COUNTERS_VALUES): %u bytes, need %u", out_len, n * 4);
      return counter_values(e, out_val, n);
    }
    case MX_PRODUCT_CODE:
    case MX_PART_NUMBER:
    case MX_SERIAL_NUMBER:
      return put_str(e, out_val, out_len, "N/A (fmx)", "MX_PRODUCT_CODE");
    case MX_PORT_COUNT:
      return put_u32(e, out_val, out_len, 1, "MX_PORT_COUNT");
    case MX_PIO_SEND_MAX:
      if (fmx_get_info(NULL, FMX_INFO_TINY_MAX, NULL, 0, &v, sizeof v) != FMX_SUCCESS) v = 0;
      return put_u32(e, out_val, out_len, (uint32_t)v, "MX_PIO_SEND_MAX");
    case MX_COPY_SEND_MAX:
      /* The longest message sent eagerly (copied): one below the rendezvous
       * threshold, where the peer's transport does not say less. */
      if (fmx_get_info(NULL, FMX_INFO_RNDV_THRESHOLD, NULL, 0, &v, sizeof v) != FMX_SUCCESS || v == 0) v = 1;
      v--;
      return put_u32(e, out_val, out_len, v > UINT32_MAX ? UINT32_MAX : (uint32_t)v, "MX_COPY_SEND_MAX");
    case MX_NUMA_NODE:
      return put_u32(e, out_val, out_len, UINT32_MAX, "MX_NUMA_NODE"); /* a virtual board: no node of its own */
    case MX_NET_TYPE:
      return put_u32(e, out_val, out_len, MX_NET_ETHER, "MX_NET_TYPE");
    case MX_LINE_SPEED:
      return put_u32(e, out_val, out_len, MX_SPEED_OPEN_MX, "MX_LINE_SPEED");
    default:
      return mx_fail(e, MX_BAD_INFO_KEY, "mx_get_info: key %d", (int)key);
  }
}
