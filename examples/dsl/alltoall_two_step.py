#!/usr/bin/env python3
"""Two-step AllToAll (MSCCLang fig. 9, sec. 7.3) on N nodes of G GPUs: chunks for the own node
go directly to their output; a chunk for GPU (n, g) of another node first goes over NVLink to
the local GPU with index g, into a scratch buffer ordered by destination node, so that each
GPU then sends one aggregated IB message of G chunks to each other node."""

from _example import main, node_shape

from ccsynth import AllToAll, DslProgram, chunk


def build(topology, args):
    nodes, gpus = node_shape(topology, args)

    def rank(n, g):
        return n * gpus + g

    with DslProgram("alltoall_two_step", topology, AllToAll(nodes * gpus, 1, False),
                    instances=args.instances, protocol=args.protocol) as p:
        for n in range(nodes):
            for g in range(gpus):
                for m in range(nodes):
                    for i in range(gpus):
                        # The chunk rank (m, i) sends to rank (n, g).
                        c = chunk(rank(m, i), "in", rank(n, g))
                        if n == m:
                            c.copy(rank(n, g), "out", rank(m, i))
                        else:
                            c.copy(rank(m, g), "scratch", rank(n, i))
        # Coalesced IB sends: G chunks from (m, g) to (n, g).
        for m in range(nodes):
            for g in range(gpus):
                for n in range(nodes):
                    if n != m:
                        chunk(rank(m, g), "scratch", n * gpus, gpus).copy(rank(n, g), "out", m * gpus)
    return p


if __name__ == "__main__":
    main(build, default_topology="ndv4x2", doc=__doc__)
