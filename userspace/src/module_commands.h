// SPDX-License-Identifier: GPL-2.0
#pragma once

// What the module's commands (cmd_attach.cpp, cmd_detach.cpp, cmd_stats.cpp,
// cmd_monitor.cpp) share: they talk to the nf_flow_bulk generic netlink
// family through NfbClient.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli_support.h"
#include "nfb_client.h"
#include "output.h"

namespace flowbulk {

NfbClient open_module(Invocation& invocation);

// Read-only commands (attach list, stats, monitor) look before they ask:
// the kernel loads the module for a family lookup by name (genl's
// CTRL_CMD_GETFAMILY calls request_module for the family's alias), and
// reading must not load it.
[[noreturn]] void fail_module_not_loaded(const std::string& context);

// A failed attach or detach (`verb`): "cannot VERB flowtable REF", with
// what the errno means for an attachment when the kernel said no more (no
// extack).
[[noreturn]] void fail_attachment_change(const Error& error, const std::string& verb,
                                         const FlowtableRef& ref);

// An attachment's fields, for `attach list` and for -e on attach and
// detach. NOT ADJACENT: the devices where another hook sits between the
// module's and the flowtable's, so the module takes nothing there.
Record attachment_record(const Attachment& attachment);

// -e on attach and detach. The module echoes nothing and gives an
// attachment no handle (family, table and flowtable name it), so what
// changed is read from the module's own list: after an attach the
// attachment as it now is, before a detach the one that goes.
std::optional<Attachment> find_attachment(Invocation& invocation, const FlowtableRef& ref);

// The success of an attach or detach (`verb`): without -e as emit_done();
// with -e "attach flowtable inet fw ft # state attached, priority -1,
// devices eth0,eth1" (nft -e's "VERB KIND OBJECT # handle N"), in JSON
// {VERB: {"attachment": OBJECT}} as the attach list has it.
void emit_attachment_change(const Invocation& invocation, const std::string& verb,
                            const FlowtableRef& ref, const std::optional<Attachment>& attachment);

// The sum of a counter vector (the reasons of declines, fallbacks, drops).
uint64_t counters_total(const std::vector<uint64_t>& counters);

// Packets per bulk, two decimals; "-" without bulks.
std::string mean_bulk_text(double packets, double bulks);
std::string mean_bulk_text(uint64_t packets, uint64_t bulks);

}  // namespace flowbulk
