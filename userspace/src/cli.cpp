// SPDX-License-Identifier: GPL-2.0
#include "cli.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <optional>
#include <ostream>
#include <string_view>

#include "commands.h"
#include "error.h"
#include "output.h"
#include "version.h"

namespace flowbulk {

namespace {

const char* main_usage() {
  return "Usage: flowbulk [ OPTIONS ] OBJECT { COMMAND | help }\n"
         "       flowbulk [ OPTIONS ] -f { FILE | - }\n"
         "OBJECT := { table | flowtable | offload | attach | detach | stats | monitor }\n"
         "OPTIONS := { -j[son] | -p[retty] | -s[tatistics] (repeatable) | -f[ile] FILE |\n"
         "             -c[heck] | -e[cho] | -n[etns] NETNS | -h[elp] | -V[ersion] }\n"
         "Try \"flowbulk OBJECT help\" for each object's commands.\n";
}

struct ParsedCommandLine {
  Options options;
  std::vector<std::string> rest;  // OBJECT and its words
  bool help = false;
  bool version = false;
};

// The long name of each option, by its letter, in the order a prefix is
// matched against them ("-st" is -s).
struct LongOption {
  std::string_view name;
  char letter;
};
constexpr LongOption kLongOptions[] = {
    {"json", 'j'},  {"pretty", 'p'}, {"statistics", 's'}, {"stats", 's'}, {"file", 'f'},
    {"check", 'c'}, {"echo", 'e'},   {"netns", 'n'},      {"help", 'h'},  {"version", 'V'},
};

// What the options that take a value (-f, -n) need after them.
const char* option_value(char letter) {
  return letter == 'f' ? "a FILE (or - for stdin)" : "a network namespace name";
}

ParsedCommandLine parse_options(const std::vector<std::string>& arguments) {
  ParsedCommandLine parsed;
  size_t i = 0;
  for (; i < arguments.size(); ++i) {
    const std::string& word = arguments[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (word.size() < 2 || word[0] != '-') {
      break;
    }
    // Long forms first (--json), then iproute2-style single-dash words
    // (-json, -stats) and finally bundled short flags (-sj).
    std::string_view name = word;
    name.remove_prefix(word[1] == '-' ? 2 : 1);
    auto take_value = [&](std::optional<std::string>& value, char letter) {
      if (i + 1 >= arguments.size()) {
        throw UsageError("option " + word + " needs " + option_value(letter));
      }
      if (value) {
        throw UsageError(std::string("option -") + letter + " given twice");
      }
      value = arguments[++i];
    };
    auto apply = [&](char letter) {
      switch (letter) {
        case 'j':
          parsed.options.json = true;
          break;
        case 'p':
          parsed.options.pretty = true;
          break;
        case 's':
          ++parsed.options.detail;
          break;
        case 'h':
          parsed.help = true;
          break;
        case 'V':
          parsed.version = true;
          break;
        case 'f':
          take_value(parsed.options.file, letter);
          break;
        case 'c':
          parsed.options.check = true;
          break;
        case 'e':
          parsed.options.echo = true;
          break;
        case 'n':
          take_value(parsed.options.netns, letter);
          break;
        default:
          throw UsageError("unknown option \"-" + std::string(1, letter) +
                           "\"; try \"flowbulk help\"");
      }
    };
    if (name.size() > 1) {
      const auto* long_option = std::ranges::find_if(
          kLongOptions,
          [name](const LongOption& option) { return abbreviates(name, option.name); });
      if (long_option != std::end(kLongOptions)) {
        apply(long_option->letter);
        continue;
      }
      if (word[1] == '-') {
        throw UsageError("unknown option \"" + word + "\"; try \"flowbulk help\"");
      }
    }
    for (size_t k = 0; k < name.size(); ++k) {
      // A value follows the word, so only its last letter can take one.
      if ((name[k] == 'f' || name[k] == 'n') && k + 1 != name.size()) {
        throw UsageError(std::string("option -") + name[k] + " needs " + option_value(name[k]));
      }
      apply(name[k]);
    }
  }
  parsed.rest.assign(arguments.begin() + static_cast<std::ptrdiff_t>(i), arguments.end());
  return parsed;
}

// How every failure reaches the user: "Error: MESSAGE" on stderr, after
// whatever was already printed on stdout. The exit status is the Error's;
// anything else thrown (std::bad_alloc, a library's exception) is 1.
int report_failure(Environment& env, const std::exception& failure) {
  env.out.flush();
  env.err << "Error: " << failure.what() << '\n';
  const auto* error = dynamic_cast<const Error*>(&failure);
  return error != nullptr ? error->exit_code() : kExitFailure;
}

void dispatch(Invocation& invocation, const std::vector<std::string>& rest) {
  const std::string object = match_keyword(
      rest.front(),
      {"table", "flowtable", "offload", "attach", "detach", "stats", "monitor", "help"}, "object",
      "");
  Arguments arguments(std::vector<std::string>(rest.begin() + 1, rest.end()), object);
  // The module's commands have no dry run: a check of attach would attach.
  if (invocation.options.check && object != "table" && object != "flowtable" &&
      object != "offload" && object != "help") {
    throw UsageError("-c checks a change to nftables (table, flowtable, offload, -f); \"" + object +
                     "\" has no check mode");
  }
  if (object == "help") {
    emit_usage(invocation, main_usage());
  } else if (object == "table") {
    do_table(invocation, arguments);
  } else if (object == "flowtable") {
    do_flowtable(invocation, arguments);
  } else if (object == "offload") {
    do_offload(invocation, arguments);
  } else if (object == "attach") {
    do_attach(invocation, arguments);
  } else if (object == "detach") {
    do_detach(invocation, arguments);
  } else if (object == "stats") {
    do_stats(invocation, arguments);
  } else {
    do_monitor(invocation, arguments);
  }
}

}  // namespace

int run_flowbulk(const std::vector<std::string>& arguments, Environment& env) {
  try {
    ParsedCommandLine parsed = parse_options(arguments);
    if (parsed.options.netns) {
      // As ip -n: every socket, ours and libnftables', opens in there.
      env.enter_netns(*parsed.options.netns);
    }
    Invocation invocation{env, parsed.options};
    if (parsed.version) {
      if (parsed.options.json) {
        emit_json(invocation, Json{{"version", std::string(tool_version())},
                                   {"genl_family", std::string(genl_family_name())},
                                   {"genl_version", genl_family_version()}});
      } else {
        env.out << "flowbulk " << tool_version() << " (genetlink family " << genl_family_name()
                << " version " << genl_family_version() << ")\n";
      }
      return kExitOk;
    }
    if (parsed.help) {
      emit_usage(invocation, main_usage());
      return kExitOk;
    }
    if (parsed.options.file) {
      if (!parsed.rest.empty()) {
        throw UsageError("-f takes no OBJECT (got \"" + parsed.rest.front() + "\")");
      }
      do_load_file(invocation, *parsed.options.file);
      return kExitOk;
    }
    if (parsed.rest.empty()) {
      env.err << main_usage();
      return kExitUsage;
    }
    dispatch(invocation, parsed.rest);
    return kExitOk;
  } catch (const std::exception& failure) {
    return report_failure(env, failure);
  }
}

}  // namespace flowbulk
