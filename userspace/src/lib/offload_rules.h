// SPDX-License-Identifier: GPL-2.0
#pragma once

// Offload rules as nft lists them: any rule with a `flow add @FLOWTABLE`
// (`flow offload` is the same statement) is one, whatever else it holds;
// what it matches before that statement is classified here, from nft's
// JSON listing. No kernel, no libraries: tested as functions
// (offload_rules_test.cpp).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace flowbulk {

// The comment flowbulk gives every rule it writes (`comment "flowbulk"` in
// `nft list ruleset`): offload delete removes only rules that carry it.
inline constexpr const char* kOffloadMarker = "flowbulk";

// What an offload rule matches before its `flow add`, as far as flowbulk
// reads it (counters and logging aside).
enum class OffloadMatch {
  kProtocols,  // protocols only: `meta l4proto P`, `ip protocol { P, ... }`, ...
  kAll,        // nothing: every packet that reaches the rule
  kOther,      // anything else: addresses, devices, ports, a named set, a range, `!=`
};

// The IP version a rule's match is limited to: `ip protocol`, `ip6
// nexthdr`, `meta nfproto`, `meta protocol`. kAny also when the limit is
// the table's own family (`ip protocol` in an ip table).
enum class IpVersion { kAny, kIpv4, kIpv6 };

struct OffloadRule {
  uint8_t family = 0;
  std::string table;
  std::string chain;
  uint64_t handle = 0;
  std::string flowtable;
  OffloadMatch match = OffloadMatch::kProtocols;
  std::vector<uint8_t> protocols;  // kProtocols: sorted, IPPROTO_TCP, IPPROTO_UDP, ...
  IpVersion ip_version = IpVersion::kAny;
  bool counter = false;  // a counter anywhere in the rule
  std::string comment;

  // Whether flowbulk wrote it (it carries kOffloadMarker).
  bool marked() const { return comment == kOffloadMarker; }
  // Whether every packet of `protocol` and IP version `version` (kIpv4 or
  // kIpv6) that reaches the rule is offloaded.
  bool offloads(uint8_t protocol, IpVersion version) const;
  // Only `protocol`, for every IP version.
  bool is_only(uint8_t protocol) const {
    return match == OffloadMatch::kProtocols && ip_version == IpVersion::kAny &&
           protocols == std::vector<uint8_t>{protocol};
  }
};

// One chain as nft's JSON listing (`nft -j -a list chain`) shows it.
struct ChainRules {
  std::vector<uint64_t> handles;   // every rule, in chain order
  std::vector<OffloadRule> rules;  // the offload rules, in chain order
};

// "tcp", "udp", else the number.
std::string protocol_name(uint8_t protocol);
// In nft's words (meta nfproto): "ipv4", "ipv6", or "any".
std::string ip_version_text(IpVersion version);
// The rule as nft writes it, as far as flowbulk reads it ("..." for what
// it does not spell out), with its handle.
std::string offload_rule_text(const OffloadRule& rule);
// The same without the handle: the rule's statements only.
std::string offload_rule_statement(const OffloadRule& rule);

// Reads the rules of a listing ({"nftables": [..., {"rule": {...}}, ...]})
// with layer 4 protocols printed as numbers (`nft -p`; names are read too).
ChainRules parse_chain_rules(const nlohmann::ordered_json& listing);

}  // namespace flowbulk
