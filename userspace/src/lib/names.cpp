// SPDX-License-Identifier: GPL-2.0
#include "names.h"

#include <linux/netfilter.h>
#include <nf_flow_bulk.h>

#include <algorithm>
#include <array>

#include "flowtable_ref.h"

namespace flowbulk {

std::optional<uint8_t> family_from_name(std::string_view name) {
  if (name == "ip") {
    return NFPROTO_IPV4;
  }
  if (name == "ip6") {
    return NFPROTO_IPV6;
  }
  if (name == "inet") {
    return NFPROTO_INET;
  }
  return std::nullopt;
}

std::string family_name(uint32_t nfproto) {
  switch (nfproto) {
    case NFPROTO_IPV4:
      return "ip";
    case NFPROTO_IPV6:
      return "ip6";
    case NFPROTO_INET:
      return "inet";
    case NFPROTO_ARP:
      return "arp";
    case NFPROTO_BRIDGE:
      return "bridge";
    case NFPROTO_NETDEV:
      return "netdev";
    default:
      return std::to_string(nfproto);
  }
}

std::string_view family_names_text() {
  return "ip, ip6, inet";
}

namespace {

// The names of the uapi's sets, from the one list of their members
// (nf_flow_bulk_names.h), in enum order.
constexpr std::array<std::string_view, __NFB_ATTACH_STATE_MAX> kAttachStates = {
#define NFB_ATTACH_STATE(e, name, value) name,
#include <nf_flow_bulk_names.h>
#undef NFB_ATTACH_STATE
};
constexpr std::array<std::string_view, __NFB_DECLINE_MAX> kDeclineReasons = {
#define NFB_DECLINE_REASON(e, name, value) name,
#include <nf_flow_bulk_names.h>
#undef NFB_DECLINE_REASON
};
constexpr std::array<std::string_view, __NFB_FALLBACK_MAX> kFallbackReasons = {
#define NFB_FALLBACK_REASON(e, name, value) name,
#include <nf_flow_bulk_names.h>
#undef NFB_FALLBACK_REASON
};
constexpr std::array<std::string_view, __NFB_DROP_MAX> kDropReasons = {
#define NFB_DROP_REASON(e, name, value) name,
#include <nf_flow_bulk_names.h>
#undef NFB_DROP_REASON
};
constexpr std::array<std::string_view, __NFB_ENCAP_MAX> kEncaps = {
#define NFB_ENCAP_TYPE(e, name, value) name,
#include <nf_flow_bulk_names.h>
#undef NFB_ENCAP_TYPE
};
constexpr std::array<std::string_view, __NFB_XMIT_MAX> kXmitTypes = {
#define NFB_XMIT_TYPE(e, name, value) name,
#include <nf_flow_bulk_names.h>
#undef NFB_XMIT_TYPE
};

// Each member's number is ABI; the module's build pins every one (main.c) and
// tools/check-names compares them with the netlink spec, both in make check.

// Words of nft 1.0.6 (bookworm) that are a syntax error as a table, chain
// or flowtable name in its own listing, although they fit its identifier
// pattern: its keywords there. tools/nft-unreadable-names finds them by
// feeding each token name of libnftables' parser to `nft -c -f` in those
// three places; a newer nft may add keywords (its listing then needs them
// quoted, which nft 1.0.6 cannot do for these names).
constexpr std::array<std::string_view, 142> kNftKeywords = {
    ".",         "accept",     "add",     "ah",       "all",         "arp",      "auto-merge",
    "bridge",    "cgroup",     "chain",   "comment",  "comp",        "constant", "continue",
    "counter",   "cpu",        "create",  "ct",       "day",         "dccp",     "define",
    "delete",    "describe",   "device",  "devices",  "dnat",        "drop",     "dst",
    "dup",       "dynamic",    "ecn",     "element",  "elements",    "esp",      "ether",
    "exists",    "expires",    "export",  "exthdr",   "fib",         "flags",    "flow",
    "flowtable", "flush",      "frag",    "fwd",      "gc-interval", "get",      "goto",
    "handle",    "hbh",        "hook",    "hour",     "ibriport",    "ibrname",  "icmp",
    "icmpv6",    "igmp",       "iif",     "iifgroup", "iifname",     "iiftype",  "import",
    "include",   "index",      "inet",    "insert",   "interval",    "ip",       "ip6",
    "ipsec",     "jhash",      "jump",    "limit",    "list",        "log",      "map",
    "mark",      "masquerade", "meta",    "meter",    "mh",          "missing",  "monitor",
    "netdev",    "nftrace",    "notrack", "numgen",   "obriport",    "obrname",  "offload",
    "oif",       "oifgroup",   "oifname", "oiftype",  "osf",         "pkttype",  "policy",
    "position",  "priority",   "queue",   "quota",    "random",      "redefine", "redirect",
    "reject",    "rename",     "replace", "reset",    "return",      "rt",       "rt0",
    "rt2",       "rtclassid",  "rule",    "ruleset",  "sctp",        "secmark",  "set",
    "size",      "skgid",      "skuid",   "snat",     "socket",      "srh",      "symhash",
    "synproxy",  "table",      "tcp",     "th",       "time",        "timeout",  "tproxy",
    "type",      "typeof",     "udp",     "udplite",  "undefine",    "update",   "vlan",
    "vmap",      "xt",
};
static_assert(std::ranges::is_sorted(kNftKeywords), "binary searched");

}  // namespace

bool nft_identifier(std::string_view name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !(letter(name.front()) || name.front() == '_' || name.front() == '.')) {
    return false;
  }
  return std::all_of(name.begin() + 1, name.end(), [&](char c) {
    return letter(c) || digit(c) || c == '/' || c == '-' || c == '_' || c == '.';
  });
}

bool nft_readable_name(std::string_view name) {
  return nft_identifier(name) && !std::ranges::binary_search(kNftKeywords, name);
}

std::span<const std::string_view> nft_unreadable_keywords() {
  return kNftKeywords;
}

std::span<const std::string_view> attach_state_names() {
  return kAttachStates;
}
std::span<const std::string_view> decline_reason_names() {
  return kDeclineReasons;
}
std::span<const std::string_view> fallback_reason_names() {
  return kFallbackReasons;
}
std::span<const std::string_view> drop_reason_names() {
  return kDropReasons;
}
std::span<const std::string_view> encap_names() {
  return kEncaps;
}
std::span<const std::string_view> xmit_type_names() {
  return kXmitTypes;
}

std::string reason_name(std::span<const std::string_view> names, size_t index) {
  // Past the table: a member of a newer module than the uapi header this
  // tool was built with.
  if (index < names.size() && !names[index].empty()) {
    return std::string(names[index]);
  }
  return std::to_string(index);
}

std::string netdev_hook_name(uint32_t hooknum) {
  switch (hooknum) {
    case NF_NETDEV_INGRESS:
      return "ingress";
    case 1:
      return "egress";  // NF_NETDEV_EGRESS, absent from older headers
    default:
      return std::to_string(hooknum);
  }
}

std::string FlowtableRef::to_string() const {
  return family_name(family) + " " + table + " " + flowtable;
}

}  // namespace flowbulk
