// SPDX-License-Identifier: GPL-2.0
#include "version.h"

#include <nf_flow_bulk.h>

namespace flowbulk {

std::string_view genl_family_name() {
  return NFB_GENL_NAME;
}
unsigned genl_family_version() {
  return NFB_GENL_VERSION;
}
std::string_view tool_version() {
  return FLOWBULK_VERSION;
}

}  // namespace flowbulk
