// SPDX-License-Identifier: GPL-2.0
#include "netns.h"

#include <fcntl.h>
#include <sched.h>

#include <cerrno>

#include "error.h"
#include "raii.h"

namespace flowbulk {

void enter_named_netns(const std::string& name, const std::string& directory) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    throw UsageError("invalid network namespace name \"" + name + "\"");
  }
  const std::string path = directory + "/" + name;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int saved = errno;
    throw system_error("cannot open network namespace \"" + name + "\"", saved);
  }
  if (setns(fd.get(), CLONE_NEWNET) != 0) {
    const int saved = errno;
    throw system_error("cannot enter network namespace \"" + name + "\"", saved);
  }
}

}  // namespace flowbulk
