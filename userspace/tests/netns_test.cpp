// SPDX-License-Identifier: GPL-2.0
#include "netns.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "error.h"

namespace flowbulk {
namespace {

std::string message_of(const std::string& name, const std::string& directory) {
  try {
    enter_named_netns(name, directory);
  } catch (const UsageError& error) {
    return std::string("usage: ") + error.what();
  } catch (const Error& error) {
    return error.what();
  }
  return "entered";
}

// As ip -n: a name is one file in /run/netns; one that does not exist, or
// is no namespace, is said so by name. Nothing here enters a namespace.
TEST(Netns, MissingOrNoNamespaceIsAClearError) {
  const std::string directory = ::testing::TempDir();
  EXPECT_EQ(message_of("flowbulk-no-such-netns", directory),
            "cannot open network namespace \"flowbulk-no-such-netns\": No such file or directory "
            "(ENOENT, errno 2)");
  { std::ofstream file(directory + "/flowbulk-not-a-netns"); }
  EXPECT_EQ(message_of("flowbulk-not-a-netns", directory),
            "cannot enter network namespace \"flowbulk-not-a-netns\": Invalid argument (EINVAL, "
            "errno 22)");
}

TEST(Netns, NamesThatAreNotOneFileAreRefused) {
  for (const char* name : {"", ".", "..", "a/b", "../x"}) {
    EXPECT_EQ(message_of(name, "/run/netns"),
              "usage: invalid network namespace name \"" + std::string(name) + "\"")
        << name;
  }
}

}  // namespace
}  // namespace flowbulk
