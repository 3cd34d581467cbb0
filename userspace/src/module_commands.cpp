// SPDX-License-Identifier: GPL-2.0
#include "module_commands.h"

#include <linux/netlink.h>
#include <nf_flow_bulk.h>

#include <cerrno>
#include <cstdio>
#include <ostream>

#include "error.h"
#include "names.h"

namespace flowbulk {

namespace {

std::string attachment_hint(const std::string& verb, int sys_errno) {
  const bool attaching = verb == "attach";
  switch (sys_errno) {
    case ENOENT:
      return attaching ? "no such flowtable (or it has no devices)" : "not attached";
    case EEXIST:
      return attaching ? "already attached" : "";
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

}  // namespace

NfbClient open_module(Invocation& invocation) {
  return NfbClient(invocation.env.transports.open(NETLINK_GENERIC));
}

void fail_module_not_loaded(const std::string& context) {
  throw Error(context +
                  ": the nf_flow_bulk module is not loaded (the first attach loads it, or "
                  "modprobe nf_flow_bulk)",
              ENOENT);
}

void fail_attachment_change(const Error& error, const std::string& verb, const FlowtableRef& ref) {
  const bool from_kernel = dynamic_cast<const KernelError*>(&error) != nullptr;
  fail_with_context(
      error, "cannot " + verb + " flowtable " + ref.to_string(),
      from_kernel && error.extack().empty() ? attachment_hint(verb, error.sys_errno()) : "");
}

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

void emit_attachment_change(const Invocation& invocation, const std::string& verb,
                            const FlowtableRef& ref, const std::optional<Attachment>& attachment) {
  if (!invocation.options.echo) {
    emit_done(invocation);
    return;
  }
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

uint64_t counters_total(const std::vector<uint64_t>& counters) {
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

}  // namespace flowbulk
