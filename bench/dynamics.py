"""Speed of the float model against Pinocchio: ``python -m linkdyn.bench.dynamics``.

Times, per joint state, the batched :func:`~linkdyn.model.rnea` and
:func:`~linkdyn.model.regressor` (one call on all states) next to Pinocchio's ``pinocchio.rnea``
and ``pinocchio.computeJointTorqueRegressor`` called once per state in a Python loop, on the same
random states of the same robots, in the same run:

* UR5: ``ur_description/urdf/ur5_robot.urdf`` of example-robot-data (6 joints);
* Panda: ``panda_description/urdf/panda.urdf`` of example-robot-data up to ``panda_hand``
  (7 joints; Pinocchio's model has the two finger joints locked at zero, as
  :func:`linkdyn.model.urdf.load_urdf` merges them).

Both sides load the same URDF and use Pinocchio's gravity (0, 0, -9.81) m/s^2; the torques are
compared before timing, so both compute the same thing. Each time is the best of ``--repeat``
runs; the runs of linkdyn and of Pinocchio alternate, so that on a shared machine both see the
same load. ``--clock cpu`` times the process's CPU time instead of the wall clock (less
sensitive to other jobs taking the cores). Figures for the record go to ``docs/performance.md``
(``--markdown`` prints the table).

Needs the optional ``reference`` dependencies (``pin``, ``example-robot-data``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

from linkdyn.model.reference import example_robot_data_dir
from linkdyn.model.rnea import regressor, rnea

__all__ = ["benchmark", "main"]

#: Gravity used by Pinocchio's models, m/s^2.
PINOCCHIO_GRAVITY = (0.0, 0.0, -9.81)

ROBOTS = {
    # name: (URDF path under the example-robot-data robots folder, tip link, locked joints)
    "UR5": ("ur_description/urdf/ur5_robot.urdf", None, ()),
    "Panda": ("panda_description/urdf/panda.urdf", "panda_hand",
              ("panda_finger_joint1", "panda_finger_joint2")),
}


#: Clocks of ``--clock``.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _best_alternating(functions, repeat, clock=time.perf_counter):
    """Best time of each function over ``repeat`` rounds, the functions run in turn."""
    best = [float("inf")] * len(functions)
    for _ in range(repeat):
        for k, function in enumerate(functions):
            start = clock()
            function()
            best[k] = min(best[k], clock() - start)
    return best


def _pinocchio_model(pinocchio, path, locked):
    model = pinocchio.buildModelFromUrdf(str(path))
    if locked:
        ids = [model.getJointId(name) for name in locked]
        model = pinocchio.buildReducedModel(model, ids, pinocchio.neutral(model))
    model.gravity.linear = np.array(PINOCCHIO_GRAVITY)
    return model


def _states(robot, count, rng):
    low, high = robot.q_limits()
    q = rng.uniform(low, high, (count, robot.n))
    qd = rng.uniform(-2.0, 2.0, (count, robot.n))
    qdd = rng.uniform(-5.0, 5.0, (count, robot.n))
    return q, qd, qdd


def benchmark(count=10_000, repeat=3, seed=0, clock="wall"):
    """Time the float model and Pinocchio on the UR5 and the Panda.

    Parameters
    ----------
    count : int
        Number of random joint states per robot.
    repeat : int
        Runs per measurement; the best is kept. linkdyn's and Pinocchio's runs alternate.
    seed : int
        Seed of the random states.
    clock : {"wall", "cpu"}
        ``time.perf_counter`` or ``time.process_time``.

    Returns
    -------
    list of dict
        One entry per robot and function: ``robot``, ``n``, ``function`` (``"rnea"`` or
        ``"regressor"``), ``ours`` and ``pinocchio`` (s per state), and ``tau_error`` (largest
        absolute torque difference to Pinocchio on the states, N·m, for ``"rnea"``; the
        largest ``|Y pi - tau|`` of our regressor for ``"regressor"``).

    Raises
    ------
    ImportError
        If Pinocchio is not installed.
    FileNotFoundError
        If example-robot-data is not installed.
    ValueError
        If ``clock`` is not one of :data:`CLOCKS`.
    """
    import pinocchio

    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, not {clock!r}")
    timer = CLOCKS[clock]

    from linkdyn.model.urdf import load_urdf

    robots_dir = example_robot_data_dir()
    rng = np.random.default_rng(seed)
    rows = []
    for name, (relative, tip, locked) in ROBOTS.items():
        path = robots_dir / relative
        robot = load_urdf(path, tip=tip, gravity=PINOCCHIO_GRAVITY)
        model = _pinocchio_model(pinocchio, path, locked)
        data = model.createData()
        if model.nv != robot.n:
            raise RuntimeError(f"{name}: Pinocchio has {model.nv} joints, linkdyn {robot.n}")
        q, qd, qdd = _states(robot, count, rng)

        tau = rnea(robot, q, qd, qdd)
        tau_pin = np.array([pinocchio.rnea(model, data, q[k], qd[k], qdd[k])
                            for k in range(min(count, 200))])
        tau_error = float(np.max(np.abs(tau[:len(tau_pin)] - tau_pin)))
        y = regressor(robot, q[:200], qd[:200], qdd[:200])
        y_error = float(np.max(np.abs(y @ robot.parameters() - tau[:200])))

        def pin_rnea():
            for k in range(count):
                pinocchio.rnea(model, data, q[k], qd[k], qdd[k])

        def pin_regressor():
            for k in range(count):
                pinocchio.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])

        rows += timed_rows(name, robot, (q, qd, qdd), (pin_rnea, pin_regressor),
                           (tau_error, y_error), repeat, timer)
    return rows


def timed_rows(name, robot, states, pinocchio_loops, errors, repeat, timer):
    """Time linkdyn's batched rnea and regressor against Pinocchio's loops, alternating.

    Parameters
    ----------
    name : str
        Robot name of the rows.
    robot : Robot
    states : (q, qd, qdd)
        Arrays of shape (count, n).
    pinocchio_loops : (callable, callable)
        Pinocchio's rnea and regressor over the same states, one call per state.
    errors : (float, float)
        The check figures of the two rows (``tau_error``).
    repeat : int
        Runs per figure (best kept).
    timer : callable
        The clock (:data:`CLOCKS`).

    Returns
    -------
    list of dict
        The ``rnea`` and ``regressor`` rows: seconds per state of each library.
    """
    q, qd, qdd = states
    count = len(q)
    rows = []
    for function, ours, loop, error in zip(("rnea", "regressor"), (rnea, regressor),
                                           pinocchio_loops, errors):
        ours_time, pin_time = _best_alternating((lambda: ours(robot, q, qd, qdd), loop),
                                                repeat, timer)
        rows.append(dict(robot=name, n=robot.n, function=function, ours=ours_time / count,
                         pinocchio=pin_time / count, tau_error=error))
    return rows


def environment():
    """Return a one-line description of the machine and the library versions."""
    import pinocchio
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {np.__version__}, pinocchio {pinocchio.__version__}")


def format_table(rows, count, markdown=False, clock="wall"):
    """Return the results as a text table (or a Markdown table); ``clock`` as timed."""
    header = ("robot", "n", "function", "linkdyn batched [us/state]",
              "Pinocchio loop [us/state]", "ratio", "check [N m]")
    lines = []
    body = [(r["robot"], str(r["n"]), r["function"], f"{r['ours'] * 1e6:.2f}",
             f"{r['pinocchio'] * 1e6:.2f}", f"{r['ours'] / r['pinocchio']:.1f}",
             f"{r['tau_error']:.1e}") for r in rows]
    if markdown:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" if i < 3 else "---:" for i in range(len(header))) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in body]
    else:
        widths = [max(len(header[i]), *(len(row[i]) for row in body)) for i in range(len(header))]
        lines.append("  ".join(h.ljust(w) if i < 3 else h.rjust(w)
                               for i, (h, w) in enumerate(zip(header, widths))))
        lines += ["  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                            for i, (c, w) in enumerate(zip(row, widths))) for row in body]
    lines.append("")
    lines.append(f"{count} random states per robot; linkdyn: one call on all states; Pinocchio: "
                 f"one call per state in a Python loop; {clock} clock, runs alternating. "
                 f"ratio = linkdyn / Pinocchio. check: "
                 f"max |tau - tau_Pinocchio| (rnea), max |Y pi - tau| (regressor).")
    return "\n".join(lines)


def timing_main(argv, *, prog, description, states, benchmark, extra=None):
    """The command line of a timing benchmark against Pinocchio (this one, ``trees``).

    Parameters
    ----------
    argv : list of str or None
        The arguments.
    prog, description : str
        The program name and its one-line description.
    states : int
        Default random states per robot.
    benchmark : callable
        ``benchmark(count, repeat, seed, clock) -> rows`` (see :func:`benchmark`).
    extra : (callable, callable), optional
        ``(add_arguments(parser), after(rows, args))``: more options and what to do with them.

    Returns
    -------
    int
        The exit status: 0, or 2 without Pinocchio or example-robot-data.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--states", type=int, default=states, help="random states per robot")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random states")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall clock (default) or the process's CPU time")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    if extra is not None:
        extra[0](parser)
    args = parser.parse_args(argv)
    if args.states < 1 or args.repeat < 1:
        parser.error("--states and --repeat must be positive")
    try:
        rows = benchmark(args.states, args.repeat, args.seed, args.clock)
    except (ImportError, FileNotFoundError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    print(environment())
    print(format_table(rows, args.states, markdown=args.markdown, clock=args.clock))
    if extra is not None:
        extra[1](rows, args)
    return 0


def main(argv=None):
    """Run the benchmark and print the table; return the exit status."""
    return timing_main(argv, prog="python -m linkdyn.bench.dynamics",
                       description="Time linkdyn's batched rnea/regressor against Pinocchio "
                                   "in a loop.", states=10_000, benchmark=benchmark)


if __name__ == "__main__":
    sys.exit(main())
