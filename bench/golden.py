"""Speed of the golden model for one state, alone and in the closed loop: ``python -m linkdyn.bench.golden``.

A closed control loop (:mod:`linkdyn.host.experiments.loop`) calls the fixed-point golden model
once per control cycle for one state. This benchmark times, per call, on the experiments' arm
(the MuJoCo plant's robot, UR5 by default) and states inside its limits:

* ``rnea_fixed``: the numpy interpreter of the microprogram, the robot's constants encoded on
  every call;
* ``rnea_fixed(constants=...)``: the same with the constants encoded once;
* ``GoldenChain.step``: the compiled microprogram (:mod:`linkdyn.model.compiled`), equal word
  for word (tests/model/test_golden_fast.py);

one joint controller's control step (``feedback`` + ``output``) for one state, the numpy
interpreter :class:`~linkdyn.model.controller.JointControllerModel` and the compiled program
:class:`~linkdyn.model.controller_compiled.FastJointController` (equal word for word,
tests/model/test_controller_fast.py); and the whole loop of the ``point`` experiment (static
pose, medium gains, 1 kHz: the joint controllers, the golden model, the MuJoCo plant and the
log) per control cycle, with the interpreters in place of
:class:`~linkdyn.model.golden.GoldenChain` and of the compiled controller (as the loop was), with
the interpreted controller only, and as it is. Each figure is the best of ``--repeat`` runs (wall clock). Needs MuJoCo and
example-robot-data (extras ``sim``, ``reference``).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import numpy as np

from linkdyn.host.experiments.loop import GoldenController, run_closed_loop
from linkdyn.host.experiments.runs import POINT_GAINS, reference_pose
from linkdyn.model.accuracy import random_states
from linkdyn.model.controller import JointControllerModel
from linkdyn.model.controller_compiled import FastJointController
from linkdyn.model.fixedpoint import Q15_16
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


def controller_step_ms(robot, steps=300, repeat=3):
    """Return ``{name: best ms}`` of one joint controller step (feedback + output), one state."""
    controller = GoldenController(robot, POINT_GAINS["medium"])
    words = controller.configs[1].encode()
    q, qd, qdd = random_states(robot, steps)
    inputs = [[int(w) for w in Q15_16.encode(np.array([q[k, 1], qd[k, 1], q[k, 1], 0.0,
                                                       qdd[k, 1]]))] for k in range(steps)]
    best = {}
    for name, cls in (("JointControllerModel", JointControllerModel),
                      ("FastJointController", FastJointController)):
        times = []
        for _ in range(repeat):
            joint = cls(words)
            start = time.perf_counter()
            for k in range(steps):
                joint.strobe(reference=True, message=True)
                joint.feedback(*inputs[k])
                joint.output(inputs[k][4])
            times.append((time.perf_counter() - start) / steps)
        best[name] = min(times) * 1e3
    return best


def loop_cycle_ms(robot_name="ur5", cycles=500, repeat=2, interpreter=False,
                  controller_interpreter=False):
    """Return the best wall-clock ms per control cycle of the point experiment's loop."""
    best = float("inf")
    for _ in range(repeat):
        plant = Plant.from_reference(robot_name)
        q0 = reference_pose(plant)
        plant.reset(q0)
        controller = GoldenController(plant.robot, POINT_GAINS["medium"])
        if interpreter:
            controller.chain = _Interpreter(plant.robot)
        if controller_interpreter:
            controller.joints = [JointControllerModel(config.encode())
                                 for config in controller.configs]
        zero = q0 * 0.0
        log = run_closed_loop(plant, controller, lambda t: (q0, zero, zero), cycles)
        best = min(best, log.seconds_per_cycle * 1e3)
    return best


def section(robot_name, calls, joints, loops, cycles):
    """Return the ``## Golden model, one state`` section of docs/performance.md."""
    lines = ["## Golden model, one state", "",
             f"`python -m linkdyn.bench.golden`: the fixed-point golden model called for one "
             f"state, as the closed loop calls it once per 1 ms control cycle ({robot_name}, "
             f"states inside the limits; best of repeated runs, wall clock).", "",
             "| path | ms per call |", "|---|---:|"]
    for name, ms in calls.items():
        lines.append(f"| `{name}` | {ms:.3f} |")
    lines += ["", "One joint controller's control step (`feedback` + `output`), one state:", "",
              "| controller | ms per step |", "|---|---:|"]
    for name, ms in joints.items():
        lines.append(f"| `{name}` | {ms:.4f} |")
    lines += ["", "Whole loop of the `point` experiment per control cycle (joint controllers, "
              f"golden model, MuJoCo plant, log; {cycles} cycles):", "",
              "| golden models in the loop (dynamics, controllers) | ms per cycle | "
              "real-time factor |",
              "|---|---:|---:|"]
    for name, ms in loops.items():
        lines.append(f"| {name} | {ms:.2f} | {1.0 / ms:.2f} |")
    lines += ["", "`GoldenChain` encodes the robot's constants once and runs the microprogram "
              "compiled into Python functions over integers (`linkdyn.model.compiled`); it "
              "equals `rnea_fixed` word for word (tests/model/test_golden_fast.py). About half "
              "of its time is the CORDIC (`CORDIC.atan`, numpy, 24 iterations), called once per "
              "update for all nodes. `FastJointController` runs the controller program compiled the same "
              "way (`linkdyn.model.controller_compiled`), equal to `JointControllerModel` word "
              "for word (tests/model/test_controller_fast.py).", "",
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
    joints = controller_step_ms(robot, repeat=args.repeat)
    print("joint controller, one step (feedback + output): ms")
    for name, ms in joints.items():
        print(f"  {name:<28} {ms:8.4f}")
    loops = {}
    for name, interpreter, controller_interpreter in (
            ("`rnea_fixed`, `JointControllerModel` (before)", True, True),
            ("`GoldenChain`, `JointControllerModel`", False, True),
            ("`GoldenChain`, `FastJointController`", False, False)):
        loops[name] = loop_cycle_ms(args.robot, args.cycles, args.repeat, interpreter,
                                    controller_interpreter)
    print(f"point experiment loop ({args.cycles} cycles): ms per cycle, real-time factor")
    for name, ms in loops.items():
        print(f"  {name:<48} {ms:8.2f}  {1.0 / ms:6.2f}")
    if args.write_docs:
        replace_section(args.write_docs, section(args.robot, calls, joints, loops, args.cycles))
        print(f"wrote {args.write_docs}")
    return 0


if __name__ == "__main__":
    main()
