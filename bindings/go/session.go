// session.go — Session: a model compiled for inference (oneflow_session_t), its options and Run.
package oneflow

// #include <stdlib.h>
// #include "oneflow_c.h"
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Option configures NewSession, NewSessionFromBytes and NewSessionFromGraph. Options left out keep the
// engine's defaults.
type Option func(*sessionConfig)

type sessionConfig struct {
	env               *Env
	intraOpThreads    *int
	optimizationLevel *int
	externalDataDir   string
}

// WithEnv makes the session use env instead of the engine's default environment.
func WithEnv(env *Env) Option { return func(c *sessionConfig) { c.env = env } }

// WithIntraOpThreads sets the threads per run; 0 (the engine's default) means one per core.
func WithIntraOpThreads(n int) Option { return func(c *sessionConfig) { c.intraOpThreads = &n } }

// WithOptimizationLevel sets 0 (none), 1 (constant folding, dead code) or 2 (the default: also fusions).
func WithOptimizationLevel(level int) Option {
	return func(c *sessionConfig) { c.optimizationLevel = &level }
}

// WithExternalDataDir is where NewSessionFromBytes finds a model's external data files.
func WithExternalDataDir(dir string) Option {
	return func(c *sessionConfig) { c.externalDataDir = dir }
}

// Session is a model compiled for inference: validated, optimized, memory planned, every kernel created
// (so an unsupported op fails here, not in Run). Safe for concurrent use: Run may be called from many
// goroutines at once.
type Session struct {
	mu      sync.RWMutex
	h       *C.oneflow_session_t
	inputs  []ValueInfo
	outputs []ValueInfo
}

// NewSession loads and compiles the ONNX model at path.
func NewSession(path string, opts ...Option) (*Session, error) {
	g, err := LoadGraph(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return NewSessionFromGraph(g, opts...)
}

// NewSessionFromBytes loads and compiles an ONNX model held in memory (see WithExternalDataDir).
func NewSessionFromBytes(model []byte, opts ...Option) (*Session, error) {
	var cfg sessionConfig
	for _, o := range opts {
		o(&cfg)
	}
	g, err := LoadGraphBytes(model, cfg.externalDataDir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return NewSessionFromGraph(g, opts...)
}

// NewSessionFromGraph compiles a loaded graph; the graph may be closed afterwards.
func NewSessionFromGraph(g *Graph, opts ...Option) (*Session, error) {
	h, err := createSession(g, opts, func(eh *C.oneflow_env_t, gh *C.oneflow_graph_t,
		so *C.oneflow_session_options_t, out **C.oneflow_session_t) C.oneflow_status_t {
		return C.oneflow_session_create(eh, gh, so, out)
	})
	if err != nil {
		return nil, err
	}
	s := &Session{h: h}
	runtime.SetFinalizer(s, func(s *Session) { s.Close() })
	if s.inputs, err = s.info(false); err == nil {
		s.outputs, err = s.info(true)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// createSession applies opts to the session options and calls create with the graph and env handles
// locked (an inference or a training session create call).
func createSession(g *Graph, opts []Option, create func(*C.oneflow_env_t, *C.oneflow_graph_t,
	*C.oneflow_session_options_t, **C.oneflow_session_t) C.oneflow_status_t) (*C.oneflow_session_t, error) {
	var cfg sessionConfig
	for _, o := range opts {
		o(&cfg)
	}
	var options C.oneflow_session_options_t
	C.oneflow_session_options_init_sized(&options, C.size_t(unsafe.Sizeof(options)))
	if cfg.intraOpThreads != nil {
		options.intra_op_threads = C.int32_t(*cfg.intraOpThreads)
	}
	if cfg.optimizationLevel != nil {
		options.optimization_level = C.int32_t(*cfg.optimizationLevel)
	}
	gh, err := g.lock()
	if err != nil {
		return nil, err
	}
	defer g.mu.RUnlock()
	var eh *C.oneflow_env_t
	if cfg.env != nil {
		cfg.env.mu.RLock()
		defer cfg.env.mu.RUnlock()
		if cfg.env.h == nil {
			return nil, closedError("Env")
		}
		eh = cfg.env.h
	}
	var h *C.oneflow_session_t
	if err := statusError(create(eh, gh, &options, &h)); err != nil {
		return nil, err
	}
	return h, nil
}

func (s *Session) info(outputs bool) ([]ValueInfo, error) { return sessionInfo(s.h, outputs) }

// sessionInfo describes the inputs or outputs of a live session (inference or training).
func sessionInfo(h *C.oneflow_session_t, outputs bool) ([]ValueInfo, error) {
	if outputs {
		return collectInfos(C.oneflow_session_output_count(h), func(i C.size_t, c *C.oneflow_value_info_t) C.oneflow_status_t {
			return C.oneflow_session_get_output_info(h, i, c)
		})
	}
	return collectInfos(C.oneflow_session_input_count(h), func(i C.size_t, c *C.oneflow_value_info_t) C.oneflow_status_t {
		return C.oneflow_session_get_input_info(h, i, c)
	})
}

// collectInfos reads n value descriptions through get (a graph's or a session's info call).
func collectInfos(n C.size_t, get func(C.size_t, *C.oneflow_value_info_t) C.oneflow_status_t) ([]ValueInfo, error) {
	infos := make([]ValueInfo, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		var c C.oneflow_value_info_t
		C.oneflow_value_info_init_sized(&c, C.size_t(unsafe.Sizeof(c)))
		if err := statusError(get(i, &c)); err != nil {
			return nil, err
		}
		infos = append(infos, valueInfo(&c))
	}
	return infos, nil
}

// Inputs describes the model inputs in declaration order.
func (s *Session) Inputs() []ValueInfo { return append([]ValueInfo{}, s.inputs...) }

// Outputs describes the model outputs in declaration order.
func (s *Session) Outputs() []ValueInfo { return append([]ValueInfo{}, s.outputs...) }

// Run feeds every model input by name and returns all outputs by name. The caller owns (and closes)
// the returned tensors; the inputs stay the caller's and are only read.
func (s *Session) Run(inputs map[string]*Tensor) (map[string]*Tensor, error) {
	outs, err := s.run(inputs, nil)
	if err != nil {
		return nil, err
	}
	m := make(map[string]*Tensor, len(outs))
	for i, t := range outs {
		m[s.outputs[i].Name] = t
	}
	return m, nil
}

// RunOutputs is Run returning only the named outputs, in the order named.
func (s *Session) RunOutputs(inputs map[string]*Tensor, outputNames ...string) ([]*Tensor, error) {
	if len(outputNames) == 0 {
		return nil, invalidArgument("RunOutputs needs at least one output name (Run returns them all)")
	}
	return s.run(inputs, outputNames)
}

func (s *Session) run(inputs map[string]*Tensor, outputNames []string) ([]*Tensor, error) {
	sh, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	return runSession(sh, inputs, outputNames, len(s.outputs))
}

// runSession runs the live session sh (its lock held by the caller). With no output names it makes room
// for numOutputs results and returns those the engine filled (a training session in eval mode fills
// fewer: the model outputs, not the loss).
func runSession(sh *C.oneflow_session_t, inputs map[string]*Tensor, outputNames []string,
	numOutputs int) ([]*Tensor, error) {
	// C strings and handles: Go slices holding C pointers, which cgo lets C read.
	var cstrings []*C.char
	defer func() {
		for _, p := range cstrings {
			C.free(unsafe.Pointer(p))
		}
	}()
	names := make([]*C.char, 0, len(inputs))
	handles := make([]*C.oneflow_tensor_t, 0, len(inputs))
	locked := map[*Tensor]bool{} // each tensor read-locked once, even when it feeds several inputs
	defer func() {
		for t := range locked {
			t.mu.RUnlock()
		}
	}()
	for name, t := range inputs {
		if t == nil {
			return nil, invalidArgument("input %q is a nil tensor", name)
		}
		cname, err := cString(name, "input name")
		if err != nil {
			return nil, err
		}
		cstrings = append(cstrings, cname)
		if !locked[t] {
			if _, err := t.lock(); err != nil {
				return nil, err
			}
			locked[t] = true
		}
		names = append(names, cname)
		handles = append(handles, t.h)
	}
	outNames := make([]*C.char, 0, len(outputNames))
	for _, name := range outputNames {
		cname, err := cString(name, "output name")
		if err != nil {
			return nil, err
		}
		cstrings = append(cstrings, cname)
		outNames = append(outNames, cname)
	}
	n := len(outputNames)
	if n == 0 {
		n = numOutputs
	}
	outs := make([]*C.oneflow_tensor_t, n+1) // +1: never an empty slice, the engine wants a non-NULL pointer
	st := C.oneflow_session_run(sh, (**C.char)(dataPointer(names)), (**C.oneflow_tensor_t)(dataPointer(handles)),
		C.size_t(len(handles)), (**C.char)(dataPointer(outNames)), C.size_t(len(outNames)), &outs[0], C.size_t(n))
	if err := statusError(st); err != nil {
		return nil, err
	}
	for n > 0 && outs[n-1] == nil {
		n--
	}
	result := make([]*Tensor, n)
	for i := range result {
		result[i] = adoptTensor(outs[i])
	}
	return result, nil
}

// PlannedPeakBytes is the arena size of the current static memory plan: all intermediate tensors of a
// run for the most recently used input shapes (0 before the first run when shapes are dynamic).
func (s *Session) PlannedPeakBytes() (uint64, error) {
	h, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	var n C.uint64_t
	if err := statusError(C.oneflow_session_get_planned_peak_bytes(h, &n)); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

func (s *Session) lock() (*C.oneflow_session_t, error) {
	s.mu.RLock()
	if s.h == nil {
		s.mu.RUnlock()
		return nil, closedError("Session")
	}
	return s.h, nil
}

// Close releases the session once runs in flight have returned. Later calls return ErrClosed; closing
// again does nothing.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil {
		C.oneflow_session_release(s.h)
		s.h = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}
