// The kinds of device the engine runs on: the host and CUDA GPUs. Kernels register per kind
// (kernels/kernel.h), and the executor runs on one (device/run_device.h).
#pragma once

namespace oneflow {

enum class DeviceType { kCpu = 0, kCuda = 1 };

}  // namespace oneflow
