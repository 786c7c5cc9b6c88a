"""<cubeplinit> programs (CubeLib: run once, in order, in one global memory, before
any derived metric) and the global arrays they leave to metric expressions."""

from __future__ import annotations

import numpy as np
import pytest

from psuite.model import cubepl
from psuite.model.cubepl import ExpressionError, evaluate, run_init
from psuite.model.experiment import Experiment, Location, Metric, Region

PREDEFINED = {"cube::#callpaths": 3.0, "cube::callpath::calleeid": [0.0, 1.0, 2.0],
              "cube::region::name": ["main", "MPI_Send", "MPI_Init"],
              "cube::region::paradigm": ["compiler", "mpi", "mpi"],
              "cube::region::role": ["function", "point2point", "function"]}

MASKS = """{
    global(mpi); global(p2p); global(startup); global(count);
    ${count} = 0;
    ${i} = 0;
    while (${i} < ${cube::#callpaths}) {
        ${r} = ${cube::callpath::calleeid}[${i}];
        if (${cube::region::mangled_name}[${r}] eq "") { ${name} = ${cube::region::name}[${r}]; };
        if (${cube::region::paradigm}[${r}] eq "mpi") {
            ${mpi}[${i}] = 1;
            ${count} = ${count} + 1;
            if (${name} =~ /^MPI_Init$/) { ${startup}[${i}] = 1; };
            if (${cube::region::role}[${r}] eq "point2point") { ${p2p}[${i}] = 1; };
        };
        ${i} = ${i} + 1;
    };
    return 0;
}"""


def test_init_fills_global_arrays_by_call_path() -> None:
    got = run_init([MASKS], PREDEFINED).globals
    assert got["mpi"] == [0.0, 1.0, 1.0]
    assert got["p2p"] == [0.0, 1.0]  # never set beyond: unset, 0
    assert got["startup"] == [0.0, 0.0, 1.0]
    assert got["count"] == 2.0


def test_only_declared_globals_are_left() -> None:
    got = run_init([MASKS], PREDEFINED).globals
    assert "i" not in got and "name" not in got and "r" not in got


def test_programs_share_one_memory_in_order() -> None:
    first = "{ global(a); ${a}[2] = 5; return 0; }"
    second = "{ global(b); ${b} = ${a}[2] * 2; return 0; }"
    assert run_init([first, second]).globals == {"a": [0.0, 0.0, 5.0], "b": 10.0}


def test_metric_set_is_recorded_not_refused() -> None:
    state = run_init(['{ if (1 == 1) { cube::metric::set::shmem_time("value", "VOID"); }; return 0; }'])
    assert state.settings == {"shmem_time": {"value": "VOID"}}


def test_unset_variable_is_empty_text_and_zero() -> None:
    assert float(evaluate('{ if (${nothing} eq "") { ${x} = 1; } else { ${x} = 2; }; return ${x} + ${nothing}; }',
                          lambda n: 0.0)) == 1.0


def test_metric_in_init_refused_in_one_line() -> None:
    with pytest.raises(ExpressionError, match="cubeplinit"):
        run_init(["{ global(a); ${a} = metric::time(); return 0; }"])


def test_work_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cubepl, "MAX_INIT_STEPS", 1000)
    with pytest.raises(ExpressionError, match="more than 1000 statements"):
        run_init(["{ ${i} = 0; while (${i} < 10000) { ${i} = ${i} + 1; }; return 0; }"])


def test_gather_by_call_path_id() -> None:
    ids = np.arange(3, dtype=np.float64).reshape(3, 1)
    variables = {"calculation::callpath::id": ids, "mpi": [0.0, 1.0, 1.0]}
    got = evaluate("${mpi}[${calculation::callpath::id}] * metric::time()", lambda n: np.full((3, 2), 2.0),
                   variables=variables)
    assert got.tolist() == [[0.0, 0.0], [2.0, 2.0], [2.0, 2.0]]


def test_missing_metric_is_zero() -> None:
    got = evaluate("metric::time() - metric::omp_idle_threads()", lambda n: 3.0, metrics={"time"})
    assert float(got) == 3.0


def masked(expression: str) -> Experiment:
    """main > MPI_Send, time 1 and 4 s; "mpi" the PREDERIVED_EXCLUSIVE
    expression over the masks MASKS fills."""
    exp = Experiment()
    exp.regions = [Region("main", paradigm="compiler"), Region("MPI_Send", role="point2point", paradigm="mpi")]
    exp.add_cnode(0, None)
    exp.add_cnode(1, 0)
    exp.locations = [Location()]
    exp.add_metric(Metric("time", unit="sec", kind="EXCLUSIVE"))
    exp.add_metric(Metric("mpi", unit="sec", kind="PREDERIVED_EXCLUSIVE", parent=0, expression=expression,
                          init=MASKS))
    exp.values["time"] = np.array([[1.0], [4.0]])
    return exp


def test_experiment_runs_init_before_derived_metrics() -> None:
    exp = masked("${mpi}[${calculation::callpath::id}] * (metric::time(e) - metric::idle(e))")
    assert exp.exclusive("mpi").tolist() == [[0.0], [4.0]]
    assert exp.inclusive("mpi").tolist() == [[4.0], [4.0]]


def test_cube_file_keeps_init(tmp_path) -> None:
    from psuite.formats.exporters.cube import write_experiment
    from psuite.formats.readers.cube import read

    exp = masked("${mpi}[${calculation::callpath::id}] * metric::time(e)")
    write_experiment(exp, str(tmp_path / "init.cubex"))
    back = read(str(tmp_path / "init.cubex"))
    assert back.metric("mpi").init == MASKS.strip()
    assert back.exclusive("mpi").tolist() == [[0.0], [4.0]]
