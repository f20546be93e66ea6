"""The fixed-point arithmetic primitives against exact rational arithmetic (``fractions``).

Covers :class:`linkdyn.model.fixedpoint.QFormat` (encode/decode, round half up, range errors),
:func:`round_shift`, :func:`saturate`, :func:`wrap`, and the dot product of a microprogram
instruction as the golden model executes it (``linkdyn.model.golden._dot``): every Dot of the
node microprogram and random Dots, with random and extreme operands, against
``floor(sum(terms) * 2**f + 1/2)`` computed with :class:`fractions.Fraction`.

Property tests use hypothesis with ``derandomize=True`` (fixed examples); the exhaustive loops
use fixed numpy seeds.
"""

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from linkdyn.model.fixedpoint import (Q15_16, WORD_WIDTH, FixedPointRangeError, QFormat,
                                      round_shift, saturate, wrap)
from linkdyn.model.golden import _dot, microprogram
from linkdyn.model.microprogram import Dot, add, mul
from linkdyn.model.tables import SINE_TABLE
from linkdyn.model.microprogram import NODE_FORMATS, QUANTITIES

PROPERTY = settings(derandomize=True, deadline=None, max_examples=150)
WORD_MIN, WORD_MAX = -(1 << 31), (1 << 31) - 1
#: The largest double below 1/2: ``s + 0.5`` would round up to 1.0 in float64.
BELOW_HALF = 0.5 - 2.0 ** -54


def exact_encode(x, fraction_bits):
    """Round half up, exactly: ``floor(x * 2**f + 1/2)``."""
    return math.floor(Fraction(x) * 2 ** fraction_bits + Fraction(1, 2))


# ----------------------------------------------------------------------------------------------
# QFormat
# ----------------------------------------------------------------------------------------------

def test_q15_16_edge_values():
    assert (Q15_16.integer_bits, Q15_16.fraction_bits, Q15_16.width) == (15, 16, 32)
    assert Q15_16.name == "Q15.16"
    assert Q15_16.min_word == -2 ** 31 and Q15_16.max_word == 2 ** 31 - 1
    assert Q15_16.resolution == 2.0 ** -16
    assert Q15_16.max_value == 32768 - 2.0 ** -16
    assert Q15_16.min_value == -32768.0
    assert Q15_16.encode(Q15_16.max_value) == Q15_16.max_word
    assert Q15_16.encode(Q15_16.min_value) == Q15_16.min_word
    # Half up at both ends: max + 1/2 LSB rounds out of range, min - 1/2 LSB rounds into it.
    assert Q15_16.encode(Q15_16.max_value + 2.0 ** -18) == Q15_16.max_word
    with pytest.raises(FixedPointRangeError):
        Q15_16.encode(Q15_16.max_value + 2.0 ** -17)
    assert Q15_16.encode(Q15_16.min_value - 2.0 ** -17) == Q15_16.min_word
    with pytest.raises(FixedPointRangeError):
        Q15_16.encode(Q15_16.min_value - 2.0 ** -17 - 2.0 ** -30)
    assert Q15_16.fits(Q15_16.max_value) and not Q15_16.fits(32768.0)
    assert Q15_16.decode([Q15_16.min_word, -1, 0, 1, Q15_16.max_word]).tolist() == [
        -32768.0, -2.0 ** -16, 0.0, 2.0 ** -16, 32768 - 2.0 ** -16]


@pytest.mark.parametrize("value, word", [
    (0.5, 1), (-0.5, 0), (1.5, 2), (-1.5, -1), (2.5, 3), (-2.5, -2),
    (0.49999, 0), (-0.50001, -1), (2.0 ** -40, 0), (-(2.0 ** -40), 0),
])
def test_encode_rounds_half_up_not_to_even_nor_away_from_zero(value, word):
    # value in LSBs of Q15.16
    assert Q15_16.encode(value * 2.0 ** -16) == word


def formats(max_width=53):
    """Q formats whose words are all exact float64 values."""
    return st.tuples(st.integers(0, 40), st.integers(0, 40)).filter(
        lambda bits: 1 + bits[0] + bits[1] <= max_width).map(lambda bits: QFormat(*bits))


@st.composite
def format_and_value(draw):
    """A format and a float inside its range (up to half an LSB outside), often near a tie."""
    fmt = draw(formats())
    word = draw(st.one_of(st.sampled_from([fmt.min_word, fmt.max_word, 0, -1, 1]),
                          st.integers(fmt.min_word, fmt.max_word)))
    offset = draw(st.one_of(
        st.sampled_from([Fraction(-1, 2), Fraction(1, 2) - Fraction(1, 2 ** 30), Fraction(0),
                         Fraction(1, 2 ** 20), -Fraction(1, 2 ** 20)]),
        st.fractions(Fraction(-1, 2), Fraction(1, 2), max_denominator=2 ** 40)))
    value = float((word + offset) / 2 ** fmt.fraction_bits)
    return fmt, value


@PROPERTY
@given(format_and_value())
@example((Q15_16, 2.5 * 2.0 ** -16))
@example((QFormat(0, 0), -0.5))
def test_encode_equals_exact_round_half_up(case):
    fmt, value = case
    expected = exact_encode(value, fmt.fraction_bits)
    if fmt.min_word <= expected <= fmt.max_word:
        word = fmt.encode(value)
        assert word.dtype == np.int64 and int(word) == expected
        assert fmt.fits(value)
    else:
        assert not fmt.fits(value)
        with pytest.raises(FixedPointRangeError):
            fmt.encode(value)


@PROPERTY
@given(formats(), st.data())
def test_decode_then_encode_is_the_identity(fmt, data):
    words = data.draw(st.lists(st.integers(fmt.min_word, fmt.max_word), min_size=1,
                               max_size=8))
    values = fmt.decode(words)
    for word, value in zip(words, values):
        assert Fraction(float(value)) == Fraction(word, 2 ** fmt.fraction_bits)
    assert fmt.encode(values).tolist() == words


def test_encode_rounds_the_largest_value_below_half_an_lsb_down():
    value = BELOW_HALF * 2.0 ** -16
    assert exact_encode(value, 16) == 0
    assert Q15_16.encode(value) == 0


def test_encode_keeps_odd_integers_above_2_to_52_in_a_wide_format():
    assert QFormat(60, 0).encode(2.0 ** 52 + 1) == 2 ** 52 + 1


@pytest.mark.parametrize("integer_bits", [59, 63])
def test_encode_rejects_2_to_the_width_in_a_wide_format(integer_bits):
    fmt = QFormat(integer_bits, 0)
    with pytest.raises(FixedPointRangeError):
        fmt.encode(2.0 ** integer_bits)


@pytest.mark.parametrize("value", [40000.0, -32768.5 - 2.0 ** -10, 1e6])
def test_range_error_names_the_quantity_the_value_and_the_format(value):
    with pytest.raises(FixedPointRangeError) as error:
        Q15_16.encode([0.0, value, 1.0], "node 3 qd")
    message = str(error.value)
    # The value may print as a numpy scalar, "np.float64(40000.0)".
    assert re.match(rf"node 3 qd = (np\.float64\()?{re.escape(repr(value))}\)? does not fit "
                    rf"Q15\.16 \[-32768\.0, 32767\.9999847", message), message
    assert isinstance(error.value, ValueError)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_rejected_naming_the_quantity(value):
    with pytest.raises(FixedPointRangeError,
                       match=rf"node 1 q = (np\.float64\()?-?{value!r}\)? is not finite"):
        Q15_16.encode(np.array([[1.0, value]]), "node 1 q")
    assert not Q15_16.fits(value)


def test_encode_keeps_the_shape():
    values = np.arange(24.0).reshape(2, 3, 4) / 7
    words = Q15_16.encode(values)
    assert words.shape == (2, 3, 4) and words.dtype == np.int64
    assert words[1, 2, 3] == exact_encode(23 / 7, 16)


@pytest.mark.parametrize("bits, error", [
    ((15.0, 16), TypeError), ((True, 16), TypeError), ((15, "16"), TypeError),
    ((-1, 16), ValueError), ((15, -1), ValueError), ((40, 40), ValueError),
])
def test_qformat_rejects_bad_bit_counts(bits, error):
    with pytest.raises(error, match="integer_bits|fraction_bits|width"):
        QFormat(*bits)


def test_qformat_widest_and_narrowest():
    assert QFormat(63, 0).width == 64 and QFormat(0, 63).width == 64
    tiny = QFormat(0, 0)
    assert (tiny.min_word, tiny.max_word, tiny.name) == (-1, 0, "Q0.0")
    assert QFormat(1, 30).name == "Q1.30" and QFormat(1, 30).max_value == 2 - 2.0 ** -30


# ----------------------------------------------------------------------------------------------
# round_shift, saturate, wrap
# ----------------------------------------------------------------------------------------------

@PROPERTY
@given(st.integers(-(2 ** 70), 2 ** 70), st.integers(-(2 ** 70), 2 ** 70), st.integers(0, 64))
def test_round_shift_is_floor_of_acc_plus_half_over_two_to_the_shift(high, low, shift):
    acc = high * 2 ** shift + low
    expected = acc if shift == 0 else math.floor(Fraction(acc, 2 ** shift) + Fraction(1, 2))
    assert round_shift(high, low, shift) == expected


@PROPERTY
@given(st.lists(st.tuples(st.integers(-(2 ** 40), 2 ** 40), st.integers(0, 2 ** 40)),
                min_size=1, max_size=16), st.integers(1, 40))
def test_round_shift_on_int64_arrays_is_exact(parts, shift):
    high = np.array([p[0] for p in parts], dtype=np.int64)
    low = np.array([p[1] for p in parts], dtype=np.int64)
    got = round_shift(high, low, shift)
    assert got.dtype == np.int64
    for (h, l), g in zip(parts, got.tolist()):
        assert g == math.floor(Fraction(h * 2 ** shift + l, 2 ** shift) + Fraction(1, 2))


@PROPERTY
@given(st.integers(2, 64), st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), min_size=1,
                                    max_size=16))
def test_saturate_clamps_to_the_signed_range_and_flags_it(width, values):
    low, high = -(2 ** (width - 1)), 2 ** (width - 1) - 1
    words, overflow = saturate(np.array(values, dtype=np.int64), width)
    assert words.tolist() == [min(max(v, low), high) for v in values]
    assert overflow.tolist() == [not low <= v <= high for v in values]


def test_saturate_edges_of_the_32_bit_word():
    values = np.array([WORD_MIN - 1, WORD_MIN, WORD_MAX, WORD_MAX + 1, 2 ** 62, -(2 ** 62)])
    words, overflow = saturate(values)
    assert words.tolist() == [WORD_MIN, WORD_MIN, WORD_MAX, WORD_MAX, WORD_MAX, WORD_MIN]
    assert overflow.tolist() == [True, False, False, True, True, True]


@PROPERTY
@given(st.integers(2, 32), st.lists(st.integers(-(2 ** 62), 2 ** 62), min_size=1,
                                    max_size=16))
def test_wrap_is_twos_complement_modulo(width, values):
    half = 2 ** (width - 1)
    got = wrap(np.array(values, dtype=np.int64), width)
    assert got.tolist() == [(v + half) % (2 * half) - half for v in values]


def test_wrap_edges_of_the_phase_word():
    values = np.array([2 ** 31, 2 ** 31 - 1, -(2 ** 31), -(2 ** 31) - 1, 2 ** 32, 3 * 2 ** 31])
    assert wrap(values).tolist() == [-(2 ** 31), 2 ** 31 - 1, -(2 ** 31), 2 ** 31 - 1, 0,
                                     -(2 ** 31)]


# ----------------------------------------------------------------------------------------------
# The dot product of a microprogram instruction (golden _dot)
# ----------------------------------------------------------------------------------------------

PROGRAM = microprogram(Q15_16)    # one format everywhere: the Q15.16 cases of this file
RMAP = PROGRAM.registers
DOTS = [op for segment in PROGRAM.segments.values() for op in segment.ops
        if isinstance(op, Dot)]
EXTREMES = (WORD_MIN, WORD_MIN + 1, -1, 0, 1, WORD_MAX - 1, WORD_MAX)


def exact_dot(op, values):
    """The documented semantics with Fractions: ``(word, overflow)`` for one operand set.

    ``values``: register name -> Python int word. A product term is the product of the two
    values, a sum term the sum of the two words in the first operand's format (the second is
    the constant zero or a register of the same format).
    """
    acc = Fraction(0)
    for term in op.terms:
        fa = RMAP[term.a].format.fraction_bits
        fb = RMAP[term.b].format.fraction_bits
        a, b = values[term.a], values[term.b]
        if term.kind == "mul":
            value = Fraction(a, 2 ** fa) * Fraction(b, 2 ** fb)
        else:
            assert term.b == "zero" or fa == fb
            value = Fraction(a + b, 2 ** fa)
        acc += -value if term.negate else value
    dst = RMAP[op.dst].format
    word = math.floor(acc * 2 ** dst.fraction_bits + Fraction(1, 2))
    if dst.wraps:
        return (word + 2 ** 31) % 2 ** 32 - 2 ** 31, False
    clamped = min(max(word, WORD_MIN), WORD_MAX)
    return clamped, clamped != word


def run_dot(op, operand_sets):
    """Run ``_dot`` on a batch of operand sets (list of dicts name -> int); zero stays 0."""
    names = sorted({name for term in op.terms for name in (term.a, term.b)})
    regs = {name: np.array([0 if name == "zero" else s[name] for s in operand_sets],
                           dtype=np.int64) for name in names}
    words, overflow = _dot(regs, PROGRAM, op, (len(operand_sets),))
    return words.tolist(), overflow.tolist()


def check_dot(op, operand_sets):
    words, overflow = run_dot(op, operand_sets)
    for k, values in enumerate(operand_sets):
        values = dict(values, zero=0)
        assert (words[k], overflow[k]) == exact_dot(op, values), (op, values)


def test_the_program_has_the_dots_this_file_expects():
    assert len(DOTS) > 40 and PROGRAM.max_terms == max(len(op.terms) for op in DOTS)
    assert sum(len(op.terms) for op in DOTS) == sum(
        segment.mac_terms for segment in PROGRAM.segments.values())
    # every quantity a Dot writes has its own format class; phase words wrap, k qd is the
    # CORDIC's Q15.16; with one format everywhere the classes have 16, 30 or 32 bits
    assert {RMAP[op.dst].format.name for op in DOTS} == {
        "q", "qd", "qdd", "trig", "r", "omega", "omega_dot", "p_ddot", "force", "moment",
        "torque", "phase", "cordic"}
    assert {RMAP[op.dst].format.fraction_bits for op in DOTS} == {16, 30, 32}


@pytest.mark.parametrize("op", DOTS, ids=lambda op: op.dst)
def test_every_dot_of_the_program_equals_exact_arithmetic(op):
    """Random full-range words (fixed seed) plus all-extreme operand patterns."""
    names = sorted({name for term in op.terms for name in (term.a, term.b)} - {"zero"})
    rng = np.random.default_rng([2026, len(op.terms), sum(map(ord, op.dst))])
    sets = [{name: int(v) for name, v in zip(names, rng.integers(WORD_MIN, WORD_MAX,
                                                                 len(names), endpoint=True))}
            for _ in range(48)]
    for extreme in EXTREMES:
        sets.append({name: extreme for name in names})
    for k in range(len(names) + 1):  # the sign pattern that makes products add up
        sets.append({name: (WORD_MIN if i < k else WORD_MAX) for i, name in enumerate(names)})
    sets += [{name: int(rng.choice(EXTREMES)) for name in names} for _ in range(16)]
    check_dot(op, sets)


@st.composite
def program_dot_and_operands(draw):
    op = draw(st.sampled_from(DOTS))
    names = sorted({name for term in op.terms for name in (term.a, term.b)} - {"zero"})
    word = st.one_of(st.sampled_from(EXTREMES), st.integers(WORD_MIN, WORD_MAX))
    sets = draw(st.lists(st.fixed_dictionaries({name: word for name in names}), min_size=1,
                         max_size=6))
    return op, sets


@PROPERTY
@given(program_dot_and_operands())
def test_program_dots_equal_exact_arithmetic_property(case):
    op, sets = case
    check_dot(op, sets)


WORD_REGISTERS = [reg.name for reg in RMAP if reg.format.fraction_bits == 16
                  and reg.kind in ("constant", "input", "forward_in", "backward_in")
                  and reg.name != "zero"]


@st.composite
def word_dot_and_operands(draw):
    """A random Dot over Q15.16 registers into a Q15.16 register, and operand sets."""
    count = draw(st.integers(1, PROGRAM.max_terms))
    terms = []
    for _ in range(count):
        a = draw(st.sampled_from(WORD_REGISTERS))
        kind = draw(st.sampled_from(["mul", "add"]))
        b = draw(st.sampled_from(WORD_REGISTERS + ["zero"]))
        term = mul(a, b) if kind == "mul" else add(a, b)
        terms.append(-term if draw(st.booleans()) else term)
    op = Dot("tau", terms)
    names = sorted({name for term in op.terms for name in (term.a, term.b)} - {"zero"})
    word = st.one_of(st.sampled_from(EXTREMES), st.integers(WORD_MIN, WORD_MAX),
                     st.integers(-(2 ** 20), 2 ** 20))
    sets = draw(st.lists(st.fixed_dictionaries({name: word for name in names}), min_size=1,
                         max_size=4))
    return op, sets


@PROPERTY
@given(word_dot_and_operands())
def test_random_word_dots_equal_exact_arithmetic(case):
    op, sets = case
    check_dot(op, sets)


@pytest.mark.parametrize("product, word", [
    (2 ** 15, 1), (-(2 ** 15), 0), (3 * 2 ** 15, 2), (-3 * 2 ** 15, -1),
    (2 ** 15 - 1, 0), (-(2 ** 15) - 1, -1),
])
def test_dot_rounds_half_up_once(product, word):
    # m * qd with qd = 1 LSB: the product has 32 fractional bits, the result 16.
    op = Dot("tau", [mul("m", "qd")])
    assert run_dot(op, [{"m": product, "qd": 1}]) == ([word], [False])


def test_dot_rounds_once_not_per_term():
    # Two terms of +1/2 LSB each: rounded once they make 1 LSB; rounded per term 2 LSB.
    op = Dot("tau", [mul("m", "qd"), mul("I_xx", "qd")])
    assert run_dot(op, [{"m": 2 ** 15, "I_xx": 2 ** 15, "qd": 1}]) == ([1], [False])
    # +1/2 and -1/2 LSB cancel exactly.
    op = Dot("tau", [mul("m", "qd"), -mul("I_xx", "qd")])
    assert run_dot(op, [{"m": 2 ** 15, "I_xx": 2 ** 15, "qd": 1}]) == ([0], [False])


def test_dot_saturates_with_the_overflow_flag_and_phase_dots_wrap():
    op = Dot("tau", [add("mu_out_z", "tau_friction")])
    assert run_dot(op, [{"mu_out_z": WORD_MAX, "tau_friction": 1},
                        {"mu_out_z": WORD_MIN, "tau_friction": -1},
                        {"mu_out_z": WORD_MAX, "tau_friction": 0}]) == (
        [WORD_MAX, WORD_MIN, WORD_MAX], [True, True, False])
    phase = next(op for op in DOTS if op.dst == "phase")
    words, overflow = run_dot(phase, [{"q": WORD_MAX, "rate": WORD_MAX, "theta_offset": 0}])
    assert words == [exact_dot(phase, {"q": WORD_MAX, "rate": WORD_MAX, "theta_offset": 0,
                                       "zero": 0})[0]]
    assert overflow == [False]


def test_register_formats_are_the_documented_ones():
    bits = {name: form.fraction_bits for name, form in RMAP.formats.items()}
    assert bits == {**{q: 16 for q in QUANTITIES if q not in ("trig", "r")},
                    "trig": 30, "r": 30, "phase": 32, "rate": 32,
                    "entry": SINE_TABLE.entry_fraction_bits,
                    "fraction": SINE_TABLE.fraction_bits, "atan": 30, "count": 0, "cordic": 16}
    node = {name: form.fraction_bits for name, form in microprogram().registers.formats.items()}
    assert {q: node[q] for q in QUANTITIES} == NODE_FORMATS.bits
    assert [name for name, form in RMAP.formats.items() if form.wraps] == ["phase"]
    assert WORD_WIDTH == 32
