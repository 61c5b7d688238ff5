// training_test.go — TrainingSession against numpy: gradients, an SGD step by the update rule, a
// checkpoint round trip, export + save + load + run, and the errors of the training calls.
package oneflow

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The training fixture (tests/train/make_train_fixture.py, dir in ONEFLOW_TEST_TRAIN): mlp.onnx
// (x [N, 4] -> 8 -> ReLU -> 3 = logits), x [5, 4], labels [5], numpy's float64 loss and gradients of
// the mean softmax cross-entropy (stored as float32) and the initial parameters.
func trainFixture(t testing.TB, name string) string { return fixture(t, "ONEFLOW_TEST_TRAIN", name) }

var mlpParams = []string{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}

func sgdOptions(lr float32) TrainingOptions {
	o := DefaultTrainingOptions()
	o.LogitsOutput = "logits"
	o.Optimizer = OptimizerSGD
	o.LearningRate = lr
	return o
}

func newTraining(t *testing.T, model string, o TrainingOptions) *TrainingSession {
	t.Helper()
	s, err := NewTrainingSessionFromFile(trainFixture(t, model), o, WithIntraOpThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// trainBatch runs the fixture batch in train mode and returns the loss.
func trainBatch(t *testing.T, s *TrainingSession) float32 {
	t.Helper()
	x := must(NewTensor(readRaw[float32](t, trainFixture(t, "x.f32")), 5, 4))(t)
	y := must(NewTensor(readRaw[int64](t, trainFixture(t, "y.i64")), 5))(t)
	defer closeAll(x, y)
	outs, err := s.Run(map[string]*Tensor{"x": x, "labels": y})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs["logits"] == nil || outs["loss"] == nil {
		t.Fatalf("train-mode outputs %v, want logits and loss", outs)
	}
	defer closeAll(outs["logits"], outs["loss"])
	return must(Values[float32](outs["loss"]))(t)[0]
}

// assertRel fails unless |got - want| <= tol * (1 + |want|) everywhere.
func assertRel(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > tol*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestTrainingDefaults(t *testing.T) {
	o := DefaultTrainingOptions() // docs/training.md: Adam, lr 1e-3, softmax cross-entropy, "labels"
	if o.Optimizer != OptimizerAdam || o.LearningRate != 1e-3 || o.Loss != LossSoftmaxCrossEntropy ||
		o.LabelsInput != "labels" || o.Beta1 != 0.9 {
		t.Fatalf("defaults %+v", o)
	}
}

func TestTrainingGradientsMatchNumpy(t *testing.T) {
	s := newTraining(t, "mlp.onnx", sgdOptions(0.1))
	defer s.Close()
	assertEqual(t, "parameters", s.ParameterNames(), mlpParams)
	if in := s.Inputs(); in[len(in)-1].Name != "labels" {
		t.Fatalf("inputs %v should end with labels", in)
	}
	loss := trainBatch(t, s)
	assertRel(t, "loss", []float32{loss}, readRaw[float32](t, trainFixture(t, "loss.f32")), 1e-5)
	if err := s.Backward(); err != nil {
		t.Fatal(err)
	}
	for _, p := range mlpParams {
		assertRel(t, "gradient of "+p, must(s.GradientValues(p))(t), readRaw[float32](t, trainFixture(t, "grad_"+p+".f32")), 1e-4)
	}
	st := must(s.State())(t)
	if math.Abs(st.LastLoss-float64(loss)) > 1e-6 || st.Step != 0 {
		t.Fatalf("state %+v after one run (loss %v)", st, loss)
	}
}

func TestTrainingSGDStepFollowsTheUpdateRule(t *testing.T) {
	const lr = 0.1
	s := newTraining(t, "mlp.onnx", sgdOptions(lr))
	defer s.Close()
	trainBatch(t, s)
	if err := s.Backward(); err != nil {
		t.Fatal(err)
	}
	if applied, err := s.Step(); err != nil || !applied {
		t.Fatalf("Step: applied %v, %v", applied, err)
	}
	if st := must(s.State())(t); st.Step != 1 {
		t.Fatalf("step counter %d, want 1", st.Step)
	}
	for _, p := range mlpParams {
		init := readRaw[float32](t, trainFixture(t, "init_"+p+".f32"))
		grad := readRaw[float32](t, trainFixture(t, "grad_"+p+".f32"))
		want := make([]float32, len(init))
		for i := range init {
			want[i] = init[i] - lr*grad[i]
		}
		assertRel(t, "SGD update of "+p, must(s.ParameterValues(p))(t), want, 1e-5)
		assertEqual(t, "gradient after step of "+p, must(s.GradientValues(p))(t), make([]float32, len(init)))
	}
	// SetParameterValues and Parameter round-trip; a wrong shape is refused by the engine.
	if err := s.SetParameterValues("fc2.bias", []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "fc2.bias", must(s.ParameterValues("fc2.bias"))(t), []float32{1, 2, 3})
	wrong := must(NewTensor([]float32{1, 2}, 2))(t)
	defer wrong.Close()
	expectError(t, "SetParameter with a wrong shape", s.SetParameter("fc2.bias", wrong), ErrInvalidArgument,
		CodeInvalidArgument, "fc2.bias")
}

func TestTrainingCheckpointRoundTrip(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "run.ckpt")
	o := sgdOptions(0.05)
	o.Momentum = 0.9 // optimizer state the checkpoint must carry
	o.Deterministic, o.Seed = true, 3
	a := newTraining(t, "mlp.onnx", o)
	b := newTraining(t, "mlp.onnx", o)
	defer closeAll(a, b)
	step := func(s *TrainingSession) {
		trainBatch(t, s)
		if err := s.Backward(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(); err != nil {
			t.Fatal(err)
		}
	}
	step(a)
	if err := a.SaveCheckpoint(ckpt); err != nil {
		t.Fatal(err)
	}
	step(a)
	step(a)
	if err := b.LoadCheckpoint(ckpt); err != nil {
		t.Fatal(err)
	}
	if st := must(b.State())(t); st.Step != 1 {
		t.Fatalf("restored step counter %d, want 1", st.Step)
	}
	step(b)
	step(b)
	for _, p := range mlpParams {
		assertEqual(t, p+" after resume", must(b.ParameterValues(p))(t), must(a.ParameterValues(p))(t))
	}
	init := readRaw[float32](t, trainFixture(t, "init_fc1.weight.f32"))
	if got := must(b.ParameterValues("fc1.weight"))(t); got[0] == init[0] && got[1] == init[1] {
		t.Fatal("the parameters did not move")
	}
	other := newTraining(t, "other.onnx", o)
	defer other.Close()
	expectError(t, "a checkpoint of another model", other.LoadCheckpoint(ckpt), ErrInvalidArgument,
		CodeInvalidArgument, "fc1.weight")
}

// mlpLogits computes the fixture MLP's logits with naive loops (the reference for served outputs).
func mlpLogits(x []float32, rows int, w1, b1, w2, b2 []float32) []float32 {
	out := make([]float32, rows*3)
	for r := 0; r < rows; r++ {
		var h [8]float64
		for j := range h {
			acc := float64(b1[j])
			for k := 0; k < 4; k++ {
				acc += float64(x[r*4+k]) * float64(w1[k*8+j])
			}
			h[j] = math.Max(acc, 0)
		}
		for c := 0; c < 3; c++ {
			acc := float64(b2[c])
			for j := range h {
				acc += h[j] * float64(w2[j*3+c])
			}
			out[r*3+c] = float32(acc)
		}
	}
	return out
}

func TestTrainingExportSaveLoadRun(t *testing.T) {
	s := newTraining(t, "mlp.onnx", sgdOptions(0.5))
	defer s.Close()
	trainBatch(t, s)
	if err := s.Backward(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	xs := readRaw[float32](t, trainFixture(t, "x.f32"))
	p := func(name string) []float32 { return must(s.ParameterValues(name))(t) }
	want := mlpLogits(xs, 5, p("fc1.weight"), p("fc1.bias"), p("fc2.weight"), p("fc2.bias"))
	x := must(NewTensor(xs, 5, 4))(t)
	defer x.Close()

	// Eval mode: no labels needed, the model outputs only.
	if err := s.SetRunMode(RunEval); err != nil {
		t.Fatal(err)
	}
	outs := must(s.Run(map[string]*Tensor{"x": x}))(t)
	if len(outs) != 1 || outs["logits"] == nil {
		t.Fatalf("eval outputs %v, want logits only", outs)
	}
	assertRel(t, "eval logits", must(Values[float32](outs["logits"]))(t), want, 1e-5)
	outs["logits"].Close()

	dir := t.TempDir()
	g := must(s.ExportModel())(t)
	ofm, onnx := filepath.Join(dir, "trained.ofm"), filepath.Join(dir, "trained.onnx")
	if err := g.Save(ofm, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Save(onnx, &SaveOptions{Format: FormatONNX}); err != nil {
		t.Fatal(err)
	}
	g.Close()
	for _, path := range []string{ofm, onnx} {
		inf := must(NewSession(path))(t)
		res := must(inf.Run(map[string]*Tensor{"x": x}))(t)
		assertRel(t, "logits served from "+filepath.Base(path), must(Values[float32](res["logits"]))(t), want, 1e-5)
		res["logits"].Close()
		inf.Close()
	}
	if _, err := os.Stat(ofm); err != nil {
		t.Fatal(err)
	}
}

func TestTrainingErrors(t *testing.T) {
	s := newTraining(t, "mlp.onnx", sgdOptions(0.1))
	expectError(t, "Backward before Run", s.Backward(), ErrInvalidArgument, CodeInvalidArgument, "backward")
	_, err := s.Step()
	expectError(t, "Step without gradients", err, ErrInvalidArgument, CodeInvalidArgument, "step")
	_, err = s.Parameter("nope")
	expectError(t, "an unknown parameter", err, ErrNotFound, CodeNotFound, "nope")
	expectError(t, "a missing checkpoint", s.LoadCheckpoint(filepath.Join(t.TempDir(), "missing.ckpt")), ErrNotFound,
		CodeNotFound, "missing.ckpt")
	trainBatch(t, s)
	if err := s.Backward(); err != nil {
		t.Fatal(err)
	}
	expectError(t, "Backward twice after one Run", s.Backward(), ErrInvalidArgument, CodeInvalidArgument, "backward")

	s.Close()
	s.Close() // idempotent
	for what, err := range map[string]error{
		"Backward": s.Backward(), "SaveCheckpoint": s.SaveCheckpoint("x.ckpt"), "SetRunMode": s.SetRunMode(RunEval),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("%s after Close: %v, want ErrClosed", what, err)
		}
	}
	if _, err := s.Step(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Step after Close: %v", err)
	}
	if _, err := s.ParameterValues("fc1.bias"); !errors.Is(err, ErrClosed) {
		t.Fatalf("ParameterValues after Close: %v", err)
	}

	// Bad options name the problem; a closed graph is refused.
	o := sgdOptions(0.1)
	o.Nesterov = true
	_, err = NewTrainingSessionFromFile(trainFixture(t, "mlp.onnx"), o)
	expectError(t, "nesterov without momentum", err, ErrInvalidArgument, CodeInvalidArgument, "Nesterov")
	_, err = NewTrainingSessionFromFile(trainFixture(t, "mlp.onnx"), DefaultTrainingOptions())
	expectError(t, "no logits output", err, ErrInvalidArgument, CodeInvalidArgument, "logits_output")
	g := must(LoadGraph(trainFixture(t, "mlp.onnx")))(t)
	g.Close()
	if _, err := NewTrainingSession(g, sgdOptions(0.1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewTrainingSession on a closed graph: %v", err)
	}
	if err := g.Save(filepath.Join(t.TempDir(), "closed.ofm"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Save of a closed graph: %v", err)
	}
}

// TestTrainingConcurrentCallsAndClose drives one session's state machine from several goroutines
// while Close runs: every call works, reports the engine's state error, or returns ErrClosed.
func TestTrainingConcurrentCallsAndClose(t *testing.T) {
	s := newTraining(t, "mlp.onnx", sgdOptions(0.01))
	xs := readRaw[float32](t, trainFixture(t, "x.f32"))
	ys := readRaw[int64](t, trainFixture(t, "y.i64"))
	x := must(NewTensor(xs, 5, 4))(t)
	y := must(NewTensor(ys, 5))(t)
	defer closeAll(x, y)
	errs := make(chan error, 3)
	for g := 0; g < 3; g++ {
		go func() {
			for {
				outs, err := s.Run(map[string]*Tensor{"x": x, "labels": y})
				for _, o := range outs {
					o.Close()
				}
				if err == nil {
					err = s.Backward()
				}
				if err == nil {
					_, err = s.Step()
				}
				switch {
				case err == nil || errors.Is(err, ErrInvalidArgument):
				case errors.Is(err, ErrClosed):
					errs <- nil
					return
				default:
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	s.Close()
	for g := 0; g < 3; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
