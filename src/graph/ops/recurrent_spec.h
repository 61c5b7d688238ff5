// The attributes of ONNX RNN, GRU and LSTM, parsed and checked in one place: shape inference
// (ops/recurrent.cc), the gradient rule and the CPU kernels (kernels/cpu/recurrent.cc) all read a
// RecurrentSpec, so an attribute means the same thing to each of them.
//
// The three ops share one structure: per direction, `gates` blocks of `hidden_size` rows in W
// [num_directions, gates*H, input_size] and R [num_directions, gates*H, H], biases B
// [num_directions, 2*gates*H] (W's then R's), and per step a recurrence
//   RNN:  H = f(x W^T + H R^T + b)
//   GRU:  gates z, r, h (that order in W and R): z = f(.), r = f(.), h = g(x Wh^T + (r.H) Rh^T + b)
//         (or r.(H Rh^T + Rbh) with linear_before_reset), H = (1 - z).h + z.H
//   LSTM: gates i, o, f, c: i = f(. + Pi.C), f = f(. + Pf.C), c = g(.), C = f.C + i.c,
//         o = f(. + Po.C_new), H = o.h(C)
// `clip` bounds every gate's input to its activation to [-clip, clip].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/attribute.h"

namespace oneflow {

enum class RecurrentCell { kRnn, kGru, kLstm };

// The activation functions the ONNX recurrent ops accept (their `activations` strings, case
// insensitive), each with the alpha/beta it reads.
enum class RnnActivation {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,           // alpha * x + beta
  kLeakyRelu,        // x >= 0 ? x : alpha * x
  kThresholdedRelu,  // x > alpha ? x : 0
  kScaledTanh,       // alpha * tanh(beta * x)
  kHardSigmoid,      // max(0, min(1, alpha * x + beta))
  kElu,              // x >= 0 ? x : alpha * (exp(x) - 1)
  kSoftsign,         // x / (1 + |x|)
  kSoftplus,         // log(1 + exp(x))
};

struct RnnActivationFn {
  RnnActivation kind = RnnActivation::kTanh;
  float alpha = 0.0f;
  float beta = 0.0f;
};

struct RecurrentSpec {
  RecurrentCell cell = RecurrentCell::kRnn;
  int gates = 1;           // weight blocks per direction: RNN 1, GRU 3, LSTM 4
  int num_directions = 1;  // 2 for "bidirectional"
  bool reverse = false;    // direction "reverse" (one direction, run from the last step)
  int64_t hidden_size = 0;  // 0 when the attribute is absent: W's rows / gates
  float clip = 0.0f;        // 0: no clipping
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM: f = 1 - i
  int layout = 0;  // 0: X [seq, batch, input]; 1: X [batch, seq, input] (opset 14)
  // Per direction, the cell's activation functions in the spec's order (RNN: f; GRU: f, g;
  // LSTM: f, g, h): activations[dir * per_direction + k].
  int per_direction = 1;
  std::vector<RnnActivationFn> activations;

  const RnnActivationFn& activation(int direction, int k) const {
    return activations[static_cast<size_t>(direction * per_direction + k)];
  }
  // Whether run `direction` (0 or 1) walks the sequence from its last step.
  bool runs_backward(int direction) const { return reverse || direction == 1; }
};

const char* RecurrentCellName(RecurrentCell cell);

// Reads and checks the node's attributes; errors (kInvalidArgument) name `node_desc` and the
// attribute. Alpha and beta values are consumed in order by the functions that read them (Affine,
// LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu), each taking ONNX's default for its
// operator when the lists run out: the reading onnxruntime implements.
RecurrentSpec ParseRecurrentSpec(RecurrentCell cell, const AttrMap& attrs, const std::string& node_desc);

}  // namespace oneflow
