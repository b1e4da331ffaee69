#!/usr/bin/env python3
"""Recursive-doubling AllGather on 2^k ranks: in step s every rank exchanges the 2^s chunks it
has gathered so far with the rank whose number differs in bit s (log2(R) steps)."""

from _example import main

from ccsynth import AllGather, Buffer, DslProgram, UserError, chunk


def build(topology, args):
    size = topology.num_ranks
    if size & (size - 1):
        raise UserError(f"recursive doubling needs a power-of-two number of ranks, not {size}")
    with DslProgram("allgather_recursive_doubling", topology, AllGather(size, 1, False),
                    instances=args.instances, protocol=args.protocol) as p:
        for r in range(size):
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
        distance = 1
        while distance < size:
            for r in range(size):
                start = r // distance * distance
                chunk(r, Buffer.output, start, distance).copy(r ^ distance, Buffer.output, start)
            distance *= 2
    return p


if __name__ == "__main__":
    main(build, default_topology="ndv4", doc=__doc__, default_sizes=("64K", "1M"))
