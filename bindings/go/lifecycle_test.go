// lifecycle_test.go — use after Close returns ErrClosed (never crashes); Close is idempotent; what a session
// was made from may be closed before it; many goroutines share a session; Close racing with runs is safe.
package oneflow

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestUseAfterClose(t *testing.T) {
	x := must(NewTensor([]float32{1, 2}, 2))(t)
	x.Close()
	x.Close() // idempotent
	if _, err := Values[float32](x); !errors.Is(err, ErrClosed) {
		t.Fatalf("Values after Close: %v", err)
	}
	if _, err := x.Bytes(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Bytes after Close: %v", err)
	}
	if x.DType() != Float32 || x.ElementCount() != 2 { // metadata stays answerable
		t.Fatal("metadata lost on Close")
	}
	empty := must(Zeros(Float32, 0))(t)
	empty.Close()
	if _, err := Values[float32](empty); !errors.Is(err, ErrClosed) {
		t.Fatalf("Values of a closed empty tensor: %v", err)
	}

	g := must(LoadGraph(capi(t, "model.onnx")))(t)
	s := must(NewSessionFromGraph(g))(t)
	g.Close()
	if _, err := g.Inputs(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Inputs after Close: %v", err)
	}
	if _, err := NewSessionFromGraph(g); !errors.Is(err, ErrClosed) {
		t.Fatalf("session from a closed graph: %v", err)
	}
	if err := checkMainModel(t, s, 3); err != nil { // the session outlives its graph
		t.Fatal(err)
	}
	xs := must(NewTensor(readRaw[float32](t, capi(t, "x3.f32")), 3, 4))(t)
	b := must(NewTensor(readRaw[float32](t, capi(t, "b3.f32")), 3, 4))(t)
	defer xs.Close()
	b.Close()
	if _, err := s.Run(map[string]*Tensor{"x": xs, "b": b}); !errors.Is(err, ErrClosed) {
		t.Fatalf("run with a closed input: %v", err)
	}
	s.Close()
	s.Close()
	if _, err := s.Run(map[string]*Tensor{"x": xs}); !errors.Is(err, ErrClosed) {
		t.Fatalf("run after Close: %v", err)
	}
	if _, err := s.PlannedPeakBytes(); !errors.Is(err, ErrClosed) {
		t.Fatalf("PlannedPeakBytes after Close: %v", err)
	}
	if _, err := Values[float32](xs); err != nil { // failed runs leave inputs alone
		t.Fatal(err)
	}

	env := must(NewEnv())(t)
	env.Close()
	if _, err := NewSession(capi(t, "model.onnx"), WithEnv(env)); !errors.Is(err, ErrClosed) {
		t.Fatalf("session with a closed env: %v", err)
	}
}

func TestOutputsOutliveTheSession(t *testing.T) {
	s := mainSession(t)
	x := must(NewTensor(readRaw[float32](t, capi(t, "x3.f32")), 3, 4))(t)
	b := must(NewTensor(readRaw[float32](t, capi(t, "b3.f32")), 3, 4))(t)
	defer closeAll(x, b)
	out := must(s.RunOutputs(map[string]*Tensor{"x": x, "b": b}, "y"))(t)
	s.Close()
	defer out[0].Close()
	assertClose(t, "y", must(Values[float32](out[0]))(t), readRaw[float32](t, capi(t, "y3.f32")), 1e-6)
}

func TestConcurrentRuns(t *testing.T) {
	s := mainSession(t)
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				batch := 3
				if (i+id)%2 == 1 {
					batch = 5
				}
				if err := checkMainModel(t, s, batch); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Closing a session while goroutines run it: Close waits for runs in flight, later runs return ErrClosed,
// and nothing else happens.
func TestCloseRacingWithRuns(t *testing.T) {
	s := mainSession(t)
	x := must(NewTensor(readRaw[float32](t, capi(t, "x3.f32")), 3, 4))(t)
	b := must(NewTensor(readRaw[float32](t, capi(t, "b3.f32")), 3, 4))(t)
	defer closeAll(x, b)
	want := readRaw[float32](t, capi(t, "y3.f32"))
	var runs atomic.Int64
	var wg sync.WaitGroup
	results := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				out, err := s.RunOutputs(map[string]*Tensor{"x": x, "b": b}, "y")
				if err != nil {
					results <- err
					return
				}
				got, err := Values[float32](out[0])
				out[0].Close()
				if err != nil || len(got) != len(want) {
					results <- fmt.Errorf("reading an output during the race: %v", err)
					return
				}
				for i := range want {
					if math.Abs(float64(got[i]-want[i])) > 1e-6 {
						results <- fmt.Errorf("y[%d] = %v during the race, numpy says %v", i, got[i], want[i])
						return
					}
				}
				runs.Add(1)
			}
		}()
	}
	for runs.Load() < 20 && len(results) == 0 { // until runs are under way (or one failed)
		runtime.Gosched()
	}
	s.Close()
	wg.Wait()
	close(results)
	for err := range results {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("a run racing with Close ended with %v, want ErrClosed", err)
		}
	}
}
