"""Every Python DSL example (examples/dsl/*.py) as a script: plans, verifies, writes its XML,
prints JSON, runs correctly on the CPU runtime; errors exit with the CLI's codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ccsynth

ROOT = Path(os.environ.get("CCSYNTH_SOURCE_DIR", Path(__file__).resolve().parents[2]))
EXAMPLES = sorted(p for p in (ROOT / "examples" / "dsl").glob("*.py") if not p.name.startswith("_"))


def run(script: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(ccsynth.__file__).resolve().parents[1])] + env.get("PYTHONPATH", "").split(os.pathsep))
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_examples_are_there():
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_plans_verifies_and_runs(script, tmp_path):
    out = tmp_path / "out.xml"
    proc = run(script, "-o", str(out), "--size", "64K", "--json", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "ccsynth-dsl-example" and doc["ok"]
    assert doc["example"] == script.stem
    assert doc["check"]["ok"] and doc["check"]["checked_elements"] > 0
    assert doc["best"][0]["bytes"] == 64 * 1024
    program = ccsynth.read_xml(str(out))
    assert program.num_ranks == ccsynth.topology(doc["topology"]).num_ranks


def test_example_text_output_and_compare():
    proc = run(ROOT / "examples" / "dsl" / "ring_allreduce.py", "--topology", "ring:4",
               "--channels", "2", "--instances", "2", "--size", "1M", "--compare", "rhd")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verified" in proc.stdout and "nccl us" in proc.stdout and "rhd" in proc.stdout


def test_example_errors_exit_2(tmp_path):
    proc = run(ROOT / "examples" / "dsl" / "ring_allreduce.py", "--topology", "nosuchtopology")
    assert proc.returncode == 2 and "error" in proc.stderr
    proc = run(ROOT / "examples" / "dsl" / "allgather_recursive_doubling.py", "--topology", "ring:6")
    assert proc.returncode == 2 and "power-of-two" in proc.stderr
    # A DSL mistake (a stale reference) is a UserError naming the script's line.
    script = tmp_path / "stale.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'examples' / 'dsl')!r})\n"
        "from _example import main\n"
        "from ccsynth import DslProgram, chunk\n"
        "def build(topology, args):\n"
        "    with DslProgram('stale', topology, 'allgather') as p:\n"
        "        c = chunk(0, 'in', 0).copy(0, 'out', 0)\n"
        "        chunk(1, 'in', 0).copy(0, 'out', 0)\n"
        "        c.copy(1, 'out', 0)\n"
        "    return p\n"
        "main(build, default_topology='ring:4')\n")
    proc = run(script)
    assert proc.returncode == 2
    assert "stale.py:9" in proc.stderr


# The C++ examples (build/<preset>/examples/dsl/NAME, next to the python/ folder of this module)
# write the same programs: both languages must trace to the same algorithm and simulate alike.
CPP_EXAMPLES = Path(ccsynth.__file__).resolve().parents[2] / "examples" / "dsl"


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_cpp_and_python_examples_agree(script):
    binary = CPP_EXAMPLES / script.stem
    if not binary.exists():
        pytest.skip(f"{binary} not built (CCSYNTH_BUILD_EXAMPLES=OFF?)")
    args = ["--size", "64K", "--size", "1M", "--json"]
    py = run(script, *args)
    cpp = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=600)
    assert py.returncode == 0 and cpp.returncode == 0, py.stderr + cpp.stderr
    py_doc, cpp_doc = json.loads(py.stdout), json.loads(cpp.stdout)
    assert py_doc["topology"] == cpp_doc["topology"]
    for key in ("ops", "steps"):
        assert py_doc["program"][key] == cpp_doc["program"][key], key
    py_times = [r["time_us"] for r in py_doc["program"]["results"]]
    cpp_times = [r["time_us"] for r in cpp_doc["program"]["results"]]
    assert py_times == pytest.approx(cpp_times, rel=1e-9)
