// Parameterized shapes: ring, uring, line, fc, switch, meshes and tori in 2-D and 3-D,
// hypercube, dragonfly and TACOS's 3-D ring / fully-connected / switch (RFS). Numbering and
// defaults are documented in docs/topologies.md.

#include <algorithm>

#include "builders.h"
#include "ccsynth/core/error.h"

namespace ccsynth::topologies::detail {

namespace {

int product(const std::vector<int>& dims) {
  int64_t n = 1;
  for (int d : dims) n *= d;
  return static_cast<int>(n);
}

// Strides of the mixed-radix numbering: the first dimension varies fastest,
// rank = i0 + d0 * (i1 + d1 * (i2 + ...)).
std::vector<int> strides(const std::vector<int>& dims) {
  std::vector<int> out(dims.size(), 1);
  for (size_t d = 1; d < dims.size(); ++d) out[d] = out[d - 1] * dims[d - 1];
  return out;
}

// Neighbour links along every dimension; wrap-around closes each dimension into a ring (a
// dimension of size 2 gets one pair, not two parallel ones).
void add_grid(Topology& t, const std::vector<int>& dims, const std::vector<DimCost>& costs,
              bool wrap) {
  const std::vector<int> stride = strides(dims);
  for (int r = 0; r < t.num_ranks; ++r) {
    for (size_t d = 0; d < dims.size(); ++d) {
      const int coord = (r / stride[d]) % dims[d];
      if (coord + 1 < dims[d]) {
        add_pair(t, r, r + stride[d], costs[d], "generic");
      } else if (wrap && dims[d] > 2) {
        add_pair(t, r, r - coord * stride[d], costs[d], "generic");
      }
    }
  }
}

// Every pair inside each group of `size` ranks spaced `stride` apart starting at `first`.
void add_clique(Topology& t, int first, int size, int stride, const DimCost& cost) {
  for (int a = 0; a < size; ++a) {
    for (int b = a + 1; b < size; ++b) {
      add_pair(t, first + a * stride, first + b * stride, cost, "generic");
    }
  }
}

void add_ring(Topology& t, int first, int size, int stride, const DimCost& cost) {
  if (size == 2) add_pair(t, first, first + stride, cost, "generic");
  if (size <= 2) return;
  for (int i = 0; i < size; ++i) {
    add_pair(t, first + i * stride, first + ((i + 1) % size) * stride, cost, "generic");
  }
}

void make_dragonfly(Topology& t, int groups, int per_group, const std::vector<DimCost>& costs) {
  // Group g holds ranks g*P .. g*P+P-1, fully connected by local links (costs[1]). Every pair of
  // groups g < h has one global link (costs[0]) between the router that owns port h-g-1 of g
  // and the router that owns port G-1-(h-g) of h; port j sits on router j mod P (the
  // "consecutive" dragonfly arrangement).
  for (int g = 0; g < groups; ++g) {
    add_clique(t, g * per_group, per_group, 1, costs[1]);
    t.nodes.push_back(rank_range(g * per_group, per_group));
  }
  for (int g = 0; g < groups; ++g) {
    for (int h = g + 1; h < groups; ++h) {
      const int a = g * per_group + (h - g - 1) % per_group;
      const int b = h * per_group + (groups - 1 - (h - g)) % per_group;
      add_pair(t, a, b, costs[0], "generic");
    }
  }
}

void make_rfs(Topology& t, const std::vector<int>& dims, const std::vector<DimCost>& costs) {
  // TACOS sec. VI: a node is a ring (dim 0) of fully-connected groups (dim 1); nodes are joined
  // by switches (dim 2). Rank = i + A*j + A*B*k. Every (i, j) position has its own switch
  // across the C nodes, as in ASTRA-sim's multi-dimensional networks.
  const int a_size = dims[0], b_size = dims[1], c_size = dims[2];
  const int per_node = a_size * b_size;
  for (int k = 0; k < c_size; ++k) {
    const int base = k * per_node;
    t.nodes.push_back(rank_range(base, per_node));
    for (int j = 0; j < b_size; ++j) add_ring(t, base + j * a_size, a_size, 1, costs[0]);
    for (int i = 0; i < a_size; ++i) add_clique(t, base + i, b_size, a_size, costs[1]);
  }
  if (c_size < 2) return;
  for (int p = 0; p < per_node; ++p) {
    std::vector<int> ranks(c_size);
    for (int k = 0; k < c_size; ++k) ranks[k] = p + k * per_node;
    add_switch(t, "switch" + std::to_string(p), std::move(ranks), costs[2].alpha_us,
               costs[2].beta_us_per_mb, "switch");
  }
}

}  // namespace

int shape_arity(const std::string& shape) {
  if (shape == "ring" || shape == "uring" || shape == "line" || shape == "fc" ||
      shape == "switch" || shape == "hypercube") {
    return 1;
  }
  if (shape == "mesh2d" || shape == "torus2d" || shape == "dragonfly") return 2;
  if (shape == "mesh3d" || shape == "torus3d" || shape == "rfs") return 3;
  return -1;
}

int cost_dimensions(const std::string& shape, const std::vector<int>& dims) {
  if (shape == "hypercube") return dims[0];
  return shape_arity(shape);
}

double default_gbps(const std::string& shape, int dim) {
  // TACOS sec. VI (table V): Ring-FullyConnected nodes at [200, 100] GB/s joined by 50 GB/s
  // switches; every other shape uses TACOS's generic 50 GB/s (sec. V).
  if (shape == "rfs") return dim == 0 ? 200.0 : dim == 1 ? 100.0 : 50.0;
  return kGenericGbps;
}

Topology make_shape(const std::string& shape, const std::vector<int>& dims,
                    const std::vector<DimCost>& costs) {
  Topology t;
  t.num_ranks = shape == "hypercube" ? (1 << dims[0]) : product(dims);
  if (shape == "ring" || shape == "torus2d" || shape == "torus3d") {
    add_grid(t, dims, costs, /*wrap=*/true);
  } else if (shape == "line" || shape == "mesh2d" || shape == "mesh3d") {
    add_grid(t, dims, costs, /*wrap=*/false);
  } else if (shape == "uring") {
    for (int r = 0; r < t.num_ranks; ++r) {
      add_link(t, r, (r + 1) % t.num_ranks, costs[0], "generic");
    }
  } else if (shape == "fc") {
    add_clique(t, 0, t.num_ranks, 1, costs[0]);
  } else if (shape == "switch") {
    add_switch(t, "switch0", rank_range(0, t.num_ranks), costs[0].alpha_us, costs[0].beta_us_per_mb,
               "switch");
  } else if (shape == "hypercube") {
    // Rank r is linked to r xor 2^d along dimension d.
    for (int r = 0; r < t.num_ranks; ++r) {
      for (int d = 0; d < dims[0]; ++d) {
        if (!(r & (1 << d))) add_pair(t, r, r | (1 << d), costs[d], "generic");
      }
    }
  } else if (shape == "dragonfly") {
    make_dragonfly(t, dims[0], dims[1], costs);
  } else if (shape == "rfs") {
    make_rfs(t, dims, costs);
  } else {
    CCSYNTH_CHECK(false) << "unknown shape " << shape;
  }
  if (t.nodes.empty()) t.nodes = {rank_range(0, t.num_ranks)};
  // The abstract NPUs of TACOS's ASTRA-sim: local reductions are free, links shared by flows.
  t.memory_gbps = 0.0;
  t.shared_links = true;
  sort_links(t);
  return t;
}

}  // namespace ccsynth::topologies::detail
