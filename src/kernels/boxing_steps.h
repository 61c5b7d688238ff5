// The steps of an ai.oneflow Boxing node, written once for every device: the CPU and CUDA kernels
// run them over their own BoxingMemory (host memcpy/memset; cudaMemcpy2DAsync/cudaMemsetAsync on
// the current stream). Collectives get this memory's pointers when the communicator takes that
// kind of memory, else the data is staged through host buffers (device data, host communicator).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/tensor.h"
#include "comm/communicator.h"
#include "comm/nccl_layout.h"
#include "kernels/kernel.h"

namespace oneflow {

// The node's attributes, with the communicator and this rank's position in the group resolved
// once at kernel creation.
struct BoxingAttrs {
  explicit BoxingAttrs(const KernelInitContext& c);

  std::string mode;  // all_reduce, all_gather, reduce_scatter, all_to_all, slice, zero_fill, zero_pad
  std::vector<int> group;
  int64_t axis, in_axis;
  std::vector<int64_t> sizes, in_sizes, starts;
  bool keep;
  std::shared_ptr<Communicator> comm;  // collectives only
  size_t me = 0;
};

// Where a Boxing kernel's tensors live and how it moves bytes there. Every operation is ordered
// after the previous ones; ToHost/FromHost complete before they return.
class BoxingMemory {
 public:
  virtual ~BoxingMemory() = default;
  virtual Communicator::Memory kind() const = 0;
  virtual Tensor Scratch(DType dtype, int64_t numel) = 0;
  virtual void Copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void Copy2D(char* dst, const char* src, const nccl::Copy2D& c) = 0;  // offsets in `c` added here
  virtual void Zero(void* dst, size_t bytes) = 0;
  virtual void ToHost(void* host, const void* src, size_t bytes) = 0;
  virtual void FromHost(void* dst, const void* host, size_t bytes) = 0;
};

// Host memory: memcpy and memset (the CPU kernel's).
class HostBoxingMemory : public BoxingMemory {
 public:
  Communicator::Memory kind() const override { return Communicator::Memory::kHost; }
  Tensor Scratch(DType dtype, int64_t numel) override;
  void Copy(void* dst, const void* src, size_t bytes) override;
  void Copy2D(char* dst, const char* src, const nccl::Copy2D& c) override;
  void Zero(void* dst, size_t bytes) override;
  void ToHost(void* host, const void* src, size_t bytes) override { Copy(host, src, bytes); }
  void FromHost(void* dst, const void* host, size_t bytes) override { Copy(dst, host, bytes); }
};

// y = the boxing step of `a` applied to x (both in `mem`).
void RunBoxing(const BoxingAttrs& a, const Tensor& x, Tensor& y, BoxingMemory& mem);

}  // namespace oneflow
