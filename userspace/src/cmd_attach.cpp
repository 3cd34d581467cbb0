// SPDX-License-Identifier: GPL-2.0
// flowbulk attach: hand a flowtable's traffic to the module, and list what
// is attached.
#include <optional>
#include <ostream>

#include "commands.h"
#include "error.h"
#include "module_commands.h"
#include "names.h"

namespace flowbulk {

namespace {

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

void attach_list(Invocation& invocation, Arguments& arguments) {
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
}

}  // namespace

const char* attach_usage() {
  return "Usage: flowbulk attach FAMILY TABLE FLOWTABLE\n"
         "       flowbulk attach { list | show }\n"
         "FAMILY := { ip | ip6 | inet }\n"
         "Hands the flowtable's traffic to the nf_flow_bulk module (loaded on demand).\n";
}

void do_attach(Invocation& invocation, Arguments& arguments) {
  const std::string first = arguments.take("FAMILY or \"list\"");
  if (!family_from_name(first) && (abbreviates(first, "list") || abbreviates(first, "show"))) {
    attach_list(invocation, arguments);
    return;
  }
  if (!family_from_name(first) && abbreviates(first, "help")) {
    emit_usage(invocation, attach_usage());
    return;
  }
  const FlowtableRef ref = parse_flowtable_ref(first, arguments);
  arguments.expect_end();
  try {
    open_module(invocation).attach(ref);
  } catch (const Error& error) {
    fail_attachment_change(error, "attach", ref);
  }
  emit_attachment_change(invocation, "attach", ref,
                         invocation.options.echo ? find_attachment(invocation, ref) : std::nullopt);
}

}  // namespace flowbulk
