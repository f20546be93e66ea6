"""Directed worst-case search of the fixed-point torque error (a lower bound to the certificate).

:func:`linkdyn.model.certify.certify` bounds ``|tau_fixed - tau_exact|`` from above over a box
of states; random and corner states (:func:`linkdyn.model.certify.box_states`) bound the true
worst case from below, but only by the typical error (its many roundings partly cancel).
:func:`worst_case_search` looks for larger errors, per joint, by local search from the worst
sampled states, within the same box:

1. *sine table*: the table's error is a known function of the phase word (a scaling of the
   joint rotation by ``1 - phi``, ``phi`` largest in the middle of an interpolation segment
   and 0 at an entry, :func:`linkdyn.model.certify.sine_error_split`); a coordinate search puts
   each ``q_i`` on the nearest segment middle or entry, whichever the error of the joint asks
   for (the sign of its first-order sensitivity, found by trying both);
2. *velocity and acceleration*: each ``qd_i`` and ``qdd_i`` is tried at both ends of its range;
3. *roundings*: the Dot roundings are deterministic but chaotic functions of the state, so a
   (1 + lambda) random search moves ``q_i`` by whole interpolation segments (keeping the
   table's part) and ``qd``, ``qdd`` by small steps, keeping the best.

Every evaluated state lies in the box and is counted; the result is the largest error met, a
lower bound of the true worst case (as the sampled maximum is), with the state where it occurs.
The golden model (:func:`linkdyn.model.golden.rnea_fixed`, bit-exact with the gateware) is
compared with the float model (:func:`linkdyn.model.rnea`), as in
:func:`linkdyn.model.certify.sampled_error`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .golden import rnea_fixed
from .rnea import rnea
from .tables import SINE_TABLE

__all__ = ["SearchResult", "worst_case_search", "SEARCH_SEED"]

#: Seed of the search's random moves.
SEARCH_SEED = 20261202


@dataclass(frozen=True)
class SearchResult:
    """Result of :func:`worst_case_search`.

    Attributes
    ----------
    worst : numpy.ndarray, shape (n,)
        Per joint, the largest ``|tau_fixed - tau_exact|`` met over the searched states, N·m.
    states : tuple of (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        Per joint, the state ``(q, qd, qdd)`` (each shape (n,), rad, rad/s, rad/s^2) where its
        ``worst`` occurs.
    evaluated : int
        Number of states evaluated (each in the box).
    overflow : numpy.ndarray of bool, shape (n,)
        Per node, whether the golden model saturated on any searched state.
    """

    worst: np.ndarray
    states: tuple
    evaluated: int
    overflow: np.ndarray


class _Evaluator:
    """``|rnea_fixed - rnea|`` of many states at once, counting them."""

    def __init__(self, robot):
        self.robot = robot
        self.count = 0
        self.overflow = np.zeros(robot.n, dtype=bool)

    def __call__(self, q, qd, qdd):
        fixed = rnea_fixed(self.robot, q, qd, qdd)
        self.count += len(q)
        self.overflow |= np.any(fixed.overflow, axis=0)
        return np.abs(fixed.tau - rnea(self.robot, q, qd, qdd))


def _segment_positions(robot, q, table):
    """``q`` moved to the nearest interpolation-segment middle and entry (per component).

    The phase word is ``(q + offset) / (2 pi)`` turns of ``2**32``; a segment is
    ``2**fraction_bits`` words. Returns ``(middle, entry)``, arrays shaped like ``q``.
    """
    offset = np.array([link.offset for link in robot.links])
    words = (q + offset) / (2 * math.pi) * 2.0 ** 32
    width = 2.0 ** table.fraction_bits
    middle = (np.floor(words / width) + 0.5) * width
    entry = np.round(words / width) * width
    scale = 2 * math.pi / 2.0 ** 32
    return middle * scale - offset, entry * scale - offset


def worst_case_search(robot, box, start, *, rounds=40, population=64, keep=4,
                      seed=SEARCH_SEED, table=SINE_TABLE):
    """Search the box for states of large ``|tau_fixed - tau_exact|``, per joint.

    Parameters
    ----------
    robot : Robot
        The robot (revolute joints; no external wrench, no friction change).
    box : dict
        ``q_min``, ``q_max`` (rad), ``qd_max`` (rad/s), ``qdd_max`` (rad/s^2) per joint, as in
        :attr:`linkdyn.model.certify.Certificate.box`.
    start : (array_like, array_like, array_like)
        Starting states ``(q, qd, qdd)``, each shape (m, n), e.g. random and corner states of
        the box; per joint the ``keep`` worst of them start the search.
    rounds : int
        Rounds of the random search (step 3 of the module docstring).
    population : int
        Random moves per kept state and round.
    keep : int
        States kept per joint.
    seed : int
        Seed of the random moves.
    table : SineTable
        The node's sine table (its segment width places the moves of ``q``).

    Returns
    -------
    SearchResult

    Raises
    ------
    ValueError
        If the start states do not have shape (m, n) with ``m >= 1``, lie outside the box, or
        a count is not a positive integer (``rounds`` may be 0).
    """
    n = robot.n
    for name, value, low in (("rounds", rounds, 0), ("population", population, 1),
                             ("keep", keep, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, not {value!r}")
    q_min, q_max = np.asarray(box["q_min"], float), np.asarray(box["q_max"], float)
    qd_max, qdd_max = np.asarray(box["qd_max"], float), np.asarray(box["qdd_max"], float)
    try:
        q0, qd0, qdd0 = (np.asarray(x, dtype=float) for x in start)
    except (TypeError, ValueError):
        raise ValueError("start must be three arrays (q, qd, qdd)") from None
    if any(x.ndim != 2 or x.shape[1] != n or len(x) < 1 for x in (q0, qd0, qdd0)) \
            or not q0.shape == qd0.shape == qdd0.shape:
        raise ValueError(f"start states must have shape (m, {n}), m >= 1, not "
                         f"{q0.shape}, {qd0.shape}, {qdd0.shape}")
    tol = 1e-12
    if (np.any(q0 < q_min - tol) or np.any(q0 > q_max + tol) or np.any(np.abs(qd0) > qd_max + tol)
            or np.any(np.abs(qdd0) > qdd_max + tol)):
        raise ValueError("start states must lie in the box")

    evaluate = _Evaluator(robot)
    rng = np.random.default_rng([int(seed), n])

    def clip(q, qd, qdd):
        return (np.clip(q, q_min, q_max), np.clip(qd, -qd_max, qd_max),
                np.clip(qdd, -qdd_max, qdd_max))

    error0 = evaluate(q0, qd0, qdd0)
    best_error = error0.max(axis=0)
    best_state = [(q0[i], qd0[i], qdd0[i]) for i in np.argmax(error0, axis=0)]
    # Per joint j: the kept states (keep, n) and their error in joint j.
    kept = []
    for j in range(n):
        order = np.argsort(-error0[:, j])[:keep]
        kept.append([q0[order].copy(), qd0[order].copy(), qdd0[order].copy(),
                     error0[order, j].copy()])

    def step(candidates):
        """Evaluate per-joint candidate sets ``(q, qd, qdd, parent)`` at once; keep the
        better per parent."""
        sizes = [len(c[0]) for c in candidates]
        q = np.concatenate([c[0] for c in candidates])
        qd = np.concatenate([c[1] for c in candidates])
        qdd = np.concatenate([c[2] for c in candidates])
        error = evaluate(q, qd, qdd)
        start_at = 0
        for j, (c, size) in enumerate(zip(candidates, sizes)):
            e = error[start_at:start_at + size, j]
            parent = c[3]
            state = kept[j]
            for k in np.unique(parent):
                mine = np.flatnonzero(parent == k)
                best = mine[np.argmax(e[mine])]
                if e[best] > state[3][k]:
                    state[0][k], state[1][k], state[2][k] = c[0][best], c[1][best], c[2][best]
                    state[3][k] = e[best]
            top = int(np.argmax(e))
            if e[top] > best_error[j]:
                best_error[j] = e[top]
                best_state[j] = (c[0][top].copy(), c[1][top].copy(), c[2][top].copy())
            start_at += size

    # 1. and 2.: coordinate search over the table's positions and the rate bounds.
    for i in range(n):
        candidates = []
        for j in range(n):
            q, qd, qdd, _ = kept[j]
            middle, entry = _segment_positions(robot, q, table)
            options = []
            for column in (middle, entry):
                moved = q.copy()
                moved[:, i] = column[:, i]
                options.append((moved, qd.copy(), qdd.copy()))
            for sign in (-1.0, 1.0):
                moved = qd.copy()
                moved[:, i] = sign * qd_max[i]
                options.append((q.copy(), moved, qdd.copy()))
                moved = qdd.copy()
                moved[:, i] = sign * qdd_max[i]
                options.append((q.copy(), qd.copy(), moved))
            parent = np.tile(np.arange(len(q)), len(options))
            cq, cqd, cqdd = clip(*(np.concatenate([o[k] for o in options]) for k in range(3)))
            candidates.append((cq, cqd, cqdd, parent))
        step(candidates)

    # 3. Random search: q by whole segments, qd and qdd by small steps.
    segment = 2 * math.pi * 2.0 ** (table.fraction_bits - 32)
    for r in range(rounds):
        scale = 10.0 ** rng.uniform(-6, -2)
        candidates = []
        for j in range(n):
            q, qd, qdd, _ = kept[j]
            parent = np.repeat(np.arange(len(q)), population)
            shape = (len(parent), n)
            moved_q = q[parent] + segment * rng.integers(-3, 4, shape) \
                * (rng.random(shape) < 0.3)
            moved_qd = qd[parent] + scale * qd_max * rng.standard_normal(shape) \
                * (rng.random(shape) < 0.3)
            moved_qdd = qdd[parent] + scale * qdd_max * rng.standard_normal(shape) \
                * (rng.random(shape) < 0.3)
            candidates.append((*clip(moved_q, moved_qd, moved_qdd), parent))
        step(candidates)

    return SearchResult(best_error.copy(), tuple(best_state), evaluate.count,
                        evaluate.overflow.copy())
