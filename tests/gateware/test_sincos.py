"""The sine/cosine table gateware equals the model's table, entry for entry and phase for phase."""

import gc
import random
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.hdl import Fragment, UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.sincos import ADDRESS_REGISTER, SineCosineLookup
from linkdyn.model.tables import SINE_TABLE, SineTable

#: Another table shape (the 1,024 x 18-bit table of the first design) to show the gateware
#: follows the table definition.
OTHER_TABLE = SineTable(index_bits=10, entry_bits=18, fraction_bits=20)

OUTPUTS = ("sin_base", "sin_delta", "sin_fraction", "cos_base", "cos_delta", "cos_fraction")


def run_lookups(phases, table=SINE_TABLE, address_register=None):
    """Look every phase up through the gateware; return the six outputs per phase.

    Also checks that ``done`` comes exactly ``latency`` cycles after ``start``.
    """
    dut = SineCosineLookup(table, address_register=address_register)
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


def reference(phases, table=SINE_TABLE):
    columns = table.lookup(np.array(phases, dtype=np.int64))
    return [tuple(int(column[i]) for column in columns) for i in range(len(phases))]


@pytest.mark.parametrize("table", [SINE_TABLE, OTHER_TABLE], ids=["default", "1024x18"])
def test_every_table_entry_reads_back_through_the_gateware(table):
    """Phase ``k << fraction_bits`` (quadrant 0) gives ``T[k]`` as the sine base: every stored
    entry, and the full-scale entry ``T[size]`` made by the address decoder."""
    size = table.size
    phases = [k << table.fraction_bits for k in range(size + 1)]
    results = run_lookups(phases, table)
    bases = [result[0] for result in results]
    assert bases[:size] == table.memory_init()
    assert bases[size] == table.full_scale
    # And the differences T[k+1] - T[k], zero past the end.
    deltas = [result[1] for result in results]
    entries = [int(e) for e in table.entries]
    assert deltas == [entries[k + 1] - entries[k] for k in range(size)] + [0]
    assert results == reference(phases, table)


@pytest.mark.parametrize("address_register", [True, False], ids=["registered", "adder"])
def test_lookup_at_quadrant_and_entry_boundaries(address_register):
    phases = []
    size, f = SINE_TABLE.size, SINE_TABLE.fraction_bits
    for quadrant in range(4):
        for k in (0, 1, 2, size // 2 - 1, size // 2, size - 2, size - 1):
            for offset in (-1, 0, 1, (1 << f) - 1):
                phases.append(as_phase_word((quadrant << 30) + (k << f) + offset))
        for offset in (-2, -1, 0, 1, 2):
            phases.append(as_phase_word((quadrant << 30) + offset))
    phases += [-(1 << 31), (1 << 31) - 1, -1, 0, 1]
    assert run_lookups(phases, address_register=address_register) == reference(phases)


@pytest.mark.parametrize("address_register", [True, False], ids=["registered", "adder"])
@pytest.mark.parametrize("table, count", [(SINE_TABLE, 3000), (OTHER_TABLE, 500)],
                         ids=["default", "1024x18"])
def test_lookup_matches_model_on_random_phases(table, count, address_register):
    rng = random.Random(1965)
    phases = [rng.randint(-(1 << 31), (1 << 31) - 1) for _ in range(count)]
    assert run_lookups(phases, table, address_register) == reference(phases, table)


def _address_domain(platform):
    """The domain in which the elaborated lookup assigns the table's address word ``v``."""
    fragment = Fragment.get(SineCosineLookup(), platform)
    domains = {domain for domain, statements in fragment.statements.items()
               for statement in statements
               if any(signal.name == "v" for signal in statement._lhs_signals())}
    assert len(domains) == 1, domains
    return domains.pop()


@pytest.mark.parametrize("family, domain", [("ecp5", "sync"), ("spartan6", "comb"),
                                            (None, "sync")])
def test_table_address_register_by_platform_family(family, domain):
    """The default comes from ADDRESS_REGISTER by the platform's family: registered addresses
    on ECP5 and without a platform, the adder's on Spartan-6."""
    assert ADDRESS_REGISTER.get(family, True) is (domain == "sync")
    platform = None if family is None else SimpleNamespace(family=family)
    assert _address_domain(platform) == domain


@pytest.mark.parametrize("bad", ["yes", 1])
def test_lookup_rejects_an_address_register_that_is_not_a_bool(bad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(TypeError, match="address_register"):
            SineCosineLookup(address_register=bad)
        gc.collect()


@pytest.mark.parametrize("bad", [None, 1024, "SINE_TABLE"])
def test_lookup_rejects_a_table_that_is_not_a_sine_table(bad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(TypeError, match="SineTable"):
            SineCosineLookup(bad)
        gc.collect()
