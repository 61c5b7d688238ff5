// errors_test.go — engine statuses become *Error values matching the right sentinel, with the engine's message.
package oneflow

import (
	"errors"
	"strings"
	"testing"
)

// expectError checks that err is an *Error with code, matching sentinel, whose message mentions needle.
func expectError(t *testing.T, what string, err error, sentinel error, code Code, needle string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: %v does not match %v", what, err, sentinel)
	}
	for _, other := range []error{ErrInvalidArgument, ErrNotFound, ErrInvalidModel, ErrUnsupported, ErrClosed} {
		if other != sentinel && errors.Is(err, other) {
			t.Fatalf("%s: %v also matches %v", what, err, other)
		}
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("%s: %v is not an *Error with code %s", what, err, code)
	}
	if !strings.Contains(e.Message, needle) || !strings.Contains(err.Error(), code.String()) {
		t.Fatalf("%s: %q should mention %q", what, err.Error(), needle)
	}
}

func TestBadModels(t *testing.T) {
	_, err := NewSession(capi(t, "does/not/exist.onnx"))
	expectError(t, "missing file", err, ErrNotFound, CodeNotFound, "exist.onnx")
	_, err = LoadGraph(capi(t, "empty.onnx"))
	expectError(t, "empty file", err, ErrInvalidModel, CodeInvalidModel, "empty")
	_, err = NewSessionFromBytes([]byte("not an onnx model"))
	expectError(t, "garbage bytes", err, ErrInvalidModel, CodeInvalidModel, "not a valid ONNX model")
	_, err = NewSessionFromBytes(nil)
	expectError(t, "no bytes", err, ErrInvalidModel, CodeInvalidModel, "empty")
	_, err = LoadGraph(capi(t, "escape/model.onnx"))
	expectError(t, "escaping external data", err, ErrInvalidModel, CodeInvalidModel, "escapes the model's directory")
	_, err = NewSessionFromBytes(readBytes(t, capi(t, "ext/model.onnx")))
	expectError(t, "external data without a dir", err, ErrInvalidArgument, CodeInvalidArgument, "external data")
	_, err = NewSession(capi(t, "unknown_op.onnx"))
	expectError(t, "unknown op", err, ErrUnsupported, CodeUnsupported, "FrobnicateOp")
	_, err = NewSession(capi(t, "opset29.onnx"))
	expectError(t, "future opset", err, ErrUnsupported, CodeUnsupported, "opset 29")
	_, err = LoadGraph("bad\x00path")
	expectError(t, "NUL in path", err, ErrInvalidArgument, CodeInvalidArgument, "NUL")
}

func TestBadInputs(t *testing.T) {
	s := mainSession(t)
	x := must(NewTensor(readRaw[float32](t, capi(t, "x3.f32")), 3, 4))(t)
	b := must(NewTensor(readRaw[float32](t, capi(t, "b3.f32")), 3, 4))(t)
	x64 := must(Zeros(Float64, 3, 4))(t)
	wrongDim := must(Zeros(Float32, 3, 5))(t)
	wrongRank := must(Zeros(Float32, 3, 4, 1))(t)
	otherBatch := must(Zeros(Float32, 2, 4))(t)
	defer closeAll(s, x, b, x64, wrongDim, wrongRank, otherBatch)

	_, err := s.Run(map[string]*Tensor{"x": x, "nope": b})
	expectError(t, "unknown input", err, ErrNotFound, CodeNotFound, "'nope'")
	_, err = s.Run(map[string]*Tensor{"x": x})
	expectError(t, "missing input", err, ErrInvalidArgument, CodeInvalidArgument, "'b' is missing")
	_, err = s.Run(map[string]*Tensor{"x": x64, "b": b})
	expectError(t, "wrong dtype", err, ErrInvalidArgument, CodeInvalidArgument, "dtype float64")
	_, err = s.Run(map[string]*Tensor{"x": wrongDim, "b": b})
	expectError(t, "wrong dim", err, ErrInvalidArgument, CodeInvalidArgument, "dim 1")
	_, err = s.Run(map[string]*Tensor{"x": wrongRank, "b": b})
	expectError(t, "wrong rank", err, ErrInvalidArgument, CodeInvalidArgument, "rank 3")
	_, err = s.Run(map[string]*Tensor{"x": otherBatch, "b": b})
	expectError(t, "inconsistent batch", err, ErrInvalidArgument, CodeInvalidArgument, "batch")
	_, err = s.RunOutputs(map[string]*Tensor{"x": x, "b": b}, "nope")
	expectError(t, "unknown output", err, ErrNotFound, CodeNotFound, "nope")
	_, err = s.Run(map[string]*Tensor{"x": x, "b": nil})
	expectError(t, "nil tensor", err, ErrInvalidArgument, CodeInvalidArgument, "nil")
	_, err = s.Run(map[string]*Tensor{"x\x00y": x, "b": b})
	expectError(t, "NUL in a name", err, ErrInvalidArgument, CodeInvalidArgument, "NUL")
	// One tensor may feed several inputs, and the session still works after the errors above.
	out := must(s.RunOutputs(map[string]*Tensor{"x": x, "b": x}, "y"))(t)
	defer out[0].Close()
	if len(out) != 1 || out[0].ElementCount() != 12 {
		t.Fatalf("outputs %v", out)
	}
}

func TestBadTensors(t *testing.T) {
	_, err := Zeros(Undefined, 2)
	expectError(t, "undefined dtype", err, ErrInvalidArgument, CodeInvalidArgument, "dtype")
	_, err = Zeros(Float32, 2, -1)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative dim: %v", err)
	}
	_, err = NewTensor(make([]float32, 5), 2, 3)
	expectError(t, "length mismatch", err, ErrInvalidArgument, CodeInvalidArgument, "5 elements")
	_, err = NewTensorBytes(Int32, make([]byte, 7), 2)
	expectError(t, "byte length mismatch", err, ErrInvalidArgument, CodeInvalidArgument, "7 bytes")
	l := must(NewTensor([]int64{1, 2}, 2))(t)
	defer l.Close()
	_, err = Values[float32](l)
	expectError(t, "wrong element type", err, ErrInvalidArgument, CodeInvalidArgument, "int64")
	_, err = Values[float32](nil)
	expectError(t, "nil tensor", err, ErrInvalidArgument, CodeInvalidArgument, "nil")
}
