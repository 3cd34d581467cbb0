// SPDX-License-Identifier: GPL-2.0
#pragma once

// The whole tool in a box: scripted netlink, fake devices, fake libnftables,
// captured stdout/stderr.

#include <gtest/gtest.h>
#include <linux/netlink.h>

#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "cli.h"
#include "fake_kernel.h"
#include "fake_nft_kernel.h"
#include "fake_nft_socket.h"
#include "nftables_engine.h"
#include "replay_transport.h"

namespace flowbulk::testing {

struct FakeEngineState {
  std::vector<std::string> calls;
  RulesetEngine::Result load_result{.ok = true, .output = {}, .errors = {}};
  // Answers to the next run_commands().
  std::vector<RulesetEngine::Result> run_results;
  std::string loaded_text;
  // Runs at each load_text(), as the load happens.
  std::function<void()> on_load;
};

class FakeEngine final : public RulesetEngine {
 public:
  explicit FakeEngine(FakeEngineState& state) : state_(state) {}
  Result run_commands(const std::string& commands, bool json, bool check) override {
    state_.calls.push_back(std::string(check ? "check " : "") + (json ? "json: " : "commands: ") +
                           commands);
    Result result{.ok = true, .output = {}, .errors = {}};
    if (!state_.run_results.empty()) {
      result = state_.run_results.front();
      state_.run_results.erase(state_.run_results.begin());
    }
    return result;
  }
  Result list_json(const std::string& commands) override {
    state_.calls.push_back("list: " + commands);
    return Result{.ok = false, .output = {}, .errors = "the fake libnftables lists nothing"};
  }
  Result load_text(const std::string& ruleset, const std::string& display_name, bool json,
                   Echo echo) override {
    state_.calls.push_back(std::string(echo == Echo::kNone   ? ""
                                       : echo == Echo::kText ? "echo "
                                                             : "json echo ") +
                           (json ? "json text: " : "text: ") + display_name);
    state_.loaded_text = ruleset;
    if (state_.on_load) {
      state_.on_load();
    }
    return state_.load_result;
  }
  Result check_text(const std::string& ruleset, const std::string& display_name,
                    bool json) override {
    state_.calls.push_back(std::string(json ? "json " : "") + "check: " + display_name);
    state_.loaded_text = ruleset;
    return state_.load_result;
  }

 private:
  FakeEngineState& state_;
};

class CliTest : public ::testing::Test {
 protected:
  CliTest()
      : env_{.transports = transports_,
             .out = out_,
             .err = err_,
             .in = in_,
             .device_exists = [this](const std::string& name) { return devices_.contains(name); },
             .module_loaded = [this] { return module_loaded_; },
             .make_ruleset_engine = [this]() -> std::unique_ptr<RulesetEngine> {
               if (nft_socket_) {
                 return make_libnftables_engine();
               }
               return std::make_unique<FakeEngine>(engine_);
             },
             .sleep =
                 [this](double seconds) {
                   sleeps_.push_back(seconds);
                   clock_ += seconds * clock_stretch_;
                   return interrupt_after_ < 0 ||
                          static_cast<int>(sleeps_.size()) <= interrupt_after_;
                 },
             .catch_interrupts = [] {},
             .monotonic_seconds = [this] { return clock_; },
             .clock_text = [] { return std::string("12:00:00"); },
             .enter_netns =
                 [this](const std::string& name) {
                   netns_entered_.push_back(name);
                   opened_before_netns_ = opened_before_netns_ || !nothing_opened();
                 }} {}

  int run(const std::vector<std::string>& arguments) {
    out_.str({});
    err_.str({});
    return run_flowbulk(arguments, env_);
  }

  ReplayTransport& genl() { return transports_.transport(NETLINK_GENERIC); }
  // nf_tables answered by the semantic fake instead of a script, for the
  // tool's own dumps and for the real libnftables it changes objects with.
  FakeNftKernel& nft_kernel() {
    transports_.serve(NETLINK_NETFILTER, nft_kernel_);
    if (!nft_socket_) {
      nft_socket_.emplace(nft_kernel_);
    }
    return nft_kernel_;
  }
  ReplayTransport& nft() { return transports_.transport(NETLINK_NETFILTER); }
  bool nothing_opened() const {
    return transports_.opened(NETLINK_GENERIC) == 0 && transports_.opened(NETLINK_NETFILTER) == 0;
  }
  std::string out() const { return out_.str(); }
  std::string err() const { return err_.str(); }

  ReplayTransportFactory transports_;
  FakeNftKernel nft_kernel_;
  std::optional<FakeNftSocketScope> nft_socket_;
  std::ostringstream out_;
  std::ostringstream err_;
  std::istringstream in_;
  std::set<std::string> devices_{"eth0", "eth1", "lo"};
  bool module_loaded_ = false;
  std::vector<std::string> netns_entered_;  // -n, in order
  bool opened_before_netns_ = false;        // a socket opened before -n's setns
  FakeEngineState engine_;
  std::vector<double> sleeps_;
  int interrupt_after_ = -1;
  double clock_ = 1000.0;       // the fake monotonic clock, moved by sleep()
  double clock_stretch_ = 1.0;  // how much longer than asked a sleep takes
  Environment env_;
};

}  // namespace flowbulk::testing
