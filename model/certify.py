"""Certified worst-case torque error of the fixed-point node microprogram, by static analysis.

``python -m linkdyn.model.certify --robot R [--tip LINK] [--qd-max ...] [--qdd-max 10]
[--wrench-max F,M] --out DIR``

For a robot and a *box* of joint states (``q`` in ``[q_min, q_max]``, ``|qd| <= qd_max``,
``|qdd| <= qdd_max``, optionally ``|f_ext| <= F``, ``|mu_ext| <= M`` per component on every
link), :func:`certify` runs an abstract interpretation of the node microprogram
(:mod:`linkdyn.model.microprogram`) over the chain: node 1 to node n through the ``joint``,
``forward`` and ``local`` segments, then node n back to node 1 through ``distal``, every
operation in program order, exactly as :func:`linkdyn.model.golden.rnea_fixed` runs it. Every
register carries two abstract quantities:

* the **exact value** ``x`` (the real number the register stands for, computed by the real
  recursion from the exact state and the exact robot constants) as an affine form over the box's
  state symbols ``q_i = m_i + rho_i eps_i`` ... with an independent remainder (affine arithmetic;
  ``domain="interval"`` keeps intervals only);
* the **fixed-point error** ``e = x_fixed - x`` as a sum ``sum_s c_s eta_s`` over *error
  symbols* ``eta_s in [-1, 1]`` (one per rounding of a Dot, per input encoding, per robot
  constant, per table and CORDIC evaluation) whose coefficients ``c_s`` are intervals (they
  depend on the state), plus an independent remainder for second-order terms.

Intervals of a rotated vector grow by up to sqrt 2 per joint (the wrapping effect), which over
six or seven joints makes both ranges and errors useless (the Panda's base force would reach
5e4 N). So the analysis also keeps, for every 3-vector the program computes (:data:`_GROUPS`:
omega, omega_dot, p_ddot, f, mu, ...), a Euclidean-norm bound of its exact value, of every
error symbol's coefficient vector and of its remainder, derived from the exact linear maps the
program applies (a rotation keeps norms; ``r x``, ``m c x``, ``I`` and ``m`` scale them by
their norms; cross products of two groups by the product of norms); a symbol of the phase turns
the frame only (``||dR/dtheta|| = 1``). Each component's range and coefficients are then
intersected with those norm bounds (a reduced product of the two domains).

The mechanics of the recursion give second bounds, and the smaller holds (``mechanics=True``,
the default; :meth:`_Analysis.mechanics_norm`, :meth:`_Analysis.mechanics_error`):

* *cylinders*: ``omega = R^T (omega_in + qd z)``, ``omega_dot = R^T (v + qdd z)`` and ``v =
  omega_dot_in + qd omega_in x z``: the joint's own rate adds to the z-component only, and
  ``omega_in x z`` sees the xy-part only;
* *the inertial wrench about the previous origin*: ``f_local`` and ``mu_local`` equal ``m a +
  omega_dot x c' + omega x (omega x c')`` and ``I' omega_dot + omega x I' omega + c' x a``
  with ``a = R^T p_ddot_in``, ``c' = m r + m c`` and ``I'`` about origin ``i-1``, where ``m r``
  and ``m c`` largely cancel; the words the node computes satisfy the same identity with the
  encoded constants and the Dot roundings as extra terms, which bounds their errors too;
* *known constants*: the encoding errors of ``m``, ``m c``, ``I`` are known numbers; the
  analysis refers to the encoded robot and adds, once per link, the wrench of the parameter
  differences (inverse dynamics is linear in them) as one error symbol with affine
  coefficients (:meth:`_Analysis.add_known_parameters`).

The error sources, each with a proven bound:

* the encoding of ``q``, ``qd``, ``qdd`` (and ``f_ext``) to their words, half up: at most half an
  LSB of the word;
* the encoding of every robot constant and of ``-g``: the exact difference word - value, known
  (for the inertial parameters, see *known constants* above);
* each Dot: its accumulation is exact (:mod:`linkdyn.model.fixedpoint`), its one rounding half up
  moves the result by at most ``2**-(f+1)`` (``f`` fractional bits of the destination; nothing
  when the accumulator has no more fractional bits than the destination); a product term
  ``a b`` contributes ``a e_b + b e_a + e_a e_b``; the three roundings of one vector's Dots
  are bounded together as a vector of norm ``sqrt(3) delta`` (``vector_roundings``,
  :meth:`_Analysis.close_triplets`);
* saturation: the range ``x + e`` of the accumulator result must lie in the destination word's
  range; where it may not, the register, node and a corner state of the box are named
  (:attr:`Certificate.saturations`) and the clamp's largest move is added to the error;
* the phase word: it wraps by whole turns, which sine and cosine do not see; its error (in turns)
  enters sine and cosine as ``cos(theta) 2 pi e`` resp. ``-sin(theta) 2 pi e`` plus
  ``(2 pi e)**2 / 2``;
* the sine table: ``S = (1 - phi) sin(theta) + rho_s``, ``C = (1 - phi) cos(theta) + rho_c``
  with one ``phi`` in ``[0, h**2/8]`` shared by sine and cosine (a scaling of the rotation's
  xy-rows, spectral norm ``phi``, one symbol per node) and ``|rho|`` the entries' rounding
  plus a Taylor rest (:func:`sine_error_split`; ``split_table=False``: two independent errors
  of ``|S(w) - sin(2 pi w / 2**32)|`` over all 2**32 phase words, proven by
  :func:`linkdyn.model.accuracy.sine_table_worst_case`), then the Q1.30 rounding;
* the CORDIC: :func:`cordic_error_bound`, a proof valid for every input word (residual angle,
  rounded angle constants, truncated shifts), at least the exhaustive maximum of
  :func:`linkdyn.model.accuracy.cordic_worst_case`; ``atan`` is 1-Lipschitz, so the error of its
  argument enters with a coefficient in ``[1/(1+x_max**2), 1]``.

The result is a guaranteed bound on ``|tau_fixed - tau_exact|`` per joint, where ``tau_exact``
is the real-valued inverse dynamics (eq. 7, 9, 12, 20) that :func:`linkdyn.model.rnea` computes
in float64; a margin of ``1e-9`` N·m plus ``1e-9`` relative covers the float64 rounding of
``rnea`` and of this analysis itself. The bound treats every rounding as an adversary
(independent), so it is an upper bound, not an estimate.

*Prismatic joints* (``q`` moves ``d``): the node selects its words by the constant words
``revolute`` and ``prismatic`` (:mod:`linkdyn.model.microprogram`); the analysis runs the same
program with the link's words, so on a prismatic node the joint rate of ``omega``,
``omega_dot`` and ``v`` is exactly 0 (``rate``, ``qd_revolute``, ``qdd_revolute`` are 0 and
their terms are left out, as for the revolute node's prismatic terms), the phase is the
constant offset (its sine and cosine still carry the table's error), ``r`` at ``q`` is
computed by the Dots ``r_q_y = r_y + q sin alpha``, ``r_q_z = r_z + q cos alpha`` (their
rounding, ``q``'s encoding, and their Q1.30 range: saturation is named there when the travel
leaves ``|r| < 2`` m), ``p_ddot`` gains ``qdd R^T z`` and ``u`` ``2 qd R^T z``, and ``tau`` is
``f_out_z`` plus friction. The norm factors of ``r``, ``c' = m r + m c`` and ``I'`` are their
bounds over the box's travel (:mod:`linkdyn.model.certify_prismatic`), the inertial-wrench
identities read the base acceleration ``A = R^T p_ddot_in + qdd z_0 + 2 qd omega x z_0``
(:meth:`_Analysis.base_acceleration_norm`), the rounding triplets are closed on ``f_out``, and
the second error bound of ``f_local`` and ``mu_local`` by those identities
(:meth:`_Analysis.mechanics_error`) is not used on prismatic nodes (the program-order bound
alone holds there).

The register formats are a parameter (``formats``: fractional bits per quantity,
:data:`QUANTITIES`), so the analysis answers "what if ``q`` had 28 fractional bits?" as a real
computation on the same microprogram; the golden model and gateware only exist for the formats
of :class:`~linkdyn.model.microprogram.RegisterMap`.

Approach as in static error analysis of fixed-point programs (affine arithmetic for ranges and
errors, e.g. Darulova and Kuncak's Daisy; RoboPrec, RA-L 2025, applies it to RNEA); see
``docs/certificate.md`` for the comparison and the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .certify_prismatic import (joint_axis, largest_affine_norm,
                                shifted_inertia_bounds)
from .fixedpoint import WORD_WIDTH
from .golden import microprogram
from .microprogram import (QUANTITIES, SELECTIONS, Atan, Dot, Lookup, Term,
                           node_formats, quantity_of)
from .rnea import link_offset_vector
from .robot import Robot
from .tables import CORDIC, SINE_TABLE

__all__ = ["Certificate", "certify", "default_box", "range_formats", "QUANTITIES", "quantity_of",
           "cordic_error_bound", "sine_error_bound", "sine_error_split", "DEFAULT_QDD_MAX", "main",
           "write_certificate", "add_box_arguments"]

#: Default acceleration bound of the box, rad/s^2 (issue 17: ``|qdd| <= 10``).
DEFAULT_QDD_MAX = 10.0

#: Velocity bound for joints that publish no velocity limit, rad/s.
DEFAULT_QD_MAX = math.pi

#: Float64 safety margin of the bound: absolute (N·m) and relative.
MARGIN_ABS = 1e-9
MARGIN_REL = 1e-9

#: Register quantities whose fractional bits ``formats`` may set (the node's quantities, each
#: in its own format: :data:`linkdyn.model.microprogram.QUANTITIES`).
_FIXED_KINDS = ("zero", "rate", "theta_offset", "phase", "revolute", "prismatic")

#: The joint type's selections of the microprogram and their quantities: on a revolute node
#: each is exactly 0 or a copy of another register (``qd``, ``qdd``, ``r_y``, ``r_z``), see
#: :meth:`_Analysis.exact_terms`.
_SELECTIONS = SELECTIONS

#: Constants that a robot may leave exactly 0 (no friction): a term with one of them adds
#: exactly nothing to its Dot, nor fractional bits that would need rounding.
_ZERO_CONSTANTS = ("F_c", "F_v", "F_o", "k_friction")

#: Label of the error symbol of a node's known inertial-parameter errors.
_KNOWN_PARAMETERS = "inertial"

#: The inertial parameter registers, in the order of :meth:`~linkdyn.model.robot.Link.parameters`.
_INERTIAL = ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz")


# ----------------------------------------------------------------------------------------------
# Proven worst cases of the sine table and the CORDIC
# ----------------------------------------------------------------------------------------------

_SINE_CACHE = {}


def sine_error_bound(table=SINE_TABLE):
    """Return a proven bound on ``|S(w) - sin(2 pi w / 2**32)|`` over all phase words.

    :func:`linkdyn.model.accuracy.sine_table_worst_case` evaluates every interpolation segment
    at its ends and around the interior extremum of the convex error (exact over all 2**32
    words); ``1e-15`` covers the float64 evaluation of ``sin``.
    """
    if table not in _SINE_CACHE:
        from .accuracy import sine_table_worst_case  # same layer (model)
        _SINE_CACHE[table] = sine_table_worst_case(table) + 1e-15
    return _SINE_CACHE[table]


_TABLE_SPLIT_CACHE = {}


def sine_error_split(table=SINE_TABLE):
    """Return ``(phi_max, residual)``: the sine table's error as a common scaling plus a rest.

    On the quarter wave the table interpolates linearly between entries ``T_k`` at ``a = k h``,
    ``h = (pi/2) / size``; the cosine reads the mirrored position ``2**30 - v``, the same
    segment with the fraction ``1 - t``, and the other quadrants flip signs. So for every phase
    word ``w`` (angle ``theta``, fraction ``t`` in ``[0, 1]``) the interpolated pair of the
    exact entries is ``C + i S = (1 - t) e^(i a) + t e^(i (a + h)) = e^(i theta) g(t)`` with
    ``g(t) = (1 - t) e^(-i t h) + t e^(i (1 - t) h)``. By Taylor's theorem (remainder of
    ``e^(ix)`` after the cubic term at most ``x**4 / 24``)::

        |g(t) - (1 - phi(t))| <= h**3 max|t (1 - t) (2 t - 1)| / 6 + h**4 / 24,
        phi(t) = t (1 - t) h**2 / 2  in  [0, h**2 / 8]

    (``max|t (1-t) (2t-1)| = 1 / (6 sqrt 3)``). The stored entries are rounded; their errors
    interpolate to at most the largest entry error. Hence, per word,

        ``S(w) = (1 - phi) sin(theta) + rho_s``, ``C(w) = (1 - phi) cos(theta) + rho_c``,

    with one ``phi in [0, phi_max]`` shared by sine and cosine (it scales the xy-block of the
    joint rotation, a matrix of spectral norm ``phi``) and ``|rho| <= residual``. The global
    worst case of :func:`sine_error_bound` is about ``phi_max + residual``.

    Returns
    -------
    (float, float)
        ``phi_max = h**2 / 8`` and the residual bound (``1e-15`` covers float64).
    """
    if table not in _TABLE_SPLIT_CACHE:
        h = (math.pi / 2) / table.size
        k = np.arange(table.size + 1)
        entry = float(np.max(np.abs(table.entries * 2.0 ** -table.entry_fraction_bits
                                    - np.sin(k * h))))
        taylor = h ** 3 / (6 * 6 * math.sqrt(3)) + h ** 4 / 24
        _TABLE_SPLIT_CACHE[table] = (h * h / 8 * (1 + 1e-12), entry + taylor + 1e-15)
    return _TABLE_SPLIT_CACHE[table]


def cordic_error_bound(cordic=CORDIC):
    """Return a proven bound on ``|CORDIC(x) - atan(x)|`` (rad) valid for every input word.

    Vectoring mode on ``(X, Y) = (2**30, x 2**30)``; let ``phi_i`` be the angle of the vector
    before step ``i`` and ``alpha_i = atan(2**-i)``. Then ``atan(x) = sum_{j<n} s_j alpha_j +
    phi_n - sum_j p_j``, where ``p_j`` is the angle by which the truncated shifts ``X >> j``,
    ``Y >> j`` (each off by less than one LSB) turn the vector; since the vector's norm never
    falls below ``2**30 - n sqrt 2``, ``|p_j| <= asin(sqrt 2 / (2**30 - n sqrt 2))``. From
    ``alpha_(i-1) <= 2 alpha_i``, by induction ``|phi_i| <= alpha_(i-1) + sum_(j<i) |p_j|``.
    With the rounded angle constants ``A_j`` (``|A_j 2**-30 - alpha_j| <= 2**-31``)::

        |Z 2**-30 - atan(x)| <= n 2**-31 + alpha_(n-1) + 2 n asin(sqrt 2 / (2**30 - n sqrt 2))

    The X and Y registers cannot overflow: ``|Y| < 2**45`` at the input and the CORDIC gain
    1.65 keeps the norm below ``2**46`` (48-bit state).

    Returns
    -------
    float
        The bound, rad (1.94e-7 for the default 24 iterations).
    """
    n = cordic.iterations
    rounding = sum(abs(a * 2.0 ** -30 - math.atan(2.0 ** -i)) for i, a in enumerate(cordic.angles))
    perturbation = math.asin(math.sqrt(2) / (2.0 ** 30 - n * math.sqrt(2)))
    return (rounding + math.atan(2.0 ** -(n - 1)) + 2 * n * perturbation) * (1 + 1e-12)


# ----------------------------------------------------------------------------------------------
# Abstract domains
# ----------------------------------------------------------------------------------------------

_EPS = 2.0 ** -50  # relative slack per operation for the analysis's own float64 rounding


class _Value:
    """Exact value: ``c + a . eps + [-r, r]`` over the state symbols ``eps`` (affine form)."""

    __slots__ = ("c", "a", "r")

    def __init__(self, c, a, r):
        self.c, self.a, self.r = float(c), a, float(r)

    def spread(self):
        return float(np.add.reduce(np.abs(self.a))) + self.r

    def bounds(self):
        s = self.spread()
        return self.c - s, self.c + s

    def slack(self):
        self.r += _EPS * (abs(self.c) + self.spread())
        return self


class _Domain:
    """Arithmetic on :class:`_Value` (affine, or intervals when ``affine`` is false)."""

    def __init__(self, size, affine):
        self.size, self.affine = size, affine

    def const(self, value):
        return _Value(value, np.zeros(self.size), 0.0)

    def symbol(self, index, low, high):
        mid, rad = 0.5 * (low + high), 0.5 * (high - low)
        a = np.zeros(self.size)
        if self.affine:
            a[index] = rad
            return _Value(mid, a, 0.0)
        return _Value(mid, a, rad)

    def interval(self, low, high):
        return _Value(0.5 * (low + high), np.zeros(self.size), 0.5 * (high - low)).slack()

    def _finish(self, v):
        if not self.affine and np.any(v.a):
            v = _Value(v.c, np.zeros(self.size), v.spread())
        return v.slack()

    def add(self, x, y, sign=1.0):
        return self._finish(_Value(x.c + sign * y.c, x.a + sign * y.a, x.r + y.r))

    def mul(self, x, y):
        sx, sy = x.spread(), y.spread()
        if not self.affine:
            lo = min(p for p in _corners(x.bounds(), y.bounds()))
            hi = max(p for p in _corners(x.bounds(), y.bounds()))
            return self.interval(lo, hi)
        # (cx + dx)(cy + dy) = cx cy + cx dy + cy dx + dx dy with |dx dy| <= sx sy.
        r = abs(x.c) * y.r + abs(y.c) * x.r + sx * sy
        return _Value(x.c * y.c, x.c * y.a + y.c * x.a, r).slack()

    def neg(self, x):
        return _Value(-x.c, -x.a, x.r)

    def sin_cos(self, turns, offset_quarter):
        """sin(2 pi t) (``offset_quarter=0``) or cos (``1``) of an exact phase in turns."""
        lo, hi = turns.bounds()
        shift = 0.25 * offset_quarter
        ilo, ihi = _sin_interval(2 * math.pi * (lo + shift), 2 * math.pi * (hi + shift))
        box = self.interval(ilo, ihi)
        if not self.affine:
            return box
        c = 2 * math.pi * (turns.c + shift)
        rho = 2 * math.pi * turns.spread()
        f, d = math.sin(c), math.cos(c)
        lin = _Value(f, 2 * math.pi * d * turns.a, 2 * math.pi * abs(d) * turns.r
                     + 0.5 * rho * rho).slack()
        return lin if lin.spread() < box.spread() else box


def _corners(x, y):
    return (x[0] * y[0], x[0] * y[1], x[1] * y[0], x[1] * y[1])


def _sin_interval(lo, hi):
    """Exact range of sin over [lo, hi] (rad), widened by 1e-15."""
    if hi - lo >= 2 * math.pi:
        return -1.0, 1.0
    values = [math.sin(lo), math.sin(hi)]
    k = math.ceil((lo - math.pi / 2) / math.pi)
    x = math.pi / 2 + k * math.pi
    while x <= hi:
        values.append(math.sin(x))
        x += math.pi
    return max(-1.0, min(values) - 1e-15), min(1.0, max(values) + 1e-15)


class _Error:
    """Error ``sum_s [lo_s, hi_s] eta_s + [-r, r]`` with ``eta_s in [-1, 1]``."""

    __slots__ = ("lo", "hi", "r")

    def __init__(self, lo, hi, r=0.0):
        self.lo, self.hi, self.r = lo, hi, float(r)

    def magnitude(self):
        return float(np.maximum(np.abs(self.lo), np.abs(self.hi)).sum()) + self.r

    def per_symbol(self):
        return np.maximum(np.abs(self.lo), np.abs(self.hi))


class _Errors:
    """Allocates error symbols and does arithmetic on :class:`_Error`."""

    def __init__(self, size):
        self.size = size
        self.used = 0
        self.labels = []
        self.magnitudes = []
        self.index = {}

    def zero(self):
        return _Error(np.zeros(self.size), np.zeros(self.size))

    def new(self, magnitude, label):
        """A fresh symbol ``magnitude * eta`` (``eta in [-1, 1]``: any error within
        ``±magnitude``); ``label`` is ``(kind, register, node)``."""
        if self.used >= self.size:
            raise RuntimeError("error symbol table full")  # sized from the program; a bug
        e = self.zero()
        e.lo[self.used] = e.hi[self.used] = magnitude
        self.labels.append(label)
        self.magnitudes.append(float(magnitude))
        self.index.setdefault(label, self.used)
        self.used += 1
        return e

    @staticmethod
    def add(x, y, sign=1.0):
        if sign > 0:
            return _Error(x.lo + y.lo, x.hi + y.hi, x.r + y.r)
        return _Error(x.lo - y.hi, x.hi - y.lo, x.r + y.r)

    @staticmethod
    def scale(e, value):
        """``v e`` for an exact value ``v`` in an interval (coefficient-wise)."""
        vlo, vhi = value.bounds()
        if vlo == vhi:  # a constant: the same products, fewer of them
            if vlo >= 0:
                return _Error(e.lo * vlo, e.hi * vlo, e.r * vlo)
            return _Error(e.hi * vlo, e.lo * vlo, -e.r * vlo)
        p = (e.lo * vlo, e.lo * vhi, e.hi * vlo, e.hi * vhi)
        lo = np.minimum(np.minimum(p[0], p[1]), np.minimum(p[2], p[3]))
        hi = np.maximum(np.maximum(p[0], p[1]), np.maximum(p[2], p[3]))
        return _Error(lo, hi, e.r * max(abs(vlo), abs(vhi)))

    @staticmethod
    def scale_interval(e, vlo, vhi):
        p = (e.lo * vlo, e.lo * vhi, e.hi * vlo, e.hi * vhi)
        lo = np.minimum(np.minimum(p[0], p[1]), np.minimum(p[2], p[3]))
        hi = np.maximum(np.maximum(p[0], p[1]), np.maximum(p[2], p[3]))
        return _Error(lo, hi, e.r * max(abs(vlo), abs(vhi)))


# ----------------------------------------------------------------------------------------------
# The certificate
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Certificate:
    """Result of :func:`certify`: a guaranteed torque error bound for a robot and a box.

    Attributes
    ----------
    robot : str
        Robot name.
    bound_nm : tuple of float
        Per joint, a guaranteed bound on ``|tau_fixed - tau_exact|``, N·m (N for a prismatic
        joint's force; ``tau_fixed``:
        :func:`linkdyn.model.golden.rnea_fixed` for the default formats).
    saturation_free : bool
        Whether no register can saturate anywhere in the box (proven).
    saturations : tuple of dict
        Where a register may saturate: ``node`` (1-based), ``register``, ``range`` (the
        accumulator result's possible range), ``limit`` (the word's range) and ``state`` (a
        corner of the box that drives the range outwards by the signs of the affine form,
        ``q``, ``qd``, ``qdd``; with ``domain="interval"`` simply the upper corner).
    box : dict
        ``q_min``, ``q_max`` (rad), ``qd_max`` (rad/s), ``qdd_max`` (rad/s^2) per joint (m,
        m/s, m/s^2 for a prismatic joint), ``wrench_max`` (``(F, M)`` N, N·m, or ``None``) and
        ``joint_types`` (``"revolute"`` or ``"prismatic"`` per joint).
    formats : dict
        Fractional bits per quantity of :data:`QUANTITIES` (and the word format's name).
    domain : str
        ``"affine"`` or ``"interval"``.
    hot_registers : tuple of dict
        The registers closest to saturation: ``node``, ``register``, ``range`` (exact value),
        ``error``, ``limit``, ``use`` (largest ``|x| + |e|`` over the word's limit).
    registers : tuple of dict
        Every node's constants, inputs and results (not the phase and the latches):
        ``node``, ``register``, ``range`` (exact value), ``error`` (bound on ``|e|``),
        ``limit`` (the word's range in the analysed format).
    sources : dict
        Per error-source kind, the part of each joint's bound (N·m, tuple per joint):
        ``"input"``, ``"constant"``, ``"rounding"``, ``"table"``, ``"cordic"``,
        ``"second order"`` (the products of errors), ``"rounding rms"`` (not a part: the
        standard deviation the Dot roundings' part would have as independent uniform errors
        of their bounds, ``sqrt(sum c_s**2 / 3)``, a scale for sampled errors), and by input
        (``"input q"``, ...) and constant (``"constant r"``, ``"constant gravity"``,
        ``"constant inertial parameters"`` for the known inertial-parameter errors with
        ``mechanics``; ``"constant mass"``, ``"constant inertia"``, ... without).
    """

    robot: str
    bound_nm: tuple
    saturation_free: bool
    saturations: tuple
    box: dict
    formats: dict
    domain: str
    hot_registers: tuple
    registers: tuple = field(repr=False)
    sources: dict = field(repr=False)

    @property
    def max_bound_nm(self):
        """float: the largest per-joint bound, N·m."""
        return max(self.bound_nm)

    def to_dict(self):
        """Return the certificate as JSON-ready data (lists and floats)."""
        return {
            "robot": self.robot,
            "bound_nm": list(self.bound_nm),
            "saturation_free": self.saturation_free,
            "saturations": [dict(s) for s in self.saturations],
            "box": {k: (list(v) if isinstance(v, (tuple, list)) else v)
                    for k, v in self.box.items()},
            "formats": dict(self.formats),
            "domain": self.domain,
            "hot_registers": [dict(h) for h in self.hot_registers],
            "sources": {k: list(v) for k, v in self.sources.items()},
            "registers": [dict(r) for r in self.registers],
        }

    def to_json(self, indent=1):
        """Return the certificate as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)


def default_box(robot, *, q_box=None, qd_max=None, qdd_max=DEFAULT_QDD_MAX):
    """Return the checked box ``(q_min, q_max, qd_max, qdd_max)``, arrays of shape (n,).

    Defaults: ``q`` within the joint limits (``±pi`` where none), ``|qd|`` within the velocity
    limits (:data:`DEFAULT_QD_MAX` where none), ``|qdd| <= qdd_max``.

    Raises
    ------
    ValueError
        If a bound is not finite, negative, of the wrong shape, or ``q_min > q_max``.
    """
    n = robot.n

    def vector(value, what):
        array = np.asarray(value, dtype=float)
        if array.ndim == 0:
            array = np.full(n, float(array))
        if array.shape != (n,):
            raise ValueError(f"{what} must be a number or have shape ({n},), not {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{what} must be finite, not {array.tolist()!r}")
        return array

    if q_box is None:
        q_min, q_max = robot.q_limits()
    else:
        try:
            q_min, q_max = q_box
        except (TypeError, ValueError):
            raise ValueError(f"q_box must be a pair (q_min, q_max), not {q_box!r}") from None
    q_min, q_max = vector(q_min, "q_box[0] (q_min)"), vector(q_max, "q_box[1] (q_max)")
    if np.any(q_min > q_max):
        i = int(np.argmax(q_min > q_max))
        raise ValueError(f"the q box is empty: joint {i + 1} has q_min {q_min[i]!r} > q_max "
                         f"{q_max[i]!r}")
    if qd_max is None:
        qd_max = [DEFAULT_QD_MAX if link.limits.qd_max is None else link.limits.qd_max
                  for link in robot.links]
    qd_max = vector(qd_max, "qd_max")
    qdd_max = vector(qdd_max, "qdd_max")
    for what, array in (("qd_max", qd_max), ("qdd_max", qdd_max)):
        if np.any(array < 0):
            raise ValueError(f"{what} must be >= 0, not {array.tolist()!r}")
    return q_min, q_max, qd_max, qdd_max


def range_formats(certificate, headroom_bits=1):
    """Return the most fractional bits per quantity that the certified ranges allow.

    For each quantity of :data:`QUANTITIES`, the largest ``|x| + |e|`` of its registers in the
    certificate (over every node) sets the integer bits ``k = ceil(log2(max))`` plus
    ``headroom_bits``; the 32-bit word leaves ``31 - k`` fractional bits (at most 31, and
    never fewer than the certificate's own). A what-if: certify again with them to see the
    bound (ranges do not grow when errors shrink, but the new certificate is the proof).

    Returns
    -------
    dict of str to int
    """
    largest = {}
    for record in certificate.registers:
        quantity = quantity_of(record["register"])
        if quantity is None:
            continue
        value = max(abs(v) for v in record["range"]) + record["error"]
        largest[quantity] = max(largest.get(quantity, 0.0), value)
    formats = {}
    for quantity in QUANTITIES:
        value = largest.get(quantity, 0.0)
        integer = max(0, math.ceil(math.log2(value))) if value > 1 else 0
        formats[quantity] = max(certificate.formats[quantity],
                                min(31, 31 - integer - headroom_bits))
    return formats


def _formats(fmt, formats):
    """Fractional bits of every register quantity: the register map's, then the overrides."""
    rmap = microprogram(fmt).registers
    bits = {}
    for reg in rmap:
        quantity = quantity_of(reg.name)
        if quantity is not None:
            bits.setdefault(quantity, reg.format.fraction_bits)
    if formats:
        for quantity, value in formats.items():
            if quantity not in QUANTITIES:
                raise ValueError(f"unknown quantity {quantity!r}; known: {tuple(QUANTITIES)!r}")
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 31:
                raise ValueError(f"fractional bits of {quantity!r} must be an integer in "
                                 f"0..31, not {value!r}")
            bits[quantity] = value
    return bits


def _fraction_bits(rmap, bits, name):
    quantity = quantity_of(name)
    return rmap[name].format.fraction_bits if quantity is None else bits[quantity]


def _encode_error(value, fraction_bits, what):
    """The encoding error word - value of a constant (half up), checked against the word."""
    word = math.floor(value * 2.0 ** fraction_bits + 0.5)
    if not -(1 << (WORD_WIDTH - 1)) <= word < (1 << (WORD_WIDTH - 1)):
        raise ValueError(f"{what} = {value!r} does not fit a 32-bit word with {fraction_bits} "
                         f"fractional bits")
    return word * 2.0 ** -fraction_bits - value


def certify(robot, *, q_box=None, qd_max=None, qdd_max=DEFAULT_QDD_MAX, wrench_max=None,
            fmt=None, formats=None, domain="affine", table=SINE_TABLE, vector_norms=True,
            mechanics=True, split_table=True, vector_roundings=True):
    """Certify the fixed-point torque error of a robot's node chain over a box of states.

    Parameters
    ----------
    robot : Robot
        The robot: a serial chain in plain DH (no mounts) of n revolute or prismatic joints,
        with its friction if it has any. A prismatic joint's ``q``, ``qd``, ``qdd`` are m, m/s,
        m/s^2 and its bound is a force, N (the travel's bounds: :mod:`.certify_prismatic`).
    q_box : (array_like, array_like), optional
        ``(q_min, q_max)``, rad (m), shape (n,) each or scalars; default the joint limits
        (``±pi`` where a joint has none).
    qd_max : float or array_like, optional
        ``|qd| <= qd_max``, rad/s (m/s); default the velocity limits (``pi`` where none).
    qdd_max : float or array_like
        ``|qdd| <= qdd_max``, rad/s^2 (m/s^2; default 10).
    wrench_max : (float, float), optional
        ``(F, M)``: every component of ``f_ext`` within ``±F`` N and of ``mu_ext`` within
        ``±M`` N·m, on every link (frame i, about origin i, as for :func:`linkdyn.model.rnea`);
        default no external wrench.
    fmt : NodeFormats, QFormat or None
        The node's formats (default :data:`~linkdyn.model.microprogram.NODE_FORMATS`, which
        the golden model and the gateware implement; a QFormat: one format everywhere).
    formats : dict of str to int, optional
        What-if: fractional bits per quantity of :data:`QUANTITIES` (the word stays 32 bits);
        default the register map's formats, which the golden model and gateware implement.
    domain : {"affine", "interval"}
        Exact values as affine forms over the state (default) or as intervals.
    table : SineTable
        What-if: the sine table whose proven worst case enters (default the node's).
    vector_norms : bool
        Keep the Euclidean-norm bounds of the vector groups (:data:`_GROUPS`, default); off,
        the analysis is componentwise only (to measure what the norms bring).
    mechanics : bool
        With ``vector_norms``, also bound the groups' values and the errors of ``f_local`` and
        ``mu_local`` by the mechanics of the recursion (:meth:`_Analysis.mechanics_norm`,
        :meth:`_Analysis.mechanics_error`; default); off, the program-order norm rules only.
    split_table : bool
        Take the sine table's error as one scaling of the joint rotation shared by sine and
        cosine plus a small residual each (:func:`sine_error_split`, default); off, as two
        independent errors of the global worst case (:func:`sine_error_bound`).
    vector_roundings : bool
        With ``vector_norms``, bound the three roundings of one vector's Dots together: their
        error is a vector of norm at most ``sqrt(3) delta``, and the spectral norm of its
        coefficient block is carried through the same linear maps as the norms
        (:meth:`_Analysis.close_triplets`; default); off, each rounding on its own (up to
        ``3 delta`` per vector).

    Returns
    -------
    Certificate

    Raises
    ------
    TypeError
        If ``robot`` is not a Robot or ``fmt`` neither NodeFormats nor a QFormat.
    NotImplementedError
        If the robot is a tree or has a mount (a chain of nodes runs plain DH; cut a chain
        with ``tip``, :func:`linkdyn.model.library.load_robot`).
    ValueError
        If the box is empty, not finite or negative, ``wrench_max`` is malformed, a quantity of
        ``formats`` is unknown, a constant does not fit its word, or the box exceeds the range
        of an input word (``q``, ``qd``, ``qdd``, ``f_ext``).
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if not robot.is_chain or any(link.has_mount for link in robot.links):
        raise NotImplementedError(
            f"certify analyses a serial chain of nodes in plain DH (a chain of nodes, as "
            f"linkdyn.model.golden.rnea_fixed runs it); robot {robot.name!r} is a tree or has "
            f"a mount: choose a chain with tip=LINK (--tip)")
    if domain not in ("affine", "interval"):
        raise ValueError(f"domain must be 'affine' or 'interval', not {domain!r}")
    q_min, q_max, qd_lim, qdd_lim = default_box(robot, q_box=q_box, qd_max=qd_max,
                                                qdd_max=qdd_max)
    if wrench_max is not None:
        try:
            force_max, moment_max = (float(v) for v in wrench_max)
        except (TypeError, ValueError):
            raise ValueError(f"wrench_max must be a pair (F, M) of numbers, not "
                             f"{wrench_max!r}") from None
        if not (math.isfinite(force_max) and math.isfinite(moment_max)) or force_max < 0 \
                or moment_max < 0:
            raise ValueError(f"wrench_max must be finite and >= 0, not {wrench_max!r}")
    bits = _formats(fmt, formats)
    analysis = _Analysis(robot, fmt, bits, domain, (q_min, q_max, qd_lim, qdd_lim),
                         None if wrench_max is None else (force_max, moment_max), table,
                         vector_norms, mechanics, split_table, vector_roundings)
    return analysis.run()


def _exactly_zero(register):
    """Whether a register's (value, error) is exactly 0 with no error."""
    value, error = register
    return (value.c == 0.0 and value.r == 0.0 and not np.any(value.a) and error.r == 0.0
            and not np.any(error.lo) and not np.any(error.hi))


def _neg(error):
    return _Error(-error.hi, -error.lo, error.r)


def _vec(prefix):
    return tuple(f"{prefix}_{c}" for c in "xyz")


#: Vector groups of the microprogram (three Dots that compute one 3-vector) and the vector
#: groups they read through an exact linear map, with a bound of that map's norm: ``"one"``
#: (a rotation ``R`` or ``R^T``, or the identity), ``"qd"`` (``qd (omega x z)``), ``"r"``,
#: ``"mc"`` (a cross product with the exact ``r`` or ``m c``), ``"m"``, ``"I"`` (the mass, the
#: inertia's spectral norm) or another group's name (a cross product with that group:
#: its value norm; the value of such a bilinear term counts once). The
#: analysis keeps a Euclidean-norm bound of every group's value, of each error symbol's
#: coefficient vector and of the remainder vector (a reduced product with a norm domain):
#: rotations preserve norms, intervals do not (the wrapping effect).
_GROUPS = {
    "omega": (_vec("omega"), {"omega_in": "one"}),
    "v": (("v_x", "v_y", "omega_dot_in_z"), {"omega_dot_in": "one", "omega_in": "qd"}),
    "omega_dot": (_vec("omega_dot"), {"v": "one"}),
    "u": (_vec("u"), {"omega": "r"}),
    "p_ddot": (_vec("p_ddot"), {"p_ddot_in": "one", "omega_dot": "r", "omega": "u",
                                "u": "omega"}),
    "w_mc": (_vec("w_mc"), {"omega": "mc"}),
    "f_local": (_vec("f_local"), {"p_ddot": "m", "omega_dot": "mc", "omega": "w_mc",
                                  "w_mc": "omega"}),
    "h": (_vec("h"), {"omega": "I"}),
    "mu_local": (_vec("mu_local"), {"f_local": "r", "p_ddot": "mc", "omega_dot": "I",
                                    "omega": "h", "h": "omega"}),
    "f": (_vec("f"), {"f_local": "one", "f_in": "one"}),
    "mu": (_vec("mu"), {"f_in": "r", "mu_local": "one", "mu_in": "one"}),
    "f_out": (_vec("f_out"), {"f": "one"}),
    "mu_out": (_vec("mu_out"), {"mu": "one"}),
}
#: Registers holding the entries of the joint rotation ``R = Rz(theta) Rx(alpha)``.
_ROTATION_ENTRIES = ("cos_theta", "sin_theta", "ct_ca", "st_ca", "ct_sa", "st_sa", "sin_alpha",
                     "cos_alpha")

#: Components of every group that is read (the groups above and the mailbox inputs).
_GROUPS_IN = {name: comps for name, (comps, _) in _GROUPS.items()}
_GROUPS_IN.update({name: _vec(name) for name in ("omega_in", "omega_dot_in", "p_ddot_in",
                                                 "f_in", "mu_in")})
_GROUP_OF = {c: name for name, (comps, _) in _GROUPS.items() for c in comps
             if c != "omega_dot_in_z"}


class _Analysis:
    """One run of the abstract interpreter over the chain (see the module docstring)."""

    def __init__(self, robot, fmt, bits, domain, box, wrench, table=SINE_TABLE,
                 vector_norms=True, mechanics=True, split_table=True, vector_roundings=True):
        self.vector_norms = vector_norms
        self.mechanics = mechanics and vector_norms
        self.robot, self.fmt, self.bits, self.wrench = robot, node_formats(fmt), bits, wrench
        self.q_min, self.q_max, self.qd_max, self.qdd_max = box
        self.program = microprogram(fmt)
        self.rmap = self.program.registers
        n = robot.n
        # Prismatic nodes (q moves d): the box's travel enters r, c' and I' (link_mechanics)
        # and the joint's rate and acceleration the base acceleration (base_acceleration_norm).
        self.prismatic = [link.joint_type == "prismatic" for link in robot.links]
        per_node = 3 + (6 if wrench else 0)
        self.values = _Domain(per_node * n, domain == "affine")
        ops = sum(len(seg.ops) for seg in self.program.segments.values())
        self.errors = _Errors(n * (ops + len(self.rmap.of_kind("constant")) + 20) + 10)
        self.domain = domain
        self.saturations = []
        self.records = []
        self.pending = {}
        self.norms = [dict() for _ in range(n)]
        self.aliases = [dict() for _ in range(n)]
        self.cylinders = [dict() for _ in range(n)]
        # Vector roundings (vector_roundings): per node and group, per rounding triplet (the
        # three roundings of one group's Dots), a bound on the spectral norm of their 3x3
        # coefficient block in the group's error; and the triplets' symbol indices.
        self.vector_roundings = vector_roundings and self.vector_norms
        self.triplet_norms = [{} for _ in range(n)]
        self.triplets = {}
        self.triplet_slot = {}
        self.triplet_capacity = len(_GROUPS) * n
        self._triplet_flat = (np.zeros(0, dtype=int), np.zeros(0, dtype=int))
        self.rotation_error = []
        self.table_bound = None if split_table else sine_error_bound(table)
        self.split_table = split_table
        self.table_split = sine_error_split(table)
        self.cordic_bound = cordic_error_bound()

    # -- helpers ---------------------------------------------------------------------------

    def fbits(self, name):
        return _fraction_bits(self.rmap, self.bits, name)

    def limit(self, name):
        f = self.fbits(name)
        return (-(2.0 ** 31) * 2.0 ** -f, (2.0 ** 31 - 1) * 2.0 ** -f)

    def state_symbol(self, node, k):
        return node * (3 + (6 if self.wrench else 0)) + k

    def input(self, node, name, k, low, high):
        """An input word: exact value over the box, error half an LSB of its word."""
        lo_limit, hi_limit = self.limit(name)
        f = self.fbits(name)
        # The encoder rounds half up and refuses values whose word does not fit.
        if high * 2.0 ** f + 0.5 >= 2.0 ** 31 or low * 2.0 ** f + 0.5 < -(2.0 ** 31):
            raise ValueError(f"the box exceeds the word of node {node + 1} {name}: "
                             f"[{low!r}, {high!r}] does not fit [{lo_limit!r}, {hi_limit!r}]")
        value = self.values.symbol(self.state_symbol(node, k), low, high)
        if low == high == 0.0:
            return value, self.errors.zero()
        return value, self.errors.new(2.0 ** -(f + 1), ("input", name, node))

    def constant(self, node, name, exact, fraction_bits=None, wraps=False):
        f = self.fbits(name) if fraction_bits is None else fraction_bits
        what = f"node {node + 1} constant {name}"
        if wraps:
            word = math.floor(exact * 2.0 ** f + 0.5)
            delta = word * 2.0 ** -f - exact
            delta -= round(delta)  # whole turns do not matter
        else:
            delta = _encode_error(exact, f, what)
        value = self.values.const(exact)
        if delta == 0.0:
            return value, self.errors.zero()
        return value, self.errors.new(abs(delta), ("constant", name, node))

    # -- operations -----------------------------------------------------------------------

    def term(self, regs, term, group_sources=None):
        """Value and error of one term; with ``group_sources`` also its split into the parts
        that are a source group's error seen through the exact other operand (``parts``,
        by source group) and the rest (``rest`` error, ``rest_value`` or ``None``)."""
        (va, ea), (vb, eb) = regs[term.a], regs[term.b]
        ga = gb = None
        if group_sources:
            ga = next((g for g in group_sources if term.a in _GROUPS_IN[g]), None)
            gb = next((g for g in group_sources if term.b in _GROUPS_IN[g]), None)
        parts = {}
        if term.kind == "mul":
            value = self.values.mul(va, vb)
            a_part, b_part = _Errors.scale(ea, vb), _Errors.scale(eb, va)
            rest = self.errors.zero()
            rest.r = ea.magnitude() * eb.magnitude()
            for group, part, name, partner in ((ga, a_part, term.a, gb),
                                               (gb, b_part, term.b, ga)):
                if group is None and partner is not None and name in _ROTATION_ENTRIES:
                    # (R~ - R) v: the rotation's own error seen through the group's value.
                    key = ("rotation", partner)
                    parts[key] = _Errors.add(parts[key], part) if key in parts else part
                elif group is None:
                    rest = _Errors.add(rest, part)
                else:
                    parts[group] = _Errors.add(parts[group], part) if group in parts else part
            rest_value = value if ga is None and gb is None else None
        else:
            value = self.values.add(va, vb)
            rest, rest_value = self.errors.zero(), None
            for group, part, v in ((ga, ea, va), (gb, eb, vb)):
                if group is None:
                    rest = _Errors.add(rest, part)
                    rest_value = v if rest_value is None else self.values.add(rest_value, v)
                else:
                    parts[group] = _Errors.add(parts[group], part) if group in parts else part
        error = rest
        for part in parts.values():
            error = _Errors.add(error, part)
        rot = {k: v for k, v in parts.items() if isinstance(k, tuple)}
        if term.negate:
            value = self.values.neg(value)
            error = _neg(error)
            rest = _neg(rest)
            rest_value = None if rest_value is None else self.values.neg(rest_value)
            rot = {k: _neg(v) for k, v in rot.items()}
        return value, error, rest, rest_value, rot

    def term_bits(self, term):
        fa, fb = self.fbits(term.a), self.fbits(term.b)
        return fa + fb if term.kind == "mul" else max(fa, fb if term.b != "zero" else fa)

    def exact_terms(self, node, regs, op):
        """The terms of a Dot as the joint type leaves them on a revolute node.

        A product with the joint-type word 0, or with a selection of :data:`_SELECTIONS` that
        is exactly 0, is left out; one with the word 1 is its other operand; an operand that
        is a copy of another register (:attr:`aliases`) is that register. The MAC's word is
        the same: the products with the 0/1 words ``revolute``, ``prismatic`` are exact, and a
        term that is exactly 0 adds nothing, nor fractional bits that would need rounding. So
        a revolute node is analysed as the program without the prismatic terms.
        """
        alias = self.aliases[node]
        terms = []
        for term in op.terms:
            term = Term(alias.get(term.a, term.a), alias.get(term.b, term.b), term.kind,
                        term.negate)
            zero = [(name in _SELECTIONS or name in _ZERO_CONSTANTS or name == "rate")
                    and _exactly_zero(regs[name]) for name in (term.a, term.b)]
            if term.kind == "mul":
                for one, other in ((term.a, term.b), (term.b, term.a)):
                    if self.rmap[one].format.name == "count":
                        weight = regs[one][0].c
                        if weight == 0.0:
                            term = None
                        elif weight == 1.0:
                            term = Term(other, "zero", "add", term.negate)
                        else:  # pragma: no cover - the words are 0 or 1 (node_registers)
                            raise AssertionError(f"joint-type word {one} = {weight!r}")
                        break
                else:
                    if any(zero):
                        term = None
            elif zero[1]:
                term = Term(term.a, "zero", "add", term.negate)
            elif zero[0] and term.b != "zero":
                term = Term(term.b, "zero", "add", term.negate)
            if term is not None:
                terms.append(term)
        if len(terms) == 2 and all(t.kind == "add" and t.b == "zero" and not t.negate
                                   for t in terms):
            terms = [Term(terms[0].a, terms[1].a, "add")]  # one sum, as the pre-adder
        return terms

    def dot(self, node, regs, op):
        if op.dst in ("sin_theta", "cos_theta"):
            return self.trig(node, regs, op)
        terms = self.exact_terms(node, regs, op)
        if not terms:
            regs[op.dst] = (self.values.const(0.0), self.errors.zero())
            return
        if op.dst in _SELECTIONS and len(terms) == 1 and terms[0].kind == "add" \
                and terms[0].b == "zero" and not terms[0].negate \
                and self.fbits(op.dst) >= self.fbits(terms[0].a):
            # An exact copy: later terms read the register it copies.
            self.aliases[node][op.dst] = terms[0].a
            regs[op.dst] = regs[terms[0].a]
            return
        group = _GROUP_OF.get(op.dst) if self.vector_norms else None
        sources = _GROUPS[group][1] if group else None
        value = error = rest_error = rest_value = None
        rot_error = {}
        for term in terms:
            v, e, rest, rv, rot = self.term(regs, term, sources)
            value = v if value is None else self.values.add(value, v)
            error = e if error is None else _Errors.add(error, e)
            rest_error = rest if rest_error is None else _Errors.add(rest_error, rest)
            for key, part in rot.items():
                rot_error[key] = _Errors.add(rot_error[key], part) if key in rot_error else part
            if rv is not None:
                rest_value = rv if rest_value is None else self.values.add(rest_value, rv)
        acc_bits = max(self.term_bits(t) for t in terms)
        f = self.fbits(op.dst)
        if acc_bits > f:
            rounding = self.errors.new(2.0 ** -(f + 1), ("rounding", op.dst, node))
            error = _Errors.add(error, rounding)
            rest_error = _Errors.add(rest_error, rounding)
        if self.rmap[op.dst].format.wraps:
            regs[op.dst] = (value, error)  # the phase: wraps by whole turns, see trig()
            return
        regs[op.dst] = (value, error)
        if group is None:
            self.check(node, op.dst, value, error)
            return
        self.pending.setdefault(group, {})[op.dst] = (rest_value, rest_error, rot_error)
        comps = _GROUPS[group][0]
        if group == "v":
            self.pending["v"]["omega_dot_in_z"] = (None, self.errors.zero(), {})
        if all(c in self.pending[group] for c in comps):
            self.close_group(node, regs, group)

    def factor(self, node, kind):
        """The norm of an exact linear map of a group rule (see :data:`_GROUPS`)."""
        link = self.robot.links[node]
        slack = 1 + 1e-12
        if kind == "one":
            return 1.0
        if kind == "qd":
            # A prismatic node's v has no qd omega_in x z term (qd_revolute is 0).
            return 0.0 if self.prismatic[node] else float(self.qd_max[node])
        if kind == "r":
            if self.prismatic[node]:
                return self.link_mechanics(node)["r"]  # the largest |r(q)| of the travel
            return float(np.linalg.norm(link_offset_vector(link))) * slack
        if kind == "mc":
            return float(np.linalg.norm(link.first_moment)) * slack
        if kind == "m":
            return abs(float(link.mass)) * slack
        if kind == "I":
            return float(np.linalg.norm(link.inertia_origin, 2)) * slack
        return self.norms[node][kind][0]  # another group's value norm (a bilinear term)

    def close_group(self, node, regs, group):
        """Norm bounds of a completed vector group; clamp its components to them."""
        comps, sources = _GROUPS[group]
        pending = self.pending.pop(group)
        norms = self.norms[node]
        value_norm = 0.0
        error_norm = np.zeros(self.errors.size)
        remainder = 0.0
        for name, kind in sources.items():
            factor = self.factor(node, kind)
            n_value, n_error, n_rem = norms[name]
            if kind not in _GROUPS_IN or name < kind:  # a bilinear term's value counts once
                value_norm += factor * n_value
            error_norm = error_norm + factor * n_error
            remainder += factor * n_rem
        rest_values = []
        rest_errors = []
        rest_rems = []
        rotations = {}
        for c in comps:
            rv, re, rot = pending[c]
            rest_values.append(0.0 if rv is None else max(abs(b) for b in rv.bounds()))
            rest_errors.append(re.per_symbol())
            rest_rems.append(re.r)
            for key, part in rot.items():
                rotations.setdefault(key, []).append(part)
        for (_, source), parts in rotations.items():
            # (R~ - R) v for the exact v of a source group: per symbol at most
            # ||R~ - R||_s N(v) (rotation_error), or what its components say.
            own = np.sqrt(sum(p.per_symbol() ** 2 for p in parts))
            error_norm = error_norm + np.minimum(own, self.rotation_error[node]
                                                 * norms[source][0])
            remainder += math.sqrt(sum(p.r ** 2 for p in parts))
        value_norm = (value_norm + math.sqrt(sum(v * v for v in rest_values))) * (1 + 1e-12)
        error_norm = (error_norm + np.sqrt(sum(e * e for e in rest_errors))) * (1 + 1e-12)
        remainder = (remainder + math.sqrt(sum(r * r for r in rest_rems))) * (1 + 1e-12)
        # The components' own bounds may be tighter: keep the smaller.
        own = self.component_norms(regs, comps)
        value_norm = min(value_norm, own[0])
        if self.mechanics:
            value_norm = min(value_norm, self.mechanics_norm(node, regs, group))
        error_norm = np.minimum(error_norm, own[1])
        remainder = min(remainder, own[2])
        if self.mechanics and group in ("f_local", "mu_local") and not self.saturations:
            alt_error, alt_remainder = self.mechanics_error(node, regs, group)
            error_norm = np.minimum(error_norm, alt_error)
            remainder = min(remainder, alt_remainder)
        norms[group] = (value_norm, error_norm, remainder)
        for c in comps:
            if group == "v" and c == "omega_dot_in_z":
                continue
            value, error = regs[c]
            lo, hi = value.bounds()
            if lo < -value_norm or hi > value_norm:
                value = self.values.interval(max(lo, -value_norm), min(hi, value_norm))
            error = _Error(np.maximum(error.lo, -error_norm), np.minimum(error.hi, error_norm),
                           min(error.r, remainder))
            regs[c] = (value, error)
            self.check(node, c, value, error)
        if self.vector_roundings:
            self.close_triplets(node, regs, group, pending, rotations)

    def close_triplets(self, node, regs, group, pending, rotations):
        """Spectral-norm bounds of the rounding triplets' coefficient blocks in a group.

        A triplet is the three half-up roundings of one group's Dots at one node, each at most
        ``delta_c``: its error is ``B eta`` with ``eta`` in the cube ``[-1, 1]**3``, so
        ``|B eta| <= sqrt(3) ||B||``, where the three roundings on their own give up to ``3
        ||B||``. At the group that rounds them ``B = diag(delta_c)``, ``||B|| = max delta_c``;
        then every group's block is the sum of its source groups' blocks through the rule's
        exact linear maps (norm at most the rule's factor, :meth:`factor`) and of the parts
        outside the rules (their Frobenius norm), as the per-symbol norms of
        :meth:`close_group` are, but for the block; the Frobenius norm of the components'
        own coefficients bounds it too. :meth:`certificate` bounds each triplet's
        part of a torque by the smaller of the sum of its three coefficients and ``sqrt(3)
        ||B||`` of ``mu_out`` (``tau = mu_out_z`` plus friction, which holds no rounding of a
        vector).
        """
        comps, sources = _GROUPS[group]
        mine = self.triplet_norms[node]
        blocks = np.zeros(self.triplet_capacity)
        for name, kind in sources.items():
            if name in mine:
                blocks += self.factor(node, kind) * mine[name]
        rest = [pending[c][1].per_symbol() for c in comps]
        rest += [p.per_symbol() for parts in rotations.values() for p in parts]
        rest = np.array(rest)
        own = [self.errors.index[("rounding", c, node)] for c in comps
               if ("rounding", c, node) in self.errors.index]
        if own:
            self.triplet_slot[(group, node)] = len(self.triplets)
            self.triplets[(group, node)] = np.array(own)
        count = len(self.triplets)
        if count:
            if len(self._triplet_flat[1]) != count:
                keys = list(self.triplets)
                flat = np.concatenate([self.triplets[k] for k in keys])
                starts = np.cumsum([0] + [len(self.triplets[k]) for k in keys[:-1]])
                self._triplet_flat = (flat, starts)
            flat, starts = self._triplet_flat
            blocks[:count] += np.sqrt(np.add.reduceat((rest[:, flat] ** 2).sum(axis=0), starts))
            if own:
                blocks[count - 1] = max(self.errors.magnitudes[k] for k in own)
            # The block's Frobenius norm from the components' own coefficients bounds it too.
            final = np.array([regs[c][1].per_symbol() for c in comps])
            frobenius = np.sqrt(np.add.reduceat((final[:, flat] ** 2).sum(axis=0), starts))
            blocks[:count] = np.minimum(blocks[:count], frobenius * (1 + 1e-12))
            if self.mechanics and group in ("f_local", "mu_local") and not self.saturations:
                alternative, _ = self.mechanics_error(node, regs, group, count)
                blocks[:count] = np.minimum(blocks[:count], alternative)
        mine[group] = blocks * (1 + 1e-12)

    def _cylinder(self, regs, prefix, norm, node=None):
        """Bounds ``(P, Z)`` of the xy-part and the z-component of a vector (frame of its
        components) from its component ranges, its norm bound and, for ``omega``,
        ``omega_dot``, ``v`` and the incoming ``omega_in``, ``omega_dot_in``, the bounds
        carried through the rotations (:meth:`_turn_cylinder`)."""
        comps = ("v_x", "v_y", "omega_dot_in_z") if prefix == "v" else _vec(prefix)
        bx, by, bz = (max(abs(b) for b in regs[c][0].bounds()) for c in comps)
        p, z = min(norm, math.hypot(bx, by)), min(norm, bz)
        if node is not None and prefix in self.cylinders[node]:
            carried_p, carried_z = self.cylinders[node][prefix]
            p, z = min(p, carried_p), min(z, carried_z)
        return p, z

    def _turn_cylinder(self, node, p, z):
        """``(P, Z)`` of ``R^T w`` for ``w`` within ``(P, Z)``, ``R = Rz(theta) Rx(alpha)``.

        ``Rz(theta)^T`` keeps both; ``Rx(alpha)^T`` maps ``(x, y, z)`` to ``(x, c y + s z,
        -s y + c z)``: the new z-component is at most ``|s| P + |c| Z``, and the largest
        ``x^2 + (|c| y + |s| Z)^2`` over ``x^2 + y^2 <= P^2`` is ``P^2 + Z^2`` when ``|c| Z <=
        |s| P`` (at ``y = |c| Z / |s|``), else ``(|c| P + |s| Z)^2`` (at ``y = P``).
        """
        alpha = self.robot.links[node].alpha
        c, s = abs(math.cos(alpha)), abs(math.sin(alpha))
        slack = 1 + 1e-12
        new_p = math.hypot(p, z) if c * z <= s * p else c * p + s * z
        return new_p * slack, (s * p + c * z) * slack

    def mechanics_norm(self, node, regs, group):
        """A second bound on a group's value norm from the mechanics of the recursion.

        Each is an identity of the exact recursion, bounded term by term (the program
        computes the left side; its error is analysed as before):

        * ``omega = R^T (omega_in + qd z)`` and ``omega_dot = R^T (v + qdd z)``: the ``z``
          terms only add to the z-component, ``|w + a z|^2 <= min(N^2, P^2 + Z^2) + 2 |a| Z +
          a^2`` with ``N`` the norm, ``P`` the xy-part and ``Z`` the z-component bound of ``w``
          (a cylinder; a rotation about ``z`` keeps ``P`` and ``Z``, the twist turns them,
          :meth:`_turn_cylinder`);
        * ``v = omega_dot_in + qd omega_in x z``: ``omega_in x z`` is the xy-part of
          ``omega_in`` turned a quarter, it adds to the xy-part of ``omega_dot_in`` only;
        * ``f_local = m R^T p_ddot_in + omega_dot x c' + omega x (omega x c') + f_ext`` with
          the first moment about origin ``i-1``, ``c' = m r + m c``: the inertial force about
          the previous origin, where ``m r`` and ``m c`` largely cancel;
        * ``mu_local = I' omega_dot + omega x I' omega + c' x R^T p_ddot_in + r x f_ext +
          mu_ext`` with the inertia about origin ``i-1``, ``I' = I + m (|r|^2 1 - r r^T) +
          2 (r . m c) 1 - r (m c)^T - (m c) r^T``; ``|omega x I' omega| <= (l_max - l_min)/2
          |omega|^2`` (``l``: the eigenvalues of ``I'``; ``omega x (I' - s 1) omega`` for any
          ``s``).
        """
        norms = self.norms[node]
        cylinders = self.cylinders[node]
        qd, qdd = float(self.qd_max[node]), float(self.qdd_max[node])
        if self.prismatic[node]:
            qd = qdd = 0.0  # a prismatic joint adds no rate to omega, omega_dot, v
        slack = 1 + 1e-12
        if group == "omega":
            n_in = norms["omega_in"][0]
            p, z = self._cylinder(regs, "omega_in", n_in, node)
            cylinders["omega"] = self._turn_cylinder(node, p, z + qd)
            return math.sqrt(min(n_in ** 2, p * p + z * z) + 2 * qd * z + qd * qd) * slack
        if group == "v":
            n_w = norms["omega_in"][0]
            p_w, _ = self._cylinder(regs, "omega_in", n_w, node)
            n_d = norms["omega_dot_in"][0]
            p_d, z_d = self._cylinder(regs, "omega_dot_in", n_d, node)
            t = qd * p_w
            cylinders["v"] = ((p_d + t) * slack, z_d)
            return math.sqrt(min(n_d ** 2, p_d * p_d + z_d * z_d) + 2 * p_d * t + t * t) * slack
        if group == "omega_dot":
            n_v = norms["v"][0]
            p_v, z_v = self._cylinder(regs, "v", n_v, node)
            cylinders["omega_dot"] = self._turn_cylinder(node, p_v, z_v + qdd)
            return math.sqrt(min(n_v ** 2, p_v * p_v + z_v * z_v) + 2 * qdd * z_v
                             + qdd * qdd) * slack
        if group in ("f_local", "mu_local"):
            mech = self.link_mechanics(node)
            n_wd, n_w = norms["omega_dot"][0], norms["omega"][0]
            n_p = self.base_acceleration_norm(node)
            force, moment = (0.0, 0.0) if self.wrench is None else self.wrench
            if group == "f_local":
                bound = (mech["m"] * n_p + mech["c1"] * (n_wd + n_w * n_w)
                         + math.sqrt(3) * force)
            else:
                bound = (mech["I1"] * n_wd + mech["I1_spread"] * n_w * n_w + mech["c1"] * n_p
                         + math.sqrt(3) * (mech["r"] * force + moment))
            return bound * slack
        return math.inf

    def _factor(self, regs, names, value):
        """A factor ``(value norm, per-symbol error norm, remainder)`` of a vector or scalar
        register set (its components' errors; every symbol of a constant or a rounding sits in
        one component)."""
        per = [regs[c][1].per_symbol() for c in names]
        rem = math.sqrt(sum(regs[c][1].r ** 2 for c in names))
        return value, np.sqrt(sum(e * e for e in per)), rem

    def _roundings(self, node, names):
        """The rounding symbols of registers ``names`` at ``node`` as a factor of value 0."""
        index = self.errors.index
        e = np.zeros(self.errors.size)
        for name in names:
            k = index.get(("rounding", name, node))
            if k is not None:
                e[k] = self.errors.magnitudes[k]
        return 0.0, e, 0.0

    @staticmethod
    def _product(*factors):
        """First-order per-symbol norm bound and remainder of the error of a product of
        norm-submultiplicative factors (scalars, cross products, matrix times vector), each
        ``(v, E, R)``: value norm ``v``, per-symbol first-order error norms ``E`` and
        remainder ``R``. First order: ``sum_i E_i prod_(j != i) v_j``; remainder: ``sum_i
        R_i prod_(j != i) v_j + prod (v + t) - prod v - sum_i t_i prod_(j != i) v_j`` with
        ``t_i = sum E_i + R_i`` (every product of two or more errors)."""
        values = [f[0] for f in factors]
        totals = [float(np.sum(f[1])) + f[2] for f in factors]
        first = 0.0
        remainder = 0.0
        linear_total = 0.0
        for i, (v, e, r) in enumerate(factors):
            others = math.prod(values[:i] + values[i + 1:])
            first = first + e * others
            remainder += r * others
            linear_total += totals[i] * others
        remainder += max(0.0, math.prod(v + t for v, t in zip(values, totals))
                         - math.prod(values) - linear_total)
        return first, remainder

    def mechanics_error(self, node, regs, group, triplets=None):
        """A second bound on the error norms of ``f_local`` or ``mu_local`` (per symbol, and
        the remainder), from the identities of :meth:`mechanics_norm` applied to the words
        the node computes.

        With the encoded constants ``m~, r~, m c~, I~`` and the node's rounded words
        ``p_ddot~ = R~^T p_ddot_in~ + omega_dot~ x r~ + omega~ x u~ + rho_p``, ``u~ = omega~ x
        r~ + rho_u``, ``w_mc~ = omega~ x m c~ + rho_w``, ``h~ = I~ omega~ + rho_h`` (``rho``:
        the Dot roundings), the Dots compute exactly::

            f_local~ = m~ a~ + omega_dot~ x c'~ + omega~ x (omega~ x c'~) + m~ omega~ x rho_u
                       + omega~ x rho_w + m~ rho_p + f_ext~ + rho_f
            mu_local~ = I'~ omega_dot~ + omega~ x I'~ omega~ + c'~ x a~ + r~ x (m~ omega~ x
                        rho_u + omega~ x rho_w + m~ rho_p + rho_f) + m c~ x (omega~ x rho_u +
                        rho_p) + omega~ x rho_h + r~ x f_ext~ + mu_ext~ + rho_mu

        with ``a~ = R~^T p_ddot_in~``, ``c'~ = m~ r~ + m c~`` and ``I'~`` from ``m~, r~, m c~,
        I~`` (:meth:`mechanics_norm`), so their errors against the exact recursion are sums of
        products of the factors' errors (:meth:`_product`). The error analysis keeps, for
        every register, the exact first-order coefficient of each error symbol and a bound on
        the rest (no clamp has acted: this bound is only used while no register can
        saturate), so both this bound and the program-order one bound the same coefficients
        and the smaller of the two holds. With ``triplets`` (a count), the same first-order
        bound for the block norms of the first ``triplets`` rounding triplets
        (:meth:`close_triplets`) instead of the symbols.

        A prismatic node has none (infinite bounds: the program-order bound holds alone): its
        words' identity would also carry the errors of ``q`` in ``r`` and of ``qd``, ``qdd``
        in the base acceleration ``A`` (:meth:`base_acceleration_norm`).
        """
        if self.prismatic[node]:
            size = self.errors.size if triplets is None else triplets
            return np.full(size, math.inf), math.inf
        mech = self.link_mechanics(node)
        norms = self.norms[node]
        m = self._factor(regs, ("m",), mech["m"])
        r = self._factor(regs, _vec("r"), mech["r"])
        mc = self._factor(regs, _vec("mc"), mech["mc"])
        w = norms["omega"]
        wd = norms["omega_dot"]
        n_in, e_in, r_in = norms["p_ddot_in"]
        rot = self.rotation_error[node]
        if triplets is not None:
            # The same bound for the rounding triplets' block norms (close_triplets): the
            # constants and the rotation hold no rounding of a vector, the motion's blocks
            # are carried, each own rounding triplet's block is diag(delta).
            zero = np.zeros(triplets)
            blocks = self.triplet_norms[node]

            def carried(name):
                return blocks[name][:triplets] if name in blocks else zero

            m, r, mc = ((f[0], zero, f[2]) for f in (m, r, mc))
            w, wd = (norms["omega"][0], carried("omega"), w[2]), (wd[0], carried("omega_dot"),
                                                                 wd[2])
            e_in, rot = carried("p_ddot_in"), np.zeros_like(zero)
            regs = {**regs, **{name: (regs[name][0], _Error(zero, zero, regs[name][1].r))
                               for name in ("I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz")
                               + _vec("f_ext") + _vec("mu_ext")}}
        rot_rem = math.sqrt(sum(regs[c][1].r ** 2 for c in _ROTATION_ENTRIES))
        rot_total = float(np.sum(rot)) + rot_rem
        in_total = float(np.sum(e_in)) + r_in
        a = (n_in, e_in + rot * n_in, r_in + rot_rem * n_in + rot_total * in_total)
        # c' = m r + m c: first order |r| E_m + m E_r + E_mc, remainder t_m t_r.
        totals = {k: float(np.sum(f[1])) + f[2] for k, f in (("m", m), ("r", r), ("mc", mc))}
        c1 = (mech["c1"], mech["r"] * m[1] + mech["m"] * r[1] + mc[1],
              mech["r"] * m[2] + mech["m"] * r[2] + mc[2] + totals["m"] * totals["r"])
        force, moment = (0.0, 0.0) if self.wrench is None else self.wrench
        f_ext = self._factor(regs, _vec("f_ext"), math.sqrt(3) * force)
        mu_ext = self._factor(regs, _vec("mu_ext"), math.sqrt(3) * moment)
        rho = {name: self._roundings(node, _vec(name))
               for name in ("u", "w_mc", "p_ddot", "f_local", "h", "mu_local")}
        if triplets is not None:
            for name in rho:
                e = np.zeros(triplets)
                slot = self.triplet_slot.get((name, node), triplets)
                if slot < triplets:
                    e[slot] = max(self.errors.magnitudes[k] for k in self.triplets[(name, node)])
                rho[name] = (0.0, e, 0.0)
        P = self._product
        if group == "f_local":
            terms = [P(m, a), P(wd, c1), P(w, w, c1), P(m, w, rho["u"]), P(w, rho["w_mc"]),
                     P(m, rho["p_ddot"]), P(f_ext), P(rho["f_local"])]
        else:
            # I' = I + m (|r|^2 1 - r r^T) + 2 (r . mc) 1 - r mc^T - mc r^T (spectral norms).
            inertia = self._factor(regs, ("I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz"),
                                   mech["I1"])
            r_norm, m_val, mc_norm = mech["r"], mech["m"], mech["mc"]
            e_inertia = (inertia[1] + r_norm ** 2 * m[1] + 4 * (m_val * r_norm + mc_norm) * r[1]
                         + 4 * r_norm * mc[1])
            t_m, t_r, t_mc = totals["m"], totals["r"], totals["mc"]
            r_inertia = (inertia[2] + r_norm ** 2 * m[2] + 4 * (m_val * r_norm + mc_norm) * r[2]
                         + 4 * r_norm * mc[2] + t_m * 4 * r_norm * t_r
                         + (m_val + t_m) * 2 * t_r ** 2 + 4 * t_r * t_mc)
            i1 = (mech["I1"], e_inertia, r_inertia)
            # omega x I' omega: first order e x (I' - s) omega + omega x (I' - s) e + omega x
            # dI' omega, so 2 spread |omega| E_w + |omega|^2 E_I'.
            gyro_first = 2 * mech["I1_spread"] * w[0] * w[1] + w[0] ** 2 * i1[1]
            _, gyro_rem = P(w, i1, w)
            gyro_rem += 2 * mech["I1_spread"] * w[0] * w[2]
            terms = [P(i1, wd), (gyro_first, gyro_rem), P(c1, a),
                     P(r, m, w, rho["u"]), P(mc, w, rho["u"]), P(r, w, rho["w_mc"]),
                     P(r, m, rho["p_ddot"]), P(mc, rho["p_ddot"]), P(r, rho["f_local"]),
                     P(w, rho["h"]), P(rho["mu_local"]), P(r, f_ext), P(mu_ext)]
        first = sum(t[0] for t in terms)
        remainder = sum(t[1] for t in terms)
        slack = 1 + 1e-9
        return np.asarray(first) * slack, remainder * slack

    def encoded_parameters(self, node):
        """The link's inertial parameters as the node's words encode them (``m, mc, I``),
        and their differences from the exact ones (the same order as
        :meth:`~linkdyn.model.robot.Link.parameters`)."""
        exact = np.asarray(self.robot.links[node].parameters(), dtype=float)[:10]
        bits = np.array([2.0 ** self.fbits(name) for name in _INERTIAL])
        encoded = np.floor(exact * bits + 0.5) / bits
        return encoded, encoded - exact

    def add_known_parameters(self, node, regs):
        """After the local segment: refer ``f_local`` and ``mu_local`` to the exact robot.

        The node's words encode the inertial parameters ``pi~`` (``m, mc, I``), whose errors
        ``dpi = pi~ - pi`` are known numbers, so up to here the analysis takes the encoded
        robot as its reference (:meth:`node_registers`). The link's wrench is linear in its
        parameters (eq. 12), so the exact one differs from the encoded one's by the wrench of
        ``dpi`` on the same motion: ``df = dm p_ddot + omega_dot x d(mc) + omega x (omega x
        d(mc))``, ``dmu = r x df + d(mc) x p_ddot + dI omega_dot + omega x dI omega``. This adds
        it as one error symbol of the node (``eta = 1``) whose coefficients are the ranges of
        ``df`` and ``dmu`` over the box (affine forms of the state, so their direction is kept
        where the box is narrow), with the norm bounds ``|dm| |a| + |dc'| (|omega_dot| +
        |omega|^2)`` and ``||dI'|| |omega_dot| + (l_max - l_min)/2 |omega|^2 + |dc'| |a|``
        about origin ``i-1`` (:meth:`mechanics_norm`), and subtracts it from the values.
        """
        _, delta = self.encoded_parameters(node)
        values = self.values
        const = values.const
        dm = float(delta[0])
        dmc = [const(float(v)) for v in delta[1:4]]
        xx, xy, xz, yy, yz, zz = (float(v) for v in delta[4:10])
        d_inertia = ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))
        value = lambda name: regs[name][0]  # noqa: E731
        p, wd, w = ([value(c) for c in _vec(name)] for name in ("p_ddot", "omega_dot", "omega"))
        # r at q (r_q_y, r_q_z: on a revolute node copies of r_y, r_z).
        r = [value(c) for c in ("r_x", "r_q_y", "r_q_z")]

        def scale(x, c):
            return values.mul(x, const(c))

        def cross(a, b):
            return [values.add(values.mul(a[(k + 1) % 3], b[(k + 2) % 3]),
                               values.mul(a[(k + 2) % 3], b[(k + 1) % 3]), -1.0)
                    for k in range(3)]

        def add(*vectors):
            out = list(vectors[0])
            for v in vectors[1:]:
                out = [values.add(x, y) for x, y in zip(out, v)]
            return out

        def matrix(m, v):
            return [values.add(values.add(scale(v[0], m[k][0]), scale(v[1], m[k][1])),
                               scale(v[2], m[k][2])) for k in range(3)]

        df = add([scale(x, dm) for x in p], cross(wd, dmc), cross(w, cross(w, dmc)))
        dmu = add(cross(r, df), cross(dmc, p), matrix(d_inertia, wd),
                  cross(w, matrix(d_inertia, w)))
        # Norm bounds about origin i-1.
        r_exact = link_offset_vector(self.robot.links[node])
        dmc_v = delta[1:4]
        d_matrix = np.array(d_inertia)
        shifted = (d_matrix + dm * (float(r_exact @ r_exact) * np.eye(3)
                                    - np.outer(r_exact, r_exact))
                   + 2 * float(r_exact @ dmc_v) * np.eye(3) - np.outer(r_exact, dmc_v)
                   - np.outer(dmc_v, r_exact))
        eig = np.linalg.eigvalsh(0.5 * (shifted + shifted.T))
        dc = float(np.linalg.norm(dm * r_exact + dmc_v))
        norms = self.norms[node]
        n_w, n_wd = norms["omega"][0], norms["omega_dot"][0]
        n_in = self.base_acceleration_norm(node)
        largest, spread = float(np.max(np.abs(eig))), 0.5 * float(eig[-1] - eig[0])
        if self.prismatic[node]:
            # r moves with q: the largest |dc'| and the eigenvalue bounds over the travel.
            axis = joint_axis(self.robot.links[node].alpha)
            lo, hi = float(self.q_min[node]), float(self.q_max[node])
            dc = largest_affine_norm(dm * r_exact + dmc_v, dm * axis, lo, hi)
            largest, spread = shifted_inertia_bounds(d_matrix, dm, dmc_v, r_exact, axis, lo, hi)
        slack = 1 + 1e-9
        bounds = {"f_local": (abs(dm) * n_in + dc * (n_wd + n_w * n_w)) * slack,
                  "mu_local": (largest * n_wd + spread * n_w * n_w + dc * n_in) * slack}
        k = self.errors.used
        self.errors.new(1.0, ("constant", _KNOWN_PARAMETERS, node))
        for group, vector in (("f_local", df), ("mu_local", dmu)):
            ranges = [v.bounds() for v in vector]
            own = math.sqrt(sum(max(abs(lo), abs(hi)) ** 2 for lo, hi in ranges)) * slack
            bound = min(bounds[group], own)
            for c, (lo, hi), dv in zip(_vec(group), ranges, vector):
                x, error = regs[c]
                extra = self.errors.zero()
                extra.lo[k], extra.hi[k] = max(lo, -bound), min(hi, bound)
                regs[c] = (values.add(x, dv, -1.0), _Errors.add(error, extra))
            v_norm, e_norm, rem = norms[group]
            e_norm = e_norm.copy()
            e_norm[k] = bound
            norms[group] = (v_norm + bound, e_norm, rem)

    def link_mechanics(self, node):
        """Mass, ``|c'|``, ``||I'||``, ``(l_max - l_min)/2`` of ``I'`` and ``|r|`` of a link,
        about origin ``i-1`` (see :meth:`mechanics_norm`)."""
        cache = self.__dict__.setdefault("_mechanics", {})
        if node not in cache:
            link = self.robot.links[node]
            r = link_offset_vector(link)
            encoded, _ = self.encoded_parameters(node)
            m, mc = float(encoded[0]), encoded[1:4]
            xx, xy, xz, yy, yz, zz = encoded[4:10]
            inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            shifted = (inertia + m * (float(r @ r) * np.eye(3) - np.outer(r, r))
                       + 2 * float(r @ mc) * np.eye(3) - np.outer(r, mc) - np.outer(mc, r))
            eig = np.linalg.eigvalsh(0.5 * (shifted + shifted.T))
            slack = 1 + 1e-12
            cache[node] = {"m": abs(m) * slack,
                           "c1": float(np.linalg.norm(m * r + mc)) * slack,
                           "I1": float(np.max(np.abs(eig))) * slack,
                           "I1_spread": 0.5 * float(eig[-1] - eig[0]) * slack + 1e-15,
                           "r": float(np.linalg.norm(r)) * slack,
                           "mc": float(np.linalg.norm(mc)) * slack}
            if self.prismatic[node]:
                # r(q) = r + q z_0 over the travel (linkdyn.model.certify_prismatic).
                axis = joint_axis(link.alpha)
                lo, hi = float(self.q_min[node]), float(self.q_max[node])
                largest, spread = shifted_inertia_bounds(inertia, m, mc, r, axis, lo, hi)
                cache[node].update({
                    "c1": largest_affine_norm(m * r + mc, m * axis, lo, hi) * slack,
                    "I1": largest * slack, "I1_spread": spread * slack + 1e-15,
                    "r": largest_affine_norm(r, axis, lo, hi) * slack})
        return cache[node]

    def base_acceleration_norm(self, node):
        """A bound on ``|A|``, the acceleration of origin ``i-1`` that the inertial-wrench
        identities of :meth:`mechanics_norm` read: ``A = R^T p_ddot_in`` on a revolute node;
        on a prismatic one ``A = R^T p_ddot_in + qdd z_0 + 2 qd omega x z_0`` (``p_ddot``'s
        prismatic terms: ``p_ddot = A + omega_dot x r + omega x (omega x r)``), so ``|A| <=
        |p_ddot_in| + qdd_max + 2 qd_max |omega|``."""
        norms = self.norms[node]
        if not self.prismatic[node]:
            return norms["p_ddot_in"][0]
        return (norms["p_ddot_in"][0] + float(self.qdd_max[node])
                + 2 * float(self.qd_max[node]) * norms["omega"][0]) * (1 + 1e-12)

    def rotation_norms(self, regs):
        """Per error symbol, a bound on the spectral norm of its coefficient in ``R~ - R``.

        Symbols of the phase (``q``'s encoding, ``rate``, ``theta_offset``, the phase
        rounding) move ``theta`` only: their coefficient is ``dR/dtheta 2 pi c``, and
        ``||dR/dtheta|| = 1``. Every other symbol: the Frobenius norm of its coefficients in
        the rotation entries.
        """
        entries = [regs[name][1].per_symbol() for name in _ROTATION_ENTRIES]
        frobenius = np.sqrt(sum(e * e for e in entries)) * (1 + 1e-12)
        phase = regs["phase"][1].per_symbol()
        moved = phase > 0
        frobenius[moved] = np.minimum(frobenius[moved], 2 * math.pi * phase[moved]
                                      * (1 + 1e-9))
        if self.split_table:
            # The table's scaling: -phi diag(1, 1, 0) R~', R~' a rotation (sine_error_split).
            node = len(self.rotation_error)
            k = self.errors.index.get(("table", "phi", node))
            if k is not None:
                frobenius[k] = min(frobenius[k], self.table_split[0] * (1 + 1e-9))
        return frobenius

    def component_norms(self, regs, comps):
        """Norm bounds of a vector from its components' bounds alone."""
        values = [max(abs(b) for b in regs[c][0].bounds()) for c in comps]
        errors = [regs[c][1].per_symbol() for c in comps]
        rems = [regs[c][1].r for c in comps]
        return (math.sqrt(sum(v * v for v in values)) * (1 + 1e-12),
                np.sqrt(sum(e * e for e in errors)) * (1 + 1e-12),
                math.sqrt(sum(r * r for r in rems)) * (1 + 1e-12))

    def check(self, node, name, value, error):
        """Prove the result fits its word, or record the saturation and its error."""
        lo, hi = value.bounds()
        magnitude = error.magnitude()
        lo_limit, hi_limit = self.limit(name)
        low, high = lo - magnitude, hi + magnitude
        self.records.append({"node": node + 1, "register": name, "range": [lo, hi],
                             "error": magnitude, "limit": [lo_limit, hi_limit]})
        if low < lo_limit or high > hi_limit:
            excess = max(high - hi_limit, lo_limit - low, 0.0)
            self.saturations.append({"node": node + 1, "register": name, "range": [low, high],
                                     "limit": [lo_limit, hi_limit],
                                     "state": self.witness(value, high > hi_limit)})
            error.r += excess

    def witness(self, value, upper):
        """A corner of the box that drives an affine value up (or down)."""
        n = self.robot.n
        stride = 3 + (6 if self.wrench else 0)
        sign = np.sign(value.a) * (1 if upper else -1)
        sign[sign == 0] = 1
        state = {"q": [], "qd": [], "qdd": []}
        for i in range(n):
            s = sign[i * stride:(i + 1) * stride]
            state["q"].append(float(self.q_max[i] if s[0] > 0 else self.q_min[i]))
            state["qd"].append(float(s[1] * self.qd_max[i]))
            state["qdd"].append(float(s[2] * self.qdd_max[i]))
        return state

    def trig(self, node, regs, op):
        """sin_theta / cos_theta from the table latches: ``S(w)`` rounded to Q1.30."""
        phase, phase_error = regs["phase"]
        cosine = op.dst == "cos_theta"
        value = self.values.sin_cos(phase, 1 if cosine else 0)
        # d sin(2 pi t) / dt = 2 pi cos(2 pi t); d cos / dt = -2 pi sin.
        derivative = self.values.sin_cos(phase, 0 if cosine else 1)
        dlo, dhi = derivative.bounds()
        dlo, dhi = (-dhi, -dlo) if cosine else (dlo, dhi)
        error = _Errors.scale_interval(phase_error, 2 * math.pi * dlo, 2 * math.pi * dhi)
        error.r += 0.5 * (2 * math.pi * phase_error.magnitude()) ** 2
        error = _Errors.add(error, self.table_error(node, regs, cosine, value))
        f = self.fbits(op.dst)
        error = _Errors.add(error, self.errors.new(2.0 ** -(f + 1), ("rounding", op.dst, node)))
        self.check(node, op.dst, value, error)
        regs[op.dst] = (value, error)

    def table_error(self, node, regs, cosine, value):
        """The sine table's error of ``sin_theta`` or ``cos_theta``.

        With ``split_table`` (:func:`sine_error_split`): ``-phi sin(theta_w)`` resp. ``-phi
        cos(theta_w)`` on one symbol per node shared by both (``eta = phi / phi_max``; the
        coefficient's range is that of the exact value widened by the phase word's error,
        ``theta_w`` being the word's angle), plus an own residual symbol. Else one own symbol
        of the global worst case (:func:`sine_error_bound`).
        """
        if not self.split_table:
            return self.errors.new(self.table_bound, ("table", "cos_theta" if cosine
                                                      else "sin_theta", node))
        phi_max, residual = self.table_split
        label = ("table", "phi", node)
        if label not in self.errors.index:
            self.errors.new(phi_max, label)
        k = self.errors.index[label]
        widen = 2 * math.pi * regs["phase"][1].magnitude()
        lo, hi = value.bounds()
        lo, hi = max(-1.0, lo - widen), min(1.0, hi + widen)
        error = self.errors.zero()
        error.lo[k], error.hi[k] = -phi_max * hi, -phi_max * lo
        rest = self.errors.new(residual, ("table", "cos_theta" if cosine else "sin_theta",
                                          node))
        return _Errors.add(error, rest)

    def atan(self, node, regs, op):
        value, error = regs[op.src]
        lo, hi = value.bounds()
        magnitude = error.magnitude()
        x_max = max(abs(lo), abs(hi)) + magnitude
        result = self.values.interval(math.atan(lo) - 1e-15, math.atan(hi) + 1e-15)
        # Mean value theorem: atan(x~) - atan(x) = e / (1 + xi^2), xi between x and x~.
        scaled = _Errors.scale_interval(error, 1.0 / (1.0 + x_max * x_max), 1.0)
        regs["atan"] = (result, _Errors.add(scaled, self.errors.new(self.cordic_bound,
                                                                    ("cordic", "atan", node))))

    # -- the chain ----------------------------------------------------------------------------

    def node_registers(self, i):
        robot, link = self.robot, self.robot.links[i]
        regs = {}
        r = link_offset_vector(link)
        exact = {"sin_alpha": math.sin(link.alpha), "cos_alpha": math.cos(link.alpha),
                 "r_x": r[0], "r_y": r[1], "r_z": r[2], "F_c": link.friction.coulomb,
                 "F_v": link.friction.viscous, "F_o": link.friction.offset,
                 "k_friction": link.friction.steepness,
                 "revolute": 0.0 if self.prismatic[i] else 1.0,
                 "prismatic": 1.0 if self.prismatic[i] else 0.0}
        exact.update(zip(("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_xz", "I_yy", "I_yz",
                          "I_zz"), link.parameters()))
        for reg in self.rmap.of_kind("constant"):
            if reg.name == "zero":
                regs["zero"] = (self.values.const(0.0), self.errors.zero())
            elif reg.name == "rate":
                # revolute / (2 pi): a prismatic joint's theta is the offset alone (the
                # golden model's word 0).
                regs["rate"] = self.constant(i, "rate", 0.0 if self.prismatic[i]
                                             else 1.0 / (2 * math.pi), reg.format.fraction_bits)
            elif reg.name == "theta_offset":
                regs["theta_offset"] = self.constant(i, "theta_offset",
                                                     link.offset / (2 * math.pi), 32, wraps=True)
            else:
                regs[reg.name] = self.constant(i, reg.name, exact[reg.name])
        if self.mechanics:
            # The inertial parameters' encoding errors are known numbers: the analysis takes
            # the encoded robot as its reference and adds their effect on the torque, the
            # inverse dynamics of the differences (linear in them), at the end
            # (known_parameter_bound).
            for name in _INERTIAL:
                word = math.floor(exact[name] * 2.0 ** self.fbits(name) + 0.5)
                regs[name] = (self.values.const(word * 2.0 ** -self.fbits(name)),
                              self.errors.zero())
        regs["q"] = self.input(i, "q", 0, self.q_min[i], self.q_max[i])
        regs["qd"] = self.input(i, "qd", 1, -self.qd_max[i], self.qd_max[i])
        regs["qdd"] = self.input(i, "qdd", 2, -self.qdd_max[i], self.qdd_max[i])
        for k, reg in enumerate(self.rmap.of_kind("input")[3:]):
            if self.wrench is None:
                regs[reg.name] = (self.values.const(0.0), self.errors.zero())
            else:
                bound = self.wrench[0] if k < 3 else self.wrench[1]
                regs[reg.name] = self.input(i, reg.name, 3 + k, -bound, bound)
        for name, (value, error) in regs.items():
            if name in _FIXED_KINDS:
                continue
            self.records.append({"node": i + 1, "register": name, "range": list(value.bounds()),
                                 "error": error.magnitude(), "limit": list(self.limit(name))})
        return regs

    def run_segment(self, node, regs, segment):
        for op in self.program.segments[segment].ops:
            if isinstance(op, Dot):
                self.dot(node, regs, op)
            elif isinstance(op, Lookup):
                pass  # its latches are read by the sin_theta / cos_theta Dots, see trig()
            elif isinstance(op, Atan):
                self.atan(node, regs, op)

    def run(self):
        robot, rmap = self.robot, self.rmap
        n = robot.n
        gravity = -robot.gravity_base
        nodes = []
        previous = None
        for i in range(n):
            regs = self.node_registers(i)
            for source, target in rmap.forward_message:
                if i == 0:
                    quantity, c = target.rsplit("_in_", 1)
                    exact = gravity["xyz".index(c)] if quantity == "p_ddot" else 0.0
                    regs[target] = self.constant(i, target, exact)
                else:
                    regs[target] = previous[source]
            for name, sender in (("omega_in", "omega"), ("omega_dot_in", "omega_dot"),
                                 ("p_ddot_in", "p_ddot")):
                if not self.vector_norms:
                    break
                self.norms[i][name] = (self.component_norms(regs, _vec(name)) if i == 0
                                       else self.norms[i - 1][sender])
                if i > 0 and sender in self.triplet_norms[i - 1]:
                    self.triplet_norms[i][name] = self.triplet_norms[i - 1][sender]
            if i > 0:
                for name, sender in (("omega_in", "omega"), ("omega_dot_in", "omega_dot")):
                    if sender in self.cylinders[i - 1]:
                        self.cylinders[i][name] = self.cylinders[i - 1][sender]
            for segment in ("joint", "forward", "local"):
                self.run_segment(i, regs, segment)
                if segment == "joint":
                    self.rotation_error.append(self.rotation_norms(regs))
            if self.mechanics:
                self.add_known_parameters(i, regs)
            nodes.append(regs)
            previous = regs
        for i in reversed(range(n)):
            regs = nodes[i]
            for source, target in rmap.backward_message:
                regs[target] = ((self.values.const(0.0), self.errors.zero()) if i == n - 1
                                else nodes[i + 1][source])
            for name, sender in (("f_in", "f_out"), ("mu_in", "mu_out")):
                if not self.vector_norms:
                    break
                self.norms[i][name] = (self.component_norms(regs, _vec(name)) if i == n - 1
                                       else self.norms[i + 1][sender])
                if i < n - 1 and sender in self.triplet_norms[i + 1]:
                    self.triplet_norms[i][name] = self.triplet_norms[i + 1][sender]
            self.run_segment(i, regs, "distal")
        return self.certificate(nodes)

    def torque_per_symbol(self, node, error):
        """Per error symbol, the bound of its part of a joint's torque; with
        ``vector_roundings`` each rounding triplet's three parts scaled down together to at most
        ``sqrt(3)`` times its block norm in ``mu_out`` (:meth:`close_triplets`)."""
        per = error.per_symbol()[:self.errors.used].copy()
        # tau = mu_out_z (+ friction) on a revolute node, f_out_z (+ friction) on a prismatic one.
        carrier = "f_out" if self.prismatic[node] else "mu_out"
        blocks = self.triplet_norms[node].get(carrier) if self.vector_roundings else None
        for key, index in self.triplets.items() if blocks is not None else ():
            norm = float(blocks[self.triplet_slot[key]])
            if norm <= 0:
                continue  # not carried to mu_out: its parts as they are
            total = float(np.sum(per[index]))
            limit = math.sqrt(3) * norm * (1 + 1e-12)
            if total > limit:
                per[index] *= limit / total
        return per

    def certificate(self, nodes):
        robot = self.robot
        n = robot.n
        bounds, sources = [], {}
        kinds = np.array([label[0] for label in self.errors.labels] or ["none"])
        for i in range(n):
            error = nodes[i]["tau"][1]
            per = self.torque_per_symbol(i, error)
            total = (float(np.sum(per)) + error.r) * (1 + MARGIN_REL) + MARGIN_ABS
            bounds.append(total)
            for kind in ("input", "constant", "rounding", "table", "cordic"):
                part = float(np.sum(per[kinds[:len(per)] == kind])) if len(per) else 0.0
                sources.setdefault(kind, []).append(part)
            sources.setdefault("second order", []).append(error.r)
            rounding = per[kinds[:len(per)] == "rounding"] if len(per) else per
            sources.setdefault("rounding rms", []).append(
                float(np.sqrt(np.sum(rounding ** 2) / 3)))
        by_input = {}
        for i in range(n):
            per = self.torque_per_symbol(i, nodes[i]["tau"][1])
            for (kind, name, node), value in zip(self.errors.labels, per):
                if kind == "input":
                    by_input.setdefault(f"input {name}", [0.0] * n)[i] += float(value)
                if kind == "constant":
                    group = ("inertial parameters" if name == _KNOWN_PARAMETERS
                             else quantity_of(name) or name)
                    if name.startswith("p_ddot_in"):
                        group = "gravity"
                    by_input.setdefault(f"constant {group}", [0.0] * n)[i] += float(value)
        sources.update(by_input)
        records = []
        for rec in self.records:
            lo, hi = rec["range"]
            lo_limit, hi_limit = rec["limit"]
            use = (max(abs(lo), abs(hi)) + rec["error"]) / hi_limit
            records.append({**rec, "use": use})
        hot = sorted(records, key=lambda r: -r["use"])[:10]
        box = {"q_min": [float(v) for v in self.q_min], "q_max": [float(v) for v in self.q_max],
               "qd_max": [float(v) for v in self.qd_max],
               "qdd_max": [float(v) for v in self.qdd_max],
               "wrench_max": None if self.wrench is None else list(self.wrench),
               "joint_types": [link.joint_type for link in robot.links]}
        formats = {"word": self.fmt.name, **{k: int(v) for k, v in self.bits.items()}}
        return Certificate(robot.name, tuple(bounds), not self.saturations,
                           tuple(self.saturations), box, formats, self.domain, tuple(hot),
                           tuple(records), {k: tuple(v) for k, v in sources.items()})


# ----------------------------------------------------------------------------------------------
# Sampling the box (soundness checks and reports)
# ----------------------------------------------------------------------------------------------

#: Seed of the sampled states of reports and tests.
SEED = 20261201


def box_states(certificate, count, seed=SEED, corners=None):
    """Return random and corner states of a certificate's box.

    Parameters
    ----------
    certificate : Certificate
        Its box is sampled.
    count : int
        Number of uniform random states.
    seed : int
        Random seed.
    corners : int, optional
        Number of random corners (every ``q_i``, ``qd_i``, ``qdd_i`` at one end of its range;
        the first all lower, the second all upper); default ``count // 5``.

    Returns
    -------
    q, qd, qdd : numpy.ndarray, shape (count + corners, n)
        rad, rad/s, rad/s^2.
    f_ext : numpy.ndarray, shape (count + corners, n, 6) or None
        External wrenches within the box's ``wrench_max``, uniform (random states) or at the
        corners; ``None`` when the box has none.
    """
    if not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be a non-negative integer, not {count!r}")
    corners = count // 5 if corners is None else corners
    box = certificate.box
    q_min, q_max = np.array(box["q_min"]), np.array(box["q_max"])
    qd_max, qdd_max = np.array(box["qd_max"]), np.array(box["qdd_max"])
    n = len(q_min)
    rng = np.random.default_rng([int(seed), n])
    u = rng.random((count, 3, n))
    c = rng.random((corners, 3, n)) < 0.5
    if corners > 0:
        c[0] = False
    if corners > 1:
        c[1] = True
    u = np.concatenate([u, c.astype(float)])
    q = q_min + u[:, 0] * (q_max - q_min)
    qd = (2 * u[:, 1] - 1) * qd_max
    qdd = (2 * u[:, 2] - 1) * qdd_max
    f_ext = None
    if box["wrench_max"] is not None:
        scale = np.array([box["wrench_max"][0]] * 3 + [box["wrench_max"][1]] * 3)
        w = np.concatenate([rng.random((count, n, 6)),
                            (rng.random((corners, n, 6)) < 0.5).astype(float)])
        f_ext = (2 * w - 1) * scale
    return q, qd, qdd, f_ext


def sampled_error(robot, certificate, count=10_000, seed=SEED, chunk=5_000):
    """Return the sampled maximum of ``|rnea_fixed - rnea|`` per joint over the box, N·m.

    States from :func:`box_states` (``count`` random plus ``count // 5`` corners), in chunks.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The maximum per joint, shape (n,), and per node whether the golden model saturated
        (overflow flag) on any sampled state, shape (n,).
    """
    from .golden import rnea_fixed
    from .rnea import rnea

    q, qd, qdd, f_ext = box_states(certificate, count, seed)
    worst = np.zeros(robot.n)
    overflow = np.zeros(robot.n, dtype=bool)
    for start in range(0, len(q), chunk):
        part = slice(start, start + chunk)
        wrench = None if f_ext is None else f_ext[part]
        fixed = rnea_fixed(robot, q[part], qd[part], qdd[part], f_ext=wrench)
        error = np.abs(fixed.tau - rnea(robot, q[part], qd[part], qdd[part], f_ext=wrench))
        worst = np.maximum(worst, np.max(error, axis=0))
        overflow |= np.any(fixed.overflow, axis=0)
    return worst, overflow


# ----------------------------------------------------------------------------------------------
# Report and command line
# ----------------------------------------------------------------------------------------------

PROG = "python -m linkdyn.model.certify"


def plot_bound(certificate, sampled, path, title=None):
    """Plot the certified bound and the sampled maximum per joint (log scale) to a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(certificate.bound_nm)
    x = np.arange(1, n + 1)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.bar(x - 0.2, certificate.bound_nm, 0.4, label="certified bound", color="tab:red")
    ax.bar(x + 0.2, sampled, 0.4, label="sampled maximum", color="tab:blue")
    ax.axhline(1e-3, color="k", linestyle="--", linewidth=1, label="goal 1e-3 N·m")
    ax.set_yscale("log")
    ax.set_xticks(x)
    kinds = certificate.box.get("joint_types", ())
    if "prismatic" in kinds:  # a prismatic joint's bound is a force
        ax.set_xticks(x, [f"{i}{' (N)' if kind == 'prismatic' else ''}"
                          for i, kind in zip(x, kinds)])
    ax.set_xlabel("joint")
    ax.set_ylabel("|tau_fixed - tau| (N·m)")
    ax.set_title(title or f"{certificate.robot}: certified vs sampled torque error")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report_markdown(certificate, sampled, states, plot_name=None):
    """Return the readable report of a certificate (Markdown), with the sampled maxima."""
    c = certificate
    n = len(c.bound_nm)
    out = [f"# Fixed-point torque error certificate: {c.robot}", ""]
    box = c.box
    q_range = ", ".join(f"{a:.4g}..{b:.4g}" for a, b in zip(box["q_min"], box["q_max"]))
    prismatic = [i + 1 for i, kind in enumerate(box.get("joint_types", ()))
                 if kind == "prismatic"]
    units = (f" (q, qd, qdd in m, m/s, m/s² and the bound in N for the prismatic "
             f"joint{'s' if len(prismatic) > 1 else ''} {', '.join(map(str, prismatic))})"
             if prismatic else "")
    out.append(f"Box{units}: q within [{q_range}] rad; "
               f"|qd| <= [{', '.join(f'{v:.4g}' for v in box['qd_max'])}] rad/s; "
               f"|qdd| <= [{', '.join(f'{v:.4g}' for v in box['qdd_max'])}] rad/s²; "
               + ("no external wrench." if box["wrench_max"] is None else
                  f"|f_ext| <= {box['wrench_max'][0]:g} N, |mu_ext| <= {box['wrench_max'][1]:g} "
                  f"N·m per component on every link."))
    out.append("")
    out.append(f"Formats (fractional bits): "
               + ", ".join(f"{k} {v}" for k, v in c.formats.items()) + f". Domain: {c.domain}.")
    out.append("")
    out.append(f"**Saturation free: {'yes' if c.saturation_free else 'NO'}.**")
    if not c.saturation_free:
        out.append("")
        out.append("| node | register | possible range | word range | corner state (qd) |")
        out.append("|---:|---|---|---|---|")
        for s in c.saturations[:20]:
            out.append(f"| {s['node']} | {s['register']} | [{s['range'][0]:.4g}, "
                       f"{s['range'][1]:.4g}] | [{s['limit'][0]:.4g}, {s['limit'][1]:.4g}] | "
                       f"{', '.join(f'{v:.3g}' for v in s['state']['qd'])} |")
        if len(c.saturations) > 20:
            out.append(f"\n... and {len(c.saturations) - 20} more (certificate.json).")
    out.append("")
    out.append(f"Sampled: {states:,} random and {states // 5:,} corner states of the box "
               f"(`rnea_fixed` against `rnea`, seed {SEED}).")
    out.append("")
    head = "| | " + " | ".join(f"joint {i + 1}" for i in range(n)) + " |"
    out += [head, "|---|" + "---:|" * n]
    out.append("| certified bound (N·m) | " + " | ".join(f"{v:.3e}" for v in c.bound_nm) + " |")
    out.append("| sampled max (N·m) | " + " | ".join(f"{v:.3e}" for v in sampled) + " |")
    out.append("| bound / sampled | " + " | ".join(
        f"{b / s:.1f}" if s > 0 else "-" for b, s in zip(c.bound_nm, sampled)) + " |")
    for kind, values in c.sources.items():
        out.append(f"| of which {kind} | " + " | ".join(f"{v:.2e}" for v in values) + " |")
    out.append("")
    if plot_name:
        out += [f"![certified bound and sampled maximum per joint]({plot_name})", ""]
    out.append("Registers closest to saturation (largest |x| + |e| over the word's limit):")
    out.append("")
    out.append("| node | register | exact range | error bound | use |")
    out.append("|---:|---|---|---:|---:|")
    for h in c.hot_registers:
        out.append(f"| {h['node']} | {h['register']} | [{h['range'][0]:.4g}, {h['range'][1]:.4g}]"
                   f" | {h['error']:.2e} | {h['use']:.3f} |")
    out.append("")
    return "\n".join(out)


class CommandError(Exception):
    """A user error: printed on stderr without a traceback, exit status 2."""


def _parse_pair(text):
    try:
        force, moment = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected F,M (two numbers), not {text!r}") from None
    return force, moment


def _parse_vector(text):
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or a comma list, not {text!r}") \
            from None
    return values[0] if len(values) == 1 else values


def add_box_arguments(parser):
    """Add the options of ``certify`` (robot, box, domain, sampled states, output) to a parser."""
    parser.add_argument("--robot", required=True,
                        help="built-in robot name, robot file (.json) or URDF file")
    parser.add_argument("--tip", help="last link of the chain")
    parser.add_argument("--qd-max", type=_parse_vector,
                        help="|qd| bound, rad/s: one number or one per joint "
                             "(default: the velocity limits)")
    parser.add_argument("--qdd-max", type=_parse_vector, default=DEFAULT_QDD_MAX,
                        help="|qdd| bound, rad/s^2 (default 10)")
    parser.add_argument("--wrench-max", type=_parse_pair,
                        help="F,M: external force (N) and moment (N·m) bound per component")
    parser.add_argument("--domain", choices=("affine", "interval"), default="affine")
    parser.add_argument("--states", type=int, default=10_000,
                        help="random states for the sampled comparison (default 10000; 0: none)")
    parser.add_argument("--out", required=True, type=Path, help="output folder")


def main(argv=None):
    """Command line: certify a robot over a box and write ``DIR/certificate.json`` and a report."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_box_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except CommandError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2


def write_certificate(robot, out, *, qd_max=None, qdd_max=DEFAULT_QDD_MAX, wrench_max=None,
                      domain="affine", states=10_000, log=None):
    """Certify a robot over a box and write ``out/certificate.json``, ``certificate.md`` and
    ``certificate.png`` (certified bound against the sampled maximum per joint).

    Parameters
    ----------
    robot : Robot
        The robot.
    out : pathlib.Path
        Output folder (created).
    qd_max, qdd_max, wrench_max, domain
        As for :func:`certify`.
    states : int
        Random states of the sampled comparison (plus ``states // 5`` corners; 0: none).
    log : callable, optional
        Called with progress lines.

    Returns
    -------
    (Certificate, numpy.ndarray)
        The certificate and the sampled maximum per joint, N·m (zeros when ``states`` is 0).

    Raises
    ------
    ValueError
        As :func:`certify`; or if ``states`` is negative or ``out`` is a file.
    """
    out = Path(out)
    if not isinstance(states, int) or isinstance(states, bool) or states < 0:
        raise ValueError(f"states must be an integer >= 0, not {states!r}")
    if out.exists() and not out.is_dir():
        raise ValueError(f"output {str(out)!r} exists and is not a folder")
    certificate = certify(robot, qd_max=qd_max, qdd_max=qdd_max, wrench_max=wrench_max,
                          domain=domain)
    out.mkdir(parents=True, exist_ok=True)
    (out / "certificate.json").write_text(certificate.to_json() + "\n", encoding="utf-8")
    if states:
        if log:
            log(f"sampling {states:,} + {states // 5:,} states ...")
        sampled, _ = sampled_error(robot, certificate, states)
    else:
        sampled = np.zeros(robot.n)
    plot_bound(certificate, sampled, out / "certificate.png")
    (out / "certificate.md").write_text(
        report_markdown(certificate, sampled, states, "certificate.png"), encoding="utf-8")
    return certificate, sampled


def _run(args):
    from .library import load_robot
    from .robot import RobotDescriptionError

    try:
        robot = load_robot(args.robot, tip=args.tip)
    except (FileNotFoundError, RobotDescriptionError, NotImplementedError) as error:
        raise CommandError(str(error)) from None
    if args.states < 0:
        raise CommandError(f"--states must be >= 0, not {args.states}")
    try:
        certificate, _ = write_certificate(
            robot, args.out, qd_max=args.qd_max, qdd_max=args.qdd_max,
            wrench_max=args.wrench_max, domain=args.domain, states=args.states,
            log=lambda text: print(text, file=sys.stderr))
    except (ValueError, NotImplementedError) as error:
        raise CommandError(str(error)) from None
    print(f"bound per joint (N·m): {' '.join(f'{v:.3e}' for v in certificate.bound_nm)}; "
          f"saturation free: {'yes' if certificate.saturation_free else 'NO'}; "
          f"wrote {args.out / 'certificate.json'}, certificate.md, certificate.png")
    return 0 if certificate.saturation_free else 1


if __name__ == "__main__":
    sys.exit(main())
