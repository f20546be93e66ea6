"""The joint ports on the boards (boards/joint_pins.py): the pin tables, the builds with
controllers that put a JointPort per joint on them, the default builds that have none, and the
port joined to a board core's controller in the Amaranth simulator."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.sim import Simulator

from linkdyn.boards import BOARDS
from linkdyn.boards.actuator_board import LINK_PINS, ActuatorBoardTop
from linkdyn.boards.core import BoardCore
from linkdyn.boards.joint_pins import (PIN_NAMES, connect_joint_port, describe, port_timing)
from linkdyn.gateware.joint_port import JointPort
from support.joint_drive import DriveModel, feedback_frame

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

#: Joint ports per board: the ULX3S's 6-node build, the XC6SLX9 boards' two nodes at most.
PORTS = {"ulx3s": 6, "mimas": 2, "sk_xc6slx9": 2}


def _locations(platform, resource):
    """The FPGA pins of a resource, by subsignal name (a single pin each)."""
    out = {}

    def walk(prefix, ios):
        for io in ios:
            if hasattr(io, "ios"):
                walk(io.name, io.ios)
            elif hasattr(io, "map_names"):
                out[prefix] = io.map_names(platform._conn_pins, resource)
            else:                                    # DiffPairs
                out[prefix] = (io.p.map_names(platform._conn_pins, resource)
                               + io.n.map_names(platform._conn_pins, resource))
    walk(resource.name, resource.ios)
    return out


@pytest.mark.parametrize("name", sorted(PORTS))
def test_joint_pins_are_free_of_every_other_pin_of_the_board(name):
    cls = BOARDS[name]
    platform = cls.platform()
    conn, ports = cls.joint_pins
    assert len(ports) == PORTS[name]
    assert all(set(port) == set(PIN_NAMES) for port in ports)
    mapping = platform.connectors[conn].mapping
    joint = [mapping[pin] for port in ports for pin in port.values()]
    assert len(set(joint)) == len(joint) == 5 * PORTS[name]
    others = set()
    for (resource_name, number), resource in platform.resources.items():
        if resource_name != "joint":
            others.update(pin for pins in _locations(platform, resource).values()
                          for pin in pins)
    link_conn, link_ports = LINK_PINS[name]
    others.update(mapping[pin] for pins in link_ports.values() for pin in pins.values())
    assert not set(joint) & others
    # Every joint resource is on the table's pins; miso has the pull-up.
    for index, port in enumerate(ports):
        resource = platform.lookup("joint", index)
        assert {k: v[0] for k, v in _locations(platform, resource).items()} == {
            pin: mapping[port[pin]] for pin in PIN_NAMES}
        miso = next(io for io in resource.ios if io.name == "miso")
        assert dict(miso.attrs).get("PULLMODE" if name == "ulx3s" else "PULLUP") in ("UP",
                                                                                     "TRUE")
    if name == "ulx3s":
        # Not on the ESP32's (11..13) or the ADC's (14..17) GPIO pairs.
        pairs = {int(pin[:-1]) for port in ports for pin in port.values()}
        assert not pairs & (set(range(0, 4)) | set(range(11, 18)))


def test_port_timing_keeps_the_spi_clock_and_the_drives_margin():
    assert port_timing(100_000_000) == (4, 200)          # 12.5 MHz, 50 ns for miso
    assert port_timing(50_000_000) == (3, 100)           # 8.33 MHz, 60 ns
    assert port_timing(25_000_000) == (2, 50)            # 6.25 MHz, 40 ns
    with pytest.raises(ValueError, match="positive integer"):
        port_timing(0)


def test_builds_with_controllers_put_a_joint_port_on_each_joints_pins():
    for name, nodes in (("ulx3s", 2),):
        top = BOARDS[name](nodes, controllers=True)
        platform = top.platform()
        plan = platform.prepare(top, name="top")
        constraints = plan.files["top.lpf" if name == "ulx3s" else "top.ucf"]
        design = plan.files["top.il" if name == "ulx3s" else "top.v"]
        conn, ports = BOARDS[name].joint_pins
        mapping = platform.connectors[conn].mapping
        for index, port in enumerate(ports):
            for pin_name, pin in port.items():
                net = f"joint_{index}__{pin_name}__io"
                located = (f'LOCATE COMP "{net}" SITE "{mapping[pin]}"' if name == "ulx3s"
                           else f'NET "{net}" LOC={mapping[pin]};')
                assert (located in constraints) == (index < nodes), (name, net)
            assert (f"joint_port{index}" in design) == (index < nodes)
        assert 'LOCATE COMP "led_4__io" SITE "D1"' in constraints    # the port fault LED
        assert "joint 0: sclk" in top.joint_pins_report
        assert (f"joint {nodes}:" in top.joint_pins_report) is False
    # Without controllers no joint pins; the Atlys has none.
    top = BOARDS["mimas"](1)
    plan = top.platform().prepare(top, name="top")
    assert "joint" not in plan.files["top.ucf"] and "joint_port" not in plan.files["top.v"]
    assert "led_4" not in plan.files["top.ucf"]
    assert top.joint_pins_report is None
    assert BOARDS["atlys"].joint_pins is None
    assert describe(BOARDS["atlys"], 1, 100_000_000).startswith("none on this board")


def test_actuator_board_with_its_controller_has_the_joint_port_beside_its_links():
    top = ActuatorBoardTop("mimas", "middle", controllers=True)
    platform = top.platform()
    plan = platform.prepare(top, name="top")
    ucf = plan.files["top.ucf"]
    for pin_name, location in zip(PIN_NAMES, ("P26", "P24", "P23", "P22", "P21")):
        assert f'NET "joint_0__{pin_name}__io" LOC={location};' in ucf
    assert "joint_port0" in plan.files["top.v"]
    report = top.distributed_report["joint_pins"]
    assert report == describe(BOARDS["mimas"], 1, 50_000_000)
    assert "sclk 8.33333 MHz" in report and "miso P1-13 (P22)" in report


def test_a_board_refuses_more_joints_with_controllers_than_it_has_joint_ports():
    with pytest.raises(ValueError, match="ULX3S 85F has joint pins for 6 joint"):
        BOARDS["ulx3s"](7, controllers=True)
    with warnings.catch_warnings():             # built, never elaborated
        warnings.simplefilter("ignore")
        top = BOARDS["ulx3s"](7)                            # without controllers: built
        assert top.nodes == 7
        del top
        gc.collect()


class _CoreWithPort(Elaboratable):
    """A one-joint board core with its joint port, joined as a board top joins them."""

    def __init__(self):
        self.core = BoardCore(1, clock_hz=12_000_000, divisor=4, controllers=True)
        self.port = JointPort(divisor=2, gap=8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.port = self.port
        connect_joint_port(m, self.port, core.sensor[0], core.actuator[0],
                           core.chain.controllers[0].fault_clear)
        return m


def test_drive_words_reach_the_controllers_sensor_input_and_its_enable_the_pin():
    rng = random.Random(5)
    words = [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(2)]
    dut = _CoreWithPort()
    drive = DriveModel([feedback_frame(q, qd) for q, qd in words])
    controller = dut.core.chain.controllers[0]
    seen = []

    async def drive_side(ctx):
        await drive.run(ctx, dut.port.drive, 2)
        await ctx.tick().repeat(4)
        seen.append((ctx.get(controller.sensor.q), ctx.get(controller.sensor.qd),
                     ctx.get(dut.port.drive.enable), ctx.get(controller.actuator.enable)))

    sim = Simulator(dut)
    sim.add_clock(1 / 12e6)
    sim.add_testbench(drive_side)
    sim.run()

    def signed(v):
        return v - (1 << 32) if v >> 31 else v
    q, qd = words[1]
    # The controller (never enabled: no control step ran) holds the drive off.
    assert seen == [(signed(q), signed(qd), 0, 0)]
    assert [(f.i_ref, f.control) for f in drive.commands] == [(0, 0), (0, 0)]
    assert all(f.crc_ok for f in drive.commands)
