"""Regenerate the figures and numbers of ``docs/trajectories.md``.

::

    python -m linkdyn.host.trajectory.report --out docs

writes the PNGs into ``OUT/img/`` and every number quoted in the document into
``OUT/img/trajectories.json``, and prints the tables as Markdown. Robot: the built-in UR10
(seed 001's choice) and, for friction, the built-in Puma 560. Takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from linkdyn.model import load_robot

from . import conditioning as C
from . import plots
from .export import _jsonable, write_csv
from .ik import track, well_conditioned_configuration
from .jerk import jerk_limited
from .joint_path import JointPath
from linkdyn.model.kinematics import jacobian, tool_pose
from .paths import figure_eight, waypoints
from .timing import Limits, sample, time_optimal, time_optimal_lp
from .verify import check_trajectory

__all__ = ["main"]

MARGIN = 0.98


def _seed_001(robot, img, numbers):
    q = C.random_configurations(robot, 10000, seed=1)
    gammas = np.logspace(0, 3, 13)
    alphas = np.logspace(-3, 0, 13)
    sweep = C.condition_sweep(robot, q, gammas, alphas)
    plots.plot_condition_sweep(img / "seed001_fig7_condition.png", sweep)
    numbers["condition"] = {"samples": sweep.samples, "gamma": gammas, "fd_median": sweep.fd,
                            "alpha": alphas, "dls_median": sweep.dls, "jt_median": sweep.jt}
    singular = C.singular_sweep(robot, *C.UR10_SWEEP, steps=2000)
    plots.plot_singular_sweep(img / "seed001_fig8_baselines.png", singular, ["J^-1", "J^T"],
                              title="J^-1 and J^T through singular configurations (Fig. 8)")
    plots.plot_singular_sweep(img / "seed001_fig9_10_mappings.png", singular,
                              title="All mappings through singular configurations (Figs. 9-10)")
    numbers["singular_sweep"] = {
        "steps": len(singular.q), "singular_steps": singular.singular_steps,
        "sigma_min_J_at_them": singular.jacobian_sigma_min[singular.singular_steps],
        "max_sigma_max": {k: float(np.max(v)) for k, v in singular.sigma_max.items()},
        "min_sigma_min": {k: float(np.min(v)) for k, v in singular.sigma_min.items()}}
    gammas = np.logspace(0, 4, 9)
    alphas = np.logspace(0, -4, 9)
    for label, sigma in (("exact", 0.0), ("near", 1e-3)):
        qs = C.singular_configurations(robot, 100, seed=2, sigma_min=sigma)
        relative = C.relative_singular_values(robot, qs, gammas, alphas)
        plots.plot_relative_singular_values(img / f"seed001_fig11_12_{label}.png", relative,
                                            sigma_min=sigma)
        numbers[f"relative_{label}"] = {
            "sigma_min_J": sigma, "samples": relative.samples, "gamma": gammas,
            "alpha": alphas, "fd_manipulability": relative.fd_manipulability,
            "dls_manipulability": relative.dls_manipulability,
            "fd_instability": relative.fd_instability,
            "dls_instability": relative.dls_instability}


def _tracking(robot, img, out, numbers):
    q0 = well_conditioned_configuration(robot)
    pose = tool_pose(robot, q0)
    path = figure_eight(pose[:3, 3], pose[:3, :3], size=0.3, period=4.0, rate=1000)
    rows = []
    keep = {}
    for method, parameter in (("fd", 1000.0), ("fd", 100.0), ("fd", 25.0), ("dls", 0.01),
                              ("dls", 0.1), ("jinv", None), ("jt", None)):
        kwargs = {"fd": {"gamma": parameter}, "dls": {"alpha": parameter}}.get(method, {})
        start = time.perf_counter()
        result = track(robot, path, method, q0=q0, **kwargs)
        elapsed = time.perf_counter() - start
        rows.append({"method": method, "parameter": parameter,
                     "position_error_m": result.max_position_error,
                     "orientation_error_rad": result.max_orientation_error,
                     "peak_qd_rad_s": float(np.max(np.abs(result.qd))),
                     "seconds": elapsed, "us_per_step": 1e6 * elapsed / len(path)})
        keep[(method, parameter)] = result
    numbers["eight"] = {"q0": q0, "size_m": 0.3, "period_s": 4.0, "rate_hz": 1000,
                        "duration_s": path.duration, "rows": rows}
    fd = keep[("fd", 1000.0)]
    plots.plot_cartesian(img / "eight_fd_path.png", fd.t, fd.reference.position, fd.position,
                         error=fd.position_error, title="UR10 figure-eight, IK 'fd' (gamma 1000)")
    csv = write_csv(out / "eight_fd.csv", fd.t, fd.q, fd.qd, fd.qdd)
    limits = Limits.from_robot(robot)
    plots.plot_joints(img / "eight_fd_joints.png", fd.t, fd.q, fd.qd, fd.qdd, limits=limits,
                      title="UR10 figure-eight joint trajectory (fd, gamma 1000, 1 kHz)")
    # Out of reach and back: the elbow singularity.
    shoulder = np.array([0.0, 0.0, robot.links[0].d])
    direction = pose[:3, 3] - shoulder
    direction[2] = 0.0
    direction /= np.linalg.norm(direction)
    line = waypoints([pose[:3, 3], shoulder + 1.7 * direction, pose[:3, 3]], [0.0, 2.0, 4.0],
                     [pose[:3, :3]] * 3, rate=1000)
    singular_rows = []
    for method, parameter in (("jinv", None), ("fd", 1000.0), ("fd", 100.0), ("dls", 0.01),
                              ("jt", None)):
        kwargs = {"fd": {"gamma": parameter}, "dls": {"alpha": parameter}}.get(method, {})
        result = track(robot, line, method, q0=q0, respect_limits=False, **kwargs)
        sigma = np.linalg.svd(jacobian(robot, result.q), compute_uv=False)[:, -1]
        singular_rows.append({
            "method": method, "parameter": parameter, "diverged": result.diverged,
            "samples": len(result.t), "peak_qd_rad_s": float(np.max(np.abs(result.qd))),
            "peak_qdd_rad_s2": float(np.max(np.abs(result.qdd))),
            "max_position_error_m": result.max_position_error,
            "final_position_error_m": float(result.position_error[-1]),
            "min_sigma_J": float(np.min(sigma))})
        if method == "fd" and parameter == 1000.0:
            plots.plot_cartesian(img / "out_of_reach_fd.png", result.t,
                                 result.reference.position, result.position,
                                 error=result.position_error,
                                 title="Out of reach and back, IK 'fd' (gamma 1000)")
    numbers["out_of_reach"] = singular_rows
    return csv, keep[("jinv", None)]


def _timing(robot, img, numbers, source):
    path = JointPath.from_samples(source.q, source.t)
    limits = Limits.from_robot(robot, acceleration=3.0)
    generator = limits.scaled(MARGIN)
    rows = []
    for grid in (500, 1000, 2000):
        entry = {"gridpoints": grid}
        for name, solve, kwargs in (
                ("toppra", time_optimal, {}),
                ("toppra_collocation", time_optimal, {"scheme": "collocation"}),
                ("lp_interpolation", time_optimal_lp, {"scheme": "interpolation"}),
                ("lp_collocation", time_optimal_lp, {})):
            start = time.perf_counter()
            law = solve(robot, path, generator, gridpoints=grid, **kwargs)
            entry[name] = law.duration
            entry[name + "_seconds"] = time.perf_counter() - start
        rows.append(entry)
    numbers["time_optimal_ur10"] = {"path_length_rad": path.length, "rows": rows,
                                    "limits": limits.as_dict(), "margin": MARGIN}
    optimal = time_optimal(robot, path, generator, gridpoints=1000)
    lp = time_optimal_lp(robot, path, generator, gridpoints=1000)
    trajectory = sample(path, optimal, 1000)
    report = check_trajectory(robot, trajectory.t, trajectory.q, velocity=limits.velocity,
                              acceleration=limits.acceleration, torque=limits.torque)
    numbers["time_optimal_check"] = report.as_dict()
    plots.plot_joints(img / "retime_toppra_joints.png", trajectory.t, trajectory.q,
                      trajectory.qd, trajectory.qdd, limits=limits,
                      title=f"UR10 eight path, time-optimal (toppra): {optimal.duration:.3f} s")
    jerks = [1e4, 1000.0, 300.0, 100.0, 30.0, 10.0]
    jerk_rows = []
    curves = {"time-optimal (toppra)": (optimal.s, optimal.sd),
              "time-optimal (LP, collocation)": (lp.s, lp.sd)}
    for jerk in jerks:
        bounded = Limits(limits.velocity, limits.acceleration, limits.torque, jerk)
        for step in (0.004, 0.002) if jerk in (1e4, 100.0) else (0.004,):
            start = time.perf_counter()
            law = jerk_limited(robot, path, bounded, step=step, margin=MARGIN)
            elapsed = time.perf_counter() - start
            trajectory = sample(path, law, 1000)
            check = check_trajectory(robot, trajectory.t, trajectory.q,
                                     velocity=limits.velocity,
                                     acceleration=limits.acceleration, torque=limits.torque,
                                     jerk=jerk)
            jerk_rows.append({"jerk_rad_s3": jerk, "step_s": step, "duration_s": law.duration,
                              "relative_to_optimal": law.duration / optimal.duration,
                              "tests": law.tests, "fallbacks": law.fallbacks,
                              "seconds": elapsed, "check": check.as_dict()})
            if step == 0.004 and jerk in (1e4, 100.0, 30.0):
                s, sd = law.evaluate(law.t)[:2]
                curves[f"jerk-limited, {jerk:g} rad/s³"] = (s, sd)
            if step == 0.004 and jerk == 30.0:
                jerk_fd = np.diff(trajectory.qdd, axis=0) * 1000
                plots.plot_joints(img / "retime_jerk30_joints.png", trajectory.t, trajectory.q,
                                  trajectory.qd, trajectory.qdd, limits=bounded,
                                  jerk=jerk_fd,
                                  title=f"UR10 eight path, jerk-limited 30 rad/s³: "
                                        f"{law.duration:.3f} s")
    numbers["jerk_limited_ur10"] = {"time_optimal_s": optimal.duration, "rows": jerk_rows}
    s_grid = optimal.s
    velocity_bound = np.min(limits.velocity / np.maximum(np.abs(path(s_grid, 1)), 1e-12),
                            axis=1)
    plots.plot_phase_plane(img / "retime_phase_plane.png", curves,
                           limit_curve=(s_grid, velocity_bound),
                           title="UR10 eight path: path speed of the time laws")
    four = [r for r in jerk_rows if r["step_s"] == 0.004]
    plots.plot_duration_vs_jerk(img / "retime_duration_vs_jerk.png",
                                [r["jerk_rad_s3"] for r in four],
                                [r["duration_s"] for r in four], optimal.duration)


def _puma(img, numbers):
    robot = load_robot("puma560")
    path = JointPath.from_waypoints([[0.0, 0.3, -2.5, 0.0, 0.4, 0.0],
                                     [0.6, 0.6, -2.0, 0.5, 0.2, 0.4],
                                     [1.2, 0.2, -2.4, 1.0, 0.7, 0.2],
                                     [1.5, 0.5, -2.9, 0.4, 0.3, -0.3]])
    limits = Limits.from_robot(robot, velocity=2.0, acceleration=[6, 6, 6, 12, 12, 12],
                               torque=[40, 60, 25, 3, 3, 2])
    generator = limits.scaled(MARGIN)
    rows = []
    for grid in (500, 1000, 2000):
        a = time_optimal(robot, path, generator, gridpoints=grid)
        b = time_optimal_lp(robot, path, generator, gridpoints=grid, scheme="interpolation")
        c = time_optimal_lp(robot, path, generator, gridpoints=grid)
        rows.append({"gridpoints": grid, "toppra": a.duration, "passes": a.iterations,
                     "lp_interpolation": b.duration, "lp_collocation": c.duration})
    frictionless = time_optimal(robot.without_friction(), path, generator, gridpoints=1000)
    optimal = time_optimal(robot, path, generator, gridpoints=1000)
    trajectory = sample(path, optimal, 1000)
    check = check_trajectory(robot, trajectory.t, trajectory.q, velocity=limits.velocity,
                             acceleration=limits.acceleration, torque=limits.torque)
    from linkdyn.model import rnea
    torque = rnea(robot, trajectory.q, trajectory.qd, trajectory.qdd)
    plots.plot_joints(img / "puma_toppra_joints.png", trajectory.t, trajectory.q,
                      trajectory.qd, trajectory.qdd, limits=limits, torque=torque,
                      title=f"Puma 560 with friction, time-optimal: {optimal.duration:.3f} s")
    numbers["puma"] = {"rows": rows, "frictionless_s": frictionless.duration,
                       "check": check.as_dict(), "limits": limits.as_dict()}


def main(argv=None):
    """Regenerate the figures (``OUT/img``) and numbers of docs/trajectories.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs", help="documentation folder (default docs)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    img = out / "img"
    img.mkdir(parents=True, exist_ok=True)
    work = Path("build") / "trajectories"
    robot = load_robot("ur10")
    numbers = {"machine": {"python": platform.python_version(), "cpus": __import__("os")
                           .cpu_count(), "processor": platform.processor() or platform.machine()}}
    start = time.perf_counter()
    _seed_001(robot, img, numbers)
    print(f"seed 001 figures: {time.perf_counter() - start:.1f} s", flush=True)
    csv, source = _tracking(robot, img, work, numbers)
    print(f"tracking: {time.perf_counter() - start:.1f} s", flush=True)
    _timing(robot, img, numbers, source)
    print(f"timing: {time.perf_counter() - start:.1f} s", flush=True)
    _puma(img, numbers)
    print(f"puma: {time.perf_counter() - start:.1f} s", flush=True)
    (img / "trajectories.json").write_text(json.dumps(_jsonable(numbers), indent=1) + "\n")
    print(json.dumps(_jsonable(numbers), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
