// SPDX-License-Identifier: GPL-2.0
#include "nftables_engine.h"

#include <nftables/libnftables.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "error.h"
#include "raii.h"

namespace flowbulk {

namespace {

struct NftContextDeleter {
  void operator()(nft_ctx* context) const { nft_ctx_free(context); }
};
using NftContextPtr = std::unique_ptr<nft_ctx, NftContextDeleter>;

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

class LibnftablesEngine final : public RulesetEngine {
 public:
  Result run_commands(const std::string& commands, bool json, bool check) override {
    NftContextPtr context = make_context();
    nft_ctx_set_dry_run(context.get(), check);
    if (json) {
      // ECHO: for JSON commands, the output is the commands with the handles
      // the kernel gave the objects they created.
      nft_ctx_output_set_flags(context.get(), NFT_CTX_OUTPUT_JSON | NFT_CTX_OUTPUT_HANDLE |
                                                  NFT_CTX_OUTPUT_TERSE | NFT_CTX_OUTPUT_ECHO);
    }
    return collect(context.get(), nft_run_cmd_from_buffer(context.get(), commands.c_str()));
  }

  Result list_json(const std::string& commands) override {
    NftContextPtr context = make_context();
    nft_ctx_output_set_flags(context.get(), NFT_CTX_OUTPUT_JSON | NFT_CTX_OUTPUT_HANDLE |
                                                NFT_CTX_OUTPUT_TERSE |
                                                NFT_CTX_OUTPUT_NUMERIC_PROTO);
    return collect(context.get(), nft_run_cmd_from_buffer(context.get(), commands.c_str()));
  }

  Result load_text(const std::string& ruleset, const std::string& display_name, bool json,
                   Echo echo) override {
    return load(ruleset, display_name, json, false, echo);
  }

  Result check_text(const std::string& ruleset, const std::string& display_name,
                    bool json) override {
    return load(ruleset, display_name, json, true, Echo::kNone);
  }

 private:
  Result load(const std::string& ruleset, const std::string& display_name, bool json, bool dry_run,
              Echo echo) {
    // libnftables prints line numbers only for files (a buffer is treated
    // as one command line), so the text goes through an anonymous in-memory
    // file: no temporary file on disk to leak or race on.
    UniqueFd memory(memfd_create("flowbulk-ruleset", MFD_CLOEXEC));
    if (memory.get() < 0) {
      throw system_error("cannot create an in-memory file", errno);
    }
    size_t written = 0;
    while (written < ruleset.size()) {
      const ssize_t n = write(memory.get(), ruleset.data() + written, ruleset.size() - written);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        throw system_error("cannot write the in-memory ruleset", errno);
      }
      written += static_cast<size_t>(n);
    }
    const std::string path = "/proc/self/fd/" + std::to_string(memory.get());
    NftContextPtr context = make_context();
    nft_ctx_set_dry_run(context.get(), dry_run);
    unsigned int flags = 0;
    if (json || echo == Echo::kJson) {
      // libnftables 1.0.6 has no input flag: it tries its JSON parser
      // first only when the output is JSON (what `nft -j -f` sets), and
      // falls back to nft syntax when the text is not JSON.
      flags |= NFT_CTX_OUTPUT_JSON;
    }
    if (echo != Echo::kNone) {
      flags |= NFT_CTX_OUTPUT_ECHO | NFT_CTX_OUTPUT_HANDLE;
    }
    nft_ctx_output_set_flags(context.get(), flags);
    Result result = collect(context.get(), nft_run_cmd_from_filename(context.get(), path.c_str()));
    replace_all(result.errors, path, display_name);
    return result;
  }

  static NftContextPtr make_context() {
    NftContextPtr context(nft_ctx_new(NFT_CTX_DEFAULT));
    if (!context) {
      throw Error("cannot create a libnftables context", ENOMEM);
    }
    // Both streams into buffers: errors are reported by us, on stderr.
    nft_ctx_buffer_output(context.get());
    nft_ctx_buffer_error(context.get());
    return context;
  }

  static Result collect(nft_ctx* context, int status) {
    Result result;
    result.ok = status == 0;
    if (const char* output = nft_ctx_get_output_buffer(context)) {
      result.output = output;
    }
    if (const char* errors = nft_ctx_get_error_buffer(context)) {
      result.errors = errors;
    }
    while (!result.errors.empty() && result.errors.back() == '\n') {
      result.errors.pop_back();
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<RulesetEngine> make_libnftables_engine() {
  return std::make_unique<LibnftablesEngine>();
}

}  // namespace flowbulk
