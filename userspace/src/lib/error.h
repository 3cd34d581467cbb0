// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace flowbulk {

// Process exit codes. Scripts tell "the kernel (or nft) said no" apart from
// "the command line is wrong" without parsing messages.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // the operation was tried and failed
  kExitUsage = 2,    // bad command line or bad input; nothing was sent
  // -f: the ruleset is loaded (and stays so) but an early_ingress flowtable
  // of it is not attached to the module.
  kExitNotAttached = 3,
};

// Every failure the tool reports is thrown as an Error (or one of the
// classes below) and reported in one place, run_flowbulk(): `what()` is the
// complete message printed after "Error: ", exit_code() the process's exit
// status. errno and the kernel's extack message are kept separately so
// JSON-minded callers and tests can inspect them. A failure is made
// with a constructor below, system_error() for a failed system call, and
// gains "what failed" on its way up with fail_with_context().
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int sys_errno = 0, std::string extack = {},
                 int exit_code = kExitFailure)
      : std::runtime_error(message),
        sys_errno_(sys_errno),
        extack_(std::move(extack)),
        exit_code_(exit_code) {}

  int sys_errno() const { return sys_errno_; }
  const std::string& extack() const { return extack_; }
  int exit_code() const { return exit_code_; }

  // The same failure (errno, extack, exit status) told with `message`.
  Error with_message(const std::string& message) const {
    return Error(message, sys_errno_, extack_, exit_code_);
  }

 private:
  int sys_errno_;
  std::string extack_;
  int exit_code_;
};

// Bad command line or input rejected before anything was sent to the kernel;
// `sys_errno` when a system call said why (an unreadable -f FILE).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message, int sys_errno = 0)
      : Error(message, sys_errno, {}, kExitUsage) {}
};

// A netlink request the kernel answered with an error.
class KernelError : public Error {
 public:
  KernelError(int sys_errno, const std::string& extack)
      : Error(describe(sys_errno, extack), sys_errno, extack) {}

  // "File exists" or "File exists (extack: table already there)".
  static std::string describe(int sys_errno, const std::string& extack);
};

// "No such file or directory (ENOENT, errno 2)".
std::string errno_text(int sys_errno);

// A failed system call: "WHAT: No such file or directory (ENOENT, errno 2)".
Error system_error(const std::string& what, int sys_errno);

// Adds "what failed" to an error: "CONTEXT: [HINT: ]MESSAGE", keeping errno,
// extack and exit status.
[[noreturn]] void fail_with_context(const Error& error, const std::string& context,
                                    std::string_view hint = {});

}  // namespace flowbulk
