"""The experiments of the source paper's Sect. 4.2 (contact), 4.3 (point control), 4.5 (payload).

Each function runs its closed-loop runs on a fresh MuJoCo plant of a reference arm in golden
mode (:mod:`linkdyn.host.experiments.loop`) and returns the logs and the figures. The files
(CSV, summary.json, plots) are written by :func:`linkdyn.host.experiments.report.write_experiment`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.linalg

from linkdyn.sim.plant import Plant

from linkdyn.model.kinematics import link_frames

from .loop import GainSet, payload_wrench, run_closed_loop
from .modes import with_controller_mode

__all__ = ["EXPERIMENTS", "NOT_BUILT", "POINT_GAINS", "PAYLOAD_GAINS", "reference_pose",
           "point_experiment", "payload_experiment", "pulse_response_metrics",
           "designed_pulse_response", "contact_experiment", "contact_wrench",
           "CONTACT_AMPLITUDE", "CONTACT_PERIOD", "minimum_seconds", "check_contact_amplitude"]

#: Static reference poses (rad): away from singularities, the arm's weight on the shoulder.
POSES = {
    "ur5": (0.0, -1.0, 1.2, -1.5, -1.57, 0.0),
    "panda": (0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8),
}

#: Sect. 4.3's three settings: one natural frequency, three damping ratios.
POINT_GAINS = {"high": GainSet(20.0, 1.5), "medium": GainSet(20.0, 0.7),
               "low": GainSet(20.0, 0.2)}

#: Sect. 4.5's compliant setting (low feedback gains).
PAYLOAD_GAINS = GainSet(4.0, 1.0)

EXPERIMENTS = ("point", "payload", "contact", "track", "identify")
NOT_BUILT = ()


#: Defaults of the disturbance pulse (start, duration, s) of ``point`` and ``payload``.
POINT_PULSE = (0.05, 0.2)
PAYLOAD_PULSE = (0.1, 0.2)


@functools.cache
def _designed_settling(gains, duration):
    # The design's response to a unit pulse of ``duration`` from t = 0; the run is long enough
    # for 10 time constants of its slowest pole.
    slowest = gains.omega * (gains.zeta - math.sqrt(max(gains.zeta ** 2 - 1.0, 0.0)))
    t, s = designed_pulse_response(gains, 0.0, duration, duration + 10.0 / slowest)
    return pulse_response_metrics(t, s, duration)["settling_time"]


def minimum_seconds(name, *, start=None, duration=None, period=None):
    """Shortest run of an experiment that still measures its figures, s (rounded up to 10 ms).

    ``point``: the pulse's end plus the designed settling time (5 % band,
    :func:`designed_pulse_response`) of the slowest gain set of :data:`POINT_GAINS`, so that
    every setting's overshoot and settling lie within the run. ``payload``: the pulse's end
    plus the designed settling of :data:`PAYLOAD_GAINS` (the RMS error is taken over the whole
    run: the no-payload run, the reference of the ratios, must hold the pulse and its
    reaction). ``contact``: half the period of the command ``A sin^2(pi t / P)`` (its peak: the
    gain and the saturation are measured over 0..A). ``track``, ``identify``: see their own
    functions (None here).

    Parameters
    ----------
    name : str
        Experiment name.
    start, duration : float, optional
        Pulse start and length, s (default the experiment's).
    period : float, optional
        ``contact``: period of the command, s (default :data:`CONTACT_PERIOD`).

    Returns
    -------
    float or None
    """
    if name in ("point", "payload"):
        pulse = POINT_PULSE if name == "point" else PAYLOAD_PULSE
        start = pulse[0] if start is None else start
        duration = pulse[1] if duration is None else duration
        release = start + duration
        gains = POINT_GAINS.values() if name == "point" else (PAYLOAD_GAINS,)
        # The designed response to a pulse of this length, shifted to start at 0.
        need = release + max(_designed_settling(g, duration) for g in gains)
    elif name == "contact":
        need = 0.5 * (CONTACT_PERIOD if period is None else period)
    else:
        return None
    return math.ceil(need * 100 - 1e-9) / 100


def reference_pose(plant):
    """Return the static reference pose of the plant's arm, rad, shape (n,)."""
    name = plant.robot.name.lower()
    for key, pose in POSES.items():
        if key in name and len(pose) == plant.n:
            return np.array(pose)
    return plant.default_configuration()


def _static(q0):
    zero = np.zeros_like(q0)
    return lambda t: (q0, zero, zero)


def _cycles(plant, seconds):
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"seconds must be a finite number > 0, not {seconds!r}")
    return max(1, int(round(seconds / plant.control_period)))


def _plant(robot):
    if not isinstance(robot, str):
        raise TypeError(f"robot must be a reference arm name (str), not {type(robot).__name__}")
    return Plant.from_reference(robot)


def pulse_response_metrics(t, error, release, band=0.05):
    """Overshoot and settling of the error's return after a force pulse ends.

    Parameters
    ----------
    t : array_like, shape (k,)
        Time, s.
    error : array_like, shape (k, 3) or (k,)
        Position error (m), or a scalar response.
    release : float
        Time the pulse ends, s.
    band : float
        Settling band, fraction of the largest deflection (default 5 %).

    Returns
    -------
    dict
        ``peak`` (largest deflection |e| while the pulse acts, m), ``overshoot`` (largest
        excursion beyond the reference after the release, against the deflection direction at
        the release, as a fraction of the deflection then), ``settling_time`` (s after the
        release until |e| stays within ``band * peak``; None if not within the run).
    """
    t = np.asarray(t, dtype=float)
    error = np.asarray(error, dtype=float)
    if error.ndim == 1:
        error = error[:, None]
    k = int(np.searchsorted(t, release))
    if not 0 < k < len(t):
        raise ValueError(f"release {release!r} s must lie within the run ({t[0]}..{t[-1]} s)")
    magnitude = np.linalg.norm(error, axis=1)
    peak = float(magnitude[:k].max())
    at_release = error[k]
    norm = float(np.linalg.norm(at_release))
    direction = at_release / norm if norm > 0 else at_release
    overshoot = float(max(0.0, -(error[k:] @ direction).min()) / norm) if norm > 0 else 0.0
    outside = np.nonzero(magnitude[k:] > band * peak)[0]
    if len(outside) == 0:
        settling = 0.0
    elif outside[-1] == len(magnitude) - k - 1:
        settling = None
    else:
        settling = float(t[k + outside[-1] + 1] - release)
    return {"peak": peak, "overshoot": overshoot, "settling_time": settling}


def designed_pulse_response(gains, start, duration, seconds, dt=1e-4):
    """The design's response: ``s'' + K_d s' + K_p s = u(t)``, u a unit pulse, from rest.

    With an exact model and equal gains on every joint, each joint's error (and so, for small
    motion, the Cartesian error) follows this scalar response times a constant vector.

    Returns
    -------
    t, s : numpy.ndarray, shape (k,)
    """
    a = np.array([[0.0, 1.0], [-gains.kp, -gains.kd]])
    step = scipy.linalg.expm(np.block([[a, np.array([[0.0], [1.0]])],
                                       [np.zeros((1, 3))]]) * dt)
    phi, gamma = step[:2, :2], step[:2, 2]
    t = np.arange(0.0, seconds, dt)
    x = np.zeros(2)
    s = np.empty(len(t))
    for k, time in enumerate(t):
        s[k] = x[0]
        u = 1.0 if start <= time < start + duration else 0.0
        x = phi @ x + gamma * u
    return t, s


@with_controller_mode
def point_experiment(robot="ur5", seconds=2.0, *, force=(0.0, 0.0, -20.0), start=0.05,
                     duration=0.2, controller):
    """Point control at a static reference under a force pulse, three gain sets (Sect. 4.3).

    Parameters
    ----------
    robot : str
        Reference arm (``"ur5"``, ``"panda"``).
    seconds : float
        Length of each run, s (> 0; the pulse must end within it).
    force : array_like, shape (3,)
        Disturbance force on the tool point, world axes, N (default 20 N down).
    start, duration : float
        Pulse start and length, s.

    controller : str or callable
        Controller mode, ``"golden"`` (default) or ``"gateware"`` (the controller and chain
        gateware in Verilator), or a factory (:mod:`linkdyn.host.experiments.modes`).

    Returns
    -------
    dict
        ``runs``: ``{"point_high": LoopLog, ...}``; ``figures``: per run the gains, the measured
        :func:`pulse_response_metrics` and the designed ones; ``seconds_per_cycle``.

    Raises
    ------
    ValueError
        If ``seconds`` is not positive or the pulse does not end within the run.
    """
    plant = _plant(robot)
    cycles = _cycles(plant, seconds)
    release = start + duration
    if release >= seconds:
        raise ValueError(f"the pulse ends at {release} s, after the run of {seconds} s")
    q0 = reference_pose(plant)
    runs, figures, timing = {}, {}, []
    for label, gains in POINT_GAINS.items():
        plant.reset(q0)
        plant.clear_disturbances()
        plant.apply_disturbance(force, start=start, duration=duration)
        joints = controller(plant.robot, gains)
        log = run_closed_loop(plant, joints, _static(q0), cycles)
        name = f"point_{label}"
        runs[name] = log
        timing.append(log.seconds_per_cycle)
        t_design, s_design = designed_pulse_response(gains, start, duration, seconds)
        figures[name] = {
            "omega": gains.omega, "zeta": gains.zeta, "kp": gains.kp, "kd": gains.kd,
            "measured": pulse_response_metrics(log.t, log.error, release),
            "designed": {key: value for key, value in
                         pulse_response_metrics(t_design, s_design, release).items()
                         if key != "peak"},   # the scalar response's peak has no unit
            "faults": joints.fault_codes,
        }
    return {"runs": runs, "figures": figures, "seconds_per_cycle": float(np.mean(timing)),
            "release": release, "force": list(map(float, force)), "pose": q0.tolist()}


@with_controller_mode
def payload_experiment(robot="ur5", seconds=2.0, *, mass=0.8, com=(0.0, 0.0, 0.05),
                       force=(0.0, 0.0, -2.0), start=0.1, duration=0.2, controller):
    """A payload on the last link, unknown to the model and told as its weight (Sect. 4.5).

    Three runs at the static reference pose with the compliant gains :data:`PAYLOAD_GAINS`
    and the same small force pulse on the tool: ``payload_none`` (no payload),
    ``payload_unmodelled`` (payload, model not told), ``payload_modelled`` (payload, its weight
    written every cycle as the last node's external wrench, :func:`payload_wrench`, from the
    measured q; its inertia is not told, as in the paper).

    Parameters
    ----------
    robot : str
        Reference arm.
    seconds : float
        Length of each run, s (> 0).
    mass : float
        Payload mass, kg (paper: about 0.8 kg).
    com : array_like, shape (3,)
        Payload centre of mass, tip link frame, m.
    force : array_like, shape (3,)
        Disturbance pulse on the tool point, world, N; ``start``, ``duration`` in s.

    controller : str or callable
        Controller mode, ``"golden"`` (default) or ``"gateware"`` (the controller and chain
        gateware in Verilator), or a factory (:mod:`linkdyn.host.experiments.modes`).

    Returns
    -------
    dict
        ``runs`` (LoopLog per run), ``figures`` per run (RMS and largest Cartesian error, m,
        and the ratio to ``payload_none``), ``seconds_per_cycle``.
    """
    plant = _plant(robot)
    cycles = _cycles(plant, seconds)
    q0 = reference_pose(plant)
    robot_model = plant.robot
    transform = plant.tip_in_dh
    com_n = transform[:3, :3] @ np.asarray(com, dtype=float) + transform[:3, 3]
    runs, timing = {}, []
    for label in ("none", "unmodelled", "modelled"):
        if label == "none":
            plant.remove_payload()
        else:
            plant.set_payload(mass, com)
        plant.reset(q0)
        plant.clear_disturbances()
        if start < seconds:
            plant.apply_disturbance(force, start=start, duration=duration)
        joints = controller(robot_model, PAYLOAD_GAINS)
        f_ext = (lambda q: payload_wrench(robot_model, q, mass, com_n)) \
            if label == "modelled" else None
        log = run_closed_loop(plant, joints, _static(q0), cycles, f_ext=f_ext)
        runs[f"payload_{label}"] = log
        timing.append(log.seconds_per_cycle)
    figures = {}
    base = None
    for name, log in runs.items():
        magnitude = np.linalg.norm(log.error, axis=1)
        rms = float(np.sqrt(np.mean(magnitude ** 2)))
        base = rms if base is None else base
        figures[name] = {"rms_error": rms, "max_error": float(magnitude.max()),
                         "final_error": float(magnitude[-1]), "ratio_to_none": rms / base,
                         "max_sag_z": float(-log.error[:, 2].min())}
    plant.remove_payload()
    return {"runs": runs, "figures": figures, "seconds_per_cycle": float(np.mean(timing)),
            "mass": float(mass), "com_tip": list(map(float, com)), "com_dh_n": com_n.tolist(),
            "force": list(map(float, force)), "pose": q0.tolist(),
            "gains": {"omega": PAYLOAD_GAINS.omega, "zeta": PAYLOAD_GAINS.zeta,
                      "kp": PAYLOAD_GAINS.kp, "kd": PAYLOAD_GAINS.kd}}


#: Sect. 4.2's command: amplitude (N) and period (s) of the pressing force.
CONTACT_AMPLITUDE = 40.0
CONTACT_PERIOD = 4.0


def contact_wrench(robot, q, force, point_n):
    """Return the ``f_ext`` that commands a force at the tool point (paper Sect. 4.2).

    Parameters
    ----------
    robot : linkdyn.model.Robot
    q : array_like, shape (n,)
        Joint angles, rad (the measured ones).
    force : array_like, shape (3,)
        Force the tool is to exert on its environment, world axes, N.
    point_n : array_like, shape (3,)
        Point of contact (the tool point) in DH frame n, m.

    Returns
    -------
    numpy.ndarray, shape (n, 6)
        Zero but the last row: ``f = R_n^T force`` (the wrench the link exerts on its
        environment, the sign of ``f_ext`` in :func:`linkdyn.model.rnea`) and ``mu = p x f``
        about the origin of frame n, frame n axes.
    """
    rotation = link_frames(robot, np.asarray(q, dtype=float))[-1, :3, :3]
    f_n = rotation.T @ np.asarray(force, dtype=float)
    wrench = np.zeros((robot.n, 6))
    wrench[-1, :3] = f_n
    wrench[-1, 3:] = np.cross(np.asarray(point_n, dtype=float), f_n)
    return wrench


def check_contact_amplitude(robot, q, force, point_n):
    """Check that the peak commanded wrench fits the last node's wrench registers.

    Parameters
    ----------
    robot : linkdyn.model.Robot
    q : array_like, shape (n,)
        Pose the arm holds, rad.
    force : array_like, shape (3,)
        Peak commanded force at the tool point, world, N.
    point_n : array_like, shape (3,)
        Tool point, DH frame n, m.

    Raises
    ------
    FixedPointRangeError
        If a component of :func:`contact_wrench` does not fit its register's format
        (:meth:`linkdyn.model.microprogram.RegisterMap.encode`; the message names the register
        and the format's range).
    """
    from linkdyn.model.microprogram import microprogram
    rmap = microprogram().registers
    wrench = contact_wrench(robot, q, force, point_n)[-1]
    for reg, value in zip(rmap.of_kind("input")[3:], wrench):
        rmap.encode(reg.name, value, f"the commanded contact force's {reg.name} on node "
                                     f"{robot.n}")


@with_controller_mode
def contact_experiment(robot="ur5", seconds=4.0, *, amplitude=CONTACT_AMPLITUDE,
                       period=CONTACT_PERIOD, direction=(1.0, 0.0, 0.0), controller):
    """The tool pressed against a plate by a commanded force, open loop (Sect. 4.2, Fig. 12).

    The arm holds the static reference pose with the compliant gains :data:`PAYLOAD_GAINS`; a
    rigid plate touches the tool sphere there (zero force at rest,
    :meth:`linkdyn.sim.plant.Plant.with_plate_at_tool`), its face normal to ``direction``.
    Every cycle the last node is told the force ``f_c(t) = amplitude sin^2(pi t / period) d``
    (world, at the tool point; :func:`contact_wrench` from the measured q): a sinusoid between 0
    and ``amplitude`` that only presses (a contact cannot pull) and starts at zero force. The
    nodes turn it into joint torques ``J^T f_c`` on top of the arm's own dynamics; the wrist
    sensor measures what the tool exerts. One run, ``contact``.

    Parameters
    ----------
    robot : str
        Reference arm.
    seconds : float
        Length of the run, s (> 0; default one period).
    amplitude : float
        Peak commanded force, N (> 0; paper: 40 N).
    period : float
        Period of the sinusoid, s (> 0).
    direction : array_like, shape (3,)
        Direction of the pressing force and of the plate's normal, world (default x,
        horizontal, as in the paper).

    controller : str or callable
        Controller mode, ``"golden"`` (default) or ``"gateware"`` (the controller and chain
        gateware in Verilator), or a factory (:mod:`linkdyn.host.experiments.modes`).

    Returns
    -------
    dict
        ``runs`` (``{"contact": LoopLog}``), ``figures`` (tracking below the predicted
        saturation: RMS and largest error, N, and the gain (least squares of measured on
        commanded); the predicted saturation ``static_force_limit`` and its joint; where the
        measured force departs from the command and its largest value), ``seconds_per_cycle``.

    Raises
    ------
    ValueError
        If ``seconds``, ``amplitude`` or ``period`` is not a finite number > 0, or
        ``direction`` is zero.
    FixedPointRangeError
        (a ValueError) If the peak commanded wrench does not fit the last node's wrench
        registers (:func:`check_contact_amplitude`), before the run.
    TypeError
        If ``robot`` is not a name or ``direction`` not a 3-vector.
    """
    for name, value in (("amplitude", amplitude), ("period", period)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, not {value!r}")
    base = _plant(robot)
    cycles = _cycles(base, seconds)
    q0 = reference_pose(base)
    base.reset(q0)
    plant = base.with_plate_at_tool(direction)       # checks direction
    plant.reset(q0)
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    limit, joint = plant.static_force_limit(d, q0)
    robot_model = plant.robot
    point_n = robot_model.tool[:3, 3]
    amplitude, period = float(amplitude), float(period)
    check_contact_amplitude(robot_model, q0, amplitude * d, point_n)

    def command(t):
        return amplitude * math.sin(math.pi * t / period) ** 2

    def f_ext(q):
        return contact_wrench(robot_model, q, command(float(plant.state.time)) * d, point_n)

    joints = controller(robot_model, PAYLOAD_GAINS)
    log = run_closed_loop(plant, joints, _static(q0), cycles, f_ext=f_ext)
    along_cmd = log.f_cmd @ d
    along = log.f @ d
    across = np.linalg.norm(log.f - np.outer(along, d), axis=1)
    below = along_cmd <= limit
    error = along[below] - along_cmd[below]
    gain = float(along[below] @ along_cmd[below] / (along_cmd[below] @ along_cmd[below])) \
        if np.any(along_cmd[below] > 0) else math.nan
    clipped = np.nonzero(np.abs(log.tau) >= plant.tau_max * (1 - 1e-9))[0]
    figures = {"contact": {
        "amplitude": amplitude, "period": period, "direction": d.tolist(),
        "rms_error": float(np.sqrt(np.mean(error ** 2))) if len(error) else math.nan,
        "max_error": float(np.abs(error).max()) if len(error) else math.nan,
        "gain": gain,
        "max_across": float(across.max()),
        "predicted_saturation": limit,
        "limiting_joint": None if joint is None else joint + 1,
        "measured_max": float(along.max()),
        "commanded_max": float(along_cmd.max()),
        "first_clip_t": float(log.t[clipped[0]]) if len(clipped) else None,
        "force_at_first_clip": float(along[clipped[0]]) if len(clipped) else None,
        "saturated": bool(len(clipped)),
        "faults": joints.fault_codes,
    }}
    return {"runs": {"contact": log}, "figures": figures,
            "seconds_per_cycle": log.seconds_per_cycle, "pose": q0.tolist(),
            "gains": {"omega": PAYLOAD_GAINS.omega, "zeta": PAYLOAD_GAINS.zeta,
                      "kp": PAYLOAD_GAINS.kp, "kd": PAYLOAD_GAINS.kd}}
