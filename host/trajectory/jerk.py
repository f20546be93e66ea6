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
rows at the next state with the next ``s`` and ``sd`` estimated without the input's (small)
effect (the "Taylor estimate" ``x~ = A x + b u~``; here ``u~`` is the previous input instead
of 0, which makes the estimate exact on constant-jerk arcs).

Time optimality puts ``u`` on a bound (eq. 2.14); to avoid states from which every continuation
violates a limit, each step tries ``u_max`` and accepts it only if a *test trajectory* from the
resulting state reaches rest: ``u_min`` for ``tau_2``, then ``u_max`` until ``sdd`` is back
at zero exactly when ``sd`` reaches zero (Sect. 2.4.1; ``tau_2`` is found by bisection and
regula falsi, a fractional step blending ``u_min`` and ``u_max``). If the test fails, the step
follows the previous test trajectory instead (Sect. 2.4.2, step 4). When a test trajectory
would run past the end of the path, the input of the current step is chosen so that the test
trajectory ends at rest exactly at the end (step 3) and the algorithm outputs it (step 7).

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

# Outcomes of a test-trajectory simulation.
_REST, _FAIL_EARLY, _FAIL_LATE, _END = "rest", "fail-early", "fail-late", "end"


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
    """Coefficient tables on a uniform ``s`` grid and the admissible-jerk interval."""

    def __init__(self, robot, path, limits, step, table_points):
        self.step = step
        self.s0, self.s1 = path.s_start, path.s_end
        grid = np.linspace(self.s0, self.s1, table_points)
        self.h = grid[1] - grid[0]
        d = path_dynamics(robot, path, grid)
        n = robot.n
        self.n = n
        # Columns: q', q'', q''', a0 (gravity + friction offset), a2 (= b), a3 (= a).
        self.table = np.concatenate([d.dq, d.ddq, d.dddq, d.c + d.offset, d.b, d.a], axis=1)
        self.coulomb, self.viscous, self.steepness = d.coulomb, d.viscous, d.steepness
        self.has_friction = bool(np.any(d.coulomb != 0) or np.any(d.viscous != 0))
        self.limit = np.concatenate([limits.jerk, limits.torque, limits.acceleration,
                                     limits.velocity])
        self.finite = np.isfinite(self.limit)
        self.bound = self.limit[self.finite]

    def lookup(self, s):
        x = (min(max(s, self.s0), self.s1) - self.s0) / self.h
        i = min(int(x), len(self.table) - 2)
        w = x - i
        row = self.table[i]
        return row + w * (self.table[i + 1] - row)

    def interval(self, s, v, a, guess):
        """Return ``(u_min, u_max)`` at state ``(s, v, a)``; ``u_min > u_max`` if empty."""
        T = self.step
        n = self.n
        now = self.lookup(s)
        s_next = s + T * v + T * T * a / 2 + T ** 3 * guess / 6
        v_next = v + T * a + T * T * guess / 2
        nxt = self.lookup(s_next)
        dq, ddq, dddq = now[:n], now[n:2 * n], now[2 * n:3 * n]
        dq_n, ddq_n = nxt[:n], nxt[n:2 * n]
        a0, a2, a3 = nxt[3 * n:4 * n], nxt[4 * n:5 * n], nxt[5 * n:6 * n]
        torque = a0 + a2 * v_next * v_next + a3 * a
        if self.has_friction:
            qd = dq_n * v_next
            torque = torque + self.coulomb * np.arctan(self.steepness * qd) + self.viscous * qd
        coefficient = np.concatenate([dq, a3 * T, dq_n * T, dq_n * (T * T / 2)])[self.finite]
        base = np.concatenate([dddq * v ** 3 + 3 * ddq * v * a, torque,
                               ddq_n * v_next * v_next + dq_n * a,
                               dq_n * (v + T * a)])[self.finite]
        positive = coefficient > 1e-12
        negative = coefficient < -1e-12
        flat = ~(positive | negative)
        if np.any(flat) and np.any(np.abs(base[flat]) > self.bound[flat] * (1 + 1e-9)):
            return math.inf, -math.inf
        high = np.where(positive, self.bound - base, -self.bound - base)
        low = np.where(positive, -self.bound - base, self.bound - base)
        moving = ~flat
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_high = high[moving] / coefficient[moving]
            ratio_low = low[moving] / coefficient[moving]
        if len(ratio_high) == 0:
            return -math.inf, math.inf
        return float(np.max(ratio_low)), float(np.min(ratio_high))


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
        self.mu = 0.0            # warm start of the switching time, in steps

    # -- test trajectories ---------------------------------------------------------------------

    def _phase_b(self, state, u_first, guess, record):
        """From ``state``, apply ``u_first`` once then ``u_max`` until ``sdd`` returns to 0.

        Returns ``(outcome, v_end, states, inputs)``; ``v_end`` is the speed when ``sdd``
        reaches 0 (or goes negative first: too much braking).
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
            if a >= 0 and j > 0:
                return _REST, v, states, inputs
            if a + T * u >= 0 and a < 0:
                u = -a / T
                nxt = _advance(state, u, T)
                nxt = (nxt[0], nxt[1], 0.0)
                if record:
                    states.append(nxt)
                    inputs.append(u)
                return _REST, nxt[1], states, inputs
            nxt = _advance(state, u, T)
            if record:
                states.append(nxt)
                inputs.append(u)
            if nxt[1] < 0:
                return _REST, nxt[1], states, inputs
            guess = u
            state = nxt
        return _FAIL_LATE, math.inf, states, inputs

    def test(self, start, first_input=None):
        """Return a stop trajectory from ``start`` ending at rest, or ``None``.

        With ``first_input`` the first step uses it (then the braking profile starts at the
        second state). Returns ``(states, inputs, reaches_end)``: ``states[0] == start``.
        """
        self.tests += 1
        p, T = self.p, self.p.step
        states, inputs = [start], []
        state = start
        guess = 0.0
        if first_input is not None:
            state = _advance(start, first_input, T)
            states.append(state)
            inputs.append(first_input)
            guess = first_input
        # Phase A: maximal braking (u_min), recorded; stop once braking longer is pointless.
        phase_a = [(state, guess)]
        bounds = []
        for j in range(self.max_steps):
            s, v, a = state
            low, high = p.interval(s, v, a, guess)
            if low > high:
                # No admissible input: braking from here on is already too late.
                bounds.append(None)
                break
            bounds.append((low, high))
            nxt = _advance(state, low, T)
            if nxt[1] < 0:
                break
            guess = low
            state = nxt
            phase_a.append((state, guess))

        def outcome(mu, record=False):
            """Speed when sdd returns to 0 after mu steps of maximal braking."""
            m = int(math.floor(mu))
            frac = mu - m
            if m >= len(bounds) or bounds[m] is None:
                return _FAIL_EARLY, -math.inf, None, None
            state_m, guess_m = phase_a[m]
            low, high = bounds[m]
            u_first = frac * low + (1 - frac) * high
            result = self._phase_b(state_m, u_first, guess_m, record)
            if result[0] == _FAIL_LATE:
                return _FAIL_LATE, math.inf, None, None
            return result

        # Bracket the switching time mu: outcome decreasing in mu.
        limit = float(len(bounds))       # outcome(limit) is FAIL_EARLY: braked past rest
        if bounds and bounds[0] is None:
            return None
        lo_mu, hi_mu = 0.0, None
        g_lo = outcome(0.0)[1]
        if g_lo < -self.tolerance:
            return None       # even immediate braking-release overshoots: not continuable
        if abs(g_lo) > self.tolerance:
            step = 1.0
            trial = min(max(self.mu, 0.0), max(limit, 0))
            while True:
                kind, g, _, _ = outcome(trial)
                if kind == _FAIL_EARLY:
                    hi_mu, g_hi = trial, -math.inf
                    break
                if g > self.tolerance:
                    lo_mu, g_lo = trial, g
                    if trial >= limit:
                        return None
                    trial = min(trial + step, limit)
                    step *= 2
                elif g < -self.tolerance:
                    hi_mu, g_hi = trial, g
                    break
                else:
                    lo_mu = hi_mu = trial
                    g_lo = g_hi = g
                    break
            if hi_mu is not None and hi_mu > lo_mu:
                # Refine to integer steps by bisection, then regula falsi within the step.
                while hi_mu - lo_mu > 1.0:
                    mid = math.floor((lo_mu + hi_mu) / 2)
                    if mid <= lo_mu:
                        mid = lo_mu + 1.0
                    kind, g, _, _ = outcome(mid)
                    if kind == _FAIL_EARLY or g < -self.tolerance:
                        hi_mu, g_hi = mid, (g if kind != _FAIL_EARLY else -math.inf)
                    elif g > self.tolerance:
                        lo_mu, g_lo = mid, g
                    else:
                        lo_mu = hi_mu = mid
                        break
                side = 0
                for _ in range(60):
                    if hi_mu - lo_mu < 1e-12:
                        break
                    if math.isfinite(g_hi) and g_lo > g_hi:
                        mid = (lo_mu * (-g_hi) + hi_mu * g_lo) / (g_lo - g_hi)
                        mid = min(max(mid, lo_mu + 1e-3 * (hi_mu - lo_mu)),
                                  hi_mu - 1e-3 * (hi_mu - lo_mu))
                    else:
                        mid = (lo_mu + hi_mu) / 2
                    kind, g, _, _ = outcome(mid)
                    if kind == _FAIL_EARLY or g < -self.tolerance:
                        hi_mu, g_hi = mid, (g if kind != _FAIL_EARLY else -math.inf)
                        if side == -1:
                            g_lo /= 2
                        side = -1
                    elif g > self.tolerance:
                        lo_mu, g_lo = mid, g
                        if side == 1 and math.isfinite(g_hi):
                            g_hi /= 2
                        side = 1
                    else:
                        lo_mu = hi_mu = mid
                        break
                else:
                    return None
        mu = lo_mu if abs(g_lo) <= self.tolerance else hi_mu
        kind, g, tail_states, tail_inputs = outcome(mu, record=True)
        if kind != _REST or abs(g) > self.tolerance:
            return None
        self.mu = mu
        m = int(math.floor(mu))
        for state_j, guess_j in phase_a[1:m + 1]:
            states.append(state_j)
        inputs.extend(b[0] for b in bounds[:m])
        states.extend(tail_states)
        inputs.extend(tail_inputs)
        last = states[-1]
        states[-1] = (last[0], 0.0, 0.0)           # rest (|sd| <= tolerance)
        if any(st[1] < -self.tolerance for st in states):
            return None
        reaches_end = any(st[0] > self.p.s1 for st in states)
        return states, inputs, reaches_end


def jerk_limited(robot, path, limits, *, step=0.004, margin=1.0, table_points=None,
                 velocity_tolerance=1e-9, max_steps=None, progress=False):
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
        A test trajectory is at rest when ``|sd|`` is below this (1/s in units of ``s``).
    max_steps : int, optional
        Give up after this many steps (default: 100 times the steps of a slow crawl).
    progress : bool
        Show a progress bar (tqdm) over the path coordinate.

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
    planner = _Planner(problem, velocity_tolerance, max_test_steps=100000)
    end = path.s_end
    state = (path.s_start, 0.0, 0.0)
    states, inputs = [state], []
    fallback = None            # (states, inputs) of the last accepted test trajectory
    fallbacks = 0
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=round(path.length, 6), desc="jerk-limited timing", unit="rad",
                   leave=False, mininterval=0.5)
    limit_steps = max_steps or 10_000_000
    guess = 0.0
    for _ in range(limit_steps):
        s, v, a = state
        if end - s <= 1e-12 and abs(v) <= velocity_tolerance and abs(a) <= 1e-12:
            break
        low, high = problem.interval(s, v, a, guess)
        test = None
        if low <= high:
            test = planner.test(state, first_input=high)
        if test is not None and test[2]:
            base = fallback[1][0] if fallback is not None and len(fallback[1]) else 0.0
            final = _final_approach(planner, state, min(max(base, low), high), high, end)
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
    state_array[-1] = (end, 0.0, 0.0)
    return JerkLimitedLaw(step, state_array, np.array(inputs, dtype=float), planner.tests,
                          fallbacks)


def _final_approach(planner, state, low, high, end):
    """Choose this step's input in ``[low, high]`` so that the stop ends exactly at ``end``.

    ``low`` is the input of a known stop that ends before ``end`` (the previous test
    trajectory's), ``high`` one whose stop runs past it.
    """
    def stop_at(rho):
        test = planner.test(state, first_input=low + rho * (high - low))
        if test is None:
            return None, None
        return test, test[0][-1][0]

    test0, s0 = stop_at(0.0)
    if test0 is None or s0 > end + 1e-9:
        return None
    if abs(s0 - end) <= 1e-9:
        return test0
    lo, hi = 0.0, 1.0
    best = test0
    for _ in range(80):
        mid = (lo + hi) / 2
        test, s_mid = stop_at(mid)
        if test is None or s_mid > end:
            hi = mid
        else:
            lo, best = mid, test
            if end - s_mid <= 1e-9:
                break
    return best
