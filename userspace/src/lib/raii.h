// SPDX-License-Identifier: GPL-2.0
#pragma once

// Ownership of the C libraries' objects, and nothing more: the objects are
// still used through their own C API (no second object model on top).

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/flowtable.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <unistd.h>

#include <memory>

namespace flowbulk {

template <auto FreeFunction>
struct CDeleter {
  template <typename T>
  void operator()(T* object) const {
    FreeFunction(object);
  }
};

using MnlSocketPtr = std::unique_ptr<mnl_socket, CDeleter<mnl_socket_close>>;
using MnlBatchPtr = std::unique_ptr<mnl_nlmsg_batch, CDeleter<mnl_nlmsg_batch_stop>>;
using NftnlTablePtr = std::unique_ptr<nftnl_table, CDeleter<nftnl_table_free>>;
using NftnlChainPtr = std::unique_ptr<nftnl_chain, CDeleter<nftnl_chain_free>>;
using NftnlRulePtr = std::unique_ptr<nftnl_rule, CDeleter<nftnl_rule_free>>;
using NftnlExprPtr = std::unique_ptr<nftnl_expr, CDeleter<nftnl_expr_free>>;
using NftnlFlowtablePtr = std::unique_ptr<nftnl_flowtable, CDeleter<nftnl_flowtable_free>>;
using NftnlSetPtr = std::unique_ptr<nftnl_set, CDeleter<nftnl_set_free>>;

// A file descriptor, closed on scope exit (negative: none).
class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace flowbulk
