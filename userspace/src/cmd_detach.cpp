// SPDX-License-Identifier: GPL-2.0
// flowbulk detach: give a flowtable's traffic back to the stock path.
#include <optional>

#include "commands.h"
#include "error.h"
#include "module_commands.h"
#include "names.h"

namespace flowbulk {

const char* detach_usage() {
  return "Usage: flowbulk detach FAMILY TABLE FLOWTABLE\n"
         "FAMILY := { ip | ip6 | inet }\n";
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

void do_detach(Invocation& invocation, Arguments& arguments) {
  if (!arguments.empty() && !family_from_name(arguments.peek()) &&
      abbreviates(arguments.peek(), "help")) {
    emit_usage(invocation, detach_usage());
    return;
  }
  const FlowtableRef ref = parse_flowtable_ref(arguments);
  arguments.expect_end();
  // -e: the attachment as it was; none when it is not there (the detach
  // then fails with ENOENT as without -e).
  std::optional<Attachment> detached;
  if (invocation.options.echo && invocation.env.module_loaded()) {
    detached = find_attachment(invocation, ref);
  }
  try {
    open_module(invocation).detach(ref);
  } catch (const Error& error) {
    fail_attachment_change(error, "detach", ref);
  }
  emit_attachment_change(invocation, "detach", ref, detached);
}

}  // namespace flowbulk
