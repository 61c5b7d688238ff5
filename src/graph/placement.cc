// Placement parsing, printing and device-array arithmetic.
#include "graph/placement.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "base/error.h"

namespace oneflow {
namespace {

// Recursive-descent parser over "[[0,1],[2,3]]" or a flat "0-3,5".
class Parser {
 public:
  explicit Parser(const std::string& s, const std::string& whole) : s_(s), whole_(whole) {}

  // Returns the shape of the nested list at the cursor and appends its leaves to `out`.
  std::vector<int64_t> List(std::vector<int>& out) {
    Skip();
    if (Peek() != '[') {
      size_t before = out.size();
      Flat(out);
      return {static_cast<int64_t>(out.size() - before)};
    }
    ++i_;
    std::vector<int64_t> inner;
    int64_t count = 0;
    Skip();
    if (Peek() == '[') {
      for (;;) {
        std::vector<int64_t> sub = List(out);
        if (count == 0) inner = sub;
        else if (sub != inner) Bad("ragged nesting (all rows must have the same length)");
        ++count;
        Skip();
        if (Peek() == ',') { ++i_; continue; }
        break;
      }
      Expect(']');
      inner.insert(inner.begin(), count);
      return inner;
    }
    size_t before = out.size();
    Flat(out);
    Expect(']');
    return {static_cast<int64_t>(out.size() - before)};
  }
  void End() {
    Skip();
    if (i_ != s_.size()) Bad("unexpected '", s_.substr(i_), "'");
  }

 private:
  // "0-3,5,7": numbers and inclusive ranges.
  void Flat(std::vector<int>& out) {
    for (;;) {
      int a = Number();
      Skip();
      if (Peek() == '-') {
        ++i_;
        int b = Number();
        if (b < a) Bad("range ", a, "-", b, " is descending");
        for (int d = a; d <= b; ++d) out.push_back(d);
      } else {
        out.push_back(a);
      }
      Skip();
      if (Peek() == ',' && Next() != '[') { ++i_; continue; }
      return;
    }
  }
  int Number() {
    Skip();
    size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (start == i_) Bad("expected a device id at '", s_.substr(start), "'");
    if (i_ - start > 6) Bad("device id '", s_.substr(start, i_ - start), "' is too large");
    return std::stoi(s_.substr(start, i_ - start));
  }
  void Expect(char c) {
    Skip();
    if (Peek() != c) Bad("expected '", c, "'");
    ++i_;
  }
  void Skip() { while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_; }
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  char Next() const {
    size_t j = i_ + 1;
    while (j < s_.size() && std::isspace(static_cast<unsigned char>(s_[j]))) ++j;
    return j < s_.size() ? s_[j] : '\0';
  }
  template <typename... A>
  [[noreturn]] void Bad(const A&... a) const {
    Fail(ErrorCode::kInvalidArgument, "bad placement '", whole_, "': ", a...);
  }
  const std::string& s_;
  const std::string& whole_;
  size_t i_ = 0;
};

}  // namespace

Placement Placement::Parse(const std::string& text) {
  Placement p;
  std::string body = text;
  size_t colon = text.find(':');
  if (colon != std::string::npos) {
    p.device = text.substr(0, colon);
    body = text.substr(colon + 1);
  }
  OF_REQUIRE(p.device == "cpu" || p.device == "cuda", "bad placement '", text, "': unknown device type '",
             p.device, "' (cpu or cuda)");
  Parser parser(body, text);
  p.hierarchy = parser.List(p.devices);
  parser.End();
  OF_REQUIRE(!p.devices.empty(), "bad placement '", text, "': no devices");
  std::set<int> seen;
  for (int d : p.devices)
    OF_REQUIRE(seen.insert(d).second, "bad placement '", text, "': device ", d, " appears twice");
  return p;
}

static void PrintNested(const Placement& p, size_t axis, size_t& pos, std::string& out) {
  out += '[';
  for (int64_t i = 0; i < p.hierarchy[axis]; ++i) {
    if (i) out += ',';
    if (axis + 1 == p.hierarchy.size()) out += std::to_string(p.devices[pos++]);
    else PrintNested(p, axis + 1, pos, out);
  }
  out += ']';
}

std::string Placement::ToString() const {
  std::string out = device + ":";
  bool contiguous = hierarchy.size() == 1 && devices.size() > 1;
  for (size_t i = 1; contiguous && i < devices.size(); ++i) contiguous = devices[i] == devices[i - 1] + 1;
  if (contiguous) return out + std::to_string(devices.front()) + "-" + std::to_string(devices.back());
  if (hierarchy.size() == 1 && devices.size() == 1) return out + std::to_string(devices[0]);
  size_t pos = 0;
  PrintNested(*this, 0, pos, out);
  return out;
}

std::vector<int64_t> Placement::Coord(int pos) const {
  std::vector<int64_t> c(hierarchy.size());
  int64_t rest = pos;
  for (size_t k = hierarchy.size(); k-- > 0;) {
    c[k] = rest % hierarchy[k];
    rest /= hierarchy[k];
  }
  return c;
}

int Placement::Position(const std::vector<int64_t>& coord) const {
  int64_t pos = 0;
  for (size_t k = 0; k < hierarchy.size(); ++k) pos = pos * hierarchy[k] + coord[k];
  return static_cast<int>(pos);
}

std::vector<int> Placement::AxisGroup(int pos, int axis) const {
  std::vector<int64_t> c = Coord(pos);
  std::vector<int> group;
  for (int64_t i = 0; i < hierarchy[static_cast<size_t>(axis)]; ++i) {
    c[static_cast<size_t>(axis)] = i;
    group.push_back(Position(c));
  }
  return group;
}

void Placement::CheckDevicesExist(int available) const {
  std::string missing;
  for (int d : devices)
    if (d < 0 || d >= available) missing += (missing.empty() ? "" : ", ") + std::to_string(d);
  OF_REQUIRE(missing.empty(), "placement '", ToString(), "' names device(s) ", missing, " but only ", available,
             " ", device, " device(s) exist (ids 0-", available - 1, ")");
}

}  // namespace oneflow
