// SPDX-License-Identifier: GPL-2.0
// -f FILE: an nft ruleset, loaded by libnftables, whose early_ingress
// flowtables are then attached.
#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <ostream>
#include <sstream>
#include <utility>
#include <vector>

#include "commands.h"
#include "deferred_signals.h"
#include "early_ingress.h"
#include "error.h"
#include "input_bounds.h"
#include "names.h"
#include "nfb_client.h"
#include "nft_client.h"
#include "raii.h"
#include "rollback.h"

namespace flowbulk {

namespace {

// A ruleset larger than this is refused instead of read until memory runs
// out (`-f /dev/zero` through a pipe, a runaway generator).
constexpr size_t kMaxRulesetBytes = size_t{64} << 20;

std::string too_large(const std::string& name) {
  return "cannot read " + name + ": larger than " + std::to_string(kMaxRulesetBytes >> 20) + " MiB";
}

// The whole input, read exactly once: libnftables then loads this text from
// memory, so a FIFO, a pipe or `<(...)` work like a file and nothing can
// change between what we look at and what nft loads.
std::string read_ruleset(Invocation& invocation, const std::string& path) {
  if (path == "-") {
    std::string text;
    std::vector<char> chunk(size_t{64} << 10);
    while (invocation.env.in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) ||
           invocation.env.in.gcount() > 0) {
      text.append(chunk.data(), static_cast<size_t>(invocation.env.in.gcount()));
      if (text.size() > kMaxRulesetBytes) {
        throw Error(too_large("standard input"), EFBIG, {}, kExitUsage);
      }
    }
    if (invocation.env.in.bad()) {
      throw Error("cannot read standard input", EIO, {}, kExitUsage);
    }
    return text;
  }
  auto fail = [&path](int saved, const std::string& why) -> Error {
    return Error("cannot read " + path + ": " + why, saved, {}, kExitUsage);
  };
  // Opening a FIFO waits for its writer, as nft -f does.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int saved = errno;
    throw fail(saved, errno_text(saved));
  }
  struct stat info {};
  if (fstat(fd.get(), &info) != 0) {
    const int saved = errno;
    throw fail(saved, errno_text(saved));
  }
  if (S_ISDIR(info.st_mode)) {
    throw fail(EISDIR, "it is a directory");
  }
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode) && !S_ISSOCK(info.st_mode)) {
    throw fail(EINVAL, "not a regular file, FIFO or pipe");
  }
  if (S_ISREG(info.st_mode) && static_cast<uintmax_t>(info.st_size) > kMaxRulesetBytes) {
    throw Error(too_large(path), EFBIG, {}, kExitUsage);
  }
  std::string text;
  std::vector<char> chunk(size_t{64} << 10);
  while (true) {
    const ssize_t n = read(fd.get(), chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      const int saved = errno;
      throw fail(saved, errno_text(saved));
    }
    if (n == 0) {
      break;
    }
    text.append(chunk.data(), static_cast<size_t>(n));
    if (text.size() > kMaxRulesetBytes) {
      throw Error(too_large(path), EFBIG, {}, kExitUsage);
    }
  }
  return text;
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

// Undoes the load after a failed attach: detaches what this command
// attached, then deletes by handle, in one transaction, exactly the objects
// the load created. Returns what happened, for the error message.
std::string roll_back(RulesetEngine& engine, NfbClient& module,
                      const std::vector<FlowtableRef>& attached, const nlohmann::json& before,
                      bool before_exact, const std::string& echoed,
                      const std::vector<FlowtableRef>& flowtables) {
  std::string report;
  for (const FlowtableRef& done : attached) {
    try {
      module.detach(done);
    } catch (const Error& error) {
      report += "flowtable " + done.to_string() + " stays attached (" + error.what() +
                "; flowbulk detach " + done.to_string() + "); ";
    }
  }
  const nlohmann::json echo = nlohmann::json::parse(echoed, nullptr, false);
  if (echo.is_discarded()) {
    return report +
           "cannot tell what the load created (libnftables echoed no JSON): it stays "
           "loaded";
  }
  std::vector<NamedFlowtable> named;
  named.reserve(flowtables.size());
  for (const FlowtableRef& ref : flowtables) {
    named.push_back({.family = family_name(ref.family), .table = ref.table, .name = ref.flowtable});
  }
  const RollbackPlan plan = plan_rollback(before, echo, named, before_exact);
  std::string kept;
  for (const std::string& what : plan.kept) {
    kept += (kept.empty() ? "" : ", ") + what;
  }
  if (!kept.empty()) {
    kept = "; not undone: " + kept;
  }
  if (plan.empty()) {
    return report + "the load created nothing to remove" + kept;
  }
  RulesetEngine::Result removed = engine.run_commands(plan.commands.dump(), true);
  if (removed.ok) {
    const size_t count = plan.command_lines.size();
    return report + "removed the " + std::to_string(count) + (count == 1 ? " object" : " objects") +
           " it created (other changes to the ruleset were left alone)" + kept;
  }
  std::string left;
  for (const std::string& line : plan.command_lines) {
    left += "\n  " + line;
  }
  return report + "removing what it created failed too (" + removed.errors +
         "); it stays loaded, remove it with (in this order):" + left + kept + "\n";
}

}  // namespace

void do_load_file(Invocation& invocation, const std::string& path) {
  const std::string ruleset = read_ruleset(invocation, path);
  const std::string name = path == "-" ? "/dev/stdin" : path;
  const bool json = is_json_ruleset(ruleset);
  check_ruleset_nesting(ruleset, json, name);
  EarlyIngressRewrite rewrite;
  try {
    rewrite = json ? rewrite_early_ingress_json(ruleset) : rewrite_early_ingress(ruleset);
  } catch (const UsageError& error) {
    throw UsageError("cannot load " + name + ": " + error.what());
  }

  std::optional<NfbClient> module;
  std::unique_ptr<RulesetEngine> engine = invocation.env.make_ruleset_engine();
  const bool rewritten = !rewrite.flowtables.empty();
  nlohmann::json before;
  std::optional<NftClient> nft;
  uint32_t listed_generation = 0;
  if (rewritten) {
    // Checked before anything is loaded, so a missing module leaves the
    // ruleset untouched.
    try {
      module.emplace(invocation.env.transports.open(NETLINK_GENERIC));
      module->family_id();
    } catch (const Error& error) {
      fail_with_context(error, "cannot load " + name + " (it has early_ingress flowtables)");
    }
    // Which objects exist now: an object the load echoes that was already
    // here was only updated, and a rollback must leave it. The generation
    // read first tells, after the load, whether anyone else committed in
    // between (then the listing is not what the load found).
    RulesetEngine::Result listing;
    try {
      nft.emplace(invocation.env.transports.open(NETLINK_NETFILTER));
      listed_generation = nft->generation();
      listing = engine->run_commands("list ruleset", true);
    } catch (const Error& error) {
      fail_with_context(error, "cannot read the current ruleset; nothing was loaded");
    }
    before = nlohmann::json::parse(listing.output, nullptr, false);
    if (!listing.ok || before.is_discarded()) {
      throw Error(
          "cannot read the current ruleset (needed to undo the load if an attach "
          "fails); nothing was loaded:\n" +
          listing.errors);
    }
  }

  // From the load to the last attach, or to the end of the rollback: an
  // interrupt here would leave a ruleset loaded and not attached.
  std::optional<DeferredSignals> hold;
  if (rewritten) {
    hold.emplace();
  }

  // From memory, always: the input was read once, above. nft resolves
  // includes the same way for a file and for this text (include paths, and
  // "./" relative to the working directory). With early_ingress flowtables
  // libnftables echoes what the kernel added, with handles, for a rollback.
  RulesetEngine::Result loaded = engine->load_text(rewrite.ruleset, name, json, rewritten);
  if (!loaded.ok) {
    // nft's own message with line and column; nft applied nothing. nft
    // names the file in front of each line and column ("FILE:2:3-11:"), so
    // ours does not name it a second time.
    const std::string errors = rewritten && !json
                                   ? restore_source_lines(loaded.errors, ruleset, rewrite.ruleset)
                                   : loaded.errors;
    const bool named = errors.find(name + ":") != std::string::npos;
    throw Error("cannot load " + (named ? std::string("the ruleset") : name) + ":\n" + errors);
  }

  // Exactly one commit since the listing (the load's): the listing is what
  // the load found. Anything else, or no answer, and the rollback keeps
  // what it cannot prove the load created.
  bool before_exact = false;
  if (rewritten) {
    try {
      before_exact = nft->generation() == listed_generation + 1;
    } catch (const Error&) {
      // Unknown: not exact.
    }
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
      fail_with_context(error, "loaded " + name + " but cannot attach flowtable " +
                                   ref.to_string() + "; " +
                                   roll_back(*engine, *module, attached, before, before_exact,
                                             loaded.output, rewrite.flowtables));
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
