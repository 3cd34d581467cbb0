// SPDX-License-Identifier: GPL-2.0
#include "offload_rules.h"

#include <linux/in.h>
#include <linux/netfilter.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include "names.h"

namespace flowbulk {

namespace {

using Json = nlohmann::ordered_json;

// No flowtable is in arp, bridge or netdev: family_from_name() knows only
// ip, ip6 and inet.
std::optional<uint8_t> family_number(const Json& name) {
  if (!name.is_string()) {
    return std::nullopt;
  }
  return family_from_name(name.get_ref<const std::string&>());
}

// One protocol value: a number (`nft -p`) or one of nft's names for the
// protocols a flowtable can carry and a few neighbours.
std::optional<uint8_t> protocol_value(const Json& value) {
  if (value.is_number_unsigned() && value.get<uint64_t>() <= 255) {
    return static_cast<uint8_t>(value.get<uint64_t>());
  }
  if (!value.is_string()) {
    return std::nullopt;
  }
  static constexpr std::array<std::pair<std::string_view, uint8_t>, 6> kNames = {{
      {"tcp", IPPROTO_TCP},
      {"udp", IPPROTO_UDP},
      {"gre", IPPROTO_GRE},
      {"sctp", IPPROTO_SCTP},
      {"icmp", IPPROTO_ICMP},
      {"udplite", IPPROTO_UDPLITE},
  }};
  const std::string& text = value.get_ref<const std::string&>();
  for (const auto& [name, number] : kNames) {
    if (text == name) {
      return number;
    }
  }
  return std::nullopt;
}

// The protocols a match's right side names: one value or an anonymous set
// of single values; nullopt for a named set (@name), a range, a prefix.
std::optional<std::vector<uint8_t>> protocol_values(const Json& right) {
  std::vector<uint8_t> protocols;
  if (right.is_object() && right.size() == 1 && right.contains("set") && right["set"].is_array()) {
    for (const Json& element : right["set"]) {
      const auto protocol = protocol_value(element);
      if (!protocol) {
        return std::nullopt;
      }
      protocols.push_back(*protocol);
    }
  } else if (const auto protocol = protocol_value(right)) {
    protocols.push_back(*protocol);
  } else {
    return std::nullopt;
  }
  std::sort(protocols.begin(), protocols.end());
  protocols.erase(std::unique(protocols.begin(), protocols.end()), protocols.end());
  return protocols;
}

// `meta nfproto ipv4`, `meta protocol ip` (the ethertype), as numbers too.
std::optional<IpVersion> version_value(const Json& right, bool ethertype) {
  if (right.is_string()) {
    const std::string& text = right.get_ref<const std::string&>();
    if (text == (ethertype ? "ip" : "ipv4")) {
      return IpVersion::kIpv4;
    }
    if (text == (ethertype ? "ip6" : "ipv6")) {
      return IpVersion::kIpv6;
    }
  } else if (right.is_number_unsigned()) {
    const uint64_t value = right.get<uint64_t>();
    if (value == (ethertype ? 0x0800U : static_cast<uint64_t>(NFPROTO_IPV4))) {
      return IpVersion::kIpv4;
    }
    if (value == (ethertype ? 0x86ddU : static_cast<uint64_t>(NFPROTO_IPV6))) {
      return IpVersion::kIpv6;
    }
  }
  return std::nullopt;
}

bool is_meta(const Json& left, const char* key) {
  return left.is_object() && left.contains("meta") && left["meta"].is_object() &&
         left["meta"].value("key", "") == key;
}

bool is_payload(const Json& left, const char* protocol, const char* field) {
  return left.is_object() && left.contains("payload") && left["payload"].is_object() &&
         left["payload"].value("protocol", "") == protocol &&
         left["payload"].value("field", "") == field;
}

// What the statements before `flow add` match, folded into `rule`. Each
// protocol test narrows the protocols, each version test the version; a
// test of anything else, or of nothing a packet can have, makes it kOther.
class MatchReader {
 public:
  explicit MatchReader(OffloadRule& rule) : rule_(rule) {}

  void read(const Json& statement) {
    if (!statement.is_object() || statement.size() != 1) {
      other_ = true;
      return;
    }
    const std::string& kind = statement.begin().key();
    if (kind == "counter") {
      rule_.counter = true;
      return;
    }
    if (kind == "log") {
      return;  // logs and goes on: matches nothing
    }
    if (kind != "match") {
      other_ = true;  // limit, quota, a verdict map, ... decide who gets offloaded
      return;
    }
    const Json& match = statement["match"];
    const std::string op = match.is_object() ? match.value("op", "") : "";
    if (op != "==" && op != "in") {
      other_ = true;
      return;
    }
    static const Json kNone;
    const Json& left = match.contains("left") ? match["left"] : kNone;
    const Json& right = match.contains("right") ? match["right"] : kNone;
    if (is_meta(left, "l4proto")) {
      protocols(right, IpVersion::kAny);
    } else if (is_payload(left, "ip", "protocol")) {
      protocols(right, IpVersion::kIpv4);
    } else if (is_payload(left, "ip6", "nexthdr")) {
      protocols(right, IpVersion::kIpv6);
    } else if (is_meta(left, "nfproto") || is_meta(left, "protocol")) {
      const auto version = version_value(right, is_meta(left, "protocol"));
      if (!version) {
        other_ = true;
      } else {
        narrow(*version);
      }
    } else {
      other_ = true;
    }
  }

  void finish(uint8_t family) {
    // The table's family limits every rule already.
    const IpVersion own = family == NFPROTO_IPV4   ? IpVersion::kIpv4
                          : family == NFPROTO_IPV6 ? IpVersion::kIpv6
                                                   : IpVersion::kAny;
    if (own != IpVersion::kAny) {
      narrow(own);
      if (!other_) {
        version_ = IpVersion::kAny;
      }
    }
    if (protocols_ && protocols_->empty()) {
      other_ = true;  // `meta l4proto tcp meta l4proto udp`: nothing
    }
    rule_.ip_version = other_ ? IpVersion::kAny : version_;
    if (other_) {
      rule_.match = OffloadMatch::kOther;
    } else if (protocols_) {
      rule_.match = OffloadMatch::kProtocols;
      rule_.protocols = *protocols_;
    } else {
      rule_.match = OffloadMatch::kAll;
    }
  }

 private:
  void protocols(const Json& right, IpVersion version) {
    const auto values = protocol_values(right);
    if (!values) {
      other_ = true;
      return;
    }
    if (!protocols_) {
      protocols_ = *values;
    } else {
      std::vector<uint8_t> both;
      std::set_intersection(protocols_->begin(), protocols_->end(), values->begin(), values->end(),
                            std::back_inserter(both));
      protocols_ = std::move(both);
    }
    narrow(version);
  }

  void narrow(IpVersion version) {
    if (version == IpVersion::kAny || version == version_) {
      return;
    }
    if (version_ == IpVersion::kAny) {
      version_ = version;
    } else {
      other_ = true;  // IPv4 and IPv6 at once: nothing
    }
  }

  OffloadRule& rule_;
  std::optional<std::vector<uint8_t>> protocols_;
  IpVersion version_ = IpVersion::kAny;
  bool other_ = false;
};

}  // namespace

bool OffloadRule::offloads(uint8_t protocol, IpVersion version) const {
  if (ip_version != IpVersion::kAny && ip_version != version) {
    return false;
  }
  return match == OffloadMatch::kAll ||
         (match == OffloadMatch::kProtocols &&
          std::find(protocols.begin(), protocols.end(), protocol) != protocols.end());
}

std::string protocol_name(uint8_t protocol) {
  return protocol == IPPROTO_TCP   ? "tcp"
         : protocol == IPPROTO_UDP ? "udp"
                                   : std::to_string(protocol);
}

// The IP version the match is limited to, in nft's words (meta nfproto).
std::string ip_version_text(IpVersion version) {
  return version == IpVersion::kIpv4 ? "ipv4" : version == IpVersion::kIpv6 ? "ipv6" : "any";
}

// The rule as nft writes it, as far as flowbulk reads it.
std::string offload_rule_text(const OffloadRule& rule) {
  return offload_rule_statement(rule) + " (handle " + std::to_string(rule.handle) + ")";
}

std::string offload_rule_statement(const OffloadRule& rule) {
  std::string match;
  if (rule.match == OffloadMatch::kOther) {
    match = "... ";
  } else {
    const std::string selector = rule.ip_version == IpVersion::kIpv4   ? "ip protocol"
                                 : rule.ip_version == IpVersion::kIpv6 ? "ip6 nexthdr"
                                                                       : "meta l4proto";
    if (rule.match == OffloadMatch::kAll && rule.ip_version != IpVersion::kAny) {
      match = "meta nfproto " + ip_version_text(rule.ip_version) + " ";
    } else if (rule.match == OffloadMatch::kProtocols && rule.protocols.size() == 1) {
      match = selector + " " + protocol_name(rule.protocols[0]) + " ";
    } else if (rule.match == OffloadMatch::kProtocols) {
      std::string names;
      for (uint8_t protocol : rule.protocols) {
        names += (names.empty() ? "" : ", ") + protocol_name(protocol);
      }
      match = selector + " { " + names + " } ";
    }
  }
  return match + (rule.counter ? "counter " : "") + "flow add @" + rule.flowtable +
         (rule.comment.empty() ? "" : " comment \"" + rule.comment + "\"");
}

ChainRules parse_chain_rules(const Json& listing) {
  ChainRules chain;
  if (!listing.is_object() || !listing.contains("nftables") || !listing["nftables"].is_array()) {
    return chain;
  }
  for (const Json& item : listing["nftables"]) {
    if (!item.is_object() || !item.contains("rule") || !item["rule"].is_object()) {
      continue;
    }
    const Json& rule = item["rule"];
    const auto family = family_number(rule.value("family", Json()));
    const Json& handle = rule.contains("handle") ? rule["handle"] : Json();
    if (!handle.is_number_unsigned()) {
      continue;
    }
    chain.handles.push_back(handle.get<uint64_t>());
    if (!family || !rule.contains("expr") || !rule["expr"].is_array()) {
      continue;
    }
    const Json& statements = rule["expr"];
    bool counter = false;
    for (const Json& statement : statements) {
      counter = counter || (statement.is_object() && statement.contains("counter"));
    }
    // One offload rule per flow statement (nft allows several), each with
    // what comes before it: a statement after it cannot stop the offload.
    for (auto at = statements.begin(); at != statements.end(); ++at) {
      if (!at->is_object() || !at->contains("flow") || !(*at)["flow"].is_object()) {
        continue;
      }
      const Json& flow = (*at)["flow"];
      std::string flowtable = flow.value("flowtable", "");
      if (!flowtable.empty() && flowtable.front() == '@') {
        flowtable.erase(0, 1);
      }
      OffloadRule found{.family = *family,
                        .table = rule.value("table", ""),
                        .chain = rule.value("chain", ""),
                        .handle = handle.get<uint64_t>(),
                        .flowtable = flowtable,
                        .match = OffloadMatch::kAll,
                        .protocols = {},
                        .ip_version = IpVersion::kAny,
                        .counter = false,
                        .comment = rule.contains("comment") && rule["comment"].is_string()
                                       ? rule["comment"].get<std::string>()
                                       : std::string()};
      MatchReader reader(found);
      for (auto before = statements.begin(); before != at; ++before) {
        reader.read(*before);
      }
      reader.finish(*family);
      found.counter = counter;
      chain.rules.push_back(std::move(found));
    }
  }
  return chain;
}

}  // namespace flowbulk
