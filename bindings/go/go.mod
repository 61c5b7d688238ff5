module github.com/oneflow-engine/oneflow-go

go 1.19
