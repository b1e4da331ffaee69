// Compiled against the installed ccsynth with `pkg-config --cflags --libs ccsynth` only.
#include <iostream>

#include "ccsynth/topologies/library.h"
#include "ccsynth/version.h"

int main() {
  const ccsynth::Topology topology = ccsynth::topologies::make_builtin("dgx1");
  std::cout << "ccsynth " << CCSYNTH_VERSION << ": dgx1 has " << topology.num_ranks << " ranks\n";
  return topology.num_ranks == 8 ? 0 : 1;
}
