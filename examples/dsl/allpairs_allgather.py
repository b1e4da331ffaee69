#!/usr/bin/env python3
"""All-pairs AllGather in one step: every rank copies its input to its own output and sends it
directly to every other rank (R-1 sends per rank at once; best where all pairs are linked, e.g.
NVSwitch machines)."""

from _example import main

from ccsynth import AllGather, Buffer, DslProgram, chunk


def build(topology, args):
    size = topology.num_ranks
    with DslProgram("allpairs_allgather", topology, AllGather(size, 1, False),
                    instances=args.instances, protocol=args.protocol) as p:
        for r in range(size):
            c = chunk(r, Buffer.input, 0)
            for dst in range(size):
                c.copy(dst, Buffer.output, r)
    return p


if __name__ == "__main__":
    main(build, default_topology="ndv4", doc=__doc__, default_sizes=("64K", "1M"))
