// The Go binding of the OneFlow engine: a cgo package over include/oneflow_c.h (see README.md). The
// module lives in bindings/go of the repository github.com/oneflow-engine/oneflow (its versions are tags
// bindings/go/vX.Y.Z); offline, a `replace` directive points at a checkout or an installed copy
// (docs/install.md, "Go").
module github.com/oneflow-engine/oneflow/bindings/go

go 1.19
