// Copies along one axis (engine/axis_copy.h).
#include "engine/axis_copy.h"

#include <cstring>

namespace oneflow {
namespace {

// Bytes of one step along `axis` (the dims after it times the element size), and the rows before it.
size_t InnerBytes(const Shape& shape, int64_t axis, DType dtype) {
  return static_cast<size_t>(ShapeProduct(shape, static_cast<size_t>(axis) + 1, shape.size())) * DTypeSize(dtype);
}
int64_t Outer(const Shape& shape, int64_t axis) { return ShapeProduct(shape, 0, static_cast<size_t>(axis)); }

}  // namespace

Tensor SliceAlong(const Tensor& x, int64_t axis, int64_t begin, int64_t end) {
  Shape shape = x.shape();
  const int64_t extent = shape[static_cast<size_t>(axis)];
  shape[static_cast<size_t>(axis)] = end - begin;
  Tensor out = Tensor::Uninitialized(x.dtype(), shape);
  const size_t inner = InnerBytes(x.shape(), axis, x.dtype());
  const size_t run = static_cast<size_t>(end - begin) * inner;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0, outer = Outer(x.shape(), axis); o < outer && run; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * run, src + static_cast<size_t>(o * extent + begin) * inner, run);
  return out;
}

void ConcatAlong(const std::vector<Tensor>& parts, int64_t axis, Tensor& out) {
  const size_t inner = InnerBytes(out.shape(), axis, out.dtype());
  const size_t out_row = static_cast<size_t>(out.dim(axis)) * inner;
  const int64_t outer = Outer(out.shape(), axis);
  char* dst = static_cast<char*>(out.raw());
  size_t offset = 0;  // bytes into each output row where the next part starts
  for (const Tensor& part : parts) {
    const size_t row = static_cast<size_t>(part.dim(axis)) * inner;
    const char* src = static_cast<const char*>(part.raw());
    for (int64_t o = 0; o < outer && row; ++o)
      std::memcpy(dst + static_cast<size_t>(o) * out_row + offset, src + static_cast<size_t>(o) * row, row);
    offset += row;
  }
}

}  // namespace oneflow
