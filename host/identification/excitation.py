"""Excitation trajectory optimisation (source paper eq. 24).

The Fourier coefficients ``c_i = (q_{i,0}, a_{i,1..H}, b_{i,1..H})`` of every joint (eq. 23) are
chosen to

    minimise  -log det(Phi_bar^T Phi_bar)          (d-optimality; or log cond(Phi_bar))

where ``Phi_bar`` is the base regressor (:mod:`.base_parameters`) stacked over ``K`` samples of
one period (eq. 21), subject to, at every constraint sample of the whole run (fade-in, the
periods, fade-out; :class:`~.fourier.FadedTrajectory`):

* joint position, velocity and acceleration limits, and
* Cartesian box limits on chosen DH frame origins (forward kinematics of the DH frames,
  :mod:`.kinematics`, with the analytic Jacobian).

Each family is aggregated over the samples by a smooth maximum (log-sum-exp), one constraint per
joint, derivative order and side (per box, axis and side), so that SLSQP handles a few dozen
smooth constraints instead of tens of thousands of sampled ones. The log-sum-exp bounds the
sampled maximum from above by at most ``margin`` of the limit, which keeps the optimum that much
inside the limits. SLSQP may end slightly outside; the result is then checked independently at
1 ms (:func:`check_trajectory`) and, if needed, its amplitudes are scaled down until it passes.

The criterion's gradient is analytic in the trajectory and numerical only in the state: with
``dC = <A, dPhi>`` (``A = -2 Phi (Phi^T Phi)^-1`` for d-optimality) and
``dY_k = sum_i dY/dq_i G0 + dY/dqd_i G1 + dY/dqdd_i G2``, one batched regressor call on
``5 n + 1`` perturbed copies of the ``K`` states gives the whole gradient. Progress is shown by
:func:`linkdyn.host.progress.progress_bar`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from linkdyn.model import Robot, regressor

from .base_parameters import base_parameters
from .fourier import FadedTrajectory, FourierTrajectory
from linkdyn.model.kinematics import jacobian, link_origins

__all__ = [
    "CartesianBox", "ExcitationLimits", "ConstraintCheck", "ExcitationResult", "CRITERIA",
    "DEFAULT_QDD_MAX", "excitation_criterion", "check_trajectory", "random_start",
    "optimise_excitation",
]

#: Acceleration limit (rad/s^2) used for joints whose description has none.
DEFAULT_QDD_MAX = 10.0

#: Velocity limit (rad/s) used for joints whose description has none.
DEFAULT_QD_MAX = 2.0

#: Names of the optimisation criteria.
CRITERIA = ("d-optimality", "condition")


@dataclass(frozen=True)
class CartesianBox:
    """Box limits on the world position of the origin of one DH frame.

    Parameters
    ----------
    frame : int
        DH frame ``1..n`` (frame ``i`` is attached to link ``i``; paper: "the coordinate
        origins of the last two links").
    lower, upper : array_like, shape (3,)
        Bounds on ``(x, y, z)`` in the world frame, m; ``-inf`` / ``inf`` for none.
    """

    frame: int
    lower: np.ndarray = field(default_factory=lambda: np.full(3, -np.inf))
    upper: np.ndarray = field(default_factory=lambda: np.full(3, np.inf))

    def __post_init__(self):
        if isinstance(self.frame, bool) or not isinstance(self.frame, (int, np.integer)) \
                or self.frame < 1:
            raise ValueError(f"box frame must be a DH frame number >= 1, not {self.frame!r}")
        object.__setattr__(self, "frame", int(self.frame))
        for name in ("lower", "upper"):
            value = np.array(getattr(self, name), dtype=float)
            if value.shape != (3,) or np.any(np.isnan(value)):
                raise ValueError(f"box {name} must be 3 numbers (x, y, z; +-inf for none), not "
                                 f"{getattr(self, name)!r}")
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        if np.any(self.lower > self.upper):
            raise ValueError(f"box lower {self.lower.tolist()} exceeds upper "
                             f"{self.upper.tolist()}")


@dataclass(frozen=True)
class ExcitationLimits:
    """Limits of the excitation optimisation, eq. (24).

    Parameters
    ----------
    q_min, q_max : array_like, shape (n,)
        Joint position limits, rad.
    qd_max, qdd_max : array_like, shape (n,)
        Joint velocity (rad/s) and acceleration (rad/s^2) limits, positive; symmetric.
    boxes : tuple of CartesianBox
        Cartesian limits on DH frame origins.
    """

    q_min: np.ndarray
    q_max: np.ndarray
    qd_max: np.ndarray
    qdd_max: np.ndarray
    boxes: tuple = ()

    def __post_init__(self):
        arrays = []
        for name in ("q_min", "q_max", "qd_max", "qdd_max"):
            value = np.array(getattr(self, name), dtype=float)
            if value.ndim != 1 or not np.all(np.isfinite(value)):
                raise ValueError(f"{name} must be a finite vector, not {getattr(self, name)!r}")
            arrays.append(value)
        if len({a.shape for a in arrays}) != 1:
            raise ValueError(f"limits must all have the same length, not "
                             f"{[a.shape[0] for a in arrays]}")
        q_min, q_max, qd_max, qdd_max = arrays
        if np.any(q_min >= q_max):
            raise ValueError(f"q_min must be below q_max for every joint: {q_min.tolist()} / "
                             f"{q_max.tolist()}")
        if np.any(qd_max <= 0) or np.any(qdd_max <= 0):
            raise ValueError("qd_max and qdd_max must be positive")
        for name, value in zip(("q_min", "q_max", "qd_max", "qdd_max"), arrays):
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        boxes = tuple(self.boxes)
        for box in boxes:
            if not isinstance(box, CartesianBox):
                raise TypeError(f"boxes must be CartesianBox objects, not {box!r}")
            if box.frame > q_min.shape[0]:
                raise ValueError(f"box frame {box.frame} does not exist: the robot has "
                                 f"{q_min.shape[0]} DH frames after the base")
        object.__setattr__(self, "boxes", boxes)

    @property
    def n(self):
        """int: number of joints."""
        return self.q_min.shape[0]

    @classmethod
    def from_robot(cls, robot, *, boxes=(), qd_max=None, qdd_max=None,
                   default_qd_max=DEFAULT_QD_MAX, default_qdd_max=DEFAULT_QDD_MAX):
        """Take the limits from the robot description.

        Joints without a position limit get ``±pi``; without a velocity or acceleration limit
        ``default_qd_max`` / ``default_qdd_max``. ``qd_max`` / ``qdd_max`` (scalar or per joint)
        override the description.
        """
        if not isinstance(robot, Robot):
            raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
        q_min, q_max = robot.q_limits()
        if qd_max is None:
            qd_max = [l.limits.qd_max or default_qd_max for l in robot.links]
        if qdd_max is None:
            qdd_max = [l.limits.qdd_max or default_qdd_max for l in robot.links]
        return cls(q_min, q_max, np.broadcast_to(np.asarray(qd_max, dtype=float), (robot.n,)),
                   np.broadcast_to(np.asarray(qdd_max, dtype=float), (robot.n,)), tuple(boxes))


@dataclass(frozen=True)
class ConstraintCheck:
    """Largest constraint violations of a trajectory, checked at a fixed step.

    ``q``, ``qd``, ``qdd`` (rad, rad/s, rad/s^2) and ``box`` (m) are the largest amounts by
    which a limit is exceeded (negative: the smallest distance to a limit, i.e. the slack).
    """

    dt: float
    samples: int
    q: float
    qd: float
    qdd: float
    box: float

    @property
    def ok(self):
        """bool: no limit is exceeded (by more than 1e-12)."""
        return max(self.q, self.qd, self.qdd, self.box) <= 1e-12

    def as_dict(self):
        """Return the fields and ``ok`` as plain Python values (for JSON)."""
        return {"dt_s": self.dt, "samples": self.samples, "q_rad": self.q, "qd_rad_s": self.qd,
                "qdd_rad_s2": self.qdd, "box_m": self.box, "ok": self.ok}


@dataclass(frozen=True)
class ExcitationResult:
    """Result of :func:`optimise_excitation`.

    Attributes
    ----------
    trajectory, initial : FadedTrajectory
        The optimised trajectory and the random start.
    criterion : str
        ``"d-optimality"`` or ``"condition"``.
    value, initial_value : float
        The criterion after and before (``-log det`` or ``log cond``; lower is better).
    condition, initial_condition : float
        Condition number of the column-normalised base regressor after and before.
    iterations : int
    seconds : float
    success : bool
        Whether SLSQP reported convergence.
    message : str
        SLSQP's message.
    check : ConstraintCheck
        The independent check of the optimised trajectory.
    base_parameter_count : int
    amplitude_scale : float
        1 unless the check at the fine step failed and the amplitudes were scaled down.
    """

    trajectory: FadedTrajectory
    initial: FadedTrajectory
    criterion: str
    value: float
    initial_value: float
    condition: float
    initial_condition: float
    iterations: int
    seconds: float
    success: bool
    message: str
    check: ConstraintCheck
    base_parameter_count: int
    amplitude_scale: float = 1.0


def _criterion_value(phi, criterion):
    """Return ``(value, A)`` with ``d value = <A, d phi>``."""
    if criterion == "d-optimality":
        m = phi.T @ phi
        sign, logdet = np.linalg.slogdet(m)
        if sign <= 0 or not np.isfinite(logdet):
            return 1e12, np.zeros_like(phi)
        return -logdet, -2.0 * np.linalg.solve(m, phi.T).T
    u, s, vt = np.linalg.svd(phi, full_matrices=False)
    if s[-1] <= 0:
        return 1e12, np.zeros_like(phi)
    value = math.log(s[0] / s[-1])
    a = np.outer(u[:, 0], vt[0]) / s[0] - np.outer(u[:, -1], vt[-1]) / s[-1]
    return value, a


def _normalised_condition(phi):
    norms = np.linalg.norm(phi, axis=0)
    norms[norms == 0] = 1.0
    return float(np.linalg.cond(phi / norms))


class _Objective:
    """The criterion of one period and its gradient in the Fourier coefficients."""

    def __init__(self, robot, columns, harmonics, omega_f, samples, criterion):
        self.robot = robot
        self.columns = columns
        self.n = robot.n
        self.criterion = criterion
        t = np.arange(samples) * (2 * math.pi / omega_f) / samples
        basis = FourierTrajectory(np.zeros(1), np.zeros((1, harmonics)),
                                  np.zeros((1, harmonics)), omega_f)
        self.g = [basis.basis(t, k) for k in range(3)]
        self._cache = {}

    def _states(self, x):
        c = x.reshape(self.n, -1)
        return [g @ c.T for g in self.g]

    def phi(self, x):
        q, qd, qdd = self._states(x)
        y = regressor(self.robot, q, qd, qdd)[..., self.columns]
        return y.reshape(-1, len(self.columns))

    def value(self, x):
        key = x.tobytes()
        if key not in self._cache:
            self._cache = {key: _criterion_value(self.phi(x), self.criterion)[0]}
        return self._cache[key]

    def gradient(self, x):
        n = self.n
        q, qd, qdd = self._states(x)
        k = q.shape[0]
        h = 1e-6
        count = 1 + 5 * n
        states = [np.broadcast_to(v, (count, k, n)).copy() for v in (q, qd, qdd)]
        for i in range(n):
            states[0][1 + i, :, i] += h
            states[0][1 + n + i, :, i] -= h
            states[1][1 + 2 * n + i, :, i] += h
            states[1][1 + 3 * n + i, :, i] -= h
            states[2][1 + 4 * n + i, :, i] += 1.0  # the regressor is linear in qdd
        y = regressor(self.robot, *states)[..., self.columns]  # (count, K, n, b)
        value, a = _criterion_value(y[0].reshape(-1, len(self.columns)), self.criterion)
        a = a.reshape(k, n, -1)
        gradient = np.zeros((n, self.g[0].shape[1]))
        for i in range(n):
            s_q = np.einsum("kjc,kjc->k", a, y[1 + i] - y[1 + n + i]) / (2 * h)
            s_qd = np.einsum("kjc,kjc->k", a, y[1 + 2 * n + i] - y[1 + 3 * n + i]) / (2 * h)
            s_qdd = np.einsum("kjc,kjc->k", a, y[1 + 4 * n + i] - y[0])
            gradient[i] = self.g[0].T @ s_q + self.g[1].T @ s_qd + self.g[2].T @ s_qdd
        self._cache = {x.tobytes(): value}
        return gradient.ravel()


def excitation_criterion(robot, trajectory, *, samples=100, criterion="d-optimality",
                         base=None):
    """Return the criterion of eq. (24) for one period of a Fourier trajectory.

    Parameters
    ----------
    robot : Robot
    trajectory : FourierTrajectory or FadedTrajectory
        For a faded trajectory its Fourier part (one period) is evaluated.
    samples : int
        Samples ``K`` per period.
    criterion : {"d-optimality", "condition"}
        ``-log det(Phi_bar^T Phi_bar)`` or ``log cond(Phi_bar)``; lower is better.
    base : BaseParameters, optional
        Default :func:`base_parameters` of the robot.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, not {criterion!r}")
    fourier = trajectory.fourier if isinstance(trajectory, FadedTrajectory) else trajectory
    base = base_parameters(robot) if base is None else base
    objective = _Objective(robot, base.independent, fourier.harmonics, fourier.omega_f,
                           samples, criterion)
    return float(objective.value(fourier.coefficients.ravel()))


def check_trajectory(robot, trajectory, limits, dt=1e-3):
    """Check a trajectory against the limits at every ``dt``, independently of the optimiser.

    Parameters
    ----------
    robot : Robot
    trajectory : FadedTrajectory
    limits : ExcitationLimits
    dt : float
        Check step, s.

    Returns
    -------
    ConstraintCheck
    """
    t = trajectory.sample_times(dt)
    q, qd, qdd = trajectory.evaluate(t)
    violation_q = float(np.max(np.maximum(q - limits.q_max, limits.q_min - q)))
    violation_qd = float(np.max(np.abs(qd) - limits.qd_max))
    violation_qdd = float(np.max(np.abs(qdd) - limits.qdd_max))
    violation_box = -np.inf
    if limits.boxes:
        origins = link_origins(robot, q)
        for box in limits.boxes:
            p = origins[:, box.frame, :]
            violation_box = max(violation_box, float(np.max(np.maximum(p - box.upper,
                                                                       box.lower - p))))
    return ConstraintCheck(float(dt), int(t.size), violation_q, violation_qd, violation_qdd,
                           float(violation_box))


def _constraint_times(trajectory, dt):
    t = trajectory.sample_times(dt)
    if t[-1] < trajectory.duration:
        t = np.append(t, trajectory.duration)
    return t


def _smooth_max(values, rho):
    """Return ``LSE_rho`` of ``values`` along axis 0 and its weights (the softmax).

    ``max(v) <= LSE_rho(v) = log(sum exp(rho v)) / rho <= max(v) + log(K) / rho``.
    """
    top = values.max(axis=0)
    e = np.exp(rho * (values - top))
    total = e.sum(axis=0)
    return top + np.log(total) / rho, e / total


class _JointConstraints:
    """Joint position, velocity and acceleration limits at the constraint times, aggregated per
    joint, derivative order and side by a smooth maximum (log-sum-exp), so that SLSQP sees
    ``6 n`` smooth constraints instead of one per sample. The log-sum-exp bounds the maximum from
    above; its sharpness ``rho = log(K) / (margin * scale)`` makes it at most ``margin`` of the
    position range or of the velocity / acceleration limit above the sampled maximum."""

    def __init__(self, trajectory, limits, times, margin):
        self.maps = [trajectory.linear_map(times, order) for order in range(3)]
        self.n = limits.n
        count = max(times.size, 2)
        scale = np.stack([limits.q_max - limits.q_min, limits.qd_max, limits.qdd_max])
        self.rho = math.log(count) / (max(margin, 1e-6) * scale)  # (3, n)
        self.upper = np.stack([limits.q_max, limits.qd_max, limits.qdd_max])
        self.lower = np.stack([limits.q_min, -limits.qd_max, -limits.qdd_max])

    def _parts(self, x):
        c = x.reshape(self.n, -1)
        for order, (g, offset) in enumerate(self.maps):
            values = g @ c.T + offset  # (K, n)
            yield order, g, values

    def value(self, x):
        result = []
        for order, _, values in self._parts(x):
            rho = self.rho[order]
            high, _ = _smooth_max((values - self.upper[order]) * rho, 1.0)
            low, _ = _smooth_max((self.lower[order] - values) * rho, 1.0)
            result += [-high / rho, -low / rho]
        return np.concatenate(result)

    def jacobian(self, x):
        width = x.size // self.n
        rows = []
        for order, g, values in self._parts(x):
            rho = self.rho[order]
            _, w_high = _smooth_max((values - self.upper[order]) * rho, 1.0)
            _, w_low = _smooth_max((self.lower[order] - values) * rho, 1.0)
            for weights, sign in ((w_high, -1.0), (w_low, 1.0)):
                block = np.zeros((self.n, self.n * width))
                for i in range(self.n):
                    block[i, i * width:(i + 1) * width] = sign * (weights[:, i] @ g)
                rows.append(block)
        return np.vstack(rows)


class _BoxConstraints:
    """Cartesian box limits at the constraint times, one smooth-maximum constraint per box, axis
    and side (as :class:`_JointConstraints`, sharpness ``log(K) / margin``), with the analytic
    Jacobian of the DH frame origins."""

    def __init__(self, robot, trajectory, limits, times, margin):
        self.robot = robot
        self.g, self.offset = trajectory.linear_map(times, 0)
        self.n = robot.n
        self.rho = math.log(max(times.size, 2)) / max(margin, 1e-9)
        self.entries = [(box.frame, axis, side, bound)
                        for box in limits.boxes for axis in range(3)
                        for side, bound in ((1.0, box.lower[axis]), (-1.0, box.upper[axis]))
                        if math.isfinite(bound)]

    def __bool__(self):
        return bool(self.entries)

    def _q(self, x):
        return self.g @ x.reshape(self.n, -1).T + self.offset

    def _violations(self, origins):
        # side * (bound - p) <= 0 is the constraint: for a lower bound p >= bound.
        return [(side * (bound - origins[:, frame, axis])) for frame, axis, side, bound
                in self.entries]

    def value(self, x):
        origins = link_origins(self.robot, self._q(x))
        return np.array([-_smooth_max(v * self.rho, 1.0)[0] / self.rho
                         for v in self._violations(origins)])

    def sampled(self, x):
        """Return the smallest slack over the samples, m (>= 0: inside every box)."""
        origins = link_origins(self.robot, self._q(x))
        return min(float(np.min(-v)) for v in self._violations(origins))

    def jacobian(self, x):
        q = self._q(x)
        origins = link_origins(self.robot, q)
        jacobians = {}
        rows = []
        for (frame, axis, side, _), v in zip(self.entries, self._violations(origins)):
            if frame not in jacobians:
                jacobians[frame] = jacobian(self.robot, q, frame)[..., :3, :]  # (K, 3, n)
            _, weights = _smooth_max(v * self.rho, 1.0)
            j = jacobians[frame][:, axis, :]  # (K, n): d p / d q
            # d(-LSE)/dx = sum_k w_k * side * d p_k / d x
            rows.append(side * np.einsum("k,ki,km->im", weights, j, self.g).ravel())
        return np.array(rows)


def random_start(robot, limits, harmonics, omega_f, rng, *, center=None, fraction=0.5,
                 periods=1, constraint_dt=0.05, box_margin=0.01):
    """Return a random trajectory that satisfies the limits (the optimiser's start).

    Coefficients ``a_{i,h}, b_{i,h}`` are uniform in ``±1/h`` and then scaled per joint so that
    position excursion, velocity and acceleration use ``fraction`` of the room the limits leave
    around ``center`` (fade-in and fade-out included); while a Cartesian box is violated, the
    amplitudes shrink by 0.7.

    Parameters
    ----------
    robot : Robot
    limits : ExcitationLimits
    harmonics : int
    omega_f : float
        rad/s.
    rng : numpy.random.Generator
    center : array_like, shape (n,), optional
        The offsets ``q_{i,0}`` (and rest pose); default the middle of the position limits.
    fraction : float
        Share of the room used, in (0, 1].

    Raises
    ------
    ValueError
        If ``center`` is outside the position limits or violates a Cartesian box.
    """
    n = limits.n
    center = (limits.q_min + limits.q_max) / 2 if center is None else \
        np.asarray(center, dtype=float)
    if center.shape != (n,):
        raise ValueError(f"center must have {n} values, not {center.shape}")
    if np.any(center <= limits.q_min) or np.any(center >= limits.q_max):
        raise ValueError(f"center {center.tolist()} is not inside the joint position limits")
    unit = FadedTrajectory(FourierTrajectory(center, np.zeros((n, harmonics)),
                                             np.zeros((n, harmonics)), omega_f),
                           periods=periods)
    times = _constraint_times(unit, constraint_dt)
    if limits.boxes:
        _check_center_in_boxes(robot, limits, center)
    h = np.arange(1, harmonics + 1)
    a = rng.uniform(-1, 1, (n, harmonics)) / h
    b = rng.uniform(-1, 1, (n, harmonics)) / h
    trial = FadedTrajectory(FourierTrajectory(center, a, b, omega_f), periods=periods)
    q, qd, qdd = trial.evaluate(times)
    deviation = q - center
    with np.errstate(divide="ignore"):
        room = np.min(np.stack([
            (limits.q_max - center) / np.maximum(deviation.max(axis=0), 1e-300),
            (center - limits.q_min) / np.maximum(-deviation.min(axis=0), 1e-300),
            limits.qd_max / np.abs(qd).max(axis=0),
            limits.qdd_max / np.abs(qdd).max(axis=0)]), axis=0)
    scale = fraction * room
    for _ in range(40):
        trajectory = FadedTrajectory(
            FourierTrajectory(center, a * scale[:, None], b * scale[:, None], omega_f),
            periods=periods)
        if not limits.boxes or _BoxConstraints(robot, trajectory, limits, times, box_margin) \
                .sampled(trajectory.fourier.coefficients.ravel()) >= box_margin:
            return trajectory
        scale = 0.7 * scale
    return trajectory


def _check_center_in_boxes(robot, limits, center):
    origins = link_origins(robot, center)
    for box in limits.boxes:
        p = origins[box.frame]
        if np.any(p < box.lower) or np.any(p > box.upper):
            raise ValueError(
                f"the centre pose {np.round(center, 4).tolist()} puts the origin of DH frame "
                f"{box.frame} at {np.round(p, 4).tolist()} m, outside its box "
                f"{box.lower.tolist()}..{box.upper.tolist()}; give another centre pose")


def _shrink_to_feasible(robot, trajectory, limits, dt):
    """Scale the amplitudes down until :func:`check_trajectory` passes (bisection).

    With the rest pose at the offsets, ``q - q0``, ``qd`` and ``qdd`` scale linearly with the
    amplitudes, so the trajectory is sampled once; only the Cartesian boxes need the forward
    kinematics again for every trial scale.
    """
    fourier = trajectory.fourier
    t = trajectory.sample_times(dt)
    q, qd, qdd = trajectory.evaluate(t)
    center = trajectory.rest_pose

    def feasible(factor):
        qs = center + factor * (q - center)
        if np.any(qs > limits.q_max) or np.any(qs < limits.q_min) \
                or np.any(factor * np.abs(qd) > limits.qd_max) \
                or np.any(factor * np.abs(qdd) > limits.qdd_max):
            return False
        if limits.boxes:
            origins = link_origins(robot, qs)
            for box in limits.boxes:
                p = origins[:, box.frame, :]
                if np.any(p > box.upper) or np.any(p < box.lower):
                    return False
        return True

    low, high = 0.0, 1.0
    for _ in range(14):
        middle = (low + high) / 2
        if feasible(middle):
            low = middle
        else:
            high = middle
    shrunk = FadedTrajectory(FourierTrajectory(fourier.q0, fourier.a * low, fourier.b * low,
                                               fourier.omega_f),
                             trajectory.rest, trajectory.periods, trajectory.fade)
    return shrunk, low


def optimise_excitation(robot, *, harmonics=5, period=10.0, limits=None, criterion="d-optimality",
                        samples=100, constraint_dt=0.05, margin=0.01, box_margin=0.01,
                        max_iterations=100, seed=0, center=None, periods=1, check_dt=1e-3,
                        base=None, start=None, progress=True):
    """Optimise a Fourier excitation trajectory (paper eq. 24) with SLSQP.

    Parameters
    ----------
    robot : Robot
    harmonics : int
        Number of harmonics ``H`` (paper: 5).
    period : float
        Period ``T = 2 pi / omega_f``, s (paper: 10 s). The fade-in and fade-out last one period
        each.
    limits : ExcitationLimits, optional
        Default :meth:`ExcitationLimits.from_robot`.
    criterion : {"d-optimality", "condition"}
    samples : int
        Samples ``K`` of one period in the criterion.
    constraint_dt : float
        Step of the constraint samples over the whole run, s.
    margin : float
        Sharpness of the smooth maximum of the joint limits: it exceeds the sampled maximum by
        at most this share of the position range, of the velocity or acceleration limit.
    box_margin : float
        The same for the Cartesian boxes, m.
    max_iterations : int
        SLSQP iterations.
    seed : int
        Seed of the random start.
    center : array_like, shape (n,), optional
        Centre pose of the random start (:func:`random_start`).
    periods : int
        Excitation periods between the fades.
    check_dt : float
        Step of the final independent check, s (paper: ``T_s = 1 ms``).
    base : BaseParameters, optional
        Default :func:`base_parameters` of the robot.
    start : FadedTrajectory, optional
        Start instead of the random one.
    progress : bool
        Show a progress bar with the criterion (:func:`linkdyn.host.progress.progress_bar`).

    Returns
    -------
    ExcitationResult

    Raises
    ------
    ValueError
        If an argument is invalid, or the centre pose violates a Cartesian box.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if isinstance(harmonics, bool) or not isinstance(harmonics, int) or harmonics < 1:
        raise ValueError(f"harmonics must be a positive integer, not {harmonics!r}")
    period = float(period)
    if not math.isfinite(period) or period <= 0:
        raise ValueError(f"period must be a positive duration in s, not {period!r}")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, not {criterion!r}")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, not {samples!r}")
    if not 0 <= margin < 0.5:
        raise ValueError(f"margin must be in [0, 0.5), not {margin!r}")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) \
            or max_iterations < 0:
        raise ValueError(f"max_iterations must be a non-negative integer, not "
                         f"{max_iterations!r}")
    limits = ExcitationLimits.from_robot(robot) if limits is None else limits
    if limits.n != robot.n:
        raise ValueError(f"limits are for {limits.n} joints, the robot has {robot.n}")
    clock = time.perf_counter()
    omega_f = 2 * math.pi / period
    rng = np.random.default_rng(seed)
    if start is None:
        start = random_start(robot, limits, harmonics, omega_f, rng, center=center,
                             periods=periods, constraint_dt=constraint_dt,
                             box_margin=box_margin)
    base = base_parameters(robot) if base is None else base
    if samples * robot.n < base.count:
        raise ValueError(f"{samples} samples of {robot.n} joints cannot determine "
                         f"{base.count} base parameters; use more samples")
    objective = _Objective(robot, base.independent, harmonics, omega_f, samples, criterion)
    times = _constraint_times(start, constraint_dt)
    joints = _JointConstraints(start, limits, times, margin)
    constraints = [{"type": "ineq", "fun": joints.value, "jac": joints.jacobian}]
    boxes = _BoxConstraints(robot, start, limits, times, box_margin)
    if boxes:
        constraints.append({"type": "ineq", "fun": boxes.value, "jac": boxes.jacobian})
    x0 = start.fourier.coefficients.ravel()
    initial_value = objective.value(x0)
    bar = None
    if progress:
        from ..progress import progress_bar
        bar = progress_bar(max_iterations, desc=f"excitation ({criterion})", unit="it")
        bar.set_postfix(criterion=f"{initial_value:.4g}")
    iterations = [0]

    def callback(x):
        iterations[0] += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(criterion=f"{objective.value(x):.4g}")

    if max_iterations > 0:
        # SLSQP's first step is the scaled gradient (its Hessian estimate starts at identity):
        # scaling the criterion by 1 / |gradient| makes that step 1 rad long.
        scale = 1.0 / max(float(np.linalg.norm(objective.gradient(x0))), 1e-12)
        result = scipy.optimize.minimize(
            lambda x: scale * objective.value(x), x0,
            jac=lambda x: scale * objective.gradient(x), method="SLSQP",
            constraints=constraints, callback=callback,
            options={"maxiter": max_iterations, "ftol": 1e-9})
        x, success, message = result.x, bool(result.success), str(result.message)
        if objective.value(x) > initial_value:
            x, message = x0, message + " (no improvement; the start is returned)"
    else:
        x, success, message = x0, True, "no iterations requested"
    if bar is not None:
        bar.close()
    fourier = FourierTrajectory.from_coefficients(x.reshape(robot.n, -1), omega_f)
    trajectory = FadedTrajectory(fourier, start.rest, start.periods, start.fade)
    check = check_trajectory(robot, trajectory, limits, check_dt)
    amplitude_scale = 1.0
    if not check.ok:
        trajectory, amplitude_scale = _shrink_to_feasible(robot, trajectory, limits, check_dt)
        check = check_trajectory(robot, trajectory, limits, check_dt)
    value = objective.value(trajectory.fourier.coefficients.ravel())
    return ExcitationResult(
        trajectory=trajectory, initial=start, criterion=criterion, value=float(value),
        initial_value=float(initial_value),
        condition=_normalised_condition(objective.phi(trajectory.fourier.coefficients.ravel())),
        initial_condition=_normalised_condition(objective.phi(x0)),
        iterations=iterations[0], seconds=time.perf_counter() - clock, success=success,
        message=message, check=check, base_parameter_count=base.count,
        amplitude_scale=float(amplitude_scale))
