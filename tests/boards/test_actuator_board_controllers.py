"""Actuator boards with their joint controllers (boards/actuator_board.py, ``controllers=True``):
the base board's core (host link, :class:`~linkdyn.gateware.controlled_actuator.ControlledFrontEnd`,
ActuatorCore with its :class:`~linkdyn.gateware.controlled_actuator.BoardController`) answers
a control step over its UART word for word as
:class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel` (the golden controllers
around the golden chain) given the same writes; the board tops of every role elaborate with
their link pins; the build (``--distributed --controllers``, a stand-in Yosys) reports the
controller, the joint pins and an XC6SLX9 that is too small; the refusals.

The 1-board chain (a base board that is also the last) runs in well under a minute; base and
last board of a 2-board chain through their links (the Amaranth simulator, a few hundred cycles
per second) run with ``LINKDYN_LONG=1``.
"""

import json

import numpy as np
import pytest
from amaranth import Elaboratable, Module
from amaranth.sim import Simulator

from linkdyn.boards import build as board_build
from linkdyn.boards import summary
from linkdyn.boards.actuator_board import LINK_PINS, ActuatorBoardCore, ActuatorBoardTop
from linkdyn.gateware.controlled_actuator import COMMAND_WORDS, ControlledFrontEnd
from linkdyn.model import protocol as P
from linkdyn.model.controller import ControllerConfig
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from support import LONG, stand_in_tools
from support.make import bitstream_command

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

DIVISOR = 4
CLOCK_HZ = 1_000_000
_MASK = 0xFFFFFFFF
_CONTROL = P.control_register("CONTROL").address
_WORD = {w.name: w.address for w in P.CONTROLLER_WORDS}


class _Chain(Elaboratable):
    """Base board and, for n = 2, the last board, their link pins joined directly."""

    def __init__(self, n):
        self.base = ActuatorBoardCore(role="base", boards=n, clock_hz=CLOCK_HZ,
                                      divisor=DIVISOR, controllers=True)
        self.last = (ActuatorBoardCore(role="last", clock_hz=CLOCK_HZ, controllers=True)
                     if n > 1 else None)

    def elaborate(self, platform):
        m = Module()
        m.submodules.base = self.base
        if self.last is not None:
            m.submodules.last = self.last
            m.d.comb += [self.last.up_rx.eq(self.base.down_tx),
                         self.base.down_rx.eq(self.last.up_tx)]
        return m


def _serial(dut, requests, *, settle=2000, end=1500):
    """Send ``requests`` (``(frame bytes, cycles to wait after it)``) to the base board's UART;
    return the decoded replies."""
    line = dut.base
    received = bytearray()

    async def send(ctx):
        ctx.set(line.rx, 1)
        await ctx.tick().repeat(settle)
        for frame, gap in requests:
            for byte in frame:
                for bit in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                    ctx.set(line.rx, bit)
                    await ctx.tick().repeat(DIVISOR)
            ctx.set(line.rx, 1)
            await ctx.tick().repeat(gap)
        await ctx.tick().repeat(end)

    async def sample(ctx):
        while True:
            await ctx.negedge(line.tx)
            for _ in range(DIVISOR // 2):
                await ctx.tick()
            byte = 0
            for i in range(8):
                for _ in range(DIVISOR):
                    await ctx.tick()
                byte |= ctx.get(line.tx) << i
            for _ in range(DIVISOR):
                await ctx.tick()
            received.append(byte)

    sim = Simulator(dut)
    period = 1 / CLOCK_HZ
    sim.add_clock(period, domain="sync")
    if dut.last is not None:
        sim.add_clock(period, phase=0.3 * period, domain="rx_down")
        sim.add_clock(period, phase=0.7 * period, domain="rx_up")
    sim.add_testbench(send)
    sim.add_testbench(sample, background=True)
    sim.run()
    frames = []
    data = bytes(received)
    while data:
        _, rest = P.split_frame(data, reply=True)
        frames.append(P.decode_reply(data[:len(data) - len(rest)]))
        data = rest
    return frames


def _step_scenario(n, seed, step_gap):
    """The requests of one control step on a random robot, the model's answers to them, and
    the expected status of every reply."""
    rng = np.random.default_rng(seed)
    robot = random_robot(n, seed)
    spec = P.ProtocolSpec(n, controllers=True, boards=n)
    model = ControlledChainModel(P.ProtocolSpec(n, controllers=True))
    requests, expected = [], []
    seq = iter(range(1, 1000))

    def request(command, payload=b"", gap=2500):
        requests.append((P.encode_request(command, payload, seq=next(seq)), gap))

    # The robot: the chain's constants and base motion, one LOAD_ROBOT.
    constants = encode_robot(robot)
    base_motion = encode_base_motion(robot)
    request(P.Command.LOAD_ROBOT, P.load_robot_payload(spec, constants, base_motion), 3000)
    expected.append(("load", None))
    rmap = model.spec.registers
    for i, words in enumerate(constants):
        for name, word in words.items():
            assert model.write(i, rmap[name].address, word)
    for name, word in base_motion.items():
        assert model.write(0, rmap[name].address, word)
    # Per joint: a configuration with a position reference away from the sensor (q = 0).
    for i, link in enumerate(robot.links):
        config = ControllerConfig.for_joint(
            link.limits if link.limits.tau_max is not None else _limits(rng),
            kp=float(rng.uniform(50, 500)), kd=float(rng.uniform(5, 50)),
            current_per_torque=float(rng.uniform(0.05, 1.0)))
        words = {_WORD[name]: word for name, word in config.encode().items()}
        words.update({w.address: int(round(value * 65536)) & _MASK
                      for w, value in zip(P.REFERENCE_WORDS, (0.3, -0.2, 0.1))})
        # One WRITE per run of consecutive addresses (the engine writes them one by one).
        runs = []
        for address in sorted(words):
            if runs and address == runs[-1][0] + len(runs[-1][1]):
                runs[-1][1].append(words[address])
            else:
                runs.append((address, [words[address]]))
        for address, run in runs:
            request(P.Command.WRITE, P.write_payload(i, address, run), 1500 + 400 * len(run))
            expected.append(("write", None))
            for k, word in enumerate(run):
                assert model.write(i, address + k, word)
    request(P.Command.WRITE, P.write_payload(P.CONTROL_NODE, _CONTROL, [P.CONTROL_STEP]),
            step_gap)
    expected.append(("write", None))
    assert model.write(P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP)
    for i in range(n):
        for w in P.RECORD_WORDS:
            request(P.Command.READ, P.read_payload(i, w.address, 1))
            expected.append(("read", model.read(i, w.address)[1]))
    for name in ("CONTROL_STEPS", "FAULTS"):
        address = P.control_register(name).address
        request(P.Command.READ, P.read_payload(P.CONTROL_NODE, address, 1))
        expected.append(("read", model.read(P.CONTROL_NODE, address)[1]))
    # The step's commands are the base's, never the host's.
    request(P.Command.WRITE, P.write_payload(n - 1, COMMAND_WORDS["FEEDBACK"], [0]))
    expected.append(("refused", None))
    return requests, expected, model


def _limits(rng):
    from types import SimpleNamespace
    return SimpleNamespace(q_min=-float(rng.uniform(0.5, 3)), q_max=float(rng.uniform(0.5, 3)),
                           qd_max=float(rng.uniform(0.5, 4)), tau_max=float(rng.uniform(5, 100)))


def _check(frames, expected, model):
    assert len(frames) == len(expected)
    for frame, (kind, word) in zip(frames, expected):
        status = P.ErrorCode(frame.status)
        if kind == "refused":
            assert status != P.ErrorCode.OK, frame
            continue
        assert status == P.ErrorCode.OK, (kind, frame)
        if kind == "read":
            assert frame.words == [word], (frame, word)
    # The step did something: a current reference away from 0 on some joint, no fault.
    assert model.control_steps == 1
    assert any(int(model.record[i, 1]) != 0 for i in range(model.spec.n_nodes))


def test_base_board_with_its_controller_steps_as_the_model():
    dut = _Chain(1)
    requests, expected, model = _step_scenario(1, seed=41, step_gap=6000)
    info = P.encode_request(P.Command.INFO, seq=0)
    frames = _serial(dut, [(info, 2500)] + requests)
    spec = P.ProtocolSpec(1, clock_hz=CLOCK_HZ, baudrate=CLOCK_HZ // DIVISOR,
                          controllers=True, boards=1)
    assert P.ErrorCode(frames[0].status) == P.ErrorCode.OK
    assert P.BuildInfo.from_payload(frames[0].payload).words == spec.build_info()
    _check(frames[1:], expected, model)


@pytest.mark.skipif(not LONG, reason="2 boards through their links: LINKDYN_LONG=1")
def test_base_and_last_board_with_controllers_step_as_the_model():
    dut = _Chain(2)
    requests, expected, model = _step_scenario(2, seed=42, step_gap=20000)
    _check(_serial(dut, requests), expected, model)


def test_board_tops_with_controllers_elaborate_with_their_link_pins():
    for board, role, boards in (("ulx3s", "base", 3), ("mimas", "middle", None),
                                ("sk_xc6slx9", "last", None)):
        top = ActuatorBoardTop(board, role, boards, controllers=True)
        assert top.core.controllers and top.core.target is not None
        assert (top.core.front_end is not None) == (role == "base")
        platform = top.platform()
        plan = platform.prepare(top, name="top")
        constraints = plan.files["top.lpf"] if board == "ulx3s" else plan.files["top.ucf"]
        conn, ports = LINK_PINS[board]
        used = {"base": ["down"], "middle": ["up", "down"], "last": ["up"]}[role]
        for port, pins in ports.items():
            for pin in pins.values():
                location = platform.connectors[conn].mapping[pin]
                assert (location in constraints) == (port in used), (board, role, pin)
        design = plan.files["top.il"] if board == "ulx3s" else plan.files["top.v"]
        assert "board_controller" in design
        assert ("sequencer" in design) == (role == "base")
        report = top.distributed_report
        assert report["controller"] is True and "joint 0: sclk" in report["joint_pins"]
        assert 'joint_0__miso__io' in constraints


def test_controllers_with_the_pipelined_policy_and_bad_arguments_are_refused(capsys):
    with pytest.raises(ValueError, match="sequential policy only"):
        ActuatorBoardCore(role="middle", clock_hz=CLOCK_HZ, policy="pipelined",
                          controllers=True)
    with pytest.raises(ValueError, match="sequential policy only"):
        ActuatorBoardTop("ulx3s", "base", 2, policy="pipelined", controllers=True)
    with pytest.raises(TypeError, match="controllers must be a bool"):
        ActuatorBoardCore(role="middle", clock_hz=CLOCK_HZ, controllers=1)
    with pytest.raises(ValueError, match="Board count must be 1 .. 32"):
        ControlledFrontEnd(0)
    with pytest.raises(TypeError, match="Board count must be an integer"):
        ControlledFrontEnd(2.0)
    for argv, message in (
            (["--board", "ulx3s", "--distributed", "--controllers", "--policy", "pipelined"],
             "the pipelined policy has no joint controllers"),
            (["--board", "ulx3s", "--distributed", "--controllers", "--nodes", "2"],
             "one LinkDyn node per board")):
        with pytest.raises(SystemExit) as caught:
            board_build.main(argv)
        assert caught.value.code == board_build.EXIT_USAGE
        assert message in capsys.readouterr().err


def test_spartan6_board_with_controller_reports_that_it_does_not_fit(tmp_path, monkeypatch,
                                                                      capsys):
    stand_in_tools.install(tmp_path, monkeypatch, {"LUT6": 6400, "FDRE": 3500, "DSP48A1": 8,
                                                   "RAMB16BWER": 6})
    out = tmp_path / "middle"
    status = board_build.main(["--board", "mimas", "--distributed", "--role", "middle",
                               "--controllers", "--synth-only", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == board_build.EXIT_DOES_NOT_FIT
    # Said before the toolchain, and after it with the figures.
    assert "may not fit the xc6slx9" in err
    assert err.index("may not fit") < err.index("does NOT fit (luts 6400 > 5720)")
    report = json.loads((out / "report.json").read_text())
    assert report["controllers"] is True and report["fits"] is False
    assert report["luts"] == 6400 and report["utilisation_percent"]["luts"] == 111.9
    assert report["distributed"]["controller"] is True
    assert "--distributed --role middle" in report["command"]
    assert "--controllers" in report["command"]
    assert "joint controller on the board" in (out / "report.txt").read_text()
    row = summary.table([report]).splitlines()[-1]
    assert "| actuator board, middle + controller |" in row and "| NO |" in row
    verilog = (out / "top.v").read_text()
    assert "board_controller" in verilog and "sequencer" not in verilog


def test_make_bitstream_passes_controllers_1_to_the_distributed_build():
    line = bitstream_command("BOARD=ulx3s", "DISTRIBUTED=1", "CONTROLLERS=1", "ROLE=middle")
    assert "--controllers" in line and "--distributed --role middle" in line
