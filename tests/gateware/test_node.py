"""The LinkDyn node gateware equals the fixed-point golden model word for word.

Each robot's links are run as nodes in the Amaranth simulator: constants through the external
port, the joint state, external wrench and forward mailbox (the golden model's words of node
i-1, or the base motion for node 1), a forward request, the backward mailbox (node i+1's
``f_out``/``mu_out``, zero for the last node), a backward request, and every word the node sends
read back. They must be identical to :func:`linkdyn.model.golden.rnea_fixed` with
``keep_registers=True``, and so must the overflow flag; the cycle counts must be the
microprogram's segment ``.cycles`` sums.

Random states are drawn inside the joint limits with fixed seeds; edge cases: zero state, joint
limits, angles that wrap, and states that saturate.
"""

import gc
import importlib.metadata
import sysconfig
import warnings
from pathlib import Path

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware import LinkDynNode
from linkdyn.sim.node_testbench import (NodeState, output_names, read_registers, run_request,
                                        simulate_node, simulate_node_parallel,
                                        write_registers)
from linkdyn.model import load_robot
from linkdyn.model.fixedpoint import Q15_16, QFormat
from linkdyn.model.microprogram import NODE_FORMATS
from linkdyn.model.golden import encode_base_motion, encode_robot, microprogram, rnea_fixed

from support import long_param

#: Random states per robot in the default run (spread over all of its links).
STATES_PER_ROBOT = 1000

PROGRAM = microprogram()
REGISTERS = PROGRAM.registers
FORWARD_CYCLES = sum(PROGRAM.segments[name].cycles for name in ("joint", "forward", "local"))
BACKWARD_CYCLES = PROGRAM.segments["distal"].cycles


def panda_urdf():
    """The Panda URDF of example-robot-data, or None."""
    bases = [Path(sysconfig.get_paths()["purelib"])]
    try:
        for file in importlib.metadata.files("example-robot-data") or []:
            if str(file).endswith("panda_description/urdf/panda.urdf"):
                return Path(file.locate())
    except importlib.metadata.PackageNotFoundError:
        pass
    for base in bases:
        path = (base / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
                / "panda_description" / "urdf" / "panda.urdf")
        if path.is_file():
            return path
    return None


def load(name):
    if name == "panda":
        path = panda_urdf()
        if path is None:
            pytest.skip("example-robot-data (Panda URDF) is not installed")
        return load_robot(path, tip="panda_hand")
    return load_robot(name)


def random_states(robot, count, rng):
    """``count`` states inside the joint limits, half of them with an external wrench."""
    low, high = robot.q_limits()
    qd_max = np.array([l.limits.qd_max or 3.0 for l in robot.links])
    qdd_max = np.array([l.limits.qdd_max or 10.0 for l in robot.links])
    q = rng.uniform(low, high, (count, robot.n))
    qd = rng.uniform(-qd_max, qd_max, (count, robot.n))
    qdd = rng.uniform(-qdd_max, qdd_max, (count, robot.n))
    f_ext = np.concatenate([rng.uniform(-50.0, 50.0, (count, robot.n, 3)),
                            rng.uniform(-10.0, 10.0, (count, robot.n, 3))], axis=-1)
    f_ext[::2] = 0.0
    return q, qd, qdd, f_ext


def node_states(robot, result, nodes_of_state, fmt=NODE_FORMATS):
    """The words to write into node ``nodes_of_state[s]`` for state ``s``, from the golden
    model: mailboxes are the neighbours' words (the base motion for node 1, zero past the
    last node)."""
    n = robot.n
    regs = result.registers
    constants = encode_robot(robot, fmt)
    base = encode_base_motion(robot, fmt)
    states = []
    previous_node = None
    for s, i in enumerate(nodes_of_state):
        inputs = {r.name: int(regs[i][r.name][s]) for r in REGISTERS.of_kind("input")}
        if i == 0:
            forward_in = {target: base[target] for _, target in REGISTERS.forward_message}
        else:
            forward_in = {target: int(regs[i - 1][source][s])
                          for source, target in REGISTERS.forward_message}
        if i == n - 1:
            backward_in = {target: 0 for _, target in REGISTERS.backward_message}
        else:
            backward_in = {target: int(regs[i + 1][source][s])
                           for source, target in REGISTERS.backward_message}
        # The golden model's own mailbox registers hold the same words.
        for name, word in {**forward_in, **backward_in}.items():
            assert word == int(regs[i][name][s])
        states.append(NodeState(inputs, forward_in, backward_in,
                                constants=constants[i] if i != previous_node else None))
        previous_node = i
    return states


def check_against_golden(robot, q, qd, qdd, f_ext, nodes_of_state, measure_every=50,
                         fmt=NODE_FORMATS):
    """Run every state through its node (formats ``fmt``); assert every sent word, the
    overflow flag and the cycle counts equal the golden model. Return the golden result."""
    result = rnea_fixed(robot, q, qd, qdd, fmt, f_ext=f_ext, keep_registers=True)
    # Run the states node by node (constants are written once per node).
    order = sorted(range(len(nodes_of_state)), key=lambda s: (nodes_of_state[s], s))
    states = node_states(robot, result, nodes_of_state, fmt)
    states = [states[s] for s in order]
    previous = None
    for state, s in zip(states, order):
        state.constants = (encode_robot(robot, fmt)[nodes_of_state[s]]
                           if nodes_of_state[s] != previous else None)
        previous = nodes_of_state[s]
    # The simulations are split over the CPUs (two on the project's machines).
    runs = simulate_node_parallel(fmt, states, measure_every=measure_every)
    names = output_names(REGISTERS)
    for run, s in zip(runs, order):
        i = nodes_of_state[s]
        want = {name: int(result.registers[i][name][s]) for name in names}
        assert run.words == want, f"{robot.name} node {i + 1} state {s}"
        assert run.overflow == bool(result.overflow[s, i]), f"{robot.name} node {i + 1} state {s}"
        assert (run.forward_cycles, run.backward_cycles) == (FORWARD_CYCLES, BACKWARD_CYCLES)
        if run.forward_measured is not None:
            assert (run.forward_measured, run.backward_measured) == (FORWARD_CYCLES,
                                                                     BACKWARD_CYCLES)
            assert run.forward_done_after == (PROGRAM.segments["joint"].cycles
                                              + PROGRAM.segments["forward"].cycles)
    return result


def test_cycle_counts_are_the_microprogram_segment_cycles():
    node = LinkDynNode()
    assert node.forward_request_cycles == FORWARD_CYCLES
    assert node.backward_request_cycles == BACKWARD_CYCLES
    assert len(node.rom) == sum(segment.cycles for segment in PROGRAM.segments.values())
    robot = load_robot("ur5")
    q, qd, qdd, f_ext = random_states(robot, 2, np.random.default_rng(1))
    result = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext, keep_registers=True)
    states = node_states(robot, result, [2, 2])
    runs = simulate_node(node, None, states, measure_segments=True)
    for run in runs:
        assert run.segment_cycles == {name: segment.cycles
                                      for name, segment in PROGRAM.segments.items()}
        assert run.forward_cycles == run.forward_measured == FORWARD_CYCLES
        assert run.backward_cycles == run.backward_measured == BACKWARD_CYCLES


@pytest.mark.parametrize("cordic_step_cycles", [1, 2])
def test_node_matches_golden_model_with_either_cordic_step_timing(cordic_step_cycles):
    """One-cycle CORDIC steps (Spartan-6 builds) and two-cycle ones (ECP5, the default) give
    the golden model's words, flag and cycles: the PUMA 560 has Coulomb friction on every
    joint, so every ``tau`` depends on the CORDIC's ``atan``."""
    robot = load_robot("puma560")
    assert all(link.friction.coulomb > 0 for link in robot.links)
    count = 2 * robot.n
    q, qd, qdd, f_ext = random_states(robot, count, np.random.default_rng(20))
    nodes_of_state = [s % robot.n for s in range(count)]
    result = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext, keep_registers=True)
    assert all(int(result.registers[i]["tau_coulomb"][s]) != 0
               for s, i in enumerate(nodes_of_state))
    node = LinkDynNode(cordic_step_cycles=cordic_step_cycles)
    assert node.cordic_step_cycles == cordic_step_cycles
    runs = simulate_node(node, None, node_states(robot, result, nodes_of_state))
    names = output_names(REGISTERS)
    for s, (run, i) in enumerate(zip(runs, nodes_of_state)):
        want = {name: int(result.registers[i][name][s]) for name in names}
        assert run.words == want, f"node {i + 1} state {s}"
        assert run.overflow == bool(result.overflow[s, i])
        assert (run.forward_cycles, run.backward_cycles) == (FORWARD_CYCLES, BACKWARD_CYCLES)
        assert (run.forward_measured, run.backward_measured) == (FORWARD_CYCLES,
                                                                 BACKWARD_CYCLES)


@pytest.mark.parametrize("cordic_step_cycles", [0, 3, True])
def test_node_rejects_a_cordic_step_timing_other_than_one_or_two_cycles(cordic_step_cycles):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="cordic_step_cycles"):
            LinkDynNode(cordic_step_cycles=cordic_step_cycles)
        gc.collect()


@pytest.mark.parametrize("name, seed", [
    ("ur5", 501), long_param("puma560", 560, reason="LINKDYN_LONG=1: the Puma's random states "
                             "(its node runs in the suite's chain and edge-case tests)"),
    ("panda", 7)])
def test_node_matches_golden_model_on_random_states(name, seed):
    robot = load(name)
    rng = np.random.default_rng(seed)
    q, qd, qdd, f_ext = random_states(robot, STATES_PER_ROBOT, rng)
    nodes_of_state = [s % robot.n for s in range(STATES_PER_ROBOT)]
    check_against_golden(robot, q, qd, qdd, f_ext, nodes_of_state)


@pytest.mark.parametrize("name", ["ur5", "puma560", "panda"])
def test_node_matches_golden_model_on_edge_cases(name):
    robot = load(name)
    n = robot.n
    low, high = robot.q_limits()
    qd_max = np.array([l.limits.qd_max or 3.0 for l in robot.links])
    qdd_max = np.array([l.limits.qdd_max or 10.0 for l in robot.links])
    alternate = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    cases = [
        (np.zeros(n), np.zeros(n), np.zeros(n)),                 # zero state
        (low, -qd_max, -qdd_max),                                # lower limits
        (high, qd_max, qdd_max),                                 # upper limits
        (np.where(alternate > 0, high, low), alternate * qd_max, -alternate * qdd_max),
        (np.full(n, np.pi), np.zeros(n), np.zeros(n)),           # half turn: phase wraps
        (np.full(n, -np.pi), np.full(n, 1e-4), np.full(n, -1e-4)),
        (np.full(n, 2 * np.pi - 1e-6), np.full(n, 1.0), np.zeros(n)),
    ]
    q, qd, qdd = (np.array([case[k] for case in cases]) for k in range(3))
    f_ext = np.zeros((len(cases), n, 6))
    f_ext[1] = [100.0, -100.0, 50.0, -20.0, 20.0, 5.0]
    states = [(s, i) for s in range(len(cases)) for i in range(n)]
    # One node per (case, link): repeat each case's row for every link.
    rows = [s for s, _ in states]
    check_against_golden(robot, q[rows], qd[rows], qdd[rows], f_ext[rows],
                         [i for _, i in states], measure_every=1)


@pytest.mark.parametrize("name", ["ur5", "puma560"])
def test_node_saturates_like_the_golden_model(name):
    """Accelerations and wrenches at the edge of Q15.16: results clamp, the flag is set, and
    the clamped words are the golden model's (the node built for Q15.16 everywhere, whose
    inputs hold these values)."""
    robot = load(name)
    n = robot.n
    q = np.tile(np.linspace(-1.0, 1.0, n), (4, 1))
    qd = np.array([np.full(n, 180.0), np.full(n, -180.0), np.zeros(n), np.full(n, 1.0)])
    qdd = np.array([np.full(n, 30000.0), np.full(n, -30000.0), np.zeros(n), np.zeros(n)])
    f_ext = np.zeros((4, n, 6))
    f_ext[2] = [30000.0, -30000.0, 30000.0, 30000.0, -30000.0, 30000.0]
    f_ext[3] = [-30000.0, 30000.0, -30000.0, -30000.0, 30000.0, -30000.0]
    rows = [s for s in range(4) for _ in range(n)]
    nodes = [i for _ in range(4) for i in range(n)]
    result = check_against_golden(robot, q[rows], qd[rows], qdd[rows], f_ext[rows], nodes,
                                  measure_every=1, fmt=Q15_16)
    overflow = result.overflow[np.arange(len(rows)), nodes]
    assert overflow.all(), "every node of these states saturates somewhere"
    clamped = [(s, i, name) for s, i in zip(range(len(rows)), nodes)
               for name in output_names(REGISTERS)
               if int(result.registers[i][name][s]) in (-(1 << 31), (1 << 31) - 1)]
    assert clamped, "some sent word is clamped to the word range"


# -- handshakes ------------------------------------------------------------------------------

def ur5_state(index=2, seed=3):
    robot = load_robot("ur5")
    q, qd, qdd, f_ext = random_states(robot, 1, np.random.default_rng(seed))
    result = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext, keep_registers=True)
    state = node_states(robot, result, [index])[0]
    want = {name: int(result.registers[index][name][0]) for name in output_names(REGISTERS)}
    return state, want


def simulate(node, bench):
    sim = Simulator(node)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_requests_are_acknowledged_and_done_pulses_come_on_time():
    node = LinkDynNode()
    state, want = ur5_state()
    trace = []

    async def bench(ctx):
        await write_registers(ctx, node, {**state.constants, **state.inputs,
                                          **state.forward_in, **state.backward_in})
        assert ctx.get(node.ready) and not ctx.get(node.busy)
        ctx.set(node.forward.start, 1)
        await ctx.tick()
        ctx.set(node.forward.start, 0)
        for cycle in range(FORWARD_CYCLES + BACKWARD_CYCLES + 10):
            trace.append({name: ctx.get(signal) for name, signal in (
                ("forward_ack", node.forward.ack), ("backward_ack", node.backward.ack),
                ("forward_done", node.forward_done), ("backward_done", node.backward_done),
                ("busy", node.busy), ("ready", node.ready))})
            if cycle == 100:  # a backward request during the forward run: it waits
                ctx.set(node.backward.start, 1)
            await ctx.tick()
            ctx.set(node.backward.start, 0)
        words = await read_registers(ctx, node, list(want))
        assert words == want

    simulate(node, bench)
    cycles = lambda name: [c for c, t in enumerate(trace) if t[name]]  # noqa: E731
    assert cycles("forward_ack") == [0]
    assert cycles("forward_done") == [1 + PROGRAM.segments["joint"].cycles
                                      + PROGRAM.segments["forward"].cycles]
    # The backward request waited for the forward run, then was taken at once.
    assert cycles("backward_ack") == [1 + FORWARD_CYCLES]
    assert cycles("backward_done") == [2 + FORWARD_CYCLES + BACKWARD_CYCLES]
    assert cycles("busy") == (list(range(1, 1 + FORWARD_CYCLES))
                              + list(range(2 + FORWARD_CYCLES,
                                           2 + FORWARD_CYCLES + BACKWARD_CYCLES)))
    assert not any(t["ready"] for t in trace[:2 + FORWARD_CYCLES + BACKWARD_CYCLES])


def test_both_requests_pending_run_backward_first_and_held_trigger_runs_once():
    node = LinkDynNode()
    acks = []

    async def bench(ctx):
        ctx.set(node.forward.start, 1)
        ctx.set(node.backward.start, 1)
        await ctx.tick()
        ctx.set(node.backward.start, 0)
        # The forward trigger is held until its acknowledge, as a requester would.
        for cycle in range(2 * (FORWARD_CYCLES + BACKWARD_CYCLES)):
            if ctx.get(node.forward.ack):
                ctx.set(node.forward.start, 0)
            acks.append((ctx.get(node.forward.ack), ctx.get(node.backward.ack)))
            await ctx.tick()
        ctx.set(node.forward.start, 0)

    simulate(node, bench)
    forward = [c for c, (f, _) in enumerate(acks) if f]
    backward = [c for c, (_, b) in enumerate(acks) if b]
    assert backward == [0]
    assert forward == [1 + BACKWARD_CYCLES]


def test_external_writes_are_refused_while_busy_and_the_run_is_not_disturbed():
    node = LinkDynNode()
    state, want = ur5_state(index=1, seed=11)
    qd_address = REGISTERS["qd"].address
    seen = {}

    async def bench(ctx):
        await write_registers(ctx, node, {**state.constants, **state.inputs,
                                          **state.forward_in, **state.backward_in})
        ctx.set(node.forward.start, 1)
        await ctx.tick()
        ctx.set(node.forward.start, 0)
        await ctx.tick()
        # Hammer the external port while the forward run goes on: every write is ignored.
        while ctx.get(node.busy):
            assert not ctx.get(node.ready)
            ctx.set(node.ext.addr, qd_address)
            ctx.set(node.ext.write_data, 12345)
            ctx.set(node.ext.write_enable, 1)
            await ctx.tick()
        ctx.set(node.ext.write_enable, 0)
        seen["qd"] = (await read_registers(ctx, node, ["qd"]))["qd"]
        await run_request(ctx, node, node.backward.start, node.backward.ack, node.backward_done)
        seen["words"] = await read_registers(ctx, node, list(want))
        # Idle again: writes are accepted.
        await write_registers(ctx, node, {"qd": 12345})
        seen["written"] = (await read_registers(ctx, node, ["qd"]))["qd"]

    simulate(node, bench)
    assert seen["qd"] == state.inputs["qd"]
    assert seen["words"] == want
    assert seen["written"] == 12345


def test_overflow_is_sticky_until_the_next_forward_request():
    robot = load_robot("ur5")
    n = robot.n
    q = np.zeros((2, n))
    qd = np.zeros((2, n))
    # 90 % of the qdd word on every joint: node 4's omega_dot (three parallel axes) saturates
    qdd = np.array([np.full(n, 0.9 * REGISTERS.qformat("qdd").max_value), np.zeros(n)])
    result = rnea_fixed(robot, q, qd, qdd, keep_registers=True)
    assert result.overflow[0, 3] and not result.overflow[1, 3]
    states = node_states(robot, result, [3, 3])
    node = LinkDynNode()
    flags = []

    async def bench(ctx):
        await write_registers(ctx, node, states[0].constants)
        for state in states:
            await write_registers(ctx, node, {**state.inputs, **state.forward_in})
            await run_request(ctx, node, node.forward.start, node.forward.ack,
                              node.forward_done)
            flags.append(ctx.get(node.overflow))
            await write_registers(ctx, node, state.backward_in)
            await run_request(ctx, node, node.backward.start, node.backward.ack,
                              node.backward_done)
            flags.append(ctx.get(node.overflow))

    simulate(node, bench)
    assert flags == [1, 1, 0, 0]


@pytest.mark.parametrize("fmt, error", [("Q15.16", TypeError), (QFormat(7, 8), ValueError)])
def test_node_rejects_a_format_that_is_not_a_32_bit_qformat(fmt, error):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(error, match="fmt"):
            LinkDynNode(fmt)
        gc.collect()
