"""The gateware protocol engine with joint controllers equals its reference byte for byte.

:class:`~linkdyn.gateware.protocol.ProtocolEngine` ``(controllers=True)`` on a
:class:`~linkdyn.gateware.controlled_chain.ControlledChain` in the Amaranth simulator, against
:class:`~linkdyn.model.protocol.ReferenceEngine` on
:class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel`: INFO, LOAD_ROBOT, controller
configuration by WRITE, CONTROL frames with references (and the sensor ports driven between
them), random READ / WRITE blocks in and around the controller window (words that do not exist,
read-only words, fault_clear, the reference strobe) and the controller control registers, and
malformed CONTROL frames; with the local loop (``local_loop=True``: INFO's CONTROLLERS bit 1,
LOCAL_MULTIPLE, CONTROL frames that run local updates between chain updates, CONTROL.local from
the host) as well. Every reply must equal the reference's, byte for byte, the timing words
(LATENCY_CYCLES, INTERVAL_CYCLES, CONTROL_LATENCY_CYCLES) taken from the board's reply (the
reference frame is then re-encoded, so the board's CRC is still checked).
"""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.gateware.protocol import AccessCheck, ProtocolEngine
from linkdyn.model import protocol as P
from linkdyn.model.controller import ControllerConfig
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.chain_model import TIMING_MARKS
from linkdyn.sim.controlled_chain_model import CONTROL_TIMING_MARKS, ControlledChainModel

from support.protocol_engine import exchange

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

C = P.Command
E = P.ErrorCode
_MARKS = {*TIMING_MARKS, *CONTROL_TIMING_MARKS}
_WORD = {w.name: w.address for w in P.CONTROLLER_WORDS}


class _Board(wiring.Component):
    def __init__(self, n, local_loop=False):
        self.engine = ProtocolEngine(n, controllers=True, timeout_cycles=2000,
                                     step_timeout_cycles=20_000, local_loop=local_loop)
        self.chain = ControlledChain(n, local_loop=local_loop)
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = self.engine
        m.submodules.chain = self.chain
        wiring.connect(m, self.engine.bus, self.chain.bus)
        return m


def _run(n, script, local_loop=False):
    """Run ``script`` (request bytes, or ``("sensor", node, q, qd)``) on the board and on the
    reference; return both reply lists."""
    board = _Board(n, local_loop)
    spec = board.engine.spec
    model = ControlledChainModel(spec)
    reference = P.ReferenceEngine(spec, model, max_polls=1 << 20)
    got, want = [], []
    engine = board.engine

    async def bench(ctx):
        ctx.set(engine.tx.ready, 1)
        for entry in script:
            if isinstance(entry, tuple):
                _, node, q, qd = entry
                ctx.set(board.chain.sensor[node].q, q)
                ctx.set(board.chain.sensor[node].qd, qd)
                model.set_sensor(node, q, qd)
                continue
            want.append(reference.receive(entry))
            got.append(await exchange(ctx, engine, entry))

    sim = Simulator(board)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got, want


def _assert_same(got, want):
    assert len(got) == len(want)
    for k, (a, e) in enumerate(zip(got, want)):
        ra, re_ = P.decode_reply(a), P.decode_reply(e)
        words = list(re_.words)
        if ra.ok and re_.ok and len(ra.words) == len(words):
            words = [ra.words[j] if w in _MARKS else w for j, w in enumerate(words)]
        e = P.encode_reply(re_.seq, re_.command, re_.status, words)
        assert a == e, f"reply {k}: got {ra}, expected {P.decode_reply(e)}"


def _script(robot, rng, local_loop=False):
    """The requests (and sensor settings) of the test; with ``local_loop`` also LOCAL_MULTIPLE
    = 3 before the control steps (the random accesses write it 0 .. 3 only: 0 is refused), and
    at the end CONTROL.local, LOCAL_MULTIPLE = 2 and three more CONTROL frames."""
    spec = P.ProtocolSpec(robot.n, controllers=True, local_loop=local_loop)
    n = robot.n
    seq = iter(range(1, 1 << 30))

    def req(command, payload=b""):
        return P.encode_request(command, payload, seq=next(seq) & 0xFF)

    script = [req(C.INFO),
              req(C.LOAD_ROBOT, P.load_robot_payload(spec, encode_robot(robot),
                                                     encode_base_motion(robot)))]
    for i in range(n):
        config = ControllerConfig(
            kp=rng.uniform(10, 500), kd=rng.uniform(1, 50), lim_p=rng.uniform(1, 100),
            lim_d=rng.uniform(1, 100), guard_kp=10.0, guard_kv=rng.uniform(0, 5),
            guard_ki=rng.uniform(0, 1), guard_small=0.5, guard_large=5.0, q_min=-1.0,
            q_max=1.0, qd_max=2.0, q_hard_min=-1.5, q_hard_max=1.5, qd_hard_max=3.0,
            tau_max=rng.choice([0.05, 50.0]), current_per_torque=0.3,
            tau_saturation_cycles=2, watchdog_cycles=1,
            watchdog_reference=rng.random() < 0.5, measured_state=rng.random() < 0.5)
        words = config.encode()
        mode = words.pop("mode")
        names = sorted(words, key=lambda name: _WORD[name])
        first = _WORD[names[0]]
        assert [_WORD[name] for name in names] == list(range(first, first + len(names)))
        script.append(req(C.WRITE, P.write_payload(i, first, [words[k] for k in names])))
        script.append(req(C.WRITE, P.write_payload(i, _WORD["mode"], [mode])))
    control = P.control_register("CONTROL").address
    if local_loop:
        multiple = P.control_register("LOCAL_MULTIPLE").address
        script.append(req(C.WRITE, P.write_payload(P.CONTROL_NODE, multiple, [3])))
    for step in range(6):
        for i in range(n):
            q, qd = rng.randrange(-(1 << 17), 1 << 17), rng.randrange(-(1 << 17), 1 << 17)
            if step == 3 and i == 0:
                q = 2 << 16                             # beyond q_hard_max: a fault
            script.append(("sensor", i, q, qd))
        references = [[rng.randrange(-(1 << 17), 1 << 17) for _ in range(3)]
                      for _ in range(n)]
        script.append(req(C.CONTROL, P.words_to_bytes(
            [w & 0xFFFFFFFF for ref in references for w in ref])))
        for _ in range(4):                              # random window / control accesses
            node = rng.choice([*range(n), n, P.CONTROL_NODE])
            if node == P.CONTROL_NODE:
                addr = rng.randrange(0x14, 0x1C)
            else:
                addr = rng.choice([rng.randrange(0x80, 0xD0), rng.randrange(0xC0, 0xD0),
                                   rng.randrange(spec.node_map_size - 2, 0x82)])
            count = rng.randrange(1, 5)
            if rng.random() < 0.5:
                script.append(req(C.READ, P.read_payload(node, addr, count)))
            else:
                data = [rng.randrange(1 << 32) if rng.random() < 0.3
                        else rng.randrange(-(1 << 17), 1 << 17) & 0xFFFFFFFF
                        for _ in range(count)]
                if node == P.CONTROL_NODE and addr <= 0x16 < addr + count:
                    data[0x16 - addr] = 0                # CONTROL_PERIOD stays 0 (no timer)
                if local_loop and node == P.CONTROL_NODE and addr <= multiple < addr + count:
                    data[multiple - addr] = rng.randrange(4)    # LOCAL_MULTIPLE 0 .. 3
                script.append(req(C.WRITE, P.write_payload(node, addr, data)))
        if step == 4:
            script.append(req(C.WRITE, P.write_payload(P.CONTROL_NODE, control,
                                                       [P.CONTROL_FAULT_CLEAR])))
    script += [
        req(C.CONTROL, b"\x00" * 4),                    # BAD_LENGTH
        req(C.READ, P.read_payload(0, 0x80, 0x36)),     # the register-file words
        req(C.READ, P.read_payload(n - 1, 0xC0, 6)),
        req(C.READ, P.read_payload(0, 0xC8, 7)),
        req(C.READ, P.read_payload(P.CONTROL_NODE, 0x16, 5)),
        req(C.READ, P.read_payload(0, 0xC0, 16)),       # 0xC6: no such word
        req(C.WRITE, P.write_payload(0, 0xC8, [1])),    # read-only
        req(C.WRITE, P.write_payload(0, 0xC5, [1])),    # fault_clear
        req(C.READ, P.read_payload(0, 0xC1, 1)),
        req(C.STATUS),
    ]
    if local_loop:
        local = P.CONTROL_LOCAL
        script += [
            req(C.WRITE, P.write_payload(P.CONTROL_NODE, control, [local])),  # ignored
            req(C.WRITE, P.write_payload(P.CONTROL_NODE, multiple, [0])),     # refused
            req(C.WRITE, P.write_payload(P.CONTROL_NODE, multiple, [2])),
            req(C.READ, P.read_payload(P.CONTROL_NODE, 0x16, 6)),
        ]
        for _ in range(3):
            script.append(req(C.CONTROL, P.words_to_bytes(
                [rng.randrange(-(1 << 17), 1 << 17) & 0xFFFFFFFF for _ in range(3 * n)])))
        script += [req(C.READ, P.read_payload(P.CONTROL_NODE, 0x16, 6)),
                   req(C.READ, P.read_payload(0, 0xC0, 6))]
    return script


@pytest.mark.parametrize("n,seed", [(1, 3), (2, 8)])
def test_engine_with_controllers_equals_the_reference(n, seed):
    robot = random_robot(n, seed)
    got, want = _run(n, _script(robot, random.Random(seed)))
    _assert_same(got, want)
    statuses = [E(P.decode_reply(frame).status) for frame in got]
    assert statuses.count(E.OK) > len(statuses) // 2
    assert {E.BAD_ADDRESS, E.READ_ONLY, E.BAD_LENGTH} <= set(statuses)
    controls = [P.decode_reply(frame) for frame in got
                if P.decode_reply(frame).command == C.CONTROL and P.decode_reply(frame).ok]
    assert len(controls) == 6
    assert any(reply.words[2] & 7 == 1 for reply in controls), "the position fault in a record"


@pytest.mark.parametrize("n,seed", [(2, 5)])
def test_engine_with_the_local_loop_equals_the_reference(n, seed):
    """The same script on ``ProtocolEngine(..., local_loop=True)`` + ``ControlledChain(...,
    local_loop=True)`` against the ReferenceEngine on ControlledChainModel with the local loop:
    INFO's CONTROLLERS reads 3, LOCAL_MULTIPLE is reachable (0 refused), CONTROL frames run
    local updates between chain updates, CONTROL.local from the host is ignored."""
    robot = random_robot(n, seed)
    script = _script(robot, random.Random(seed), local_loop=True)
    got, want = _run(n, script, local_loop=True)
    _assert_same(got, want)
    replies = [P.decode_reply(frame) for frame in got]
    info = P.BuildInfo.from_payload(replies[0].payload)
    assert info.words["CONTROLLERS"] == 3
    multiple = P.control_register("LOCAL_MULTIPLE").address
    # The multiple read back at the end (CONTROL_PERIOD .. LOCAL_MULTIPLE): 2, as written.
    assert replies[-2].ok and replies[-2].words[multiple - 0x16] == 2
    statuses = [E(reply.status) for reply in replies]
    assert E.BUS_ERROR in statuses, "LOCAL_MULTIPLE = 0 is refused"
    controls = [reply for reply in replies if reply.command == C.CONTROL and reply.ok]
    assert len(controls) == 9
    # The same script without the local loop gives other records: the local steps ran.
    plain = P.ReferenceEngine(P.ProtocolSpec(n, controllers=True, local_loop=False),
                              ControlledChainModel(P.ProtocolSpec(n, controllers=True)),
                              max_polls=1 << 20)
    assert [plain.receive(entry) for entry in script if not isinstance(entry, tuple)] != want


def test_access_check_follows_the_spec_in_the_controller_window():
    """AccessCheck's exists / writable equal ProtocolSpec.access on every address of a node
    and of the control block, with and without controllers."""
    for controllers, local_loop in ((False, False), (True, False), (True, True)):
        spec = P.ProtocolSpec(2, controllers=controllers, local_loop=local_loop)
        dut = AccessCheck(spec)
        cases = [(node, addr) for node in (0, 1, 2, P.CONTROL_NODE) for addr in range(0x100)]
        cases += [(0, 0x100), (0, 0x180)]

        async def bench(ctx):
            for node, addr in cases:
                ctx.set(dut.node, node)
                ctx.set(dut.addr, addr)
                await ctx.delay(1e-9)
                access = spec.access(node, addr) if addr < 0x100 else P.Access(False)
                assert ctx.get(dut.exists) == access.exists, (controllers, node, hex(addr))
                if access.exists:
                    assert ctx.get(dut.writable) == access.writable, (node, hex(addr))
                    assert ctx.get(dut.local) == (access.owner == "engine")

        sim = Simulator(dut)
        sim.add_testbench(bench)
        sim.run()
