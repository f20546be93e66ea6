"""The chain's register-bus target keeps the protocol engine's contract (docs/chain.md).

Amaranth-simulator tests of :class:`linkdyn.gateware.chain.LinkDynChain` with 2 and 3 nodes,
both policies, driven by :class:`linkdyn.sim.chain_testbench.BusHost` as the protocol
engine drives it: every access answered within a bounded number of cycles (STATUS during an
update too); CONTROL.start refused while an update runs (sequential) or while the next bank is
in use (pipelined); STATUS busy/done around an update; node writes allowed to constants, inputs
and node 0's base motion only, refused while busy; reads below the map size only; CONTROL reads
0; CONTROL.clear zeroes OVERFLOW_STICKY; UPDATE_COUNT, LATENCY_CYCLES, INTERVAL_CYCLES; a node's
``forward_in`` / ``backward_in`` words read as its neighbour's message; the words equal the
golden model's.
"""

import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.bus import CONTROL_NODE
from linkdyn.gateware.chain import (
    POLICIES, RESULT_FOLLOW, RESULT_SELECT, LinkDynChain, main, parse_format,
)
from linkdyn.sim.chain_testbench import BusHost, simulate
from linkdyn.model.golden import microprogram
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.protocol import (
    STATUS_BUSY, STATUS_DONE, STATUS_OVERFLOW, ProtocolSpec, control_register,
)
from linkdyn.sim.chain_cases import build_case

REGISTERS = microprogram().registers
SPEC = ProtocolSpec(2)
#: Longest wait for any answer, cycles (a node read waits for the node's running request).
ANSWER_LIMIT = 200


def _address(name):
    return control_register(name).address


async def _load_robot(ctx, host, case):
    """Write a case's constants and base motion over the bus (every write accepted)."""
    for i, words in enumerate(case.constants):
        for name, word in words.items():
            assert await host.write(ctx, i, REGISTERS[name].address, word)
    for name, word in case.base_motion.items():
        assert await host.write(ctx, 0, REGISTERS[name].address, word)


def run(chain, bench):
    sim = Simulator(chain)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("policy", POLICIES)
def test_the_bus_contract_of_the_protocol_engine_holds(policy):
    # Q15.16 everywhere: its saturating state (180 rad/s, 30,000 rad/s^2) saturates both
    # nodes of this two-link robot; the node's formats' own (90 % of their inputs) only the
    # distal one (the bus contract is the same for every format).
    case = build_case({"robot": "random:2:5", "states": 3, "seed": 5, "wrench": "mixed",
                       "saturate": 1}, Q15_16)
    chain = LinkDynChain(2, Q15_16, policy=policy)
    host = BusHost(chain)
    log = {}

    async def access(ctx, node, addr, write=None):
        before = host.cycle
        error, word = await host.access(ctx, node, addr, write, limit=ANSWER_LIMIT)
        log["longest"] = max(log.get("longest", 0), host.cycle - before)
        return error, word

    async def bench(ctx):
        error, status = await access(ctx, CONTROL_NODE, _address("STATUS"))
        assert (error, status) == (False, 0), "after reset: not busy, not done"
        # Reads: below the map size only; the control block's chain-owned words only.
        assert not (await access(ctx, 1, SPEC.node_map_size - 1))[0]
        assert (await access(ctx, 1, SPEC.node_map_size))[0]
        assert (await access(ctx, 2, 0))[0], "node 2 does not exist"
        assert (await access(ctx, CONTROL_NODE, _address("MAGIC")))[0], "engine-owned"
        assert await access(ctx, CONTROL_NODE, _address("CONTROL")) == (False, 0)
        # Writes: constants and inputs of every node, node 0's base motion, nothing else.
        for node, name, allowed in ((0, "m", True), (1, "I_zz", True), (1, "mu_ext_z", True),
                                    (0, "p_ddot_in_z", True), (1, "p_ddot_in_z", False),
                                    (0, "tau", False), (1, "f_out_x", False),
                                    (0, "f_in_x", False)):
            error, _ = await access(ctx, node, REGISTERS[name].address, 1)
            assert error != allowed, (node, name)
        assert (await access(ctx, CONTROL_NODE, _address("STATUS"), 1))[0], "read-only"
        # Load the robot, then one update.
        for i, words in enumerate(case.constants):
            for name, word in words.items():
                assert not (await access(ctx, i, REGISTERS[name].address, word))[0]
        for name, word in case.base_motion.items():
            assert not (await access(ctx, 0, REGISTERS[name].address, word))[0]
        for state in range(case.count):
            for i, words in enumerate(case.inputs[state]):
                for name, word in words.items():
                    assert not (await access(ctx, i, REGISTERS[name].address, word))[0]
            assert not (await access(ctx, CONTROL_NODE, _address("CONTROL"), 1))[0]
            polls = 0
            refused_start = refused_write = False
            while True:
                error, status = await access(ctx, CONTROL_NODE, _address("STATUS"))
                assert not error
                if not status & STATUS_BUSY:
                    break
                assert not status & STATUS_DONE, "busy and done at once"
                polls += 1
                if polls == 3:
                    # While the update runs: constants and the base motion are refused, and
                    # (sequential) CONTROL.start and input writes.
                    assert (await access(ctx, 1, REGISTERS["m"].address, 5))[0]
                    assert (await access(ctx, 0, REGISTERS["omega_in_x"].address, 5))[0]
                    if policy == "sequential":
                        refused_start = (await access(ctx, CONTROL_NODE, _address("CONTROL"),
                                                      1))[0]
                        refused_write = (await access(ctx, 0, REGISTERS["q"].address, 5))[0]
                    # A node register read while the node runs is answered (the node is held
                    # between two of its requests).
                    assert not (await access(ctx, 1, REGISTERS["m"].address))[0]
            assert polls > 3, "STATUS read busy during the update"
            assert status & STATUS_DONE
            if policy == "sequential":
                assert refused_start and refused_write
            tau = [(await access(ctx, i, REGISTERS["tau"].address))[1] for i in range(2)]
            want = [int(w) & 0xFFFFFFFF for w in case.tau_words[state]]
            assert tau == want, state
            overflow = (await access(ctx, CONTROL_NODE, _address("OVERFLOW")))[1]
            assert overflow == sum(1 << i for i in range(2) if case.overflow[state, i])
            # The neighbours' messages as the nodes' mailbox registers.
            for source, target in REGISTERS.forward_message:
                sent = (await access(ctx, 0, REGISTERS[source].address))[1]
                assert (await access(ctx, 1, REGISTERS[target].address))[1] == sent
            for source, target in REGISTERS.backward_message:
                sent = (await access(ctx, 1, REGISTERS[source].address))[1]
                assert (await access(ctx, 0, REGISTERS[target].address))[1] == sent
                assert (await access(ctx, 1, REGISTERS[target].address))[1] == 0, "last node"
            count = (await access(ctx, CONTROL_NODE, _address("UPDATE_COUNT")))[1]
            assert count == state + 1
            latency = (await access(ctx, CONTROL_NODE, _address("LATENCY_CYCLES")))[1]
            assert 150 < latency < 400
        sticky = (await access(ctx, CONTROL_NODE, _address("OVERFLOW_STICKY")))[1]
        assert sticky == 0b11, "the saturating state sets both nodes' flags"
        assert chain_sticky(ctx) == 0b11
        status = (await access(ctx, CONTROL_NODE, _address("STATUS")))[1]
        assert status == STATUS_DONE | STATUS_OVERFLOW
        assert not (await access(ctx, CONTROL_NODE, _address("CONTROL"), 2))[0]  # clear
        assert (await access(ctx, CONTROL_NODE, _address("OVERFLOW_STICKY")))[1] == 0
        assert (await access(ctx, CONTROL_NODE, _address("STATUS")))[1] == STATUS_DONE

    def chain_sticky(ctx):
        return ctx.get(chain.overflow_sticky)

    run(chain, bench)
    assert log["longest"] < ANSWER_LIMIT


def test_pipelined_chain_takes_the_next_update_while_one_runs():
    """Inputs of the next state go to the next bank while an update runs; CONTROL.start is
    taken while busy; once every bank holds a state not past its forward request, the next
    input write and start are refused until one is."""
    # 16 states: the host spends ~160 cycles on a state's inputs, so the stream needs more
    # states than banks plus the ones that leave during it before it fills the banks.
    case = build_case({"robot": "random:3:9", "states": 16, "seed": 9})
    chain = LinkDynChain(3, policy="pipelined")
    assert chain.banks == 4 and chain.max_in_flight == 8
    host = BusHost(chain)
    seen = {}

    async def bench(ctx):
        await _load_robot(ctx, host, case)
        accepted = 0
        refused = 0
        for state in range(case.count):
            while True:
                ok = await host.write(ctx, 0, REGISTERS["q"].address,
                                      case.inputs[state][0]["q"])
                if ok:
                    break
                refused += 1
            for i, words in enumerate(case.inputs[state]):
                for name, word in words.items():
                    assert await host.write(ctx, i, REGISTERS[name].address, word)
            while not await host.start(ctx):
                refused += 1
            accepted += 1
            status = await host.control(ctx, "STATUS")
            assert status & STATUS_BUSY
        seen["refused"] = refused
        # Let everything finish; the last update's words are readable.
        while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
            pass
        seen["count"] = await host.control(ctx, "UPDATE_COUNT")
        seen["tau"] = [await host.read(ctx, i, REGISTERS["tau"].address) for i in range(3)]

    run(chain, bench)
    assert seen["count"] == case.count
    assert seen["refused"] > 0, "the stream ran into the bank limit"
    assert seen["tau"] == [int(w) for w in case.tau_words[-1]]


@pytest.mark.parametrize("policy", POLICIES)
def test_chain_matches_golden_model_in_the_amaranth_simulator(policy):
    case = build_case({"robot": "random:3:21", "states": 6, "seed": 21, "wrench": "random"})
    records = simulate(LinkDynChain(3, policy=policy), case.constants, case.base_motion,
                       case.inputs, pipelined=policy == "pipelined")
    assert [r.tau for r in records] == [[int(w) for w in row] for row in case.tau_words]
    for record in records:
        assert record.latency is None or 0 < record.last_tau_latency <= record.latency
    if policy == "pipelined":
        starts = [record.start_cycle for record in records]
        latency = min(r.latency for r in records if r.latency is not None)
        assert min(b - a for a, b in zip(starts[2:], starts[3:])) < latency


@pytest.mark.parametrize("policy", POLICIES)
def test_chain_matches_golden_model_on_a_moving_base(policy):
    # Node 0 reads the base's angular velocity in forward's first terms, times joint's last
    # results: with the base turning, a forward taken right after joint needs the interlock.
    case = build_case({"robot": "random:2:23", "states": 4, "seed": 23, "base": "moving"})
    assert any(word for name, word in case.base_motion.items() if name.startswith("omega_in"))
    records = simulate(LinkDynChain(2, policy=policy), case.constants, case.base_motion,
                       case.inputs, pipelined=policy == "pipelined")
    assert [r.tau for r in records] == [[int(w) for w in row] for row in case.tau_words]


@pytest.mark.parametrize("policy", POLICIES)
def test_result_select_shows_any_of_the_last_updates(policy):
    """RESULT_SELECT (an extension of the control block) picks which finished update the
    result reads show: refused for update 0, unfinished updates and updates whose results were
    reused; bit 31 follows the last update again."""
    case = build_case({"robot": "random:2:31", "states": 10, "seed": 31, "saturate": 2})
    chain = LinkDynChain(2, policy=policy)
    host = BusHost(chain)
    seen = {}

    async def bench(ctx):
        await _load_robot(ctx, host, case)
        for state in range(case.count):
            for i, words in enumerate(case.inputs[state]):
                for name, word in words.items():
                    while not await host.write(ctx, i, REGISTERS[name].address, word):
                        pass
            while not await host.start(ctx):
                pass
            if policy == "sequential":
                while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
                    pass
        while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
            pass
        assert await host.control(ctx, "UPDATE_COUNT") == case.count
        kept = chain.max_in_flight
        for number in range(1, case.count + 1):
            ok = await host.write(ctx, CONTROL_NODE, RESULT_SELECT, number)
            assert ok == (number > case.count - kept), number
            if ok:
                assert (await host.access(ctx, CONTROL_NODE, RESULT_SELECT))[1] == number
                seen[number] = ([await host.read(ctx, i, REGISTERS["tau"].address)
                                 for i in range(2)],
                                await host.control(ctx, "OVERFLOW"))
        assert not await host.write(ctx, CONTROL_NODE, RESULT_SELECT, 0)
        assert not await host.write(ctx, CONTROL_NODE, RESULT_SELECT, case.count + 1)
        assert await host.write(ctx, CONTROL_NODE, RESULT_SELECT, RESULT_FOLLOW)
        assert (await host.access(ctx, CONTROL_NODE, RESULT_SELECT))[1] == RESULT_FOLLOW
        seen["follow"] = [await host.read(ctx, i, REGISTERS["tau"].address) for i in range(2)]

    run(chain, bench)
    for number, (tau, overflow) in seen.items():
        if number == "follow":
            continue
        s = number - 1
        assert tau == [int(w) for w in case.tau_words[s]], number
        assert overflow == sum(1 << i for i in range(2) if case.overflow[s, i]), number
    assert seen["follow"] == [int(w) for w in case.tau_words[-1]]
    assert len(seen) - 1 == min(case.count, chain.max_in_flight)


def test_chain_rejects_bad_parameters():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="Node count"):
            LinkDynChain(0)
        with pytest.raises(TypeError, match="Node count"):
            LinkDynChain(2.0)
        with pytest.raises(ValueError, match="Policy"):
            LinkDynChain(2, policy="parallel")
        with pytest.raises(ValueError, match="Bank count"):
            LinkDynChain(2, policy="sequential", banks=2)
        with pytest.raises(ValueError, match="Bank count"):
            LinkDynChain(2, policy="pipelined", banks=3)
        with pytest.raises(TypeError, match="fmt must be NodeFormats or a QFormat"):
            LinkDynChain(2, fmt="Q15.16")
        gc.collect()
    assert parse_format("Q15.16") == microprogram(Q15_16).fmt.qformat("torque")
    with pytest.raises(ValueError, match="Q15.16"):
        parse_format("15.16")


def test_verilog_export_command_writes_a_chain(tmp_path, capsys):
    out = tmp_path / "verilog" / "linkdyn_chain_2.v"
    assert main(["--nodes", "2", "--format", "Q15.16", "--out", str(out)]) == 0
    text = out.read_text()
    assert "module linkdyn_chain(" in text
    for port in ("bus__valid", "bus__node", "bus__addr", "bus__we", "bus__wdata", "bus__ready",
                 "bus__rdata", "bus__error", "busy", "overflow_sticky"):
        assert port in text
    assert "2 nodes" in capsys.readouterr().out
