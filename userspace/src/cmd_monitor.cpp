// SPDX-License-Identifier: GPL-2.0
// flowbulk monitor: the module's counters as rates, sample by sample.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>

#include "commands.h"
#include "error.h"
#include "module_commands.h"

namespace flowbulk {

namespace {

double rate(uint64_t now, uint64_t before, double seconds) {
  // Counters can go backwards after `stats reset`: show 0, not garbage.
  return now >= before ? static_cast<double>(now - before) / seconds : 0.0;
}

}  // namespace

const char* monitor_usage() {
  return "Usage: flowbulk monitor [ interval SECONDS ] [ count N ]\n"
         "Prints rates every interval (default 1 s) until interrupted (or N samples).\n";
}

void do_monitor(Invocation& invocation, Arguments& arguments) {
  double interval = 1.0;
  std::optional<uint64_t> count;
  bool interval_given = false;
  while (!arguments.empty()) {
    const std::string keyword = match_keyword(
        arguments.take("keyword"), {"interval", "count", "help"}, "monitor option", "monitor");
    if (keyword == "help") {
      emit_usage(invocation, monitor_usage());
      return;
    }
    if ((keyword == "interval" && interval_given) || (keyword == "count" && count)) {
      throw UsageError("\"" + keyword + "\" given twice");
    }
    interval_given = interval_given || keyword == "interval";
    const std::string value = arguments.take(keyword == "interval" ? "SECONDS" : "N");
    char* end = nullptr;
    errno = 0;
    if (keyword == "interval") {
      interval = std::strtod(value.c_str(), &end);
      if (!is_plain_number(value, false, true) || end == value.c_str() || *end != '\0' ||
          errno != 0 || !std::isfinite(interval) || interval < 0.1 || interval > 3600) {
        throw UsageError("invalid interval \"" + value + "\": seconds between 0.1 and 3600");
      }
    } else {
      const unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
      if (!is_plain_number(value, false, false) || end == value.c_str() || *end != '\0' ||
          errno != 0 || parsed == 0) {
        throw UsageError("invalid count \"" + value + "\": a positive integer");
      }
      count = parsed;
    }
  }
  if (!invocation.env.module_loaded()) {
    fail_module_not_loaded("cannot read statistics");
  }
  invocation.env.catch_interrupts();
  NfbClient module = open_module(invocation);
  auto read_total = [&module]() {
    try {
      return total_stats(module.get_stats());
    } catch (const Error& error) {
      fail_with_context(error, "cannot read statistics");
    }
  };
  CpuStats before = read_total();
  double before_time = invocation.env.monotonic_seconds();
  std::ostream& out = invocation.env.out;
  if (!invocation.options.json) {
    char header[160];
    std::snprintf(header, sizeof(header), "%-8s  %12s  %10s  %9s  %10s  %10s  %10s\n", "TIME",
                  "PACKETS/S", "BULKS/S", "MEAN BULK", "DECLINED/S", "FALLBACK/S", "DROPPED/S");
    out << header << std::flush;
  }
  for (uint64_t sample = 0; !count || sample < *count; ++sample) {
    if (!invocation.env.sleep(interval)) {
      break;  // interrupted: a normal way to end monitor
    }
    CpuStats now = read_total();
    // What elapsed between the two reads (a late wake-up, a slow dump), not
    // what was asked of sleep().
    const double now_time = invocation.env.monotonic_seconds();
    const double elapsed = now_time > before_time ? now_time - before_time : interval;
    before_time = now_time;
    const double packets = rate(now.packets, before.packets, elapsed);
    const double bulks = rate(now.bulks, before.bulks, elapsed);
    const double declined =
        rate(counters_total(now.decline), counters_total(before.decline), elapsed);
    const double fallback =
        rate(counters_total(now.fallback), counters_total(before.fallback), elapsed);
    const double dropped = rate(counters_total(now.drop), counters_total(before.drop), elapsed);
    const std::string time = invocation.env.clock_text();
    if (invocation.options.json) {
      Json entry{{"time", time},
                 {"interval", interval},
                 {"elapsed", elapsed},
                 {"packets_per_second", packets},
                 {"bulks_per_second", bulks},
                 {"mean_bulk", bulks > 0 ? Json(packets / bulks) : Json()},
                 {"declined_per_second", declined},
                 {"fallback_per_second", fallback},
                 {"dropped_per_second", dropped}};
      // One document per line (JSON Lines), so a reader can follow live.
      invocation.options.pretty = false;
      emit_json(invocation, Json{{"sample", entry}});
    } else {
      char line[160];
      std::snprintf(line, sizeof(line), "%-8s  %12.0f  %10.0f  %9s  %10.0f  %10.0f  %10.0f\n",
                    time.c_str(), packets, bulks, mean_bulk_text(packets, bulks).c_str(), declined,
                    fallback, dropped);
      out << line;
    }
    out << std::flush;
    before = now;
  }
}

}  // namespace flowbulk
