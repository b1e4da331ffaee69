#!/usr/bin/env python3
"""Binomial-tree Broadcast from --root: in step s every rank that has the data (relative rank
below 2^s) sends the whole buffer to relative rank + 2^s (ceil(log2 R) steps)."""

from _example import main

from ccsynth import Broadcast, Buffer, DslProgram, chunk


def build(topology, args):
    size = topology.num_ranks
    chunks = args.chunks
    with DslProgram("broadcast_binomial_tree", topology, Broadcast(size, chunks, False, args.root),
                    instances=args.instances, protocol=args.protocol) as p:
        chunk(args.root, Buffer.input, 0, chunks).copy(args.root, Buffer.output, 0)
        distance = 1
        while distance < size:
            for relative in range(min(distance, size - distance)):
                src = (args.root + relative) % size
                dst = (args.root + relative + distance) % size
                chunk(src, Buffer.output, 0, chunks).copy(dst, Buffer.output, 0)
            distance *= 2
    return p


def options(parser):
    parser.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    parser.add_argument("--chunks", type=int, default=1, help="chunks of the buffer (default 1)")


if __name__ == "__main__":
    main(build, default_topology="ndv4", doc=__doc__, add_arguments=options)
