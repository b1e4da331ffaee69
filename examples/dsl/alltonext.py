#!/usr/bin/env python3
"""AllToNext (MSCCLang sec. 7.4, fig. 10), a custom collective: rank r sends its buffer of G
chunks to rank r+1, the last rank sends nothing. Inside a node the buffer goes directly. Across
nodes (--variant cooperative, the default) the last GPU of node n scatters its chunks over the
GPUs of its node, each GPU sends its chunk over its own IB link to the GPU with the same index
on node n+1, and those gather them on the first GPU there: every IB link of the node is used.
--variant direct sends every buffer directly (the naive baseline)."""

from _example import main, node_shape

from ccsynth import AllToNext, DslProgram, chunk


def build(topology, args):
    nodes, gpus = node_shape(topology, args)
    size = topology.num_ranks
    chunks = gpus  # one chunk per GPU of a node, so a cross-node buffer splits over all of them
    with DslProgram(f"alltonext_{args.variant}", topology, AllToNext(size, chunks),
                    instances=args.instances, protocol=args.protocol) as p:
        for r in range(size - 1):
            n, g = divmod(r, gpus)
            if args.variant == "direct" or g != gpus - 1:
                chunk(r, "in", 0, chunks).copy(r + 1, "out", 0)
                continue
            # Cooperative cross-node send from (n, G-1) to (n+1, 0).
            for k in range(chunks):
                c = chunk(r, "in", k)
                if k != g:
                    c = c.copy(n * gpus + k, "scratch", 0)  # scatter inside node n
                dst = (n + 1) * gpus + k
                if k == 0:
                    c.copy(dst, "out", k)  # arrives where it belongs
                else:
                    c.copy(dst, "scratch", 0).copy((n + 1) * gpus, "out", k)  # IB, then gather
    return p


def options(parser):
    parser.add_argument("--variant", choices=["cooperative", "direct"], default="cooperative",
                        help="cross-node sends (default cooperative)")


if __name__ == "__main__":
    main(build, default_topology="ndv4x2", doc=__doc__, add_arguments=options,
         default_sizes=("1M", "64M"))
