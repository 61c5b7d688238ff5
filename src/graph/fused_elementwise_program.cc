// FusedElementwise programs: attribute encoding, validation and operand index maps.
#include "graph/fused_elementwise_program.h"

#include <algorithm>

#include "base/error.h"

namespace oneflow {

namespace {

struct OpInfo {
  const char* name;
  int params;   // constants read by a unary op at index b
  double cost;  // cycles per element (the CPU kernels' kCheapCost / kMathCost / kLibmCost scale)
};

constexpr OpInfo kLoadConst[] = {{"Load", 0, 1}, {"Const", 0, 0.2}};

OpInfo Info(EwOp op) {
  if (op <= EwOp::kConst) return kLoadConst[static_cast<size_t>(op)];
  if (EwIsBinary(op)) {
    const BinaryOpInfo& row = BinaryInfo(BinaryOfEwOp(op));
    return OpInfo{row.name, 0, row.cost};
  }
  const UnaryOpInfo& row = UnaryInfo(RowOfEwOp(op));
  return OpInfo{row.token, row.params.count, row.cost};
}

}  // namespace

bool EwIsUnary(EwOp op) { return op > EwOp::kConst && static_cast<int>(op) < kEwFirstBinary; }
bool EwIsBinary(EwOp op) { return static_cast<int>(op) >= kEwFirstBinary && op < EwOp::kCount; }
const char* EwOpName(EwOp op) { return op >= EwOp::kLoad && op < EwOp::kCount ? Info(op).name : "?"; }
double EwOpCost(EwOp op) { return Info(op).cost; }

void EwProgram::ToAttrs(AttrMap& attrs) const {
  std::vector<int64_t> ints;
  ints.reserve(code.size() * 4);
  for (const EwInstr& in : code)
    for (int64_t v : {static_cast<int64_t>(in.op), int64_t{in.dst}, int64_t{in.a}, int64_t{in.b}}) ints.push_back(v);
  attrs.set("program", Attribute::Ints(std::move(ints)));
  attrs.set("constants", Attribute::Floats(constants));
  attrs.set("num_registers", Attribute::Int(num_registers));
}

EwProgram EwProgram::FromAttrs(const AttrMap& attrs, size_t num_inputs, const std::string& what) {
  EwProgram p;
  const std::vector<int64_t>& ints = attrs.GetInts("program");
  p.constants = attrs.GetFloats("constants");
  const int64_t regs = attrs.GetInt("num_registers");
  auto bad = [&](const auto&... parts) { Fail(ErrorCode::kInvalidModel, what, ": FusedElementwise program: ", parts...); };
  if (ints.empty() || ints.size() % 4 != 0) bad("'program' must hold 4 ints per instruction, got ", ints.size());
  if (ints.size() / 4 > static_cast<size_t>(kEwMaxInstructions)) bad("more than ", kEwMaxInstructions, " instructions");
  if (regs < 1 || regs > kEwMaxRegisters) bad("num_registers must be in [1, ", kEwMaxRegisters, "], got ", regs);
  if (num_inputs > static_cast<size_t>(kEwMaxInputs)) bad("more than ", kEwMaxInputs, " inputs");
  if (p.constants.size() > static_cast<size_t>(kEwMaxConstants)) bad("more than ", kEwMaxConstants, " constants");
  p.num_registers = static_cast<int>(regs);
  std::vector<char> written(static_cast<size_t>(regs), 0);
  auto reg = [&](int64_t r, size_t i) {
    if (r < 0 || r >= regs) bad("instruction ", i, " names register ", r, " of ", regs);
    if (!written[static_cast<size_t>(r)]) bad("instruction ", i, " reads register ", r, " before it is written");
  };
  for (size_t i = 0; i < ints.size() / 4; ++i) {
    const int64_t* w = &ints[i * 4];
    if (w[0] < 0 || w[0] >= static_cast<int64_t>(EwOp::kCount)) bad("instruction ", i, " has unknown op ", w[0]);
    const EwOp op = static_cast<EwOp>(w[0]);
    if (op == EwOp::kLoad && (w[2] < 0 || w[2] >= static_cast<int64_t>(num_inputs)))
      bad("instruction ", i, " loads input ", w[2], " of ", num_inputs);
    const int64_t nconst = static_cast<int64_t>(p.constants.size());
    if (op == EwOp::kConst && (w[2] < 0 || w[2] >= nconst)) bad("instruction ", i, " reads constant ", w[2], " of ", nconst);
    if (EwIsUnary(op) || EwIsBinary(op)) reg(w[2], i);
    if (EwIsBinary(op)) reg(w[3], i);
    const int params = Info(op).params;
    if (params && (w[3] < 0 || w[3] + params > nconst)) bad("instruction ", i, " (", Info(op).name, ") reads constants from ", w[3], " of ", nconst);
    if (w[1] < 0 || w[1] >= regs) bad("instruction ", i, " writes register ", w[1], " of ", regs);
    written[static_cast<size_t>(w[1])] = 1;
    p.code.push_back(EwInstr{op, static_cast<int32_t>(w[1]), static_cast<int32_t>(w[2]), static_cast<int32_t>(w[3])});
  }
  return p;
}

size_t EwProgram::inputs_read() const {
  size_t n = 0;
  for (const EwInstr& in : code)
    if (in.op == EwOp::kLoad) n = std::max(n, static_cast<size_t>(in.a) + 1);
  return n;
}

OperandIndexMap MakeOperandIndexMap(const Shape& in, const Shape& out, const std::string& what) {
  OF_REQUIRE(in.size() <= out.size(), what, ": operand ", ShapeToString(in), " has a higher rank than the output ",
             ShapeToString(out));
  const size_t lead = out.size() - in.size();
  // The operand's dims that are not 1 must equal the output's there and, among the output's dims
  // that are not 1, form one contiguous block [first, last].
  int first = -1, last = -1;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t o = out[lead + d];
    OF_REQUIRE(in[d] == 1 || in[d] == o, what, ": operand ", ShapeToString(in), " does not broadcast to ",
               ShapeToString(out));
    if (in[d] != 1) {
      if (first < 0) first = static_cast<int>(lead + d);
      last = static_cast<int>(lead + d);
    }
  }
  OperandIndexMap m;
  if (first < 0) return m;  // one element
  for (int d = first; d <= last; ++d) {
    const int64_t o = out[static_cast<size_t>(d)];
    OF_REQUIRE(in[static_cast<size_t>(d) - lead] == o || o == 1, what, ": operand ", ShapeToString(in),
               " broadcasts inside its block of ", ShapeToString(out), ", which FusedElementwise cannot index");
    m.mod *= o;
  }
  for (size_t d = static_cast<size_t>(last) + 1; d < out.size(); ++d) m.div *= out[d];
  return m;
}

}  // namespace oneflow
