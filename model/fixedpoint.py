"""Fixed-point number formats and the one arithmetic definition shared by golden model and gateware.

Every register of a LinkDyn node is a signed two's-complement word of :data:`WORD_WIDTH` bits
whose value is ``word * 2**-fraction_bits``; the *format* of a register only says how many of
those bits are fractional (docs/architecture.md, *The fixed-point contract*).

The one arithmetic operation is the dot product of a microprogram instruction
(:class:`linkdyn.model.microprogram.Dot`)::

    acc    = sum_k  s_k * (a_k * b_k) << align_k          exact (no bit is ever dropped)
    result = floor((acc + 2**(shift - 1)) / 2**shift)      one rounding per result: round half up
    word   = saturate(result)  or  wrap(result)            never a silent wrap for numbers

``s_k`` is +1 or -1; a *sum term* multiplies ``(a_k + b_k)`` by ``2**one_shift`` instead of
``a_k * b_k`` (one MAC cycle for an addition). Saturation clamps to the word range and raises the
node's sticky overflow flag. Wrapping is only used for phase words (angles in turns), whose
wrap-around is the intended modulo 2 pi.

The gateware's multiply-accumulate unit implements exactly :func:`round_shift` and
:func:`saturate`; the golden model calls the same functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "WORD_WIDTH", "QFormat", "Q15_16", "FixedPointRangeError", "round_shift", "saturate",
    "wrap", "signed_word",
]

#: Width of every register word, bits.
WORD_WIDTH = 32


class FixedPointRangeError(ValueError):
    """A value does not fit the fixed-point format it must be encoded in."""


@dataclass(frozen=True)
class QFormat:
    """A signed fixed-point format ``Q<integer_bits>.<fraction_bits>``.

    The word has ``1 + integer_bits + fraction_bits`` bits (sign included) and represents
    ``word * 2**-fraction_bits``.

    Parameters
    ----------
    integer_bits : int
        Integer bits, sign excluded, ``>= 0``.
    fraction_bits : int
        Fractional bits, ``>= 0``.
    name : str, optional
        Name used in reports, default ``"Q<i>.<f>"``.

    Raises
    ------
    TypeError
        If a bit count is not an integer.
    ValueError
        If a bit count is negative or the width exceeds 64 bits.
    """

    integer_bits: int
    fraction_bits: int
    name: str = ""

    def __post_init__(self):
        for attr in ("integer_bits", "fraction_bits"):
            value = getattr(self, attr)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{attr} must be an integer, not {value!r}")
            if value < 0:
                raise ValueError(f"{attr} must be >= 0, not {value!r}")
        if self.width > 64:
            raise ValueError(f"width must be at most 64 bits, not {self.width}")
        if not self.name:
            object.__setattr__(self, "name", f"Q{self.integer_bits}.{self.fraction_bits}")

    @property
    def width(self):
        """int: total bits including the sign."""
        return 1 + self.integer_bits + self.fraction_bits

    @property
    def min_word(self):
        """int: the most negative word, ``-2**(width-1)``."""
        return -(1 << (self.width - 1))

    @property
    def max_word(self):
        """int: the most positive word, ``2**(width-1) - 1``."""
        return (1 << (self.width - 1)) - 1

    @property
    def resolution(self):
        """float: the value of one least significant bit, ``2**-fraction_bits``."""
        return 2.0 ** -self.fraction_bits

    @property
    def min_value(self):
        """float: the most negative representable value."""
        return self.min_word * self.resolution

    @property
    def max_value(self):
        """float: the most positive representable value."""
        return self.max_word * self.resolution

    def encode(self, value, what="value"):
        """Encode floats as words, rounding to nearest (half up).

        Parameters
        ----------
        value : float or array_like
            Values to encode.
        what : str
            Name of the quantity, used in the error message (e.g. ``"node 3 q"``).

        Returns
        -------
        numpy.ndarray of int64
            Words, same shape as ``value``.

        Raises
        ------
        FixedPointRangeError
            If a value is not finite or does not fit the format; the message names ``what``,
            the value and the representable range.
        """
        array = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(array)):
            bad = array[~np.isfinite(array)].flat[0]
            raise FixedPointRangeError(f"{what} = {float(bad)!r} is not finite")
        words, too_big = self._round(array)
        if np.any(too_big):
            bad = array[too_big].flat[0]
            raise FixedPointRangeError(
                f"{what} = {float(bad)!r} does not fit {self.name} "
                f"[{self.min_value!r}, {self.max_value!r}]")
        return words.astype(np.int64)

    def _round(self, array):
        # Exact in float64: scaling by a power of two, floor, and the difference are exact, and
        # the range limits are powers of two (no float sum that could round, e.g. s + 0.5).
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = array * (2.0 ** self.fraction_bits)
            words = np.floor(scaled)
            words = words + (scaled - words >= 0.5)
        limit = 2.0 ** (self.width - 1)
        too_big = ~np.isfinite(words) | (words >= limit) | (words < -limit)
        return np.where(too_big, 0.0, words), too_big

    def decode(self, words):
        """Return the float values of words (array_like of int) as a float64 array."""
        return np.asarray(words, dtype=np.float64) * self.resolution

    def fits(self, value):
        """Return whether every value of ``value`` can be encoded without error."""
        array = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(array)):
            return False
        return not bool(np.any(self._round(array)[1]))


#: The default number format: 32-bit signed, 16 fractional bits (source paper; the fixed-point
#: contract of docs/architecture.md).
Q15_16 = QFormat(15, 16)


def round_shift(acc_high, acc_low, shift):
    """Round an exact accumulator to ``shift`` fewer fractional bits, half up.

    The accumulator is carried in two parts so that numpy ``int64`` stays exact for 32-bit
    words: ``acc = acc_high * 2**shift + acc_low`` with any integers ``acc_high``, ``acc_low``.

    Returns
    -------
    int or numpy.ndarray
        ``floor((acc + 2**(shift-1)) / 2**shift)``, or ``acc`` when ``shift == 0``.
    """
    if shift == 0:
        return acc_high + acc_low
    return acc_high + ((acc_low + (1 << (shift - 1))) >> shift)


def saturate(value, width=WORD_WIDTH):
    """Clamp to the signed ``width``-bit range.

    Returns
    -------
    (words, overflow)
        The clamped values and a boolean array that is true where clamping happened.
    """
    low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
    value = np.asarray(value)
    overflow = (value > high) | (value < low)
    return np.clip(value, low, high), overflow


def wrap(value, width=WORD_WIDTH):
    """Wrap to the signed ``width``-bit range (two's complement), for phase words only."""
    value = np.asarray(value)
    mask = (1 << width) - 1
    half = 1 << (width - 1)
    return ((value + half) & mask) - half


def signed_word(word, width=WORD_WIDTH):
    """Return the signed value of a ``width``-bit two's-complement word given as any integer.

    The bits above ``width`` are ignored, so a bus word read as unsigned (``0 .. 2**width - 1``)
    and a negative Python integer both give the value in ``[-2**(width-1), 2**(width-1))``.
    Scalar Python integers only (for arrays use :func:`wrap`).
    """
    word &= (1 << width) - 1
    return word - (1 << width) if word >> (width - 1) else word


def ceil_log2(x):
    """Return the smallest ``k`` with ``2**k >= x`` (``x >= 1``)."""
    return max(0, math.ceil(math.log2(x)))
