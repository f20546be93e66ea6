"""Reader for the ``panda-gaz2019`` data layout (real Franka Emika Panda excitation run).

The folder holds (see its README): ``exciting_traj_time.txt`` (N times), ``exciting_traj_
positions.txt``, ``exciting_traj_velocity.txt``, ``exciting_traj_torques.txt`` (N x 7 values, one
per line, sample-major), ``gen_q0.txt`` (7 initial positions) and ``gen_params.txt`` (14 x H
Fourier coefficients of the commanded trajectory, rows 1-7 ``a``, rows 8-14 ``b``).

The commanded trajectory (Gaz et al., RA-L 2019, supplementary material Sect. II, and their
generator ``AutomaticExcTrjGen.m``) is a Fourier series in velocity form between two cosine
velocity ramps of ``ramp / 2`` seconds each:

* ramp-up, ``0 <= s < ramp/2``: ``qd = A/2 (1 - cos(2 pi s / ramp))``, ``A = sum_h a_h``;
* excitation, ``0 <= u < duration`` (``u = s - ramp/2``):
  ``qd = sum_h a_h cos(h w u) + b_h sin(h w u)``;
* ramp-down, ``0 <= v < ramp/2``: ``qd = qd_end / 2 (1 + cos(2 pi v / ramp))``; then rest.

``s = t - start`` is the time since the trajectory started in the log's time base, ``q`` the
integral of ``qd`` from ``gen_q0``. The base frequency ``w`` and ``start`` are not in the files;
:func:`fit_timing` finds them by matching the measured velocities (least squares).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.optimize

from .data import DataError, Measurements

__all__ = ["Gaz2019Trajectory", "read_gaz2019", "read_gaz2019_fit", "is_gaz2019_folder",
           "fit_timing", "FILES"]

#: The files of the layout.
FILES = ("exciting_traj_time.txt", "exciting_traj_positions.txt", "exciting_traj_velocity.txt",
         "exciting_traj_torques.txt", "gen_q0.txt", "gen_params.txt")


@dataclass(frozen=True)
class Gaz2019Trajectory:
    """The commanded trajectory of the ``panda-gaz2019`` generator (module docstring).

    Parameters
    ----------
    q_start : array_like, shape (n,)
        Position at the start, rad (``gen_q0``).
    a, b : array_like, shape (n, H)
        Velocity coefficients, rad/s (``gen_params``).
    omega_f : float
        Base angular frequency, rad/s.
    start : float
        Time of the start in the log's time base, s.
    ramp : float
        Ramp period, s: the ramp-up and ramp-down last ``ramp / 2`` each (generator: 1 s).
    duration : float
        Duration of the excitation part, s (generator: 20 s).
    """

    q_start: np.ndarray
    a: np.ndarray
    b: np.ndarray
    omega_f: float
    start: float = 0.0
    ramp: float = 1.0
    duration: float = 20.0

    def __post_init__(self):
        object.__setattr__(self, "q_start", np.asarray(self.q_start, dtype=float))
        object.__setattr__(self, "a", np.asarray(self.a, dtype=float))
        object.__setattr__(self, "b", np.asarray(self.b, dtype=float))
        n = self.q_start.shape[0]
        if self.a.shape != self.b.shape or self.a.ndim != 2 or self.a.shape[0] != n:
            raise DataError(f"trajectory coefficients must have shape ({n}, H), not "
                            f"{self.a.shape} and {self.b.shape}")
        for name in ("omega_f", "ramp", "duration"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value <= 0:
                raise DataError(f"trajectory {name} must be positive, not {value!r}")
            object.__setattr__(self, name, value)

    def _harmonics(self, u, order):
        h = np.arange(1, self.a.shape[1] + 1)
        w = h * self.omega_f
        phase = u[:, None] * w[None, :]
        s, c = np.sin(phase), np.cos(phase)
        if order == 0:  # integral from 0
            return (s / w) @ self.a.T + ((1 - c) / w) @ self.b.T
        if order == 1:
            return c @ self.a.T + s @ self.b.T
        return (-w * s) @ self.a.T + (w * c) @ self.b.T

    def evaluate(self, t):
        """Return ``(q, qd, qdd)`` at log times ``t``, each shape (K, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        s = t - self.start
        half = self.ramp / 2
        k = 2 * math.pi / self.ramp
        amplitude = self.a.sum(axis=1)
        q = np.empty((t.size, self.q_start.size))
        qd = np.zeros_like(q)
        qdd = np.zeros_like(q)
        # ramp-up (before the start the robot rests at q_start)
        q[:] = self.q_start
        up = (s >= 0) & (s < half)
        su = s[up, None]
        q[up] = self.q_start + amplitude / 2 * (su - np.sin(k * su) / k)
        qd[up] = amplitude / 2 * (1 - np.cos(k * su))
        qdd[up] = amplitude / 2 * k * np.sin(k * su)
        q_half = self.q_start + amplitude / 2 * half
        # excitation
        mid = (s >= half) & (s < half + self.duration)
        u = s[mid] - half
        q[mid] = q_half + self._harmonics(u, 0)
        qd[mid] = self._harmonics(u, 1)
        qdd[mid] = self._harmonics(u, 2)
        end = np.array([self.duration])
        q_end = q_half + self._harmonics(end, 0)[0]
        qd_end = self._harmonics(end, 1)[0]
        # ramp-down and rest
        down = (s >= half + self.duration) & (s < self.ramp + self.duration)
        v = s[down, None] - half - self.duration
        q[down] = q_end + qd_end / 2 * (v + np.sin(k * v) / k)
        qd[down] = qd_end / 2 * (1 + np.cos(k * v))
        qdd[down] = -qd_end / 2 * k * np.sin(k * v)
        after = s >= self.ramp + self.duration
        q[after] = q_end + qd_end / 2 * half
        return q, qd, qdd


def is_gaz2019_folder(folder):
    """Return whether ``folder`` holds every file of the layout."""
    folder = Path(folder)
    return all((folder / name).is_file() for name in FILES)


def _read_numbers(path):
    """Return every whitespace-separated number of a text file, shape (count,)."""
    try:
        return np.array(Path(path).read_text(encoding="utf-8").split(), dtype=float)
    except ValueError as error:
        raise DataError(f"data file {os.fspath(path)!r}: {error}") from None


def fit_timing(t, qd, q_start, a, b, *, omega_range=(0.05, 3.0), ramp=1.0, duration=20.0):
    """Find the base frequency and the start time of the commanded trajectory from velocities.

    A grid over ``omega_f`` (steps small enough that the highest harmonic drifts by less than
    0.25 rad over the run) with the start at the first sample, then a local least-squares
    refinement of ``(omega_f, start)`` on the velocity error.

    Parameters
    ----------
    t : array_like, shape (N,)
        Log times, s.
    qd : array_like, shape (N, n)
        Measured velocities, rad/s.
    q_start, a, b
        As for :class:`Gaz2019Trajectory`.
    omega_range : tuple of float
        Search range of ``omega_f``, rad/s.

    Returns
    -------
    trajectory : Gaz2019Trajectory
    rms : float
        RMS velocity error of the fit, rad/s (over all joints and samples).
    """
    t = np.asarray(t, dtype=float)
    qd = np.asarray(qd, dtype=float)
    # A coarse copy (~1000 samples) is plenty for the search: the velocities hold a few Hz.
    step = max(1, int(len(t) // 1000))
    tc, qdc = t[::step], qd[::step]
    harmonics = np.asarray(a).shape[1]
    span = float(t[-1] - t[0])
    d_omega = 0.25 / (harmonics * span)
    omegas = np.arange(omega_range[0], omega_range[1] + d_omega, d_omega)

    def error(omega, start, times=tc, measured=qdc):
        trajectory = Gaz2019Trajectory(q_start, a, b, omega, start, ramp, duration)
        return trajectory.evaluate(times)[1] - measured

    costs = [float(np.mean(error(w, t[0]) ** 2)) for w in omegas]
    best = int(np.argmin(costs))
    result = scipy.optimize.least_squares(
        lambda x: error(x[0], x[1]).ravel(), x0=[omegas[best], t[0]],
        x_scale=[d_omega, 0.01], method="lm")
    # The last step on all samples.
    result = scipy.optimize.least_squares(
        lambda x: error(x[0], x[1], t, qd).ravel(), x0=result.x, x_scale=[d_omega, 0.01],
        method="lm")
    omega, start = (float(v) for v in result.x)
    trajectory = Gaz2019Trajectory(q_start, a, b, omega, start, ramp, duration)
    rms = float(np.sqrt(np.mean(error(omega, start, t, qd) ** 2)))
    return trajectory, rms


def read_gaz2019(folder, *, omega_f=None, start=None, ramp=1.0, duration=20.0):
    """Read a ``panda-gaz2019``-layout folder.

    Parameters
    ----------
    folder : str or os.PathLike
    omega_f, start : float, optional
        Base frequency (rad/s) and start time (s) of the commanded trajectory; found by
        :func:`fit_timing` when not given.
    ramp, duration : float
        Ramp period and excitation duration of the generator, s.

    Returns
    -------
    Measurements
        Raw samples (non-equidistant times as logged) with ``trajectory`` set to the fitted
        :class:`Gaz2019Trajectory`; ``name`` is the folder. :func:`read_gaz2019_fit` also
        returns the RMS velocity error of the trajectory.

    Raises
    ------
    DataError
        If a file is missing or malformed, or the sizes disagree.
    """
    measurements, _ = read_gaz2019_fit(folder, omega_f=omega_f, start=start, ramp=ramp,
                                       duration=duration)
    return measurements


def read_gaz2019_fit(folder, *, omega_f=None, start=None, ramp=1.0, duration=20.0):
    """Like :func:`read_gaz2019`; also return the RMS velocity error of the trajectory (rad/s)."""
    folder = Path(folder)
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise DataError(f"folder {os.fspath(folder)!r} lacks the file(s) {missing!r} of the "
                        f"panda-gaz2019 layout")
    t = _read_numbers(folder / "exciting_traj_time.txt")
    q_start = _read_numbers(folder / "gen_q0.txt")
    n = q_start.shape[0]
    values = _read_numbers(folder / "gen_params.txt")
    if values.size == 0 or values.size % (2 * n) != 0:
        raise DataError(f"{os.fspath(folder / 'gen_params.txt')!r} must hold 2 x {n} rows of "
                        f"coefficients, not {values.size} values")
    params = values.reshape(2 * n, -1)
    a, b = params[:n], params[n:]
    arrays = []
    for name in FILES[1:4]:
        values = _read_numbers(folder / name)
        if values.size != t.size * n:
            raise DataError(f"{os.fspath(folder / name)!r} holds {values.size} values, expected "
                            f"{t.size} samples x {n} joints")
        arrays.append(values.reshape(t.size, n))
    q, qd, tau = arrays
    if omega_f is None or start is None:
        trajectory, rms = fit_timing(t, qd, q_start, a, b, ramp=ramp, duration=duration)
        if omega_f is not None or start is not None:
            trajectory = Gaz2019Trajectory(
                q_start, a, b, trajectory.omega_f if omega_f is None else omega_f,
                trajectory.start if start is None else start, ramp, duration)
    else:
        trajectory = Gaz2019Trajectory(q_start, a, b, omega_f, start, ramp, duration)
    rms = float(np.sqrt(np.mean((trajectory.evaluate(t)[1] - qd) ** 2)))
    return Measurements(t, q, qd, tau, name=os.fspath(folder), trajectory=trajectory), rms
