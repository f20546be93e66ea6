"""The actuator board of the distributed mode (boards/actuator_board.py): two board cores,
each receive port in its own clock domain, answer the host over the base board's UART; the
board tops elaborate with their link pins, clock constraints and the 90-degree PLL output;
the build's argument checks."""

import pytest
from amaranth import Elaboratable, Module
from amaranth.sim import Simulator

from linkdyn.boards import build as board_build
from linkdyn.boards.actuator_board import (
    LINK_PINS, ActuatorBoardCore, ActuatorBoardTop, actuator_pll_setting,
)
from linkdyn.model import protocol as P
from support import stand_in_tools
from support.make import bitstream_command

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

DIVISOR = 4
CLOCK_HZ = 1_000_000


class _TwoBoards(Elaboratable):
    """Base board (UART) and last board, their link pins joined directly."""

    def __init__(self):
        self.base = ActuatorBoardCore(role="base", boards=2, clock_hz=CLOCK_HZ, divisor=DIVISOR)
        self.last = ActuatorBoardCore(role="last", clock_hz=CLOCK_HZ)

    def elaborate(self, platform):
        m = Module()
        m.submodules.base = self.base
        m.submodules.last = self.last
        m.d.comb += [self.last.up_rx.eq(self.base.down_tx),
                     self.base.down_rx.eq(self.last.up_tx)]
        return m


def _serial(dut, requests, *, settle=2000, gap=1500, end=1500):
    line = dut.base
    received = bytearray()

    async def send(ctx):
        ctx.set(line.rx, 1)
        await ctx.tick().repeat(settle)           # the link trains and comes up
        for frame in requests:
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
    # each receive port runs on its neighbour's clock: same frequency, another phase
    sim.add_clock(period, phase=0.3 * period, domain="rx_down")
    sim.add_clock(period, phase=0.7 * period, domain="rx_up")
    sim.add_testbench(send)
    sim.add_testbench(sample, background=True)
    sim.run()
    frames = []
    data = bytes(received)
    while data:
        frame, rest = P.split_frame(data, reply=True)
        frames.append(P.decode_reply(data[:len(data) - len(rest)]))
        data = rest
    return frames


def test_two_board_cores_answer_the_host_through_their_links():
    dut = _TwoBoards()
    window = P.link_word_address("upstream", "status")
    frames = _serial(dut, [
        P.encode_request(P.Command.INFO, seq=1),
        P.encode_request(P.Command.READ, P.read_payload(P.CONTROL_NODE, 0x34, 2), seq=2),
        P.encode_request(P.Command.READ, P.read_payload(1, window, 6), seq=3),
        P.encode_request(P.Command.READ, P.read_payload(1, 0xE6, 1), seq=4),
    ])
    assert [(f.seq, P.ErrorCode(f.status)) for f in frames] == [
        (1, P.ErrorCode.OK), (2, P.ErrorCode.OK), (3, P.ErrorCode.OK),
        (4, P.ErrorCode.BAD_ADDRESS)]
    spec = P.ProtocolSpec(2, clock_hz=CLOCK_HZ, baudrate=CLOCK_HZ // DIVISOR, boards=2)
    assert P.BuildInfo.from_payload(frames[0].payload).words == spec.build_info()
    assert frames[1].words == [0, 2]                 # no link down, 2 boards
    state = P.LinkState.from_words(1, "upstream", frames[2].words)
    assert state.up and state.hears and state.aligned
    assert (state.board_index, state.neighbour_index) == (1, 0)
    # the read travelled the link: board 1 received the request frame(s)
    assert state.frames_received >= 1 and state.crc_errors == 0


def test_board_tops_elaborate_with_link_pins_and_clock_constraints(tmp_path):
    for board in LINK_PINS:
        top = ActuatorBoardTop(board, "middle")
        plan = top.platform().prepare(top, name="top")
        conn, ports = LINK_PINS[board]
        platform = top.platform()
        files = plan.files
        constraints = files["top.lpf"] if board == "ulx3s" else files["top.ucf"]
        for port in ports.values():
            for pin in port.values():
                location = platform.connectors[conn].mapping[pin]
                assert location in constraints, (board, pin, location)
        # both receive clocks carry the core clock's period, on their pins
        for port in ("up", "down"):
            pin = f"link_{port}_0__rx_clk__io"
            if board == "ulx3s":
                assert f'FREQUENCY PORT "{pin}" 50000000.0 HZ;' in constraints
            else:
                assert f'PERIOD "PRD{pin}" 20.0 ns HIGH 50%;' in constraints
    with pytest.raises(ValueError, match="Only the base board takes the number of boards"):
        ActuatorBoardTop("mimas", "middle", 3)
    with pytest.raises(TypeError, match="needs the number of boards"):
        ActuatorBoardTop("mimas", "base")
    with pytest.raises(ValueError, match="Actuator boards are"):
        ActuatorBoardTop("atlys", "base", 2)


def test_ecp5_quarter_period_output_needs_whole_vco_steps():
    assert actuator_pll_setting("ulx3s", 50_000_000).output_div % 4 == 0
    with pytest.raises(ValueError, match="no 90-degree output in whole VCO cycles"):
        actuator_pll_setting("ulx3s", 60_000_000)
    assert actuator_pll_setting("mimas", 50_000_000).out_hz == 50_000_000


def test_distributed_build_arguments_are_checked(capsys):
    for argv, message in (
            (["--board", "atlys", "--distributed"], "--distributed builds ulx3s"),
            (["--board", "mimas", "--distributed", "--role", "middle", "--boards", "3"],
             "--boards is the base board's"),
            (["--board", "mimas", "--distributed", "--nodes", "2"], "one LinkDyn node per board"),
            (["--board", "mimas", "--boards", "3"], "--boards needs --distributed"),
            (["--board", "mimas", "--role", "middle"], "--role needs --distributed")):
        with pytest.raises(SystemExit) as caught:
            board_build.main(argv)
        assert caught.value.code == board_build.EXIT_USAGE
        assert message in capsys.readouterr().err


def test_distributed_build_reports_the_role_and_the_link_pins(tmp_path, monkeypatch):
    import json

    from linkdyn.boards import summary
    stand_in_tools.install(tmp_path, monkeypatch, {"LUT6": 4400, "FDRE": 2500, "DSP48A1": 4,
                                                   "RAMB16BWER": 4})
    out = tmp_path / "middle"
    assert board_build.main(["--board", "mimas", "--distributed", "--role", "middle",
                             "--synth-only", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["distributed"]["role"] == "middle" and report["distributed"]["boards"] is None
    assert report["distributed"]["link_mbit_s"] == 100
    assert "upstream rx_clk p1-15" in report["distributed"]["link_pins"]
    assert report["clock_mhz"] == 50 and report["update_latency_cycles"] is None
    assert "--distributed --role middle" in report["command"]
    assert report["luts"] == 4400
    verilog = (out / "top.v").read_text()
    assert "PLL_BASE" in verilog and "CLKOUT1_PHASE" in verilog
    row = summary.table([report]).splitlines()[-1]
    assert "| actuator board, middle |" in row and "| - |" in row


def test_make_bitstream_passes_distributed_1_to_the_build():
    line = bitstream_command("BOARD=ulx3s", "DISTRIBUTED=1", "ROLE=base", "BOARDS=3")
    assert "--distributed --role base --boards 3" in line
