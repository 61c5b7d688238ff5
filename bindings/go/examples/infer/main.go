// Command infer is the Go binding's example: load an ONNX model, run one inference, print the result.
//
//	go run ./examples/infer MODEL.onnx [EXPECTED.f32]
//
// MODEL.onnx is the demo classifier examples/c/make_model.py writes (input x: float32[N, 64], output
// probs: float32[N, 10]); with EXPECTED.f32 (numpy's answer) it exits 1 when the output differs.
// Build: PKG_CONFIG_PATH=<prefix>/lib/pkgconfig (an installed OneFlow) or <build>/pkgconfig (the build tree).
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	oneflow "github.com/oneflow-engine/oneflow/bindings/go"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: infer MODEL.onnx [EXPECTED.f32]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, oneflow.ErrNotFound) {
			fmt.Fprintln(os.Stderr, "(is the model path right?)")
		}
		os.Exit(1)
	}
}

func run(model string, expected []string) error {
	sess, err := oneflow.NewSession(model, oneflow.WithIntraOpThreads(1))
	if err != nil {
		return err
	}
	defer sess.Close()
	for _, v := range sess.Inputs() {
		fmt.Printf("input  %s %s %v\n", v.Name, v.DType, v.Dims)
	}

	x := make([]float32, 64)
	for i := range x {
		x[i] = float32(i%7)*0.5 - 1.5 // the input make_model.py assumed
	}
	input, err := oneflow.NewTensor(x, 1, 64)
	if err != nil {
		return err
	}
	defer input.Close()
	outputs, err := sess.Run(map[string]*oneflow.Tensor{"x": input})
	if err != nil {
		return err
	}
	for _, t := range outputs {
		defer t.Close()
	}
	probs, err := oneflow.Values[float32](outputs["probs"])
	if err != nil {
		return err
	}
	best := 0
	for i, p := range probs {
		if p > probs[best] {
			best = i
		}
	}
	fmt.Printf("class %d with probability %.5f\n", best, probs[best])

	if len(expected) > 0 {
		f, err := os.Open(expected[0])
		if err != nil {
			return err
		}
		defer f.Close()
		want := make([]float32, len(probs))
		if err := binary.Read(f, binary.LittleEndian, want); err != nil {
			return err
		}
		for i := range want {
			if math.Abs(float64(probs[i]-want[i])) > 1e-5 {
				return fmt.Errorf("probs[%d] = %v, expected %v", i, probs[i], want[i])
			}
		}
		fmt.Println("matches the expected output")
	}
	return nil
}
