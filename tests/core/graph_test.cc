#include "ccsynth/core/graph.h"

#include <gtest/gtest.h>

#include <vector>

namespace ccsynth {
namespace {

using Adjacency = std::vector<std::vector<int>>;

// 0 -> {1, 2}, 1 -> 3, 2 -> 3, 3 -> 4; 5 is isolated.
Adjacency diamond_with_tail() { return {{1, 2}, {3}, {3}, {4}, {}, {}}; }

TEST(BreadthFirstSearch, DistancesParentsAndOrder) {
  const BfsResult search = breadth_first_search(diamond_with_tail(), {0});
  EXPECT_EQ(search.distance, std::vector<int>({0, 1, 1, 2, 3, -1}));
  EXPECT_EQ(search.parent, std::vector<int>({-1, 0, 0, 1, 3, -1}));
  EXPECT_EQ(search.order, std::vector<int>({0, 1, 2, 3, 4}));
  EXPECT_TRUE(search.reached(4));
  EXPECT_FALSE(search.reached(5));
  EXPECT_EQ(search.max_distance(), 3);
}

TEST(BreadthFirstSearch, FirstOfferedNeighbourBreaksTies) {
  // 3 is reached through 1 when 1 is offered first, through 2 when 2 is.
  EXPECT_EQ(breadth_first_search(diamond_with_tail(), {0}).path_to(4),
            std::vector<int>({0, 1, 3, 4}));
  const Adjacency swapped = {{2, 1}, {3}, {3}, {4}, {}, {}};
  EXPECT_EQ(breadth_first_search(swapped, {0}).path_to(4), std::vector<int>({0, 2, 3, 4}));
}

TEST(BreadthFirstSearch, PathToSourceAndUnreached) {
  const BfsResult search = breadth_first_search(diamond_with_tail(), {0});
  EXPECT_EQ(search.path_to(0), std::vector<int>({0}));
  EXPECT_TRUE(search.path_to(5).empty());
}

TEST(BreadthFirstSearch, SeveralSourcesGiveDistanceToTheNearest) {
  const BfsResult search = breadth_first_search(diamond_with_tail(), {3, 0, 3});
  EXPECT_EQ(search.distance, std::vector<int>({0, 1, 1, 0, 1, -1}));
  EXPECT_EQ(search.order, std::vector<int>({3, 0, 4, 1, 2}));
  EXPECT_EQ(search.path_to(4), std::vector<int>({3, 4}));
}

TEST(BreadthFirstSearch, CallbackMayOfferVisitedVerticesAndItself) {
  // A complete graph on 4 vertices offered as "every vertex", the caller's own included.
  const BfsResult search = breadth_first_search(4, {2}, [](int, auto&& visit) {
    for (int v = 0; v < 4; ++v) visit(v);
  });
  EXPECT_EQ(search.distance, std::vector<int>({1, 1, 0, 1}));
  EXPECT_EQ(search.parent, std::vector<int>({2, 2, -1, 2}));
}

TEST(BreadthFirstSearch, StopsOnceTheTargetIsReached) {
  // A path 0 -> 1 -> 2 -> 3: looking for 1 never expands 1.
  int expanded = 0;
  const BfsResult search = breadth_first_search(
      4, {0},
      [&expanded](int u, auto&& visit) {
        ++expanded;
        if (u + 1 < 4) visit(u + 1);
      },
      1);
  EXPECT_EQ(expanded, 1);
  EXPECT_EQ(search.path_to(1), std::vector<int>({0, 1}));
  EXPECT_FALSE(search.reached(2));
}

TEST(BfsHopDistances, MatchesTheSearch) {
  EXPECT_EQ(bfs_hop_distances(diamond_with_tail(), 1), std::vector<int>({-1, 0, -1, 1, 2, -1}));
}

TEST(ReverseAdjacency, ListsPredecessorsAscending) {
  EXPECT_EQ(reverse_adjacency(diamond_with_tail()), Adjacency({{}, {0}, {0}, {1, 2}, {3}, {}}));
}

}  // namespace
}  // namespace ccsynth
