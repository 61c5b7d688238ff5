// The native model/checkpoint format (.ofm): a flatbuffer (ofm.fbs) plus 64-byte-aligned raw weight
// segments, loaded by mmap with zero-copy weights. docs/native-format.md describes the layout.
//
// API STABILITY: the declarations in this header are a stable interface other areas build on
// (training saves checkpoints through WriteCheckpoint/ReadCheckpoint). Add fields and functions;
// do not change or remove existing ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace oneflow {

// The format version this build writes. A reader accepts any minor version of its major version
// (minor versions only append fields) and refuses a newer major version with a clear error.
constexpr uint32_t kNativeFormatMajor = 1;
constexpr uint32_t kNativeFormatMinor = 2;  // 1: subgraph attributes (If, Loop, Scan); 2: sequence and
                                            // optional types, type attributes (Optional)
// The first 8 bytes of every native file (PNG-style: a high byte, CR LF, ^Z, LF catch text-mode
// transfers and truncated downloads).
constexpr char kNativeMagic[8] = {'\x89', 'O', 'F', 'M', '\r', '\n', '\x1a', '\n'};
constexpr size_t kNativeHeaderBytes = 64;
constexpr size_t kSegmentAlignment = 64;

// What a stored tensor is. Values equal ofm.fbs SegmentRole.
enum class TensorRole : uint8_t {
  kParameter = 0,       // a model initializer / trainable parameter
  kConstant = 1,        // a constant that is not a parameter (e.g. a folded result)
  kAttrTensor = 2,      // a node's tensor attribute (models only)
  kGradient = 3,
  kOptimizerState = 4,
  kBuffer = 5,          // non-trainable state (e.g. BatchNorm running statistics)
};
const char* TensorRoleName(TensorRole role);

struct NativeWriteOptions {
  // When non-empty, the weight segments go to this file instead (a plain file name, written next
  // to the model; the model records its name, size and checksums). Only for path writes.
  std::string external_data_file;
  bool checksums = true;                           // per-segment chunked XXH64
  std::string doc_string;                          // stored in the metadata
  std::string source_format;                       // e.g. "onnx" when converting from ONNX
  std::map<std::string, std::string> properties;   // free key-value metadata
};

struct NativeReadOptions {
  // Verify every segment's checksum at load (reads all weight bytes once, in parallel). The
  // header and the flatbuffer are always checksummed and verified; turning this off trusts the
  // weight bytes, which then stay untouched (and unread) until a kernel uses them.
  bool verify_checksums = true;
};

// ---- Models -------------------------------------------------------------------------------------

// Writes `g` as a native model, atomically. Constants become segments (parameters keep their role).
void WriteNativeModel(const Graph& g, const std::string& path, const NativeWriteOptions& options = {});
// The same bytes in memory (external_data_file must be empty).
std::string SerializeNativeModel(const Graph& g, const NativeWriteOptions& options = {});

// Loads a native model file: the file is mmapped (private, copy-on-write) and every weight
// tensor views the mapping without a copy; the mapping lives as long as any tensor uses it.
Graph ReadNativeModel(const std::string& path, const NativeReadOptions& options = {});

// Loads a native model from memory. When `release` is given (borrow), tensors view `data`
// directly; the caller promises the bytes stay valid and unchanged until `release` runs, which
// happens when the last tensor viewing them is gone — or before this function throws, when the
// load fails (pass a no-op to keep ownership). `data` must then be 64-byte aligned. Without `release`, the bytes are copied once into an
// aligned buffer that the tensors share. `external_data_dir` resolves external segment files
// (empty: a model with external segments is refused).
Graph ReadNativeModelMemory(const void* data, size_t size, const NativeReadOptions& options = {},
                            std::function<void()> release = {}, const std::string& external_data_dir = "");

// True when the bytes start with the native magic.
bool IsNativeFormat(const void* data, size_t size);

// ---- Checkpoints --------------------------------------------------------------------------------

struct CheckpointTensor {
  std::string name;       // unique within the checkpoint
  TensorRole role = TensorRole::kParameter;
  Tensor tensor;
  std::string target;     // gradient / optimizer state: the parameter it belongs to
  std::string slot;       // optimizer state: the slot name ("m", "v", "momentum")
};

struct Checkpoint {
  int64_t step = 0;
  std::vector<CheckpointTensor> tensors;
  std::map<std::string, std::string> metadata;  // free key-value training metadata
  std::shared_ptr<const Graph> graph;           // optional: null when the checkpoint has no graph

  // The tensor named `name`, or nullptr.
  const CheckpointTensor* Find(const std::string& name) const;
};

// Writes a checkpoint, atomically. Tensor names must be unique. The graph, when present, is stored
// with its constants as segments too.
void WriteCheckpoint(const Checkpoint& ckpt, const std::string& path, const NativeWriteOptions& options = {});
// Loads a checkpoint (mmapped; tensors view the mapping, copy-on-write, like model weights).
Checkpoint ReadCheckpoint(const std::string& path, const NativeReadOptions& options = {});
Checkpoint ReadCheckpointMemory(const void* data, size_t size, const NativeReadOptions& options = {});

}  // namespace oneflow
