/* dlpack_abi.h — the DLPack data structures (https://dmlc.github.io/dlpack/latest/c_api.html), written
 * from the published specification: only what the binding exchanges (CPU tensors, versions 0.x and 1.x). */
#ifndef ONEFLOW_PY_DLPACK_ABI_H_
#define ONEFLOW_PY_DLPACK_ABI_H_

#include <stdint.h>

/* The DLPack version this binding produces. */
#define OFPY_DLPACK_MAJOR 1
#define OFPY_DLPACK_MINOR 0

enum { OFPY_DL_CPU = 1 }; /* DLDeviceType kDLCPU */

/* DLDataTypeCode */
enum { OFPY_DL_INT = 0, OFPY_DL_UINT = 1, OFPY_DL_FLOAT = 2, OFPY_DL_BFLOAT = 4, OFPY_DL_BOOL = 6 };

/* DLManagedTensorVersioned.flags */
#define OFPY_DL_FLAG_READ_ONLY (UINT64_C(1) << 0)
#define OFPY_DL_FLAG_IS_COPIED (UINT64_C(1) << 1)

typedef struct {
  int32_t device_type;
  int32_t device_id;
} ofpy_DLDevice;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} ofpy_DLDataType;

typedef struct {
  void* data;
  ofpy_DLDevice device;
  int32_t ndim;
  ofpy_DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* in elements; NULL means compact row-major */
  uint64_t byte_offset;
} ofpy_DLTensor;

/* The pre-1.0 managed tensor, exchanged in a capsule named "dltensor". */
typedef struct ofpy_DLManagedTensor {
  ofpy_DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct ofpy_DLManagedTensor* self);
} ofpy_DLManagedTensor;

typedef struct {
  uint32_t major;
  uint32_t minor;
} ofpy_DLPackVersion;

/* The 1.x managed tensor, exchanged in a capsule named "dltensor_versioned". */
typedef struct ofpy_DLManagedTensorVersioned {
  ofpy_DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct ofpy_DLManagedTensorVersioned* self);
  uint64_t flags;
  ofpy_DLTensor dl_tensor;
} ofpy_DLManagedTensorVersioned;

#endif /* ONEFLOW_PY_DLPACK_ABI_H_ */
