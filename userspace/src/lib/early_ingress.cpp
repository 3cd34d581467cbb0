// SPDX-License-Identifier: GPL-2.0
#include "early_ingress.h"

#include <linux/netfilter.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "error.h"
#include "names.h"

namespace flowbulk {

namespace {

constexpr std::string_view kEarlyIngress = "early_ingress";
constexpr std::string_view kIngress = "ingress";

struct Token {
  std::string text;  // unquoted
  size_t offset = 0;
  size_t length = 0;  // in the source, quotes included
  bool quoted = false;
};

// What a '{' opened.
struct Block {
  enum class Kind { kTable, kFlowtable, kOther } kind = Kind::kOther;
  std::string family;
  std::string table;
  std::string flowtable;
};

bool is_family_keyword(std::string_view word) {
  return word == "ip" || word == "ip6" || word == "inet" || word == "arp" || word == "bridge" ||
         word == "netdev";
}

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == '-' || c == '$' || c == '@' || c == ':' || c == '*' ||
         c == '[' || c == ']' || c == '!' || c == '&' || c == '|' || c == '^' || c == '<' ||
         c == '>' || c == '=' || c == '+' || c == '%' || c == '~';
}

// The words of the current statement before a '{': what does it open?
Block classify(const std::vector<Token>& statement, const std::vector<Block>& open_blocks) {
  Block block;
  std::vector<std::string> words;
  words.reserve(statement.size());
  for (const Token& token : statement) {
    words.push_back(token.text);
  }
  size_t i = 0;
  if (i < words.size() && (words[i] == "add" || words[i] == "create")) {
    ++i;
  }
  const bool inside_table = !open_blocks.empty() && open_blocks.back().kind == Block::Kind::kTable;
  if (i < words.size() && words[i] == "table" && open_blocks.empty()) {
    ++i;
    block.kind = Block::Kind::kTable;
    block.family = "ip";  // nft's default family
    if (i + 1 < words.size() && is_family_keyword(words[i])) {
      block.family = words[i++];
    }
    if (i < words.size()) {
      block.table = words[i];
    }
    return block;
  }
  if (i < words.size() && words[i] == "flowtable") {
    ++i;
    if (inside_table) {
      block.kind = Block::Kind::kFlowtable;
      block.family = open_blocks.back().family;
      block.table = open_blocks.back().table;
      if (i < words.size()) {
        block.flowtable = words[i];
      }
      return block;
    }
    if (open_blocks.empty()) {
      block.kind = Block::Kind::kFlowtable;
      block.family = "ip";
      if (i + 2 < words.size() && is_family_keyword(words[i])) {
        block.family = words[i++];
      }
      if (i + 1 < words.size()) {
        block.table = words[i];
        block.flowtable = words[i + 1];
      }
      return block;
    }
  }
  return block;
}

void add_unique(std::vector<FlowtableRef>& list, FlowtableRef ref) {
  if (std::find(list.begin(), list.end(), ref) == list.end()) {
    list.push_back(std::move(ref));
  }
}

// A flowtable the file declares early_ingress anywhere is attached.
void drop_early_ingress(EarlyIngressRewrite& result) {
  std::erase_if(result.ingress, [&result](const FlowtableRef& ref) {
    return std::find(result.flowtables.begin(), result.flowtables.end(), ref) !=
           result.flowtables.end();
  });
}

}  // namespace

EarlyIngressRewrite rewrite_early_ingress(std::string_view ruleset) {
  EarlyIngressRewrite result;
  result.ruleset = std::string(ruleset);
  std::vector<Block> open_blocks;
  std::vector<Token> statement;

  size_t position = 0;
  while (position < ruleset.size()) {
    const char c = ruleset[position];
    if (c == '#') {  // comment to end of line
      while (position < ruleset.size() && ruleset[position] != '\n') {
        ++position;
      }
      continue;
    }
    if (c == '\n' || c == ';') {
      statement.clear();
      ++position;
      continue;
    }
    if (c == '{') {
      open_blocks.push_back(classify(statement, open_blocks));
      statement.clear();
      ++position;
      continue;
    }
    if (c == '}') {
      if (!open_blocks.empty()) {
        open_blocks.pop_back();
      }
      statement.clear();
      ++position;
      continue;
    }
    if (c == '"') {
      Token token{.text = {}, .offset = position, .length = 0, .quoted = true};
      ++position;
      while (position < ruleset.size() && ruleset[position] != '"' && ruleset[position] != '\n') {
        token.text += ruleset[position++];
      }
      if (position < ruleset.size() && ruleset[position] == '"') {
        ++position;
      }
      token.length = position - token.offset;
      statement.push_back(std::move(token));
      continue;
    }
    if (is_word_char(c)) {
      Token token{.text = {}, .offset = position, .length = 0, .quoted = false};
      while (position < ruleset.size() && is_word_char(ruleset[position])) {
        token.text += ruleset[position++];
      }
      token.length = position - token.offset;
      const bool in_flowtable =
          !open_blocks.empty() && open_blocks.back().kind == Block::Kind::kFlowtable;
      if (in_flowtable && !token.quoted && token.text == kIngress && !statement.empty() &&
          statement.back().text == "hook") {
        const Block& flowtable = open_blocks.back();
        auto family = family_from_name(flowtable.family);
        if (family && !flowtable.table.empty() && !flowtable.flowtable.empty() &&
            flowtable.table.front() != '$' && flowtable.flowtable.front() != '$') {
          add_unique(result.ingress, FlowtableRef{.family = *family,
                                                  .table = flowtable.table,
                                                  .flowtable = flowtable.flowtable});
        }
      }
      if (in_flowtable && !token.quoted && token.text == kEarlyIngress && !statement.empty() &&
          statement.back().text == "hook") {
        const Block& flowtable = open_blocks.back();
        if (flowtable.table.empty() || flowtable.flowtable.empty() ||
            flowtable.table.front() == '$' || flowtable.flowtable.front() == '$') {
          throw UsageError(
              "a flowtable with hook early_ingress must name its table and itself literally "
              "(no $variables), so that flowbulk can attach it");
        }
        auto family = family_from_name(flowtable.family);
        if (!family) {
          throw UsageError("flowtable " + flowtable.flowtable + " in table " + flowtable.family +
                           " " + flowtable.table +
                           ": hook early_ingress needs family ip, ip6 or inet");
        }
        std::string replacement(kIngress);
        replacement.append(kEarlyIngress.size() - kIngress.size(), ' ');
        result.ruleset.replace(token.offset, token.length, replacement);
        add_unique(result.flowtables, FlowtableRef{.family = *family,
                                                   .table = flowtable.table,
                                                   .flowtable = flowtable.flowtable});
      }
      statement.push_back(std::move(token));
      continue;
    }
    ++position;  // whitespace, commas and anything else
  }
  drop_early_ingress(result);
  return result;
}

bool is_json_ruleset(std::string_view ruleset) {
  const size_t first = ruleset.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && ruleset[first] == '{';
}

EarlyIngressRewrite rewrite_early_ingress_json(std::string_view ruleset) {
  EarlyIngressRewrite result{.ruleset = std::string(ruleset), .flowtables = {}, .ingress = {}};
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(ruleset);
  } catch (const nlohmann::json::parse_error& error) {
    // nft would fall back to its syntax parser and complain about the '{'.
    throw UsageError(std::string("not valid JSON: ") + error.what());
  }
  if (!document.is_object() || !document.contains("nftables") || !document["nftables"].is_array()) {
    return result;  // nft says what is wrong with it
  }
  auto rewrite = [&result](nlohmann::json& flowtable) {
    if (!flowtable.is_object() || !flowtable.contains("hook")) {
      return;
    }
    const auto text = [&flowtable](const char* field) -> std::optional<std::string> {
      if (!flowtable.contains(field) || !flowtable[field].is_string()) {
        return std::nullopt;
      }
      return flowtable[field].get<std::string>();
    };
    const auto family = text("family");
    const auto table = text("table");
    const auto name = text("name");
    if (flowtable["hook"] == kIngress) {
      const auto number = family ? family_from_name(*family) : std::nullopt;
      if (number && table && name) {
        add_unique(result.ingress,
                   FlowtableRef{.family = *number, .table = *table, .flowtable = *name});
      }
      return;
    }
    if (flowtable["hook"] != kEarlyIngress) {
      return;
    }
    if (!family || !table || !name) {
      throw UsageError(
          "an early_ingress flowtable in JSON needs its \"family\", \"table\" and \"name\"");
    }
    const auto number = family_from_name(*family);
    if (!number) {
      throw UsageError("flowtable " + *name + " in table " + *family + " " + *table +
                       ": hook early_ingress needs family " + std::string(family_names_text()));
    }
    flowtable["hook"] = kIngress;
    add_unique(result.flowtables,
               FlowtableRef{.family = *number, .table = *table, .flowtable = *name});
  };
  for (nlohmann::json& entry : document["nftables"]) {
    if (!entry.is_object()) {
      continue;
    }
    for (auto& [key, value] : entry.items()) {
      if (key == "flowtable") {
        rewrite(value);  // as `nft -j list ruleset` prints it
      } else if ((key == "add" || key == "create") && value.is_object() &&
                 value.contains("flowtable")) {
        rewrite(value["flowtable"]);
      }
    }
  }
  if (!result.flowtables.empty()) {
    result.ruleset = document.dump();
  }
  drop_early_ingress(result);
  return result;
}

}  // namespace flowbulk
