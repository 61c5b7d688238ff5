// tensor.go — Tensor: a dense row-major tensor in C memory, filled from and read into Go slices.
package oneflow

// #include <stdlib.h>
// #include <string.h>
// #include "oneflow_c.h"
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Tensor is a dense row-major tensor owned by the engine. Its dtype and shape never change; its data
// is copied in at creation and out by Values and Bytes. Safe for concurrent use.
type Tensor struct {
	mu     sync.RWMutex
	h      *C.oneflow_tensor_t
	kind   ValueKind
	dtype  DType
	shape  []int64
	count  int
	nbytes int
}

// adoptTensor wraps a handle this package owns from now on (a new tensor or a run output).
func adoptTensor(h *C.oneflow_tensor_t) *Tensor {
	t := &Tensor{
		h:      h,
		kind:   ValueKind(C.oneflow_tensor_kind(h)),
		dtype:  DType(C.oneflow_tensor_dtype(h)),
		count:  int(C.oneflow_tensor_element_count(h)),
		nbytes: int(C.oneflow_tensor_byte_size(h)),
	}
	rank := int(C.oneflow_tensor_rank(h))
	t.shape = make([]int64, rank)
	if rank > 0 {
		dims := unsafe.Slice((*int64)(unsafe.Pointer(C.oneflow_tensor_shape(h))), rank)
		copy(t.shape, dims)
	}
	runtime.SetFinalizer(t, func(t *Tensor) { t.Close() })
	return t
}

// Zeros makes a zero-filled tensor. A scalar has no dims.
func Zeros(dtype DType, shape ...int64) (*Tensor, error) {
	var h *C.oneflow_tensor_t
	dims := (*C.int64_t)(dataPointer(shape))
	if err := statusError(C.oneflow_tensor_create(C.oneflow_dtype_t(dtype), dims, C.size_t(len(shape)), &h)); err != nil {
		return nil, err
	}
	return adoptTensor(h), nil
}

// NewTensor makes a tensor of T's element type with the given shape, copying data (which must have
// exactly as many elements as the shape) into engine memory.
func NewTensor[T Element](data []T, shape ...int64) (*Tensor, error) {
	t, err := Zeros(dtypeOf[T](), shape...)
	if err != nil {
		return nil, err
	}
	if len(data) != t.count {
		t.Close()
		return nil, invalidArgument("%d elements do not match shape %v (%d elements)", len(data), shape, t.count)
	}
	if t.nbytes > 0 {
		C.memcpy(C.oneflow_tensor_data(t.h), dataPointer(data), C.size_t(t.nbytes))
	}
	return t, nil
}

// NewTensorBytes makes a tensor of any dtype from its raw bytes in the machine's byte order (copied);
// the way to build Float16 and BFloat16 tensors.
func NewTensorBytes(dtype DType, raw []byte, shape ...int64) (*Tensor, error) {
	t, err := Zeros(dtype, shape...)
	if err != nil {
		return nil, err
	}
	if len(raw) != t.nbytes {
		t.Close()
		return nil, invalidArgument("%d bytes do not match %s%v (%d bytes)", len(raw), dtype, shape, t.nbytes)
	}
	if t.nbytes > 0 {
		C.memcpy(C.oneflow_tensor_data(t.h), dataPointer(raw), C.size_t(t.nbytes))
	}
	return t, nil
}

// NewStringTensor makes a tensor of dtype String with the given shape from data (copied; any bytes,
// UTF-8 for the ops that read text), which must have exactly as many elements as the shape.
func NewStringTensor(data []string, shape ...int64) (*Tensor, error) {
	// C may not keep Go pointers: the strings travel in C memory, freed once the engine has copied them.
	n := len(data)
	ptrs := (*[1 << 30]*C.char)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))[: n+1 : n+1]
	lens := (*[1 << 30]C.size_t)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof(C.size_t(0)))))[: n+1 : n+1]
	defer C.free(unsafe.Pointer(&ptrs[0]))
	defer C.free(unsafe.Pointer(&lens[0]))
	for i, s := range data {
		ptrs[i] = (*C.char)(C.CBytes([]byte(s)))
		lens[i] = C.size_t(len(s))
		defer C.free(unsafe.Pointer(ptrs[i]))
	}
	var h *C.oneflow_tensor_t
	dims := (*C.int64_t)(dataPointer(shape))
	count := int64(1)
	for _, d := range shape {
		count *= d
	}
	if len(shape) > 0 && count != int64(n) || len(shape) == 0 && n != 1 {
		return nil, invalidArgument("%d strings do not match shape %v", n, shape)
	}
	if err := statusError(C.oneflow_tensor_create_strings(dims, C.size_t(len(shape)), &ptrs[0], &lens[0], &h)); err != nil {
		return nil, err
	}
	return adoptTensor(h), nil
}

// Strings copies a String tensor's elements out.
func (t *Tensor) Strings() ([]string, error) {
	if t == nil {
		return nil, invalidArgument("tensor is nil")
	}
	if t.dtype != String || t.kind != KindTensor {
		return nil, invalidArgument("the tensor holds %s, not strings", t.dtype)
	}
	h, err := t.lock()
	if err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	out := make([]string, t.count)
	for i := range out {
		var data *C.char
		var n C.size_t
		if err := statusError(C.oneflow_tensor_string_element(h, C.int64_t(i), &data, &n)); err != nil {
			return nil, err
		}
		out[i] = C.GoStringN(data, C.int(n))
	}
	return out, nil
}

// ValueKind is what a Tensor holds: a dense tensor, or one of ONNX's two non-tensor values a model may
// take or return — a sequence of tensors, or an optional that holds nothing (an optional that holds a
// value is that tensor or sequence).
type ValueKind int

const (
	KindTensor   ValueKind = C.ONEFLOW_VALUE_TENSOR
	KindSequence ValueKind = C.ONEFLOW_VALUE_SEQUENCE
	KindNone     ValueKind = C.ONEFLOW_VALUE_NONE
)

// TypeKind is what a model input or output is declared to be.
type TypeKind int

const (
	TypeTensor           TypeKind = C.ONEFLOW_TYPE_TENSOR
	TypeSequence         TypeKind = C.ONEFLOW_TYPE_SEQUENCE
	TypeOptional         TypeKind = C.ONEFLOW_TYPE_OPTIONAL
	TypeOptionalSequence TypeKind = C.ONEFLOW_TYPE_OPTIONAL_SEQUENCE
)

// NewSequence makes a sequence of the given tensors, each of dtype elemType, for a model input that is
// a sequence. The sequence references the elements' data (not copied); closing the elements
// afterwards is fine.
func NewSequence(elemType DType, elements ...*Tensor) (*Tensor, error) {
	handles := make([]*C.oneflow_tensor_t, len(elements))
	for i, e := range elements {
		if e == nil {
			return nil, invalidArgument("element %d is nil", i)
		}
		h, err := e.lock()
		if err != nil {
			return nil, err
		}
		defer e.mu.RUnlock()
		handles[i] = h
	}
	var h *C.oneflow_tensor_t
	ptr := (**C.oneflow_tensor_t)(dataPointer(handles))
	if err := statusError(C.oneflow_tensor_create_sequence(C.oneflow_dtype_t(elemType), ptr, C.size_t(len(handles)), &h)); err != nil {
		return nil, err
	}
	return adoptTensor(h), nil
}

// NewNone makes an empty optional (ONNX's None) of element type elemType, for an optional model input.
func NewNone(elemType DType) (*Tensor, error) {
	var h *C.oneflow_tensor_t
	if err := statusError(C.oneflow_tensor_create_none(C.oneflow_dtype_t(elemType), &h)); err != nil {
		return nil, err
	}
	return adoptTensor(h), nil
}

// Kind says what the value holds (still answered after Close).
func (t *Tensor) Kind() ValueKind { return t.kind }

// Len is a sequence's element count (0 for the other kinds).
func (t *Tensor) Len() int {
	h, err := t.lock()
	if err != nil {
		return 0
	}
	defer t.mu.RUnlock()
	return int(C.oneflow_tensor_sequence_length(h))
}

// Element returns element i of a sequence as a new Tensor (which the caller closes).
func (t *Tensor) Element(i int) (*Tensor, error) {
	h, err := t.lock()
	if err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	if i < 0 {
		return nil, invalidArgument("index %d is negative", i)
	}
	var e *C.oneflow_tensor_t
	if err := statusError(C.oneflow_tensor_sequence_element(h, C.size_t(i), &e)); err != nil {
		return nil, err
	}
	return adoptTensor(e), nil
}

// DType is the element type (still answered after Close).
func (t *Tensor) DType() DType { return t.dtype }

// Shape is a copy of the dims, empty for a scalar (still answered after Close).
func (t *Tensor) Shape() []int64 { return append([]int64{}, t.shape...) }

// ElementCount is the number of elements (still answered after Close).
func (t *Tensor) ElementCount() int { return t.count }

// ByteSize is the size of the data in bytes (still answered after Close).
func (t *Tensor) ByteSize() int { return t.nbytes }

// Values copies the elements out; T must match the tensor's dtype.
func Values[T Element](t *Tensor) ([]T, error) {
	if t == nil {
		return nil, invalidArgument("tensor is nil")
	}
	if want := dtypeOf[T](); want != t.dtype {
		return nil, invalidArgument("the tensor holds %s, not %s", t.dtype, want)
	}
	out := make([]T, t.count)
	if err := t.copyOut(dataPointer(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// Bytes copies the raw element bytes out (machine byte order), for any dtype.
func (t *Tensor) Bytes() ([]byte, error) {
	out := make([]byte, t.nbytes)
	if err := t.copyOut(dataPointer(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// copyOut copies the data to dst, which has room for ByteSize bytes (nil when there are none).
func (t *Tensor) copyOut(dst unsafe.Pointer) error {
	h, err := t.lock()
	if err != nil {
		return err
	}
	defer t.mu.RUnlock()
	if t.nbytes > 0 {
		C.memcpy(dst, C.oneflow_tensor_data(h), C.size_t(t.nbytes))
	}
	return nil
}

// lock returns the live handle with the read lock held (release with t.mu.RUnlock), or ErrClosed.
func (t *Tensor) lock() (*C.oneflow_tensor_t, error) {
	t.mu.RLock()
	if t.h == nil {
		t.mu.RUnlock()
		return nil, closedError("Tensor")
	}
	return t.h, nil
}

// Close releases the tensor once calls in flight on it have returned. Later calls return ErrClosed;
// closing again does nothing.
func (t *Tensor) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h != nil {
		C.oneflow_tensor_release(t.h)
		t.h = nil
		runtime.SetFinalizer(t, nil)
	}
	return nil
}

// dataPointer is the address of s's first element, nil for an empty slice (Go 1.19 lacks unsafe.SliceData).
func dataPointer[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}
