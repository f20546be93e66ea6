"""The identification pipeline on the plant, closed loop (source paper Sect. 4.1, Figs. 9, 10).

The plant's true parameters differ from the URDF the controller's (nominal) model comes from, by
a documented, seeded perturbation (:func:`perturb_plant`): every link's mass and every non-zero
component of its centre of mass scaled by its own factor in ``[1 - 0.2, 1 + 0.2]`` (the
rotational inertia about the centre of mass scaled with the mass: the same shape, another
density), and joint friction added that the URDF does not have (MuJoCo ``damping``, the viscous
``F_v`` of eq. 20, and ``frictionloss``, dry friction of level ``F_c pi / 2``), each joint's
between 1 % and 2 % of its effort limit (N·m, and N·m·s/rad).

Then the paper's procedure, with the existing pieces:

1. the excitation (:func:`linkdyn.host.identification.optimise_excitation`: 5 harmonics, a 10 s
   period, fades of one period, link origins 5 and 6 at least 0.25 m high, d-optimal) for the
   nominal model;
2. run on the plant under high-gain control (:data:`HIGH_GAINS`, the nominal model in the
   nodes), logging the measured ``q, qd`` and the commanded torques: run
   ``identify_excitation``;
3. the log identified by :func:`linkdyn.host.identification.identify` (first 70 % fit, last 30 %
   validate; accelerations by filtered differentiation of the measured velocity, as on a real
   arm);
4. Fig. 10, the validation: the identified robot (friction included) loaded into the nodes (the
   golden chain is built from it), the figure-eight of :mod:`.track` tracked under the
   excitation's high gains (run ``identify_validation``), and the torque each model computes for
   the measured motion (fixed-point :func:`linkdyn.model.golden.rnea_fixed` at the measured
   ``q, qd`` and the accelerations differentiated from them) against the torque driving the
   plant (the commanded torque, what a drive's current measures);
5. the tracking of :mod:`.track` repeated on the perturbed plant: the eight tracked compliantly
   with the nominal model (run ``identify_nominal``) and with the identified one (run
   ``identify_identified``) in the nodes, the same torque comparison on each.

Why the validation runs under high gains: under the compliant gains the feedback can command
on a joint at rest at most :func:`feedback_authority` (0.41 N·m on the UR5's joint 5 over the
eight, 0.07 N·m on joint 6, against their dry friction of 0.50 and 0.52 N·m), and a
model evaluated at the measured velocity compensates no friction on a joint at rest: the wrist
joints stay stuck for the whole eight, their torque is whatever the controller commands inside
the friction band, not a function of the motion, and no model of the motion (the plant's own
parameters included) predicts it. Under the high gains every joint follows the eight.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from linkdyn.model import rnea
from linkdyn.model.golden import rnea_fixed
from linkdyn.host.identification import (CartesianBox, ExcitationLimits, IdentificationOptions,
                                         Measurements, identify, optimise_excitation,
                                         torque_errors)
from linkdyn.host.identification.pipeline import prepare
from linkdyn.sim.plant import Plant

from .loop import GainSet, controller_configs, run_closed_loop
from .modes import with_controller_mode
from .runs import _cycles, reference_pose
from .track import TRACK_GAINS, eight_reference

__all__ = ["HIGH_GAINS", "PERTURBATION", "IDENTIFY_RUNS", "VALIDATION_HOLD", "perturb_plant",
           "identify_experiment", "board_torque_errors", "feedback_authority"]

#: High-gain position control for the excitation run (paper: "high-gain position feedback").
HIGH_GAINS = GainSet(40.0, 1.0)

#: The perturbation of the plant: relative spread of masses and centres of mass, friction
#: levels as fractions of each joint's effort limit, and the seed.
PERTURBATION = {"mass": 0.2, "com": 0.2, "friction": (0.01, 0.02), "seed": 15}

#: The runs of the experiment, in order.
IDENTIFY_RUNS = ("identify_excitation", "identify_validation", "identify_nominal",
                 "identify_identified")

#: Rest at the start of the high-gain validation eight, s (the plant starts on the reference).
VALIDATION_HOLD = 0.5

#: The identification options (paper Sect. 4.1; accelerations from the measured velocity).
OPTIONS = IdentificationOptions(acceleration="differentiate", cutoff=10.0,
                                acceleration_cutoff=10.0)


def perturb_plant(plant, *, mass=PERTURBATION["mass"], com=PERTURBATION["com"],
                  friction=PERTURBATION["friction"], seed=PERTURBATION["seed"],
                  rigid=False):
    """Return a plant of the same arm whose true parameters differ from the URDF's.

    Parameters
    ----------
    plant : linkdyn.sim.plant.Plant
        The nominal plant (its URDF, tip and settings are reused; it is not changed).
    mass, com : float
        Largest relative change of a link's mass and of each non-zero component of its centre
        of mass (uniform in ``[-x, x]``; default 20 %).
    friction : tuple of float
        Range of the added viscous damping (N·m·s/rad) and dry friction level (N·m), as fractions
        of each joint's effort limit (uniform; default 1 % to 2 %).
    seed : int
        Seed of the ``numpy.random.Generator`` drawing the factors.
    rigid : bool
        Build the same perturbed arm without the friction (drawn all the same, so the masses
        and centres of mass are equal): its MuJoCo inverse dynamics plus the friction terms is
        the plant's own torque for a motion.

    Returns
    -------
    plant : linkdyn.sim.plant.Plant
        The perturbed plant (its ``robot`` is still the nominal model).
    truth : dict
        Per URDF link the nominal and true mass (kg) and centre of mass (link frame, m), and the
        added ``damping`` and ``frictionloss`` per joint.

    Raises
    ------
    ValueError
        If a spread is not in [0, 1) or the friction range is not ``0 <= low <= high``.
    """
    for name, value in (("mass", mass), ("com", com)):
        if not 0 <= float(value) < 1:
            raise ValueError(f"{name} spread must be in [0, 1), not {value!r}")
    low, high = (float(v) for v in friction)
    if not 0 <= low <= high:
        raise ValueError(f"friction range must be 0 <= low <= high, not {friction!r}")
    rng = np.random.default_rng(seed)
    tau_max = np.where(np.isfinite(plant.tau_max), plant.tau_max, 0.0)
    damping = tau_max * rng.uniform(low, high, plant.n)
    frictionloss = tau_max * rng.uniform(low, high, plant.n)
    zero = np.zeros(plant.n)
    perturbed = Plant.from_urdf(plant.urdf_path, plant.tip,
                                damping=zero if rigid else damping,
                                frictionloss=zero if rigid else frictionloss)
    truth = {"links": {}, "damping": damping.tolist(), "frictionloss": frictionloss.tolist()}
    for link in plant.robot.links:
        m0, c0, inertia0 = perturbed.link_inertial(link.name)
        m = m0 * (1 + rng.uniform(-mass, mass))
        c = c0 * (1 + rng.uniform(-com, com, 3))
        perturbed.set_link_inertial(link.name, mass=m, com=c, inertia=inertia0 * (m / m0))
        truth["links"][link.name] = {"mass": [m0, m], "com": [c0.tolist(), c.tolist()]}
    return perturbed, truth


def _excitation(robot, period, iterations, samples, progress):
    """The optimised Fourier excitation of the nominal model (paper Sect. 4.1)."""
    boxes = tuple(CartesianBox(frame, lower=(-np.inf, -np.inf, 0.25))
                  for frame in (robot.n - 1, robot.n))
    limits = ExcitationLimits.from_robot(robot, boxes=boxes)
    center = np.zeros(robot.n)
    if robot.n == 6:
        center[1] = center[3] = -math.pi / 2            # the UR5's elbow-up pose
    return optimise_excitation(robot, harmonics=5, period=period, limits=limits,
                               max_iterations=iterations, samples=samples, center=center,
                               progress=progress)


def _measurements(log, name, start=0.0):
    keep = log.t >= start
    return Measurements(log.t[keep], log.q[keep], log.qd[keep], log.tau[keep], name=name)


def plant_torque(rigid, truth, q, qd, qdd, steepness=100.0):
    """Return the perturbed plant's own torque for a motion, N·m, shape (k, n).

    MuJoCo's inverse dynamics (``mj_inverse``) of the perturbed arm without friction
    (``perturb_plant(..., rigid=True)``) plus its added friction in the form of eq. (20):
    ``damping qd + frictionloss (2 / pi) atan(k qd)`` (the dry friction's level is reached as
    ``|qd|`` grows; a joint at rest is held by anything up to the level, which no model of the
    motion predicts).
    """
    damping = np.asarray(truth["damping"])
    level = np.asarray(truth["frictionloss"])
    rigid_torque = np.array([rigid.inverse_dynamics(a, b, c) for a, b, c in zip(q, qd, qdd)])
    return rigid_torque + damping * qd + level * (2 / math.pi) * np.arctan(steepness * qd)


def board_torque_errors(models, log, *, start=0.0, options=OPTIONS, plant=None):
    """Compare the nodes' torques for the measured motion of a run with the torques applied.

    Parameters
    ----------
    models : dict
        ``{label: Robot}``, each the model in the nodes.
    log : LoopLog
        A run (its ``tau`` drove the plant).
    start : float
        Ignore the samples before this time, s.
    options : IdentificationOptions
        Filtering and differentiation (the same as the identification's).
    plant : tuple, optional
        ``(rigid, truth)`` of :func:`perturb_plant`: also compare the plant's own torque
        (:func:`plant_torque`, label ``"plant parameters"``) with the applied one, the floor no
        model of the motion can go below, and every model with it (``"against_plant"``:
        ``{label: TorqueErrors}``).

    Returns
    -------
    dict
        ``{label: TorqueErrors}`` (RMS per joint, N·m, against the low-passed applied torque),
        with ``plant`` also ``"plant parameters"`` and ``"against_plant"``, and ``"_data"``:
        the prepared measurements and the torques per label (for the plot).
    """
    data = prepare(_measurements(log, "eight", start), options)
    result = {"_data": {"t": data.t, "tau": data.tau, "predicted": {}}}
    for label, robot in models.items():
        predicted = rnea_fixed(robot, data.q, data.qd, data.qdd).tau
        result[label] = torque_errors(data.tau, predicted)
        result["_data"]["predicted"][label] = predicted
    if plant is not None:
        own = plant_torque(*plant, data.q, data.qd, data.qdd)
        result["plant parameters"] = torque_errors(data.tau, own)
        result["_data"]["predicted"]["plant parameters"] = own
        # The models against the plant's own dynamics for the same motion (no stiction).
        result["against_plant"] = {label: torque_errors(own, result["_data"]["predicted"][label])
                                   for label in models}
    return result


def feedback_authority(robot, gains, q, reference, times):
    """Largest torque the limited feedback can command on each joint while it is held at rest.

    On a joint that does not move (``qd = 0``) at ``q`` the feedback acceleration is at most
    ``min(K_p |q_ref - q|, lim_p) + min(K_d |qd_ref|, lim_d)``, its largest over the reference's
    times; the model (at the measured, zero velocity) turns it into at most ``M_jj`` times that
    (``M`` the joint-space inertia of ``robot`` at ``q``, its columns from
    :func:`linkdyn.model.rnea` at zero velocity and gravity). A joint whose dry friction exceeds
    this cannot be set moving by the feedback.

    Parameters
    ----------
    robot : Robot
        The model (nominal).
    gains : GainSet
        The run's gains (the limits of :func:`.loop.controller_configs`).
    q : array_like, shape (n,)
        The pose the joints rest at, rad.
    reference : callable
        ``reference(t) -> (q_ref, qd_ref, qdd_ref)``.
    times : array_like, shape (k,)
        The instants of the reference considered, s.

    Returns
    -------
    numpy.ndarray, shape (n,)
        N·m.
    """
    configs = controller_configs(robot, gains)
    kp = np.array([c.kp for c in configs])
    kd = np.array([c.kd for c in configs])
    lim_p = np.array([c.lim_p for c in configs])
    lim_d = np.array([c.lim_d for c in configs])
    states = [reference(t) for t in times]
    e = np.max([np.abs(r[0] - q) for r in states], axis=0)
    v = np.max([np.abs(r[1]) for r in states], axis=0)
    acceleration = np.minimum(kp * e, lim_p) + np.minimum(kd * v, lim_d)
    n = robot.n
    poses = np.tile(np.asarray(q, dtype=float), (n, 1))
    zero = np.zeros((n, n))
    no_gravity = np.zeros(3)
    columns = rnea(robot, poses, zero, np.eye(n), gravity=no_gravity) \
        - rnea(robot, poses, zero, zero, gravity=no_gravity)
    return np.diag(columns) * acceleration


def _eight_figures(errors, log, start, reference, nominal, gains, q0):
    """The figures of one eight run: torque errors, tracking, how far each joint moved."""
    eight = log.t >= start
    nominal_rms = errors["nominal"].rms
    identified_rms = errors["identified"].rms
    magnitude = np.linalg.norm(log.error, axis=1)
    states = [reference(t) for t in log.t[eight]]
    q_ref = np.array([state[0] for state in states])
    qd_ref = np.array([state[1] for state in states])
    return {
        "torque_rms_nominal": nominal_rms.tolist(),
        "torque_rms_identified": identified_rms.tolist(),
        "torque_rms_plant_parameters": errors["plant parameters"].rms.tolist(),
        "model_rms_nominal": errors["against_plant"]["nominal"].rms.tolist(),
        "model_rms_identified": errors["against_plant"]["identified"].rms.tolist(),
        "model_ratio": (errors["against_plant"]["identified"].rms
                        / errors["against_plant"]["nominal"].rms).tolist(),
        "torque_ratio": (identified_rms / nominal_rms).tolist(),
        "at_most_half_on_every_joint": bool(np.all(identified_rms <= 0.5 * nominal_rms)),
        "qd_rms": np.sqrt(np.mean(log.qd[eight] ** 2, axis=0)).tolist(),
        "qd_ref_rms": np.sqrt(np.mean(qd_ref ** 2, axis=0)).tolist(),
        # How far each joint went on the eight, against the reference (a joint held by its
        # dry friction stays within a few encoder counts).
        "q_range": np.ptp(log.q[eight], axis=0).tolist(),
        "q_ref_range": np.ptp(q_ref, axis=0).tolist(),
        "feedback_authority": feedback_authority(nominal, gains, q0, reference,
                                                 log.t[eight]).tolist(),
        "rms_error_eight": float(np.sqrt(np.mean(magnitude[eight] ** 2))),
        "max_error_eight": float(magnitude[eight].max())}


@with_controller_mode
def identify_experiment(robot="ur5", seconds=None, *, period=10.0, eight_seconds=8.5,
                        iterations=100, samples=100, progress=False, controller):
    """Identify the perturbed plant from a closed-loop excitation run and track with the result.

    Parameters
    ----------
    robot : str
        Reference arm (``"ur5"``).
    seconds : float, optional
        Short version: the excitation's period becomes ``seconds / 3`` (one period with its two
        fades: a run of ``seconds``), the eight's period ``(seconds - 2.5) / 1.5``, every eight
        run starts after a rest of :data:`VALIDATION_HOLD` (not 2.5 s), and the optimiser's
        budget falls to 15 iterations over 40 samples. Default: the paper's 10 s period (a 30 s
        excitation run), a 4 s eight (6 s with its fades), the compliant eights after a 2.5 s
        hold (8.5 s runs), the validation after :data:`VALIDATION_HOLD`.
    period : float
        Excitation period, s (paper: 10 s), when ``seconds`` is not given.
    eight_seconds : float
        Length of the eight runs (the hold and the eight of :func:`.track.track_experiment`,
        undisturbed, without the rest at the end), s, when ``seconds`` is not given.
    iterations, samples : int
        SLSQP iterations and criterion samples of the excitation optimisation.
    progress : bool
        Progress bars of the optimiser.
    controller : str or callable
        Controller mode, ``"golden"`` (default) or ``"gateware"`` (the controller and chain
        gateware in Verilator), or a factory (:mod:`linkdyn.host.experiments.modes`).

    Returns
    -------
    dict
        ``runs`` (LoopLog per run of :data:`IDENTIFY_RUNS`), ``figures`` (per run: on the
        eights the torque errors per joint of both models against the applied torque and
        against the plant's own dynamics, and the tracking errors), ``identification`` (base
        parameters, the held-out validation of the excitation run), ``truth`` (the
        perturbation), ``seconds_per_cycle``; ``objects``, not for
        JSON: ``identified`` (the Robot), ``torque`` (:func:`board_torque_errors` per eight
        run), ``excitation`` (the FadedTrajectory).

    Raises
    ------
    ValueError
        If ``seconds`` is given and below 4.5 s (an eight needs ``hold + 1.5`` s) or not finite.
    """
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
                or not math.isfinite(seconds) or seconds < 4.5:
            raise ValueError(f"seconds must be a finite number >= 4.5, not {seconds!r}")
        period, eight_seconds = seconds / 3.0, float(seconds)
        iterations, samples = min(iterations, 15), min(samples, 40)
    if robot != "ur5":
        raise ValueError(f"the identify experiment is set up for the UR5, not {robot!r}")
    nominal_plant = Plant.from_reference(robot)
    plant, truth = perturb_plant(nominal_plant)
    rigid, _ = perturb_plant(nominal_plant, rigid=True)
    nominal = plant.robot
    excitation = _excitation(nominal, period, iterations, samples, progress)
    trajectory = excitation.trajectory

    def excite(t):
        q, qd, qdd = trajectory.evaluate(np.array([t]))
        return q[0], qd[0], qdd[0]

    runs, timing, faults = {}, [], {}
    q_start = excite(0.0)[0]
    plant.reset(q_start)
    joints = controller(nominal, HIGH_GAINS)
    log = run_closed_loop(plant, joints, excite, _cycles(plant, trajectory.duration))
    runs["identify_excitation"] = log
    faults["identify_excitation"] = joints.fault_codes
    timing.append(log.seconds_per_cycle)
    clipped = plant.clip_count.tolist()

    result = identify(nominal, _measurements(log, "identify_excitation"), OPTIONS)
    identified = replace(result.identified, name=f"{nominal.name} (identified on the plant)")

    eight_period = (eight_seconds - 2.5) / 1.5
    hold = 2.5 if seconds is None else VALIDATION_HOLD
    q0 = reference_pose(plant)
    reference, _, _ = eight_reference(nominal, q0, hold=hold, period=eight_period)
    models = {"nominal": nominal, "identified": identified}
    # Fig. 10: the eight under the excitation's high gains with the identified model in the
    # nodes, every joint following it (see the module notes).
    validation = reference if hold == VALIDATION_HOLD else \
        eight_reference(nominal, q0, hold=VALIDATION_HOLD, period=eight_period)[0]
    plant.reset(q0)
    joints = controller(nominal, HIGH_GAINS, model=identified)
    log = run_closed_loop(plant, joints, validation,
                          _cycles(plant, VALIDATION_HOLD + 1.5 * eight_period))
    runs["identify_validation"] = log
    faults["identify_validation"] = joints.fault_codes
    timing.append(log.seconds_per_cycle)
    for label, model in models.items():
        plant.reset(q0)
        # The model in the nodes: their constants from the model; the joint controllers'
        # limits and the kinematics are the same for both.
        joints = controller(nominal, TRACK_GAINS, model=model)
        log = run_closed_loop(plant, joints, reference,
                              _cycles(plant, hold + 1.5 * eight_period))
        runs[f"identify_{label}"] = log
        faults[f"identify_{label}"] = joints.fault_codes
        timing.append(log.seconds_per_cycle)

    identification = {
        "base_parameters": result.base.count, "steepness": result.steepness,
        "physically_consistent": result.physically_consistent,
        "validation_rms_identified": result.errors["identified"].rms.tolist(),
        "validation_rms_nominal": result.errors["nominal"].rms.tolist(),
        "excitation_criterion": [excitation.initial_value, excitation.value],
        "excitation_iterations": excitation.iterations, "excitation_period": period}
    figures = {"identify_excitation": {
        "faults": faults["identify_excitation"], "clipped_cycles": clipped,
        "max_error": float(np.linalg.norm(runs["identify_excitation"].error, axis=1).max())}}
    torque = {}
    for name, label, start, run_reference, gains in (
            ("identify_validation", "identified", VALIDATION_HOLD, validation, HIGH_GAINS),
            ("identify_nominal", "nominal", hold, reference, TRACK_GAINS),
            ("identify_identified", "identified", hold, reference, TRACK_GAINS)):
        log = runs[name]
        errors = board_torque_errors(models, log, start=start, plant=(rigid, truth))
        torque[name] = errors
        figures[name] = _eight_figures(errors, log, start, run_reference, nominal, gains, q0)
        figures[name].update(model_in_the_nodes=label, faults=faults[name],
                             gains={"omega": gains.omega, "zeta": gains.zeta})
    return {"runs": runs, "figures": figures, "seconds_per_cycle": float(np.mean(timing)),
            "robot": robot,
            "identification": identification, "truth": truth, "hold": hold,
            "validation_hold": VALIDATION_HOLD,
            "eight_period": eight_period,
            "objects": {"identified": identified, "torque": torque, "excitation": trajectory},
            "gains": {"excitation": {"omega": HIGH_GAINS.omega, "zeta": HIGH_GAINS.zeta},
                      "eight": {"omega": TRACK_GAINS.omega, "zeta": TRACK_GAINS.zeta}}}

