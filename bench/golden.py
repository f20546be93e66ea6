"""Speed of the golden model for one state, alone and in the closed loop: ``python -m linkdyn.bench.golden``.

A closed control loop (:mod:`linkdyn.host.experiments.loop`) calls the fixed-point golden model
once per control cycle for one state. This benchmark times, per call, on the experiments' arm
(the MuJoCo plant's robot, UR5 by default) and states inside its limits:

* ``rnea_fixed``: the numpy interpreter of the microprogram, the robot's constants encoded on
  every call;
* ``rnea_fixed(constants=...)``: the same with the constants encoded once;
* ``GoldenChain.step``: the compiled microprogram (:mod:`linkdyn.model.compiled`), equal word
  for word (tests/model/test_golden_fast.py);

and the whole loop of the ``point`` experiment (static pose, medium gains, 1 kHz: the joint
controllers, the golden model, the MuJoCo plant and the log) per control cycle, once with the
interpreter in place of :class:`~linkdyn.model.golden.GoldenChain` (as the loop was) and once
as it is. Each figure is the best of ``--repeat`` runs (wall clock). Needs MuJoCo and
example-robot-data (extras ``sim``, ``reference``).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

from linkdyn.host.experiments.loop import GoldenController, run_closed_loop
from linkdyn.host.experiments.runs import POINT_GAINS, reference_pose
from linkdyn.model.accuracy import random_states
from linkdyn.model.golden import GoldenChain, encode_robot, rnea_fixed
from linkdyn.sim.plant import Plant

from .report import replace_section


class _Interpreter:
    """The numpy interpreter behind the GoldenChain interface (the loop before GoldenChain)."""

    def __init__(self, robot):
        self.robot = robot

    def step(self, q, qd, qdd, f_ext=None):
        return rnea_fixed(self.robot, q, qd, qdd, f_ext=f_ext)


def golden_call_ms(robot, states=300, repeat=3):
    """Return ``{name: best ms per call}`` of the three one-state golden paths."""
    q, qd, qdd = random_states(robot, states)
    constants = encode_robot(robot)
    chain = GoldenChain(robot)
    paths = {
        "rnea_fixed": lambda k: rnea_fixed(robot, q[k], qd[k], qdd[k]),
        "rnea_fixed(constants=...)": lambda k: rnea_fixed(robot, q[k], qd[k], qdd[k],
                                                          constants=constants),
        "GoldenChain.step": lambda k: chain.step(q[k], qd[k], qdd[k]),
    }
    best = {}
    for name, call in paths.items():
        count = states if name == "GoldenChain.step" else states // 5
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for k in range(count):
                call(k)
            times.append((time.perf_counter() - start) / count)
        best[name] = min(times) * 1e3
    return best


def loop_cycle_ms(robot_name="ur5", cycles=500, repeat=2, interpreter=False):
    """Return the best wall-clock ms per control cycle of the point experiment's loop."""
    best = float("inf")
    for _ in range(repeat):
        plant = Plant.from_reference(robot_name)
        q0 = reference_pose(plant)
        plant.reset(q0)
        controller = GoldenController(plant.robot, POINT_GAINS["medium"])
        if interpreter:
            controller.chain = _Interpreter(plant.robot)
        zero = q0 * 0.0
        log = run_closed_loop(plant, controller, lambda t: (q0, zero, zero), cycles)
        best = min(best, log.seconds_per_cycle * 1e3)
    return best


def section(robot_name, calls, loops, cycles):
    """Return the ``## Golden model, one state`` section of docs/performance.md."""
    lines = ["## Golden model, one state", "",
             f"`python -m linkdyn.bench.golden`: the fixed-point golden model called for one "
             f"state, as the closed loop calls it once per 1 ms control cycle ({robot_name}, "
             f"states inside the limits; best of repeated runs, wall clock).", "",
             "| path | ms per call |", "|---|---:|"]
    for name, ms in calls.items():
        lines.append(f"| `{name}` | {ms:.3f} |")
    lines += ["", "Whole loop of the `point` experiment per control cycle (joint controllers, "
              f"golden model, MuJoCo plant, log; {cycles} cycles):", "",
              "| golden model in the loop | ms per cycle | real-time factor |",
              "|---|---:|---:|"]
    for name, ms in loops.items():
        lines.append(f"| {name} | {ms:.2f} | {1.0 / ms:.2f} |")
    lines += ["", "`GoldenChain` encodes the robot's constants once and runs the microprogram "
              "compiled into Python functions over integers (`linkdyn.model.compiled`); it "
              "equals `rnea_fixed` word for word (tests/model/test_golden_fast.py). About half "
              "of its time is the CORDIC (`CORDIC.atan`, numpy, 24 iterations), called once per "
              "update for all nodes.", "",
              f"Machine: {platform.machine()}, shared with other jobs, python "
              f"{platform.python_version()}; {datetime.date.today().isoformat()}."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="ur5", help="reference arm (default ur5)")
    parser.add_argument("--cycles", type=int, default=500, help="control cycles per loop run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Golden model, one state' section of this file")
    args = parser.parse_args(argv)
    robot = Plant.from_reference(args.robot).robot
    calls = golden_call_ms(robot, repeat=args.repeat)
    print(f"golden model, one state ({args.robot}): ms per call")
    for name, ms in calls.items():
        print(f"  {name:<28} {ms:8.3f}")
    loops = {}
    for name, interpreter in (("`rnea_fixed` (before)", True), ("`GoldenChain`", False)):
        loops[name] = loop_cycle_ms(args.robot, args.cycles, args.repeat, interpreter)
    print(f"point experiment loop ({args.cycles} cycles): ms per cycle, real-time factor")
    for name, ms in loops.items():
        print(f"  {name:<28} {ms:8.2f}  {1.0 / ms:6.2f}")
    if args.write_docs:
        replace_section(args.write_docs, section(args.robot, calls, loops, args.cycles))
        print(f"wrote {args.write_docs}")
    return 0


if __name__ == "__main__":
    main()
