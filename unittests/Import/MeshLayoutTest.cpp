//===- MeshLayoutTest.cpp - Megatron's groups on ddp's mesh ---------------===//
//
// Every group the importer's mesh gives a rank must be the group Megatron's
// RankGenerator gives it (megatron/core/parallel_state.py at d98e8a6: the
// dense generator L859-868, order tp-cp-ep-dp-pp with ep = 1; the expert
// one L887-895, order tp-ep-dp-pp with tp = expert_tensor_parallel_size,
// cp = 1; get_ranks L534 through generate_masked_orthogonal_rank_groups).
// The generator is restated here from its definition: a rank's coordinate
// on the i-th name of the order is (rank / prod(sizes before i)) % size_i,
// and a group holds the ranks that agree on every coordinate not named.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/MeshLayout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <map>
#include <set>
#include <string>
#include <vector>

using namespace ddp;

namespace {

using Groups = std::set<std::set<int64_t>>;

struct Axis {
  std::string name;
  int64_t size;
};

/// The groups over `selected` of a grid whose axes are listed fastest first
/// (Megatron's orders) or slowest first (ddp's meshes).
Groups getGroups(const std::vector<Axis> &axes, bool fastestFirst,
                 const std::set<std::string> &selected) {
  int64_t world = 1;
  for (const Axis &axis : axes)
    world *= axis.size;
  std::vector<int64_t> strides(axes.size());
  int64_t stride = 1;
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t i = fastestFirst ? k : axes.size() - 1 - k;
    strides[i] = stride;
    stride *= axes[i].size;
  }
  std::map<std::vector<int64_t>, std::set<int64_t>> byKey;
  for (int64_t rank = 0; rank < world; ++rank) {
    std::vector<int64_t> key;
    for (size_t i = 0; i < axes.size(); ++i)
      if (!selected.count(axes[i].name))
        key.push_back(rank / strides[i] % axes[i].size);
    byKey[key].insert(rank);
  }
  Groups groups;
  for (auto &entry : byKey)
    groups.insert(entry.second);
  return groups;
}

Groups getMeshGroups(const MeshLayout &layout,
                     llvm::ArrayRef<llvm::StringRef> groupAxes) {
  std::vector<Axis> axes;
  for (auto [name, size] : layout.axes)
    axes.push_back({name.str(), size});
  std::set<std::string> selected;
  for (llvm::StringRef name : groupAxes)
    selected.insert(name.str());
  return getGroups(axes, /*fastestFirst=*/false, selected);
}

void expectMegatronGroups(int64_t tp, int64_t dp, int64_t pp, int64_t ep,
                          int64_t etp) {
  SCOPED_TRACE(llvm::formatv("tp {0} dp {1} pp {2} ep {3} etp {4}", tp, dp,
                             pp, ep, etp)
                   .str());
  llvm::Expected<MeshLayout> layout =
      buildMeshLayout({tp, dp, pp, ep, etp});
  ASSERT_TRUE(static_cast<bool>(layout)) << toString(layout.takeError());
  int64_t edp = tp * dp / (etp * ep);
  std::vector<Axis> dense = {{"tp", tp}, {"dp", dp}, {"pp", pp}};
  std::vector<Axis> expert = {
      {"tp", etp}, {"ep", ep}, {"dp", edp}, {"pp", pp}};
  EXPECT_EQ(getMeshGroups(*layout, layout->tensorAxes),
            getGroups(dense, true, {"tp"}));
  EXPECT_EQ(getMeshGroups(*layout, layout->denseGroupAxes),
            getGroups(dense, true, {"dp"}));
  EXPECT_EQ(getMeshGroups(*layout, layout->expertTensorAxes),
            getGroups(expert, true, {"tp"}));
  EXPECT_EQ(getMeshGroups(*layout, layout->expertAxes),
            getGroups(expert, true, {"ep"}));
  EXPECT_EQ(getMeshGroups(*layout, layout->expertTensorAndExpertAxes),
            getGroups(expert, true, {"tp", "ep"}));
  EXPECT_EQ(getMeshGroups(*layout, layout->expertGroupAxes),
            getGroups(expert, true, {"dp"}));
  EXPECT_EQ(getMeshGroups(*layout, {"pp"}), getGroups(dense, true, {"pp"}));
  // The slowest axis within a stage is `edp`, which a simulation at
  // another data-parallel size rescales.
  EXPECT_EQ(layout->axes[pp > 1 ? 1 : 0].first, "edp");
}

TEST(MeshLayoutTest, EveryGroupIsMegatrons) {
  int64_t checked = 0;
  for (int64_t tp : {1, 2, 3, 4, 6, 8})
    for (int64_t dp : {1, 2, 3, 4, 6, 8})
      for (int64_t ep : {1, 2, 3, 4, 8})
        for (int64_t etp : {1, 2, 3, 4, 8})
          for (int64_t pp : {1, 2}) {
            if (tp * dp % (ep * etp) != 0)
              continue;
            // The orders nest: each cut of one divides the next of both.
            std::vector<int64_t> cuts = {1, tp, etp, etp * ep, tp * dp};
            llvm::sort(cuts);
            bool nests = true;
            for (size_t i = 0; i + 1 < cuts.size(); ++i)
              nests &= cuts[i + 1] % cuts[i] == 0;
            if (!nests) {
              EXPECT_FALSE(static_cast<bool>(
                  buildMeshLayout({tp, dp, pp, ep, etp})))
                  << tp << " " << dp << " " << ep << " " << etp;
              continue;
            }
            expectMegatronGroups(tp, dp, pp, ep, etp);
            ++checked;
          }
  EXPECT_EQ(checked, 582);
}

TEST(MeshLayoutTest, FineGridNames) {
  // TP 2, ETP 1, EP 4 on 8 ranks: the dense TP pair is inside each EP group.
  MeshLayout layout = cantFail(buildMeshLayout({2, 4, 1, 4, 1}));
  std::vector<std::pair<std::string, int64_t>> axes;
  for (auto [name, size] : layout.axes)
    axes.push_back({name.str(), size});
  EXPECT_EQ(axes, (std::vector<std::pair<std::string, int64_t>>{
                      {"edp", 2}, {"ep", 2}, {"tp_ep", 2}}));
  EXPECT_TRUE(layout.expertTensorAxes.empty());
  // ETP as TP: the layout the importer always had.
  layout = cantFail(buildMeshLayout({2, 4, 2, 2, 2}));
  axes.clear();
  for (auto [name, size] : layout.axes)
    axes.push_back({name.str(), size});
  EXPECT_EQ(axes, (std::vector<std::pair<std::string, int64_t>>{
                      {"pp", 2}, {"edp", 2}, {"ep", 2}, {"tp", 2}}));
}

TEST(MeshLayoutTest, OrdersThatDoNotNestAreRefused) {
  // TP 4 and ETP x EP 6 on 24 ranks cut at 4 and 6.
  llvm::Expected<MeshLayout> layout = buildMeshLayout({4, 6, 1, 6, 1});
  ASSERT_FALSE(static_cast<bool>(layout));
  std::string message = toString(layout.takeError());
  EXPECT_NE(message.find("cut the 24 ranks of a stage at 1, 4, 6, 24"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("4 does not divide 6"), std::string::npos)
      << message;
  layout = buildMeshLayout({2, 3, 1, 4, 1});
  ASSERT_FALSE(static_cast<bool>(layout));
  EXPECT_NE(toString(layout.takeError()).find("must divide"),
            std::string::npos);
}

} // namespace
