"""ccsynth: synthesize, write, verify, compile and simulate collective-communication algorithms.

The extension ``ccsynth._ccsynth`` binds the C++ library (a thin layer: docs/python.md); this file
adds what makes programs read like MSCCLang (msccl-tools) programs: a stack of active programs,
module-level ``chunk()`` and ``with parallelize(n):``, and collective helpers such as
``AllReduce(num_ranks, chunk_factor, inplace)``::

    import ccsynth
    from ccsynth import Buffer, DslProgram, chunk

    topology = ccsynth.topology("ring:4")
    with DslProgram("ring", topology, "allgather") as p:
        for r in range(4):
            c = chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
            for s in range(1, 4):
                c = c.copy((r + s) % 4, Buffer.output, r)
    result = ccsynth.plan_dsl(p, sizes=["1M"])
    result.write_xml("ring.xml")
"""

from __future__ import annotations

import os as _os

from . import _ccsynth
from ._ccsynth import (  # noqa: F401  (re-exported)
    Algorithm,
    Buffer,
    ChunkRef,
    Collective,
    Evaluated,
    InternalError,
    PlanResult,
    Program,
    Topology,
    UserError,
    VerifyReport,
    __version__,
    algorithm_from_json,
    best_per_size,
    collective,
    collective_kinds,
    collective_of,
    format_bytes,
    lower_bound,
    methods,
    parse_bytes,
    parse_sizes,
    parse_xml,
    read_algorithm,
    read_xml,
    results_table,
    run_cpu,
    topologies,
    topology,
    verify_algorithm,
    verify_program,
)

_ccsynth._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)))

__all__ = [
    "AllGather", "AllReduce", "AllToAll", "AllToNext", "Algorithm", "Broadcast", "Buffer",
    "ChunkRef", "Collective", "DslProgram", "Evaluated", "Gather", "InternalError",
    "MSCCLProgram", "PlanResult", "Program", "Reduce", "ReduceScatter", "Scatter", "Topology",
    "UserError", "VerifyReport", "chunk", "collective", "compile", "current_program",
    "methods", "parallelize", "plan_algorithm", "plan_dsl", "read_algorithm", "read_xml",
    "run_cpu", "simulate", "synthesize", "topologies", "topology", "verify",
]


def _as_topology(value) -> Topology:
    if isinstance(value, Topology):
        return value
    if isinstance(value, (str, _os.PathLike)):
        return topology(_os.fspath(value))
    raise TypeError(f"expected a ccsynth.Topology or a topology name, got {type(value).__name__}")


def _as_collective(value, topo: Topology | None, chunks_per_rank: int = 1, root: int = 0):
    if isinstance(value, Collective):
        return value
    if isinstance(value, (str, _os.PathLike)):
        if topo is None:
            raise UserError(f"collective '{value}' given by name needs a topology (for its ranks); "
                            "pass a ccsynth.Collective, e.g. ccsynth.AllGather(8)")
        return collective(_os.fspath(value), topo.num_ranks, chunks_per_rank, root)
    raise TypeError(f"expected a ccsynth.Collective or a collective name, got {type(value).__name__}")


# --- collectives, msccl-tools style -------------------------------------------------------------

def _helper(kind: str, num_ranks: int, chunk_factor: int, inplace: bool, root: int = 0):
    c = collective(kind, num_ranks, chunk_factor, root)
    c.inplace = bool(inplace)  # DslProgram(..., inplace=None) takes it from here
    return c


def AllGather(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:
    """AllGather: every rank's `chunk_factor` input chunks end in every rank's output."""
    return _helper("allgather", num_ranks, chunk_factor, inplace)


def AllReduce(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:
    """AllReduce: num_ranks * chunk_factor chunks per rank, reduced everywhere."""
    return _helper("allreduce", num_ranks, chunk_factor, inplace)


def ReduceScatter(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:
    return _helper("reducescatter", num_ranks, chunk_factor, inplace)


def AllToAll(num_ranks: int, chunk_factor: int = 1, inplace: bool = False) -> Collective:
    return _helper("alltoall", num_ranks, chunk_factor, inplace)


def Broadcast(num_ranks: int, chunk_factor: int = 1, inplace: bool = False, root: int = 0) -> Collective:
    return _helper("broadcast", num_ranks, chunk_factor, inplace, root)


def Reduce(num_ranks: int, chunk_factor: int = 1, inplace: bool = False, root: int = 0) -> Collective:
    return _helper("reduce", num_ranks, chunk_factor, inplace, root)


def Gather(num_ranks: int, chunk_factor: int = 1, inplace: bool = False, root: int = 0) -> Collective:
    return _helper("gather", num_ranks, chunk_factor, inplace, root)


def Scatter(num_ranks: int, chunk_factor: int = 1, inplace: bool = False, root: int = 0) -> Collective:
    return _helper("scatter", num_ranks, chunk_factor, inplace, root)


def AllToNext(num_ranks: int, chunk_factor: int = 1) -> Collective:
    """MSCCLang's AllToNext: rank r's input goes to rank r+1 (the last rank sends nothing)."""
    return _helper("alltonext", num_ranks, chunk_factor, False)


# --- the DSL ------------------------------------------------------------------------------------

_programs: list = []  # the active programs, innermost last (as msccl-tools keeps them)


def current_program() -> "DslProgram":
    """The innermost active program (`with DslProgram(...):`)."""
    if not _programs:
        raise UserError("no DSL program is active: write the program inside `with DslProgram(...):`")
    return _programs[-1]


class _Parallel:
    """`with parallelize(n):` (also `with p.parallelize(n):`)."""

    def __init__(self, program, factor: int):
        self._program = program
        self._factor = factor

    def __enter__(self):
        self._program.begin_parallelize(self._factor)
        return self._program

    def __exit__(self, *exc):
        self._program.end_parallelize()
        return False


class DslProgram(_ccsynth._DslProgram):
    """An MSCCLang-style program: ``with DslProgram(name, topology, collective) as p: ...``.

    `topology` is a ccsynth.Topology, a built-in name or a JSON file (or None: then `collective`
    must be a ccsynth.Collective and plan_dsl needs a topology). `collective` is a
    ccsynth.Collective (AllReduce(8, 1, True), ...) or a name ('allreduce', 'alltonext', a JSON
    file) sized by the topology's ranks. `inplace` None takes the collective helper's flag.
    """

    def __init__(self, name: str, topology=None, collective=None, instances: int = 1,
                 protocol: str = "Simple", inplace: bool | None = None, chunks_per_rank: int = 1,
                 root: int = 0):
        topo = None if topology is None else _as_topology(topology)
        if collective is None:
            raise UserError("DslProgram needs a collective (a ccsynth.Collective or a name)")
        coll = _as_collective(collective, topo, chunks_per_rank, root)
        if inplace is None:
            inplace = getattr(coll, "inplace", False)
        super().__init__(coll, name, topo.name if topo is not None else "", instances, protocol,
                         bool(inplace))
        self.topology = topo

    def __enter__(self):
        _programs.append(self)
        return self

    def __exit__(self, *exc):
        if _programs and _programs[-1] is self:
            _programs.pop()
        elif self in _programs:
            _programs.remove(self)
        return False

    def parallelize(self, factor: int) -> _Parallel:
        """`with p.parallelize(n):` the enclosed operations run as n parallel instances."""
        return _Parallel(self, factor)

    def trace(self) -> Algorithm:
        """The traced Algorithm (UserError when the postcondition fails); same as to_algorithm()."""
        return self.to_algorithm()

    def plan(self, sizes=None, topology=None, dialect: str = "executor",
             compare_with_nccl: bool = True) -> PlanResult:
        return plan_dsl(self, sizes=sizes, topology=topology, dialect=dialect,
                        compare_with_nccl=compare_with_nccl)

    def verify(self, topology=None) -> VerifyReport:
        return verify(self, topology)

    def __repr__(self):
        where = f" on {self.topology.name}" if self.topology is not None else ""
        return (f"<ccsynth.DslProgram {self.name}: {self.collective.name}{where}, "
                f"{len(self.operations)} operations>")


MSCCLProgram = DslProgram


def chunk(rank: int, buffer, index: int, count: int = 1) -> ChunkRef:
    """A reference to `count` chunks at (rank, buffer, index) in the current program."""
    return current_program().chunk(rank, buffer, index, count)


def parallelize(factor: int) -> _Parallel:
    """`with parallelize(n):` on the current program (MSCCLang sec. 5.1)."""
    return _Parallel(current_program(), factor)


# --- planning, verification, compilation, simulation --------------------------------------------

def _params(params: dict) -> dict:
    # Method parameters are named like their CLI flags ("max-steps"); Python spells max_steps.
    return {key.replace("_", "-"): value for key, value in params.items()}


def synthesize(method: str, topology, collective="allgather", size=None, *, sizes=None,
               chunks: int = 0, root: int = 0, time_limit: float = 60.0, instances=(1,),
               protocol: str = "Simple", inplace: bool = False, dialect: str = "executor",
               compare_with_nccl: bool = True, **params) -> PlanResult:
    """Plans with a registered method (ccsynth.methods(): taccl, sccl, tacos, ring, ...).

    `collective` is a kind name ('allgather', ...), another name or file (resolved for the
    topology's ranks) or a ccsynth.Collective; `size` is the size the method optimizes for and,
    without `sizes`, the one simulated; other keywords are the method's parameters
    (max_steps=3 for --max-steps). Returns a PlanResult (ok, xml(), write_xml(), results, ...).
    """
    topo = _as_topology(topology)
    kind = ""
    coll = None
    if isinstance(collective, Collective):
        coll = collective
    elif isinstance(collective, str) and collective in collective_kinds():
        kind = collective
    else:
        coll = _as_collective(collective, topo, chunks or 1, root)
    if sizes is None:
        sizes = size
    if isinstance(instances, int):
        instances = [instances]
    return _ccsynth._plan(method, topo, coll, kind, chunks, root, sizes, size, time_limit,
                          _params(params), list(instances), protocol, inplace, dialect,
                          compare_with_nccl)


def plan_algorithm(algorithm: Algorithm, topology, sizes=None, instances=(1,),
                   protocol: str = "Simple", inplace: bool = False, dialect: str = "executor",
                   compare_with_nccl: bool = True) -> PlanResult:
    """Evaluates an algorithm made elsewhere (a file, the DSL) as synthesize() would."""
    if isinstance(instances, int):
        instances = [instances]
    return _ccsynth.plan_algorithm(algorithm, _as_topology(topology), sizes, list(instances),
                                   protocol, inplace, dialect, compare_with_nccl)


def plan_dsl(program: DslProgram, sizes=None, topology=None, dialect: str = "executor",
             compare_with_nccl: bool = True) -> PlanResult:
    """Traces, verifies, compiles (the program's instances, protocol, in-place) and simulates a
    DSL program on its topology (or `topology`) at `sizes` (default 1M), beside the nccl reference."""
    topo = topology if topology is not None else getattr(program, "topology", None)
    if topo is None:
        raise UserError(f"program '{program.name}' has no topology: pass topology=...")
    return _ccsynth._plan_dsl(program, _as_topology(topo), sizes, dialect, compare_with_nccl)


def verify(obj, topology=None, collective=None) -> VerifyReport:
    """Symbolic verification of an Algorithm, a DSL program (its trace) or a Program.

    With a topology, an algorithm's ops must use its links; a Program is checked against
    `collective` (default: the built-in collective it names)."""
    if isinstance(obj, _ccsynth._DslProgram):
        topo = topology if topology is not None else getattr(obj, "topology", None)
        return verify_algorithm(obj.to_algorithm(), None if topo is None else _as_topology(topo))
    if isinstance(obj, Algorithm):
        return verify_algorithm(obj, None if topology is None else _as_topology(topology))
    if isinstance(obj, Program):
        return verify_program(obj, collective)
    raise TypeError(f"cannot verify a {type(obj).__name__}")


def compile(algorithm, instances: int | None = None, protocol: str | None = None,
            inplace: bool | None = None, dialect: str = "executor", fuse: bool = True,
            name: str = "") -> Program:
    """Compiles an Algorithm (or a DSL program's trace, with its options) into a Program."""
    if isinstance(algorithm, _ccsynth._DslProgram):
        program = algorithm
        algorithm = program.to_algorithm()
        instances = program.instances if instances is None else instances
        protocol = program.protocol if protocol is None else protocol
        inplace = program.inplace if inplace is None else inplace
        name = name or program.name
    return _ccsynth.compile(algorithm, 1 if instances is None else instances,
                            "Simple" if protocol is None else protocol, bool(inplace), dialect,
                            fuse, name)


def simulate(program, topology=None, sizes=None) -> list:
    """Simulated time per size: a list of dicts (bytes, time_us, algbw_gbps, busbw_gbps, ...).

    `program` is a Program, an Algorithm (compiled with the defaults) or a DSL program (planned
    with plan_dsl: its results also carry the lower bound)."""
    if isinstance(program, _ccsynth._DslProgram):
        result = plan_dsl(program, sizes=sizes, topology=topology, compare_with_nccl=False)
        if not result.ok:
            raise UserError("the program did not verify:\n" + "\n".join(result.violations))
        return result.results
    if topology is None:
        raise UserError("simulate needs a topology")
    if isinstance(program, Algorithm):
        program = compile(program)
    return _ccsynth.simulate(program, _as_topology(topology), sizes)
