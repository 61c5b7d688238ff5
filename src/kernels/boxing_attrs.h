// The attributes of an ai.oneflow Boxing node as its CPU and CUDA kernels read them, with the
// communicator and this rank's position in the group resolved once at kernel creation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/comm/communicator.h"
#include "kernels/kernel.h"

namespace oneflow {

struct BoxingAttrs {
  explicit BoxingAttrs(const KernelInitContext& c)
      : mode(c.attrs().GetString("mode")),
        group(c.attrs().GetInts("group").begin(), c.attrs().GetInts("group").end()),
        axis(c.attrs().GetInt("axis")),
        in_axis(c.attrs().GetInt("in_axis")),
        sizes(c.attrs().GetInts("sizes")),
        in_sizes(c.attrs().GetInts("in_sizes")),
        starts(c.attrs().GetInts("starts")),
        keep(c.attrs().GetInt("keep") != 0) {
    static const char* const kModes[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                         "slice", "zero_fill", "zero_pad"};
    bool known = false;
    for (const char* m : kModes) known |= mode == m;
    OF_CHECK(known, kInvalidModel, c.node().Describe(), ": unknown boxing mode '", mode, "'");
    if (mode.rfind("all_", 0) == 0 || mode == "reduce_scatter") {
      comm = FindCommunicator(c.attrs().GetString("comm"));
      for (size_t i = 0; i < group.size(); ++i)
        if (group[i] == comm->rank()) me = i;
      OF_CHECK(me < group.size(), kInvalidModel, c.node().Describe(), ": rank ", comm->rank(), " is not in its group");
    }
  }

  // Elements of `shape` with `axis` cut to `extent`.
  static int64_t PieceNumel(const Shape& shape, int64_t axis, int64_t extent) {
    Shape s = shape;
    s[static_cast<size_t>(axis)] = extent;
    return NumElements(s);
  }

  std::string mode;
  std::vector<int> group;
  int64_t axis, in_axis;
  std::vector<int64_t> sizes, in_sizes, starts;
  bool keep;
  std::shared_ptr<Communicator> comm;
  size_t me = 0;
};

}  // namespace oneflow
