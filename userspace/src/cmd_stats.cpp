// SPDX-License-Identifier: GPL-2.0
// flowbulk stats: the module's per-CPU counters and bulk-size histograms.
#include <nf_flow_bulk.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <span>
#include <tuple>

#include "commands.h"
#include "error.h"
#include "module_commands.h"
#include "names.h"

namespace flowbulk {

namespace {

// How many histogram buckets to show: every one the module has
// (NFB_HIST_BUCKETS, or more from a newer module), never more than a bucket
// index can shift (kMaxHistogramBuckets).
size_t histogram_buckets(const std::vector<uint64_t>& histogram) {
  return std::min(std::max<size_t>(histogram.size(), NFB_HIST_BUCKETS), kMaxHistogramBuckets);
}

// Bucket `bucket` of `count`: 2^bucket to 2^(bucket+1)-1, the last one
// open-ended. bucket < count <= kMaxHistogramBuckets: no shift by 64 or more.
uint64_t bucket_min(size_t bucket) {
  return uint64_t{1} << std::min(bucket, kMaxHistogramBuckets - 1);
}

std::optional<uint64_t> bucket_max(size_t bucket, size_t count) {
  if (bucket + 1 >= count || bucket + 1 >= kMaxHistogramBuckets) {
    return std::nullopt;
  }
  return (uint64_t{1} << (bucket + 1)) - 1;
}

std::string histogram_bucket_label(size_t bucket, size_t count) {
  const uint64_t low = bucket_min(bucket);
  const std::optional<uint64_t> high = bucket_max(bucket, count);
  if (!high) {
    return std::to_string(low) + "+";
  }
  return low == *high ? std::to_string(low) : std::to_string(low) + "-" + std::to_string(*high);
}

// Every known name, even at zero, so consumers see a stable shape; plus
// whatever newer ids the kernel sent. `key` names the kind ("reason",
// "encap", "xmit").
Json counters_json(const std::vector<uint64_t>& counters, std::span<const std::string_view> names,
                   const char* key) {
  Json list = Json::array();
  const size_t count = std::max(counters.size(), names.size());
  for (size_t i = 0; i < count; ++i) {
    list.push_back(Json{{key, reason_name(names, i)},
                        {"id", i},
                        {"packets", i < counters.size() ? counters[i] : 0}});
  }
  return list;
}

Json histogram_json(const std::vector<uint64_t>& histogram) {
  Json list = Json::array();
  const size_t count = histogram_buckets(histogram);
  for (size_t bucket = 0; bucket < count; ++bucket) {
    const std::optional<uint64_t> max = bucket_max(bucket, count);
    list.push_back(Json{{"bucket", histogram_bucket_label(bucket, count)},
                        {"min", bucket_min(bucket)},
                        {"max", max ? Json(*max) : Json()},
                        {"bulks", bucket < histogram.size() ? histogram[bucket] : 0}});
  }
  return list;
}

// "miss 50, ttl 6": only the reasons that happened.
std::string nonzero_reasons_text(const std::vector<uint64_t>& counters,
                                 std::span<const std::string_view> names) {
  std::string text;
  for (size_t i = 0; i < counters.size(); ++i) {
    if (counters[i] != 0) {
      text +=
          (text.empty() ? "" : ", ") + reason_name(names, i) + " " + std::to_string(counters[i]);
    }
  }
  return text;
}

// The counters of one CPU or of all: in text a summary's rows (the total,
// with the reasons that happened as detail) or a row of the per-CPU table.
void stats_fields(Record& record, const CpuStats& stats) {
  // "encap: none 30, vlan 30; xmit: neigh 60": how the taken packets came
  // in and went out.
  std::string taken;
  for (const auto& [label, counters, names] :
       {std::tuple{"encap: ", &stats.taken_encap, encap_names()},
        std::tuple{"xmit: ", &stats.taken_xmit, xmit_type_names()}}) {
    const std::string text = nonzero_reasons_text(*counters, names);
    if (!text.empty()) {
      taken += (taken.empty() ? "" : "; ") + std::string(label) + text;
    }
  }
  record.any("packets", stats.packets)
      .detail("packets", taken)
      .any("bulks", stats.bulks)
      .detail("bulks", "mean " + mean_bulk_text(stats.packets, stats.bulks) + " packets per bulk")
      .text("mean", mean_bulk_text(stats.packets, stats.bulks))
      .any("declined", counters_total(stats.decline))
      .detail("declined", nonzero_reasons_text(stats.decline, decline_reason_names()))
      .any("fallback", counters_total(stats.fallback))
      .detail("fallback", nonzero_reasons_text(stats.fallback, fallback_reason_names()))
      .any("dropped", counters_total(stats.drop))
      .detail("dropped", nonzero_reasons_text(stats.drop, drop_reason_names()))
      .json("histogram", histogram_json(stats.histogram))
      .json("decline", counters_json(stats.decline, decline_reason_names(), "reason"))
      .json("fallbacks", counters_json(stats.fallback, fallback_reason_names(), "reason"))
      .json("drops", counters_json(stats.drop, drop_reason_names(), "reason"))
      .json("taken_encap", counters_json(stats.taken_encap, encap_names(), "encap"))
      .json("taken_xmit", counters_json(stats.taken_xmit, xmit_type_names(), "xmit"));
}

// The histogram of every CPU side by side: text only (-s -s); JSON has
// each CPU's own histogram in its record.
void print_histogram_text(std::ostream& out, const CpuStats& total,
                          const std::vector<CpuStats>& per_cpu) {
  std::vector<TextTable::Column> columns = {{"BULK SIZE"}, {"TOTAL", TextTable::Align::kRight}};
  for (const CpuStats& cpu : per_cpu) {
    columns.push_back({"CPU" + std::to_string(cpu.cpu), TextTable::Align::kRight});
  }
  TextTable histogram(columns);
  const size_t buckets = histogram_buckets(total.histogram);
  for (size_t bucket = 0; bucket < buckets; ++bucket) {
    auto at = [bucket](const CpuStats& stats) {
      return std::to_string(bucket < stats.histogram.size() ? stats.histogram[bucket] : 0);
    };
    std::vector<std::string> row = {histogram_bucket_label(bucket, buckets), at(total)};
    for (const CpuStats& cpu : per_cpu) {
      row.push_back(at(cpu));
    }
    histogram.add_row(row);
  }
  histogram.print(out);
}

void print_stats(const Invocation& invocation, const std::vector<CpuStats>& per_cpu) {
  const CpuStats total_counters = total_stats(per_cpu);
  Record total;
  stats_fields(total, total_counters);
  RecordList cpus({{"cpu", "CPU"},
                   {"packets", "PACKETS", TextTable::Align::kRight},
                   {"bulks", "BULKS", TextTable::Align::kRight},
                   {"mean", "MEAN", TextTable::Align::kRight},
                   {"declined", "DECLINED", TextTable::Align::kRight},
                   {"fallback", "FALLBACK", TextTable::Align::kRight},
                   {"dropped", "DROPPED", TextTable::Align::kRight}});
  for (const CpuStats& cpu : per_cpu) {
    stats_fields(cpus.add().any("cpu", cpu.cpu), cpu);
  }
  if (invocation.options.json) {
    emit_json(invocation, Json{{"stats", Json{{"total", total.object()}, {"cpus", cpus.json()}}}});
    return;
  }
  std::ostream& out = invocation.env.out;
  total.print_vertical(out, {{"COUNTER"}, {"VALUE", TextTable::Align::kRight}, {"DETAIL"}});
  if (invocation.options.detail >= 1) {
    out << '\n';
    cpus.print_text(out);
  }
  if (invocation.options.detail >= 2) {
    out << '\n';
    print_histogram_text(out, total_counters, per_cpu);
  }
}

}  // namespace

const char* stats_usage() {
  return "Usage: flowbulk [-s [-s]] stats [ show ]\n"
         "       flowbulk stats reset\n"
         "-s adds the per-CPU table, -s -s the bulk-size histograms.\n";
}

void do_stats(Invocation& invocation, Arguments& arguments) {
  std::string command = "show";
  if (!arguments.empty()) {
    command = match_keyword(arguments.take("COMMAND"), {"show", "reset", "help"}, "stats command",
                            "stats");
  }
  arguments.expect_end();
  if (command == "help") {
    emit_usage(invocation, stats_usage());
    return;
  }
  if (command == "reset") {
    try {
      open_module(invocation).reset_stats();
    } catch (const Error& error) {
      fail_with_context(error, "cannot reset statistics");
    }
    emit_done(invocation);
    return;
  }
  std::vector<CpuStats> per_cpu;
  if (!invocation.env.module_loaded()) {
    fail_module_not_loaded("cannot read statistics");
  }
  try {
    per_cpu = open_module(invocation).get_stats();
  } catch (const Error& error) {
    fail_with_context(error, "cannot read statistics");
  }
  print_stats(invocation, per_cpu);
}

}  // namespace flowbulk
