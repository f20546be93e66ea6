"""Compliant tracking of the figure-eight under disturbances (source paper Sect. 4.4, Figs. 15, 17).

The reference is the paper's Lissajous figure-eight in the tool's x-y plane at the static
reference pose (:func:`linkdyn.host.trajectory.paths.figure_eight`), turned into joint
references ``q, qd, qdd`` by the existing inverse kinematics
(:func:`linkdyn.host.trajectory.ik.track`, the Jacobian inverse: the joint path reproduces the
Cartesian one to micrometres). The arm is held compliant (:data:`TRACK_GAINS`, low feedback
gains, as in the paper) and every run has the same time line:

1. ``hold`` seconds at the start pose (the centre of the eight). In the disturbed runs a constant
   force acts on the tool point all that time; its steady deflection over the last
   :data:`STIFFNESS_WINDOW` seconds, against the force the wrist sensor measures, is the
   measured Cartesian stiffness, compared with the one the gains predict (below);
2. the eight (one eight at full speed, fades of half a period); in the disturbed runs a push on
   the tool of :data:`PUSH_FACTOR` times the force the feedback can hold before its limits
   saturate, and later a push on a link of the arm (the forearm): the paper's "at the
   end-effector but also at any other link";
3. :data:`REST` seconds at the end pose, for the recovery from the last push.

Runs: ``track`` (no disturbance), ``track_disturbed`` (the disturbances, feedback limited as
:meth:`linkdyn.model.controller.ControllerConfig.for_joint` sets it: ``K_p`` times 0.1 rad,
``K_d`` times 1 rad/s) and ``track_disturbed_unsaturated`` (the same disturbances, feedback
limits raised out of reach).

Predicted stiffness. With the exact model in the loop every joint error obeys
``M(q) (e'' + K_d e' + K_p e) = J^T F`` for a force ``F`` on the tool point (computed-torque
control), so at rest ``e = K_p^-1 M^-1 J_v^T F`` and the tool moves by ``dx = C F`` with the
compliance ``C = J_v M^-1 J_v^T / K_p`` (3 x 3). For a square Jacobian this is the translational
block of the inverse of the 6 x 6 stiffness ``K_x = J^-T M K_p J^-1`` (issue 15's formula: the
pure force leaves the orientation free). The prediction uses MuJoCo's ``M`` and Jacobian at the
reference pose, independent of linkdyn's model.
"""

from __future__ import annotations

import math

import numpy as np

from linkdyn.model.kinematics import tool_pose
from linkdyn.host.trajectory.ik import track as track_path
from linkdyn.host.trajectory.paths import figure_eight

from .loop import GainSet, run_closed_loop
from .modes import with_controller_mode
from .runs import _cycles, _plant, reference_pose

__all__ = ["TRACK_GAINS", "TRACK_RUNS", "STIFFNESS_WINDOW", "PUSH_FACTOR", "UNSATURATED", "REST",
           "predicted_compliance", "saturation_force", "eight_reference", "track_experiment",
           "stiffness_from_log", "recovery_time"]

#: Sect. 4.4's compliant setting (low feedback gains, the same as the payload experiment's).
TRACK_GAINS = GainSet(4.0, 1.0)

#: The runs of the experiment, in order.
TRACK_RUNS = ("track", "track_disturbed", "track_disturbed_unsaturated")

#: Length of the window at the end of the hold phase over which the deflection is averaged, s.
STIFFNESS_WINDOW = 0.5

#: Rest at the end pose after the eight, s.
REST = 1.5

#: The push during the eight, as a multiple of the force the feedback limits allow.
PUSH_FACTOR = 3.0

#: Feedback limits of the unsaturated run, 1/s^2 (far beyond any error of the runs).
UNSATURATED = {"lim_p": 20000.0, "lim_d": 20000.0}


def predicted_compliance(plant, q, kp):
    """Return the compliance ``C = J_v M^-1 J_v^T / K_p`` of the tool point, m/N, shape (3, 3).

    Parameters
    ----------
    plant : linkdyn.sim.plant.Plant
        Its MuJoCo model gives ``M(q)`` (``mj_fullM``) and the tool Jacobian (``mj_jacSite``).
    q : array_like, shape (n,)
        Pose, rad.
    kp : float
        Position gain of every joint, 1/s^2.

    Returns
    -------
    numpy.ndarray, shape (3, 3)
        ``dx = C F`` for a force ``F`` (N, world) on the tool point at rest; ``C^-1`` is the
        stiffness, the translational part of ``J^-T M K_p J^-1`` for a pure force.
    """
    mass = plant.mass_matrix(q)
    jv = plant.tool_jacobian(q)[:3]
    return jv @ np.linalg.solve(mass, jv.T) / float(kp)


def saturation_force(plant, q, kp, direction, lim_p):
    """Return the force along ``direction`` at which the first joint's position feedback saturates.

    At rest under a tool force ``f d`` every joint error is ``f (M^-1 J_v^T d)_i / K_p``; the
    position feedback ``K_p e_i`` is limited to ``lim_p`` (1/s^2), so the feedback holds the force
    linearly up to ``f = lim_p / max_i |(M^-1 J_v^T d)_i|`` (N).

    Returns
    -------
    force : float
        N.
    joint : int
        0-based index of the joint that saturates first.
    """
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    mass = plant.mass_matrix(q)
    jv = plant.tool_jacobian(q)[:3]
    per_newton = np.abs(np.linalg.solve(mass, jv.T @ d))        # K_p e_i per N
    joint = int(np.argmax(per_newton))
    return float(lim_p / per_newton[joint]), joint


def eight_reference(robot, q0, *, hold, period, size=0.3):
    """Return the joint reference of the hold phase and the eight, and the Cartesian path.

    The eight (:func:`~linkdyn.host.trajectory.paths.figure_eight`, one cycle, fades of half a
    period) is centred on the tool position at ``q0``, in the x-y plane of the tool frame there,
    tool orientation kept; :func:`~linkdyn.host.trajectory.ik.track` with the Jacobian inverse
    from ``q0`` gives ``q, qd, qdd`` at 1 kHz. Before ``hold`` the reference rests at ``q0``.

    Returns
    -------
    reference : callable
        ``reference(t) -> (q_ref, qd_ref, qdd_ref)`` (rad, rad/s, rad/s^2), t in s.
    path : CartesianPath
        The eight (its time starts at 0, i.e. at ``hold`` in the run).
    tracking : TrackingResult
        The IK's joint trajectory (its largest Cartesian error says how exact the reference is).
    """
    pose = tool_pose(robot, q0)
    path = figure_eight(pose[:3, 3], pose[:3, :3], size=size, period=period, cycles=1,
                        ramp=period / 2, rate=1000.0)
    tracking = track_path(robot, path, "jinv", q0=q0)
    q, qd, qdd = tracking.q, tracking.qd, tracking.qdd
    zero = np.zeros(robot.n)
    last = len(q) - 1
    start = np.array(q0, dtype=float)

    def reference(t):
        if t < hold:
            return start, zero, zero
        k = int(round((t - hold) * 1000.0))
        if k >= last:
            return q[last], zero, zero
        return q[k], qd[k], qdd[k]

    return reference, path, tracking


def stiffness_from_log(log, start, stop):
    """Measure the tool's stiffness from the steady deflection in a window of a run.

    Parameters
    ----------
    log : LoopLog
    start, stop : float
        The window, s; the force must be constant in it and the arm at rest.

    Returns
    -------
    dict
        ``force`` (mean force applied to the tool, the negative of the wrist reading, N, world),
        ``deflection`` (mean ``x_ee - x_ref``, m, world), ``deflection_spread`` (largest
        deviation of ``|e|`` from its mean in the window, m), ``stiffness`` (along the force,
        ``|F|^2 / (F . dx)``, N/m).
    """
    inside = (log.t >= start) & (log.t < stop)
    if not inside.any():
        raise ValueError(f"no samples in the window {start}..{stop} s")
    force = -log.f[inside].mean(axis=0)
    error = log.error[inside]
    deflection = error.mean(axis=0)
    magnitude = np.linalg.norm(error, axis=1)
    return {"force": force.tolist(), "deflection": deflection.tolist(),
            "deflection_spread": float(np.abs(magnitude - magnitude.mean()).max()),
            "stiffness": float(force @ force / (force @ deflection))}


def recovery_time(t, deviation, start, release, until, band=0.05):
    """Time after a release until a deviation stays within ``band`` of its peak (s, or None).

    ``deviation`` (shape (k,), m) is measured from the undisturbed run at the same time; the peak
    is its largest value from ``start`` (the push's onset) to ``until`` (the end of the window,
    s); None if it has not settled by ``until``.
    """
    t = np.asarray(t, dtype=float)
    window = t < until
    peak = float(deviation[(t >= start) & window].max())
    after = np.nonzero((t >= release) & window)[0]
    outside = after[deviation[after] > band * peak]
    if len(outside) == 0:
        return 0.0
    if outside[-1] == after[-1]:
        return None
    return float(t[outside[-1] + 1] - release)


def _disturbances(hold, period, stiffness_force, push_force, link_force):
    """The disturbance schedule: (force, body, start, until) in run time."""
    eight = hold
    return [
        (stiffness_force, None, 0.0, hold),
        (push_force, None, eight + 0.25 * period, eight + 0.5 * period),
        (link_force, "forearm_link", eight + 1.1 * period, eight + 1.2 * period),
    ]


@with_controller_mode
def track_experiment(robot="ur5", seconds=10.0, *, hold=2.5, size=0.3,
                     direction=(0.0, 0.0, -1.0), stiffness_fraction=0.5,
                     push_factor=PUSH_FACTOR, link_force=(0.0, 3.0, 0.0), controller):
    """Track the figure-eight compliantly, with and without disturbances (paper Sect. 4.4).

    Parameters
    ----------
    robot : str
        Reference arm (``"ur5"``; the forearm push needs a link named ``forearm_link``, else
        it acts on the tool).
    seconds : float
        Length of each run, s: ``hold``, the eight (1.5 periods) and :data:`REST`, so the eight's
        period is ``(seconds - hold - REST) / 1.5`` (default 10 s: a 4 s eight, as in the
        trajectory docs).
    hold : float
        Hold phase at the start pose, s (>= 2 * :data:`STIFFNESS_WINDOW`; default 2.5 s: the
        compliant loop (4 rad/s, critically damped) settles to 0.2 % in 2 s).
    size : float
        Width of the eight, m.
    direction : array_like, shape (3,)
        Direction of the stiffness force and of the push on the tool, world (default down).
    stiffness_fraction : float
        The stiffness force as a fraction of :func:`saturation_force` along ``direction``
        (default 0.5: the linear range with margin).
    push_factor : float
        The push on the tool during the eight, as a multiple of :func:`saturation_force`.
    link_force : array_like, shape (3,)
        Push on the forearm during the eight, world, N.

    controller : str or callable
        Controller mode, ``"golden"`` (default) or ``"gateware"`` (the controller and chain
        gateware in Verilator), or a factory (:mod:`linkdyn.host.experiments.modes`).

    Returns
    -------
    dict
        ``runs`` (LoopLog per run of :data:`TRACK_RUNS`), ``figures`` (per run: RMS and largest
        Cartesian error during the eight; for the disturbed runs the measured stiffness against
        the predicted one, the deviation from ``track`` while pushed and its recovery),
        ``stiffness`` (prediction: compliance, stiffness matrix, ``J^-T M K_p J^-1``),
        ``schedule`` (the disturbances), ``seconds_per_cycle``.

    Raises
    ------
    ValueError
        If ``seconds`` is not a finite number >= ``hold + REST + 1.5`` (an eight of 1 s),
        ``hold`` is shorter than twice the stiffness window, or ``direction`` is zero.
    """
    for name, value in (("seconds", seconds), ("hold", hold), ("size", size),
                        ("stiffness_fraction", stiffness_fraction),
                        ("push_factor", push_factor)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, not {value!r}")
    if hold < 2 * STIFFNESS_WINDOW:
        raise ValueError(f"hold must be >= {2 * STIFFNESS_WINDOW} s, not {hold!r}")
    period = (seconds - hold - REST) / 1.5
    if period < 1.0 - 1e-9:
        raise ValueError(f"seconds must be >= hold + {REST} s rest + 1.5 s = "
                         f"{hold + REST + 1.5} s (an eight of at least 1 s), not {seconds!r}")
    d = np.asarray(direction, dtype=float)
    if d.shape != (3,) or not np.all(np.isfinite(d)) or np.linalg.norm(d) < 1e-9:
        raise ValueError(f"direction must be a non-zero 3-vector, not {direction!r}")
    d = d / np.linalg.norm(d)
    plant = _plant(robot)
    cycles = _cycles(plant, seconds)
    q0 = reference_pose(plant)
    model = plant.robot
    reference, path, ik = eight_reference(model, q0, hold=hold, period=period, size=size)
    gains = TRACK_GAINS
    lim_p = 0.1 * gains.kp                           # ControllerConfig.for_joint's default
    f_sat, sat_joint = saturation_force(plant, q0, gains.kp, d, lim_p)
    compliance = predicted_compliance(plant, q0, gains.kp)
    jac = plant.tool_jacobian(q0)
    mass = plant.mass_matrix(q0)
    stiffness_6 = (np.linalg.solve(jac.T, mass) @ np.linalg.inv(jac) * gains.kp
                   if jac.shape[0] == jac.shape[1] else None)
    stiffness_force = stiffness_fraction * f_sat * d
    push_force = push_factor * f_sat * d
    link_body = "forearm_link" if "forearm_link" in plant.body_names() else None
    schedule = _disturbances(hold, period, stiffness_force, push_force,
                             np.asarray(link_force, dtype=float))
    if link_body is None:
        schedule[2] = (schedule[2][0], None, schedule[2][2], schedule[2][3])
    runs, timing, faults = {}, [], {}
    for name in TRACK_RUNS:
        plant.reset(q0)
        plant.clear_disturbances()
        if name != "track":
            for force, body, start, until in schedule:
                if start < seconds:
                    kwargs = {} if body is None else {"body": body}
                    plant.apply_disturbance(force, start=start, until=until, **kwargs)
        overrides = UNSATURATED if name.endswith("unsaturated") else {}
        joints = controller(model, gains, **overrides)
        log = run_closed_loop(plant, joints, reference, cycles)
        runs[name] = log
        faults[name] = joints.fault_codes
        timing.append(log.seconds_per_cycle)
    plant.clear_disturbances()

    base = runs["track"]
    eight = base.t >= hold
    figures = {}
    predicted_k = float(1.0 / (d @ compliance @ d))
    for name, log in runs.items():
        magnitude = np.linalg.norm(log.error, axis=1)
        entry = {"rms_error_eight": float(np.sqrt(np.mean(magnitude[eight] ** 2))),
                 "max_error_eight": float(magnitude[eight].max()),
                 "final_error": float(magnitude[-1])}
        if name != "track":
            measured = stiffness_from_log(log, hold - STIFFNESS_WINDOW, hold)
            force = np.array(measured["force"])
            predicted_dx = compliance @ force
            k_pred = float(force @ force / (force @ predicted_dx))
            entry["stiffness"] = {
                **measured, "predicted_deflection": predicted_dx.tolist(),
                "predicted_stiffness": k_pred,
                "ratio": measured["stiffness"] / k_pred,
                "deflection_error": float(np.linalg.norm(np.array(measured["deflection"])
                                                         - predicted_dx)
                                          / np.linalg.norm(predicted_dx))}
            deviation = np.linalg.norm(log.x_ee - base.x_ee, axis=1)
            pushes = {}
            for label, (force, body, start, until) in zip(("release_hold", "push_tool",
                                                           "push_link"), schedule):
                if until >= seconds:
                    continue
                following = [s for _, _, s, _ in schedule if s > until]
                end = min(following) if following else seconds
                acting = (log.t >= start) & (log.t < until)
                pushes[label] = {
                    "force": list(map(float, force)), "body": body or "tool",
                    "start": start, "until": until,
                    "max_deviation": float(deviation[acting].max()),
                    "recovery_time": recovery_time(log.t, deviation, start, until, end),
                    "deviation_at_next": float(deviation[max(0, int(np.searchsorted(
                        log.t, end)) - 1)])}
            entry["disturbances"] = pushes
            if "push_tool" in pushes:
                # The linear (unsaturated) prediction of the push's steady deflection.
                pushes["push_tool"]["linear_deflection"] = float(
                    np.linalg.norm(compliance @ push_force))
        entry["faults"] = faults[name]
        figures[name] = entry
    return {"runs": runs, "figures": figures, "seconds_per_cycle": float(np.mean(timing)),
            "robot": robot, "pose": q0.tolist(), "hold": hold, "period": period, "size": size,
            "eight_centre": path.position[0].tolist(),
            "eight_axes": [path.rotation[0][:, 0].tolist(), path.rotation[0][:, 1].tolist()],
            "ik_max_error": ik.max_position_error,
            "gains": {"omega": gains.omega, "zeta": gains.zeta, "kp": gains.kp, "kd": gains.kd,
                      "lim_p": lim_p, "lim_d": gains.kd},
            "stiffness": {"compliance": compliance.tolist(),
                          "stiffness": np.linalg.inv(compliance).tolist(),
                          "stiffness_6x6": None if stiffness_6 is None else stiffness_6.tolist(),
                          "along_direction": predicted_k, "direction": d.tolist(),
                          "saturation_force": f_sat, "saturating_joint": sat_joint + 1},
            "schedule": [{"force": list(map(float, f)), "body": b or "tool", "start": s,
                          "until": u} for f, b, s, u in schedule]}
