// training.go — TrainingSession: a model compiled for training (oneflow_training_session_create):
// Run in train or eval mode, Backward, Step, parameters and gradients, checkpoints and export.
package oneflow

// #include <stdlib.h>
// #include "oneflow_c.h"
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// RunMode is what TrainingSession.Run computes (oneflow_run_mode_t).
type RunMode int

const (
	// RunTrain needs every input (labels too), keeps what Backward needs and returns the outputs then the loss.
	RunTrain RunMode = C.ONEFLOW_RUN_TRAIN
	// RunEval needs only the inputs the model outputs read, keeps nothing and returns the model outputs.
	RunEval RunMode = C.ONEFLOW_RUN_EVAL
)

// TrainingState is a snapshot of a training session's progress (oneflow_training_state_t).
type TrainingState struct {
	Step         int64   // updates applied
	SkippedSteps int64   // updates skipped by the NaN/Inf policy
	LearningRate float32 // the rate the next step will use
	LastLoss     float64 // the loss of the last train-mode run (NaN before the first)
	LastGradNorm float64 // global gradient norm before clipping at the last step (NaN before)
}

// TrainingMemory is the intermediate memory of one step, from the plans of the last input shapes.
type TrainingMemory struct {
	ForwardArenaBytes, SavedActivationBytes, BackwardArenaBytes, PeakBytes uint64
}

// TrainingSession is a model plus a loss, its gradient graph and an optimizer. One step is Run (in
// RunTrain mode), Backward, Step; several Run+Backward pairs before a Step accumulate gradients. The
// engine keeps the state machine: Backward without a train-mode Run, or Step without Backward, fail
// with ErrInvalidArgument. Safe for concurrent use, but the engine serializes the calls (a training
// session is a state machine). Parameters are float32.
type TrainingSession struct {
	mu      sync.RWMutex
	h       *C.oneflow_session_t
	inputs  []ValueInfo
	outputs []ValueInfo
	params  []string
}

// NewTrainingSession builds a training session from g (which may be closed afterwards) with the
// training options to and the session options opts (WithIntraOpThreads, ...).
func NewTrainingSession(g *Graph, to TrainingOptions, opts ...Option) (*TrainingSession, error) {
	var c C.oneflow_training_options_t
	free, err := to.toC(&c)
	if err != nil {
		return nil, err
	}
	defer free()
	h, err := createSession(g, opts, func(eh *C.oneflow_env_t, gh *C.oneflow_graph_t,
		so *C.oneflow_session_options_t, out **C.oneflow_session_t) C.oneflow_status_t {
		return C.oneflow_training_session_create(eh, gh, so, &c, out)
	})
	if err != nil {
		return nil, err
	}
	s := &TrainingSession{h: h}
	runtime.SetFinalizer(s, func(s *TrainingSession) { s.Close() })
	if s.inputs, err = sessionInfo(h, false); err == nil {
		s.outputs, err = sessionInfo(h, true)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	n := C.oneflow_session_parameter_count(h)
	for i := C.size_t(0); i < n; i++ {
		s.params = append(s.params, C.GoString(C.oneflow_session_parameter_name(h, i)))
	}
	return s, nil
}

// NewTrainingSessionFromFile loads a model file (ONNX or native .ofm) and builds a training session.
func NewTrainingSessionFromFile(path string, to TrainingOptions, opts ...Option) (*TrainingSession, error) {
	g, err := LoadGraph(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return NewTrainingSession(g, to, opts...)
}

// Inputs describes the inputs of a train-mode run: the model's, then an appended loss's labels.
func (s *TrainingSession) Inputs() []ValueInfo { return append([]ValueInfo{}, s.inputs...) }

// Outputs describes the outputs of a train-mode run: the model's, then the loss (unless it is one of them).
func (s *TrainingSession) Outputs() []ValueInfo { return append([]ValueInfo{}, s.outputs...) }

// ParameterNames lists the trained parameters (frozen ones excluded) in the model's initializer order.
func (s *TrainingSession) ParameterNames() []string { return append([]string{}, s.params...) }

func (s *TrainingSession) lock() (*C.oneflow_session_t, error) {
	s.mu.RLock()
	if s.h == nil {
		s.mu.RUnlock()
		return nil, closedError("TrainingSession")
	}
	return s.h, nil
}

// call runs f on the live handle with the read lock held.
func (s *TrainingSession) call(f func(h *C.oneflow_session_t) C.oneflow_status_t) error {
	h, err := s.lock()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return statusError(f(h))
}

// SetRunMode sets the mode of later runs (a new session starts in RunTrain).
func (s *TrainingSession) SetRunMode(mode RunMode) error {
	return s.call(func(h *C.oneflow_session_t) C.oneflow_status_t {
		return C.oneflow_session_set_run_mode(h, C.oneflow_run_mode_t(mode))
	})
}

// Run runs forward in the current mode and returns the outputs by name: in RunTrain mode every output
// (the loss too), in RunEval mode the model outputs. The caller closes the returned tensors.
func (s *TrainingSession) Run(inputs map[string]*Tensor) (map[string]*Tensor, error) {
	h, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	outs, err := runSession(h, inputs, nil, len(s.outputs))
	if err != nil {
		return nil, err
	}
	m := make(map[string]*Tensor, len(outs))
	for i, t := range outs { // eval mode returns a prefix: the model outputs come first
		m[s.outputs[i].Name] = t
	}
	return m, nil
}

// RunOutputs is Run returning only the named outputs, in the order named.
func (s *TrainingSession) RunOutputs(inputs map[string]*Tensor, outputNames ...string) ([]*Tensor, error) {
	if len(outputNames) == 0 {
		return nil, invalidArgument("RunOutputs needs at least one output name (Run returns them all)")
	}
	h, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	return runSession(h, inputs, outputNames, len(outputNames))
}

// Backward adds the gradients of the last train-mode run to the accumulated ones.
func (s *TrainingSession) Backward() error {
	return s.call(func(h *C.oneflow_session_t) C.oneflow_status_t { return C.oneflow_session_backward(h) })
}

// Step clips, updates every trained parameter, zeroes the gradients and advances the step counter.
// applied is false when the NaN/Inf policy NonfiniteSkip dropped the update.
func (s *TrainingSession) Step() (applied bool, err error) {
	var a C.int32_t
	err = s.call(func(h *C.oneflow_session_t) C.oneflow_status_t { return C.oneflow_session_step(h, &a) })
	return a != 0, err
}

// ZeroGradients drops the accumulated gradients (and a NaN/Inf loss seen since the last step).
func (s *TrainingSession) ZeroGradients() error {
	return s.call(func(h *C.oneflow_session_t) C.oneflow_status_t { return C.oneflow_session_zero_gradients(h) })
}

// Parameter is a copy of a parameter's value (the caller closes it); ErrNotFound for an unknown name.
func (s *TrainingSession) Parameter(name string) (*Tensor, error) { return s.fetch(name, false) }

// Gradient is a copy of a parameter's accumulated gradient (zeros when none); the caller closes it.
func (s *TrainingSession) Gradient(name string) (*Tensor, error) { return s.fetch(name, true) }

// ParameterValues is a parameter's value as a row-major slice.
func (s *TrainingSession) ParameterValues(name string) ([]float32, error) {
	return s.values(name, false)
}

// GradientValues is a parameter's accumulated gradient as a row-major slice.
func (s *TrainingSession) GradientValues(name string) ([]float32, error) { return s.values(name, true) }

func (s *TrainingSession) values(name string, gradient bool) ([]float32, error) {
	t, err := s.fetch(name, gradient)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return Values[float32](t)
}

func (s *TrainingSession) fetch(name string, gradient bool) (*Tensor, error) {
	cname, err := cString(name, "parameter name")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cname))
	var t *C.oneflow_tensor_t
	err = s.call(func(h *C.oneflow_session_t) C.oneflow_status_t {
		if gradient {
			return C.oneflow_session_get_gradient(h, cname, &t)
		}
		return C.oneflow_session_get_parameter(h, cname, &t)
	})
	if err != nil {
		return nil, err
	}
	return adoptTensor(t), nil
}

// SetParameter overwrites a parameter with a copy of value (same dtype and shape required).
func (s *TrainingSession) SetParameter(name string, value *Tensor) error {
	if value == nil {
		return invalidArgument("SetParameter %q: value is a nil tensor", name)
	}
	cname, err := cString(name, "parameter name")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cname))
	th, err := value.lock()
	if err != nil {
		return err
	}
	defer value.mu.RUnlock()
	return s.call(func(h *C.oneflow_session_t) C.oneflow_status_t {
		return C.oneflow_session_set_parameter(h, cname, th)
	})
}

// SetParameterValues overwrites a parameter with row-major values shaped like the parameter.
func (s *TrainingSession) SetParameterValues(name string, values []float32) error {
	p, err := s.Parameter(name)
	if err != nil {
		return err
	}
	shape := p.Shape()
	p.Close()
	t, err := NewTensor(values, shape...)
	if err != nil {
		return err
	}
	defer t.Close()
	return s.SetParameter(name, t)
}

// State reports the step counters, the next learning rate and the last loss and gradient norm.
func (s *TrainingSession) State() (TrainingState, error) {
	var c C.oneflow_training_state_t
	C.oneflow_training_state_init_sized(&c, C.size_t(unsafe.Sizeof(c)))
	err := s.call(func(h *C.oneflow_session_t) C.oneflow_status_t {
		return C.oneflow_session_get_training_state(h, &c)
	})
	return TrainingState{Step: int64(c.step), SkippedSteps: int64(c.skipped_steps),
		LearningRate: float32(c.learning_rate), LastLoss: float64(c.last_loss),
		LastGradNorm: float64(c.last_grad_norm)}, err
}

// Memory reports the intermediate memory of one step.
func (s *TrainingSession) Memory() (TrainingMemory, error) {
	var c C.oneflow_training_memory_t
	C.oneflow_training_memory_init_sized(&c, C.size_t(unsafe.Sizeof(c)))
	err := s.call(func(h *C.oneflow_session_t) C.oneflow_status_t {
		return C.oneflow_session_get_training_memory(h, &c)
	})
	return TrainingMemory{uint64(c.forward_arena_bytes), uint64(c.saved_activation_bytes),
		uint64(c.backward_arena_bytes), uint64(c.peak_bytes)}, err
}

// SaveCheckpoint writes parameters, optimizer state, gradients and the step counter, atomically.
func (s *TrainingSession) SaveCheckpoint(path string) error { return s.checkpoint(path, false) }

// LoadCheckpoint restores a checkpoint of the same model and optimizer. On failure (ErrInvalidArgument
// naming mismatches, ErrInvalidModel or ErrIO for a damaged file) the session is unchanged.
func (s *TrainingSession) LoadCheckpoint(path string) error { return s.checkpoint(path, true) }

func (s *TrainingSession) checkpoint(path string, load bool) error {
	cpath, err := cString(path, "path")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cpath))
	return s.call(func(h *C.oneflow_session_t) C.oneflow_status_t {
		if load {
			return C.oneflow_session_load_checkpoint(h, cpath)
		}
		return C.oneflow_session_save_checkpoint(h, cpath)
	})
}

// ExportModel returns the model as loaded (no loss, no gradients) holding the current parameters:
// save it (Graph.Save) or serve it (NewSessionFromGraph). The caller closes it.
func (s *TrainingSession) ExportModel() (*Graph, error) {
	var g *C.oneflow_graph_t
	if err := s.call(func(h *C.oneflow_session_t) C.oneflow_status_t {
		return C.oneflow_session_export_model(h, &g)
	}); err != nil {
		return nil, err
	}
	return adoptGraph(g), nil
}

// Close releases the session once calls in flight have returned. Later calls return ErrClosed;
// closing again does nothing.
func (s *TrainingSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil {
		C.oneflow_session_release(s.h)
		s.h = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}
