"""Speed of the float model on kinematic trees against Pinocchio: ``python -m linkdyn.bench.trees``.

Like :mod:`linkdyn.bench.dynamics` (same timing rules, same table), on whole trees of
example-robot-data loaded without a tip (docs/trees.md):

* Baxter: ``baxter_description/urdf/baxter.urdf`` (19 joints: head, two arms, four prismatic
  gripper fingers);
* Talos: ``talos_data/robots/talos_reduced.urdf`` (32 joints, the floating base fixed);
* TIAGo: ``tiago_description/robots/tiago.urdf`` (48 joints: wheels, prismatic torso, head, arm,
  five-finger hand).

Pinocchio's joints are matched to linkdyn's nodes by name (:attr:`linkdyn.model.Robot.joint_names`);
continuous joints get their ``(cos, sin)`` configuration. Both sides use gravity (0, 0, -9.81).

Needs the optional ``reference`` dependencies (``pin``, ``example-robot-data``).
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from linkdyn.bench.dynamics import CLOCKS, PINOCCHIO_GRAVITY, timed_rows, timing_main
from linkdyn.model.reference import example_robot_data_dir
from linkdyn.model.rnea import regressor, rnea

__all__ = ["TREES", "benchmark", "plot", "main"]

#: name: URDF path under the example-robot-data robots folder.
TREES = {
    "Baxter": "baxter_description/urdf/baxter.urdf",
    "Talos": "talos_data/robots/talos_reduced.urdf",
    "TIAGo": "tiago_description/robots/tiago.urdf",
}


def _pinocchio_arguments(model, robot, q, qd, qdd):
    """Pinocchio's (q, v, a) of every state, joints matched by name."""
    ids = [model.getJointId(name) for name in robot.joint_names]
    joints = [model.joints[j] for j in ids]
    states = []
    for k in range(len(q)):
        q_pin, v, a = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        for i, joint in enumerate(joints):
            if joint.nq == 2:
                q_pin[joint.idx_q:joint.idx_q + 2] = math.cos(q[k, i]), math.sin(q[k, i])
            else:
                q_pin[joint.idx_q] = q[k, i]
            v[joint.idx_v], a[joint.idx_v] = qd[k, i], qdd[k, i]
        states.append((q_pin, v, a))
    return states, [joint.idx_v for joint in joints]


def benchmark(count=10_000, repeat=3, seed=0, clock="wall"):
    """Time the float model and Pinocchio on the trees of :data:`TREES`.

    Parameters and result as :func:`linkdyn.bench.dynamics.benchmark` (``tau_error``: largest
    absolute difference to Pinocchio's torques, N·m or N, for ``"rnea"``; largest
    ``|Y pi - tau|`` for ``"regressor"``).

    Raises
    ------
    ImportError
        If Pinocchio is not installed.
    FileNotFoundError
        If example-robot-data is not installed.
    ValueError
        If ``clock`` is not one of :data:`~linkdyn.bench.dynamics.CLOCKS`.
    """
    import pinocchio

    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, not {clock!r}")
    timer = CLOCKS[clock]

    from linkdyn.model.urdf import load_urdf

    robots_dir = example_robot_data_dir()
    rng = np.random.default_rng(seed)
    rows = []
    for name, relative in TREES.items():
        path = robots_dir / relative
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*<mimic> tag")
            robot = load_urdf(path, gravity=PINOCCHIO_GRAVITY)
        model = pinocchio.buildModelFromUrdf(str(path))
        model.gravity.linear = np.array(PINOCCHIO_GRAVITY)
        data = model.createData()
        if model.nv != robot.n:
            raise RuntimeError(f"{name}: Pinocchio has {model.nv} joints, linkdyn {robot.n}")
        low, high = robot.q_limits()
        q = rng.uniform(np.maximum(low, -math.pi), np.minimum(high, math.pi), (count, robot.n))
        qd = rng.uniform(-2.0, 2.0, (count, robot.n))
        qdd = rng.uniform(-5.0, 5.0, (count, robot.n))
        states, idx_v = _pinocchio_arguments(model, robot, q, qd, qdd)

        tau = rnea(robot, q, qd, qdd)
        tau_pin = np.array([np.asarray(pinocchio.rnea(model, data, *states[k]))[idx_v]
                            for k in range(min(count, 200))])
        tau_error = float(np.max(np.abs(tau[:len(tau_pin)] - tau_pin)))
        y = regressor(robot, q[:200], qd[:200], qdd[:200])
        y_error = float(np.max(np.abs(y @ robot.parameters() - tau[:200])))

        def pin_rnea():
            for state in states:
                pinocchio.rnea(model, data, *state)

        def pin_regressor():
            for state in states:
                pinocchio.computeJointTorqueRegressor(model, data, *state)

        rows += timed_rows(name, robot, (q, qd, qdd), (pin_rnea, pin_regressor),
                           (tau_error, y_error), repeat, timer)
    return rows


def plot(rows, path):
    """Write a bar chart of the timings (PNG): per tree, rnea and regressor, both libraries.

    Parameters
    ----------
    rows : list of dict
        The result of :func:`benchmark`.
    path : str or os.PathLike
        PNG file to write.
    """
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    robots = list(dict.fromkeys(row["robot"] for row in rows))
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    for axis, function in zip(axes, ("rnea", "regressor")):
        picked = {row["robot"]: row for row in rows if row["function"] == function}
        x = np.arange(len(robots))
        for offset, key, label in ((-0.2, "ours", "linkdyn, batched"),
                                   (0.2, "pinocchio", "Pinocchio, loop")):
            values = [picked[name][key] * 1e6 for name in robots]
            bars = axis.bar(x + offset, values, width=0.4, label=label)
            axis.bar_label(bars, fmt="%.1f", fontsize=8)
        axis.set_xticks(x, [f"{name}\n(n = {picked[name]['n']})" for name in robots])
        axis.set_ylabel("time per state [us]")
        axis.set_title(f"{function} on whole trees")
        axis.legend(fontsize=8)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv=None):
    """Run the benchmark and print the table; return the exit status."""
    def add_arguments(parser):
        parser.add_argument("--plot", metavar="PNG", help="also write a bar chart of the timings")

    def after(rows, args):
        if args.plot:
            plot(rows, args.plot)

    return timing_main(argv, prog="python -m linkdyn.bench.trees",
                       description="Time linkdyn's batched rnea/regressor on whole trees "
                                   "against Pinocchio.", states=2_000, benchmark=benchmark,
                       extra=(add_arguments, after))


if __name__ == "__main__":
    sys.exit(main())
