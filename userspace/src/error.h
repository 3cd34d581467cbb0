// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <stdexcept>
#include <string>

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

// Every failure the tool reports. `what()` is the complete message printed
// after "Error: "; errno and the kernel's extack message are kept separately
// so JSON-minded callers and tests can inspect them.
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

 private:
  int sys_errno_;
  std::string extack_;
  int exit_code_;
};

// Bad command line or input rejected before anything was sent to the kernel.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message, 0, {}, kExitUsage) {}
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

}  // namespace flowbulk
