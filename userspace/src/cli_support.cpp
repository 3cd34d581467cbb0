// SPDX-License-Identifier: GPL-2.0
#include "cli_support.h"

#include <algorithm>
#include <ostream>

#include "error.h"
#include "names.h"

namespace flowbulk {

namespace {

// NFT_NAME_MAXLEN is 256 including the terminating NUL.
constexpr size_t kMaxNameLength = 255;

}  // namespace

std::string Arguments::take(std::string_view what) {
  if (empty()) {
    throw UsageError("missing " + std::string(what) + "; try \"flowbulk " + object_ + " help\"");
  }
  return words_[position_++];
}

void Arguments::expect_end() {
  if (!empty()) {
    throw UsageError("unexpected argument \"" + peek() + "\"; try \"flowbulk " + object_ +
                     " help\"");
  }
}

bool abbreviates(std::string_view word, std::string_view keyword) {
  return !word.empty() && keyword.substr(0, word.size()) == word;
}

std::string match_keyword(std::string_view word, std::initializer_list<std::string_view> keywords,
                          std::string_view what, std::string_view help_object) {
  std::vector<std::string_view> candidates;
  for (std::string_view keyword : keywords) {
    if (word == keyword) {
      return std::string(keyword);
    }
    if (abbreviates(word, keyword)) {
      candidates.push_back(keyword);
    }
  }
  if (candidates.size() == 1) {
    return std::string(candidates.front());
  }
  const std::string try_help = help_object.empty()
                                   ? std::string("try \"flowbulk help\"")
                                   : "try \"flowbulk " + std::string(help_object) + " help\"";
  if (candidates.empty()) {
    throw UsageError(std::string(what) + " \"" + std::string(word) + "\" is unknown; " + try_help);
  }
  std::string list;
  for (std::string_view candidate : candidates) {
    list += (list.empty() ? "" : ", ") + std::string(candidate);
  }
  throw UsageError(std::string(what) + " \"" + std::string(word) + "\" is ambiguous (" + list +
                   "); " + try_help);
}

bool is_plain_number(std::string_view word, bool negative_allowed, bool fraction_allowed) {
  if (negative_allowed && !word.empty() && word.front() == '-') {
    word.remove_prefix(1);
  }
  const size_t dot = fraction_allowed ? word.find('.') : std::string_view::npos;
  auto digits = [](std::string_view part) {
    return !part.empty() &&
           std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos) {
    return digits(word);
  }
  return digits(word.substr(0, dot)) && digits(word.substr(dot + 1));
}

uint8_t parse_family(std::string_view word) {
  if (auto family = family_from_name(word)) {
    return *family;
  }
  throw UsageError("unknown family \"" + std::string(word) + "\": flowtables exist in " +
                   std::string(family_names_text()));
}

void validate_name(std::string_view name, std::string_view what) {
  // The kernel's rules for naming what exists (NLA_STRING of 1 to
  // NFT_NAME_MAXLEN - 1 bytes); everything else (what nft's syntax can
  // write, keywords) is libnftables' business, so a table that exists can
  // always be named here.
  if (name.empty()) {
    throw UsageError(std::string(what) + " name is empty");
  }
  if (name.size() > kMaxNameLength) {
    throw UsageError(std::string(what) + " name is longer than " + std::to_string(kMaxNameLength) +
                     " bytes");
  }
}

void validate_new_name(std::string_view name, std::string_view what) {
  validate_name(name, what);
  if (!nft_readable_name(name)) {
    throw UsageError(std::string(what) + " name \"" + std::string(name) +
                     "\" would make a ruleset nft cannot read back (nft lists names unquoted): "
                     "a new name starts with a letter, '_' or '.', goes on with letters, digits, "
                     "'/', '-', '_' or '.', and is not an nft keyword");
  }
}

FlowtableRef parse_flowtable_ref(Arguments& arguments) {
  const std::string family = arguments.take("FAMILY");
  return parse_flowtable_ref(family, arguments);
}

FlowtableRef parse_flowtable_ref(std::string_view family, Arguments& arguments) {
  FlowtableRef ref;
  ref.family = parse_family(family);
  ref.table = arguments.take("TABLE");
  validate_name(ref.table, "table");
  ref.flowtable = arguments.take("FLOWTABLE");
  validate_name(ref.flowtable, "flowtable");
  return ref;
}

void emit_json(const Invocation& invocation, const Json& body) {
  Json document = {{"schema", kJsonSchemaVersion}};
  for (const auto& [key, value] : body.items()) {
    document[key] = value;
  }
  invocation.env.out << document.dump(invocation.options.pretty ? 2 : -1, ' ', false,
                                      Json::error_handler_t::replace)
                     << '\n';
}

void emit_usage(const Invocation& invocation, const char* text) {
  if (invocation.options.json) {
    emit_json(invocation, Json{{"usage", text}});
  } else {
    invocation.env.out << text;
  }
}

void print_list(const Invocation& invocation, std::string_view key, const RecordList& list,
                const Json& members) {
  if (invocation.options.json) {
    Json body = members;
    body[std::string(key)] = list.json();
    emit_json(invocation, body);
    return;
  }
  list.print_text(invocation.env.out);
}

void emit_done(const Invocation& invocation) {
  if (invocation.options.json) {
    emit_json(invocation, Json{{"ok", true}});
  }
}

Json flowtable_ref_json(const FlowtableRef& ref) {
  return Json{
      {"family", family_name(ref.family)}, {"table", ref.table}, {"flowtable", ref.flowtable}};
}

}  // namespace flowbulk
