"""Jerk-limited online time parameterisation along a joint path (seed 002, chapter 2).

Messner, Gattringer and Bremer, "Efficient online computation of smooth trajectories along
geometric paths for robotic manipulators": the state is ``x = (s, sd, sdd)``, the input the path
jerk ``u = sddd``, constant over a step ``T`` (eq. 2.15)::

    x_{k+1} = A x_k + b u_k,   A = [[1, T, T^2/2], [0, 1, T], [0, 0, 1]],
                               b = (T^3/6, T^2/2, T)

Limits on joint velocity, acceleration, jerk and torque (eqs. 2.6-2.11)::

    qd   = q' sd                     qdd = q'' sd^2 + q' sdd
    qddd = q''' sd^3 + 3 q'' sd sdd + q' u
    tau  = a0(s) + tau_F(q' sd) + a2(s) sd^2 + a3(s) sdd

(``a3 = M q'``, ``a2 = M q'' + C q'``, ``a0`` gravity; friction ``tau_F`` as in the source
paper, evaluated exactly) become, at each state, an interval ``[u_min, u_max]`` of admissible
jerks (Sect. 2.3.2): the jerk row at the current state, the velocity, acceleration and torque
rows at the next state. The seed estimates the next ``s`` and ``sd`` without the input (the
"Taylor estimate" ``x~ = A x``); here they are linearised about the previous input, which is
exact on constant-jerk arcs, and the jerk is also bounded at the end of the step (both ends of
the constant-jerk step, like an interpolation scheme: between 4 ms steps the jerk otherwise
overshot its limit by 6 %).

Time optimality puts ``u`` on a bound (eq. 2.14); to avoid states from which every continuation
violates a limit, each step tries ``u_max`` and accepts it only if a *test trajectory* from the
resulting state reaches rest: ``u_min`` for ``tau_2``, then ``u_max`` until ``sdd`` is back
at zero when ``sd`` reaches zero (Sect. 2.4.1; ``tau_2`` continuous, a fractional step blending
``u_min`` and ``u_max``, found by bisection and a secant). If the test fails, the step follows
the previous test trajectory instead (Sect. 2.4.2, step 4). When a test trajectory would run
past the end of the path, the input of the current step is chosen so that the test trajectory
ends at rest at the end (step 3) and the algorithm outputs it (step 7).

Two additions to the seed's description, both keep its guarantees (every accepted state has a
known continuation to rest): where maximal braking fails although a gentler stop exists (sharp
bends of the path, where ``3 q'' sd sdd`` outgrows the jerk limit), test trajectories brake with
``0.5 u_min`` or ``0.25 u_min`` before a state is declared not continuable (without this the UR10
figure-eight at 30 rad/s^3 came to a full stop half-way); and a test trajectory ends at
``sdd = 0`` with ``0 <= sd <= velocity_tolerance`` rather than exactly at rest, which keeps the
states exact solutions of eq. (2.15).

No public library implements this method; it is written here from the seed's description.
Limits hold at the step times ``t_k = k T``; between them the motion is the exact constant-jerk
motion of eq. (2.15), which :meth:`JerkLimitedLaw.evaluate` resamples at any rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from linkdyn.model import Robot

from .joint_path import JointPath
from .timing import Limits, TimingError, path_dynamics

__all__ = ["jerk_limited", "JerkLimitedLaw"]

#: The motion ends this close to the end of the path (in units of ``s``), with
#: ``0 <= sd <= velocity_tolerance`` and ``sdd = 0``.
END_TOLERANCE = 1e-6

# Outcomes of a test-trajectory simulation.
_REST, _FAIL_EARLY, _FAIL_LATE = "rest", "fail-early", "fail-late"


@dataclass(frozen=True)
class JerkLimitedLaw:
    """The result of :func:`jerk_limited`: states at the step times and the jerk inputs.

    Attributes
    ----------
    step : float
        Step ``T``, s.
    state : numpy.ndarray, shape (K + 1, 3)
        ``(s, sd, sdd)`` at ``t_k = k T``; the first and last are at rest.
    jerk : numpy.ndarray, shape (K,)
        Path jerk ``u_k`` over ``[t_k, t_k+1)``.
    tests : int
        Number of test trajectories computed.
    fallbacks : int
        Steps that followed a previous test trajectory because ``u_max`` was not continuable.
    """

    step: float
    state: np.ndarray
    jerk: np.ndarray
    tests: int
    fallbacks: int

    @property
    def duration(self):
        """float: time to the end of the path, s."""
        return self.step * len(self.jerk)

    @property
    def t(self):
        """numpy.ndarray, shape (K + 1,): step times, s."""
        return np.arange(len(self.state)) * self.step

    def evaluate(self, t):
        """Return ``(s, sd, sdd, sddd)`` at times ``t`` (exact constant-jerk motion).

        Times are clipped to ``[0, duration]``; at the end the state is at rest.
        """
        t = np.clip(np.asarray(t, dtype=float), 0.0, self.duration)
        k = np.clip(np.floor(t / self.step + 1e-9).astype(int), 0, len(self.jerk) - 1)
        tau = t - k * self.step
        s0, v0, a0 = self.state[k, 0], self.state[k, 1], self.state[k, 2]
        u = self.jerk[k]
        s = s0 + v0 * tau + a0 * tau ** 2 / 2 + u * tau ** 3 / 6
        sd = v0 + a0 * tau + u * tau ** 2 / 2
        sdd = a0 + u * tau
        return s, sd, sdd, u


class _Problem:
    """Coefficient tables on a uniform ``s`` grid and the admissible-jerk interval.

    Written with Python floats rather than numpy: the arrays are a handful of joints long and
    the interval is evaluated hundreds of times per step, where numpy's per-call overhead
    dominates.
    """

    def __init__(self, robot, path, limits, step, table_points):
        self.step = step
        self.s0, self.s1 = path.s_start, path.s_end
        grid = np.linspace(self.s0, self.s1, table_points)
        self.h = grid[1] - grid[0]
        d = path_dynamics(robot, path, grid)
        n = robot.n
        self.n = n
        # Columns: dq/ds, d2q/ds2, d3q/ds3, a0 (gravity + friction offset), a2 (= b), a3 (= a).
        table = np.concatenate([d.dq, d.ddq, d.dddq, d.c + d.offset, d.b, d.a], axis=1)
        self.table = [tuple(row) for row in table.tolist()]
        self.size = len(self.table)
        self.coulomb = d.coulomb.tolist()
        self.viscous = d.viscous.tolist()
        self.steepness = d.steepness.tolist()
        self.has_friction = bool(np.any(d.coulomb != 0) or np.any(d.viscous != 0))
        def finite(value):
            return None if value == math.inf else float(value)

        # Per joint: index and the finite limits (None: unlimited, the row is skipped).
        self.rows = [(j, finite(limits.jerk[j]), finite(limits.torque[j]),
                      finite(limits.acceleration[j]), finite(limits.velocity[j]))
                     for j in range(n)]

    def lookup(self, s):
        x = (min(max(s, self.s0), self.s1) - self.s0) / self.h
        i = min(int(x), self.size - 2)
        w = x - i
        r0, r1 = self.table[i], self.table[i + 1]
        return [p + w * (q - p) for p, q in zip(r0, r1)]

    def interval(self, s, v, a, guess):
        """Return ``(u_min, u_max)`` at state ``(s, v, a)``; ``u_min > u_max`` if empty.

        Every row reads ``|slope u + value| <= bound``. The next-state rows are linearised in
        ``u`` about ``guess`` (their ``sd^2`` and friction terms depend on ``u`` through
        ``sd_{k+1} = sd + T sdd + T^2 u / 2``).
        """
        T = self.step
        n = self.n
        half = T * T / 2
        now = self.lookup(s)
        v_next = v + T * a + half * guess
        a_next = a + T * guess
        nxt = self.lookup(s + T * v + half * a + T ** 3 * guess / 6)
        low, high = -math.inf, math.inf
        for j, jerk, torque_limit, acceleration, velocity in self.rows:
            dq_n, ddq_n = nxt[j], nxt[n + j]
            rows = []
            if velocity is not None:          # velocity at the next state: linear in u
                rows.append((dq_n * half, dq_n * (v + T * a), velocity))
            if acceleration is not None:      # acceleration at the next state
                slope = 2 * ddq_n * v_next * half + dq_n * T
                rows.append((slope, ddq_n * v_next * v_next + dq_n * a_next - slope * guess,
                             acceleration))
            if torque_limit is not None:      # torque at the next state, friction exact
                a2, a3 = nxt[4 * n + j], nxt[5 * n + j]
                slope = 2 * a2 * v_next * half + a3 * T
                value = nxt[3 * n + j] + a2 * v_next * v_next + a3 * a_next
                if self.has_friction:
                    qd = dq_n * v_next
                    k = self.steepness[j]
                    value += self.coulomb[j] * math.atan(k * qd) + self.viscous[j] * qd
                    slope += (self.coulomb[j] * k * dq_n / (1 + (k * qd) ** 2)
                              + self.viscous[j] * dq_n) * half
                rows.append((slope, value - slope * guess, torque_limit))
            if jerk is not None:
                # Jerk at the current state (exact) and at the end of the step: the input acts
                # over the whole step, so both ends are checked (an interpolation scheme).
                rows.append((now[j], now[2 * n + j] * v ** 3 + 3 * now[n + j] * v * a, jerk))
                dddq_n = nxt[2 * n + j]
                slope = (3 * dddq_n * v_next * v_next * half
                         + 3 * ddq_n * (half * a_next + v_next * T) + dq_n)
                value = dddq_n * v_next ** 3 + 3 * ddq_n * v_next * a_next + dq_n * guess
                rows.append((slope, value - slope * guess, jerk))
            for slope, value, bound in rows:
                if slope > 1e-12:
                    high = min(high, (bound - value) / slope)
                    low = max(low, (-bound - value) / slope)
                elif slope < -1e-12:
                    high = min(high, (-bound - value) / slope)
                    low = max(low, (bound - value) / slope)
                elif abs(value) > bound * (1 + 1e-9):
                    return math.inf, -math.inf
        return low, high


def _advance(state, u, T):
    s, v, a = state
    return (s + T * v + T * T * a / 2 + T ** 3 * u / 6, v + T * a + T * T * u / 2, a + T * u)


class _Planner:
    """The online algorithm of seed 002 Sect. 2.4.2."""

    def __init__(self, problem, velocity_tolerance, max_test_steps):
        self.p = problem
        self.tolerance = velocity_tolerance
        self.max_steps = max_test_steps
        self.tests = 0

    # -- test trajectories ---------------------------------------------------------------------

    def _phase_b(self, state, u_first, guess, record):
        """From ``state``, apply ``u_first`` once then ``u_max`` until ``sdd`` returns to 0.

        Returns ``(outcome, value, states, inputs)``. ``value`` is continuous and decreasing in
        the braking before: the speed left when ``sdd`` reaches 0 (``>= 0``), or, when the
        speed reaches 0 first, ``T`` times the (negative) path acceleration at that instant.
        It is 0 exactly when speed and acceleration vanish together: rest.
        """
        p, T = self.p, self.p.step
        states, inputs = [], []
        u = u_first
        for j in range(self.max_steps):
            s, v, a = state
            if j > 0:
                low, high = p.interval(s, v, a, guess)
                if low > high:
                    return _FAIL_LATE, math.inf, states, inputs
                u = high
                if a >= 0:
                    return _REST, v, states, inputs
            if a < 0 and a + T * u >= 0:
                u = -a / T
                nxt = _advance(state, u, T)
                if nxt[1] >= 0:
                    nxt = (nxt[0], nxt[1], 0.0)
                    if record:
                        states.append(nxt)
                        inputs.append(u)
                    return _REST, nxt[1], states, inputs
            else:
                nxt = _advance(state, u, T)
            if nxt[1] < 0:
                # Speed reaches 0 within this step, at tau: v + a tau + u tau^2 / 2 = 0.
                if abs(u) > 1e-300:
                    disc = max(a * a - 2 * u * v, 0.0)
                    roots = [(-a - math.sqrt(disc)) / u, (-a + math.sqrt(disc)) / u]
                    tau = min((r for r in roots if 0 <= r <= T * (1 + 1e-12)), default=T)
                else:
                    tau = -v / a if a < 0 else T
                if record:
                    states.append(nxt)
                    inputs.append(u)
                return _REST, T * min(a + u * tau, 0.0), states, inputs
            if record:
                states.append(nxt)
                inputs.append(u)
            guess = u
            state = nxt
        return _FAIL_LATE, math.inf, states, inputs

    #: Braking strengths tried for a test trajectory, strongest first (see :meth:`test`).
    BRAKING = (1.0, 0.5, 0.25)

    def test(self, start, first_input=None, tolerance=None, scales=None):
        """Return a stop trajectory from ``start`` ending at rest, or ``None``.

        With ``first_input`` the first step uses it (then the braking profile starts at the
        second state). Returns ``(states, inputs, reaches_end)`` with ``states[0] == start``;
        the last state has ``sdd = 0`` and ``0 <= sd <= tolerance`` (default: the planner's).

        The braking profile is the seed's: ``u_min`` for ``mu`` steps (a fractional step
        blends it with ``u_max``), then ``u_max`` until ``sdd = 0``; ``mu`` is the root of the
        speed left at that moment, bracketed around a guess from the braking profile and
        refined by bisection over whole steps and a secant within one. Maximal braking can fail
        where the path bends sharply (the ``3 q'' sd sdd`` part of the joint jerk outgrows the
        limit at large ``|sdd|``) although a gentler stop exists, so when it fails the braking
        input is weakened to ``BRAKING`` times ``u_min`` (bounded by the admissible interval)
        before the state is declared not continuable. A stop that stays on the path is preferred
        to one that runs past its end. The result's fourth entry is the braking scale used;
        ``scales`` restricts the ones tried.
        """
        self.tests += 1
        tol = self.tolerance if tolerance is None else tolerance
        past_end = None
        for scale in (self.BRAKING if scales is None else scales):
            result = self._test(start, first_input, tol, scale)
            if result is not None:
                if not result[2]:
                    return result
                past_end = past_end or result
        return past_end

    def _test(self, start, first_input, tol, scale):
        """One stop trajectory with braking input ``scale * u_min`` (see :meth:`test`)."""
        p, T = self.p, self.p.step
        states, inputs = [start], []
        state, guess = start, 0.0
        if first_input is not None:
            state = _advance(start, first_input, T)
            states.append(state)
            inputs.append(first_input)
            guess = first_input
        phase_a = [(state, guess)]     # state before braking step j, and its linearisation
        bounds = []                    # (braking input, u_max) at phase_a[j] (None: empty)
        ended = [False]

        def extend(upto):
            while len(bounds) <= upto and not ended[0]:
                here, g = phase_a[len(bounds)]
                low, high = p.interval(here[0], here[1], here[2], g)
                if low > high:
                    bounds.append(None)
                    ended[0] = True
                    return
                brake = low
                if scale < 1.0 and low < 0:
                    brake = min(scale * low, high)
                bounds.append((brake, high))
                nxt = _advance(here, brake, T)
                if nxt[1] < 0 or len(bounds) >= self.max_steps:
                    ended[0] = True
                    return
                phase_a.append((nxt, brake))

        def outcome(mu, record=False):
            """``(kind, speed left, tail states, tail inputs)`` after ``mu`` braking steps."""
            m = int(math.floor(mu))
            extend(m)
            if m >= len(bounds) or bounds[m] is None:
                return _FAIL_EARLY, -math.inf, None, None
            frac = mu - m
            low, high = bounds[m]
            here, g = phase_a[m]
            kind, speed, tail, tail_inputs = self._phase_b(here, frac * low + (1 - frac) * high,
                                                           g, record)
            if kind == _FAIL_LATE:
                return _FAIL_LATE, math.inf, None, None
            return kind, speed, tail, tail_inputs

        def value(mu):
            return outcome(mu)[1]

        # Guess the switching step from phase A: releasing the brake at step j with the jerk
        # u_max ends with about sd_j - sdd_j^2 / (2 u_max) left; the guess is the last step
        # where that is still positive.
        m = 0
        while True:
            extend(m)
            if m >= len(bounds) or bounds[m] is None:
                m = max(m - 1, 0)
                break
            (s_j, v_j, a_j), _ = phase_a[m]
            high = bounds[m][1]
            left = v_j - a_j * a_j / (2 * high) if (a_j < 0 and high > 0) else v_j
            if left <= 0:
                m = max(m - 1, 0)
                break
            m += 1
        # Bracket over whole steps. A phase B without admissible inputs (FAIL_LATE, value +inf)
        # ends the test: declaring a state not continuable is always safe (the previous test
        # trajectory is followed instead).
        g = value(m)
        if not math.isfinite(g) and g > 0:
            return None
        if 0 <= g <= tol:
            lo_mu = hi_mu = float(m)
            g_lo = g
        elif g > tol:
            lo_mu, g_lo = float(m), g
            width = 1
            while True:
                trial = lo_mu + width
                g = value(trial)
                if g > tol:
                    if not math.isfinite(g):
                        return None
                    lo_mu, g_lo = trial, g
                    width *= 2
                    if lo_mu > self.max_steps:
                        return None
                elif g >= 0:
                    lo_mu, g_lo = trial, g
                    hi_mu = trial + 1
                    break
                else:
                    hi_mu = trial
                    break
        else:
            hi_mu = float(m)
            width = 1
            while True:
                if hi_mu <= 0:
                    return None          # braking at once already stops too hard: stuck
                trial = max(hi_mu - width, 0.0)
                g = value(trial)
                if g < 0:
                    hi_mu = trial
                    width *= 2
                else:
                    if not math.isfinite(g):
                        return None
                    lo_mu, g_lo = trial, g
                    break
        # Whole steps by bisection.
        while hi_mu - lo_mu > 1 and not 0 <= g_lo <= tol:
            mid = float(math.floor((lo_mu + hi_mu) / 2))
            g = value(mid)
            if g >= 0:
                if not math.isfinite(g):
                    return None
                lo_mu, g_lo = mid, g
            else:
                hi_mu = mid
        # Within the step. The value is smooth where it is positive (the speed left) and has a
        # square-root kink at the root on the negative side, so the root is approached from the
        # positive side: secant through the last two positive points, aimed 2 % short of the
        # root, else bisection. Accepted: 0 <= value <= tol (the stop ends at sdd = 0 with a
        # speed of at most tol: at rest for every practical purpose, and a real state).
        previous = None
        for _ in range(60):
            if 0 <= g_lo <= tol or hi_mu - lo_mu < 1e-13:
                break
            mid = None
            if previous is not None:
                mu_p, g_p = previous
                if g_p > g_lo:
                    root = lo_mu + g_lo * (lo_mu - mu_p) / (g_p - g_lo)
                    mid = lo_mu + 0.98 * (root - lo_mu)
            if mid is None or not lo_mu < mid < hi_mu:
                mid = (lo_mu + hi_mu) / 2
            g = value(mid)
            if g >= 0:
                if not math.isfinite(g):
                    return None
                previous = (lo_mu, g_lo)
                lo_mu, g_lo = mid, g
            else:
                hi_mu = mid
        if not 0 <= g_lo <= tol:
            return None
        mu = lo_mu
        kind, g, tail, tail_inputs = outcome(mu, record=True)
        if kind != _REST or not 0 <= g <= tol:
            return None
        m = int(math.floor(mu))
        states.extend(st for st, _ in phase_a[1:m + 1])
        inputs.extend(b[0] for b in bounds[:m])
        states.extend(tail)
        inputs.extend(tail_inputs)
        if any(st[1] < 0 for st in states):
            return None
        reaches_end = any(st[0] > p.s1 for st in states)
        return states, inputs, reaches_end, scale


def jerk_limited(robot, path, limits, *, step=0.004, margin=1.0, table_points=None,
                 velocity_tolerance=1e-6, max_steps=None, progress=False):
    """Return the jerk-limited, near time-optimal time law of seed 002, chapter 2.

    Parameters
    ----------
    robot : Robot
        The robot (torques from :func:`linkdyn.model.rnea`, friction included).
    path : JointPath
        The geometric path; the motion starts and ends at rest.
    limits : Limits
        Joint velocity, acceleration, jerk and torque limits (``inf`` = none; a finite jerk
        limit is what this method is for).
    step : float
        Step ``T`` of the algorithm, s (limits are enforced at the step times).
    margin : float
        The limits are multiplied by this factor (``<= 1``) to absorb what happens between
        step times.
    table_points : int, optional
        Points of the coefficient tables along ``s`` (linear interpolation); default
        ``max(2000, 200 * length)``.
    velocity_tolerance : float
        A test trajectory ends when ``sdd = 0`` and ``0 <= sd <=`` this (1/s in units of ``s``);
        so does the motion, within ``END_TOLERANCE`` of the end of the path (the last state is
        kept as computed, not rounded to rest, so the samples stay consistent).
    max_steps : int, optional
        Give up after this many steps (default: 100 times the steps of a slow crawl).
    progress : bool
        Show a progress bar over the path coordinate (:func:`linkdyn.host.progress.progress_bar`).

    Returns
    -------
    JerkLimitedLaw

    Raises
    ------
    TimingError
        If no continuable start exists or the algorithm does not reach the end.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if not isinstance(path, JointPath):
        raise TypeError(f"path must be a JointPath, not {type(path).__name__}")
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits, not {type(limits).__name__}")
    step = float(step)
    if not 0 < step <= 0.1:
        raise ValueError(f"step must be in (0, 0.1] s, not {step!r}")
    if not np.any(np.isfinite(limits.jerk)) and not np.any(np.isfinite(limits.acceleration)):
        raise ValueError("jerk_limited needs a jerk (or at least an acceleration) limit")
    if margin != 1.0:
        limits = limits.scaled(margin)
    points = table_points or int(max(2000, 200 * path.length))
    problem = _Problem(robot, path, limits, step, points)
    planner = _Planner(problem, velocity_tolerance, max_test_steps=int(60.0 / step))
    end = path.s_end
    state = (path.s_start, 0.0, 0.0)
    states, inputs = [state], []
    fallback = None            # (states, inputs) of the last accepted test trajectory
    fallbacks = 0
    bar = None
    if progress:
        from ..progress import progress_bar
        bar = progress_bar(round(path.length, 6), desc="jerk-limited timing", unit="rad",
                           mininterval=0.5, postfix_format="{:.3f}",
                           bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} {unit} "
                                      "[{elapsed}<{remaining}]")
    limit_steps = max_steps or 10_000_000
    guess = 0.0
    for _ in range(limit_steps):
        s, v, a = state
        low, high = problem.interval(s, v, a, guess)
        test = None
        if low <= high:
            test = planner.test(state, first_input=high)
        if test is not None and test[2]:
            base = fallback[1][0] if fallback is not None and len(fallback[1]) else 0.0
            final = _final_approach(planner, state, min(max(base, low), high), high, end,
                                    scale=test[3])
            if final is not None:
                states.extend(final[0][1:])
                inputs.extend(final[1])
                state = states[-1]
                if bar is not None:
                    bar.update(bar.total - bar.n)
                break
            test = None
        if test is not None:
            inputs.append(high)
            state = test[0][1]
            fallback = (test[0][1:], test[1][1:])
            guess = high
        else:
            if fallback is None or len(fallback[1]) == 0:
                raise TimingError(
                    f"the jerk-limited method found no continuable state at s = {s:.6g} "
                    f"(sd = {v:.6g}, sdd = {a:.6g}); limits too tight for this path?")
            fallbacks += 1
            inputs.append(fallback[1][0])
            guess = fallback[1][0]
            state = fallback[0][1]
            fallback = (fallback[0][1:], fallback[1][1:])
        states.append(state)
        if bar is not None:
            bar.update(max(0.0, min(state[0], end) - path.s_start - bar.n))
    else:
        raise TimingError(f"the jerk-limited method did not reach the end in {limit_steps} steps")
    if bar is not None:
        bar.close()
    state_array = np.array(states, dtype=float)
    if (abs(state_array[-1, 0] - end) > END_TOLERANCE
            or not 0 <= state_array[-1, 1] <= velocity_tolerance):
        raise TimingError("internal error: the jerk-limited method did not end at rest at the "
                          f"end of the path (s = {state_array[-1, 0]!r} of {end!r})")
    return JerkLimitedLaw(step, state_array, np.array(inputs, dtype=float), planner.tests,
                          fallbacks)


def _final_approach(planner, state, low, high, end, scale=1.0):
    """Choose this step's input in ``[low, high]`` so that the stop ends at ``end``.

    ``low`` is the input of a known stop that ends before ``end`` (the previous test
    trajectory's), ``high`` one whose stop runs past it. Returns the stop trajectory, or
    ``None`` if no stop within ``END_TOLERANCE`` of ``end`` is found (the main loop then
    carries on and tries again). Every stop uses the braking ``scale`` of the test that ran
    past the end, so that where it ends varies continuously with the input.
    """
    def stop_at(rho):
        test = planner.test(state, first_input=low + rho * (high - low), scales=(scale,))
        if test is None:
            return None, None
        return test, test[0][-1][0]

    test0, s0 = stop_at(0.0)
    if test0 is None or s0 > end + END_TOLERANCE:
        return None
    best, s_best = test0, s0
    # Where the stop ends grows smoothly with rho: regula falsi (Illinois) on s_stop - end,
    # bisection while the upper end is unknown (a failed test).
    lo, f_lo = 0.0, s0 - end
    hi, f_hi = 1.0, None
    side = 0
    for _ in range(100):
        if end - s_best <= END_TOLERANCE or hi - lo < 1e-15:
            break
        if f_hi is None:
            mid = (lo + hi) / 2
        else:
            mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
            mid = min(max(mid, lo + 1e-6 * (hi - lo)), hi - 1e-6 * (hi - lo))
        test, s_mid = stop_at(mid)
        if test is None:
            hi, f_hi = mid, None
            continue
        if s_mid > end:
            hi, f_hi = mid, s_mid - end
            if side == 1:
                f_lo /= 2
            side = 1
        else:
            lo, f_lo = mid, s_mid - end
            best, s_best = test, s_mid
            if side == -1 and f_hi is not None:
                f_hi /= 2
            side = -1
    if abs(end - s_best) > END_TOLERANCE:
        return None
    return best
