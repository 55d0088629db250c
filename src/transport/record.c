/* SPDX-License-Identifier: MIT */
#include "transport/record.h"

const char *proto_type_str(unsigned type) {
  static const char *const names[] = {"PAD", "EAGER", "RTS", "CTS", "FIN", "CLOSE", "FRAG", "RGET", "RPUT", "RGRANT", "HINT"};
  return type < PROTO_TYPE_MAX ? names[type] : "UNKNOWN";
}
