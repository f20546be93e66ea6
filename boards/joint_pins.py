"""The joint ports on a board's header pins: one :class:`~linkdyn.gateware.joint_port.JointPort`
per joint between its controller and the joint's drive (docs/controller.md, "Joint port").

A board module names its joint ports' pins in its ``joint_pins`` class attribute, ``(connector,
[{pin name: connector pin}, ...])``, one dict per port (:data:`PIN_NAMES`); a board top with
joint controllers (``controllers=True``) then puts joint i's port on ``joint`` resource i. A
board without ``joint_pins`` (Atlys) has none: its controllers' sensor inputs read 0.

The SPI clock is the fastest at most :data:`SCLK_HZ` the core clock divides to that leaves the
drive at least :data:`MISO_SETTLE_SECONDS` for its ``miso`` (12.5 MHz at 100 MHz, 8.33 MHz at
50 MHz), the gap between frames at least :data:`GAP_SECONDS` (:func:`port_timing`). LED
:data:`FAULT_LED`, where the board has it (ULX3S, Mimas), lights while a port's fault is
latched; the host reads each port's fault, ``valid`` and error count in its joint's controller
window (the word ``joint_port``, :mod:`linkdyn.model.protocol.joint_port_map`), which
:func:`connect_joint_port` joins (a joint without a port reads 0 there).
"""

import math

from amaranth.build import Attrs, Pins, Resource, Subsignal
from amaranth.lib import io

from linkdyn.gateware.joint_port import JointPort, frame_cycles

__all__ = ["PIN_NAMES", "SCLK_HZ", "MISO_SETTLE_SECONDS", "GAP_SECONDS", "FAULT_LED",
           "port_timing", "joint_resources", "check_joint_count", "add_joint_ports",
           "connect_joint_port", "fault_led", "describe"]

#: A port's pins and their direction on the board.
PIN_NAMES = {"sclk": "o", "cs_n": "o", "mosi": "o", "miso": "i", "enable": "o"}
#: Fastest SPI clock of the joint ports, Hz (an MCU's SPI slave commonly takes 12.5 to 25 MHz).
SCLK_HZ = 12_500_000
#: Time the drive has at least, from the falling ``sclk`` edge at the board's pin to its next
#: ``miso`` bit back at the pin (its clock to output and the line's round trip), s: the port
#: takes ``miso`` ``2 divisor - 3`` core cycles after that edge (gateware/joint_port.py).
MISO_SETTLE_SECONDS = 40e-9
#: Shortest time ``cs_n`` stays high between two frames, s (the drive's time to take the
#: command and load its next feedback frame).
GAP_SECONDS = 2e-6


def port_timing(clock_hz):
    """Return ``(divisor, gap)`` of the joint ports at a core clock of ``clock_hz`` (Hz): the
    smallest divisor (>= 2) that keeps ``sclk`` at most :data:`SCLK_HZ` and gives the drive
    :data:`MISO_SETTLE_SECONDS` (``2 divisor - 3`` cycles), and the gap of at least
    :data:`GAP_SECONDS` in clock cycles (and at least ``2 divisor``).

    Raises
    ------
    ValueError
        If ``clock_hz`` is not a positive integer.
    """
    if isinstance(clock_hz, bool) or not isinstance(clock_hz, int) or clock_hz <= 0:
        raise ValueError(f"Clock frequency must be a positive integer (Hz), not {clock_hz!r}")
    divisor = max(2, math.ceil(clock_hz / (2 * SCLK_HZ)),
                  math.ceil((math.ceil(round(MISO_SETTLE_SECONDS * clock_hz, 6)) + 3) / 2))
    gap = max(2 * divisor, math.ceil(GAP_SECONDS * clock_hz))
    return divisor, gap


def _attrs(family, pullup=False):
    if family == "ecp5":
        return Attrs(IO_TYPE="LVCMOS33", **({"PULLMODE": "UP"} if pullup else {}))
    return Attrs(IOSTANDARD="LVCMOS33", **({"PULLUP": "TRUE"} if pullup else {}))


def joint_resources(board_class):
    """Return the ``joint`` resources of a board class (its ``joint_pins``; none without);
    ``miso`` has the pull-up (a drive not connected reads 1s: its frames fail the CRC)."""
    table = getattr(board_class, "joint_pins", None)
    if table is None:
        return []
    conn, ports = table
    return [Resource("joint", index,
                     *(Subsignal(name, Pins(pins[name], dir=direction, conn=conn),
                                 *([_attrs(board_class.family, pullup=True)]
                                   if name == "miso" else []))
                       for name, direction in PIN_NAMES.items()),
                     _attrs(board_class.family))
            for index, pins in enumerate(ports)]


def check_joint_count(board_class, joints):
    """Raise ValueError if a board with joint pins has fewer joint ports than ``joints``."""
    table = getattr(board_class, "joint_pins", None)
    if table is not None and joints > len(table[1]):
        raise ValueError(f"{board_class.title} has joint pins for {len(table[1])} joint(s) "
                         f"(its joint_pins), not {joints}: build fewer joints with controllers")


def add_joint_ports(m, platform, clock_hz, joints):
    """Add a joint port per joint to module ``m``, on the platform's ``joint`` resources.

    Parameters
    ----------
    m : Module
    platform : Platform
        With the ``joint`` resources (:func:`joint_resources`).
    clock_hz : int
        Core clock, Hz (:func:`port_timing`).
    joints : sequence of (sensor, actuator, fault_clear[, status])
        Per joint: the controller's sensor input (``In(SensorSignature)``), its actuator output
        (``Out(ActuatorSignature)``), its fault-clear strobe, which also clears the port's
        fault, and optionally the core's input of the port's status
        (``In(JointPortStatusSignature)``, the window word ``joint_port``).

    Returns
    -------
    list of JointPort
        The ports; LED :data:`FAULT_LED`, where the board has it, shows any port's fault.
    """
    divisor, gap = port_timing(clock_hz)
    ports = []
    for index, (sensor, actuator, fault_clear, *status) in enumerate(joints):
        m.submodules[f"joint_port{index}"] = port = JointPort(divisor=divisor, gap=gap)
        pins = platform.request("joint", index, dir="-")
        for name, direction in PIN_NAMES.items():
            m.submodules[f"joint{index}_{name}"] = buffer = io.Buffer(direction,
                                                                      getattr(pins, name))
            signal = getattr(port.drive, name)
            m.d.comb += (signal.eq(buffer.i) if direction == "i" else buffer.o.eq(signal))
        connect_joint_port(m, port, sensor, actuator, fault_clear, *status)
        ports.append(port)
    fault_led(m, platform, ports)
    return ports


#: The LED that shows a latched joint-port fault, where the board has it (ULX3S, Mimas: LEDs
#: 0..3 are the core's status LEDs).
FAULT_LED = 4


def fault_led(m, platform, ports):
    """Light LED :data:`FAULT_LED` while any of ``ports`` has its fault latched, if the
    platform has that LED; return whether it has."""
    if ("led", FAULT_LED) not in platform.resources or not ports:
        return False
    m.submodules.joint_fault_led = led = io.Buffer(
        "o", platform.request("led", FAULT_LED, dir="-"))
    faults = ports[0].fault
    for port in ports[1:]:
        faults = faults | port.fault
    m.d.comb += led.o.eq(faults)
    return True


def connect_joint_port(m, port, sensor, actuator, fault_clear, status=None):
    """Join a joint port to its controller in module ``m``: the port's words to the
    controller's ``sensor`` input, the controller's ``actuator`` output (``i_ref``,
    ``enable``) to the port, ``fault_clear`` (the controller's clear strobe) to the port's,
    and, given ``status`` (an ``In(JointPortStatusSignature)`` of the core or chain), the
    port's ``fault``, ``valid``, ``errors`` and ``present`` = 1 to it (the controller window's
    ``joint_port`` word)."""
    m.d.comb += [sensor.q.eq(port.sensor.q), sensor.qd.eq(port.sensor.qd),
                 port.actuator.i_ref.eq(actuator.i_ref),
                 port.actuator.enable.eq(actuator.enable),
                 port.fault_clear.eq(fault_clear)]
    if status is not None:
        m.d.comb += [status.fault.eq(port.fault), status.valid.eq(port.valid),
                     status.errors.eq(port.errors), status.present.eq(1)]


def describe(board_class, joints, clock_hz):
    """Return the build report's words for the joint pins of ``joints`` joints on a board."""
    table = getattr(board_class, "joint_pins", None)
    if table is None:
        return ("none on this board: sensor inputs tied to 0, i_ref / enable only in the "
                "records")
    (conn, number), ports = table
    mapping = board_class.platform_class().connectors[conn, number].mapping
    divisor, gap = port_timing(clock_hz)
    frame = frame_cycles(divisor, gap)

    def label(pin):
        if conn == "gpio":           # the ULX3S's GP/GN pins
            return ("GP" if pin.endswith("+") else "GN") + pin[:-1]
        return f"{conn.upper()}{number}-{pin}"
    pins = "; ".join(f"joint {i}: " + ", ".join(
        f"{name} {label(ports[i][name])} ({mapping[ports[i][name]]})" for name in PIN_NAMES)
        for i in range(joints))
    return (f"SPI joint ports (sclk {clock_hz / (2 * divisor) / 1e6:g} MHz, a frame every "
            f"{frame / clock_hz * 1e6:.2f} us): {pins}")
