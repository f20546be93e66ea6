"""The multiply-accumulate unit equals exact Python-integer arithmetic, term for term.

The reference is written here with Python integers (unbounded), independently of the numpy
golden model: ``acc = sum(+-(a*b or a+b) << align)``, ``floor((acc + 2**(s-1)) / 2**s)``, then
saturation (with the overflow flag) or wrapping to the signed 32-bit word.
"""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.mac import MultiplyAccumulate, accumulator_width, product_alignments
from linkdyn.model.microprogram import microprogram

WORD_MIN, WORD_MAX = -(1 << 31), (1 << 31) - 1
EXTREMES = (WORD_MIN, WORD_MIN + 1, -(1 << 16), -1, 0, 1, 1 << 16, WORD_MAX - 1, WORD_MAX)


def reference(terms, shift, wraps, aligns, shifts):
    """Return ``(word, overflow)`` of one Dot with exact integer arithmetic.

    ``align`` of a term and ``shift`` are indices into ``aligns`` and ``shifts``.
    """
    acc = 0
    shift = shifts[shift]
    for a, b, add, negate, align in terms:
        value = a + b if add else a * b
        acc += (-value if negate else value) << aligns[align]
    result = (acc + (1 << (shift - 1))) >> shift if shift else acc
    if wraps:
        return ((result + (1 << 31)) % (1 << 32)) - (1 << 31), False
    if result > WORD_MAX:
        return WORD_MAX, True
    if result < WORD_MIN:
        return WORD_MIN, True
    return result, False


def random_operand(rng):
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(EXTREMES)
    if roll < 0.5:
        return rng.randint(-(1 << 20), 1 << 20)
    return rng.randint(WORD_MIN, WORD_MAX)


def product_align_indices(dut):
    """Indices into ``dut.aligns`` that product terms may use."""
    return [i for i, align in enumerate(dut.aligns) if align in dut.product_aligns]


def random_dot(rng, dut, *, big=False):
    """A random Dot: 1..max_terms terms, random kinds, signs, alignments (any for sums, the
    product alignments for products); random shift and wrap."""
    terms = []
    for _ in range(rng.randint(1, dut.max_terms)):
        a, b = random_operand(rng), random_operand(rng)
        if big:
            a, b = rng.choice((WORD_MIN, WORD_MAX)), rng.choice((WORD_MIN, WORD_MAX))
        add = rng.random() < 0.25
        align = (rng.randrange(len(dut.aligns)) if add
                 else rng.choice(product_align_indices(dut)))
        terms.append((a, b, add, rng.random() < 0.5, align))
    return terms, rng.randrange(len(dut.shifts)), rng.random() < 0.2


def run_dots(dut, dots, rng, gap_probability=0.3):
    """Stream the Dots through the unit (random idle cycles in between) and collect results.

    Returns
    -------
    list of (word, overflow, tag), sticky overflow at the end
    """
    results = []
    sticky = []

    async def drive(ctx):
        for tag, (terms, shift, wraps) in enumerate(dots):
            for k, (a, b, add, negate, align) in enumerate(terms):
                while rng.random() < gap_probability:
                    ctx.set(dut.term.valid, 0)
                    await ctx.tick()
                ctx.set(dut.term.valid, 1)
                ctx.set(dut.term.payload, {
                    "a": a, "b": b, "add": add, "negate": negate, "align": align,
                    "first": k == 0, "last": k == len(terms) - 1, "shift": shift,
                    "wraps": wraps, "tag": tag % (1 << 7)})
                await ctx.tick()
        ctx.set(dut.term.valid, 0)
        await ctx.tick().repeat(dut.latency + 1)
        sticky.append(ctx.get(dut.overflow))

    async def collect(ctx):
        async for _, _, valid, result in ctx.tick().sample(dut.result.valid,
                                                            dut.result.payload):
            if valid:
                results.append((result.data, result.overflow, result.tag))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(drive)
    sim.add_testbench(collect, background=True)
    sim.run()
    return results, sticky[0]


def expected(dut, dots):
    return [(*reference(terms, shift, wraps, dut.aligns, dut.shifts), tag % (1 << 7))
            for tag, (terms, shift, wraps) in enumerate(dots)]


def test_accumulator_is_wide_enough_for_the_microprogram():
    program = microprogram()
    dut = MultiplyAccumulate()
    assert dut.aligns == program.aligns and dut.shifts == program.shifts
    assert dut.max_terms == program.max_terms
    assert dut.product_aligns == product_alignments(program)
    # Every product term of the program uses a product alignment.
    for segment in program.segments.values():
        for slot in segment.slots:
            if slot.op == "term" and slot.kind == "mul":
                assert slot.align in dut.product_aligns
    worst_term = max((1 << 62) << max(dut.product_aligns), (1 << 32) << max(dut.aligns))
    worst = dut.max_terms * worst_term + (1 << max(dut.shifts))
    assert worst < 1 << (dut.accumulator_width - 1)
    assert dut.accumulator_width == accumulator_width(32, program.aligns, dut.product_aligns,
                                                      program.shifts, program.max_terms)


def test_mac_matches_exact_integer_arithmetic_on_random_dots():
    rng = random.Random(20240601)
    dut = MultiplyAccumulate()
    dots = [random_dot(rng, dut) for _ in range(1500)]
    # Every (shift, align, kind, negate) combination at least once, with one-term Dots.
    for shift in range(len(dut.shifts)):
        for align in range(len(dut.aligns)):
            for add in (False, True) if align in product_align_indices(dut) else (True,):
                for negate in (False, True):
                    for wraps in (False, True):
                        terms = [(random_operand(rng), random_operand(rng), add, negate, align)]
                        dots.append((terms, shift, wraps))
    rng.shuffle(dots)
    results, sticky = run_dots(dut, dots, rng)
    assert results == expected(dut, dots)
    assert sticky == any(overflow for _, overflow, _ in expected(dut, dots))


def test_mac_back_to_back_terms_without_gaps():
    rng = random.Random(7)
    dut = MultiplyAccumulate()
    dots = [random_dot(rng, dut) for _ in range(400)]
    results, _ = run_dots(dut, dots, rng, gap_probability=0.0)
    assert results == expected(dut, dots)


@pytest.mark.parametrize("sign", [1, -1])
def test_mac_saturates_both_ways_and_sets_sticky_overflow(sign):
    dut = MultiplyAccumulate()
    rng = random.Random(3 if sign > 0 else 4)
    big = WORD_MAX if sign > 0 else WORD_MIN
    dots = [
        # (2**31-1)**2 or (-2**31)*(2**31-1), shifted by the smallest shift but 0 (the
        # program's, 18 with the node's formats): far out of range.
        ([(big, WORD_MAX, False, False, 0)], dut.shifts.index(min(s for s in dut.shifts if s)),
         False),
        # Just out of range: (2**31 - 1) + 1 with shift 0, and -2**31 - 1.
        ([(big, sign, True, False, 0)], dut.shifts.index(0), False),
        # The same wrapping (phase words) raises no flag.
        ([(big, sign, True, False, 0)], dut.shifts.index(0), True),
        # The most extreme Dots the accumulator has to hold exactly: products and sums.
        ([(WORD_MIN, WORD_MIN, False, sign < 0, product_align_indices(dut)[-1])]
         * dut.max_terms, len(dut.shifts) - 1, False),
        ([(WORD_MIN, WORD_MIN, True, sign > 0, len(dut.aligns) - 1)] * dut.max_terms,
         len(dut.shifts) - 1, False),
        # Exactly the limits: no overflow.
        ([(WORD_MAX if sign > 0 else WORD_MIN, 0, True, False, 0)], 0, False),
    ]
    dots += [random_dot(rng, dut, big=True) for _ in range(50)]
    results, sticky = run_dots(dut, dots, rng)
    want = expected(dut, dots)
    assert results == want
    assert want[0] == ((WORD_MAX if sign > 0 else WORD_MIN), True, 0)
    assert want[2][1] is False and want[5][1] is False
    assert sticky


def test_mac_rounds_half_up_at_every_shift():
    """Ties and near-ties around every rounding point, both signs."""
    dut = MultiplyAccumulate()
    dots = []
    for index, shift in enumerate(dut.shifts):
        if shift == 0:
            continue
        for odd in (-7, -5, -3, -1, 1, 3, 5, 7):
            for delta in (-1, 0, 1):
                for negate in (False, True):
                    # acc = +-(odd * 2**(shift-1)) + delta: a tie (delta 0) or next to one.
                    dots.append(([(odd, 1 << (shift - 1), False, negate, 0),
                                  (delta, 0, True, False, 0)], index, False))
    results, _ = run_dots(dut, dots, random.Random(1), gap_probability=0.0)
    assert results == expected(dut, dots)


def test_clear_overflow_clears_the_sticky_flag():
    dut = MultiplyAccumulate()
    seen = []

    async def bench(ctx):
        ctx.set(dut.term.valid, 1)
        ctx.set(dut.term.payload, {"a": WORD_MAX, "b": WORD_MAX, "first": 1, "last": 1})
        await ctx.tick()
        ctx.set(dut.term.valid, 0)
        await ctx.tick().repeat(dut.latency)
        seen.append(ctx.get(dut.overflow))
        ctx.set(dut.clear_overflow, 1)
        await ctx.tick()
        ctx.set(dut.clear_overflow, 0)
        seen.append(ctx.get(dut.overflow))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [1, 0]


@pytest.mark.parametrize("kwargs, error", [
    ({"word_width": 1}, ValueError),
    ({"word_width": "32"}, TypeError),
    ({"aligns": ()}, ValueError),
    ({"shifts": (-1,)}, ValueError),
    ({"max_terms": 0}, ValueError),
    ({"aligns": (0, 31)}, ValueError),
    ({"aligns": (0, 16), "product_aligns": (14,)}, ValueError),
])
def test_mac_rejects_bad_parameters(kwargs, error):
    with warnings.catch_warnings():
        # The half-built component is garbage; it must not warn about being unused.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(error):
            MultiplyAccumulate(**kwargs)
        gc.collect()
