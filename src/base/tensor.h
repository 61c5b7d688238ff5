// Tensor: a dtype, a concrete shape and a reference-counted byte buffer (owned or borrowed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace oneflow {

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);  // 1 for a scalar (rank 0); throws on overflow
// Product of shape[begin, end) (1 for an empty range), e.g. the outer/inner sizes around an axis.
inline int64_t ShapeProduct(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}
std::string ShapeToString(const Shape& shape);  // "[2,3,4]"

// Every buffer we allocate is aligned to this many bytes (a cache line, and AVX-512 width).
constexpr size_t kTensorAlignment = 64;

// A contiguous byte range. Either allocated by us (freed on destruction) or borrowed from a
// caller who promises it outlives every tensor that views it (freed by `release`, if given).
class Storage {
 public:
  static std::shared_ptr<Storage> Allocate(size_t bytes);  // zero-filled, aligned
  static std::shared_ptr<Storage> AllocateUninitialized(size_t bytes);  // aligned, contents undefined
  static std::shared_ptr<Storage> Borrow(void* data, size_t bytes, std::function<void()> release = {});
  // `count` constructed empty std::strings, destroyed with the storage: the only storage a kString
  // tensor may view, so no string tensor ever sits in raw bytes (an arena, a caller's buffer).
  static std::shared_ptr<Storage> AllocateStrings(size_t count);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool owned() const { return owned_; }
  bool holds_strings() const { return strings_ != nullptr; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool owned_ = false;
  std::function<void()> release_;
  std::unique_ptr<std::string[]> strings_;  // AllocateStrings: data_ points here
};

// What a run-time value is. Most are dense tensors; ONNX also has two non-tensor kinds that
// flow through graphs the same way (sequences of tensors, and optionals that hold nothing), so a
// Tensor carries them too rather than every layer (executor, session, C ABI) growing a variant.
// An optional that holds a value is simply that tensor or sequence.
enum class ValueKind : uint8_t {
  kTensor,    // dense data
  kSequence,  // seq(tensor): dtype() is the elements' dtype, elements() the tensors, no bytes of its own
  kNone,      // an optional holding nothing; dtype() is the element dtype its type names, when known
};

// Dense, row-major tensor. Copying a Tensor shares its storage (a view, not a deep copy).
class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-filled storage for `shape`.
  Tensor(DType dtype, Shape shape);
  // Allocates without zero-filling: for kernel outputs that are fully overwritten.
  static Tensor Uninitialized(DType dtype, Shape shape);
  // Views `storage` starting at `byte_offset`; the storage must hold the whole tensor.
  Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset = 0);

  static Tensor Scalar(DType dtype, double value);  // rank-0 tensor holding `value`
  // A sequence of `elements`, each a dense tensor of dtype `elem_dtype` (checked).
  static Tensor Sequence(DType elem_dtype, std::vector<Tensor> elements);
  // An optional that holds nothing (ONNX's None); `elem_dtype` may be kUndefined when unknown.
  static Tensor None(DType elem_dtype);

  bool defined() const { return dtype_ != DType::kUndefined || kind_ != ValueKind::kTensor; }
  ValueKind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == ValueKind::kTensor; }
  bool is_sequence() const { return kind_ == ValueKind::kSequence; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  // A sequence's tensors (empty for the other kinds). Shared between copies and never edited:
  // sequence ops build a new list.
  const std::vector<Tensor>& elements() const;
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * DTypeSize(dtype_); }

  void* raw() const { return storage_ ? static_cast<char*>(storage_->data()) + offset_ : nullptr; }
  template <typename T> T* data() const { return static_cast<T*>(raw()); }
  // A kString tensor's elements (data<std::string>() by another name, checked).
  std::string* strings() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t byte_offset() const { return offset_; }  // where the data starts in storage()

  // Same storage, new shape with the same element count.
  Tensor Reshaped(Shape shape) const;
  // A deep copy into freshly allocated storage (a sequence's elements each copied).
  Tensor Clone() const;
  // Element i converted to double / int64 (any dtype); for attributes and shape inputs.
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;
  // All elements as int64 (for shape, axes, pads inputs).
  std::vector<int64_t> ToInt64Vector() const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
  ValueKind kind_ = ValueKind::kTensor;
  std::shared_ptr<const std::vector<Tensor>> elements_;  // kSequence only
};

// "float32[2,3]", "seq(float32) of 4", "none(float32)": a run-time value for error messages.
std::string DescribeValue(const Tensor& t);

// Whether two defined tensors view one allocation (an output aliasing an input, say).
inline bool SameStorage(const Tensor& a, const Tensor& b) {
  return a.storage() != nullptr && a.storage() == b.storage();
}

}  // namespace oneflow
