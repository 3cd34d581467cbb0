// SPDX-License-Identifier: GPL-2.0
#pragma once

// Pieces shared by the command implementations: the argument cursor,
// keyword matching, validation of names, and JSON output.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "environment.h"
#include "error.h"
#include "flowtable_ref.h"
#include "output.h"

namespace flowbulk {

// The version of the JSON documents `-j` prints
// (Documentation/flowbulk-json.schema.json). Raise it when a field changes
// meaning or disappears; adding fields keeps it. 2: attach list without
// hook_priority, and the stats reasons of genl interface version 2 (three
// gone, the ids after them one lower). tests/golden/ holds every command's
// output: a change there is a change of this format.
constexpr int kJsonSchemaVersion = 2;

struct Options {
  bool json = false;
  bool pretty = false;
  int detail = 0;  // number of -s
  std::optional<std::string> file;
  std::optional<std::string> netns;  // -n NETNS
  bool check = false;                // -c: validate, change nothing
  bool echo = false;                 // -e: print what was changed, with handles
};

// Everything one command needs.
struct Invocation {
  Environment& env;
  Options options;
};

// The words after OBJECT, consumed left to right.
class Arguments {
 public:
  Arguments(std::vector<std::string> words, std::string object)
      : words_(std::move(words)), object_(std::move(object)) {}

  bool empty() const { return position_ >= words_.size(); }
  const std::string& peek() const { return words_.at(position_); }
  // The next word; `what` names it in the error when it is missing.
  std::string take(std::string_view what);
  // Rejects anything left over.
  void expect_end();
  const std::string& object() const { return object_; }

 private:
  std::vector<std::string> words_;
  size_t position_ = 0;
  std::string object_;
};

// iproute2's matches(): the exact keyword or an unambiguous prefix of one.
// `what` ("command", "hook") and `help_object` go into the error message.
std::string match_keyword(std::string_view word, std::initializer_list<std::string_view> keywords,
                          std::string_view what, std::string_view help_object);
// True when `word` is a prefix of `keyword` (and not empty).
bool abbreviates(std::string_view word, std::string_view keyword);

// A number as people write it: digits, optionally one leading '-' and one
// '.' between digits. Rejects what strtod/strtoll also take: leading
// blanks, '+', hex, exponents, "inf", "nan".
bool is_plain_number(std::string_view word, bool negative_allowed, bool fraction_allowed);

uint8_t parse_family(std::string_view word);
// A name of something that exists: not empty and within the kernel's
// length limit; no other rule (the kernel has none).
void validate_name(std::string_view name, std::string_view what);
// A name flowbulk is about to create: validate_name() and one that nft
// prints back readably (nft_readable_name()). Throws UsageError (exit 2).
void validate_new_name(std::string_view name, std::string_view what);
// FAMILY TABLE FLOWTABLE; the second form when FAMILY was taken already.
FlowtableRef parse_flowtable_ref(Arguments& arguments);
FlowtableRef parse_flowtable_ref(std::string_view family, Arguments& arguments);

// Prints {"schema": kJsonSchemaVersion, <body members>} on env.out. Never throws on bad
// UTF-8 (a device or table name is bytes to the kernel): invalid sequences
// are replaced by U+FFFD.
void emit_json(const Invocation& invocation, const Json& body);
// Usage text: as is, or with -j as {"schema": N, "usage": TEXT}.
void emit_usage(const Invocation& invocation, const char* text);
// Prints a listing once: with -j {"schema": N, <members>..., key: [records]},
// else the text table. `members` go before the list in the JSON document.
void print_list(const Invocation& invocation, std::string_view key, const RecordList& list,
                const Json& members = Json::object());
// Success of a command that has nothing to show.
void emit_done(const Invocation& invocation);

Json flowtable_ref_json(const FlowtableRef& ref);

// A JSON array of to_json(item) for each of `items`, in order.
template <typename Items, typename ToJson>
Json json_array(const Items& items, ToJson to_json) {
  Json list = Json::array();
  for (const auto& item : items) {
    list.push_back(to_json(item));
  }
  return list;
}

}  // namespace flowbulk
