"""Fourier-series excitation trajectories (source paper eq. 23) with fade-in and fade-out.

A :class:`FourierTrajectory` is the periodic joint trajectory of eq. (23)::

    q_i(t) = q_{i,0} + sum_{h=1}^{H} ( a_{i,h} sin(h omega_f t) + b_{i,h} cos(h omega_f t) )

with analytic velocity and acceleration. A :class:`FadedTrajectory` embeds it between a fade-in
from a rest pose and a fade-out back to it, one period each by default (paper Sect. 4.1, Fig. 9)::

    q(t) = q_rest + s(t) (q_F(t - t_fade) - q_rest)

where ``s`` rises from 0 to 1 over the fade-in with the quintic smooth step
``s(u) = 10 u^3 - 15 u^4 + 6 u^5`` (zero first and second derivative at both ends), is 1 during
the excitation periods and falls back to 0 over the fade-out. Position, velocity and acceleration
are continuous everywhere; the trajectory starts and ends at rest (``qd = qdd = 0``).

Both are linear in the coefficients: ``q_i(t) = G(t) c_i + g_i(t)`` with
``c_i = (q_{i,0}, a_{i,1..H}, b_{i,1..H})``; :meth:`FadedTrajectory.linear_map` returns ``G`` and
``g`` for the excitation optimisation (:mod:`linkdyn.host.identification.excitation`).
Units: s, rad, rad/s, rad/s^2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["FourierTrajectory", "FadedTrajectory", "fourier_basis", "smooth_step"]


def _vector(value, what, length=None):
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numeric, not {value!r}") from None
    if array.ndim != 1 or (length is not None and array.shape[0] != length):
        expected = f"({length},)" if length is not None else "(n,)"
        raise ValueError(f"{what} must have shape {expected}, not {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be finite, not {array.tolist()!r}")
    array.setflags(write=False)
    return array


def _times(t):
    t = np.asarray(t, dtype=float)
    if t.ndim > 1:
        raise ValueError(f"t must be a scalar or a 1-D array of times, not shape {t.shape}")
    return np.atleast_1d(t)


def fourier_basis(t, harmonics, omega_f, order=0):
    """Return the basis ``G`` with ``d^order/dt^order q_i(t) = G(t) c_i`` for eq. (23).

    Parameters
    ----------
    t : array_like, shape (K,)
        Times, s.
    harmonics : int
        Number of harmonics ``H``.
    omega_f : float
        Base angular frequency, rad/s.
    order : {0, 1, 2}
        Derivative order (position, velocity, acceleration).

    Returns
    -------
    numpy.ndarray, shape (K, 1 + 2 H)
        Columns for ``(q_0, a_1..a_H, b_1..b_H)``.
    """
    t = _times(t)
    h = np.arange(1, harmonics + 1)
    w = h * omega_f
    phase = t[:, None] * w[None, :]
    s, c = np.sin(phase), np.cos(phase)
    if order == 0:
        columns = (np.ones((t.size, 1)), s, c)
    elif order == 1:
        columns = (np.zeros((t.size, 1)), w * c, -w * s)
    elif order == 2:
        columns = (np.zeros((t.size, 1)), -w ** 2 * s, -w ** 2 * c)
    else:
        raise ValueError(f"order must be 0, 1 or 2, not {order!r}")
    return np.concatenate(columns, axis=1)


def smooth_step(u, order=0):
    """Return the quintic smooth step ``s(u) = 10 u^3 - 15 u^4 + 6 u^5`` or a derivative.

    ``u`` is clipped to [0, 1]; ``s(0) = 0``, ``s(1) = 1``, ``s'`` and ``s''`` vanish at both
    ends. ``order`` 1 and 2 give ``ds/du`` and ``d^2s/du^2``.
    """
    u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
    if order == 0:
        return u ** 3 * (10 - 15 * u + 6 * u ** 2)
    if order == 1:
        return 30 * u ** 2 * (1 - u) ** 2
    if order == 2:
        return 60 * u * (1 - u) * (1 - 2 * u)
    raise ValueError(f"order must be 0, 1 or 2, not {order!r}")


@dataclass(frozen=True)
class FourierTrajectory:
    """The periodic Fourier-series joint trajectory of the source paper, eq. (23).

    Parameters
    ----------
    q0 : array_like, shape (n,)
        Offsets ``q_{i,0}``, rad.
    a, b : array_like, shape (n, H)
        Sine and cosine coefficients ``a_{i,h}``, ``b_{i,h}``, rad.
    omega_f : float
        Base angular frequency ``omega_f = 2 pi / T``, rad/s, positive.

    Raises
    ------
    ValueError
        If shapes disagree, a value is not finite or ``omega_f`` is not positive.
    """

    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    omega_f: float

    def __post_init__(self):
        q0 = _vector(self.q0, "q0")
        coefficients = []
        for name in ("a", "b"):
            array = np.array(getattr(self, name), dtype=float)
            if array.ndim != 2 or array.shape[0] != q0.shape[0] or array.shape[1] < 1:
                raise ValueError(f"{name} must have shape ({q0.shape[0]}, H) with H >= 1, not "
                                 f"{array.shape}")
            if not np.all(np.isfinite(array)):
                raise ValueError(f"{name} must be finite")
            array.setflags(write=False)
            coefficients.append(array)
        if coefficients[0].shape != coefficients[1].shape:
            raise ValueError(f"a and b must have the same shape, not {coefficients[0].shape} "
                             f"and {coefficients[1].shape}")
        omega_f = float(self.omega_f)
        if not math.isfinite(omega_f) or omega_f <= 0:
            raise ValueError(f"omega_f must be a positive number of rad/s, not {self.omega_f!r}")
        object.__setattr__(self, "q0", q0)
        object.__setattr__(self, "a", coefficients[0])
        object.__setattr__(self, "b", coefficients[1])
        object.__setattr__(self, "omega_f", omega_f)

    @classmethod
    def from_coefficients(cls, coefficients, omega_f):
        """Build from ``C``, shape (n, 1 + 2 H), rows ``(q_0, a_1..a_H, b_1..b_H)``."""
        coefficients = np.asarray(coefficients, dtype=float)
        if coefficients.ndim != 2 or coefficients.shape[1] < 3 or coefficients.shape[1] % 2 != 1:
            raise ValueError(f"coefficients must have shape (n, 1 + 2 H), not "
                             f"{coefficients.shape}")
        h = (coefficients.shape[1] - 1) // 2
        return cls(coefficients[:, 0], coefficients[:, 1:1 + h], coefficients[:, 1 + h:], omega_f)

    @classmethod
    def from_velocity_coefficients(cls, q0, a_velocity, b_velocity, omega_f):
        """Build from the velocity form of Swevers et al. (used by Gaz et al. 2019).

        ``qd_i(t) = sum_h a_v cos(h w t) + b_v sin(h w t)`` and
        ``q_i(t) = q0_i + sum_h a_v / (h w) sin(h w t) - b_v / (h w) cos(h w t)``, i.e.
        eq. (23) with ``a = a_v / (h w)`` and ``b = -b_v / (h w)``. ``a_v``, ``b_v`` in rad/s.
        """
        a_velocity = np.asarray(a_velocity, dtype=float)
        b_velocity = np.asarray(b_velocity, dtype=float)
        if a_velocity.ndim != 2:
            raise ValueError(f"a_velocity must have shape (n, H), not {a_velocity.shape}")
        w = np.arange(1, a_velocity.shape[1] + 1) * float(omega_f)
        return cls(q0, a_velocity / w, -b_velocity / w, omega_f)

    @property
    def n(self):
        """int: number of joints."""
        return self.q0.shape[0]

    @property
    def harmonics(self):
        """int: number of harmonics ``H``."""
        return self.a.shape[1]

    @property
    def period(self):
        """float: period ``T = 2 pi / omega_f``, s."""
        return 2 * math.pi / self.omega_f

    @property
    def coefficients(self):
        """numpy.ndarray, shape (n, 1 + 2 H): rows ``(q_0, a_1..a_H, b_1..b_H)``."""
        return np.concatenate([self.q0[:, None], self.a, self.b], axis=1)

    def basis(self, t, order=0):
        """Return :func:`fourier_basis` for this trajectory, shape (K, 1 + 2 H)."""
        return fourier_basis(t, self.harmonics, self.omega_f, order)

    def evaluate(self, t):
        """Return ``(q, qd, qdd)`` at times ``t``, each shape (K, n) (rad, rad/s, rad/s^2)."""
        c = self.coefficients
        return tuple(self.basis(t, k) @ c.T for k in range(3))


@dataclass(frozen=True)
class FadedTrajectory:
    """A :class:`FourierTrajectory` between a smooth fade-in and fade-out (paper Fig. 9).

    Parameters
    ----------
    fourier : FourierTrajectory
        The periodic excitation.
    rest : array_like, shape (n,), optional
        Rest pose at the start and the end, rad. Default: the Fourier offsets ``q0``.
    periods : int
        Number of excitation periods between the fades (``>= 1``).
    fade : float, optional
        Duration of the fade-in and of the fade-out, s; default one period.

    Time runs from 0 to :attr:`duration`; the excitation periods occupy
    :attr:`excitation_interval`, where ``q(t) = q_F(t - fade)``.
    """

    fourier: FourierTrajectory
    rest: np.ndarray | None = None
    periods: int = 1
    fade: float | None = None

    def __post_init__(self):
        if not isinstance(self.fourier, FourierTrajectory):
            raise TypeError(f"fourier must be a FourierTrajectory, not "
                            f"{type(self.fourier).__name__}")
        if self.rest is not None:
            object.__setattr__(self, "rest", _vector(self.rest, "rest", self.fourier.n))
        if isinstance(self.periods, bool) or not isinstance(self.periods, int) \
                or self.periods < 1:
            raise ValueError(f"periods must be a positive integer, not {self.periods!r}")
        fade = self.fourier.period if self.fade is None else float(self.fade)
        if not math.isfinite(fade) or fade <= 0:
            raise ValueError(f"fade must be a positive duration in s, not {self.fade!r}")
        object.__setattr__(self, "fade", fade)

    @property
    def n(self):
        """int: number of joints."""
        return self.fourier.n

    @property
    def rest_pose(self):
        """numpy.ndarray, shape (n,): the rest pose, rad."""
        return self.fourier.q0 if self.rest is None else self.rest

    @property
    def duration(self):
        """float: total duration, s (fade-in + periods + fade-out)."""
        return 2 * self.fade + self.periods * self.fourier.period

    @property
    def excitation_interval(self):
        """tuple of float: ``(start, end)`` of the excitation periods, s."""
        return self.fade, self.fade + self.periods * self.fourier.period

    def sample_times(self, dt):
        """Return ``0, dt, 2 dt, ...`` up to and including :attr:`duration` (within dt/2)."""
        dt = float(dt)
        if not math.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt must be a positive time step in s, not {dt!r}")
        count = int(math.floor(self.duration / dt + 0.5)) + 1
        return np.arange(count) * dt

    def _scale(self, t):
        """Return ``s, ds/dt, d2s/dt2`` of the fade, each shape (K,)."""
        start, end = self.excitation_interval
        s, sd, sdd = np.ones_like(t), np.zeros_like(t), np.zeros_like(t)
        rising = t < start
        u = t[rising] / self.fade
        s[rising] = smooth_step(u)
        sd[rising] = smooth_step(u, 1) / self.fade
        sdd[rising] = smooth_step(u, 2) / self.fade ** 2
        falling = t > end
        u = (self.duration - t[falling]) / self.fade
        s[falling] = smooth_step(u)
        sd[falling] = -smooth_step(u, 1) / self.fade
        sdd[falling] = smooth_step(u, 2) / self.fade ** 2
        return s, sd, sdd

    def linear_map(self, t, order=0):
        """Return ``(G, g)`` with ``d^order q_i / dt^order (t) = G(t) c_i + g_i(t)``.

        ``c_i`` are the rows of :attr:`FourierTrajectory.coefficients`; the map is exact for any
        coefficients, which makes joint limits linear constraints.

        Returns
        -------
        G : numpy.ndarray, shape (K, 1 + 2 H)
        g : numpy.ndarray, shape (K, n)
            Zero when the rest pose is the Fourier offset (the default).
        """
        t = _times(t)
        tau = t - self.fade
        f = [self.fourier.basis(tau, k) for k in range(3)]
        s = self._scale(t)
        # q = r + s (F - r) = s F + (1 - s) r  (with r = q0 the q0 columns add up to 1)
        if order == 0:
            G = s[0][:, None] * f[0]
            scale_r = 1 - s[0]
        elif order == 1:
            G = s[1][:, None] * f[0] + s[0][:, None] * f[1]
            scale_r = -s[1]
        elif order == 2:
            G = (s[2][:, None] * f[0] + 2 * s[1][:, None] * f[1] + s[0][:, None] * f[2])
            scale_r = -s[2]
        else:
            raise ValueError(f"order must be 0, 1 or 2, not {order!r}")
        if self.rest is None:
            G = G.copy()
            G[:, 0] += scale_r
            g = np.zeros((t.size, self.n))
        else:
            g = scale_r[:, None] * self.rest[None, :]
        return G, g

    def evaluate(self, t):
        """Return ``(q, qd, qdd)`` at times ``t``, each shape (K, n) (rad, rad/s, rad/s^2)."""
        c = self.fourier.coefficients
        result = []
        for k in range(3):
            G, g = self.linear_map(t, k)
            result.append(G @ c.T + g)
        return tuple(result)
