// The Go binding of the OneFlow engine: a cgo package over include/oneflow_c.h (see README.md).
module github.com/oneflow-engine/oneflow-go

go 1.19
