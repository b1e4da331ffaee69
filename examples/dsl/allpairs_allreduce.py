#!/usr/bin/env python3
"""All-pairs AllReduce in two steps (MSCCLang sec. 7.1, msccl-tools' allreduce_allpairs.py):
every rank sends the n-th block of its input to rank n's scratch buffer, rank n reduces the
blocks locally, then sends its fully reduced block to every other rank. In place; the input of
each rank is `size` blocks of `size` chunks."""

from _example import main

from ccsynth import AllReduce, Buffer, DslProgram, chunk


def build(topology, args):
    size = topology.num_ranks
    with DslProgram("allpairs_allreduce", topology, AllReduce(size, size, True),
                    instances=args.instances, protocol=args.protocol) as p:
        # Step 1: rank r1 sends block r2 to rank r2's scratch, slot `r1` (the block's senders
        # in rank order, skipping r2 itself).
        for r1 in range(size):
            for r2 in range(size):
                if r1 != r2:
                    slot = r1 if r1 < r2 else r1 - 1
                    chunk(r1, Buffer.input, r2 * size, size).copy(r2, "scratch", slot * size)
        # Local reduction of the received blocks into rank r's own block.
        for r in range(size):
            for slot in range(size - 1):
                c = chunk(r, Buffer.input, r * size, size)
                c.reduce(chunk(r, "scratch", slot * size, size))
        # Step 2: every rank sends its reduced block to all others.
        for r1 in range(size):
            for r2 in range(size):
                if r1 != r2:
                    chunk(r1, Buffer.input, r1 * size, size).copy(r2, Buffer.input, r1 * size)
    return p


if __name__ == "__main__":
    main(build, default_topology="ndv4", doc=__doc__, default_sizes=("64K", "1M"))
