// Tensor and Storage implementation.
#include "base/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "base/narrow_types.h"

namespace oneflow {

int64_t NumElements(const Shape& shape) {
  // The product of the non-zero dims must fit too: kernels take partial products of a shape
  // (ShapeProduct, outer/inner extents), and an empty tensor of [0, 2^40, 2^40] would overflow them.
  int64_t n = 1, nonzero = 1;
  for (int64_t d : shape) {
    OF_REQUIRE(d >= 0, "negative dimension ", d, " in shape ", ShapeToString(shape));
    if (d == 0) {
      n = 0;
      continue;
    }
    OF_REQUIRE(nonzero <= std::numeric_limits<int64_t>::max() / d, "shape ", ShapeToString(shape),
               " has too many elements");
    nonzero *= d;
    n *= d;
  }
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::shared_ptr<Storage> Storage::Allocate(size_t bytes) {
  std::shared_ptr<Storage> s = AllocateUninitialized(bytes);
  std::memset(s->data_, 0, s->bytes_);
  return s;
}

std::shared_ptr<Storage> Storage::AllocateUninitialized(size_t bytes) {
  std::shared_ptr<Storage> s(new Storage());
  size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  s->data_ = std::aligned_alloc(kTensorAlignment, rounded);
  OF_CHECK(s->data_ != nullptr, kOutOfMemory, "out of memory allocating ", bytes, " bytes");
  s->bytes_ = bytes;
  s->owned_ = true;
  return s;
}

std::shared_ptr<Storage> Storage::Borrow(void* data, size_t bytes, std::function<void()> release) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->bytes_ = bytes;
  s->owned_ = false;
  s->release_ = std::move(release);
  return s;
}

std::shared_ptr<Storage> Storage::AllocateStrings(size_t count) {
  std::shared_ptr<Storage> s(new Storage());
  s->strings_.reset(new std::string[count == 0 ? 1 : count]);
  s->data_ = s->strings_.get();
  s->bytes_ = count * sizeof(std::string);
  return s;
}

Storage::~Storage() {
  if (owned_) std::free(data_);
  if (release_) release_();
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  OF_REQUIRE(DTypeSize(dtype) != 0, "cannot create a tensor of dtype ", DTypeName(dtype));
  numel_ = NumElements(shape_);
  storage_ = dtype == DType::kString ? Storage::AllocateStrings(static_cast<size_t>(numel_)) : Storage::Allocate(nbytes());
}

Tensor Tensor::Uninitialized(DType dtype, Shape shape) {
  OF_REQUIRE(DTypeSize(dtype) != 0, "cannot create a tensor of dtype ", DTypeName(dtype));
  if (dtype == DType::kString) return Tensor(dtype, std::move(shape));  // strings are always constructed
  size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  return Tensor(dtype, std::move(shape), Storage::AllocateUninitialized(bytes), 0);
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset)
    : dtype_(dtype), shape_(std::move(shape)), storage_(std::move(storage)), offset_(byte_offset) {
  OF_REQUIRE(DTypeSize(dtype) != 0, "cannot create a tensor of dtype ", DTypeName(dtype));
  numel_ = NumElements(shape_);
  OF_ASSERT(storage_ != nullptr);
  // A string tensor over raw bytes would read unconstructed std::strings; the reverse would let a
  // numeric kernel scribble over them.
  OF_REQUIRE((dtype == DType::kString) == storage_->holds_strings(), "a ", DTypeName(dtype),
             " tensor cannot view ", storage_->holds_strings() ? "string" : "raw byte", " storage");
  OF_REQUIRE(offset_ % DTypeSize(dtype) == 0 || dtype != DType::kString, "misaligned string tensor view");
  OF_REQUIRE(offset_ + nbytes() <= storage_->bytes(), "tensor of ", nbytes(), " bytes at offset ",
             offset_, " does not fit its ", storage_->bytes(), "-byte buffer");
}

Tensor Tensor::Scalar(DType dtype, double value) {
  Tensor t(dtype, Shape{});
  DispatchAll(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t.data<T>() = CastFromDouble<T>(value);
  });
  return t;
}

Tensor Tensor::Sequence(DType elem_dtype, std::vector<Tensor> elements) {
  for (const Tensor& e : elements)
    OF_REQUIRE(e.is_tensor() && e.dtype() == elem_dtype, "a sequence of ", DTypeName(elem_dtype),
               " cannot hold ", DescribeValue(e));
  Tensor t;
  t.dtype_ = elem_dtype;
  t.kind_ = ValueKind::kSequence;
  t.elements_ = std::make_shared<const std::vector<Tensor>>(std::move(elements));
  return t;
}

Tensor Tensor::None(DType elem_dtype) {
  Tensor t;
  t.dtype_ = elem_dtype;
  t.kind_ = ValueKind::kNone;
  return t;
}

const std::vector<Tensor>& Tensor::elements() const {
  static const std::vector<Tensor> kEmpty;
  return elements_ ? *elements_ : kEmpty;
}

std::string DescribeValue(const Tensor& t) {
  switch (t.kind()) {
    case ValueKind::kSequence: return "seq(" + std::string(DTypeName(t.dtype())) + ") of " + std::to_string(t.elements().size());
    case ValueKind::kNone: return "none(" + std::string(DTypeName(t.dtype())) + ")";
    case ValueKind::kTensor: break;
  }
  return std::string(DTypeName(t.dtype())) + ShapeToString(t.shape());
}

Tensor Tensor::Reshaped(Shape shape) const {
  OF_REQUIRE(is_tensor(), "cannot reshape ", DescribeValue(*this));
  OF_REQUIRE(NumElements(shape) == numel_, "cannot reshape ", ShapeToString(shape_), " to ",
             ShapeToString(shape));
  return Tensor(dtype_, std::move(shape), storage_, offset_);
}

Tensor Tensor::Clone() const {
  if (kind_ == ValueKind::kNone) return *this;
  if (kind_ == ValueKind::kSequence) {
    std::vector<Tensor> copies;
    for (const Tensor& e : elements()) copies.push_back(e.Clone());
    return Sequence(dtype_, std::move(copies));
  }
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::kString) std::copy(strings(), strings() + numel_, t.strings());
  else if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

std::string* Tensor::strings() const {
  OF_REQUIRE(is_tensor() && dtype_ == DType::kString, "not a string tensor: ", DescribeValue(*this));
  return data<std::string>();
}

double Tensor::GetAsDouble(int64_t i) const {
  OF_ASSERT(i >= 0 && i < numel_);
  OF_REQUIRE(dtype_ != DType::kString, "a string tensor has no numeric value");
  if (IsNarrowDType(dtype_)) return NarrowToDouble(dtype_, static_cast<const uint8_t*>(raw())[i]);
  return DispatchAll(dtype_, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return CastToDouble<T>(data<T>()[i]);
  });
}

int64_t Tensor::GetAsInt64(int64_t i) const {
  OF_ASSERT(i >= 0 && i < numel_);
  OF_REQUIRE(dtype_ != DType::kString, "a string tensor has no numeric value");
  if (IsNarrowDType(dtype_)) {
    const double v = NarrowToDouble(dtype_, static_cast<const uint8_t*>(raw())[i]);  // at most 2^127
    return std::isnan(v) ? 0 : static_cast<int64_t>(std::clamp(v, -9.2e18, 9.2e18));
  }
  return DispatchAll(dtype_, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (kIsHalfType<T>) return static_cast<int64_t>(static_cast<float>(data<T>()[i]));
    else if constexpr (std::is_floating_point_v<T>) {
      double v = static_cast<double>(data<T>()[i]);  // clamp: int64 casts of huge floats are UB
      if (!(v < 9.2e18)) return v != v ? 0 : std::numeric_limits<int64_t>::max();
      if (!(v > -9.2e18)) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    } else {
      return static_cast<int64_t>(data<T>()[i]);
    }
  });
}

std::vector<int64_t> Tensor::ToInt64Vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = GetAsInt64(i);
  return v;
}

}  // namespace oneflow
