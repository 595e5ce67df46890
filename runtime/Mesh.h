//===- Mesh.h - The device mesh and its process groups ----------*- C++ -*-===//
//
// Pure arithmetic on the mesh: which world ranks form the group spanned by
// some axes, and in which order. The backends create communicators from it.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_MESH_H
#define DDPRT_MESH_H

#include "Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ddprt {

struct MeshAxis {
  std::string name;
  int64_t size;
};

/// Where one rank sits in the group spanned by some mesh axes.
struct GroupLayout {
  /// Tells the groups of the same axes apart: the row-major index of the
  /// rank's coordinates on the axes outside the group.
  int64_t color = 0;
  /// This rank's index in the group: row-major over the group's axes in the
  /// order they were listed.
  int64_t rank = 0;
  int64_t size = 1;
  /// The group's world ranks in group order.
  std::vector<int64_t> worldRanks;
};

class Mesh {
public:
  /// Parses "dp=2,tp=2" (blanks allowed around names and numbers).
  static Status parse(const std::string &text, Mesh &mesh);

  const std::vector<MeshAxis> &getAxes() const { return axes; }
  int64_t getNumRanks() const;
  /// The canonical spelling, "dp=2,tp=2".
  std::string str() const;

  /// The coordinates of `rank`, the first axis varying slowest.
  std::vector<int64_t> coordinatesOf(int64_t rank) const;
  int64_t rankAt(const std::vector<int64_t> &coordinates) const;

  /// Resolves "dp" or "tp, dp" into axis indices, in the listed order.
  Status parseGroupAxes(const std::string &text,
                        std::vector<int> &axisIndices) const;

  GroupLayout layoutGroup(const std::vector<int> &axisIndices,
                          int64_t worldRank) const;

private:
  std::vector<MeshAxis> axes;
};

} // namespace ddprt

#endif // DDPRT_MESH_H
