// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "flowtable_ref.h"

namespace flowbulk {

// An nft ruleset with the RFC's `hook early_ingress` turned into what stock
// nft and kernels accept.
struct EarlyIngressRewrite {
  // The ruleset with each flowtable's `early_ingress` replaced by `ingress`
  // padded with spaces, so nft's error locations (line:column) still point
  // into the user's file.
  std::string ruleset;
  // The flowtables that said early_ingress, in file order: to be attached.
  std::vector<FlowtableRef> flowtables;
  // The flowtables that said `hook ingress` (family ip, ip6 or inet, names
  // written literally) and nowhere early_ingress: the file wants them
  // stock, so an attachment of theirs is to go.
  std::vector<FlowtableRef> ingress;
};

// Not an nft parser: a tokenizer that knows comments, quoted strings, braces
// and statement ends, and follows `table [FAMILY] NAME {`, `flowtable NAME {`
// and `add|create flowtable [FAMILY] TABLE NAME {` blocks. Only a
// `hook early_ingress` inside a flowtable block is touched; everything else
// reaches nft byte for byte, so nft reports its own errors for it.
// Throws UsageError when an early_ingress flowtable's names cannot be known
// without evaluating the ruleset (a $variable as table or flowtable name).
EarlyIngressRewrite rewrite_early_ingress(std::string_view ruleset);

// Whether the ruleset is nft JSON (`nft -j -f`): its first character that
// is not white space is '{', which no nft syntax ruleset starts with.
bool is_json_ruleset(std::string_view ruleset);

// The same for an nft JSON ruleset: every flowtable object with "hook":
// "early_ingress", in an "add" or "create" command or listed bare (as
// `nft -j list ruleset` prints it), gets "ingress". JSON has no line and
// column to keep, so a rewritten document is printed anew; one with no
// early_ingress flowtable is left byte for byte. Throws UsageError for a
// document that is not JSON, and for an early_ingress flowtable without
// its family, table or name.
EarlyIngressRewrite rewrite_early_ingress_json(std::string_view ruleset);

}  // namespace flowbulk
