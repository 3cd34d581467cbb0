// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "transport.h"

namespace flowbulk {

// libnftables behind an interface: the real one loads rulesets into the
// kernel; unit tests put a fake here.
class RulesetEngine {
 public:
  struct Result {
    bool ok = false;
    std::string output;  // what nft printed (listings)
    std::string errors;  // nft's error text, with locations
  };
  // -e of a load: nothing, what nft -e prints, or what nft -j -e prints.
  enum class Echo { kNone, kText, kJson };
  virtual ~RulesetEngine() = default;
  // nft commands from a string, applied as one transaction. `json`: JSON
  // output with handles and without set elements (`nft -j -t`), JSON
  // commands accepted, and what they create echoed with its handle
  // (`nft -e`). `check`: `nft -c`, the kernel checks and applies nothing.
  virtual Result run_commands(const std::string& commands, bool json, bool check) = 0;
  // nft JSON commands that list (`nft -j -a -t -p`): the output is nft's
  // JSON listing, with handles, without the elements of named sets, and
  // with layer 4 protocols as numbers.
  virtual Result list_json(const std::string& commands) = 0;
  // `nft -f` of a ruleset held in memory; error locations name
  // `display_name` with the line and column in `ruleset`. `json`: the
  // ruleset is nft JSON (`nft -j -f`). `echo`: the output is what
  // `nft -e -a` (kText) or `nft -j -e -a` (kJson) prints of what was loaded.
  virtual Result load_text(const std::string& ruleset, const std::string& display_name, bool json,
                           Echo echo) = 0;
  // `nft -c -f`: the same, evaluated and sent to the kernel, which checks
  // it and then aborts the transaction (libnftables' dry run): nothing is
  // applied.
  virtual Result check_text(const std::string& ruleset, const std::string& display_name,
                            bool json) = 0;
};

// Everything the command layer touches outside its own memory, so the whole
// tool runs in unit tests against scripted netlink and fake files/devices.
struct Environment {
  TransportFactory& transports;
  std::ostream& out;
  std::ostream& err;
  std::istream& in;  // `-f -`
  std::function<bool(const std::string& ifname)> device_exists;
  // Whether nf_flow_bulk is loaded now (without triggering an autoload).
  std::function<bool()> module_loaded;
  std::function<std::unique_ptr<RulesetEngine>()> make_ruleset_engine;
  // Sleeps; returns false if interrupted (SIGINT) before the time was up.
  std::function<bool(double seconds)> sleep;
  // From now on SIGINT/SIGTERM end sleep() instead of the process (monitor).
  std::function<void()> catch_interrupts;
  // A monotonic clock in seconds: monitor divides by the interval it
  // measured, not the one it asked sleep() for.
  std::function<double()> monotonic_seconds;
  // Wall clock as "HH:MM:SS" for monitor lines.
  std::function<std::string()> clock_text;
  // The process holding the netlink socket with this port id, as
  // "process PID (COMM)"; empty when none is found.
  std::function<std::string(uint32_t portid)> netlink_owner = {};
  // -n NETNS: moves the process into that named network namespace
  // (enter_named_netns()); called before any socket is opened.
  std::function<void(const std::string& name)> enter_netns;
};

// The real process environment (stdout, sockets, if_nametoindex, ...).
struct RealEnvironment {
  RealEnvironment();
  ~RealEnvironment();
  RealEnvironment(const RealEnvironment&) = delete;
  RealEnvironment& operator=(const RealEnvironment&) = delete;
  Environment& get() { return *environment_; }

 private:
  std::unique_ptr<TransportFactory> transports_;
  std::unique_ptr<Environment> environment_;
};

}  // namespace flowbulk
