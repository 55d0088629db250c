/* SPDX-License-Identifier: MIT */
/* A receiver's grants: its budget of bytes on their way (net/grant.h). */
#include "net/grant.h"

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

void net_grant_init(struct net_grant *g, uint64_t cap, uint64_t unit, uint64_t first) {
  *g = (struct net_grant){0};
  g->unit = unit ? unit : 1;
  g->cap = max64(cap, 2 * g->unit);
  g->budget = min64(g->cap, max64(first, 2 * g->unit));
  g->least = max64(first / 2, 2 * g->unit);
  g->thresh = g->cap;
}

/* A new window of the measured minimum and maximum, when it is time. */
static void rotate(struct net_grant *g, uint64_t now) {
  if (!g->epoch_ns) g->epoch_ns = now;
  if (now - g->epoch_ns < NET_GRANT_EPOCH_NS) return;
  int both = now - g->epoch_ns >= 2 * NET_GRANT_EPOCH_NS;
  g->rtt_min_ns[1] = both ? 0 : g->rtt_min_ns[0];
  g->net_min_ns[1] = both ? 0 : g->net_min_ns[0];
  g->rate[1] = both ? 0 : g->rate[0];
  g->away_ns[1] = both ? 0 : g->away_ns[0];
  g->away_ns[0] = 0;
  g->rtt_min_ns[0] = 0;
  g->net_min_ns[0] = 0;
  g->rate[0] = 0;
  g->epoch_ns = now;
}

/* The least of a window pair, 0 where neither has one. */
static uint64_t least(const uint64_t w[2]) { return !w[0] ? w[1] : !w[1] ? w[0] : min64(w[0], w[1]); }

uint64_t net_grant_rtt_min(const struct net_grant *g) { return least(g->rtt_min_ns); }

uint64_t net_grant_net_min(const struct net_grant *g) { return least(g->net_min_ns); }

static uint64_t rate_max(const struct net_grant *g) { return max64(g->rate[0], g->rate[1]); }

uint64_t net_grant_bdp(const struct net_grant *g) {
  uint64_t wait = net_grant_net_min(g);
  return (uint64_t)((unsigned __int128)rate_max(g) * (wait ? wait : net_grant_rtt_min(g)) / 1000000000u);
}

uint64_t net_grant_drain_ns(const struct net_grant *g) {
  uint64_t r = rate_max(g);
  return r ? (uint64_t)((unsigned __int128)g->inflight * 1000000000u / r) : 0;
}

void net_grant_away(struct net_grant *g, uint64_t ns, uint64_t now) {
  rotate(g, now);
  g->away_ns[0] = max64(g->away_ns[0], ns);
}

uint64_t net_grant_floor(const struct net_grant *g) {
  uint64_t r = rate_max(g), wait = net_grant_net_min(g), most = min64(g->cap, g->least);
  if (!r || !wait) return most;
  uint64_t need = (uint64_t)((unsigned __int128)r * (wait + max64(g->away_ns[0], g->away_ns[1])) / 1000000000u);
  return max64(min64(need, most), min64(most, 2 * g->unit));
}

void net_grant_asked(struct net_grant *g, uint64_t bytes, uint64_t now) {
  g->inflight += bytes;
  if (!g->span_ns) {
    g->span_ns = now;
    g->span_bytes = 0;
  }
}

/* The growth of a round trip past slow start: binary search toward where
 * it lost, then probing past it. */
static uint64_t step(struct net_grant *g) {
  uint64_t s;
  if (g->budget < g->lost_at) {
    s = min64((g->lost_at - g->budget) / 2, g->budget / 8);
    g->probe = g->unit;
  } else {
    s = min64(g->probe, g->budget / 8);
    g->probe *= 2;
  }
  return max64(s, g->unit);
}

void net_grant_came(struct net_grant *g, uint64_t bytes, uint64_t now) {
  uint64_t before = g->inflight;
  g->inflight -= min64(bytes, g->inflight);
  g->came_ns = now;
  /* It grows only while it is used: half of it or more on its way. */
  if (before + g->unit >= g->budget / 2) {
    if (g->budget < g->thresh) {
      g->budget += bytes;
    } else if ((g->grown += bytes) >= g->budget) {
      g->grown = 0;
      g->budget += step(g);
    }
    g->budget = min64(g->budget, g->cap);
  }
  /* The delivery rate, sampled over a smoothed round trip or more (and
   * NET_GRANT_SPAN_NS) while
   * bytes stay on their way; a sample that runs dry says only what was
   * asked, and is dropped. */
  rotate(g, now);
  if (!g->span_ns) return;
  g->span_bytes += bytes;
  uint64_t len = now - g->span_ns;
  if (g->srtt_ns && len >= max64(g->srtt_ns, NET_GRANT_SPAN_NS) && g->span_bytes >= 2 * g->unit) {
    uint64_t r = (uint64_t)((unsigned __int128)g->span_bytes * 1000000000u / len);
    g->rate[0] = max64(g->rate[0], r);
    g->span_ns = now;
    g->span_bytes = 0;
  }
  if (!g->inflight) g->span_ns = 0;
}

void net_grant_forget(struct net_grant *g, uint64_t bytes) {
  g->inflight -= min64(bytes, g->inflight);
  if (!g->inflight) g->span_ns = 0;
}

/* A wait measured (at least 1 ns) into the current window of its
 * minimum `w`: the wait. */
static uint64_t sample(struct net_grant *g, uint64_t w[2], uint64_t ns, uint64_t now) {
  rotate(g, now);
  if (!ns) ns = 1;
  if (!w[0] || ns < w[0]) w[0] = ns;
  return ns;
}

/* Smoothed as a round trip is (RFC 6298's 1/8). */
static uint64_t smooth(uint64_t avg, uint64_t x) { return avg ? avg - avg / 8 + x / 8 : x; }

void net_grant_rtt(struct net_grant *g, uint64_t ns, uint64_t now) {
  g->srtt_ns = smooth(g->srtt_ns, sample(g, g->rtt_min_ns, ns, now));
}

uint64_t net_grant_delay_target(const struct net_grant *g) {
  uint64_t r = rate_max(g);
  return r ? (uint64_t)((unsigned __int128)net_grant_floor(g) * 1000000000u / r) : 0;
}

int net_grant_delay(struct net_grant *g, uint64_t ns, uint64_t now) {
  ns = sample(g, g->net_min_ns, ns, now);
  uint64_t q = ns - net_grant_net_min(g), target = net_grant_delay_target(g);
  g->qdelay_ns = q;
  /* Smoothed: a queue stands, where a frame that waited for a bridge's or a
   * kernel's turn on a core is one sample. */
  q = g->qsmooth_ns = smooth(g->qsmooth_ns, q);
  /* Once a round trip: what was asked before a cut comes through the queue
   * it found. */
  uint64_t last = max64(g->cut_ns, g->delay_cut_ns);
  if (!target || q <= target || (last && now - last < g->srtt_ns)) return 0;
  if (!g->lossy_ns || now - g->lossy_ns >= NET_GRANT_LOSSY_NS) return 0;
  uint64_t floor = net_grant_floor(g);
  if (g->budget <= floor) return 0;
  uint64_t cut = (uint64_t)((unsigned __int128)g->budget * (q - target) / q);
  g->lost_at = g->budget;
  g->budget = max64(g->budget - min64(cut, g->budget / 2), floor);
  g->thresh = g->budget;
  g->grown = 0;
  g->delay_cut_ns = now;
  g->delay_cuts++;
  return 1;
}

/* One cut per episode: frames asked before the last cut that were lost
 * were lost to the budget it cut (NewReno's recovery point, in time). A
 * cut on a queue's delay is no loss's: what was asked before it and lost
 * halves the budget it cut, not the one it left (one cut, the larger). */
static int halve(struct net_grant *g, uint64_t asked_ns, uint64_t now) {
  if (asked_ns <= g->cut_ns && g->cut_ns) return 0;
  /* Past the episode's check, a delay cut after asked_ns is the last cut
   * of all (a loss's or a silence's since would have ended there), and
   * lost_at is where it began. */
  uint64_t from = g->delay_cut_ns && asked_ns <= g->delay_cut_ns ? g->lost_at : g->budget;
  g->lost_at = from;
  g->budget = min64(g->budget, max64(from / 2, net_grant_floor(g)));
  g->thresh = g->budget;
  g->grown = 0;
  g->cut_ns = now;
  g->cuts++;
  return 1;
}

int net_grant_lost(struct net_grant *g, uint64_t asked_ns, uint64_t now) {
  g->lossy_ns = now;
  return halve(g, asked_ns, now);
}

/* A silence is not a queue's loss (a sender off its core is silent too). */
int net_grant_silence(struct net_grant *g, int again, uint64_t asked_ns, uint64_t now) {
  if (!again) return halve(g, asked_ns, now);
  uint64_t floor = net_grant_floor(g);
  g->lost_at = g->budget;
  g->thresh = max64(g->budget / 2, floor);
  g->budget = floor;
  g->grown = 0;
  g->cut_ns = now;
  g->resets++;
  return 2;
}
