"""The non-DSL API: topologies, collectives, synthesis, XML round trips, errors."""

import json

import pytest

import ccsynth


def test_topologies_and_collectives():
    catalog = ccsynth.topologies()
    assert "dgx1" in catalog and catalog["dgx1"]
    t = ccsynth.topology("dgx1")
    assert t.name == "dgx1" and t.num_ranks == 8 and t.num_links > 0
    assert ccsynth.topology("ring:4").num_ranks == 4
    c = ccsynth.collective("allgather", 8, 2)
    assert (c.kind, c.num_ranks, c.chunks_per_rank, c.output_chunks) == ("allgather", 8, 2, 16)
    assert ccsynth.collective("alltonext", 4).num_ranks == 4
    assert ccsynth.AllReduce(4, 2).input_chunks == 8
    assert ccsynth.AllReduce(4, 1, True).inplace
    assert "allreduce" in ccsynth.collective_kinds()


def test_user_errors_are_value_errors():
    assert issubclass(ccsynth.UserError, ValueError)
    assert issubclass(ccsynth.InternalError, RuntimeError)
    with pytest.raises(ccsynth.UserError, match="nosuchtopology"):
        ccsynth.topology("nosuchtopology")
    with pytest.raises(ccsynth.UserError):
        ccsynth.synthesize("nosuchmethod", "dgx1", "allgather")
    with pytest.raises(ccsynth.UserError):
        ccsynth.synthesize("ring", "dgx1", "allgather", nosuchparam=1)


def test_synthesize_tacos_write_and_read_xml(tmp_path):
    result = ccsynth.synthesize("tacos", "dgx1", "allgather", size="1M")
    assert result.ok, result.violations
    assert result.status in ("optimal", "feasible")
    assert result.violations == []
    assert result.best_time_us > 0
    assert result.results[0]["bytes"] == 1 << 20
    assert result.results[0]["lower_bound_us"] > 0
    assert result.nccl_results and result.nccl_results[0]["time_us"] > 0
    algorithm = result.algorithm
    assert algorithm.collective.name == "allgather" and algorithm.num_steps >= 1
    json.loads(algorithm.to_json())
    path = tmp_path / "tacos.xml"
    result.write_xml(str(path))
    program = ccsynth.read_xml(str(path))
    assert program.num_ranks == 8 and program.collective == "allgather"
    assert ccsynth.verify(program).ok
    assert ccsynth.run_cpu(program, check=True)["ok"]
    classic = tmp_path / "classic.xml"
    result.write_xml(str(classic), dialect="classic")
    assert ccsynth.read_xml(str(classic)).num_ranks == 8
    doc = result.to_dict("tacos")
    assert doc["ok"] and doc["best"]


def test_synthesize_with_method_parameters():
    result = ccsynth.synthesize("sccl", "ring:4", "allgather", max_steps=3, time_limit=30)
    assert result.ok
    assert result.algorithm.num_steps <= 3
    ring = ccsynth.synthesize("ring", "ring:4", ccsynth.AllGather(4), sizes=["1K", "1M"])
    assert [r["bytes"] for r in ring.results] == [1024, 1 << 20]


def test_algorithm_json_round_trip_and_compile(tmp_path):
    algorithm = ccsynth.synthesize("ring", "ring:4", "allreduce").algorithm
    path = tmp_path / "a.json"
    algorithm.write_json(str(path))
    again = ccsynth.read_algorithm(str(path))
    assert again.to_json() == algorithm.to_json()
    assert ccsynth.verify(again, "ring:4").ok
    program = ccsynth.compile(again, instances=2, protocol="LL")
    assert program.protocol == "LL"
    assert ccsynth.parse_xml(program.to_xml()).num_ranks == 4
    evaluated = ccsynth.plan_algorithm(again, "ring:4", sizes="1M")
    assert evaluated.ok
    assert ccsynth.lower_bound(ccsynth.topology("ring:4"), again.collective, "1M")["lower_bound_us"] > 0
