// The `oneflow` command-line tool: dispatch to subcommands, usage text and error reporting.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "base/cpu_isa.h"
#include "base/error.h"
#include "cli.h"
#include "oneflow_c.h"

#ifndef ONEFLOW_VERSION_STRING
#define ONEFLOW_VERSION_STRING "0.0.0"
#endif

namespace oneflow {
namespace cli {

static const char kUsage[] =
    "usage: oneflow <command> [options]\n"
    "\n"
    "commands:\n"
    "  run MODEL --input NAME=FILE.npy ... --output-dir DIR [--threads N] [--opt-level L]\n"
    "          [--device cpu|cuda[:N]] [--cuda-graphs auto|on|off]\n"
    "      Runs the model once and writes each output to DIR/<name>.npy (characters of the name\n"
    "      outside [A-Za-z0-9._-] become '_'). --device cuda runs it on a CUDA device (CPU\n"
    "      fallback for ops without a CUDA kernel; docs/cuda.md).\n"
    "  bench MODEL [--input NAME=FILE.npy ...] [--shape NAME=1x3x224x224 ...] [--threads N]\n"
    "              [--warmup W] [--iters K] [--seed S] [--opt-level L]\n"
    "              [--device cpu|cuda[:N]] [--cuda-graphs auto|on|off] [--trace FILE.json]\n"
    "      Times repeated runs on random inputs (or the given ones) and prints one JSON line with\n"
    "      p50_ms, p90_ms, mean_ms, min_ms, max_ms, iters, threads and planned_peak_bytes.\n"
    "      Inputs with symbolic dims need --shape. --trace writes a timeline of the session's\n"
    "      creation and every run (Chrome-trace JSON for ui.perfetto.dev; docs/profiling.md).\n"
    "  info MODEL\n"
    "      Prints inputs, outputs, opset imports, an op histogram and the ops this build does not\n"
    "      support.\n"
    "  convert IN OUT [--external-data FILE] [--no-checksums]\n"
    "      Converts between ONNX (.onnx) and the native format (.ofm), chosen by OUT's extension\n"
    "      (IN's format is read from its contents). --external-data writes a native model's weights\n"
    "      to FILE next to OUT. The output is written atomically.\n"
    "  plan MODEL --placement P [--mode data|manual|auto] [--json] [--shape NAME=8x784 ...]\n"
    "             [--sbp VALUE=SBP ...] [--memory-budget-mb M] [--link-gbps G] [--latency-us U]\n"
    "             [--gflops F] [--train LOSS --logits OUTPUT [--optimizer sgd|adam|adamw] [--zero 0|1|2|3]\n"
    "             [--pipeline STAGES [--micro-batches M]]]\n"
    "      Plans the model as global tensors over placement P (cpu:0-3, cpu:[[0,1],[2,3]]) and\n"
    "      explains it: the SBP of every op, each inserted collective with bytes and time,\n"
    "      memory per device and the estimated step time (docs/distributed.md). --train plans a\n"
    "      training step instead (LOSS: softmax_cross_entropy, mse or l1 appended to OUTPUT, fed\n"
    "      as input 'labels': give its --shape too), with gradient reduction and optimizer state.\n"
    "  launch -n N [--nnodes M --node-rank R --master-addr A] [--master-port P] [--grace-s S]\n"
    "         -- PROGRAM [ARGS...]\n"
    "      Starts this host's N processes of PROGRAM, ranks R*N .. R*N+N-1 of a job of M*N, with\n"
    "      RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT\n"
    "      (torchrun's variables). Rank 0 serves the job's rendezvous store at A:P (default\n"
    "      127.0.0.1 and, on one host, a free port; 29500 across hosts); run the same command on\n"
    "      every host with its --node-rank (docs/distributed.md). When one process fails, the\n"
    "      others are stopped after S seconds (default 10). Exits with the first failure's status.\n"
    "  serve --model-repository DIR [--http-port 8000] [--grpc-port 8001] [--metrics-port 8002]\n"
    "        [--host 127.0.0.1] [--threads N] [--http-threads N] [--max-request-mb M]\n"
    "        [--idle-timeout-s S] [--drain-timeout-s S] [--access-log]\n"
    "      Serves the models of a Triton-style repository (DIR/<model>/<version>/model.onnx or\n"
    "      model.ofm, optional DIR/<model>/config.pbtxt) over KServe v2 HTTP and gRPC, with\n"
    "      dynamic batching and Prometheus metrics (docs/serving.md). Port 0 picks a free port;\n"
    "      -1 turns a front end off. SIGTERM or SIGINT stops it after finishing accepted requests\n"
    "      (up to --drain-timeout-s, default 30).\n"
    "  help                 this text\n"
    "  --version            the version, and the CPU kernels' instruction set (ONEFLOW_MAX_ISA caps it)\n"
    "\n"
    "MODEL may be ONNX or native (.ofm); the format is read from the file's first bytes.\n"
    "Options take their value as the next argument or after '=' (--threads=4). --threads 0 (the\n"
    "default) uses one thread per core. Exit status: 0 success, 1 error, 2 usage error.\n";

// Errors go to stderr as one line, so scripts can show them verbatim.
static void PrintError(const std::string& prefix, const std::string& message) {
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::fprintf(stderr, "oneflow: %s%s\n", prefix.c_str(), line.c_str());
}

static int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintError("usage error: ", "no command given (commands: run, bench, info, convert, plan, launch, serve, help; see 'oneflow help')");
    return 2;
  }
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (cmd == "--version" || cmd == "version") {
      std::printf("oneflow %s (C ABI version %d)\n", ONEFLOW_VERSION_STRING, ONEFLOW_API_VERSION);
      // Which kernels this CPU runs (base/cpu_isa.h): the tier picked by CPUID and ONEFLOW_MAX_ISA.
      std::printf("cpu: %s\n", oneflow::CpuIsaSummary().c_str());
      return 0;
    }
    if (cmd == "run") return RunCommand(rest);
    if (cmd == "bench") return BenchCommand(rest);
    if (cmd == "info") return InfoCommand(rest);
    if (cmd == "convert") return ConvertCommand(rest);
    if (cmd == "plan") return PlanCommand(rest);
    if (cmd == "launch") return LaunchCommand(rest);
    if (cmd == "serve") return ServeCommand(rest);
    throw UsageError("unknown command '" + cmd + "' (commands: run, bench, info, convert, plan, launch, serve, help; see 'oneflow help')");
  } catch (const UsageError& e) {
    PrintError("usage error: ", e.what());
    return 2;
  } catch (const Error& e) {
    PrintError("error: ", std::string(ErrorCodeName(e.code())) + ": " + e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    PrintError("error: ", "OUT_OF_MEMORY: out of memory");
    return 1;
  } catch (const std::exception& e) {
    PrintError("error: ", std::string("INTERNAL: ") + e.what());
    return 1;
  }
}

}  // namespace cli
}  // namespace oneflow

int main(int argc, char** argv) { return oneflow::cli::Main(argc, argv); }
