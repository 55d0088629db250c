/* SPDX-License-Identifier: MIT */
#include "base/counters.h"

const char *const counter_labels[CNT_MAX] = {
#define X(name, doc) doc,
    FMX_COUNTERS(X)
#undef X
};
