// SPDX-License-Identifier: GPL-2.0
#include "error.h"

#include <cstring>
#include <string>

namespace flowbulk {

namespace {

const char* errno_name(int sys_errno) {
  switch (sys_errno) {
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EINTR:
      return "EINTR";
    case EIO:
      return "EIO";
    case ENOMEM:
      return "ENOMEM";
    case EACCES:
      return "EACCES";
    case EBUSY:
      return "EBUSY";
    case EEXIST:
      return "EEXIST";
    case ENODEV:
      return "ENODEV";
    case EINVAL:
      return "EINVAL";
    case ENOSPC:
      return "ENOSPC";
    case ERANGE:
      return "ERANGE";
    case ENAMETOOLONG:
      return "ENAMETOOLONG";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case EAFNOSUPPORT:
      return "EAFNOSUPPORT";
    case EPROTONOSUPPORT:
      return "EPROTONOSUPPORT";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EAGAIN:
      return "EAGAIN";
    case E2BIG:
      return "E2BIG";
    case ENOBUFS:
      return "ENOBUFS";
    default:
      return nullptr;
  }
}

}  // namespace

std::string errno_text(int sys_errno) {
  std::string text = std::strerror(sys_errno);
  text += " (";
  if (const char* name = errno_name(sys_errno)) {
    text += name;
    text += ", ";
  }
  text += "errno " + std::to_string(sys_errno) + ")";
  return text;
}

Error system_error(const std::string& what, int sys_errno) {
  return Error(what + ": " + errno_text(sys_errno), sys_errno);
}

void fail_with_context(const Error& error, const std::string& context, std::string_view hint) {
  std::string message = context + ": ";
  if (!hint.empty()) {
    message += std::string(hint) + ": ";
  }
  message += error.what();
  throw error.with_message(message);
}

std::string KernelError::describe(int sys_errno, const std::string& extack) {
  if (extack.empty()) {
    return errno_text(sys_errno);
  }
  return extack + ": " + errno_text(sys_errno);
}

}  // namespace flowbulk
