// SPDX-License-Identifier: GPL-2.0
#include "fake_nft_socket.h"

#include <dlfcn.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <set>

namespace {

flowbulk::testing::FakeNftKernel* g_kernel = nullptr;

}  // namespace

// Completes libmnl's opaque type for the sockets made here.
struct mnl_socket {
  int fd = -1;    // libnftables' end: it sends, selects and reads here
  int peer = -1;  // the fake kernel's end: replies are written here
  flowbulk::testing::FakeNftKernel* kernel = nullptr;
};

namespace {

std::mutex g_lock;
std::set<mnl_socket*> g_sockets;

mnl_socket* socket_of_fd(int fd) {
  const std::lock_guard<std::mutex> guard(g_lock);
  for (mnl_socket* socket : g_sockets) {
    if (socket->fd == fd) {
      return socket;
    }
  }
  return nullptr;
}

// What the kernel does inside sendmsg(): process, then queue the replies.
ssize_t deliver(const mnl_socket* socket, const uint8_t* data, size_t size) {
  socket->kernel->send(std::span<const uint8_t>(data, size));
  while (socket->kernel->has_replies()) {
    const flowbulk::Datagram reply = socket->kernel->receive();
    if (send(socket->peer, reply.data(), reply.size(), 0) < 0) {
      return -1;
    }
  }
  return static_cast<ssize_t>(size);
}

}  // namespace

namespace flowbulk::testing {

FakeNftSocketScope::FakeNftSocketScope(FakeNftKernel& kernel) {
  g_kernel = &kernel;
}

FakeNftSocketScope::~FakeNftSocketScope() {
  g_kernel = nullptr;
}

}  // namespace flowbulk::testing

extern "C" {

mnl_socket* mnl_socket_open2(int bus, int /*flags*/) {
  if (bus != NETLINK_NETFILTER || g_kernel == nullptr) {
    errno = EPERM;  // a unit test never opens a real netlink socket
    return nullptr;
  }
  int ends[2];
  // SEQPACKET keeps message boundaries and ignores the netlink address
  // libnftables puts on its sendmsg().
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return nullptr;
  }
  auto* socket = new mnl_socket{.fd = ends[0], .peer = ends[1], .kernel = g_kernel};
  const std::lock_guard<std::mutex> guard(g_lock);
  g_sockets.insert(socket);
  return socket;
}

mnl_socket* mnl_socket_open(int bus) {
  return mnl_socket_open2(bus, 0);
}

mnl_socket* mnl_socket_fdopen(int /*fd*/) {
  errno = EPERM;
  return nullptr;
}

int mnl_socket_bind(mnl_socket* /*nl*/, unsigned int /*groups*/, pid_t /*pid*/) {
  return 0;
}

int mnl_socket_close(mnl_socket* nl) {
  {
    const std::lock_guard<std::mutex> guard(g_lock);
    g_sockets.erase(nl);
  }
  close(nl->fd);
  close(nl->peer);
  delete nl;
  return 0;
}

int mnl_socket_get_fd(const mnl_socket* nl) {
  return nl->fd;
}

unsigned int mnl_socket_get_portid(const mnl_socket* nl) {
  return nl->kernel->port_id();
}

ssize_t mnl_socket_sendto(const mnl_socket* nl, const void* request, size_t size) {
  return deliver(nl, static_cast<const uint8_t*>(request), size);
}

ssize_t mnl_socket_recvfrom(const mnl_socket* nl, void* buffer, size_t size) {
  msghdr message{};
  iovec part{.iov_base = buffer, .iov_len = size};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  const ssize_t received = recvmsg(nl->fd, &message, 0);
  if (received >= 0 && (message.msg_flags & MSG_TRUNC) != 0) {
    errno = ENOSPC;  // as libmnl
    return -1;
  }
  return received;
}

int mnl_socket_setsockopt(const mnl_socket* /*nl*/, int /*type*/, void* /*buffer*/,
                          socklen_t /*length*/) {
  return 0;  // NETLINK_EXT_ACK and friends: the fake always acks that way
}

int mnl_socket_getsockopt(const mnl_socket* /*nl*/, int /*type*/, void* /*buffer*/,
                          socklen_t* /*length*/) {
  errno = ENOPROTOOPT;
  return -1;
}

// libnftables 1.0.6 leaks the jansson tree of a JSON command that fails
// (under LeakSanitizer every leaked block of a failing flowbulk command is
// a jansson object allocated for libnftables): a leak inside the library,
// once per failed command of a process that then exits, which LeakSanitizer
// would report for every test of a failing command. Only jansson's
// allocations are exempt; the tool itself does not use jansson.
const char* __lsan_default_suppressions() {  // NOLINT(bugprone-reserved-identifier)
  return "leak:libjansson.so\n";
}

// libnftables sends its batches with sendmsg() on mnl_socket_get_fd().
ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  if (mnl_socket* socket = socket_of_fd(fd)) {
    std::vector<uint8_t> bytes;
    for (size_t i = 0; i < message->msg_iovlen; ++i) {
      const auto* base = static_cast<const uint8_t*>(message->msg_iov[i].iov_base);
      bytes.insert(bytes.end(), base, base + message->msg_iov[i].iov_len);
    }
    return deliver(socket, bytes.data(), bytes.size());
  }
  using SendMsg = ssize_t (*)(int, const msghdr*, int);
  static const auto real = reinterpret_cast<SendMsg>(dlsym(RTLD_NEXT, "sendmsg"));
  return real(fd, message, flags);
}

}  // extern "C"
