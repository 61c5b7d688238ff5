// The switches of switches.h: one flag each for the whole process.
#include "kernels/cpu/switches.h"

#include <atomic>
#include <cstdlib>

namespace oneflow {

namespace {

bool WinogradDefault() {
  const char* v = std::getenv("ONEFLOW_CONV_WINOGRAD");
  return !(v && v[0] == '0' && v[1] == '\0');
}

std::atomic<bool> g_dnnl_gemm_enabled{true};
std::atomic<bool> g_dnnl_conv_enabled{true};
std::atomic<bool> g_winograd_enabled{WinogradDefault()};

}  // namespace

void SetDnnlGemmEnabled(bool enabled) { g_dnnl_gemm_enabled = enabled; }
bool DnnlGemmSwitchOn() { return g_dnnl_gemm_enabled; }
void SetDnnlConvEnabled(bool enabled) { g_dnnl_conv_enabled = enabled; }
bool DnnlConvEnabled() { return g_dnnl_conv_enabled; }
void SetWinogradEnabled(bool enabled) { g_winograd_enabled = enabled; }
bool WinogradEnabled() { return g_winograd_enabled; }

}  // namespace oneflow
