"""The sine/cosine table gateware equals the model's table, entry for entry and phase for phase."""

import gc
import random
import warnings

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.sincos import SineCosineLookup
from linkdyn.model.tables import SINE_TABLE

OUTPUTS = ("sin_base", "sin_delta", "sin_fraction", "cos_base", "cos_delta", "cos_fraction")


def run_lookups(phases):
    """Look every phase up through the gateware; return the six outputs per phase.

    Also checks that ``done`` comes exactly ``latency`` cycles after ``start``.
    """
    dut = SineCosineLookup()
    results = []

    async def bench(ctx):
        for phase in phases:
            ctx.set(dut.phase, phase)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for cycle in range(1, dut.latency + 1):
                done = ctx.get(dut.done)
                assert done == (cycle == dut.latency), f"done in cycle {cycle}"
                if done:
                    results.append(tuple(ctx.get(getattr(dut, name)) for name in OUTPUTS))
                else:
                    await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return results


def as_phase_word(phase):
    """Signed 32-bit phase word of a phase in 0 .. 2**32 - 1."""
    phase %= 1 << 32
    return phase - (1 << 32) if phase >= 1 << 31 else phase


def reference(phases):
    columns = SINE_TABLE.lookup(np.array(phases, dtype=np.int64))
    return [tuple(int(column[i]) for column in columns) for i in range(len(phases))]


def test_every_table_entry_reads_back_through_the_gateware():
    """Phase ``k << fraction_bits`` (quadrant 0) gives ``T[k]`` as the sine base: every stored
    entry, and the full-scale entry ``T[size]`` made by the address decoder."""
    size = SINE_TABLE.size
    phases = [k << SINE_TABLE.fraction_bits for k in range(size + 1)]
    results = run_lookups(phases)
    bases = [result[0] for result in results]
    assert bases[:size] == SINE_TABLE.memory_init()
    assert bases[size] == SINE_TABLE.full_scale
    # And the differences T[k+1] - T[k], zero past the end.
    deltas = [result[1] for result in results]
    entries = [int(e) for e in SINE_TABLE.entries]
    assert deltas == [entries[k + 1] - entries[k] for k in range(size)] + [0]
    assert results == reference(phases)


def test_lookup_at_quadrant_and_entry_boundaries():
    phases = []
    size, f = SINE_TABLE.size, SINE_TABLE.fraction_bits
    for quadrant in range(4):
        for k in (0, 1, 2, size // 2 - 1, size // 2, size - 2, size - 1):
            for offset in (-1, 0, 1, (1 << f) - 1):
                phases.append(as_phase_word((quadrant << 30) + (k << f) + offset))
        for offset in (-2, -1, 0, 1, 2):
            phases.append(as_phase_word((quadrant << 30) + offset))
    phases += [-(1 << 31), (1 << 31) - 1, -1, 0, 1]
    assert run_lookups(phases) == reference(phases)


def test_lookup_matches_model_on_random_phases():
    rng = random.Random(1965)
    phases = [rng.randint(-(1 << 31), (1 << 31) - 1) for _ in range(3000)]
    assert run_lookups(phases) == reference(phases)


@pytest.mark.parametrize("bad", [None, 1024, "SINE_TABLE"])
def test_lookup_rejects_a_table_that_is_not_a_sine_table(bad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(TypeError, match="SineTable"):
            SineCosineLookup(bad)
        gc.collect()
