#!/usr/bin/env python3
"""Recursive halving-doubling AllReduce (Rabenseifner) on 2^k ranks, in place: a
recursive-halving ReduceScatter (partners at distance R/2, R/4, ..., 1 exchange and reduce
half of their current range) leaves rank r with the reduced chunk r, then a recursive-doubling
AllGather (distance 1, 2, ..., R/2) spreads the chunks. 2 log2(R) steps."""

from _example import main

from ccsynth import AllReduce, Buffer, DslProgram, UserError, chunk


def build(topology, args):
    size = topology.num_ranks
    if size & (size - 1):
        raise UserError(f"recursive halving-doubling needs a power-of-two number of ranks, not {size}")
    with DslProgram("allreduce_recursive_halving_doubling", topology, AllReduce(size, 1, True),
                    instances=args.instances, protocol=args.protocol) as p:
        # ReduceScatter: rank r's range is the `distance*2` chunks around r; it keeps the half
        # holding r and reduces its other half into the partner's.
        distance = size // 2
        while distance >= 1:
            for r in range(size):
                partner = r ^ distance
                start = partner // distance * distance  # the partner's half
                chunk(partner, Buffer.input, start, distance).reduce(
                    chunk(r, Buffer.input, start, distance))
            distance //= 2
        # AllGather by recursive doubling.
        distance = 1
        while distance < size:
            for r in range(size):
                start = r // distance * distance
                chunk(r, Buffer.input, start, distance).copy(r ^ distance, Buffer.input, start)
            distance *= 2
    return p


if __name__ == "__main__":
    main(build, default_topology="ndv4", doc=__doc__, default_sizes=("64K", "1M"))
