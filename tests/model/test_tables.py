"""The sine/cosine table and the CORDIC arctangent against their documented definitions.

The table (:data:`linkdyn.model.tables.SINE_TABLE`) is checked entry by entry against
``math.sin``, its interpolation against the documented quadrant rule computed exactly with
:class:`fractions.Fraction`, at every quadrant boundary, for the mirror identities the quarter-wave
rule makes exact, and for its worst-case error over *all* 2**32 phase words (computed exactly per
interpolation segment, checked by brute force on some segments). The CORDIC
(:data:`linkdyn.model.tables.CORDIC`) is checked against ``math.atan`` exhaustively for
``|x| < 2**16`` words and on random words of the whole range.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.golden import _dot, microprogram
from linkdyn.model.microprogram import Dot
from linkdyn.model.tables import CORDIC, SINE_TABLE, Cordic, SineTable

PROPERTY = settings(derandomize=True, deadline=None, max_examples=200)
TURN = 1 << 32
QUARTER = 1 << 30
T = SINE_TABLE
ENTRIES = [int(v) for v in T.entries]
F = T.fraction_bits
E = T.entry_fraction_bits

#: Worst-case |S - sin| of the default table over all phase words (measured exactly below).
TABLE_BOUND = 1.877e-8
#: Worst-case |atan - math.atan| of the default CORDIC, rad, measured on every word with
#: |x| < 2**25 and 40 million random words: 1.23480e-7 at x = -29803 * 2**-16.
CORDIC_BOUND = 1.235e-7

phases = st.one_of(
    st.integers(-(1 << 31), (1 << 31) - 1),
    st.builds(lambda k, d: k * QUARTER + d, st.integers(-2, 4),
              st.integers(-(1 << (F + 1)), 1 << (F + 1))),
)


def reference_sin(phase):
    """The documented rule, exactly: the interpolated sine of a phase word as a Fraction."""
    p = phase % TURN
    quadrant, u = p >> 30, p % QUARTER
    v = QUARTER - u if quadrant in (1, 3) else u
    k, fr = v >> F, v % (1 << F)
    s = Fraction(ENTRIES[k])
    if k < T.size:
        s += Fraction((ENTRIES[k + 1] - ENTRIES[k]) * fr, 1 << F)
    else:
        assert fr == 0
    return (-s if quadrant >= 2 else s) / (1 << E)


def table_sin_cos(phase):
    """(sin, cos) of the table as Fractions (``evaluate`` is exact in float64)."""
    s, c = T.evaluate(np.array([phase], dtype=np.int64))
    return Fraction(float(s[0])), Fraction(float(c[0]))


# ----------------------------------------------------------------------------------------------
# Entries
# ----------------------------------------------------------------------------------------------

def test_default_table_is_the_documented_one():
    assert (T.index_bits, T.entry_bits, T.fraction_bits) == (12, 31, 18)
    assert T.size == 4096 and T.full_scale == 2 ** 30 and E == 30
    assert 2 + T.index_bits + T.fraction_bits == 32
    init = T.memory_init()
    assert len(init) == T.size and len(ENTRIES) == T.size + 1
    assert all(0 <= v < 2 ** T.entry_bits for v in init)


def test_entries_are_sines_rounded_to_the_entry_lsb():
    for k, entry in enumerate(ENTRIES):
        exact = math.sin(k * math.pi / 2 / T.size) * 2 ** E
        assert abs(entry - exact) <= 0.5 + 1e-6, k
    assert ENTRIES[0] == 0 and ENTRIES[-1] == T.full_scale
    assert all(b > a for a, b in zip(ENTRIES, ENTRIES[1:]))


@pytest.mark.parametrize("bits", [dict(index_bits=10, fraction_bits=21),
                                  dict(index_bits=3, fraction_bits=27),
                                  dict(entry_bits=40)])
def test_table_rejects_inconsistent_bit_counts(bits):
    with pytest.raises(ValueError, match="index_bits|entry_bits|phase word"):
        SineTable(**bits)


# ----------------------------------------------------------------------------------------------
# Interpolation and the quadrant rule
# ----------------------------------------------------------------------------------------------

@PROPERTY
@given(phases)
def test_interpolation_equals_the_documented_formula_exactly(phase):
    sin, cos = table_sin_cos(phase)
    assert sin == reference_sin(phase)
    assert cos == reference_sin(phase + QUARTER)


def test_interpolation_on_many_phases_equals_the_formula():
    rng = np.random.default_rng(20261130)
    words = rng.integers(-(1 << 31), 1 << 31, 3000)
    sb, sd, sf, cb, cd, cf = T.lookup(words)
    assert np.all((sf >= 0) & (sf < 1 << F)) and np.all((cf >= 0) & (cf < 1 << F))
    for i, phase in enumerate(words.tolist()):
        assert Fraction(int(sb[i]) * (1 << F) + int(sd[i]) * int(sf[i]), 1 << (F + E)) == \
            reference_sin(phase)
        assert Fraction(int(cb[i]) * (1 << F) + int(cd[i]) * int(cf[i]), 1 << (F + E)) == \
            reference_sin(phase + QUARTER)


BOUNDARIES = [k * QUARTER + d for k in range(-2, 5)
              for d in (-(1 << F) - 1, -(1 << F), -2, -1, 0, 1, 2, 1 << F, (1 << F) + 1)]


@pytest.mark.parametrize("phase", BOUNDARIES)
def test_quadrant_boundaries_follow_the_formula(phase):
    word = (phase + (1 << 31)) % TURN - (1 << 31)
    sin, cos = table_sin_cos(word)
    assert sin == reference_sin(phase) and cos == reference_sin(phase + QUARTER)
    angle = 2 * math.pi * phase / TURN
    assert abs(float(sin) - math.sin(angle)) <= TABLE_BOUND
    assert abs(float(cos) - math.cos(angle)) <= TABLE_BOUND


@pytest.mark.parametrize("degrees, sin, cos", [(0, 0, 1), (90, 1, 0), (180, 0, -1),
                                               (270, -1, 0), (-90, -1, 0), (-180, 0, -1)])
def test_right_angles_are_exact(degrees, sin, cos):
    word = (degrees // 90 * QUARTER + (1 << 31)) % TURN - (1 << 31)
    assert table_sin_cos(word) == (sin, cos)


def test_no_jump_across_any_quadrant_boundary():
    # One phase LSB is 2 pi / 2**32 = 1.46e-9 rad; the interpolant's slope is at most
    # (T[1] - T[0]) / 2**(F + E) per LSB, so neighbours differ by at most that much.
    step = (ENTRIES[1] - ENTRIES[0]) / 2 ** (F + E)
    assert step < 1.47e-9
    for k in range(-2, 6):
        words = np.arange(k * QUARTER - 3, k * QUARTER + 4, dtype=np.int64)
        sin, cos = T.evaluate(words)
        assert np.max(np.abs(np.diff(sin))) <= step
        assert np.max(np.abs(np.diff(cos))) <= step


@PROPERTY
@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_mirror_identities_hold_exactly(phase):
    def sc(p):
        return table_sin_cos((p + (1 << 31)) % TURN - (1 << 31))

    sin, cos = sc(phase)
    assert sc(-phase) == (-sin, cos)                 # sin(-x) = -sin x, cos(-x) = cos x
    assert sc(phase + (1 << 31)) == (-sin, -cos)     # x + pi
    assert sc((1 << 31) - phase) == (sin, -cos)      # pi - x
    assert sc(phase + QUARTER) == (cos, -sin)        # x + pi/2
    assert sc(QUARTER - phase) == (cos, sin)         # pi/2 - x


def test_sin_squared_plus_cos_squared_is_one_within_the_table_error():
    words = np.random.default_rng(7).integers(-(1 << 31), 1 << 31, 200_000)
    sin, cos = T.evaluate(words)
    # |2 sin e_s + 2 cos e_c + e_s^2 + e_c^2| <= 2 sqrt(2) B + 2 B^2 with |e_s|, |e_c| <= B
    assert np.max(np.abs(sin ** 2 + cos ** 2 - 1)) <= 2 * math.sqrt(2) * TABLE_BOUND \
        + 2 * TABLE_BOUND ** 2


def test_the_sin_dot_rounds_the_interpolation_once_to_q1_30():
    """The node's Dot turns the latched operands into round_half_up(S * 2**30)."""
    program = microprogram(Q15_16)
    joint = program.segments["joint"].ops
    sin_dot = next(op for op in joint if isinstance(op, Dot) and op.dst == "sin_theta")
    cos_dot = next(op for op in joint if isinstance(op, Dot) and op.dst == "cos_theta")
    words = np.concatenate([np.random.default_rng(11).integers(-(1 << 31), 1 << 31, 2000),
                            np.array([p for p in BOUNDARIES if -(1 << 31) <= p < (1 << 31)])])
    regs = dict(zip(("sin_base", "sin_delta", "sin_fraction", "cos_base", "cos_delta",
                     "cos_fraction"), T.lookup(words)))
    regs["zero"] = np.zeros(words.shape, dtype=np.int64)
    sin_words, sin_overflow = _dot(regs, program, sin_dot, words.shape)
    cos_words, cos_overflow = _dot(regs, program, cos_dot, words.shape)
    assert not sin_overflow.any() and not cos_overflow.any()
    for i, phase in enumerate(words.tolist()):
        assert sin_words[i] == math.floor(reference_sin(phase) * 2 ** 30 + Fraction(1, 2))
        assert cos_words[i] == math.floor(reference_sin(phase + QUARTER) * 2 ** 30
                                          + Fraction(1, 2))


# ----------------------------------------------------------------------------------------------
# Worst-case error of the table
# ----------------------------------------------------------------------------------------------

def segment_errors(k, v):
    """``S(v) - sin(2 pi v / 2**32)`` for positions ``v`` (int64 array) in segment ``k``."""
    fr = v - (k << F)
    s = (ENTRIES[k] * 2.0 ** F + (ENTRIES[k + 1] - ENTRIES[k]) * fr.astype(float)) \
        * 2.0 ** -(F + E)
    return s - np.sin(v * (2 * math.pi / TURN))


def exact_worst_case():
    """Largest |S - sin| over all phase words.

    The quadrant rule maps every phase to a position ``v`` in ``[0, 2**30]`` with the same
    error, so the quarter wave suffices. On a segment sin is concave, so ``S - sin`` is convex:
    its largest magnitude is at an end (the entry's rounding) or at the interior minimum, where
    ``cos`` equals the chord's slope; the words next to that point are evaluated.
    """
    worst = 0.0
    scale = 2 * math.pi / TURN
    for k in range(T.size):
        slope = (ENTRIES[k + 1] - ENTRIES[k]) * 2.0 ** -(F + E) / scale
        centre = math.acos(min(1.0, slope)) / scale
        candidates = np.array([k << F, (k + 1) << F]
                              + [int(math.floor(centre)) + d for d in (-2, -1, 0, 1, 2, 3)],
                              dtype=np.int64)
        candidates = np.clip(candidates, k << F, (k + 1) << F)
        worst = max(worst, float(np.max(np.abs(segment_errors(k, candidates)))))
    return worst


def test_table_worst_case_error_is_below_the_measured_bound():
    worst = exact_worst_case()
    assert 0.99 * TABLE_BOUND < worst <= TABLE_BOUND
    reported = T.worst_case_error()
    assert reported <= worst + 1e-15 and reported >= worst - 1e-12
    # sampled check of the bound on random phases of the whole turn (both sin and cos)
    words = np.random.default_rng(3).integers(-(1 << 31), 1 << 31, 500_000)
    sin, cos = T.evaluate(words)
    angle = words * (2 * math.pi / TURN)
    assert max(np.max(np.abs(sin - np.sin(angle))), np.max(np.abs(cos - np.cos(angle)))) \
        <= TABLE_BOUND


@pytest.mark.parametrize("k", [0, 255, T.size - 1])
def test_exact_worst_case_method_agrees_with_brute_force_on_a_segment(k):
    v = np.arange(k << F, ((k + 1) << F) + 1, dtype=np.int64)
    brute = float(np.max(np.abs(segment_errors(k, v))))
    scale = 2 * math.pi / TURN
    slope = (ENTRIES[k + 1] - ENTRIES[k]) * 2.0 ** -(F + E) / scale
    centre = int(math.floor(math.acos(min(1.0, slope)) / scale))
    candidates = np.clip(np.array([k << F, (k + 1) << F] + list(range(centre - 2, centre + 4))),
                         k << F, (k + 1) << F)
    assert float(np.max(np.abs(segment_errors(k, candidates)))) == brute


# ----------------------------------------------------------------------------------------------
# CORDIC
# ----------------------------------------------------------------------------------------------

def cordic_error(words):
    words = np.asarray(words, dtype=np.int64)
    return np.abs(CORDIC.atan(words) * 2.0 ** -30 - np.arctan(words * 2.0 ** -16))


def test_cordic_angle_rom_is_rounded_arctangents():
    assert len(CORDIC.angles) == CORDIC.iterations == 24
    for i, angle in enumerate(CORDIC.angles):
        assert abs(angle - math.atan(2.0 ** -i) * 2 ** 30) <= 0.5


def test_cordic_error_below_the_measured_bound_on_every_small_word():
    words = np.arange(-(1 << 16), 1 << 16)
    error = cordic_error(words)
    assert error.max() <= CORDIC_BOUND
    assert error[words == -29803][0] > 1.2347e-7  # the worst word found


def test_cordic_error_below_the_measured_bound_on_random_words():
    rng = np.random.default_rng(5)
    words = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 300_000),
                            [-(1 << 31), -(1 << 31) + 1, (1 << 31) - 1, 0, 1, -1]])
    assert cordic_error(words).max() <= CORDIC_BOUND


@PROPERTY
@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_cordic_matches_atan_property(word):
    got = int(CORDIC.atan(np.array([word]))[0])
    assert abs(got * 2.0 ** -30 - math.atan(word * 2.0 ** -16)) <= CORDIC_BOUND
    assert abs(got) < 2 ** 31  # fits the Q1.30 atan latch


def test_cordic_state_stays_inside_its_registers():
    """Replay the documented recurrence with Python ints: |X|, |Y| < 2**(state_bits - 1)."""
    limit = 1 << (CORDIC.state_bits - 1)
    words = [-(1 << 31), (1 << 31) - 1, -1, 0, 1, 12345678, -29803]
    got = CORDIC.atan(np.array(words))
    for word, result in zip(words, got.tolist()):
        x, y, z = 1 << 30, word << CORDIC.input_shift, 0
        for i, angle in enumerate(CORDIC.angles):
            if y >= 0:
                x, y, z = x + (y >> i), y - (x >> i), z + angle
            else:
                x, y, z = x - (y >> i), y + (x >> i), z - angle
            assert abs(x) < limit and abs(y) < limit
        assert z == result


def test_cordic_reported_worst_case_is_an_upper_bound():
    assert CORDIC.worst_case_error() >= cordic_error([-29803])[0]


def test_cordic_rejects_bad_parameters():
    with pytest.raises(ValueError, match="iterations"):
        Cordic(iterations=4)
    with pytest.raises(ValueError, match="state_bits"):
        Cordic(state_bits=40)
