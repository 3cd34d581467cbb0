// SPDX-License-Identifier: GPL-2.0
#pragma once

// Undoing a loaded ruleset after a failed attach, touching only what the
// load created: never `flush ruleset`, never a reload of a listing (which
// races with every other writer and cannot reload what nft cannot print).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace flowbulk {

struct RollbackPlan {
  // nft JSON commands: {"nftables": [{"delete": {...by handle...}}, ...]},
  // rules first, tables last, to be run as one transaction.
  nlohmann::json commands;
  // The same deletions as nft command lines, for the error message when
  // the rollback itself fails.
  std::vector<std::string> command_lines;
  // What the load did that deleting by handle cannot undo.
  std::vector<std::string> kept;
  bool empty() const { return command_lines.empty(); }
};

// `before`: `nft -j -t list ruleset` taken before the load. `echo`: what
// libnftables echoed for the load (`nft -e -j -a`): every object the
// kernel added for us, with its handle. An echoed object that was listed
// before was only updated (an `add chain` of an existing chain): it is
// kept. Objects that other writers created meanwhile are in neither, so
// they are never touched.
// libnftables 1.0.6 echoes no flowtables: `flowtables` are those the load
// was asked to create (family, table, name); one that was not listed before
// is deleted by name (a name is unique in its table, so it is ours).
struct NamedFlowtable {
  std::string family;
  std::string table;
  std::string name;
};
// `exact`: `before` was the ruleset right before the load, with no other
// writer's commit between them (the generation moved by exactly one, the
// load's). When it was not, a table, chain, set or flowtable the load
// echoes may have been created by that writer and only updated by the
// load: those are kept and named; rules, which a load always creates,
// are still deleted.
RollbackPlan plan_rollback(const nlohmann::json& before, const nlohmann::json& echo,
                           const std::vector<NamedFlowtable>& flowtables = {}, bool exact = true);

}  // namespace flowbulk
