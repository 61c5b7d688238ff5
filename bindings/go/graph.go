// graph.go — Graph: a loaded, validated ONNX model (oneflow_graph_t), and ValueInfo.
package oneflow

// #include <stdlib.h>
// #include "oneflow_c.h"
import "C"

import (
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ValueInfo describes a graph input or output.
type ValueInfo struct {
	Name string
	// Kind says whether the value is a tensor, a sequence or an optional; for the latter DType, Dims
	// and DimNames describe the element tensor.
	Kind  TypeKind
	DType DType
	// Dims has -1 for a dynamic dim; nil when the rank is unknown.
	Dims []int64
	// DimNames holds the symbolic name of each dynamic dim ("" when it has none); nil when the rank is unknown.
	DimNames []string
}

func valueInfo(c *C.oneflow_value_info_t) ValueInfo {
	v := ValueInfo{Name: C.GoString(c.name), Kind: TypeKind(c.kind), DType: DType(c.dtype)}
	if c.rank < 0 {
		return v
	}
	n := int(c.rank)
	v.Dims = make([]int64, n)
	v.DimNames = make([]string, n)
	if n > 0 {
		copy(v.Dims, unsafe.Slice((*int64)(unsafe.Pointer(c.dims)), n))
		names := unsafe.Slice(c.dim_names, n)
		for i, p := range names {
			if p != nil {
				v.DimNames[i] = C.GoString(p)
			}
		}
	}
	return v
}

// Graph is a loaded model. Immutable and safe for concurrent use. Sessions made from it keep their own
// copy, so it may be closed once they exist.
type Graph struct {
	mu sync.RWMutex
	h  *C.oneflow_graph_t
}

func adoptGraph(h *C.oneflow_graph_t) *Graph {
	g := &Graph{h: h}
	runtime.SetFinalizer(g, func(g *Graph) { g.Close() })
	return g
}

// cString is s as a C string (free it with C.free); a NUL inside would silently cut it, so it is refused.
func cString(s, what string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, invalidArgument("%s %q contains a NUL byte", what, s)
	}
	return C.CString(s), nil
}

// LoadGraph loads an ONNX file; external data files are resolved next to it (and must stay inside its
// directory).
func LoadGraph(path string) (*Graph, error) {
	cpath, err := cString(path, "path")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	var h *C.oneflow_graph_t
	if err := statusError(C.oneflow_graph_load_file(cpath, &h)); err != nil {
		return nil, err
	}
	return adoptGraph(h), nil
}

// LoadGraphBytes loads an ONNX model from memory (copied). External data files are resolved in
// externalDataDir; when it is "" a model that references external data is refused.
func LoadGraphBytes(model []byte, externalDataDir string) (*Graph, error) {
	var cdir *C.char
	if externalDataDir != "" {
		var err error
		if cdir, err = cString(externalDataDir, "externalDataDir"); err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(cdir))
	}
	var h *C.oneflow_graph_t
	var empty [1]byte // the engine wants a non-NULL pointer even for no bytes (then it reports the empty model)
	data := unsafe.Pointer(&empty[0])
	if len(model) > 0 {
		data = unsafe.Pointer(&model[0])
	}
	if err := statusError(C.oneflow_graph_load_memory(data, C.size_t(len(model)), cdir, &h)); err != nil {
		return nil, err
	}
	return adoptGraph(h), nil
}

// Inputs describes the graph inputs in declaration order.
func (g *Graph) Inputs() ([]ValueInfo, error) { return g.info(false) }

// Outputs describes the graph outputs in declaration order.
func (g *Graph) Outputs() ([]ValueInfo, error) { return g.info(true) }

func (g *Graph) info(outputs bool) ([]ValueInfo, error) {
	h, err := g.lock()
	if err != nil {
		return nil, err
	}
	defer g.mu.RUnlock()
	if outputs {
		return collectInfos(C.oneflow_graph_output_count(h), func(i C.size_t, c *C.oneflow_value_info_t) C.oneflow_status_t {
			return C.oneflow_graph_get_output_info(h, i, c)
		})
	}
	return collectInfos(C.oneflow_graph_input_count(h), func(i C.size_t, c *C.oneflow_value_info_t) C.oneflow_status_t {
		return C.oneflow_graph_get_input_info(h, i, c)
	})
}

func (g *Graph) lock() (*C.oneflow_graph_t, error) {
	g.mu.RLock()
	if g.h == nil {
		g.mu.RUnlock()
		return nil, closedError("Graph")
	}
	return g.h, nil
}

// Close releases the graph (sessions made from it keep working). Closing again does nothing.
func (g *Graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.h != nil {
		C.oneflow_graph_release(g.h)
		g.h = nil
		runtime.SetFinalizer(g, nil)
	}
	return nil
}
