// Named machines and multi-node clusters of them. Every number here is listed in
// docs/topologies.md with its source.

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <utility>

#include "builders.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"

namespace ccsynth::topologies::detail {

void add_link(Topology& t, int a, int b, const DimCost& cost, const std::string& kind) {
  t.links.push_back(Link{a, b, cost.lanes, cost.alpha_us, cost.beta_us_per_mb, kind});
}

void add_pair(Topology& t, int a, int b, const DimCost& cost, const std::string& kind) {
  add_link(t, a, b, cost, kind);
  add_link(t, b, a, cost, kind);
}

void add_switch(Topology& t, std::string name, std::vector<int> ranks, double alpha_us,
                double port_beta_us_per_mb, const std::string& kind) {
  t.switches.push_back(
      Switch{std::move(name), std::move(ranks), alpha_us, port_beta_us_per_mb, kind});
}

std::vector<int> rank_range(int first, int count) {
  std::vector<int> out(count);
  for (int i = 0; i < count; ++i) out[i] = first + i;
  return out;
}

void sort_links(Topology& t) {
  std::sort(t.links.begin(), t.links.end(), [](const Link& a, const Link& b) {
    return std::pair(a.src, a.dst) < std::pair(b.src, b.dst);
  });
}

namespace {

// Nominal per-direction NVLink bandwidth through NVSwitch (not profiled; docs/topologies.md):
// A100 has 12 NVLink3 links of 25 GB/s, H100 18 NVLink4 links of 25 GB/s.
constexpr double kA100NvswitchGbps = 300.0;
constexpr double kH100NvswitchGbps = 450.0;
// Nominal NIC bandwidths: NDv4 has 8 HDR 200 Gb/s NICs, DGX H100 8 NDR 400 Gb/s NICs.
constexpr double kHdrNicGbps = 25.0;
constexpr double kNdrNicGbps = 50.0;
// SCCL sec. 5.1.2: xGMI measured ~33 GB/s, PCIe 4.0 x16 ~27 GB/s on the Gigabyte Z52.
constexpr double kXgmiGbps = 33.0;
constexpr double kPcie4Gbps = 27.0;
// NCCL's topology model (src/graph/topo.h, 2.7-2.19): PCI_BW 12 GB/s for a PCIe 3.0 x16 path,
// QPI_BW 6 GB/s for the QPI between two pre-Skylake Intel sockets (DGX-1's and NDv2's Xeon E5
// v4 Broadwell; SKL_QPI_BW is for Skylake and later).
constexpr double kPcie3Gbps = 12.0;
constexpr double kQpiGbps = 6.0;
// NCCL's per-hop hardware latency of a ring step in the Simple protocol (src/graph/tuning.cc
// hwLat, 2.8): 3.4 us over NVLink, 5.7 us over PCI. The host path's alpha is the profiled
// NVLink alpha scaled by that ratio, so PCIe costs what NCCL's own model says relative to NVLink.
constexpr double kNcclPciOverNvlinkLatency = 5.7 / 3.4;
// One threadblock drives at most one NVLink's worth of bandwidth: NCCL's topology search gives
// each channel (one threadblock per peer) the bandwidth of one NVLink (topo.h SM70_NVLINK_BW
// 21, SM80_NVLINK_BW 20 GB/s), and TACCL (sec. 6.2, fig. 9e) and MSCCLang (sec. 7.1.1) need
// several instances / channels to fill a GPU's links. V100: one NVLink lane as profiled (TACCL
// table 1, 46 us/MB = 22.8 GB/s); A100 and H100: one NVLink3/4 link, 25 GB/s per direction.
constexpr double kV100ThreadblockGbps = 1024.0 * 1024.0 / (kNdv2NvlinkBetaUsPerMb * 1e3);
constexpr double kNvlink25ThreadblockGbps = 25.0;

// DGX-1 / NDv2 host path: GPUs 2k and 2k+1 share a PCIe switch whose x16 uplink leads to the
// CPUs; NCCL's point-to-point between GPUs with no NVLink (0 and 4, 6, 7, ...; every such pair
// is across the two sockets) goes through it (P2P over PCIe, or SHM through host memory). One
// host switch, one port per PCIe switch at PCI_BW, alpha per NCCL's PCI / NVLink latency ratio.
// On `dgx1` (two Xeon E5-2698 v4, SCCL sec. 5.1.1) PCIe switches 0-1 hang off socket 0 (GPUs
// 0-3) and 2-3 off socket 1, joined by QPI at NCCL's QPI_BW. NDv2's VM hides its sockets (TACCL
// sec. 4.2: every GPU appears on one CPU), so `ndv2` has no socket link. Not modelled: SHM's
// second copy through host memory. Only routed sends use it (Topology::host_switches), so
// synthesizers never see it.
Switch dgx1_host_switch(const std::string& name) {
  Switch host{"host_pcie", rank_range(0, 8), kNvlinkAlphaUs * kNcclPciOverNvlinkLatency,
              beta_from_gbps(kPcie3Gbps), "pcie"};
  host.port_group = {0, 0, 1, 1, 2, 2, 3, 3};
  if (name == "dgx1") {
    host.port_socket = {0, 0, 1, 1};
    host.socket_beta_us_per_mb = beta_from_gbps(kQpiGbps);
  }
  return host;
}

}  // namespace

Topology make_dgx1_like(const std::string& name) {
  // SCCL sec. 2 / fig. 1: two 4-GPU cliques {0..3}, {4..7} plus four cross links, forming two
  // non-overlapping Hamiltonian cycles: 0-1-4-5-6-7-2-3 with two NVLinks per edge and
  // 0-2-1-3-6-4-7-5 with one, so every GPU has 6 NVLink lanes. TACCL sec. 4.2: NDv2 has the
  // same NVLink graph; TACCL table 1 gives its cost.
  constexpr std::array<int, 8> kDoubleRing = {0, 1, 4, 5, 6, 7, 2, 3};
  constexpr std::array<int, 8> kSingleRing = {0, 2, 1, 3, 6, 4, 7, 5};
  Topology t;
  t.name = name;
  t.num_ranks = 8;
  t.nodes = {rank_range(0, 8)};
  for (int i = 0; i < 8; ++i) {
    add_pair(t, kDoubleRing[i], kDoubleRing[(i + 1) % 8],
             {kNvlinkAlphaUs, kNdv2NvlinkBetaUsPerMb, 2}, "nvlink");
    add_pair(t, kSingleRing[i], kSingleRing[(i + 1) % 8],
             {kNvlinkAlphaUs, kNdv2NvlinkBetaUsPerMb, 1}, "nvlink");
  }
  sort_links(t);
  t.host_switches.push_back(dgx1_host_switch(name));
  t.threadblock_gbps = kV100ThreadblockGbps;
  return t;
}

Topology make_nvswitch_node(const std::string& name) {
  Topology t;
  t.name = name;
  if (name == "dgx2") {
    t.num_ranks = 16;  // TACCL sec. 4.1 / table 1: 16 V100 on NVSwitch, 8 us/MB per port
    add_switch(t, "nvswitch0", rank_range(0, 16), kNvlinkAlphaUs, kDgx2NvswitchBetaUsPerMb,
               "nvswitch");
  } else if (name == "ndv4") {
    t.num_ranks = 8;
    add_switch(t, "nvswitch0", rank_range(0, 8), kNvlinkAlphaUs, beta_from_gbps(kA100NvswitchGbps),
               "nvswitch");
  } else {
    CCSYNTH_CHECK(name == "dgxh100") << "not an NVSwitch machine: " << name;
    t.num_ranks = 8;
    add_switch(t, "nvswitch0", rank_range(0, 8), kNvlinkAlphaUs, beta_from_gbps(kH100NvswitchGbps),
               "nvswitch");
  }
  t.nodes = {rank_range(0, t.num_ranks)};
  t.threadblock_gbps = name == "dgx2" ? kV100ThreadblockGbps : kNvlink25ThreadblockGbps;
  return t;
}

Topology make_amdz52() {
  // SCCL sec. 5.1.2 and 5.2.2: sockets {0,1,2,3} and {4,5,6,7}; xGMI forms two islands, each
  // three GPUs of one socket plus the lone GPU 5 (resp. 1) of the other. GPUs 2 and 3 have no
  // direct xGMI link (GPU 0 routes between them), so island {0,2,3,5} is the 4-cycle
  // 0-2-5-3-0 and, by the 4-rotation symmetry, {4,6,7,1} is 4-6-1-7-4. GPU 1 reaches its socket
  // peers 0, 2, 3 over PCIe and GPU 5 reaches 4, 6, 7, which connects the islands.
  const DimCost xgmi{kNvlinkAlphaUs, beta_from_gbps(kXgmiGbps), 1};
  const DimCost pcie{kNvlinkAlphaUs, beta_from_gbps(kPcie4Gbps), 1};
  Topology t;
  t.name = "amdz52";
  t.num_ranks = 8;
  t.nodes = {rank_range(0, 8)};
  for (int base : {0, 4}) {
    const std::array<int, 4> cycle = {base + 0, base + 2, (base + 5) % 8, base + 3};
    for (int i = 0; i < 4; ++i) add_pair(t, cycle[i], cycle[(i + 1) % 4], xgmi, "xgmi");
    const int hub = base + 1;  // GPU 1 (resp. 5): PCIe to the rest of its socket
    for (int peer = base; peer < base + 4; ++peer) {
      if (peer != hub) add_pair(t, hub, peer, pcie, "pcie");
    }
  }
  sort_links(t);
  return t;
}

const std::vector<std::string>& machine_names() {
  static const std::vector<std::string> kNames = {"dgx1", "ndv2",    "dgx2",
                                                  "ndv4", "dgxh100", "amdz52"};
  return kNames;
}

Topology make_machine(const std::string& name) {
  Topology t;
  if (name == "dgx1" || name == "ndv2") {
    t = make_dgx1_like(name);
  } else if (name == "dgx2" || name == "ndv4" || name == "dgxh100") {
    t = make_nvswitch_node(name);
  } else if (name == "amdz52") {
    t = make_amdz52();
  } else {
    throw UserError("", "topology", "unknown machine '" + name + "'");
  }
  // Real machines pay NCCL's per-call overhead; the protocol factors keep their defaults
  // (Topology::{simple, ll128, ll}, docs/simulator.md "Protocols").
  t.launch_us = kNcclLaunchUs;
  return t;
}

namespace {

// How a machine's GPUs reach the inter-node IB fabric (docs/topologies.md, "Multi-node").
struct NicModel {
  std::vector<std::vector<int>> groups;  // per fabric switch: local GPUs on it
  bool rails = false;                    // one switch per group (rail) instead of one "ib"
  int gpus_per_nic = 1;                  // consecutive GPUs of a group that share one NIC port
  double nic_beta_us_per_mb = kIbBetaUsPerMb;
};

NicModel nic_model(const std::string& name) {
  NicModel m;
  if (name == "dgx1") {
    // 4 NICs, NIC k on the PCIe switch of GPUs 2k, 2k+1 (NVLink neighbours in fig. 1). GPUs
    // such as 0 and 6 have no NVLink, so one switch over all GPUs would carry intra-node
    // traffic over IB; a rail per NIC keeps it on NVLink.
    m.rails = true;
    for (int k = 0; k < 4; ++k) m.groups.push_back({2 * k, 2 * k + 1});
    m.gpus_per_nic = 2;
  } else if (name == "ndv2") {
    // TACCL sec. 4.2: one 12.5 GB/s NIC on the PCIe switch of GPUs 0 and 1.
    m.groups = {{0, 1}};
    m.gpus_per_nic = 2;
  } else if (name == "dgx2") {
    // TACCL sec. 7: 8 NICs, each shared by GPUs 2k and 2k+1 (one port per NIC; the dgx2-sk-2
    // sketch's 2 * beta_IB is what each GPU gets when both send at once).
    m.groups = {rank_range(0, 16)};
    m.gpus_per_nic = 2;
  } else if (name == "ndv4" || name == "dgxh100") {
    m.groups = {rank_range(0, 8)};  // one NIC per GPU
    m.nic_beta_us_per_mb = beta_from_gbps(name == "ndv4" ? kHdrNicGbps : kNdrNicGbps);
  } else {
    throw UserError("", "topology",
                    "'" + name + "' has no documented NICs, so it has no multi-node form");
  }
  return m;
}

}  // namespace

Topology make_multi_node(const std::string& name, int num_nodes) {
  const Topology node = make_machine(name);
  const NicModel nic = nic_model(name);
  const int per_node = node.num_ranks;
  Topology t;
  t.name = name + "x" + std::to_string(num_nodes);
  t.num_ranks = per_node * num_nodes;
  t.launch_us = node.launch_us;
  t.simple = node.simple;
  t.ll128 = node.ll128;
  t.ll = node.ll;
  t.threadblock_gbps = node.threadblock_gbps;
  t.links.reserve(node.links.size() * num_nodes);
  for (int n = 0; n < num_nodes; ++n) {
    const int offset = n * per_node;
    t.nodes.push_back(rank_range(offset, per_node));
    for (Link link : node.links) {
      link.src += offset;
      link.dst += offset;
      t.links.push_back(link);
    }
    for (size_t s = 0; s < node.switches.size(); ++s) {
      Switch sw = node.switches[s];
      for (int& r : sw.ranks) r += offset;
      sw.name = "nvswitch" + std::to_string(n * node.switches.size() + s);
      t.switches.push_back(std::move(sw));
    }
    for (Switch host : node.host_switches) {
      for (int& r : host.ranks) r += offset;
      host.name += std::to_string(n);
      t.host_switches.push_back(std::move(host));
    }
  }
  // The IB fabric: a switch with one port per physical NIC at the NIC's beta; the GPUs sharing
  // a NIC share its port (Switch::port_group), so one GPU alone can drive the whole NIC.
  // (rank, NIC key) per member; the key is (node, group, NIC within the group).
  using Member = std::pair<int, std::tuple<int, size_t, int>>;
  auto add_fabric = [&](std::string name, std::vector<Member> members) {
    std::sort(members.begin(), members.end());
    std::map<std::tuple<int, size_t, int>, int> port_of;
    std::vector<int> ranks, ports;
    for (const auto& [rank, key] : members) {
      ranks.push_back(rank);
      ports.push_back(port_of.emplace(key, static_cast<int>(port_of.size())).first->second);
    }
    add_switch(t, std::move(name), std::move(ranks), kIbAlphaUs, nic.nic_beta_us_per_mb, "ib");
    if (nic.gpus_per_nic > 1) t.switches.back().port_group = std::move(ports);
  };
  std::vector<Member> all;
  for (size_t g = 0; g < nic.groups.size(); ++g) {
    std::vector<Member> members;
    for (int n = 0; n < num_nodes; ++n) {
      for (size_t i = 0; i < nic.groups[g].size(); ++i) {
        const int nic_index = static_cast<int>(i) / nic.gpus_per_nic;
        members.push_back({n * per_node + nic.groups[g][i], {n, g, nic_index}});
      }
    }
    if (nic.rails) {
      add_fabric("ib_rail" + std::to_string(g), std::move(members));
    } else {
      all.insert(all.end(), members.begin(), members.end());
    }
  }
  if (!nic.rails) add_fabric("ib", std::move(all));
  return t;
}

}  // namespace ccsynth::topologies::detail
