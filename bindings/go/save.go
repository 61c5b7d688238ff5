// save.go — Graph.Save: a loaded or exported model written as ONNX or the native .ofm format.
package oneflow

// #include <stdlib.h>
// #include "oneflow_c.h"
import "C"

import "unsafe"

// ModelFormat is a model file format (oneflow_model_format_t). Loading detects it from the content.
type ModelFormat int

const (
	FormatAuto   ModelFormat = C.ONEFLOW_FORMAT_AUTO   // by the path's extension: .ofm native, else ONNX
	FormatONNX   ModelFormat = C.ONEFLOW_FORMAT_ONNX   // ONNX protobuf
	FormatNative ModelFormat = C.ONEFLOW_FORMAT_NATIVE // OneFlow's container with mmapped weights (.ofm)
)

// SaveOptions tunes Graph.Save; the zero value (and nil) are the engine's defaults.
type SaveOptions struct {
	Format ModelFormat
	// ExternalDataFile (native only): a plain file name next to the model that receives the weights;
	// "" stores them in the model file.
	ExternalDataFile string
	// NoChecksums (native only) leaves out the per-tensor checksums.
	NoChecksums bool
}

// Save writes the model as loaded (not a session's optimized form) to path. The write is atomic: a
// failure never leaves a damaged file. ONNX output from a build without the exporter fails with
// ErrUnsupported.
func (g *Graph) Save(path string, opts *SaveOptions) error {
	if opts == nil {
		opts = &SaveOptions{}
	}
	cpath, err := cString(path, "path")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cpath))
	var o C.oneflow_save_options_t
	C.oneflow_save_options_init_sized(&o, C.size_t(unsafe.Sizeof(o)))
	o.format = C.oneflow_model_format_t(opts.Format)
	if opts.ExternalDataFile != "" {
		if o.external_data_file, err = cString(opts.ExternalDataFile, "ExternalDataFile"); err != nil {
			return err
		}
		defer C.free(unsafe.Pointer(o.external_data_file))
	}
	if opts.NoChecksums {
		o.checksums = 0
	}
	h, err := g.lock()
	if err != nil {
		return err
	}
	defer g.mu.RUnlock()
	return statusError(C.oneflow_graph_save(h, cpath, &o))
}
