// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace flowbulk {

// nft's family keywords for the families that have flowtables.
// Returns the NFPROTO_* value, or nullopt for anything else.
std::optional<uint8_t> family_from_name(std::string_view name);
// "ip", "ip6", "inet", or the number for anything else (a newer kernel).
std::string family_name(uint32_t nfproto);
// The keywords family_from_name accepts, for messages.
std::string_view family_names_text();

// Names of the uapi's sets (module/uapi/nf_flow_bulk_names.h), in enum order:
// attachment states (enum nfb_attach_state), reasons of the module's
// statistics (enum nfb_*_reason).
std::span<const std::string_view> attach_state_names();
std::span<const std::string_view> decline_reason_names();
std::span<const std::string_view> fallback_reason_names();
std::span<const std::string_view> drop_reason_names();
// Names of the taken-packet breakdowns (enum nfb_encap, enum nfb_xmit).
std::span<const std::string_view> encap_names();
std::span<const std::string_view> xmit_type_names();
// The name of reason `index` in `names`, or the number when the kernel is
// newer than this tool (the enums are append-only).
std::string reason_name(std::span<const std::string_view> names, size_t index);

// One identifier of nft's scanner, the only names its syntax writes
// unquoted: a letter, '_' or '.', then letters, digits, '/', '-', '_', '.'.
bool nft_identifier(std::string_view name);
// Whether nft reads NAME back where its listing prints a table, chain or
// flowtable name (`table inet NAME {`, `chain NAME {`, `flowtable NAME {`),
// unquoted: an nft_identifier() that is not one of nft's keywords there. The kernel takes more
// (blanks, a leading digit, keywords), and such a table exists fine, but `nft list ruleset | nft -f
// -` cannot load it back: flowbulk creates no such name.
bool nft_readable_name(std::string_view name);
// The words nft_readable_name() refuses although they fit the pattern,
// sorted (for the unit test).
std::span<const std::string_view> nft_unreadable_keywords();

// Netfilter hook numbers of the netdev family, as nft names them.
std::string netdev_hook_name(uint32_t hooknum);

}  // namespace flowbulk
