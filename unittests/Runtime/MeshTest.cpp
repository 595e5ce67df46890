//===- MeshTest.cpp - Mesh parsing and group layout -----------------------===//

#include "Mesh.h"

#include "gtest/gtest.h"

using namespace ddprt;

namespace {

Mesh parse(const std::string &text) {
  Mesh mesh;
  Status status = Mesh::parse(text, mesh);
  EXPECT_TRUE(status.isOk()) << status.getMessage();
  return mesh;
}

std::string parseError(const std::string &text) {
  Mesh mesh;
  Status status = Mesh::parse(text, mesh);
  EXPECT_FALSE(status.isOk()) << text;
  EXPECT_EQ(status.getCode(), DDPRT_ERROR_INVALID_ARGUMENT);
  return status.getMessage();
}

TEST(MeshTest, ParsesAxes) {
  Mesh mesh = parse(" dp = 4, tp=8 ");
  ASSERT_EQ(mesh.getAxes().size(), 2u);
  EXPECT_EQ(mesh.getAxes()[0].name, "dp");
  EXPECT_EQ(mesh.getAxes()[1].size, 8);
  EXPECT_EQ(mesh.getNumRanks(), 32);
  EXPECT_EQ(mesh.str(), "dp=4,tp=8");
}

TEST(MeshTest, RejectsMalformedMeshes) {
  EXPECT_NE(parseError("").find("no axes"), std::string::npos);
  EXPECT_NE(parseError("dp").find("has no '=size'"), std::string::npos);
  EXPECT_NE(parseError("dp=2,dp=2").find("appears twice"), std::string::npos);
  EXPECT_NE(parseError("dp=0").find("size 0"), std::string::npos);
  EXPECT_NE(parseError("dp=-2").find("not a positive integer"),
            std::string::npos);
  EXPECT_NE(parseError("2x=2").find("not an identifier"), std::string::npos);
  EXPECT_NE(parseError("dp=2,").find("axis '' has no '=size'"),
            std::string::npos);
  EXPECT_NE(parseError("a=65536,b=65536").find("2^31"), std::string::npos);
}

TEST(MeshTest, CoordinatesAreRowMajor) {
  Mesh mesh = parse("dp=2,tp=3");
  EXPECT_EQ(mesh.coordinatesOf(4), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(mesh.rankAt({1, 2}), 5);
  for (int64_t rank = 0; rank < 6; ++rank)
    EXPECT_EQ(mesh.rankAt(mesh.coordinatesOf(rank)), rank);
}

TEST(MeshTest, GroupsShareTheOtherCoordinates) {
  Mesh mesh = parse("dp=2,tp=3");
  std::vector<int> axes;
  ASSERT_TRUE(mesh.parseGroupAxes("tp", axes).isOk());
  GroupLayout tp = mesh.layoutGroup(axes, 4); // (dp 1, tp 1)
  EXPECT_EQ(tp.worldRanks, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(tp.rank, 1);
  EXPECT_EQ(tp.size, 3);
  EXPECT_EQ(tp.color, 1);

  ASSERT_TRUE(mesh.parseGroupAxes("dp", axes).isOk());
  GroupLayout dp = mesh.layoutGroup(axes, 5); // (dp 1, tp 2)
  EXPECT_EQ(dp.worldRanks, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(dp.rank, 1);
  EXPECT_EQ(dp.color, 2);
}

TEST(MeshTest, GroupOrderFollowsTheListedAxes) {
  Mesh mesh = parse("dp=2,tp=2");
  std::vector<int> axes;
  ASSERT_TRUE(mesh.parseGroupAxes("dp,tp", axes).isOk());
  EXPECT_EQ(mesh.layoutGroup(axes, 1).worldRanks,
            (std::vector<int64_t>{0, 1, 2, 3}));
  ASSERT_TRUE(mesh.parseGroupAxes("tp, dp", axes).isOk());
  GroupLayout swapped = mesh.layoutGroup(axes, 1); // (dp 0, tp 1)
  EXPECT_EQ(swapped.worldRanks, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(swapped.rank, 2);
  EXPECT_EQ(swapped.color, 0);
}

TEST(MeshTest, RejectsBadGroups) {
  Mesh mesh = parse("dp=2,tp=2");
  std::vector<int> axes;
  Status unknown = mesh.parseGroupAxes("pp", axes);
  EXPECT_NE(unknown.getMessage().find("'pp' is not an axis of mesh dp=2,tp=2"),
            std::string::npos)
      << unknown.getMessage();
  EXPECT_NE(mesh.parseGroupAxes("dp,dp", axes).getMessage().find("twice"),
            std::string::npos);
  EXPECT_NE(mesh.parseGroupAxes(" ", axes).getMessage().find("no mesh axis"),
            std::string::npos);
}

} // namespace
