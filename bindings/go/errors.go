// errors.go — engine statuses as Go errors: *Error with a Code, matched by errors.Is to one sentinel per code.
package oneflow

// #include "oneflow_c.h"
import "C"

import (
	"errors"
	"fmt"
)

// Code says why an engine call failed; it mirrors oneflow_code_t.
type Code int

// The engine's status codes.
const (
	CodeInvalidArgument Code = C.ONEFLOW_INVALID_ARGUMENT // a value passed in is wrong: shape, dtype, name
	CodeNotFound        Code = C.ONEFLOW_NOT_FOUND        // a named input, output or file does not exist
	CodeInvalidModel    Code = C.ONEFLOW_INVALID_MODEL    // a model file or graph is malformed
	CodeUnsupported     Code = C.ONEFLOW_UNSUPPORTED      // an op, opset, dtype or attribute value not implemented
	CodeOutOfMemory     Code = C.ONEFLOW_OUT_OF_MEMORY
	CodeIO              Code = C.ONEFLOW_IO       // a file could not be read or written
	CodeRuntime         Code = C.ONEFLOW_RUNTIME  // a kernel failed on the data
	CodeInternal        Code = C.ONEFLOW_INTERNAL // a bug in the engine; report it with the message
)

// Sentinel errors, one per code: errors.Is(err, ErrNotFound) holds for every *Error with CodeNotFound.
var (
	ErrInvalidArgument = errors.New("oneflow: invalid argument")
	ErrNotFound        = errors.New("oneflow: not found")
	ErrInvalidModel    = errors.New("oneflow: invalid model")
	ErrUnsupported     = errors.New("oneflow: unsupported")
	ErrOutOfMemory     = errors.New("oneflow: out of memory")
	ErrIO              = errors.New("oneflow: I/O error")
	ErrRuntime         = errors.New("oneflow: runtime error")
	ErrInternal        = errors.New("oneflow: internal error")
	// ErrClosed is returned (wrapped) by every call on an object after its Close.
	ErrClosed = errors.New("oneflow: use of a closed object")
)

var sentinels = map[Code]error{
	CodeInvalidArgument: ErrInvalidArgument,
	CodeNotFound:        ErrNotFound,
	CodeInvalidModel:    ErrInvalidModel,
	CodeUnsupported:     ErrUnsupported,
	CodeOutOfMemory:     ErrOutOfMemory,
	CodeIO:              ErrIO,
	CodeRuntime:         ErrRuntime,
	CodeInternal:        ErrInternal,
}

// String is the engine's name for the code, e.g. "NOT_FOUND".
func (c Code) String() string {
	return C.GoString(C.oneflow_code_name(C.oneflow_code_t(c)))
}

// Error is a failed engine call: its code and the engine's message naming the problem.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("oneflow: %s: %s", e.Code, e.Message)
}

// Is reports whether target is the sentinel error for e's code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// statusError converts a C status (NULL = success) into an error and frees it.
func statusError(st C.oneflow_status_t) error {
	if st == nil {
		return nil
	}
	defer C.oneflow_status_free(st)
	return &Error{Code: Code(C.oneflow_status_code(st)), Message: C.GoString(C.oneflow_status_message(st))}
}

// invalidArgument is an error for a misuse the binding detects before calling the engine.
func invalidArgument(format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

func closedError(kind string) error {
	return fmt.Errorf("oneflow: %s used after Close: %w", kind, ErrClosed)
}
