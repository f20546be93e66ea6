"""The controlled chain's rescaling of a word between fractional bit counts
(:func:`linkdyn.gateware.controlled_chain.rescale_expression`) equals the model's
:func:`linkdyn.model.microprogram.rescale_word` bit for bit: the saturating left shifts that
take the controllers' Q15.16 ``q, qd, qdd`` into the nodes' formats, and the rounding right
shift that brings the nodes' ``tau`` back."""

import random

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from linkdyn.gateware.controlled_chain import rescale_expression
from linkdyn.model.microprogram import NODE_FORMATS, rescale_word

WORD_MIN, WORD_MAX = -(1 << 31), (1 << 31) - 1

#: (from, to) fractional bits: the node formats' q, qd (26), qdd (22) from Q15.16, tau (19)
#: to Q15.16, an unchanged word, and shifts at the ends of the range.
SHIFTS = [(16, NODE_FORMATS.q), (16, NODE_FORMATS.qdd), (NODE_FORMATS.torque, 16), (16, 16),
          (0, 31), (31, 0), (16, 17), (17, 16)]


def edge_words(from_bits, to_bits):
    """Words at the ends of the range and where a left shift starts to saturate."""
    words = {0, 1, -1, 2, -2, WORD_MIN, WORD_MAX, WORD_MIN + 1, WORD_MAX - 1}
    if to_bits > from_bits:
        limit = 1 << (31 - (to_bits - from_bits))
        words |= {limit - 1, limit, limit + 1, -limit - 1, -limit, -limit + 1}
    else:
        half = 1 << max(from_bits - to_bits - 1, 0)
        words |= {half - 1, half, half + 1, -half - 1, -half, -half + 1}
    return sorted(w for w in words if WORD_MIN <= w <= WORD_MAX)


@pytest.mark.parametrize("from_bits, to_bits", SHIFTS)
def test_rescale_expression_equals_the_model_word_for_word(from_bits, to_bits):
    rng = random.Random(from_bits * 32 + to_bits)
    words = edge_words(from_bits, to_bits) + [rng.randint(WORD_MIN, WORD_MAX) for _ in range(150)]
    words += [rng.randint(-(1 << 24), 1 << 24) for _ in range(50)]
    m = Module()
    word = Signal(signed(32))
    result = Signal(signed(32))
    m.d.comb += result.eq(rescale_expression(word, from_bits, to_bits))
    got = []

    async def bench(ctx):
        for value in words:
            ctx.set(word, value)
            got.append(ctx.get(result))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert got == [rescale_word(value, from_bits, to_bits) for value in words]
