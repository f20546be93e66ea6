"""The two end-to-end jobs behind ``linkdyn trajectory``: track a figure-eight, retime a path.

Each job computes, writes ``FILE.csv`` (``t, q1..qn, qd1..qdn, qdd1..qddn`` at the given rate),
the summary ``FILE.json`` beside it and, unless disabled, the plots ``FILE_path.png`` (tool
path and tracking error) and ``FILE_joints.png`` (joint trajectories against their limits),
then checks the CSV it wrote with the independent checker (:mod:`~linkdyn.host.trajectory.verify`)
and records the result in the summary.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from linkdyn.model import rnea

from . import export, plots
from .ik import IKError, METHODS, solve_pose, track, well_conditioned_configuration
from .jerk import jerk_limited
from .joint_path import JointPath
from linkdyn.model.kinematics import link_frames, tool_pose
from .paths import figure_eight
from .timing import Limits, sample, time_optimal, time_optimal_lp
from .verify import check_trajectory

__all__ = ["run_figure_eight", "run_retime", "polyline_distance", "check_reachable"]


def _files(out):
    out = Path(out)
    return {"csv": out, "json": export.summary_path(out),
            "path_png": out.with_name(out.stem + "_path.png"),
            "joints_png": out.with_name(out.stem + "_joints.png")}


def _finite_list(values):
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, dtype=float)]


def polyline_distance(points, polyline):
    """Return the distance of every point to a polyline (m).

    Exact: every segment with an end vertex within ``d_0 + L`` of the point is examined, where
    ``d_0`` is the distance to the nearest vertex and ``L`` the longest segment (the nearest
    segment always has such a vertex), so self-crossing polylines with unevenly spaced vertices
    (the centre of a figure-eight) are handled.

    Parameters
    ----------
    points : array_like, shape (N, 3)
    polyline : array_like, shape (M, 3)
        Vertices in order, ``M >= 2``.

    Returns
    -------
    numpy.ndarray, shape (N,)
    """
    from scipy.spatial import cKDTree

    points = np.asarray(points, dtype=float)
    polyline = np.asarray(polyline, dtype=float)
    tree = cKDTree(polyline)
    nearest_distance = tree.query(points)[0]
    longest = float(np.max(np.linalg.norm(np.diff(polyline, axis=0), axis=1)))
    candidates = tree.query_ball_point(points, nearest_distance + longest + 1e-12)
    owner = np.repeat(np.arange(len(points)), [len(c) for c in candidates])
    vertex = np.concatenate([np.asarray(c, dtype=int) for c in candidates])
    best = nearest_distance.copy()
    for offset in (-1, 0):
        i = np.clip(vertex + offset, 0, len(polyline) - 2)
        a, b = polyline[i], polyline[i + 1]
        ab = b - a
        length2 = np.maximum(np.sum(ab * ab, axis=1), 1e-300)
        u = np.clip(np.sum((points[owner] - a) * ab, axis=1) / length2, 0.0, 1.0)
        distance = np.linalg.norm(points[owner] - (a + u[:, None] * ab), axis=1)
        np.minimum.at(best, owner, distance)
    return best


def check_reachable(robot, path, q_start, *, checkpoints=48):
    """Check that a Cartesian path stays in the workspace before tracking it.

    The inverse kinematics (:func:`~linkdyn.host.trajectory.ik.solve_pose`) is solved at
    ``checkpoints`` evenly spaced samples, each from the previous solution.

    Raises
    ------
    linkdyn.host.trajectory.ik.IKError
        Naming the first time at which the pose is out of reach.
    """
    poses = path.pose
    q = np.asarray(q_start, dtype=float)
    for k in np.linspace(0, len(path) - 1, checkpoints).round().astype(int):
        try:
            q = solve_pose(robot, poses[k], q, tolerance=1e-9)
        except IKError:
            raise IKError(f"the path leaves the workspace of robot {robot.name!r} at "
                          f"t = {path.t[k]:.3f} s (tool position {poses[k][:3, 3].round(4)} m)"
                          ) from None


def _tool_positions(robot, q):
    return (link_frames(robot, q)[:, -1] @ robot.tool)[:, :3, 3]


def run_figure_eight(robot, method="fd", *, out, gamma=1000.0, alpha=0.01, size=0.3,
                     period=4.0, cycles=1, rate=1000.0, centre=None, q0=None, qdd_max=None,
                     respect_limits=True, make_plots=True, progress=False):
    """Track a figure-eight with one IK mapping and write the trajectory files.

    The eight lies in the x-y plane of the tool frame at ``q0`` (default
    :func:`~linkdyn.host.trajectory.ik.well_conditioned_configuration`), centred on the tool
    position there (or ``centre``), and the tool keeps that orientation.

    Parameters
    ----------
    robot : Robot
        The robot.
    method : {"fd", "dls", "jinv", "jt"}
        IK mapping (:mod:`linkdyn.host.trajectory.ik`).
    out : str or os.PathLike
        Output CSV path.
    gamma, alpha : float
        Parameters of ``"fd"`` and ``"dls"``.
    size, period : float
        Width of the eight (m) and period of one eight (s).
    cycles : int
        Number of eights (plus one period of fade-in and fade-out).
    rate : float
        Control rate, Hz.
    centre : array_like, shape (3,), optional
        Centre of the eight, world frame, m.
    q0 : array_like, shape (n,), optional
        Start configuration.
    qdd_max : float or array_like, optional
        Joint acceleration limits, rad/s^2 (the robot may have none).
    respect_limits : bool
        Apply joint limits in the tracking loop.
    make_plots : bool
        Write the PNGs.
    progress : bool
        Show progress.

    Returns
    -------
    tuple
        ``(TrackingResult, summary dict)``.

    Raises
    ------
    ValueError
        On bad parameters (from the path or the mapping).
    linkdyn.host.trajectory.ik.IKError
        If a part of the eight is out of reach.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    q_start = well_conditioned_configuration(robot) if q0 is None else np.asarray(q0, float)
    pose = tool_pose(robot, q_start)
    # The eight starts at its centre with the tool orientation of q_start: with the default
    # centre, q_start is the exact start; otherwise the start is solved from it.
    q_initial = q_start if centre is None else None
    centre = pose[:3, 3] if centre is None else np.asarray(centre, dtype=float)
    path = figure_eight(centre, pose[:3, :3], size=size, period=period, cycles=cycles,
                        rate=rate)
    check_reachable(robot, path, q_start)
    result = track(robot, path, method, gamma=gamma, alpha=alpha, q0=q_initial,
                   q_guess=q_start, respect_limits=respect_limits, qdd_max=qdd_max,
                   progress=progress)
    files = _files(out)
    export.write_csv(files["csv"], result.t, result.q, result.qd, result.qdd)
    limits = Limits.from_robot(robot, acceleration=qdd_max)
    t, q, qd, qdd = export.read_csv(files["csv"], n=robot.n)
    report = check_trajectory(robot, t, q, velocity=limits.velocity,
                              acceleration=limits.acceleration, qd=qd, qdd=qdd)
    torque = rnea(robot, result.q, result.qd, result.qdd)
    with np.errstate(divide="ignore", invalid="ignore"):
        torque_ratio = float(np.nanmax(np.abs(torque) / limits.torque))
    summary = {
        "command": "trajectory eight",
        "robot": robot.name,
        "ik": method,
        "parameters": result.parameters,
        "path": {"shape": "figure-eight (Lissajous 1:2)", "centre_m": centre, "size_m": size,
                 "period_s": period, "cycles": cycles, "fade_s": period,
                 "orientation": pose[:3, :3]},
        "q0_rad": result.q[0],
        "rate_hz": rate,
        "samples": len(result.t),
        "duration_s": float(result.t[-1]),
        "max_cartesian_error_m": result.max_position_error,
        "max_orientation_error_rad": result.max_orientation_error,
        "diverged": result.diverged,
        "limits_used": {"position_rad": robot.q_limits(default=math.inf).tolist(),
                        "velocity_rad_s": _finite_list(limits.velocity),
                        "acceleration_rad_s2": _finite_list(limits.acceleration),
                        "enforced": bool(respect_limits)},
        "samples_limited": int(np.count_nonzero(result.limited)),
        "peak_torque_ratio_not_enforced": torque_ratio,
        "check": report.as_dict(),
        "files": {k: str(v) for k, v in files.items() if make_plots or "png" not in k},
    }
    export.write_summary(files["csv"], summary)
    if make_plots:
        plots.plot_cartesian(files["path_png"], result.t, result.reference.position,
                             result.position, error=result.position_error,
                             title=f"{robot.name}: figure-eight, IK '{method}'")
        plots.plot_joints(files["joints_png"], result.t, result.q, result.qd, result.qdd,
                          limits=limits, torque=torque, q_range=robot.q_limits(default=np.inf),
                          title=f"{robot.name}: figure-eight joint trajectory ({method})")
    return result, summary


def run_retime(robot, source, *, out, jerk_limit=None, qdd_max=None, rate=1000.0, margin=0.98,
               gridpoints=1000, step=0.004, make_plots=True, progress=False):
    """Retime the geometric path of a trajectory CSV and write the new trajectory files.

    Without a jerk limit the time law is toppra's time-optimal one; with it, the jerk-limited
    online method (:mod:`linkdyn.host.trajectory.jerk`). The independent linear program is
    always solved too (same grid and discretisation) and its duration recorded next to
    toppra's.

    Parameters
    ----------
    robot : Robot
        The robot (its velocity and torque limits, and acceleration limits if any, are used).
    source : str or os.PathLike
        Input CSV (``t, q.., qd.., qdd..``); only its ``q`` columns (the geometry) are used.
    out : str or os.PathLike
        Output CSV path.
    jerk_limit : float or array_like, optional
        Joint jerk limits, rad/s^3.
    qdd_max : float or array_like, optional
        Joint acceleration limits, rad/s^2 (override the robot's).
    rate : float
        Output sample rate, Hz.
    margin : float
        The generators use the limits times this factor; the check uses the limits themselves.
    gridpoints : int
        Grid segments of the time-optimal solvers.
    step : float
        Step of the jerk-limited method, s.
    make_plots, progress : bool
        Write the PNGs; show progress.

    Returns
    -------
    dict
        The summary (also written as JSON).
    """
    t_in, q_in, _, _ = export.read_csv(source, n=robot.n)
    path = JointPath.from_samples(q_in, t_in)
    limits = Limits.from_robot(robot, acceleration=qdd_max, jerk=jerk_limit)
    generator_limits = limits.scaled(margin)
    optimal = time_optimal(robot, path, generator_limits, gridpoints=gridpoints)
    lp = time_optimal_lp(robot, path, generator_limits, gridpoints=gridpoints,
                         scheme="interpolation")
    if jerk_limit is None:
        law, method = optimal, "time-optimal (toppra)"
        extra = {}
    else:
        law = jerk_limited(robot, path, generator_limits, step=step, progress=progress)
        method = "jerk-limited online (seed 002 ch. 2)"
        extra = {"jerk_step_s": step, "tests": law.tests, "fallbacks": law.fallbacks}
    trajectory = sample(path, law, rate)
    files = _files(out)
    export.write_csv(files["csv"], trajectory.t, trajectory.q, trajectory.qd, trajectory.qdd)
    t, q, qd, qdd = export.read_csv(files["csv"], n=robot.n)
    report = check_trajectory(robot, t, q, velocity=limits.velocity,
                              acceleration=limits.acceleration, torque=limits.torque,
                              jerk=limits.jerk if jerk_limit is not None else None,
                              qd=qd, qdd=qdd)
    reached = _tool_positions(robot, trajectory.q)
    deviation = polyline_distance(reached, _tool_positions(robot, q_in))
    summary = {
        "command": "trajectory retime",
        "robot": robot.name,
        "source": str(source),
        "method": method,
        "rate_hz": rate,
        "samples": len(trajectory.t),
        "duration_s": float(trajectory.t[-1]),
        "source_duration_s": float(t_in[-1] - t_in[0]),
        "time_optimal_duration_s": {"toppra": optimal.duration, "linear_program": lp.duration,
                                    "relative_difference": abs(optimal.duration - lp.duration)
                                    / optimal.duration, "gridpoints": gridpoints,
                                    "discretisation": "interpolation (limits at both ends of "
                                                      "every grid segment) in both"},
        "path_length_rad": path.length,
        "max_cartesian_error_m": float(np.max(deviation)),
        "cartesian_error_meaning": "distance of the retimed tool positions from the input's "
                                   "tool path (the geometry is kept, only the timing changes)",
        "limits_used": limits.as_dict(),
        "generator_margin": margin,
        "check": report.as_dict(),
        **extra,
        "files": {k: str(v) for k, v in files.items() if make_plots or "png" not in k},
    }
    export.write_summary(files["csv"], summary)
    if make_plots:
        jerk = None
        if jerk_limit is not None:
            jerk = np.diff(trajectory.qdd, axis=0) * rate
        torque = rnea(robot, trajectory.q, trajectory.qd, trajectory.qdd)
        plots.plot_cartesian(files["path_png"], trajectory.t, None, reached,
                             error=np.maximum(deviation, 1e-12),
                             title=f"{robot.name}: retimed tool path")
        plots.plot_joints(files["joints_png"], trajectory.t, trajectory.q, trajectory.qd,
                          trajectory.qdd, limits=limits, torque=torque, jerk=jerk,
                          q_range=robot.q_limits(default=np.inf),
                          title=f"{robot.name}: {method}, {trajectory.t[-1]:.3f} s")
    return summary
