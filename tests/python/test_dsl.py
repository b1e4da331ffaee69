"""The MSCCLang-style DSL from Python: tracing, planning, verification and its errors."""

import inspect

import pytest

import ccsynth
from ccsynth import Buffer, DslProgram, chunk, parallelize


def line_of(marker: str) -> int:
    """The line of this file holding `marker` (a comment at the end of the line)."""
    for number, text in enumerate(inspect.getsource(inspect.getmodule(line_of)).splitlines(), 1):
        if text.rstrip().endswith("# " + marker):
            return number
    raise AssertionError(marker)


def ring_allgather(size: int, name: str = "ring_allgather", topology=None, **options) -> DslProgram:
    with DslProgram(name, topology or f"ring:{size}", "allgather", **options) as p:
        for r in range(size):
            c = chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
            for step in range(1, size):
                c = c.copy((r + step) % size, Buffer.output, r)
    return p


def ring_allreduce(size: int) -> DslProgram:
    # Reduce-scatter around the ring (chunk j ends reduced on rank j), then an allgather.
    with DslProgram("ring_allreduce", f"ring:{size}", ccsynth.AllReduce(size, 1, False)) as p:
        for j in range(size):
            c = chunk((j + 1) % size, Buffer.input, j)
            for step in range(1, size):
                c = chunk((j + 1 + step) % size, Buffer.input, j).reduce(c)
            c = c.copy(j, Buffer.output, j)
            for step in range(1, size):
                c = c.copy((j + step) % size, Buffer.output, j)
    return p


def test_ring_allgather_traces_plans_and_verifies():
    p = ring_allgather(4)
    assert len(p.operations) == 4 * 4
    algorithm = p.trace()
    assert algorithm.collective.name == "allgather"
    assert algorithm.num_steps == 3
    assert len(algorithm.ops) == 12
    assert all(op["kind"] == "copy" for op in algorithm.ops)
    assert ccsynth.verify(p).ok
    assert ccsynth.verify(algorithm, "ring:4").ok
    result = ccsynth.plan_dsl(p, sizes=["64K", "1M"])
    assert result.ok, result.violations
    assert [r["bytes"] for r in result.results] == [64 * 1024, 1 << 20]
    assert all(r["time_us"] >= r["lower_bound_us"] > 0 for r in result.results)
    assert result.best_time_us == result.results[-1]["time_us"]
    assert result.nccl_results  # the nccl reference on the same topology
    assert result.summary["threadblocks"] > 0
    assert "<algo" in result.xml() and "<algo" in result.xml("classic")
    assert "nccl us" in result.table("ring_allgather")
    assert "vs nccl" in result.table("ring_allgather")


def test_ring_allreduce_on_a_ring():
    p = ring_allreduce(4)
    assert p.trace().collective.name == "allreduce"
    result = p.plan(sizes="1M")
    assert result.ok, result.violations
    program = result.program
    check = ccsynth.run_cpu(program, collective=result.evaluated.collective)
    assert check["ok"] and check["checked"], check["message"]


def test_compile_simulate_and_run_a_dsl_program():
    p = ring_allgather(4, instances=2)
    program = ccsynth.compile(p)
    assert program.num_ranks == 4
    assert ccsynth.verify(program, collective=ccsynth.collective("allgather", 4, 2)).ok
    times = ccsynth.simulate(program, "ring:4", ["1M"])
    assert times[0]["bytes"] == 1 << 20 and times[0]["time_us"] > 0
    assert ccsynth.simulate(p, sizes="1M")[0]["time_us"] > 0
    assert ccsynth.run_cpu(program)["ok"]


def test_stale_reference_names_operation_rank_buffer_index_and_line():
    with DslProgram("stale", "ring:4", "allgather"):
        old = chunk(0, Buffer.input, 0).copy(0, Buffer.output, 0)
        chunk(1, Buffer.input, 0).copy(0, Buffer.output, 0)  # overwrites rank 0 output[0]
        with pytest.raises(ccsynth.UserError) as error:
            old.copy(1, Buffer.output, 0)  # stale use
    message = str(error.value)
    assert isinstance(error.value, ValueError)
    assert "copy" in message
    assert "rank 0" in message
    assert "output" in message and "[0]" in message
    assert f"test_dsl.py:{line_of('stale use')}" in message


def test_directive_conflict_raises():
    with DslProgram("conflict", "ring:4", "allgather", chunks_per_rank=2):
        chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0, ch=0, sendtb=0)
        with pytest.raises(ccsynth.UserError) as error:
            chunk(0, Buffer.input, 1).copy(1, Buffer.output, 1, ch=0, sendtb=1)  # conflict
    assert f"test_dsl.py:{line_of('conflict')}" in str(error.value)


def test_missing_postcondition_raises():
    with DslProgram("partial", "ring:4", "allgather") as p:
        for r in range(4):
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
    with pytest.raises(ccsynth.UserError) as error:
        p.trace()
    assert "output" in str(error.value)
    with pytest.raises(ccsynth.UserError):
        ccsynth.plan_dsl(p)


def test_uninitialized_and_out_of_range_chunks_raise():
    with DslProgram("bad", "ring:4", "allgather"):
        with pytest.raises(ccsynth.UserError):
            chunk(0, Buffer.output, 1)  # nothing there yet
        with pytest.raises(ccsynth.UserError):
            chunk(7, Buffer.input, 0)


def test_parallelize_context_manager():
    size = 4
    with DslProgram("parallel_ring", f"ring:{size}", "allgather") as p:
        with parallelize(2):
            for r in range(size):
                c = chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
                for step in range(1, size):
                    c = c.copy((r + step) % size, Buffer.output, r)
    assert all(op["parallel"] == 2 for op in p.operations)
    algorithm = p.trace()
    assert algorithm.collective.chunks_per_rank == 2
    assert ccsynth.plan_dsl(p).ok
    with DslProgram("method_form", f"ring:{size}", "allgather") as q:
        with q.parallelize(2):
            c = q.chunk(0, "in", 0)
        assert c.rank == 0 and c.buffer == Buffer.input


def test_buffers_by_name_and_scratch():
    assert Buffer("in") == Buffer.input and Buffer("output") == Buffer.output
    assert Buffer("tmp").kind == "scratch" and Buffer.scratch.kind == "scratch"
    with DslProgram("scratch", "ring:2", "allgather") as p:
        for r in range(2):
            c = chunk(r, "input", 0).copy(r, "out", r)
            c = c.copy(1 - r, "tmp", r).copy(1 - r, Buffer.output, r)
    assert p.scratch_sizes == {"tmp": 2}
    assert ccsynth.plan_dsl(p).ok


def test_program_stack_and_aliases():
    assert ccsynth.MSCCLProgram is DslProgram
    with pytest.raises(ccsynth.UserError):
        chunk(0, Buffer.input, 0)  # no active program
    with DslProgram("outer", "ring:2", "allgather") as outer:
        with DslProgram("inner", "ring:2", "allgather") as inner:
            assert ccsynth.current_program() is inner
        assert ccsynth.current_program() is outer


def test_inplace_from_the_collective_helper():
    with DslProgram("ar", "ring:2", ccsynth.AllReduce(2, 1, True)) as p:
        pass
    assert p.inplace
    with DslProgram("ar", "ring:2", ccsynth.AllReduce(2, 1, True), inplace=False) as q:
        pass
    assert not q.inplace
