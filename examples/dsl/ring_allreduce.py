#!/usr/bin/env python3
"""Ring AllReduce (NCCL's algorithm in MSCCLang, as msccl-tools' allreduce_a100_ring.py):
a reduce ring then a copy ring over all ranks, in place; chunk i runs on channel i % channels,
and the compiler replicates the whole program `--instances` times."""

from _example import main

from ccsynth import AllReduce, Buffer, DslProgram, chunk


def build(topology, args):
    size = topology.num_ranks
    with DslProgram("ring_allreduce", topology, AllReduce(size, 1, True),
                    instances=args.instances, protocol=args.protocol) as p:
        # Reduce ring: after size-1 steps chunk `index` is fully reduced on rank index-1.
        for step in range(size - 1):
            for index in range(size):
                rank = (index + step) % size
                next_rank = (index + step + 1) % size
                c = chunk(next_rank, Buffer.input, index)
                c.reduce(chunk(rank, Buffer.input, index), ch=index % args.channels)
        # Copy ring: the reduced chunk travels to every other rank.
        for step in range(-1, size - 2):
            for index in range(size):
                rank = (index + step) % size
                next_rank = (index + step + 1) % size
                chunk(rank, Buffer.input, index).copy(next_rank, Buffer.input, index,
                                                      ch=index % args.channels)
    return p


def options(parser):
    parser.add_argument("--channels", type=int, default=1, help="channels the chunks use (default 1)")


if __name__ == "__main__":
    main(build, default_topology="ndv4", doc=__doc__, add_arguments=options)
