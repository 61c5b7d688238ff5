// Placement: a device type plus an n-D array of devices (ranks) that a global tensor lives on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oneflow {

// A placement such as `cpu:0-3` (1-D, 4 devices) or `cpu:[[0,1],[2,3]]` (2-D, 2x2). Device ids
// are ranks of the job (one device per rank). Placement axis k of the hierarchy is what an n-D
// SBP's k-th entry refers to.
struct Placement {
  std::string device = "cpu";      // "cpu" or "cuda"
  std::vector<int64_t> hierarchy;  // shape of the device array, e.g. {2, 2}
  std::vector<int> devices;        // device ids, row-major over `hierarchy`

  // Parses "cpu:0-3", "cpu:0,1,2,3", "cpu:[0,1,2,3]", "cpu:[[0,1],[2,3]]" (also "cuda:..."); a bare
  // device list defaults to cpu. Throws kInvalidArgument naming the problem (ragged nesting,
  // duplicate device, unknown device type, empty list).
  static Placement Parse(const std::string& text);
  // The canonical text: "cpu:0-3" for a contiguous 1-D range, else the nested list form.
  std::string ToString() const;

  bool empty() const { return devices.empty(); }
  int ndim() const { return static_cast<int>(hierarchy.size()); }
  int size() const { return static_cast<int>(devices.size()); }
  // Coordinates of the device at position `pos` (row-major index into `devices`).
  std::vector<int64_t> Coord(int pos) const;
  int Position(const std::vector<int64_t>& coord) const;  // inverse of Coord
  // Positions of the devices that share every coordinate with `pos` except along `axis`, in
  // order along `axis`: the group a collective over that placement axis runs in.
  std::vector<int> AxisGroup(int pos, int axis) const;

  // Throws kInvalidArgument naming every device id that is not in [0, available).
  void CheckDevicesExist(int available) const;
  bool operator==(const Placement& o) const {
    return device == o.device && hierarchy == o.hierarchy && devices == o.devices;
  }
};

}  // namespace oneflow
