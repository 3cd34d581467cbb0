// SPDX-License-Identifier: GPL-2.0
#include <net/if.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "environment.h"
#include "netns.h"
#include "nftables_engine.h"

namespace flowbulk {

namespace {

// Set by the signal handler; sleep_seconds() reports it.
volatile std::sig_atomic_t interrupt_requested = 0;

void on_interrupt(int /*signal*/) {
  interrupt_requested = 1;
}

void catch_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the signal must end nanosleep()
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool sleep_seconds(double seconds) {
  timespec remaining{};
  remaining.tv_sec = static_cast<time_t>(seconds);
  remaining.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
  // catch_interrupts() installs the handler without SA_RESTART, so a signal
  // ends the sleep early; the flag also catches one that arrived while we
  // were talking to the kernel.
  return interrupt_requested == 0 && nanosleep(&remaining, &remaining) == 0 &&
         interrupt_requested == 0;
}

double monotonic_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

std::string local_time_text() {
  const time_t now = time(nullptr);
  tm local{};
  localtime_r(&now, &local);
  char text[16];
  strftime(text, sizeof(text), "%H:%M:%S", &local);
  return text;
}

// What nft's listing calls the table's "progname": /proc/net/netlink gives
// the socket inode of a port id, a process's fd links name the inode.
std::string netlink_owner(uint32_t portid) {
  constexpr int kNetlinkNetfilter = 12;
  std::ifstream sockets("/proc/net/netlink");
  std::string line;
  std::getline(sockets, line);  // the header
  std::string inode;
  while (inode.empty() && std::getline(sockets, line)) {
    std::istringstream fields(line);
    std::string address;
    int protocol = -1;
    uint64_t port = 0;
    std::string skip;
    fields >> address >> protocol >> port;
    for (int column = 0; column < 6; ++column) {
      fields >> skip;  // groups, rmem, wmem, dump, locks, drops
    }
    std::string found;
    if (fields >> found && protocol == kNetlinkNetfilter && port == portid) {
      inode = found;
    }
  }
  if (inode.empty()) {
    return {};
  }
  const std::string target = "socket:[" + inode + "]";
  std::error_code error;
  for (const auto& process : std::filesystem::directory_iterator("/proc", error)) {
    const std::string pid = process.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::error_code fd_error;
    for (const auto& fd : std::filesystem::directory_iterator(process.path() / "fd", fd_error)) {
      std::error_code link_error;
      if (std::filesystem::read_symlink(fd.path(), link_error) == target) {
        std::string name;
        std::getline(std::ifstream(process.path() / "comm"), name);
        return "process " + pid + (name.empty() ? "" : " (" + name + ")");
      }
    }
  }
  return {};
}

}  // namespace

RealEnvironment::RealEnvironment() : transports_(std::make_unique<MnlTransportFactory>()) {
  environment_ = std::make_unique<Environment>(Environment{
      .transports = *transports_,
      .out = std::cout,
      .err = std::cerr,
      .in = std::cin,
      .device_exists =
          [](const std::string& ifname) { return if_nametoindex(ifname.c_str()) != 0; },
      .module_loaded =
          [] {
            struct stat info {};
            return stat("/sys/module/nf_flow_bulk", &info) == 0;
          },
      .make_ruleset_engine = make_libnftables_engine,
      .sleep = sleep_seconds,
      .catch_interrupts = catch_interrupts,
      .monotonic_seconds = monotonic_now,
      .clock_text = local_time_text,
      .netlink_owner = netlink_owner,
      .enter_netns = [](const std::string& name) { enter_named_netns(name); },
  });
}

RealEnvironment::~RealEnvironment() = default;

}  // namespace flowbulk
