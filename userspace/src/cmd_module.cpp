// SPDX-License-Identifier: GPL-2.0
// attach, detach, stats, monitor: the module's generic netlink family.
#include <linux/netlink.h>
#include <nf_flow_bulk.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>

#include "commands.h"
#include "error.h"
#include "names.h"
#include "nfb_client.h"
#include "output.h"

namespace flowbulk {

namespace {

NfbClient open_module(Invocation& invocation) {
  return NfbClient(invocation.env.transports.open(NETLINK_GENERIC));
}

// Read-only commands (attach list, stats, monitor) look before they ask:
// the kernel loads the module for a family lookup by name (genl's
// CTRL_CMD_GETFAMILY calls request_module for the family's alias), and
// reading must not load it.
[[noreturn]] void fail_module_not_loaded(const std::string& context) {
  throw Error(context +
                  ": the nf_flow_bulk module is not loaded (the first attach loads it, or "
                  "modprobe nf_flow_bulk)",
              ENOENT);
}

std::string hint_for_attach_error(int sys_errno) {
  switch (sys_errno) {
    case ENOENT:
      return "no such flowtable (or it has no devices)";
    case EEXIST:
      return "already attached";
    case EPERM:
      return "needs CAP_NET_ADMIN";
    default:
      return {};
  }
}

std::string hint_for_detach_error(int sys_errno) {
  switch (sys_errno) {
    case ENOENT:
      return "not attached";
    case EPERM:
      return "needs CAP_NET_ADMIN";
    default:
      return {};
  }
}

// The name of an attachment state; a newer module's as its number.
std::string attach_state_name(uint8_t state) {
  return reason_name(attach_state_names(), state);
}

Json attach_state_json(const std::optional<uint8_t>& state) {
  if (!state) {
    return Json();
  }
  if (*state < __NFB_ATTACH_STATE_MAX) {
    return Json(attach_state_name(*state));
  }
  return Json(*state);
}

// An attachment's fields, for `attach list` and for -e on attach and
// detach. NOT ADJACENT: the devices where another hook sits between the
// module's and the flowtable's, so the module takes nothing there.
Record attachment_record(const Attachment& attachment) {
  auto optional_json = [](const auto& value) { return value ? Json(*value) : Json(); };
  Json devices = Json::array();
  std::vector<std::string> names;
  std::vector<std::string> not_adjacent;
  for (const AttachedDevice& device : attachment.devices) {
    devices.push_back(Json{{"ifindex", device.ifindex},
                           {"ifname", device.ifname},
                           {"adjacent", optional_json(device.adjacent)},
                           {"checks", optional_json(device.checks)}});
    names.push_back(device.ifname);
    if (device.adjacent.has_value() && !*device.adjacent) {
      not_adjacent.push_back(device.ifname);
    }
  }
  Record record;
  record.any("family", family_name(attachment.flowtable.family))
      .any("table", attachment.flowtable.table)
      .any("flowtable", attachment.flowtable.flowtable)
      .any("priority", optional_json(attachment.flowtable_priority))
      .any("scans", optional_json(attachment.scans))
      .any("state", attach_state_json(attachment.state),
           attachment.state ? attach_state_name(*attachment.state) : "-")
      .any("devices", devices, text_of(Json(names)))
      .text("not_adjacent", text_of(Json(not_adjacent)));
  return record;
}

std::vector<Column> attachment_columns() {
  return {{"family", "FAMILY"},
          {"table", "TABLE"},
          {"flowtable", "FLOWTABLE"},
          {"state", "STATE"},
          {"priority", "PRIORITY", TextTable::Align::kRight},
          {"scans", "SCANS", TextTable::Align::kRight},
          {"devices", "DEVICES"},
          {"not_adjacent", "NOT ADJACENT"}};
}

// -e on attach and detach. The module echoes nothing and gives an
// attachment no handle (family, table and flowtable name it), so what
// changed is read from the module's own list: after an attach the
// attachment as it now is, before a detach the one that goes.
std::optional<Attachment> find_attachment(Invocation& invocation, const FlowtableRef& ref) {
  try {
    for (Attachment& attachment : open_module(invocation).list_attachments()) {
      if (attachment.flowtable.family == ref.family && attachment.flowtable.table == ref.table &&
          attachment.flowtable.flowtable == ref.flowtable) {
        return std::move(attachment);
      }
    }
  } catch (const Error& error) {
    fail_with_context(error, "cannot list attachments");
  }
  return std::nullopt;
}

// "attach flowtable inet fw ft # state attached, priority -1, devices
// eth0,eth1" (nft -e's "VERB KIND OBJECT # handle N"); JSON
// {VERB: {"attachment": OBJECT}} as the attach list has it.
void emit_attach_echo(const Invocation& invocation, const std::string& verb,
                      const FlowtableRef& ref, const std::optional<Attachment>& attachment) {
  Attachment shown;
  shown.flowtable = ref;
  if (attachment) {
    shown = *attachment;
  }
  const Record record = attachment_record(shown);
  if (invocation.options.json) {
    emit_json(invocation,
              Json{{"ok", true},
                   {"echo", Json::array({Json{{verb, Json{{"attachment", record.object()}}}}})}});
    return;
  }
  invocation.env.out << verb << " flowtable " << ref.to_string() << " # state "
                     << record.cell("state") << ", priority " << record.cell("priority")
                     << ", devices " << record.cell("devices") << "\n";
}

// ---- stats formatting -----------------------------------------------------

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

uint64_t sum(const std::vector<uint64_t>& counters) {
  uint64_t total = 0;
  for (uint64_t value : counters) {
    total += value;
  }
  return total;
}

std::string mean_bulk_text(double packets, double bulks) {
  if (bulks <= 0) {
    return "-";
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", packets / bulks);
  return text;
}

std::string mean_bulk_text(uint64_t packets, uint64_t bulks) {
  return mean_bulk_text(static_cast<double>(packets), static_cast<double>(bulks));
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
      .any("declined", sum(stats.decline))
      .detail("declined", nonzero_reasons_text(stats.decline, decline_reason_names()))
      .any("fallback", sum(stats.fallback))
      .detail("fallback", nonzero_reasons_text(stats.fallback, fallback_reason_names()))
      .any("dropped", sum(stats.drop))
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

// ---- monitor --------------------------------------------------------------

double rate(uint64_t now, uint64_t before, double seconds) {
  // Counters can go backwards after `stats reset`: show 0, not garbage.
  return now >= before ? static_cast<double>(now - before) / seconds : 0.0;
}

}  // namespace

const char* attach_usage() {
  return "Usage: flowbulk attach FAMILY TABLE FLOWTABLE\n"
         "       flowbulk attach { list | show }\n"
         "FAMILY := { ip | ip6 | inet }\n"
         "Hands the flowtable's traffic to the nf_flow_bulk module (loaded on demand).\n";
}

const char* detach_usage() {
  return "Usage: flowbulk detach FAMILY TABLE FLOWTABLE\n"
         "FAMILY := { ip | ip6 | inet }\n";
}

const char* stats_usage() {
  return "Usage: flowbulk [-s [-s]] stats [ show ]\n"
         "       flowbulk stats reset\n"
         "-s adds the per-CPU table, -s -s the bulk-size histograms.\n";
}

const char* monitor_usage() {
  return "Usage: flowbulk monitor [ interval SECONDS ] [ count N ]\n"
         "Prints rates every interval (default 1 s) until interrupted (or N samples).\n";
}

void detach_quietly(Invocation& invocation, const FlowtableRef& flowtable) {
  if (!invocation.env.module_loaded()) {
    return;  // asking would autoload the module just to detach nothing
  }
  try {
    open_module(invocation).detach(flowtable);
  } catch (const Error&) {
    // Not attached, or the module went away: nothing to undo.
  }
}

void do_attach(Invocation& invocation, Arguments& arguments) {
  const std::string first = arguments.take("FAMILY or \"list\"");
  if (!family_from_name(first) && (abbreviates(first, "list") || abbreviates(first, "show"))) {
    arguments.expect_end();
    std::vector<Attachment> attachments;
    const bool loaded = invocation.env.module_loaded();
    if (loaded) {
      try {
        attachments = open_module(invocation).list_attachments();
      } catch (const Error& error) {
        fail_with_context(error, "cannot list attachments");
      }
    }
    if (!loaded && !invocation.options.json) {
      invocation.env.out << "module not loaded: no attachments\n";
      return;
    }
    RecordList list(attachment_columns());
    for (const Attachment& attachment : attachments) {
      list.add() = attachment_record(attachment);
    }
    print_list(invocation, "attachments", list, Json{{"module_loaded", loaded}});
    return;
  }
  if (!family_from_name(first) && abbreviates(first, "help")) {
    emit_usage(invocation, attach_usage());
    return;
  }
  FlowtableRef ref;
  ref.family = parse_family(first);
  ref.table = arguments.take("TABLE");
  validate_name(ref.table, "table");
  ref.flowtable = arguments.take("FLOWTABLE");
  validate_name(ref.flowtable, "flowtable");
  arguments.expect_end();
  try {
    open_module(invocation).attach(ref);
  } catch (const KernelError& error) {
    fail_with_context(error, "cannot attach flowtable " + ref.to_string(),
                      error.extack().empty() ? hint_for_attach_error(error.sys_errno()) : "");
  } catch (const Error& error) {
    fail_with_context(error, "cannot attach flowtable " + ref.to_string());
  }
  if (invocation.options.echo) {
    emit_attach_echo(invocation, "attach", ref, find_attachment(invocation, ref));
    return;
  }
  emit_done(invocation);
}

void do_detach(Invocation& invocation, Arguments& arguments) {
  if (!arguments.empty() && !family_from_name(arguments.peek()) &&
      abbreviates(arguments.peek(), "help")) {
    emit_usage(invocation, detach_usage());
    return;
  }
  FlowtableRef ref = parse_flowtable_ref(arguments);
  arguments.expect_end();
  // -e: the attachment as it was; none when it is not there (the detach
  // then fails with ENOENT as without -e).
  std::optional<Attachment> detached;
  if (invocation.options.echo && invocation.env.module_loaded()) {
    detached = find_attachment(invocation, ref);
  }
  try {
    open_module(invocation).detach(ref);
  } catch (const KernelError& error) {
    fail_with_context(error, "cannot detach flowtable " + ref.to_string(),
                      error.extack().empty() ? hint_for_detach_error(error.sys_errno()) : "");
  } catch (const Error& error) {
    fail_with_context(error, "cannot detach flowtable " + ref.to_string());
  }
  if (invocation.options.echo) {
    emit_attach_echo(invocation, "detach", ref, detached);
    return;
  }
  emit_done(invocation);
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
    const double declined = rate(sum(now.decline), sum(before.decline), elapsed);
    const double fallback = rate(sum(now.fallback), sum(before.fallback), elapsed);
    const double dropped = rate(sum(now.drop), sum(before.drop), elapsed);
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
