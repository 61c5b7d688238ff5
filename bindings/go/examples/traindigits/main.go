// Command traindigits is the Go binding's training example: it trains the digits MLP for an epoch
// through a TrainingSession, prints a progress line and the test accuracy, exports the trained model
// to the native format and serves one prediction from the saved file.
//
//	go run ./examples/traindigits [-epochs N] [-min-accuracy PCT] DATA_DIR MODEL.onnx OUT_DIR
//
// DATA_DIR holds train_x/train_y/test_x/test_y.npy (examples/c/make_digits_data.py), MODEL.onnx the
// untrained MLP "input" [N, 64] -> "logits" [N, 10] (examples/c/make_digits_models.py). Exits 1 on an
// error or when the test accuracy is below -min-accuracy.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	oneflow "github.com/oneflow-engine/oneflow/bindings/go"
)

// npy is a little-endian float32 or int64 .npy array in C order (cols = 1 for 1-D).
type npy struct {
	rows, cols int
	f          []float32
	l          []int64
}

var shapeRe = regexp.MustCompile(`'shape': \((\d+),\s*(\d*)`)

func readNpy(path string) (*npy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 10 || !bytes.HasPrefix(b, []byte("\x93NUMPY")) {
		return nil, fmt.Errorf("%s: not a .npy file", path)
	}
	start, hlen := 10, int(binary.LittleEndian.Uint16(b[8:]))
	if b[6] != 1 {
		start, hlen = 12, int(binary.LittleEndian.Uint32(b[8:]))
	}
	header := string(b[start : start+hlen])
	m := shapeRe.FindStringSubmatch(header)
	if m == nil {
		return nil, fmt.Errorf("%s: no shape in %q", path, header)
	}
	a := &npy{cols: 1}
	a.rows, _ = strconv.Atoi(m[1])
	if m[2] != "" {
		a.cols, _ = strconv.Atoi(m[2])
	}
	r := bytes.NewReader(b[start+hlen:])
	switch {
	case bytes.Contains([]byte(header), []byte("'<f4'")):
		a.f = make([]float32, a.rows*a.cols)
		err = binary.Read(r, binary.LittleEndian, a.f)
	case bytes.Contains([]byte(header), []byte("'<i8'")):
		a.l = make([]int64, a.rows*a.cols)
		err = binary.Read(r, binary.LittleEndian, a.l)
	default:
		err = fmt.Errorf("%s: want <f4 or <i8", path)
	}
	return a, err
}

func argmax(v []float32) int {
	best := 0
	for c := range v {
		if v[c] > v[best] {
			best = c
		}
	}
	return best
}

// evaluate is the accuracy in % of s in eval mode on (x, y), as one batch.
func evaluate(s *oneflow.TrainingSession, x, y *npy) (float64, error) {
	if err := s.SetRunMode(oneflow.RunEval); err != nil {
		return 0, err
	}
	defer s.SetRunMode(oneflow.RunTrain)
	in, err := oneflow.NewTensor(x.f, int64(x.rows), int64(x.cols))
	if err != nil {
		return 0, err
	}
	defer in.Close()
	outs, err := s.RunOutputs(map[string]*oneflow.Tensor{"input": in}, "logits")
	if err != nil {
		return 0, err
	}
	defer outs[0].Close()
	logits, err := oneflow.Values[float32](outs[0])
	if err != nil {
		return 0, err
	}
	correct := 0
	for i := 0; i < x.rows; i++ {
		if int64(argmax(logits[i*10:i*10+10])) == y.l[i] {
			correct++
		}
	}
	return 100 * float64(correct) / float64(x.rows), nil
}

func main() {
	epochs := flag.Int("epochs", 1, "epochs to train")
	minAccuracy := flag.Float64("min-accuracy", 0, "exit 1 when the test accuracy (%) is below this")
	flag.Parse()
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: traindigits [-epochs N] [-min-accuracy PCT] DATA_DIR MODEL.onnx OUT_DIR")
		os.Exit(2)
	}
	acc, err := run(flag.Arg(0), flag.Arg(1), flag.Arg(2), *epochs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if acc < *minAccuracy {
		fmt.Fprintf(os.Stderr, "test accuracy %.2f%% is below the required %.2f%%\n", acc, *minAccuracy)
		os.Exit(1)
	}
}

func run(dataDir, model, outDir string, epochs int) (float64, error) {
	var arrays [4]*npy
	for i, name := range []string{"train_x", "train_y", "test_x", "test_y"} {
		a, err := readNpy(filepath.Join(dataDir, name+".npy"))
		if err != nil {
			return 0, err
		}
		arrays[i] = a
	}
	xtr, ytr, xte, yte := arrays[0], arrays[1], arrays[2], arrays[3]
	const batch = 32
	n, d := xtr.rows, xtr.cols
	stepsTotal := int64(epochs * ((n + batch - 1) / batch))

	o := oneflow.DefaultTrainingOptions()
	o.Loss, o.LogitsOutput, o.LabelsInput = oneflow.LossSoftmaxCrossEntropy, "logits", "labels"
	o.Optimizer, o.LearningRate, o.WeightDecay = oneflow.OptimizerAdamW, 1e-2, 1e-4
	o.LRSchedule, o.WarmupSteps, o.WarmupStartFactor = oneflow.LRCosine, stepsTotal/20, 0.1
	o.DecaySteps, o.MinLRFactor = stepsTotal-stepsTotal/20, 0.05
	o.MaxGradNorm = 5
	s, err := oneflow.NewTrainingSessionFromFile(model, o, oneflow.WithIntraOpThreads(2))
	if err != nil {
		return 0, err
	}
	defer s.Close()

	rng := rand.New(rand.NewSource(7))
	for epoch := 0; epoch < epochs; epoch++ {
		t0 := time.Now()
		perm := rng.Perm(n)
		lossSum, correct := 0.0, 0
		for b := 0; b < n; b += batch {
			m := batch
			if n-b < m {
				m = n - b // the short last batch is re-planned by the engine
			}
			bx, by := make([]float32, m*d), make([]int64, m)
			for i := 0; i < m; i++ {
				copy(bx[i*d:(i+1)*d], xtr.f[perm[b+i]*d:(perm[b+i]+1)*d])
				by[i] = ytr.l[perm[b+i]]
			}
			loss, hits, err := trainStep(s, bx, by, m, d)
			if err != nil {
				return 0, err
			}
			lossSum += float64(loss) * float64(m)
			correct += hits
		}
		testAcc, err := evaluate(s, xte, yte)
		if err != nil {
			return 0, err
		}
		st, err := s.State()
		if err != nil {
			return 0, err
		}
		fmt.Printf("epoch %d/%d  loss %.4f  train acc %5.1f%%  test acc %5.1f%%  lr %.2e  step %d  %.2f s\n",
			epoch+1, epochs, lossSum/float64(n), 100*float64(correct)/float64(n), testAcc, st.LearningRate, st.Step,
			time.Since(t0).Seconds())
	}
	acc, err := evaluate(s, xte, yte)
	if err != nil {
		return 0, err
	}
	fmt.Printf("test accuracy %.2f%% (%d samples)\n", acc, xte.rows)
	return acc, serve(s, outDir, xte, yte)
}

// trainStep runs, backpropagates and steps on one batch; returns its loss and correct predictions.
func trainStep(s *oneflow.TrainingSession, bx []float32, by []int64, m, d int) (float32, int, error) {
	x, err := oneflow.NewTensor(bx, int64(m), int64(d))
	if err != nil {
		return 0, 0, err
	}
	defer x.Close()
	y, err := oneflow.NewTensor(by, int64(m))
	if err != nil {
		return 0, 0, err
	}
	defer y.Close()
	outs, err := s.Run(map[string]*oneflow.Tensor{"input": x, "labels": y})
	if err != nil {
		return 0, 0, err
	}
	defer outs["logits"].Close()
	defer outs["loss"].Close()
	if err := s.Backward(); err != nil {
		return 0, 0, err
	}
	if applied, err := s.Step(); err != nil {
		return 0, 0, err
	} else if !applied {
		fmt.Fprintln(os.Stderr, "warning: a step was skipped (NaN/Inf)")
	}
	logits, err := oneflow.Values[float32](outs["logits"])
	if err != nil {
		return 0, 0, err
	}
	loss, err := oneflow.Values[float32](outs["loss"])
	if err != nil {
		return 0, 0, err
	}
	hits := 0
	for i := 0; i < m; i++ {
		if int64(argmax(logits[i*10:i*10+10])) == by[i] {
			hits++
		}
	}
	return loss[0], hits, nil
}

// serve exports the trained model to OUT_DIR/trained_go.ofm and predicts test sample 0 from the file.
func serve(s *oneflow.TrainingSession, outDir string, xte, yte *npy) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(outDir, "trained_go.ofm")
	g, err := s.ExportModel()
	if err != nil {
		return err
	}
	err = g.Save(path, nil)
	g.Close()
	if err != nil {
		return err
	}
	inf, err := oneflow.NewSession(path)
	if err != nil {
		return err
	}
	defer inf.Close()
	x, err := oneflow.NewTensor(xte.f[:xte.cols], 1, int64(xte.cols))
	if err != nil {
		return err
	}
	defer x.Close()
	outs, err := inf.Run(map[string]*oneflow.Tensor{"input": x})
	if err != nil {
		return err
	}
	defer outs["logits"].Close()
	logits, err := oneflow.Values[float32](outs["logits"])
	if err != nil {
		return err
	}
	fmt.Printf("served from %s: test sample 0 is a %d; its label is %d\n", filepath.Base(path), argmax(logits), yte.l[0])
	return nil
}
