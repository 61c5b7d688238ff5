// Compiles oneflow_c.h as C++17 (-Wall -Wextra -Werror): the header must be usable from C++ too.
#include "oneflow_c.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_same_v<decltype(&oneflow_session_run),
                             oneflow_status_t (*)(oneflow_session_t*, const char* const*, const oneflow_tensor_t* const*,
                                                  size_t, const char* const*, size_t, oneflow_tensor_t**, size_t)>,
              "oneflow_session_run keeps its signature");
static_assert(ONEFLOW_DTYPE_BF16 == 16 && ONEFLOW_INTERNAL == 8, "ABI values are stable");

int main() {
  oneflow_value_info_t info;
  oneflow_value_info_init(&info);
  oneflow_session_options_t options;
  oneflow_session_options_init(&options);
  if (info.struct_size != sizeof info || options.optimization_level != 2) return 1;
  if (oneflow_api_version() < ONEFLOW_API_VERSION || std::strlen(oneflow_version()) == 0) return 1;
  std::printf("C++ header test: oneflow %s\n", oneflow_version());
  return 0;
}
