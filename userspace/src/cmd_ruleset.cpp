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
#include "nft_commands.h"
#include "raii.h"

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
        throw UsageError(too_large("standard input"), EFBIG);
      }
    }
    if (invocation.env.in.bad()) {
      throw UsageError("cannot read standard input", EIO);
    }
    return text;
  }
  auto fail = [&path](int saved, const std::string& why) {
    return UsageError("cannot read " + path + ": " + why, saved);
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
    throw UsageError(too_large(path), EFBIG);
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
      throw UsageError(too_large(path), EFBIG);
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

// One early_ingress flowtable that could not be attached.
struct AttachFailure {
  FlowtableRef ref;
  Error error;
};

// The ruleset is loaded and stays so; some of its early_ingress flowtables
// are not attached. Their traffic still goes through the stock flowtable
// at `hook ingress`: a firewall is never weakened because acceleration
// failed.
[[noreturn]] void fail_not_attached(const std::string& name,
                                    const std::vector<AttachFailure>& failures) {
  std::string which;
  std::string commands;
  for (const AttachFailure& failure : failures) {
    which += std::string(which.empty() ? "" : ", ") + "flowtable " + failure.ref.to_string() +
             " (" + failure.error.what() + ")";
    commands +=
        std::string(commands.empty() ? "" : "; ") + "flowbulk attach " + failure.ref.to_string();
  }
  const Error& first = failures.front().error;
  throw Error("loaded " + name + "; not attached: " + which +
                  "; the ruleset stays as loaded (these flowtables work at hook ingress, "
                  "without nf_flow_bulk); attach with: " +
                  commands,
              first.sys_errno(), first.extack(), kExitNotAttached);
}

// -c -f: what nft -c does with the ruleset (the kernel checks it and
// aborts), then what the load would attach and detach. Neither the module
// nor the attachments are asked about.
void check_file(Invocation& invocation, RulesetEngine& engine, const std::string& ruleset,
                const EarlyIngressRewrite& rewrite, const std::string& name, bool json) {
  RulesetEngine::Result checked = engine.check_text(rewrite.ruleset, name, json);
  if (!checked.ok) {
    const std::string errors = !rewrite.flowtables.empty() && !json
                                   ? restore_source_lines(checked.errors, ruleset, rewrite.ruleset)
                                   : checked.errors;
    const bool named = errors.find(name + ":") != std::string::npos;
    throw Error("check of " + (named ? std::string("the ruleset") : name) + " failed:\n" + errors);
  }
  if (invocation.options.json) {
    emit_json(invocation, Json{{"file", name},
                               {"check", true},
                               {"attach", json_array(rewrite.flowtables, flowtable_ref_json)},
                               {"detach", json_array(rewrite.ingress, flowtable_ref_json)}});
    return;
  }
  for (const FlowtableRef& ref : rewrite.flowtables) {
    invocation.env.out << "would attach flowtable " << ref.to_string() << "\n";
  }
  for (const FlowtableRef& ref : rewrite.ingress) {
    invocation.env.out << "would detach flowtable " << ref.to_string()
                       << " if attached (declared hook ingress)\n";
  }
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
    fail_with_context(error, "cannot load " + name);
  }

  if (invocation.options.check) {
    check_file(invocation, *invocation.env.make_ruleset_engine(), ruleset, rewrite, name, json);
    return;
  }
  std::optional<NfbClient> module;
  const bool rewritten = !rewrite.flowtables.empty();
  if (rewritten) {
    // Checked before anything is loaded, so a missing module leaves the
    // ruleset untouched.
    try {
      module.emplace(invocation.env.transports.open(NETLINK_GENERIC));
      module->family_id();
    } catch (const Error& error) {
      fail_with_context(error, "cannot load " + name + " (it has early_ingress flowtables)");
    }
  }

  // From the load to the last attach: an interrupt there would leave the
  // ruleset loaded with flowtables nobody tried to attach and nothing said
  // about it. The attaches finish and the outcome is printed; the signal
  // ends the process after that.
  std::optional<DeferredSignals> hold;
  if (rewritten) {
    hold.emplace();
  }

  // From memory, always: the input was read once, above. nft resolves
  // includes the same way for a file and for this text (include paths, and
  // "./" relative to the working directory). This is exactly `nft -f`: one
  // transaction, and what it does stays, whatever the attaches below do.
  const RulesetEngine::Echo echo = !invocation.options.echo  ? RulesetEngine::Echo::kNone
                                   : invocation.options.json ? RulesetEngine::Echo::kJson
                                                             : RulesetEngine::Echo::kText;
  RulesetEngine::Result loaded =
      invocation.env.make_ruleset_engine()->load_text(rewrite.ruleset, name, json, echo);
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

  // Every flowtable is tried, whatever happened to the one before: each
  // one attached is one more flowtable bulked, and none is ever detached
  // or deleted again because another one failed.
  std::vector<FlowtableRef> attached;
  std::vector<AttachFailure> failures;
  for (const FlowtableRef& ref : rewrite.flowtables) {
    try {
      module->attach(ref);
      attached.push_back(ref);
    } catch (const Error& error) {
      // Loading the same file again must work: already attached is the
      // state asked for.
      if (const auto* kernel = dynamic_cast<const KernelError*>(&error);
          kernel != nullptr && kernel->sys_errno() == EEXIST) {
        attached.push_back(ref);
      } else {
        failures.push_back({.ref = ref, .error = error});
      }
    }
  }

  // What the file declares `hook ingress` is to be the stock flowtable:
  // the flowtable was updated (an attachment follows it through that) or
  // made anew (which the module does not take), and either way an
  // attachment of that name goes. Asking would autoload the module.
  std::vector<FlowtableRef> detached;
  if (!rewrite.ingress.empty() && (module || invocation.env.module_loaded())) {
    try {
      if (!module) {
        module.emplace(invocation.env.transports.open(NETLINK_GENERIC));
      }
      for (const FlowtableRef& ref : rewrite.ingress) {
        try {
          module->detach(ref);
          detached.push_back(ref);
        } catch (const KernelError& error) {
          if (error.sys_errno() != ENOENT) {
            throw;
          }
        }
      }
    } catch (const Error& error) {
      fail_with_context(error,
                        "loaded " + name + " but cannot detach what it declares hook ingress");
    }
  }

  if (invocation.options.json) {
    auto failure_json = [](const AttachFailure& failure) {
      Json entry = flowtable_ref_json(failure.ref);
      entry["error"] = failure.error.what();
      entry["errno"] = failure.error.sys_errno();
      return entry;
    };
    Json body{{"file", name},
              {"loaded", true},
              {"attached", json_array(attached, flowtable_ref_json)},
              {"failed", json_array(failures, failure_json)},
              {"detached", json_array(detached, flowtable_ref_json)}};
    if (invocation.options.echo) {
      // libnftables' echo (`nft -j -e -a`): what the file changed, with handles.
      body["echo"] = echoed_commands(loaded.output);
    }
    emit_json(invocation, body);
  } else {
    // libnftables' echo as `nft -e -a` prints it.
    invocation.env.out << loaded.output;
    for (const FlowtableRef& ref : detached) {
      invocation.env.out << "detached flowtable " << ref.to_string() << ": " << name
                         << " declares it hook ingress\n";
    }
  }
  if (!failures.empty()) {
    fail_not_attached(name, failures);
  }
}

}  // namespace flowbulk
