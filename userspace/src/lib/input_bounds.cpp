// SPDX-License-Identifier: GPL-2.0
#include "input_bounds.h"

#include "error.h"

namespace flowbulk {

namespace {

// 0 when the nesting stays within the limit, else the offset of the first
// opening that goes past it.
size_t too_deep_at(std::string_view text, bool json) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (json && c == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (!json && c == '#') {
      while (i < text.size() && text[i] != '\n') {
        ++i;
      }
    } else if (c == '{' || (json && c == '[')) {
      if (++depth > kMaxRulesetNesting) {
        return i + 1;
      }
    } else if ((c == '}' || (json && c == ']')) && depth > 0) {
      --depth;
    }
  }
  return 0;
}

}  // namespace

void check_ruleset_nesting(std::string_view ruleset, bool json, const std::string& name) {
  if (const size_t offset = too_deep_at(ruleset, json)) {
    throw UsageError("cannot load " + name + ": nested deeper than " +
                     std::to_string(kMaxRulesetNesting) + " levels (at byte " +
                     std::to_string(offset) + ")");
  }
}

}  // namespace flowbulk
