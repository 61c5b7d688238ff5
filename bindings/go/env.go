// env.go — Env: process-wide engine state shared by sessions (oneflow_env_t).
package oneflow

// #include "oneflow_c.h"
import "C"

import (
	"runtime"
	"sync"
)

// Env holds process-wide state (devices and, later, the distributed context). Optional: sessions made
// without WithEnv use the engine's default. Sessions keep what they need, so an Env may be closed
// before them. Safe for concurrent use.
type Env struct {
	mu sync.RWMutex
	h  *C.oneflow_env_t
}

// NewEnv creates an environment.
func NewEnv() (*Env, error) {
	var h *C.oneflow_env_t
	if err := statusError(C.oneflow_env_create(&h)); err != nil {
		return nil, err
	}
	e := &Env{h: h}
	runtime.SetFinalizer(e, func(e *Env) { e.Close() })
	return e, nil
}

// Close releases the environment. Closing again does nothing.
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h != nil {
		C.oneflow_env_release(e.h)
		e.h = nil
		runtime.SetFinalizer(e, nil)
	}
	return nil
}
