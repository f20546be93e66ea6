"""The closed control loop in golden mode: joint controllers + fixed-point dynamics + the plant.

One control cycle (the paper's Fig. 7 for every joint, one model update for the chain,
docs/controller.md "Timing"):

1. every joint controller's ``feedback`` segment on the measured state and the reference:
   state MUX and limited computed-torque feedback, giving the model inputs
   ``q_model, qd_model, qdd_cmd``;
2. one fixed-point inverse-dynamics update of the whole chain on those words
   (:class:`linkdyn.model.golden.GoldenChain`, equal word for word to
   :func:`~linkdyn.model.golden.rnea_fixed`, what the nodes compute), with the last node's
   external wrench when the experiment tells the model one;
3. every controller's ``output`` segment on its node's torque word (guard, torque limit,
   current word, shut-off);
4. the commanded torque ``tau_cmd`` (decoded; zero where the drive is off) held on the plant for
   one control period (:meth:`linkdyn.sim.plant.Plant.step`).
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field

import numpy as np

from linkdyn.model.controller import ControllerConfig
from linkdyn.model.controller_compiled import FastJointController
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.golden import GoldenChain
from linkdyn.model.microprogram import rescale_word
from linkdyn.model.kinematics import link_frames, tool_pose

__all__ = ["GainSet", "GoldenController", "controller_configs", "LoopLog", "run_closed_loop",
           "payload_wrench", "csv_columns", "write_csv"]


@dataclass(frozen=True)
class GainSet:
    """Computed-torque feedback gains of one experiment run, the same on every joint.

    ``K_p = omega^2`` (1/s^2) and ``K_d = 2 zeta omega`` (1/s): with an exact model the joint
    error obeys ``e'' + K_d e' + K_p e = 0`` (paper Sect. 4.3: the feedback adds to the
    reference acceleration fed into the model).

    Parameters
    ----------
    omega : float
        Natural frequency, rad/s (> 0).
    zeta : float
        Damping ratio (> 0).
    """

    omega: float
    zeta: float

    def __post_init__(self):
        for name in ("omega", "zeta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value <= 0:
                raise ValueError(f"gain set {name} must be a finite number > 0, not {value!r}")

    @property
    def kp(self):
        """float: position gain, 1/s^2."""
        return float(self.omega) ** 2

    @property
    def kd(self):
        """float: velocity gain, 1/s."""
        return 2.0 * float(self.zeta) * float(self.omega)


def controller_configs(robot, gains, *, guard=False, **overrides):
    """Return the joint controllers' configurations of a run, one per joint.

    ``ControllerConfig.for_joint`` of every link's limits with the gains, the measured state in
    the model, and ``guard_small = 0`` unless ``guard`` (see :class:`GoldenController`).
    """
    fields = dict(kp=gains.kp, kd=gains.kd, measured_state=True)
    if not guard:
        fields["guard_small"] = 0.0
    fields.update(overrides)
    return [ControllerConfig.for_joint(link.limits, **fields) for link in robot.links]


class GoldenController:
    """The robot's joint controllers and node chain as golden models, stepped per control cycle.

    Parameters
    ----------
    robot : linkdyn.model.Robot
        The controller's model (use the plant's own ``plant.robot``); every joint needs position,
        velocity and torque limits.
    gains : GainSet
        Feedback gains of every joint.
    guard : bool
        Keep the guard cascade's in-range output (default 4 % of the effort limit, paper
        Sect. 3.1). ``False`` sets ``guard_small = 0``: inside the range only the computed-torque
        law acts (its high gain and integral action would otherwise mask the behaviour the
        experiments look at); outside the range the guard still pushes back.
    **overrides
        Further :class:`~linkdyn.model.controller.ControllerConfig` fields for every joint.

    Raises
    ------
    ValueError
        If a joint lacks a limit the configuration needs.
    FixedPointRangeError
        If a gain, limit or robot constant does not fit its register.
    NotImplementedError
        If the robot is not a serial chain of revolute joints (the fixed-point node's scope).
    """

    def __init__(self, robot, gains, *, guard=False, **overrides):
        if not isinstance(gains, GainSet):
            raise TypeError(f"gains must be a GainSet, not {type(gains).__name__}")
        self.robot = robot
        self.gains = gains
        self.configs = controller_configs(robot, gains, guard=guard, **overrides)
        # The controller program compiled (equal word for word to JointControllerModel).
        self.joints = [FastJointController(config.encode()) for config in self.configs]
        self.chain = GoldenChain(robot)
        self._tau_bits = self.chain.registers["tau"].format.fraction_bits
        self.tau_words = np.zeros(robot.n, dtype=np.int64)

    def step(self, q, qd, q_ref, qd_ref, qdd_ref, f_ext=None):
        """Run one control cycle; return the commanded torques, N·m, shape (n,).

        Parameters
        ----------
        q, qd : array_like, shape (n,)
            Measured joint state, rad and rad/s.
        q_ref, qd_ref, qdd_ref : array_like, shape (n,)
            Reference, rad, rad/s, rad/s^2.
        f_ext : array_like, shape (n, 6), optional
            External wrench per node as the model is told it (``f_ext`` of
            :func:`linkdyn.model.rnea`: the wrench the link exerts on its environment, DH frame
            of the link, N and N·m about its origin).

        Returns
        -------
        numpy.ndarray, shape (n,)
            ``tau_cmd`` of every joint, decoded; 0 where the drive is off (fault or disabled).

        Raises
        ------
        FixedPointRangeError
            If an input does not fit Q15.16.
        """
        inputs = [Q15_16.encode(np.asarray(v, dtype=float), name) for v, name in
                  ((q, "q"), (qd, "qd"), (q_ref, "q_ref"), (qd_ref, "qd_ref"),
                   (qdd_ref, "qdd_ref"))]
        model = np.empty((3, self.robot.n), dtype=np.int64)
        for i, joint in enumerate(self.joints):
            model[:, i] = joint.feedback(*(int(words[i]) for words in inputs))
        q_model, qd_model, qdd_cmd = Q15_16.decode(model)   # exact: the words themselves
        result = self.chain.step(q_model, qd_model, qdd_cmd, f_ext=f_ext)
        self.tau_words = result.tau_words
        tau = np.zeros(self.robot.n)
        for i, joint in enumerate(self.joints):
            # the node's tau (its own format) in the controller's Q15.16, as the chain hands it
            _, enable = joint.output(rescale_word(int(result.tau_words[i]), self._tau_bits,
                                                  Q15_16.fraction_bits))
            tau[i] = Q15_16.decode(joint.regs["tau_cmd"]) if enable else 0.0
        return tau

    @property
    def tau_cmd_words(self):
        """numpy.ndarray of int64, shape (n,): the last step's ``tau_cmd`` words."""
        return np.array([joint.regs["tau_cmd"] for joint in self.joints], dtype=np.int64)

    @property
    def fault_codes(self):
        """list of int: every joint's latched fault code (0: none)."""
        return [joint.fault_code for joint in self.joints]


def payload_wrench(robot, q, mass, com_n):
    """Return the ``f_ext`` of a payload's weight on the last node (paper Sect. 4.5).

    Parameters
    ----------
    robot : linkdyn.model.Robot
    q : array_like, shape (n,)
        Joint angles, rad (the measured ones: the node knows its frame from them).
    mass : float
        Payload mass, kg.
    com_n : array_like, shape (3,)
        Payload centre of mass in DH frame n, m.

    Returns
    -------
    numpy.ndarray, shape (n, 6)
        Zero but the last row: ``f = -m R_n^T g`` (the link holds the payload up: the wrench it
        exerts on its environment, the sign of ``f_ext``, :func:`linkdyn.model.rnea`) and
        ``mu = c x f`` about the origin of frame n, frame n axes.
    """
    rotation = link_frames(robot, np.asarray(q, dtype=float))[-1, :3, :3]
    force = -float(mass) * (rotation.T @ robot.gravity)
    wrench = np.zeros((robot.n, 6))
    wrench[-1, :3] = force
    wrench[-1, 3:] = np.cross(np.asarray(com_n, dtype=float), force)
    return wrench


def csv_columns(n):
    """Return the log's column names for n joints (issue 15's CSV layout)."""
    return (["t"] + [f"q{i}" for i in range(1, n + 1)] + [f"qd{i}" for i in range(1, n + 1)]
            + [f"tau{i}" for i in range(1, n + 1)]
            + ["x_ee", "y_ee", "z_ee", "x_ref", "y_ref", "z_ref", "fx", "fy", "fz",
               "fcx", "fcy", "fcz", "dx", "dy", "dz"])


@dataclass
class LoopLog:
    """Per-cycle log of a closed-loop run (one row per control cycle, state before the step).

    Attributes
    ----------
    t : (k,) s; q, qd : (k, n) measured rad, rad/s; tau : (k, n) commanded N·m;
    x_ee, x_ref : (k, 3) measured and reference tool point, world, m;
    f : (k, 3) wrist force (what the tool exerts), world, N;
    f_cmd : (k, 3) force told to the last node (``f_ext``), world, N;
    d : (k, 3) applied disturbance, world, N;
    seconds_per_cycle : float, wall-clock time per cycle (controller + plant), s.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    x_ee: np.ndarray
    x_ref: np.ndarray
    f: np.ndarray
    f_cmd: np.ndarray
    d: np.ndarray
    seconds_per_cycle: float = field(default=math.nan)

    @property
    def error(self):
        """numpy.ndarray, shape (k, 3): Cartesian position error ``x_ee - x_ref``, m."""
        return self.x_ee - self.x_ref

    def table(self):
        """Return the log as an array of shape (k, len(csv_columns(n)))."""
        return np.column_stack([self.t, self.q, self.qd, self.tau, self.x_ee, self.x_ref,
                                self.f, self.f_cmd, self.d])


def write_csv(log, path):
    """Write a :class:`LoopLog` as CSV with :func:`csv_columns` headers."""
    table = log.table()
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(csv_columns(log.q.shape[1]))
        for row in table:
            writer.writerow([repr(float(v)) for v in row])


def run_closed_loop(plant, controller, reference, cycles, *, f_ext=None):
    """Run the closed loop for a number of control cycles from the plant's current state.

    Parameters
    ----------
    plant : linkdyn.sim.plant.Plant
    controller : GoldenController
        Built on ``plant.robot``.
    reference : callable
        ``reference(t) -> (q_ref, qd_ref, qdd_ref)``, each shape (n,), at plant time t (s).
    cycles : int
        Control cycles (of ``plant.control_period``), >= 1.
    f_ext : callable, optional
        ``f_ext(q) -> (n, 6)`` wrench told to the model from the measured q, or None.

    Returns
    -------
    LoopLog

    Raises
    ------
    ValueError
        If ``cycles`` is not a positive integer or the controller is not on ``plant.robot``.
    """
    if isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 1:
        raise ValueError(f"cycles must be an integer >= 1, not {cycles!r}")
    if controller.robot is not plant.robot:
        raise ValueError("the controller's model must be the plant's own robot (plant.robot)")
    robot = plant.robot
    rows = {name: [] for name in ("t", "q", "qd", "tau", "x_ee", "x_ref", "f", "f_cmd", "d")}
    start = time.perf_counter()
    for _ in range(cycles):
        t = float(plant.state.time)
        q, qd = plant.measure()
        q_ref, qd_ref, qdd_ref = reference(t)
        wrench = None if f_ext is None else f_ext(q)
        tau = controller.step(q, qd, q_ref, qd_ref, qdd_ref, wrench)
        rows["t"].append(t)
        rows["q"].append(q)
        rows["qd"].append(qd)
        rows["tau"].append(tau)
        rows["x_ee"].append(plant.end_effector_position())
        rows["x_ref"].append(tool_pose(robot, q_ref)[:3, 3])
        rows["f"].append(plant.wrist_wrench()[:3])
        if wrench is None:
            rows["f_cmd"].append(np.zeros(3))
        else:
            rows["f_cmd"].append(link_frames(robot, q)[-1, :3, :3] @ wrench[-1, :3])
        rows["d"].append(plant.disturbance_force())
        plant.step(tau)
    elapsed = time.perf_counter() - start
    arrays = {name: np.asarray(values, dtype=float) for name, values in rows.items()}
    return LoopLog(**arrays, seconds_per_cycle=elapsed / cycles)
