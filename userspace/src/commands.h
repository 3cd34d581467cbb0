// SPDX-License-Identifier: GPL-2.0
#pragma once

#include "cli_support.h"

namespace flowbulk {

// One function per OBJECT; each parses its own words and throws Error or
// UsageError on failure.
void do_table(Invocation& invocation, Arguments& arguments);
void do_flowtable(Invocation& invocation, Arguments& arguments);
void do_offload(Invocation& invocation, Arguments& arguments);
void do_attach(Invocation& invocation, Arguments& arguments);
void do_detach(Invocation& invocation, Arguments& arguments);
void do_stats(Invocation& invocation, Arguments& arguments);
void do_monitor(Invocation& invocation, Arguments& arguments);
void do_load_file(Invocation& invocation, const std::string& path);

// Usage text of each OBJECT (for `flowbulk OBJECT help`).
const char* table_usage();
const char* flowtable_usage();
const char* offload_usage();
const char* attach_usage();
const char* detach_usage();
const char* stats_usage();
const char* monitor_usage();

// Drops a flowtable's attachment after the flowtable was deleted, if the
// module is loaded (asking would otherwise autoload it); errors are ignored.
void detach_quietly(Invocation& invocation, const FlowtableRef& flowtable);

}  // namespace flowbulk
