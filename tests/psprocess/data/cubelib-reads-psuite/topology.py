"""A small experiment with a Cartesian topology, written by psuite's CUBE
writer: 2 processes x 2 threads placed on a 2 x 2 grid, periodic in its
first dimension, one call path below the root, a stored and a derived
metric.  make.sh runs it to get the cube CubeLib reads; the tests build the
same experiment (experiment()) and compare with what CubeLib printed.

    python topology.py OUT.cubex"""

from __future__ import annotations

import sys

import numpy as np

from psuite.model.experiment import Experiment, Location, Metric, Region, Topology


def experiment() -> Experiment:
    exp = Experiment(attributes={"source": "topology.py"})
    exp.add_metric(Metric("work", "Work", "occ", "UINT64"))
    exp.add_metric(Metric("time", "Time", "sec", "DOUBLE"))
    exp.add_metric(Metric("work_per_second", "Work per second", "occ", "DOUBLE", "POSTDERIVED",
                          expression="metric::work() / metric::time()"))
    root = exp.add_cnode(exp.add_region(Region("main")), None)
    exp.add_cnode(exp.add_region(Region("solve", "solve.c", 10, 40)), root)
    exp.locations = [Location("machine", "node0", f"MPI Rank {r}", r, f"thread {t}", t)
                     for r in range(2) for t in range(2)]
    exp.values["work"] = np.array([[1, 2, 3, 4], [10, 20, 30, 40]], dtype=np.int64)
    exp.values["time"] = np.array([[0.5, 0.25, 0.125, 1.0], [2.0, 4.0, 1.5, 3.0]])
    exp.topologies = [Topology("ranks x threads", [("rank", 2, True), ("thread", 2, False)],
                               {i: (i // 2, i % 2) for i in range(4)})]
    return exp


if __name__ == "__main__":
    from psuite.formats.exporters import cube

    cube.write(experiment(), sys.argv[1], force=True)
