"""Speed of the MuJoCo plant: ``python -m linkdyn.bench.plant``.

Times :meth:`linkdyn.sim.plant.Plant.step` plus :meth:`~linkdyn.sim.plant.Plant.measure`
(what a control loop calls once per period) for a reference arm at a control period of 1 ms, for
several substep counts, in two cases:

* ``hold``: the arm holds a pose against gravity (constant torque from linkdyn's ``rnea``);
* ``swing``: zero torque, the arm falls and swings through its range for the whole run;
* ``contact``: the tool pressed onto the plate with 20 N (one active contact).

Prints control periods per second of wall time and the real-time factor (simulated time /
wall time; >= 1 means the plant alone keeps up with a 1 kHz controller). Each figure is the best
of ``--repeat`` runs. ``--clock cpu`` times the process's CPU time instead of the wall clock (less
sensitive to other jobs on a shared machine). Needs example-robot-data (extra ``reference``).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from linkdyn.model import rnea
from linkdyn.model.kinematics import jacobian
from linkdyn.sim.plant import Plant

# A pose with the UR5's flange (tip link y axis) pointing down; other arms use their zero pose.
_POSES = {"ur5": np.array([0.3, -1.9, 1.9, -1.5, -1.5, 0.0])}
_TOOL_OFFSETS = {"ur5": (0.0, 0.2, 0.0)}


def _case(robot_name, substeps, case, integrator):
    plant = Plant.from_reference(robot_name, substeps=substeps, integrator=integrator,
                                 tool_offset=_TOOL_OFFSETS.get(robot_name, (0.0, 0.0, 0.1)))
    q = _POSES.get(robot_name, plant.default_configuration())
    plant.reset(q)
    force = np.zeros(3)
    if case == "contact":
        plant = plant.with_plate_at_tool([0.0, 0.0, -1.0])
        force = np.array([0.0, 0.0, -20.0])
    zero = np.zeros(plant.n)
    tau = rnea(plant.robot, q, zero, zero) + jacobian(plant.robot, q)[:3].T @ force
    return plant, zero if case == "swing" else tau


CASES = ("hold", "swing", "contact")


_CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def measure(robot_name="ur5", substeps=2, case="hold", periods=2000, repeat=3, clock="wall",
            integrator="implicitfast"):
    """Return the best control periods per second of ``periods`` steps, and the plant.

    ``clock`` is ``"wall"`` (``time.perf_counter``) or ``"cpu"`` (``time.process_time``).
    """
    if clock not in _CLOCKS:
        raise ValueError(f"clock must be one of {tuple(_CLOCKS)}, not {clock!r}")
    timer = _CLOCKS[clock]
    if case not in CASES:
        raise ValueError(f"case must be one of {CASES}, not {case!r}")
    plant, tau = _case(robot_name, substeps, case, integrator)
    start_q = plant.state.q
    best = 0.0
    for _ in range(repeat):
        plant.reset(start_q)
        start = timer()
        for _ in range(periods):
            plant.step(tau)
            plant.measure()
        best = max(best, periods / (timer() - start))
    return best, plant


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="ur5", help="reference arm (default ur5)")
    parser.add_argument("--substeps", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--periods", type=int, default=2000, help="control periods per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    parser.add_argument("--clock", choices=tuple(_CLOCKS), default="wall")
    parser.add_argument("--integrator", default="implicitfast",
                        help="MuJoCo integrator (implicitfast, implicit, euler, rk4)")
    args = parser.parse_args(argv)
    import mujoco

    print(f"plant speed: {args.robot}, control period 1 ms, {args.integrator}, {args.clock} "
          f"clock, mujoco "
          f"{mujoco.__version__}, python {platform.python_version()}, {platform.machine()}")
    print(f"{'case':<8} {'substeps':>8} {'timestep':>10} {'periods/s':>10} {'real time':>10}")
    for case in CASES:
        for substeps in args.substeps:
            rate, plant = measure(args.robot, substeps, case, args.periods, args.repeat,
                                  args.clock, args.integrator)
            print(f"{case:<8} {substeps:>8} "
                  f"{plant.timestep * 1e3:>8.3f}ms {rate:>10,.0f} {rate / 1000:>9.1f}x")


if __name__ == "__main__":
    main()
