// Gradient rule of Einsum (attached in ops/spatial.cc): the gradient of operand k is itself an
// einsum of the other operands and dY producing operand k's labels, broadcast over labels only k
// carries and summed back where k's ellipsis dims were broadcast.
#include <algorithm>
#include <map>

#include "graph/ops/grad_rules.h"

namespace oneflow {
namespace {

using Term = std::vector<std::string>;  // one token per letter, "..." for the ellipsis

Term Tokenize(const std::string& t) {
  Term out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '.') {
      out.push_back("...");
      i += 2;
    } else {
      out.push_back(std::string(1, t[i]));
    }
  }
  return out;
}

std::string Join(const Term& t) {
  std::string s;
  for (const auto& tok : t) s += tok;
  return s;
}

}  // namespace

void GradEinsum(GradContext& c) {
  std::string eq;
  for (char ch : c.attrs().GetString("equation"))
    if (ch != ' ' && ch != '\t') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(Tokenize(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  Term out;
  if (arrow != std::string::npos) {
    out = Tokenize(eq.substr(arrow + 2));
  } else {
    // Implicit output: the ellipsis, then the letters used once, in alphabetical order.
    std::map<std::string, int> count;
    bool ellipsis = false;
    for (const Term& t : terms)
      for (const auto& tok : t) {
        if (tok == "...") ellipsis = true;
        else ++count[tok];
      }
    if (ellipsis) out.push_back("...");
    for (const auto& [tok, n] : count)
      if (n == 1) out.push_back(tok);
  }

  for (size_t k = 0; k < terms.size(); ++k) {
    if (!c.needs_input_grad(k)) continue;
    const Term& tk = terms[k];
    for (size_t i = 0; i < tk.size(); ++i)
      OF_CHECK(std::count(tk.begin(), tk.end(), tk[i]) == 1, kUnsupported, "cannot differentiate ",
               c.node().Describe(), ": operand ", k, " repeats label '", tk[i], "' (a diagonal)");
    // Labels the gradient einsum can produce: those of dY and of the other operands.
    std::vector<std::string> inputs;
    std::string grad_lhs;
    Term available = out;
    for (size_t j = 0; j < terms.size(); ++j) {
      if (j == k) continue;
      grad_lhs += Join(terms[j]) + ",";
      inputs.push_back(c.input(j));
      available.insert(available.end(), terms[j].begin(), terms[j].end());
    }
    grad_lhs += Join(out);
    inputs.push_back(c.output_grad(0));
    Term kept;
    std::vector<size_t> missing;  // token positions in tk that only operand k has (summed in forward)
    for (size_t i = 0; i < tk.size(); ++i) {
      if (std::find(available.begin(), available.end(), tk[i]) != available.end()) kept.push_back(tk[i]);
      else missing.push_back(i);
    }
    OF_CHECK(std::find(missing.begin(), missing.end(),
                       static_cast<size_t>(std::find(tk.begin(), tk.end(), "...") - tk.begin())) == missing.end(),
             kUnsupported, "cannot differentiate ", c.node().Describe(), ": operand ", k,
             " has an ellipsis no other term has");
    std::string g = c.Emit1(op::kEinsum, inputs, MakeAttrs({{"equation", Attribute::String(grad_lhs + "->" + Join(kept))}}));
    if (!missing.empty()) {
      // Restore the summed-out dims as 1s, then broadcast them.
      const int64_t rank = c.input_rank(k);
      const int64_t ell = rank - static_cast<int64_t>(tk.size()) + 1;  // dims the ellipsis stands for, if any
      const bool has_ell = std::find(tk.begin(), tk.end(), "...") != tk.end();
      std::vector<int64_t> axes;
      int64_t pos = 0;
      for (size_t i = 0; i < tk.size(); ++i) {
        if (std::find(missing.begin(), missing.end(), i) != missing.end()) axes.push_back(pos);
        pos += tk[i] == "..." ? (has_ell ? ell : 0) : 1;
      }
      g = c.Emit1(op::kExpand, {c.Emit1(op::kUnsqueeze, {g, c.Ints(axes)}), c.ShapeOf(c.input(k))});
    }
    c.SetInputGrad(k, c.SumToInputShape(g, k));
  }
}

}  // namespace oneflow
