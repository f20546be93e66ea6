"""The CORDIC arctangent gateware equals :meth:`linkdyn.model.tables.Cordic.atan` bit for bit,
with one-cycle and with two-cycle steps."""

import gc
import random
import warnings

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.cordic import STEP_CYCLES, CordicArctangent, state_widths
from linkdyn.model.tables import CORDIC

WORD_MIN, WORD_MAX = -(1 << 31), (1 << 31) - 1

#: Both step timings (:data:`STEP_CYCLES` uses each).
step_timings = pytest.mark.parametrize("step_cycles", [1, 2])


def run_atan(inputs, step_cycles):
    """Return the gateware's ``atan`` words; also checks ``done``/``busy`` timing."""
    dut = CordicArctangent(step_cycles=step_cycles)
    assert dut.latency == step_cycles * CORDIC.iterations + 1
    results = []

    async def bench(ctx):
        for x in inputs:
            ctx.set(dut.x, x)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for cycle in range(1, dut.latency + 1):
                assert ctx.get(dut.done) == (cycle == dut.latency)
                assert ctx.get(dut.busy) == (cycle < dut.latency)
                if cycle < dut.latency:
                    await ctx.tick()
            results.append(ctx.get(dut.result))
            # The result is held until the next start.
            await ctx.tick()
            assert ctx.get(dut.result) == results[-1] and not ctx.get(dut.done)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return results


@step_timings
def test_cordic_matches_model_on_extreme_inputs(step_cycles):
    inputs = [0, 1, -1, 2, -2, 1 << 16, -(1 << 16), 3 << 15, WORD_MIN, WORD_MIN + 1, WORD_MAX,
              WORD_MAX - 1, 1 << 30, -(1 << 30), 1 << 20, -(1 << 20), 100 << 16, -(100 << 16)]
    inputs += [(1 << e) + d for e in range(31) for d in (-1, 0, 1) if (1 << e) + d <= WORD_MAX]
    inputs += [-x for x in inputs if WORD_MIN <= -x <= WORD_MAX]
    assert run_atan(inputs, step_cycles) == [int(v) for v in CORDIC.atan(np.array(inputs))]


@step_timings
def test_cordic_matches_model_on_random_inputs(step_cycles):
    rng = random.Random(1959)
    inputs = ([rng.randint(WORD_MIN, WORD_MAX) for _ in range(300)]
              + [rng.randint(-(8 << 16), 8 << 16) for _ in range(300)])
    assert run_atan(inputs, step_cycles) == [int(v) for v in CORDIC.atan(np.array(inputs))]


def test_cordic_latency_is_step_cycles_times_iterations_plus_one():
    assert CordicArctangent.latency_of(CORDIC) == 2 * CORDIC.iterations + 1 == 49
    assert CordicArctangent.latency_of(CORDIC, 2) == 49
    assert CordicArctangent.latency_of(CORDIC, 1) == CORDIC.iterations + 1 == 25
    assert CordicArctangent().step_cycles == 2
    assert sorted(set(STEP_CYCLES.values())) == [1, 2]
    assert STEP_CYCLES["ecp5"] == 2 and STEP_CYCLES["xc6s"] == 1


@pytest.mark.parametrize("step_cycles", [0, 3, True, 1.0, "1"])
def test_cordic_rejects_a_step_timing_other_than_one_or_two_cycles(step_cycles):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="step_cycles"):
            CordicArctangent(step_cycles=step_cycles)
        with pytest.raises(ValueError, match="step_cycles"):
            CordicArctangent.latency_of(CORDIC, step_cycles)
        gc.collect()


def test_cordic_rejects_a_definition_that_is_not_a_cordic():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(TypeError, match="Cordic"):
            CordicArctangent(24)
        gc.collect()


def test_cordic_state_widths_hold_every_intermediate_value():
    """The narrowed X and Y registers hold the model's state at every step, for the inputs
    that make it largest (the extremes of the word) and many others."""
    x_bits, y_bits = state_widths()
    rng = random.Random(5)
    inputs = [WORD_MIN, WORD_MAX, WORD_MIN + 1, WORD_MAX - 1, 0, 1, -1]
    inputs += [rng.randint(WORD_MIN, WORD_MAX) for _ in range(2000)]
    for x in inputs:
        big_x, big_y = 1 << 30, x << CORDIC.input_shift
        for i in range(CORDIC.iterations):
            assert 0 <= big_x < 1 << x_bits
            assert -(1 << (y_bits - 1)) <= big_y < 1 << (y_bits - 1)
            dx, dy = big_y >> i, big_x >> i
            big_x, big_y = (big_x + dx, big_y - dy) if big_y >= 0 else (big_x - dx, big_y + dy)
        assert 0 <= big_x < 1 << x_bits
