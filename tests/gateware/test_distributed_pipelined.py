"""The pipelined policy of the distributed chain (one node per board, the next update starts
before the previous one has finished on every board): the golden model's words through the bus
with overlapping updates (Amaranth simulator, 1 and 2 boards, 3 in the cut test), the bus
answers against the single-FPGA pipelined :class:`~linkdyn.gateware.chain.LinkDynChain` for
the same accesses, bit errors on the lines, a cut mid-stream and its restore; and the
sequential policy's gateware untouched by the pipelined one.

The streams repeat states: a state whose inputs its bank already holds needs no input write,
so its CONTROL.start follows the previous one at once (back to back), while a new state's
inputs are written into the next bank as the earlier updates run.
"""

import gc
import os
import random
import warnings
from pathlib import Path

import pytest
from amaranth.back import verilog
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.actuator import ActuatorCore
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.distributed import DistributedChain
from linkdyn.model.golden import microprogram
from linkdyn.model.protocol import (
    CONTROL_NODE, RESULT_FOLLOW, RESULT_SELECT, STATUS_BUSY, STATUS_DONE, ProtocolSpec,
    control_register,
)
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.sim.chain_cases import build_case
from linkdyn.sim.chain_testbench import BusHost, run_updates, simulate
from linkdyn.sim.distributed_runner import run_distributed

from support import LONG, REPOSITORY

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

REGISTERS = microprogram().registers
TAU = REGISTERS["tau"].address


def _build_root():
    if os.environ.get("LINKDYN_BUILD_DIR"):
        return Path(os.environ["LINKDYN_BUILD_DIR"]) / "sim" / "distributed"
    return REPOSITORY / "build" / "sim" / "distributed"


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def _stream(case, banks, repeats=2):
    """Return (inputs, golden tau words, golden overflow rows) of a stream over the case's
    states: each new state followed by ``repeats`` states its bank already holds."""
    order = []
    for state in range(case.count):
        order.append(state)
        for r in range(repeats):
            # The state ``banks`` samples back uses this bank: it holds those inputs.
            if len(order) >= banks:
                order.append(order[-banks])
    inputs = [case.inputs[s] for s in order]
    taus = [[int(w) for w in case.tau_words[s]] for s in order]
    n = len(case.constants)
    overflow = [sum(1 << i for i in range(n) if case.overflow[s, i]) for s in order]
    return inputs, taus, overflow


def _overlapped(records):
    """Whether some update started before the previous one's latency had passed."""
    pairs = [(a, b) for a, b in zip(records, records[1:]) if a.latency is not None]
    return any(b.start_cycle - a.start_cycle < a.latency for a, b in pairs)


@pytest.mark.parametrize("n, banks, robot_seed", [(1, 4, 51), (2, 2, 52)])
def test_pipelined_distributed_chain_matches_golden_model_with_overlapping_updates(
        n, banks, robot_seed):
    # External wrenches on every link; 4 saturating states at the end (some set overflow
    # flags). The Q15.16 program: with the node's formats no input saturates a 1- or 2-link
    # random robot, and the flags' path over the links is part of what this checks.
    case = build_case({"robot": f"random:{n}:{robot_seed}", "states": 1, "seed": robot_seed,
                       "wrench": "random", "saturate": 4}, Q15_16)
    assert case.overflow.any()
    inputs, taus, overflow = _stream(case, banks)
    dut = DistributedChain(n, Q15_16, bits=5, policy="pipelined", banks=banks)
    assert dut.banks == banks and dut.max_in_flight == 2 * banks
    records = simulate(dut, case.constants, case.base_motion, inputs, pipelined=True,
                       window=2 * banks)
    assert [r.tau for r in records] == taus
    assert [r.overflow for r in records] == overflow
    assert _overlapped(records), "no update started while the previous one ran"


def _script_answers(dut, case, banks, seed):
    """Run one access sequence on ``dut``: a stream of updates (every new state's inputs
    written, retried while refused; starts retried while refused), then, with every update
    finished, RESULT_SELECT of every number around the last 2 * banks updates with the tau,
    base wrench and OVERFLOW reads each shows, the control block, node reads, writes allowed
    and refused, CONTROL.clear. Return the answers of the second part, the (refused, taken)
    counts of the first and the UPDATE_COUNT seen after each start."""
    n = len(case.constants)
    spec = ProtocolSpec(n)
    host = BusHost(dut)
    inputs, _, _ = _stream(case, banks)
    answers = []
    seen = {}
    rng = random.Random(seed)
    timing = {control_register(name).address for name in ("LATENCY_CYCLES", "INTERVAL_CYCLES")}
    backward_sources = [REGISTERS[s].address for s in ("f_out_x", "mu_out_z")
                        if s in REGISTERS]

    async def note(ctx, node, addr, write=None):
        error, word = await host.access(ctx, node, addr, write, limit=50_000)
        if node == CONTROL_NODE and addr in timing and write is None:
            word = None
        answers.append((node, addr, write, error, None if error else word))
        return error

    async def bench(ctx):
        records = []
        await run_updates(ctx, host, case.constants, case.base_motion, inputs, pipelined=True,
                          window=2 * banks, records=records)
        seen["taus"] = [r.tau for r in records]
        while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
            pass
        count = await host.control(ctx, "UPDATE_COUNT")
        for number in range(max(count - 2 * banks - 2, 0), count + 3):
            await note(ctx, CONTROL_NODE, RESULT_SELECT, number)
            await note(ctx, CONTROL_NODE, RESULT_SELECT)
            await note(ctx, CONTROL_NODE, control_register("OVERFLOW").address)
            for i in range(n):
                await note(ctx, i, TAU)
            for address in backward_sources:
                await note(ctx, 0, address)
            # A mailbox register (the sender's word in the selected update's bank).
            await note(ctx, n - 1, REGISTERS["omega_in_z"].address
                       if "omega_in_z" in REGISTERS else TAU)
        await note(ctx, CONTROL_NODE, RESULT_SELECT, RESULT_FOLLOW)
        for reg in spec.control_registers:
            await note(ctx, CONTROL_NODE, reg.address)
        for node in range(n + 1):
            for addr in range(spec.node_map_size + 1):
                await note(ctx, node, addr)
        for _ in range(10):
            node, addr = rng.randrange(n + 1), rng.randrange(spec.node_map_size + 4)
            await note(ctx, node, addr, rng.getrandbits(32) if addr >= 40 else 0)
        await note(ctx, CONTROL_NODE, control_register("CONTROL").address, 2)
        await note(ctx, CONTROL_NODE, control_register("OVERFLOW_STICKY").address)

    _run(dut, bench)
    return answers, seen


@pytest.mark.parametrize("banks", [4, 2] if LONG else [4])
def test_bus_answers_as_the_single_fpga_pipelined_chain(banks):
    """The same accesses on the distributed chain (2 boards) and on LinkDynChain(2,
    policy="pipelined"): every answer after the stream (error flag and word, LATENCY and
    INTERVAL excepted) is the same, and both streams give the golden model's words (4 banks;
    2 banks too with LINKDYN_LONG=1)."""
    n = 2
    case = build_case({"robot": f"random:{n}:57", "states": 3, "seed": 57, "wrench": "random",
                       "saturate": 1})
    _, taus, _ = _stream(case, banks)
    distributed, seen_d = _script_answers(
        DistributedChain(n, bits=5, policy="pipelined", banks=banks), case, banks, 5)
    single, seen_s = _script_answers(LinkDynChain(n, policy="pipelined", banks=banks), case,
                                     banks, 5)
    assert seen_d["taus"] == taus and seen_s["taus"] == taus
    assert len(distributed) == len(single)
    for mine, theirs in zip(distributed, single):
        assert mine == theirs
    # The sequence met refused selects and refused writes, and selects that were taken.
    assert any(a[3] for a in single) and not all(a[3] for a in single)


def _window(port, field):
    from linkdyn.gateware.actuator import LINK_WINDOW, LINK_WINDOW_FIELDS
    return LINK_WINDOW + 8 * port + LINK_WINDOW_FIELDS.index(field)


def test_bit_errors_on_the_lines_leave_the_pipelined_stream_bit_exact():
    """Bit-error rate 2e-3 on both lines of 2 boards: every update of an overlapping stream
    has the golden model's words, and the link counters show the errors were real."""
    n, banks = 2, 2
    case = build_case({"robot": f"random:{n}:61", "states": 1, "seed": 61, "wrench": "random"})
    inputs, taus, _ = _stream(case, banks)
    dut = DistributedChain(n, bits=5, ber=2e-3, seed=9, link_parameters={"ack_timeout": 256},
                           policy="pipelined", banks=banks)
    host = BusHost(dut)
    seen = {}

    async def bench(ctx):
        records = []
        await run_updates(ctx, host, case.constants, case.base_motion, inputs, pipelined=True,
                          window=2 * banks, records=records)
        seen["taus"] = [r.tau for r in records]
        seen["repeats"] = sum([(await host.access(ctx, board, _window(port, "retransmissions")))[1]
                               for board, port in ((0, 1), (1, 0))])
        seen["crc"] = sum([(await host.access(ctx, board, _window(port, "crc_errors")))[1]
                           for board, port in ((0, 1), (1, 0))])
        seen["flipped"] = [ctx.get(line.flipped) for line in dut.lines[0]]

    _run(dut, bench)
    assert seen["taus"] == taus
    assert all(f > 0 for f in seen["flipped"])
    assert seen["repeats"] > 0 and seen["crc"] > 0


def test_a_cut_mid_stream_never_gives_a_wrong_word_and_the_stream_resumes():
    """3 boards, two updates in flight (started back to back), hop 1 cut: STATUS stays busy,
    board 2 behind the cut is refused (reads and input writes), no update ends; after the
    restore both end with the golden model's words (each picked with RESULT_SELECT) and the
    stream goes on (no board reset: the constants loaded before the cut are used)."""
    n, banks = 3, 2
    case = build_case({"robot": f"random:{n}:63", "states": 3, "seed": 63, "wrench": "random"})
    dut = DistributedChain(n, bits=5, timeout=1024, policy="pipelined", banks=banks)
    host = BusHost(dut)
    seen = {}

    async def load(ctx):
        for i, words in enumerate(case.constants):
            for name, word in words.items():
                assert await host.write(ctx, i, REGISTERS[name].address, word)
        for name, word in case.base_motion.items():
            assert await host.write(ctx, 0, REGISTERS[name].address, word)

    async def inputs(ctx, state):
        for i, words in enumerate(case.inputs[state]):
            for name, word in words.items():
                while not await host.write(ctx, i, REGISTERS[name].address, word):
                    pass

    async def bench(ctx):
        await load(ctx)
        # Samples 0 and 1: banks 0 and 1 get states 0 and 1.
        for state in (0, 1):
            await inputs(ctx, state)
            assert await host.start(ctx)
            while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
                pass
        # Samples 2 and 3 (states 0 and 1 again, in their banks): started back to back.
        assert await host.start(ctx)
        assert await host.start(ctx)
        assert await host.control(ctx, "UPDATE_COUNT") == 2, "both started before one ended"
        await host.tick(ctx, 100)
        ctx.set(dut.cut, 0b10)
        await host.tick(ctx, 400)
        for _ in range(2):
            status = await host.control(ctx, "STATUS")
            assert status & STATUS_BUSY and not status & STATUS_DONE
            assert (await host.access(ctx, 2, TAU))[0], "board 2 is behind the cut"
            assert (await host.access(ctx, 2, REGISTERS["q"].address, 5))[0]
        seen["count_during"] = await host.control(ctx, "UPDATE_COUNT")
        ctx.set(dut.cut, 0)
        while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
            pass
        results = []
        for number in (3, 4):
            assert await host.write(ctx, CONTROL_NODE, RESULT_SELECT, number)
            results.append([await host.read(ctx, i, TAU) for i in range(n)])
        assert await host.write(ctx, CONTROL_NODE, RESULT_SELECT, RESULT_FOLLOW)
        seen["results"] = results
        # The stream goes on: state 2 into bank 0 (sample 4), started, its words.
        await inputs(ctx, 2)
        assert await host.start(ctx)
        while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
            pass
        seen["after"] = [await host.read(ctx, i, TAU) for i in range(n)]
        seen["count"] = await host.control(ctx, "UPDATE_COUNT")

    _run(dut, bench)
    words = [[int(w) for w in case.tau_words[s]] for s in range(case.count)]
    assert seen["count_during"] == 2
    assert seen["results"] == words[:2]
    assert seen["after"] == words[2]
    assert seen["count"] == 5


def test_sequential_gateware_has_none_of_the_pipelined_parts():
    """The policy is a build-time choice: a sequential board's Verilog has none of the
    pipelined parts (per-update result shadows, sample counters, START debt, LOCAL flags,
    per-ticket overflow), the pipelined one has them (a middle board: both links)."""
    names = ("result_tau", "start_owed", "local_own", "head_sample", "ticket_overflow")
    sequential = verilog.convert(ActuatorCore(base=False, last=False, policy="sequential"),
                                 name="core", emit_src=False)
    pipelined = verilog.convert(ActuatorCore(base=False, last=False, policy="pipelined"),
                                name="core", emit_src=False)
    assert not any(name in sequential for name in names)
    assert all(name in pipelined for name in ("result_tau", "start_owed", "local_own",
                                              "head_sample"))


def test_pipelined_parameters_are_checked():
    with warnings.catch_warnings():
        # The refused objects are never elaborated.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="Policy must be one of"):
            DistributedChain(2, policy="parallel")
        with pytest.raises(ValueError, match="2 or 4"):
            DistributedChain(2, policy="pipelined", banks=3)
        with pytest.raises(ValueError, match="must be 1"):
            ActuatorCore(base=True, last=True, nodes=1, banks=2)
        gc.collect()


def _verilator_cases():
    """(n, banks, cases), with LINKDYN_LONG=1 only (a Verilator build of 6 boards takes
    minutes): the UR5 on 6 boards, the Panda on 7, random robots on 3 .. 8 boards, every one
    as a stream of overlapping updates."""
    if not LONG:
        return []
    runs = [(6, 4, [{"robot": "ur5", "states": 100, "seed": 5, "wrench": "mixed",
                     "saturate": 4}])]
    for n in range(3, 9):
        cases = [{"robot": f"random:{n}:{300 + n}", "states": 40, "seed": 30 + n,
                  "wrench": "mixed", "saturate": 4}]
        if n == 7:
            cases.append({"robot": "panda", "states": 40, "seed": 7, "wrench": "mixed",
                          "saturate": 4})
        runs.append((n, 2 if n % 2 else 4, cases))
    return runs


@pytest.mark.parametrize("n, banks, cases", _verilator_cases(),
                         ids=[f"n{n}-banks{b}" for n, b, _ in _verilator_cases()])
def test_pipelined_distributed_chain_matches_golden_model_on_verilator(n, banks, cases):
    """The chain's own cocotb testbench in its pipelined mode (a stream of up to 2 x banks
    updates in flight, every update picked with RESULT_SELECT; golden-model scoreboard: every
    tau word, OVERFLOW, OVERFLOW_STICKY) on the Verilog of the pipelined distributed chain at
    the DDR link rate (2 bits per cycle)."""
    if any(case["robot"] == "panda" for case in cases):
        try:
            from linkdyn.model.reference import example_robot_urdf
            example_robot_urdf("panda")
        except FileNotFoundError:
            cases = [case for case in cases if case["robot"] != "panda"]
    summary = run_distributed(n, cases, _build_root(), bits=2, policy="pipelined",
                              banks=banks)
    assert summary["checked"] == sum(case["states"] + case["saturate"] for case in cases)
    for case, result in zip(cases, summary["cases"]):
        assert result["checked"] == case["states"] + case["saturate"]
        assert result["saturating_states"] >= 1, "the saturating states set flags"
