// SPDX-License-Identifier: GPL-2.0
// -f FILE: an nft ruleset, loaded by libnftables, whose early_ingress
// flowtables are then attached.
#include <linux/netlink.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <utility>
#include <vector>

#include "commands.h"
#include "early_ingress.h"
#include "error.h"
#include "names.h"

namespace flowbulk {

namespace {

std::string read_ruleset(Invocation& invocation, const std::string& path) {
  if (path == "-") {
    return {std::istreambuf_iterator<char>(invocation.env.in), std::istreambuf_iterator<char>()};
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int saved = errno;
    throw Error("cannot read " + path + ": " + errno_text(saved), saved, {}, kExitUsage);
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    throw Error("cannot read " + path, EIO, {}, kExitUsage);
  }
  return text.str();
}

// nft quotes the offending source line under its message; show the user's
// line (with early_ingress), not the rewritten one.
std::string restore_source_lines(const std::string& errors, const std::string& original,
                                 const std::string& rewritten) {
  std::vector<std::pair<std::string, std::string>> changed;  // rewritten -> original
  std::istringstream original_lines(original);
  std::istringstream rewritten_lines(rewritten);
  std::string before;
  std::string after;
  while (std::getline(original_lines, before) && std::getline(rewritten_lines, after)) {
    if (before != after) {
      changed.emplace_back(after, before);
    }
  }
  std::istringstream error_lines(errors);
  std::string result;
  std::string line;
  while (std::getline(error_lines, line)) {
    for (const auto& [rewritten_line, original_line] : changed) {
      if (line == rewritten_line) {
        line = original_line;
        break;
      }
    }
    result += (result.empty() ? "" : "\n") + line;
  }
  return result;
}

}  // namespace

void do_load_file(Invocation& invocation, const std::string& path) {
  const std::string ruleset = read_ruleset(invocation, path);
  const EarlyIngressRewrite rewrite = rewrite_early_ingress(ruleset);
  const std::string name = path == "-" ? "/dev/stdin" : path;

  std::optional<NfbClient> module;
  std::unique_ptr<RulesetEngine> engine = invocation.env.make_ruleset_engine();
  std::string previous_ruleset;
  if (!rewrite.flowtables.empty()) {
    // Checked before anything is loaded, so a missing module leaves the
    // ruleset untouched.
    try {
      module.emplace(invocation.env.transports.open(NETLINK_GENERIC));
      module->family_id();
    } catch (const Error& error) {
      fail_with_context(error, "cannot load " + name + " (it has early_ingress flowtables)");
    }
    // What to go back to if an attach fails after the load.
    RulesetEngine::Result listing = engine->run_commands("list ruleset");
    if (!listing.ok) {
      throw Error("cannot read the current ruleset:\n" + listing.errors);
    }
    previous_ruleset = listing.output;
  }

  // Untouched files load straight from disk, exactly as `nft -f` would
  // (relative includes and all); rewritten ones from memory.
  const bool rewritten = !rewrite.flowtables.empty();
  RulesetEngine::Result loaded =
      rewritten || path == "-" ? engine->load_text(rewrite.ruleset, name) : engine->load_file(path);
  if (!loaded.ok) {
    // nft's own message with line and column; nft applied nothing.
    throw Error("cannot load " + name + ":\n" +
                (rewritten ? restore_source_lines(loaded.errors, ruleset, rewrite.ruleset)
                           : loaded.errors));
  }

  std::vector<FlowtableRef> attached;
  for (const FlowtableRef& ref : rewrite.flowtables) {
    try {
      try {
        module->attach(ref);
        attached.push_back(ref);
      } catch (const KernelError& error) {
        // Loading the same file again must work: already attached is the
        // state asked for (and was there before, so a rollback keeps it).
        if (error.sys_errno() != EEXIST) {
          throw;
        }
      }
    } catch (const Error& error) {
      for (const FlowtableRef& done : attached) {
        try {
          module->detach(done);
        } catch (const Error&) {
          // Restoring the ruleset below removes its flowtables anyway.
        }
      }
      RulesetEngine::Result restored = engine->run_commands("flush ruleset\n" + previous_ruleset);
      fail_with_context(error, "loaded " + name + " but cannot attach flowtable " +
                                   ref.to_string() +
                                   (restored.ok ? "; the previous ruleset was restored"
                                                : "; restoring the previous ruleset failed too"));
    }
  }

  if (invocation.options.json) {
    Json list = Json::array();
    for (const FlowtableRef& ref : rewrite.flowtables) {
      list.push_back(flowtable_ref_json(ref));
    }
    emit_json(invocation, Json{{"file", name}, {"attached", list}});
  }
}

}  // namespace flowbulk
