// dtype.go — element types (oneflow_dtype_t) and the Go types that map onto them.
package oneflow

// /* The header and the library come from pkg-config: oneflow.pc of an installed OneFlow, or the build
//    tree's oneflow-uninstalled.pc. Set PKG_CONFIG_PATH, nothing else (README.md, "Build"). */
// #cgo pkg-config: oneflow
// #include "oneflow_c.h"
import "C"

// DType is a tensor element type; the values equal oneflow_dtype_t (ONNX TensorProto.DataType).
type DType int32

// The element types.
const (
	Undefined DType = C.ONEFLOW_DTYPE_UNDEFINED
	Float32   DType = C.ONEFLOW_DTYPE_F32
	Uint8     DType = C.ONEFLOW_DTYPE_U8
	Int8      DType = C.ONEFLOW_DTYPE_I8
	Uint16    DType = C.ONEFLOW_DTYPE_U16
	Int16     DType = C.ONEFLOW_DTYPE_I16
	Int32     DType = C.ONEFLOW_DTYPE_I32
	Int64     DType = C.ONEFLOW_DTYPE_I64
	// String elements (ABI 6): byte strings of any length. Use NewStringTensor and Tensor.Strings.
	String DType = C.ONEFLOW_DTYPE_STRING
	Bool      DType = C.ONEFLOW_DTYPE_BOOL // one byte per element, 0 or 1
	Float16   DType = C.ONEFLOW_DTYPE_F16
	Float64   DType = C.ONEFLOW_DTYPE_F64
	Uint32    DType = C.ONEFLOW_DTYPE_U32
	Uint64    DType = C.ONEFLOW_DTYPE_U64
	BFloat16  DType = C.ONEFLOW_DTYPE_BF16
	// The narrow storage types (ABI 4): one byte per element, sub-byte ones included (a 4- or
	// 2-bit integer is its value in a byte, a float4e2m1 its code in the low nibble). Use
	// NewTensorBytes and Tensor.Bytes.
	Float8E4M3FN   DType = C.ONEFLOW_DTYPE_F8E4M3FN
	Float8E4M3FNUZ DType = C.ONEFLOW_DTYPE_F8E4M3FNUZ
	Float8E5M2     DType = C.ONEFLOW_DTYPE_F8E5M2
	Float8E5M2FNUZ DType = C.ONEFLOW_DTYPE_F8E5M2FNUZ
	Uint4          DType = C.ONEFLOW_DTYPE_U4
	Int4           DType = C.ONEFLOW_DTYPE_I4
	Float4E2M1     DType = C.ONEFLOW_DTYPE_F4E2M1
	Float8E8M0     DType = C.ONEFLOW_DTYPE_F8E8M0
	Uint2          DType = C.ONEFLOW_DTYPE_U2
	Int2           DType = C.ONEFLOW_DTYPE_I2
)

// String is the engine's name for the type, e.g. "float32".
func (d DType) String() string {
	return C.GoString(C.oneflow_dtype_name(C.oneflow_dtype_t(d)))
}

// Size is the engine's byte size of one element (0 for an unknown type).
func (d DType) Size() int {
	return int(C.oneflow_dtype_size(C.oneflow_dtype_t(d)))
}

// Element is a Go type with a tensor element type of the same layout. Go has no 16-bit floats: use
// NewTensorBytes and Tensor.Bytes for Float16 and BFloat16.
type Element interface {
	float32 | float64 | int8 | uint8 | int16 | uint16 | int32 | int64 | uint32 | uint64 | bool
}

// dtypeOf is the element type matching T.
func dtypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int16:
		return Int16
	case uint16:
		return Uint16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	default: // bool: Element allows nothing else
		return Bool
	}
}

// Version is the engine's version string, e.g. "0.1.0".
func Version() string { return C.GoString(C.oneflow_version()) }

// APIVersion is the C ABI version the loaded engine implements.
func APIVersion() int { return int(C.oneflow_api_version()) }
