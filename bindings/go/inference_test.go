// inference_test.go — outputs of the Go binding against numpy references, for every element type.
package oneflow

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func mainSession(t testing.TB) *Session {
	return must(NewSession(capi(t, "model.onnx")))(t)
}

// checkMainModel runs model.onnx on the batch fixture and compares y and z with numpy. It returns an
// error instead of failing so goroutines can use it.
func checkMainModel(t testing.TB, s *Session, batch int) error {
	x := readRaw[float32](t, capi(t, fmt.Sprintf("x%d.f32", batch)))
	b := readRaw[float32](t, capi(t, fmt.Sprintf("b%d.f32", batch)))
	xt, err := NewTensor(x, int64(batch), 4)
	if err != nil {
		return err
	}
	defer xt.Close()
	bt, err := NewTensor(b, int64(batch), 4)
	if err != nil {
		return err
	}
	defer bt.Close()
	out, err := s.Run(map[string]*Tensor{"x": xt, "b": bt})
	if err != nil {
		return err
	}
	defer func() {
		for _, o := range out {
			o.Close()
		}
	}()
	for name, file := range map[string]string{"y": "y", "z:0/out": "z"} {
		o := out[name]
		if o == nil {
			return fmt.Errorf("no output %q in %v", name, out)
		}
		if sh := o.Shape(); len(sh) != 2 || sh[0] != int64(batch) || sh[1] != 4 {
			return fmt.Errorf("%s has shape %v", name, sh)
		}
		got, err := Values[float32](o)
		if err != nil {
			return err
		}
		want := readRaw[float32](t, capi(t, fmt.Sprintf("%s%d.f32", file, batch)))
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-6 {
				return fmt.Errorf("%s[%d] = %v, numpy says %v", name, i, got[i], want[i])
			}
		}
	}
	return nil
}

func TestVersion(t *testing.T) {
	if Version() == "" || APIVersion() < 1 {
		t.Fatalf("version %q, API %d", Version(), APIVersion())
	}
	if Float32.String() != "float32" || Float64.Size() != 8 || BFloat16.Size() != 2 {
		t.Fatalf("dtype facts: %s %d %d", Float32, Float64.Size(), BFloat16.Size())
	}
	if Int4.Size() != 1 || Float8E4M3FN.String() != "float8e4m3fn" || Int2.String() != "int2" {
		t.Fatalf("narrow dtype facts: %d %s %s", Int4.Size(), Float8E4M3FN, Int2)
	}
	if CodeNotFound.String() != "NOT_FOUND" {
		t.Fatal(CodeNotFound.String())
	}
}

func TestRunMatchesNumpy(t *testing.T) {
	s := mainSession(t)
	defer s.Close()
	for _, batch := range []int{3, 3, 5} {
		if err := checkMainModel(t, s, batch); err != nil {
			t.Fatal(err)
		}
	}
	// Fused, Relu(x + b) + x is one FusedElementwise writing the output: no arena. Unfused, the
	// intermediates live in it.
	if n := must(s.PlannedPeakBytes())(t); n != 0 {
		t.Fatalf("planned %d arena bytes for a fully fused model", n)
	}
	plain := must(NewSession(capi(t, "model.onnx"), WithOptimizationLevel(1)))(t)
	defer plain.Close()
	if err := checkMainModel(t, plain, 5); err != nil {
		t.Fatal(err)
	}
	if n := must(plain.PlannedPeakBytes())(t); n == 0 {
		t.Fatal("no planned memory after a run")
	}
}

func TestRunOutputsInRequestedOrder(t *testing.T) {
	s := mainSession(t)
	x := must(NewTensor(readRaw[float32](t, capi(t, "x3.f32")), 3, 4))(t)
	b := must(NewTensor(readRaw[float32](t, capi(t, "b3.f32")), 3, 4))(t)
	defer closeAll(s, x, b)
	out := must(s.RunOutputs(map[string]*Tensor{"x": x, "b": b}, "z:0/out", "y"))(t)
	defer closeAll(out[0], out[1])
	assertClose(t, "z", must(Values[float32](out[0]))(t), readRaw[float32](t, capi(t, "z3.f32")), 1e-6)
	assertClose(t, "y", must(Values[float32](out[1]))(t), readRaw[float32](t, capi(t, "y3.f32")), 1e-6)
}

func TestValueInfo(t *testing.T) {
	g := must(LoadGraph(capi(t, "model.onnx")))(t)
	defer g.Close()
	in := must(g.Inputs())(t)
	if len(in) != 2 || in[0].Name != "x" || in[0].DType != Float32 || in[1].Name != "b" {
		t.Fatalf("inputs %+v", in)
	}
	assertEqual(t, "x dims", in[0].Dims, []int64{-1, 4})
	assertEqual(t, "x dim names", in[0].DimNames, []string{"batch", ""})
	out := must(g.Outputs())(t)
	if len(out) != 2 || out[1].Name != "z:0/out" {
		t.Fatalf("outputs %+v", out)
	}
	s := must(NewSessionFromGraph(g))(t)
	defer s.Close()
	if fmt.Sprint(s.Inputs()) != fmt.Sprint(in) || fmt.Sprint(s.Outputs()) != fmt.Sprint(out) {
		t.Fatalf("session %v %v, graph %v %v", s.Inputs(), s.Outputs(), in, out)
	}
}

func TestInitializersAndExternalData(t *testing.T) {
	xc := readRaw[float32](t, capi(t, "xc.f32"))
	yc := readRaw[float32](t, capi(t, "yc.f32"))
	check := func(s *Session, what string) {
		defer s.Close()
		x := must(NewTensor(xc, 2, 3))(t)
		defer x.Close()
		out := must(s.Run(map[string]*Tensor{"x": x}))(t)
		defer out["y"].Close()
		assertClose(t, what, must(Values[float32](out["y"]))(t), yc, 1e-6)
	}
	check(must(NewSession(capi(t, "const_model.onnx")))(t), "const_model")
	check(must(NewSession(capi(t, "ext/model.onnx")))(t), "ext/model")
	model := readBytes(t, capi(t, "ext/model.onnx"))
	check(must(NewSessionFromBytes(model, WithExternalDataDir(capi(t, "ext"))))(t), "ext from bytes")
}

func TestOptionsAndEnv(t *testing.T) {
	env := must(NewEnv())(t)
	s0 := must(NewSession(capi(t, "model.onnx"), WithEnv(env), WithIntraOpThreads(1), WithOptimizationLevel(0)))(t)
	s1 := must(NewSession(capi(t, "model.onnx"), WithOptimizationLevel(1)))(t)
	defer closeAll(s0, s1)
	env.Close() // sessions keep what they need of the env
	if err := checkMainModel(t, s0, 5); err != nil {
		t.Fatal(err)
	}
	if err := checkMainModel(t, s1, 3); err != nil {
		t.Fatal(err)
	}
}

func TestEveryDtype(t *testing.T) {
	s := must(NewSession(dtypes(t, "dtypes.onnx")))(t)
	defer s.Close()
	in := map[string]*Tensor{
		"d":  must(NewTensor(readRaw[float64](t, dtypes(t, "d.bin")), 3))(t),
		"i":  must(NewTensor(readRaw[int32](t, dtypes(t, "i.bin")), 2, 2))(t),
		"l":  must(NewTensor(readRaw[int64](t, dtypes(t, "l.bin")), 4))(t),
		"s":  must(NewTensor(readRaw[int16](t, dtypes(t, "s.bin")), 2))(t),
		"b":  must(NewTensor(readRaw[int8](t, dtypes(t, "b.bin")), 3))(t),
		"u":  must(NewTensor(readRaw[uint8](t, dtypes(t, "u.bin")), 3))(t),
		"hf": must(NewTensorBytes(Float16, readBytes(t, dtypes(t, "hf.bin")), 3))(t),
		"m":  must(NewTensor(readRaw[bool](t, dtypes(t, "m.bin")), 4))(t),
		"f":  must(NewTensor(readRaw[float32](t, dtypes(t, "f.bin")), 2, 2))(t),
	}
	defer func() {
		for _, v := range in {
			v.Close()
		}
	}()
	out := must(s.Run(in))(t)
	defer func() {
		for _, v := range out {
			v.Close()
		}
	}()
	d2 := must(Values[float64](out["d2"]))(t)
	for i, w := range readRaw[float64](t, dtypes(t, "d2.bin")) {
		if math.Abs(d2[i]-w) > 1e-12 {
			t.Fatalf("d2[%d] = %v, want %v", i, d2[i], w)
		}
	}
	assertEqual(t, "i2", must(Values[int32](out["i2"]))(t), readRaw[int32](t, dtypes(t, "i2.bin")))
	assertEqual(t, "i2 shape", out["i2"].Shape(), []int64{2, 2})
	assertEqual(t, "l2", must(Values[int64](out["l2"]))(t), readRaw[int64](t, dtypes(t, "l2.bin")))
	assertEqual(t, "s2", must(Values[int16](out["s2"]))(t), readRaw[int16](t, dtypes(t, "s2.bin")))
	assertEqual(t, "b2", must(Values[int8](out["b2"]))(t), readRaw[int8](t, dtypes(t, "b2.bin")))
	assertEqual(t, "u2", must(Values[uint8](out["u2"]))(t), readRaw[uint8](t, dtypes(t, "u2.bin")))
	assertEqual(t, "hf2", must(out["hf2"].Bytes())(t), readBytes(t, dtypes(t, "hf2.bin")))
	assertEqual(t, "mn", must(Values[bool](out["mn"]))(t), readRaw[bool](t, dtypes(t, "mn.bin")))
	assertEqual(t, "fp", must(Values[bool](out["fp"]))(t), readRaw[bool](t, dtypes(t, "fp.bin")))
	if out["hf2"].DType() != Float16 || out["fp"].DType() != Bool || in["u"].DType() != Uint8 {
		t.Fatalf("dtypes %s %s %s", out["hf2"].DType(), out["fp"].DType(), in["u"].DType())
	}
	assertEqual(t, "l2 bytes", must(out["l2"].Bytes())(t), readBytes(t, dtypes(t, "l2.bin")))
}

func TestTensorMetadata(t *testing.T) {
	empty := must(Zeros(Int64, 2, 0, 5))(t)
	scalar := must(NewTensor([]float64{2.5}))(t)
	v := must(NewTensor([]int32{1, 2, 3, 4, 5, 6}, 2, 3))(t)
	defer closeAll(empty, scalar, v)
	assertEqual(t, "shape", empty.Shape(), []int64{2, 0, 5})
	if empty.ElementCount() != 0 || len(must(Values[int64](empty))(t)) != 0 {
		t.Fatal("zero-sized tensor")
	}
	if len(scalar.Shape()) != 0 || scalar.ElementCount() != 1 {
		t.Fatalf("scalar shape %v", scalar.Shape())
	}
	assertEqual(t, "scalar", must(Values[float64](scalar))(t), []float64{2.5})
	if v.DType() != Int32 || v.ByteSize() != 24 {
		t.Fatalf("%s %d", v.DType(), v.ByteSize())
	}
	assertEqual(t, "v", must(Values[int32](v))(t), []int32{1, 2, 3, 4, 5, 6})
}

// TestSequencesAndOptionals: a sequence in (concatenated, counted and returned as is), an empty and a
// present optional, the declared kinds, and a value of the wrong kind refused.
// The string ops against what Go's own strings package says each output must be.
func TestStringTensors(t *testing.T) {
	s := must(NewSession(capi(t, "string_model.onnx")))(t)
	defer s.Close()
	text := []string{"Hello there", "a", "b  c d ", "", "héllo wörld"}
	in := must(NewStringTensor(text, int64(len(text))))(t)
	defer in.Close()
	if in.DType() != String || in.ByteSize() != 0 {
		t.Fatalf("a string tensor: dtype %v, %d bytes", in.DType(), in.ByteSize())
	}
	assertEqual(t, "round trip", must(in.Strings())(t), text)
	out := must(s.Run(map[string]*Tensor{"text": in}))(t)
	defer func() {
		for _, o := range out {
			o.Close()
		}
	}()
	shout, words, greeting, ids := []string{}, []int64{}, []bool{}, []int64{}
	for _, x := range text {
		shout = append(shout, x+"!")
		words = append(words, int64(len(strings.Fields(x))))
		greeting = append(greeting, strings.HasPrefix(strings.ToLower(x), "hello"))
		id, known := map[string]int64{"a": 1, "b": 2}[x]
		if !known {
			id = -1
		}
		ids = append(ids, id)
	}
	assertEqual(t, "shout", must(out["shout"].Strings())(t), shout)
	assertEqual(t, "words", must(Values[int64](out["words"]))(t), words)
	assertEqual(t, "greeting", must(Values[bool](out["greeting"]))(t), greeting)
	assertEqual(t, "id", must(Values[int64](out["id"]))(t), ids)
	if _, err := Values[int64](out["shout"]); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("int64 values of a string tensor: %v", err)
	}
	num := must(NewTensor([]int64{1}, 1))(t)
	defer num.Close()
	if _, err := s.Run(map[string]*Tensor{"text": num}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an int64 tensor for a string input: %v", err)
	}
	if _, err := NewStringTensor([]string{"x"}, 2); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("1 string for shape [2]: %v", err)
	}
}

func TestSequencesAndOptionals(t *testing.T) {
	s := must(NewSession(capi(t, "sequence_model.onnx")))(t)
	defer s.Close()
	if in := s.Inputs(); in[0].Kind != TypeSequence || in[1].Kind != TypeOptional || in[0].DType != Float32 {
		t.Fatalf("input kinds %v", in)
	}
	a := must(NewTensor([]float32{1.5, -2}, 2))(t)
	b := must(NewTensor([]float32{4.25}, 1))(t)
	seq := must(NewSequence(Float32, a, b))(t)
	none := must(NewNone(Float32))(t)
	defer closeAll(a, b, seq, none)
	if seq.Kind() != KindSequence || seq.Len() != 2 || none.Kind() != KindNone || a.Kind() != KindTensor {
		t.Fatalf("kinds %v %d %v %v", seq.Kind(), seq.Len(), none.Kind(), a.Kind())
	}
	for _, opt := range []*Tensor{none, b} {
		out := must(s.Run(map[string]*Tensor{"s": seq, "o": opt}))(t)
		assertEqual(t, "cat", must(Values[float32](out["cat"]))(t), []float32{1.5, -2, 4.25})
		assertEqual(t, "n", must(Values[int64](out["n"]))(t), []int64{2})
		assertEqual(t, "has", must(Values[bool](out["has"]))(t), []bool{opt == b})
		same := out["same"]
		if same.Kind() != KindSequence || same.Len() != 2 {
			t.Fatalf("same: kind %v, %d elements", same.Kind(), same.Len())
		}
		second := must(same.Element(1))(t)
		assertEqual(t, "same[1]", must(Values[float32](second))(t), []float32{4.25})
		if _, err := same.Element(2); err == nil {
			t.Fatal("element 2 of a sequence of 2 was returned")
		}
		second.Close()
		for _, o := range out {
			o.Close()
		}
	}
	if _, err := s.Run(map[string]*Tensor{"s": a, "o": none}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a tensor for a sequence input: %v", err)
	}
	if _, err := NewSequence(Float32, a, must(NewTensor([]int64{1}, 1))(t)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("mixed dtypes: %v", err)
	}
}
