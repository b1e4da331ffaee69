#!/usr/bin/env python3
"""Three-step AllToAll on N nodes of G GPUs: (1) over NVLink every GPU gathers, per destination
node n, its G chunks for that node on the local proxy GPU n % G; (2) each proxy sends one
aggregated IB message of G*G chunks to the GPU with the same index on node n; (3) that GPU
scatters them over NVLink to their outputs. Chunks for the own node go directly. Fewer, larger
IB messages than the two-step AllToAll (G*G chunks instead of G)."""

from _example import main, node_shape

from ccsynth import AllToAll, DslProgram, chunk


def build(topology, args):
    nodes, gpus = node_shape(topology, args)

    def rank(n, g):
        return n * gpus + g

    with DslProgram("alltoall_three_step", topology, AllToAll(nodes * gpus, 1, False),
                    instances=args.instances, protocol=args.protocol) as p:
        for m in range(nodes):
            for i in range(gpus):
                for n in range(nodes):
                    for g in range(gpus):
                        c = chunk(rank(m, i), "in", rank(n, g))  # from (m, i) to (n, g)
                        if n == m:
                            c.copy(rank(n, g), "out", rank(m, i))
                        else:  # step 1: to the proxy, block n ordered by (g, i)
                            c.copy(rank(m, n % gpus), "gather", (n * gpus + g) * gpus + i)
        for m in range(nodes):
            for n in range(nodes):
                if n != m:  # step 2: one IB message per pair of nodes
                    proxy = n % gpus
                    block = gpus * gpus
                    chunk(rank(m, proxy), "gather", n * block, block).copy(rank(n, proxy), "recv", m * block)
        for n in range(nodes):
            for m in range(nodes):
                if n != m:  # step 3: scatter to the outputs, G chunks per destination
                    proxy = n % gpus
                    for g in range(gpus):
                        c = chunk(rank(n, proxy), "recv", (m * gpus + g) * gpus, gpus)
                        c.copy(rank(n, g), "out", m * gpus)
    return p


if __name__ == "__main__":
    main(build, default_topology="ndv4x2", doc=__doc__)
