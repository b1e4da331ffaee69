#!/usr/bin/env python3
"""Hierarchical AllReduce (MSCCLang fig. 3 and sec. 5.1) on N nodes of G GPUs: ring
ReduceScatter inside each node, ring ReduceScatter + AllGather across nodes among the GPUs with
the same local index, ring AllGather inside each node. The intra-node rings move N chunks per
send and are parallelized N ways; intra-node ReduceScatters run on channel 0, the cross-node
rings on channel 1 and the intra-node AllGathers on channel 2 (the paper's schedule)."""

from _example import main, node_shape

from ccsynth import AllReduce, DslProgram, chunk, parallelize


def reduce_scatter(ranks, offset, count, ch):
    size = len(ranks)
    for r in range(size):
        index = offset + r * count
        c = chunk(ranks[(r + 1) % size], "in", index, count)
        for step in range(1, size):
            c = chunk(ranks[(step + r + 1) % size], "in", index, count).reduce(c, ch=ch)


def all_gather(ranks, offset, count, ch):
    size = len(ranks)
    for r in range(size):
        index = offset + r * count
        c = chunk(ranks[r], "in", index, count)
        for step in range(1, size):
            c = c.copy(ranks[(step + r) % size], "in", index, ch=ch)


def build(topology, args):
    nodes, gpus = node_shape(topology, args)
    with DslProgram("hierarchical_allreduce", topology, AllReduce(nodes * gpus, 1, True),
                    instances=args.instances, protocol=args.protocol) as p:
        for n in range(nodes):
            with parallelize(nodes):
                reduce_scatter([g + n * gpus for g in range(gpus)], 0, nodes, ch=0)
        for g in range(gpus):
            cross = [g + n * gpus for n in range(nodes)]
            reduce_scatter(cross, g * nodes, 1, ch=1)
            all_gather(cross, g * nodes, 1, ch=1)
        for n in range(nodes):
            with parallelize(nodes):
                all_gather([g + n * gpus for g in range(gpus)], 0, nodes, ch=2)
    return p


if __name__ == "__main__":
    main(build, default_topology="ndv4x2", doc=__doc__)
