// Package oneflow runs and trains ONNX (and native .ofm) models with the OneFlow engine through its C
// ABI (liboneflow.so).
//
// It is a thin cgo layer: it converts Go values to C arguments and statuses to errors, and holds no
// engine logic. Session serves a model; TrainingSession (NewTrainingSession with TrainingOptions)
// trains one with Run, Backward and Step, and exports it as a Graph that Graph.Save writes.
//
//	sess, err := oneflow.NewSession("model.onnx", oneflow.WithIntraOpThreads(1))
//	if err != nil { ... }
//	defer sess.Close()
//	x, err := oneflow.NewTensor([]float32{...}, 1, 64)
//	if err != nil { ... }
//	defer x.Close()
//	out, err := sess.Run(map[string]*oneflow.Tensor{"x": x})
//	if err != nil { ... }
//	probs, err := oneflow.Values[float32](out["probs"])
//
// # Memory
//
// Tensors live in C memory. NewTensor copies a Go slice into it: cgo forbids C from keeping a Go
// pointer after a call returns, and Go 1.19 has no runtime.Pinner to lift that, so zero-copy input is
// not offered. Values and Bytes copy results back into Go slices.
//
// # Lifetimes
//
// Env, Graph, Session, TrainingSession and Tensor own C handles. Call Close when done (it is idempotent); a finalizer
// releases a forgotten handle once the object is unreachable, but the Go GC cannot see C memory, so
// do not rely on it. Any use after Close returns an error matching ErrClosed.
//
// # Concurrency
//
// All types are safe for concurrent use. Session.Run may be called from many goroutines at once, on
// one session, also with shared input tensors. Close waits for calls in flight on that object.
//
// # Errors
//
// Engine failures are *Error values carrying the engine's Code and message; errors.Is matches them
// against the sentinel errors (ErrInvalidArgument, ErrNotFound, ...), one per code.
package oneflow
