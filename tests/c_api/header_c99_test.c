/* Compiles oneflow_c.h as strict C99 (-std=c99 -pedantic -Wall -Werror) and touches every type. */
#include "oneflow_c.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  oneflow_value_info_t info;
  oneflow_session_options_t options;
  oneflow_status_t status = NULL;
  oneflow_code_t code = ONEFLOW_OK;
  oneflow_dtype_t dtype = ONEFLOW_DTYPE_F32;
  oneflow_deleter_fn deleter = NULL;
  oneflow_env_t* env = NULL;
  oneflow_tensor_t* tensor = NULL;
  oneflow_graph_t* graph = NULL;
  oneflow_session_t* session = NULL;

  oneflow_value_info_init(&info);
  oneflow_session_options_init(&options);
  if (info.struct_size != sizeof info || options.struct_size != sizeof options) return 1;
  if (oneflow_status_code(status) != code || oneflow_dtype_size(dtype) != 4) return 1;
  if (deleter || env || tensor || graph || session) return 1;
  if (oneflow_api_version() < ONEFLOW_API_VERSION || strlen(oneflow_version()) == 0) return 1;
  printf("C99 header test: oneflow %s\n", oneflow_version());
  return 0;
}
