// SPDX-License-Identifier: GPL-2.0
// flowbulk table: add, delete and list nftables tables.

#include <array>

#include "commands.h"
#include "error.h"
#include "names.h"
#include "nfb_client.h"
#include "nft_client.h"
#include "nft_commands.h"
#include "output.h"

namespace flowbulk {

namespace {

// nft's names for NFT_TABLE_F_* (dormant, owner, persist); unknown bits as
// numbers, like unknown reasons.
std::vector<std::string> table_flag_names(uint32_t flags) {
  static constexpr std::array<const char*, 3> kNames = {"dormant", "owner", "persist"};
  std::vector<std::string> names;
  for (uint32_t bit = 0; bit < 32; ++bit) {
    if ((flags & (1U << bit)) != 0) {
      names.emplace_back(bit < kNames.size() ? kNames[bit] : std::to_string(1U << bit));
    }
  }
  return names;
}

void table_add(Invocation& invocation, Arguments& arguments) {
  const uint8_t family = parse_family(arguments.take("FAMILY"));
  const std::string name = arguments.take("NAME");
  validate_new_name(name, "table");
  arguments.expect_end();
  // create, not add: an existing table is an error here, so a typo cannot
  // silently reuse someone else's table.
  Json table = Json::object();
  table["family"] = family_name(family);
  table["name"] = name;
  const std::string echoed =
      run_nft(invocation, Json::array({nft_command("create", "table", table)}),
              "cannot add table " + table_text(family, name));
  emit_written(invocation, echoed_commands(echoed));
}

void table_delete(Invocation& invocation, Arguments& arguments) {
  const uint8_t family = parse_family(arguments.take("FAMILY"));
  const std::string name = arguments.take("NAME");
  validate_name(name, "table");
  arguments.expect_end();
  const std::string context = "cannot delete table " + table_text(family, name);
  // The table's flowtables are noted before the delete, so that their
  // attachments can be dropped after it: the module would otherwise keep
  // hooks for flowtables that no longer exist.
  std::vector<FlowtableRef> attached;
  try {
    for (const auto& flowtable : open_nft(invocation).list_flowtables(family)) {
      if (name == text_or_empty(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE))) {
        attached.push_back(FlowtableRef{.family = family,
                                        .table = name,
                                        .flowtable = text_or_empty(nftnl_flowtable_get_str(
                                            flowtable.get(), NFTNL_FLOWTABLE_NAME))});
      }
    }
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  Json table = Json::object();
  table["family"] = family_name(family);
  table["name"] = name;
  const std::string echoed =
      run_nft(invocation, Json::array({nft_command("delete", "table", table)}), context);
  if (!invocation.options.check) {
    for (const FlowtableRef& ref : attached) {
      detach_quietly(invocation, ref);
    }
  }
  emit_written(invocation, echoed_commands(echoed));
}

void table_list(Invocation& invocation, Arguments& arguments) {
  const std::optional<uint8_t> family = optional_family(arguments);
  const std::optional<std::string> name =
      optional_name(arguments, family.has_value(), "NAME", "table");
  arguments.expect_end();
  std::vector<NftnlTablePtr> tables;
  try {
    tables = open_nft(invocation).list_tables(family);
  } catch (const Error& error) {
    fail_with_context(error, "cannot list tables");
  }
  if (name) {
    // One table, as `nft list table`: one that does not exist is an error.
    std::erase_if(tables, [&name](const NftnlTablePtr& table) {
      return *name != text_or_empty(nftnl_table_get_str(table.get(), NFTNL_TABLE_NAME));
    });
    if (tables.empty()) {
      throw Error("cannot list table " + table_text(*family, *name) + ": no such table", ENOENT);
    }
  }
  // OBJECTS: the kernel's use count, what the table holds.
  RecordList list({{"family", "FAMILY"},
                   {"name", "NAME"},
                   {"handle", "HANDLE", TextTable::Align::kRight},
                   {"use", "OBJECTS", TextTable::Align::kRight}});
  for (const auto& owned : tables) {
    const nftnl_table* table = owned.get();
    list.add()
        .any("family", family_name(nftnl_table_get_u32(table, NFTNL_TABLE_FAMILY)))
        .any("name", text_or_empty(nftnl_table_get_str(table, NFTNL_TABLE_NAME)))
        .any("handle", nftnl_table_get_u64(table, NFTNL_TABLE_HANDLE))
        .any("use", nftnl_table_get_u32(table, NFTNL_TABLE_USE))
        .json("flags", table_flag_names(nftnl_table_get_u32(table, NFTNL_TABLE_FLAGS)));
  }
  print_list(invocation, "tables", list);
}

}  // namespace

const char* table_usage() {
  return "Usage: flowbulk table add FAMILY NAME\n"
         "       flowbulk table delete FAMILY NAME\n"
         "       flowbulk table { list | show } [ FAMILY [ NAME ] ]\n"
         "FAMILY := { ip | ip6 | inet }\n";
}

void do_table(Invocation& invocation, Arguments& arguments) {
  dispatch_object(invocation, arguments,
                  ObjectCommands{"table", table_add, table_delete, table_list, table_usage});
}

}  // namespace flowbulk
