"""The command line every DSL example shares (examples/dsl/*.py; the C++ examples take the same flags).

An example defines ``build(topology, args) -> DslProgram`` and ends with
``ccsynth.example.main(build, default_topology=..., doc=__doc__)``. Then

    python3 examples/dsl/NAME.py -o out.xml [--topology T] [--size 1M ...] [--json] [--check]
                                 [--compare METHOD ...] [--nodes N] [--instances I] [--protocol P]

builds the program, plans it (plan_dsl: trace, verify, compile, simulate beside the nccl reference),
writes the verified MSCCL-IR XML, prints the simulated time per size against nccl and the
lower bound (or one JSON document with --json) and, with --check, runs the program on the CPU
runtime and compares its outputs with the collective; --compare also evaluates a registered
method (a baseline such as rd, rhd, hier, twostep) on the same collective and compilation in the
same table. The flags and output are those of the C++ examples (examples/dsl/example.h). Exit codes follow the CLI: 0 ok, 1 the
program failed verification or the check, 2 bad input (a UserError, e.g. a DSL mistake: the
message names the line), 3 internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

import ccsynth

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


def parser(name: str, doc: str | None, default_topology: str,
           default_sizes: Sequence[str]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=name, description=(doc or "").strip() or None,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", help="write the verified MSCCL-IR XML here")
    p.add_argument("--topology", default=default_topology,
                   help=f"built-in topology or JSON file (default {default_topology})")
    p.add_argument("--size", action="append", dest="sizes", metavar="SIZE",
                   help="bytes per rank to simulate: 1M, 64K, 1K:1G:4; repeatable "
                        f"(default {' '.join(default_sizes)})")
    p.add_argument("--dialect", choices=["executor", "classic"],
                   help="XML dialect (default executor; classic for custom collectives, which the "
                        "executor dialect cannot name)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--check", action="store_true",
                   help="also run the program on the CPU runtime and compare with the collective")
    p.add_argument("--compare", action="append", default=[], metavar="METHOD",
                   help="also evaluate a registered method (e.g. a baseline: ring, rd, rhd, hier, "
                        "twostep) on the same collective and compilation; repeatable")
    p.add_argument("--nodes", type=int, default=0, help="nodes N (default: the topology's nodes)")
    p.add_argument("--instances", type=int, default=1, help="program instances (default 1)")
    p.add_argument("--protocol", default="Simple", help="Simple, LL or LL128 (default Simple)")
    return p


def node_shape(topology: ccsynth.Topology, args: argparse.Namespace) -> tuple[int, int]:
    """(N nodes, G GPUs per node): --nodes or the topology's nodes; UserError when they do not
    divide the ranks evenly."""
    nodes = args.nodes if args.nodes > 0 else max(1, len(topology.nodes))
    if topology.num_ranks % nodes:
        raise ccsynth.UserError(f"--nodes: {topology.num_ranks} ranks do not split into {nodes} nodes")
    return nodes, topology.num_ranks // nodes


def _compare(method: str, program, topology, sizes, dialect) -> ccsynth.PlanResult:
    # A registered method on the same collective, sizes and compilation as the program.
    return ccsynth.synthesize(method, topology, program.collective, sizes=sizes,
                              instances=[program.instances], protocol=program.protocol,
                              inplace=program.inplace, dialect=dialect, compare_with_nccl=False)


def _check(result: ccsynth.PlanResult) -> dict:
    program = result.program
    r = ccsynth.run_cpu(program, check=True, inplace=program.inplace and not program.outofplace,
                        collective=result.evaluated.collective)
    return {key: r[key] for key in ("ok", "checked_elements", "mismatches", "message")}


def run(build: Callable, args: argparse.Namespace, name: str, default_sizes: Sequence[str]) -> int:
    topology = ccsynth.topology(args.topology)
    program = build(topology, args)
    sizes = ccsynth.parse_sizes(args.sizes or list(default_sizes))
    dialect = args.dialect or ("classic" if program.collective.kind == "custom" else "executor")
    result = ccsynth.plan_dsl(program, sizes=sizes, topology=topology, dialect=dialect)
    compared = [(method, _compare(method, program, topology, sizes, dialect))
                for method in args.compare]
    names, rows = [name], []
    if result.evaluated is not None:
        rows.append(result.evaluated)
        if result.nccl is not None:
            names.append("nccl")
            rows.append(result.nccl)
        for method, other in compared:
            if other.ok:
                names.append(method)
                rows.append(other.evaluated)
    check = _check(result) if args.check and result.ok else None
    if result.ok and args.output:
        result.write_xml(args.output)
    ok = result.ok and (check is None or check["ok"])
    if args.json:
        doc = {"format": "ccsynth-dsl-example", "version": 1, "example": name,
               "topology": topology.name, "collective": program.collective.name, "ok": ok,
               "program": result.evaluated.to_dict()}
        if result.nccl is not None:
            doc["nccl"] = result.nccl.to_dict()
        if result.ok:
            doc["best"] = ccsynth.best_per_size(names, rows)
            if args.output:
                doc["output"] = args.output
        if check is not None:
            doc["check"] = check
        print(json.dumps(doc, indent=2))
        return EXIT_OK if ok else EXIT_CHECK_FAILED
    algorithm = result.algorithm
    print(f"{name} on {topology.name}: {program.collective.name}, {topology.num_ranks} ranks, "
          f"{algorithm.num_steps} steps, {algorithm.num_ops} sends")
    if not result.ok:
        print("verification FAILED:")
        for violation in result.violations:
            print("  " + violation)
        return EXIT_CHECK_FAILED
    summary = result.summary
    print(f"verified: algorithm and program correct ({result.variant}); "
          f"{summary.get('threadblocks')} threadblocks, {summary.get('steps')} steps")
    print(ccsynth.results_table(names, rows), end="")
    if args.output:
        print(f"wrote {args.output}")
    if check is not None:
        if check["ok"]:
            print(f"ran correctly on the CPU runtime ({check['checked_elements']} values checked)")
        else:
            print(f"CPU runtime check FAILED: {check['message']}")
    return EXIT_OK if ok else EXIT_CHECK_FAILED


def main(build: Callable, *, default_topology: str, doc: str | None = None, name: str | None = None,
         default_sizes: Sequence[str] = ("1M",), add_arguments: Callable | None = None,
         argv: Sequence[str] | None = None) -> None:
    """Parses the shared flags (and the example's own, from `add_arguments(parser)`), runs the
    example and exits with its code."""
    name = name or Path(sys.argv[0]).stem
    p = parser(name, doc, default_topology, default_sizes)
    if add_arguments is not None:
        add_arguments(p)
    args = p.parse_args(argv)
    try:
        code = run(build, args, name, default_sizes)
    except ccsynth.UserError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    except ccsynth.InternalError as error:
        print(f"{name}: internal error: {error}", file=sys.stderr)
        code = EXIT_INTERNAL
    except OSError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    sys.exit(code)
