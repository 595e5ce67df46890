//===- Mesh.cpp - The device mesh and its process groups ------------------===//

#include "Mesh.h"

#include <algorithm>
#include <cctype>
#include <climits>

using namespace ddprt;

static std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

static std::vector<std::string> splitOnCommas(const std::string &text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t comma = text.find(',', begin);
    parts.push_back(trim(text.substr(begin, comma - begin)));
    if (comma == std::string::npos)
      return parts;
    begin = comma + 1;
  }
}

static bool isIdentifier(const std::string &name) {
  if (name.empty() ||
      !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Status Mesh::parse(const std::string &text, Mesh &mesh) {
  auto bad = [&](const std::string &why) {
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "mesh '", text, "': ", why,
                     " (expected axes like \"dp=2,tp=2\")");
  };
  mesh.axes.clear();
  if (trim(text).empty())
    return bad("no axes");
  int64_t numRanks = 1;
  for (const std::string &part : splitOnCommas(text)) {
    size_t equal = part.find('=');
    if (equal == std::string::npos)
      return bad("axis '" + part + "' has no '=size'");
    std::string name = trim(part.substr(0, equal));
    std::string sizeText = trim(part.substr(equal + 1));
    if (!isIdentifier(name))
      return bad("axis name '" + name + "' is not an identifier");
    for (const MeshAxis &axis : mesh.axes)
      if (axis.name == name)
        return bad("axis '" + name + "' appears twice");
    if (sizeText.empty() ||
        !std::all_of(sizeText.begin(), sizeText.end(),
                     [](char c) {
                       return std::isdigit(static_cast<unsigned char>(c));
                     }) ||
        sizeText.size() > 9)
      return bad("size '" + sizeText + "' of axis '" + name +
                 "' is not a positive integer");
    int64_t size = std::stoll(sizeText);
    if (size < 1)
      return bad("axis '" + name + "' has size 0");
    numRanks *= size;
    if (numRanks > INT_MAX)
      return bad("more than 2^31 ranks");
    mesh.axes.push_back({name, size});
  }
  return Status::ok();
}

int64_t Mesh::getNumRanks() const {
  int64_t ranks = 1;
  for (const MeshAxis &axis : axes)
    ranks *= axis.size;
  return ranks;
}

std::string Mesh::str() const {
  std::string out;
  for (const MeshAxis &axis : axes) {
    if (!out.empty())
      out += ',';
    out += axis.name + "=" + std::to_string(axis.size);
  }
  return out;
}

std::vector<int64_t> Mesh::coordinatesOf(int64_t rank) const {
  std::vector<int64_t> coordinates(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    coordinates[i] = rank % axes[i].size;
    rank /= axes[i].size;
  }
  return coordinates;
}

int64_t Mesh::rankAt(const std::vector<int64_t> &coordinates) const {
  int64_t rank = 0;
  for (size_t i = 0; i < axes.size(); ++i)
    rank = rank * axes[i].size + coordinates[i];
  return rank;
}

Status Mesh::parseGroupAxes(const std::string &text,
                            std::vector<int> &axisIndices) const {
  axisIndices.clear();
  if (trim(text).empty())
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "group '", text,
                     "' names no mesh axis");
  for (const std::string &name : splitOnCommas(text)) {
    auto found = std::find_if(axes.begin(), axes.end(), [&](const MeshAxis &a) {
      return a.name == name;
    });
    if (found == axes.end())
      return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "group '", text,
                       "': axis '", name, "' is not an axis of mesh ", str());
    int index = int(found - axes.begin());
    if (std::find(axisIndices.begin(), axisIndices.end(), index) !=
        axisIndices.end())
      return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "group '", text,
                       "' names axis '", name, "' twice");
    axisIndices.push_back(index);
  }
  return Status::ok();
}

GroupLayout Mesh::layoutGroup(const std::vector<int> &axisIndices,
                              int64_t worldRank) const {
  std::vector<int64_t> coordinates = coordinatesOf(worldRank);
  std::vector<bool> inGroup(axes.size(), false);
  for (int index : axisIndices)
    inGroup[index] = true;

  GroupLayout layout;
  for (size_t i = 0; i < axes.size(); ++i)
    if (!inGroup[i])
      layout.color = layout.color * axes[i].size + coordinates[i];
  for (int index : axisIndices) {
    layout.rank = layout.rank * axes[index].size + coordinates[index];
    layout.size *= axes[index].size;
  }
  // Enumerate the group's coordinates row-major over the listed axes.
  for (int64_t member = 0; member < layout.size; ++member) {
    std::vector<int64_t> memberCoordinates = coordinates;
    int64_t rest = member;
    for (size_t i = axisIndices.size(); i-- > 0;) {
      int index = axisIndices[i];
      memberCoordinates[index] = rest % axes[index].size;
      rest /= axes[index].size;
    }
    layout.worldRanks.push_back(rankAt(memberCoordinates));
  }
  return layout;
}
