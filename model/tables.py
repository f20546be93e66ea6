"""The sine/cosine table and the arctangent of the friction model, bit-exact definitions.

Sine and cosine (source paper Sect. 3.1): a quarter-wave table in block RAM, mirrored and negated
for the other quadrants, with linear interpolation between entries (the fixed-point contract of
docs/architecture.md: a plain 1,024-entry table has a step of 1.5e-3 rad, far too coarse for
1e-3 N·m). A table of 512 entries of 31 bits (the :class:`SineTable` default), one Spartan-6
RAMB16 (512 x 36) or ECP5 DP16KD, errs by 1.2e-6, set by the interpolation, not by the entries
(an 18-bit, 1,024-entry table in the same block RAM would err by 4e-6 from its entries); the
node's table :data:`SINE_TABLE` has 4,096 entries (1.8e-8, chosen from the certified error
budget, docs/certificate.md).

The angle enters as a *phase word*: a 32-bit two's-complement word counting turns in units of
``2**-32`` turn (so 2 pi wraps around exactly). Its bits are split as::

    [31:30] quadrant   [29:21] table index (9 bits)   [20:0] interpolation fraction (21 bits)

for the 512-entry :class:`SineTable` (``index_bits=9``, ``fraction_bits=21``; the node's table
has ``index_bits=12``, ``fraction_bits=18``, the same rules with 12 and 18 bits). Within a quadrant
the position ``u = phase mod 2**30`` runs from 0 to 2**30; the quadrant rule is::

    quadrant 0: +S(u)    1: +S(2**30 - u)    2: -S(u)    3: -S(2**30 - u)

with ``S(v) = T[k] + (T[k+1] - T[k]) * fr / 2**21``, ``k = v >> 21``, ``fr = v mod 2**21``,
``T[k] = round(sin(k * pi / 2 / 512) * 2**30)`` for ``k = 0 .. 512`` (31-bit unsigned entries;
``T[512] = 2**30`` is not stored but produced by the address decoder), and the cosine is the sine
of ``phase + 2**30``. The node's microprogram turns the three values ``(±T[k], ±(T[k+1]-T[k]),
fr)`` into a Q1.30 word with one dot product (see :mod:`linkdyn.model.microprogram`).

Arctangent (friction, paper eq. 20): CORDIC in vectoring mode (the paper names CORDIC as the
alternative to tables), :meth:`Cordic.atan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["SineTable", "SINE_TABLE", "Cordic", "CORDIC"]


@dataclass(frozen=True)
class SineTable:
    """Quarter-wave sine table with linear interpolation.

    Parameters
    ----------
    index_bits : int
        log2 of the number of stored entries per quarter wave (default 9: 512 entries).
    entry_bits : int
        Width of an unsigned entry (default 31, one Spartan-6 RAMB16 as 512 x 36); entries have
        ``entry_bits - 1`` fractional bits so that ``sin(pi/2) = 1`` fits.
    fraction_bits : int
        Interpolation fraction bits (default 21); ``2 + index_bits + fraction_bits`` must be 32,
        the phase word width.

    Raises
    ------
    ValueError
        If the bit counts do not add up to a 32-bit phase word or are out of range.
    """

    index_bits: int = 9
    entry_bits: int = 31
    fraction_bits: int = 21

    def __post_init__(self):
        if not 4 <= self.index_bits <= 14:
            raise ValueError(f"index_bits must be in 4..14, not {self.index_bits!r}")
        if not 8 <= self.entry_bits <= 36:
            raise ValueError(f"entry_bits must be in 8..36, not {self.entry_bits!r}")
        if 2 + self.index_bits + self.fraction_bits != 32:
            raise ValueError(
                f"2 + index_bits + fraction_bits must be 32 (the phase word), not "
                f"{2 + self.index_bits + self.fraction_bits}")

    @property
    def size(self):
        """int: number of stored entries, ``2**index_bits``."""
        return 1 << self.index_bits

    @property
    def entry_fraction_bits(self):
        """int: fractional bits of an entry, ``entry_bits - 1``."""
        return self.entry_bits - 1

    @property
    def full_scale(self):
        """int: the entry value of ``sin(pi/2)``, ``2**(entry_bits-1)`` (not stored)."""
        return 1 << self.entry_fraction_bits

    @cached_property
    def entries(self):
        """numpy.ndarray of int64, shape (size + 1,): ``T[0..size]``, the last one implicit."""
        k = np.arange(self.size + 1)
        values = np.floor(np.sin(k * (math.pi / 2 / self.size)) * self.full_scale + 0.5)
        values[-1] = self.full_scale
        return values.astype(np.int64)

    def memory_init(self):
        """Return the block-RAM initialisation, a list of ``size`` unsigned ints (``T[0..size-1]``)."""
        return [int(v) for v in self.entries[:-1]]

    def lookup(self, phase):
        """Return the interpolation operands of sine and cosine for phase words.

        Parameters
        ----------
        phase : array_like of int
            Phase words (signed 32-bit; ``2**32`` is one turn).

        Returns
        -------
        tuple of numpy.ndarray of int64
            ``(sin_base, sin_delta, sin_fraction, cos_base, cos_delta, cos_fraction)``: signed
            ``±T[k]`` and ``±(T[k+1]-T[k])``, and the unsigned fraction ``fr``; the value is
            ``(base * 2**fraction_bits + delta * fr) * 2**-(fraction_bits + entry_fraction_bits)``.
        """
        phase = np.asarray(phase, dtype=np.int64) & 0xFFFFFFFF
        sin = self._operands(phase)
        cos = self._operands((phase + (1 << 30)) & 0xFFFFFFFF)
        return sin + cos

    def _operands(self, phase):
        quadrant = phase >> 30
        u = phase & ((1 << 30) - 1)
        mirrored = (quadrant & 1) == 1
        v = np.where(mirrored, (1 << 30) - u, u)
        k = v >> self.fraction_bits
        fraction = v & ((1 << self.fraction_bits) - 1)
        entries = self.entries
        base = entries[k]
        delta = np.where(k < self.size, entries[np.minimum(k + 1, self.size)] - base, 0)
        sign = np.where(quadrant >= 2, -1, 1)
        return sign * base, sign * delta, fraction

    def evaluate(self, phase):
        """Return the exact (unrounded) interpolated ``(sin, cos)`` as floats, for reports."""
        sb, sd, sf, cb, cd, cf = self.lookup(phase)
        scale = 2.0 ** -(self.fraction_bits + self.entry_fraction_bits)
        return ((sb * (1 << self.fraction_bits) + sd * sf) * scale,
                (cb * (1 << self.fraction_bits) + cd * cf) * scale)

    def worst_case_error(self, samples=1 << 22):
        """Return the largest ``|S - sin|`` over an evenly spread set of phases (before rounding).

        Parameters
        ----------
        samples : int
            Number of phases over one quarter turn (the other quadrants mirror it exactly).

        Returns
        -------
        float
            Worst-case absolute error of the interpolated sine (and cosine).
        """
        phase = (np.arange(samples, dtype=np.int64) * ((1 << 30) // samples)
                 + np.int64(12345) % ((1 << 30) // samples))
        sin, cos = self.evaluate(phase)
        angle = phase * (2 * math.pi / 2 ** 32)
        return float(max(np.max(np.abs(sin - np.sin(angle))),
                         np.max(np.abs(cos - np.cos(angle)))))


#: The node's table: 4,096 entries of 31 bits, 18-bit interpolation fraction (worst case
#: 1.8e-8, eight 18-kbit block RAMs), chosen from the certified error budget (issue 17,
#: docs/certificate.md): with the 512-entry :class:`SineTable` default (1.2e-6) the table alone
#: keeps the certified torque bound of the Panda above 1e-3 N·m.
SINE_TABLE = SineTable(index_bits=12, fraction_bits=18)


@dataclass(frozen=True)
class Cordic:
    """Arctangent by CORDIC in vectoring mode, bit-exact (for the friction term ``atan(k qd)``).

    The input ``x`` is a Q15.16 word (``x = k * qd``). The vector ``(X, Y) = (2**30, x << 14)``
    (both with 30 fractional bits, in ``state_bits``-bit signed registers) is rotated towards the
    x axis in ``iterations`` steps; step ``i`` (``i = 0 .. iterations-1``)::

        if Y >= 0:  X, Y, Z = X + (Y >> i), Y - (X >> i), Z + A[i]
        else:       X, Y, Z = X - (Y >> i), Y + (X >> i), Z - A[i]

    with arithmetic right shifts and ``A[i] = round(atan(2**-i) * 2**30)``. The result is
    ``Z``, ``atan(x)`` as a Q1.30 word.

    Parameters
    ----------
    iterations : int
        Number of CORDIC steps (default 24: residual angle below 1.2e-7 rad).
    state_bits : int
        Width of the X and Y registers (default 48: ``|Y| < 2**45`` at the input and the CORDIC
        gain 1.65 keeps ``|X| < 2**46``).
    """

    iterations: int = 24
    state_bits: int = 48

    def __post_init__(self):
        if not 8 <= self.iterations <= 30:
            raise ValueError(f"iterations must be in 8..30, not {self.iterations!r}")
        if self.state_bits < 48:
            raise ValueError(f"state_bits must be at least 48, not {self.state_bits!r}")

    @property
    def input_shift(self):
        """int: left shift from the Q15.16 input to the 30 fractional bits of the state."""
        return 14

    @cached_property
    def angles(self):
        """tuple of int: ``A[i] = round(atan(2**-i) * 2**30)``, the constant ROM."""
        return tuple(int(math.floor(math.atan(2.0 ** -i) * 2 ** 30 + 0.5))
                     for i in range(self.iterations))

    def atan(self, x):
        """Return ``atan(x)`` as Q1.30 words for Q15.16 words ``x`` (array_like of int)."""
        x = np.asarray(x, dtype=np.int64)
        big_x = np.full(x.shape, 1 << 30, dtype=np.int64)
        big_y = x << self.input_shift
        z = np.zeros(x.shape, dtype=np.int64)
        for i, angle in enumerate(self.angles):
            positive = big_y >= 0
            dx, dy = big_y >> i, big_x >> i
            big_x, big_y, z = (np.where(positive, big_x + dx, big_x - dx),
                               np.where(positive, big_y - dy, big_y + dy),
                               np.where(positive, z + angle, z - angle))
        return z

    def worst_case_error(self):
        """Return the largest ``|atan - math.atan|`` in rad: over every input word with
        ``|x| < 16`` and a log-spaced set of larger ones (where ``atan`` is flat)."""
        words = np.unique(np.concatenate([
            np.arange(-(1 << 20), 1 << 20),  # every word with |x| < 16, where atan bends
            (np.logspace(20, 30.9, 20000, base=2.0) * np.array([[1], [-1]])).astype(np.int64)
            .ravel(),
        ]))
        got = self.atan(words) * 2.0 ** -30
        return float(np.max(np.abs(got - np.arctan(words * 2.0 ** -16))))


#: The default CORDIC: 24 iterations, 48-bit state.
CORDIC = Cordic()
