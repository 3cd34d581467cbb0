// SPDX-License-Identifier: GPL-2.0
#include "rollback.h"

#include <array>
#include <set>
#include <string_view>
#include <tuple>

namespace flowbulk {

namespace {

using Json = nlohmann::json;

// Named objects of a table, in the order they are deleted: what refers to
// others first (maps jump to chains), chains last.
constexpr std::array<std::string_view, 12> kTableObjects = {
    "set",     "map",      "flowtable", "counter",    "quota",          "limit",
    "secmark", "synproxy", "ct helper", "ct timeout", "ct expectation", "chain",
};

using Key =
    std::tuple<std::string, std::string, std::string, std::string>;  // kind family table name

std::string text_of(const Json& object, const char* field) {
  auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool has_handle(const Json& object) {
  auto it = object.find("handle");
  return it != object.end() && it->is_number_unsigned();
}

// For the message: nft's syntax with the name quoted.
std::string quoted(const std::string& name) {
  return "\"" + name + "\"";
}

}  // namespace

RollbackPlan plan_rollback(const Json& before, const Json& echo,
                           const std::vector<NamedFlowtable>& flowtables, bool exact) {
  std::set<Key> existed;
  if (before.contains("nftables") && before["nftables"].is_array()) {
    for (const Json& entry : before["nftables"]) {
      if (!entry.is_object()) {
        continue;
      }
      for (const auto& [kind, object] : entry.items()) {
        if (!object.is_object()) {
          continue;
        }
        existed.emplace(kind, text_of(object, "family"),
                        kind == "table" ? text_of(object, "name") : text_of(object, "table"),
                        kind == "table" ? std::string() : text_of(object, "name"));
      }
    }
  }

  std::vector<Json> tables;
  std::set<std::pair<std::string, std::string>> new_tables;  // family, name
  std::vector<Json> rules;
  std::vector<std::vector<Json>> objects(kTableObjects.size());
  RollbackPlan plan;
  bool updated = false;
  std::vector<std::string> unproven;  // not listed before, but maybe not ours
  const Json empty = Json::array();
  const Json& events =
      echo.contains("nftables") && echo["nftables"].is_array() ? echo["nftables"] : empty;
  for (const Json& event : events) {
    if (!event.is_object()) {
      continue;
    }
    for (const auto& [verb, body] : event.items()) {
      if (verb == "metainfo" || !body.is_object()) {
        continue;
      }
      if (verb != "add" && verb != "insert" && verb != "create") {
        updated = true;  // delete, flush, replace: not ours to undo
        continue;
      }
      for (const auto& [kind, object] : body.items()) {
        if (!object.is_object()) {
          continue;
        }
        const std::string family = text_of(object, "family");
        if (kind == "table") {
          const std::string name = text_of(object, "name");
          if (existed.contains({kind, family, name, ""})) {
            updated = true;
          } else if (!exact) {
            unproven.push_back("table " + family + " " + name);
          } else if (has_handle(object)) {
            new_tables.emplace(family, name);
            tables.push_back(Json{
                {"table", {{"family", family}, {"name", name}, {"handle", object["handle"]}}}});
          }
          continue;
        }
        const std::string table = text_of(object, "table");
        if (kind == "rule") {
          if (has_handle(object)) {
            rules.push_back(Json{{"rule",
                                  {{"family", family},
                                   {"table", table},
                                   {"chain", text_of(object, "chain")},
                                   {"handle", object["handle"]}}}});
          }
          continue;
        }
        if (kind == "element") {
          plan.kept.push_back("elements added to set " + family + " " + table + " " +
                              text_of(object, "name"));
          continue;
        }
        size_t slot = 0;
        while (slot < kTableObjects.size() && kTableObjects[slot] != kind) {
          ++slot;
        }
        const std::string name = text_of(object, "name");
        if (slot == kTableObjects.size() || !has_handle(object)) {
          plan.kept.push_back(kind + " " + family + " " + table + " " + name);
        } else if (existed.contains({kind, family, table, name})) {
          updated = true;
        } else if (!exact) {
          unproven.push_back(kind + " " + family + " " + table + " " + name);
        } else {
          objects[slot].push_back(Json{{kind,
                                        {{"family", family},
                                         {"table", table},
                                         {"name", name},
                                         {"handle", object["handle"]}}}});
        }
      }
    }
  }

  for (const NamedFlowtable& flowtable : flowtables) {
    if (existed.contains({"flowtable", flowtable.family, flowtable.table, flowtable.name})) {
      continue;
    }
    if (!exact) {
      unproven.push_back("flowtable " + flowtable.family + " " + flowtable.table + " " +
                         flowtable.name);
    } else {
      objects[2].push_back(Json{
          {"flowtable",
           {{"family", flowtable.family}, {"table", flowtable.table}, {"name", flowtable.name}}}});
    }
  }
  if (!unproven.empty()) {
    std::string names;
    std::set<std::string> named;  // a flowtable is echoed and asked for
    for (const std::string& name : unproven) {
      if (named.insert(name).second) {
        names += (names.empty() ? "" : ", ") + name;
      }
    }
    plan.kept.push_back(names +
                        " (another writer changed the ruleset between flowbulk's listing and "
                        "its load, so these may be theirs)");
  }

  // Inside a table the load created, deleting the table is enough.
  auto in_new_table = [&new_tables](const Json& command) {
    const Json& object = command.begin().value();
    return new_tables.contains({text_of(object, "family"), text_of(object, "table")});
  };
  Json list = Json::array();
  auto add = [&](const Json& command) {
    const std::string kind = command.begin().key();
    const Json& object = command.begin().value();
    std::string line = "nft delete " + kind + " " + text_of(object, "family") + " ";
    if (!object.contains("handle")) {
      line += quoted(text_of(object, "table")) + " " + quoted(text_of(object, "name"));
    } else if (kind == "table") {
      line += "handle " + object["handle"].dump();
    } else if (kind == "rule") {
      line += quoted(text_of(object, "table")) + " " + quoted(text_of(object, "chain")) +
              " handle " + object["handle"].dump();
    } else {
      line += quoted(text_of(object, "table")) + " handle " + object["handle"].dump();
    }
    plan.command_lines.push_back(line);
    Json target = object;
    if (target.contains("handle")) {
      target.erase("name");  // by handle only
    }
    list.push_back(Json{{"delete", {{kind, target}}}});
  };
  for (const Json& rule : rules) {
    if (!in_new_table(rule)) {
      add(rule);
    }
  }
  for (const auto& slot : objects) {
    for (const Json& object : slot) {
      if (!in_new_table(object)) {
        add(object);
      }
    }
  }
  for (const Json& table : tables) {
    add(table);
  }
  if (updated) {
    plan.kept.push_back("what the load did to objects that existed before it");
  }
  plan.commands = Json{{"nftables", list}};
  return plan;
}

}  // namespace flowbulk
