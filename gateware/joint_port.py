"""The joint port: a synchronous serial link from a node's controller to the joint's drive.

An actuator module commonly splits its work between the node and a motor drive (an MCU or small
FPGA beside the motor doing commutation and the current loop, reading the encoder): the drive
reports the joint's position and velocity and takes a current reference. :class:`JointPort` is
the node's side of that split, an SPI master (mode 0: clock idle low, both sides sample on the
rising edge, change after the falling edge; most significant bit first) that runs one frame
after another, on its own, at a fixed rate:

====================  =======================================================================
pin                   what
====================  =======================================================================
``sclk`` (out)        serial clock, idle low; ``clock_hz / (2 divisor)``
``cs_n`` (out)        frame select, low for a frame, high for ``gap`` cycles between frames
``mosi`` (out)        the command frame (:data:`COMMAND_LAYOUT`) to the drive
``miso`` (in)         the feedback frame (:data:`FEEDBACK_LAYOUT`) from the drive (pull-up)
``enable`` (out)      drive enable, high only while the controller enables the joint, the port
                      has no fault and a good frame has arrived since reset or the last clear
====================  =======================================================================

One frame is :data:`FRAME_BITS` = 72 bits each way, 8 payload bytes then a CRC-8 byte
(:data:`CRC`, CRC-8/AUTOSAR: polynomial 0x2F, initial value 0xFF, final XOR 0xFF, not
reflected; check value 0xDF for ``b"123456789"``) over those 8 bytes, all most significant bit
first. Command (board -> drive): ``i_ref`` (A, Q15.16, two's complement, 0 while not enabled),
then the control byte (bit 0: enable, the other bits 0), then 3 zero bytes, then the CRC. Feedback
(drive -> board): ``q`` (rad, Q15.16), then ``qd`` (rad/s, Q15.16), then the CRC: the
controller's sensor words (:data:`~linkdyn.gateware.controller.SensorSignature`). The initial
value 0xFF makes a line stuck at 0 or at 1 (a drive not connected) fail the check.

A feedback frame whose CRC does not match is dropped: ``sensor.q`` / ``sensor.qd`` keep the last
good frame's words (the controller samples them when its step starts), ``errors`` counts it
(saturating), and ``fault_errors`` bad frames in a row latch ``fault``: the enable pin goes low
and the command frames carry ``enable = 0`` and ``i_ref = 0`` until ``fault_clear`` (on a board:
the joint controller's fault clear, CONTROL.fault_clear), after which the next good frame
enables the drive again. The drive is expected to switch its bridge off when the enable pin is low, when a
command frame's CRC fails or says ``enable = 0``, and when no good command frame came for a few
frame periods. The host reads ``fault``, ``valid`` and ``errors`` in the joint's controller
window, the word ``joint_port`` (:mod:`linkdyn.model.protocol.joint_port_map`; a board top
joins them to the core's :data:`JointPortStatusSignature` input,
``linkdyn.boards.joint_pins.connect_joint_port``).

A frame goes out as soon as the previous one ends: the words the controller takes were loaded by
the drive less than two frame periods before (plus the drive's own latency), with no trigger from
the control step; the command latches ``actuator.i_ref`` and ``enable`` when its frame starts,
so a frame never carries half of two references. ``miso`` passes an
:class:`~amaranth.lib.cdc.FFSynchronizer` and is taken at the end of each bit, just before the
falling edge that lets the drive change it: from the falling edge leaving the board to the next
``miso`` bit arriving (the drive's clock to output and the line's round trip) the drive has
``2 divisor - 3`` clock cycles (tests/gateware/test_joint_port.py finds the limit there).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.crc import catalog
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import WORD_WIDTH
from linkdyn.model.protocol.joint_port_map import ERROR_COUNTER_BITS as JOINT_PORT_ERROR_BITS
from linkdyn.model.protocol.joint_port_map import FAULT_ERRORS, JOINT_PORT_FIELDS

from .controller import ActuatorSignature, SensorSignature

__all__ = ["JointPort", "DriveSignature", "COMMAND_LAYOUT", "FEEDBACK_LAYOUT", "FRAME_BITS",
           "PAYLOAD_BITS", "CRC", "ERROR_COUNTER_BITS", "DEFAULT_FAULT_ERRORS", "frame_cycles",
           "JointPortStatusSignature", "status_word"]

_W = WORD_WIDTH

#: The frame's CRC: CRC-8/AUTOSAR (polynomial 0x2F, init 0xFF, xorout 0xFF, not reflected);
#: polynomial 0x2F detects every error of 1 to 3 bits in a 72-bit frame and every odd number
#: of flipped bits (it has the factor x + 1).
CRC = catalog.CRC8_AUTOSAR
#: Payload bits of a frame (8 bytes), and the whole frame with its CRC byte.
PAYLOAD_BITS = 64
FRAME_BITS = PAYLOAD_BITS + CRC.crc_width
#: The command frame's payload, first field sent last in the layout (the wire sends the layout's
#: most significant bit first: ``i_ref``'s sign bit is the frame's first bit).
COMMAND_LAYOUT = data.StructLayout({"reserved": 24, "control": 8, "i_ref": _W})
#: The feedback frame's payload, as :data:`COMMAND_LAYOUT`: ``q`` first on the wire.
FEEDBACK_LAYOUT = data.StructLayout({"qd": _W, "q": _W})
#: Width of the saturating counter of dropped frames (the register map's ``joint_port`` word,
#: :mod:`linkdyn.model.protocol.joint_port_map`).
ERROR_COUNTER_BITS = JOINT_PORT_ERROR_BITS
#: Bad frames in a row that latch the port's fault.
DEFAULT_FAULT_ERRORS = FAULT_ERRORS

#: The joint port's pins, board side (``Out(DriveSignature)``).
DriveSignature = wiring.Signature({
    "sclk": Out(1), "cs_n": Out(1, init=1), "mosi": Out(1), "miso": In(1), "enable": Out(1)})
DriveSignature.__doc__ = ("The joint port's pins (board side): ``sclk``, ``cs_n`` (low in a "
                          "frame), ``mosi`` out, ``miso`` in, ``enable`` out (drive enable).")


def frame_cycles(divisor, gap):
    """Return the clock cycles from one frame's start to the next's of a :class:`JointPort`
    with this ``divisor`` and ``gap``: ``2 divisor FRAME_BITS`` of bits, half a period after
    the last falling edge, ``gap + 1`` with ``cs_n`` high."""
    return 2 * divisor * FRAME_BITS + divisor + gap + 1


def _positive(name, value, smallest):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < smallest:
        raise ValueError(f"{name} must be at least {smallest}, not {value}")


class JointPort(wiring.Component):
    """SPI master to a joint's drive: current reference and enable out, ``q`` and ``qd`` in,
    one CRC-checked frame after another (module docstring).

    Parameters
    ----------
    divisor : int
        Clock cycles per half period of ``sclk`` (>= 2): ``sclk = clock_hz / (2 divisor)``.
    gap : int
        Clock cycles ``cs_n`` stays high between two frames (>= 2 ``divisor``): the drive's time
        to take the command and load the next feedback frame. A frame period is
        ``2 divisor FRAME_BITS + divisor + gap + 1`` cycles (:attr:`frame_cycles`).
    fault_errors : int
        Bad feedback frames in a row that latch ``fault`` (>= 1; default
        :data:`DEFAULT_FAULT_ERRORS`).

    Members
    -------
    actuator : In(ActuatorSignature)
        From the joint controller: ``i_ref`` (A, Q15.16) and ``enable``.
    sensor : Out(SensorSignature)
        To the joint controller: ``q`` (rad), ``qd`` (rad/s), Q15.16, of the last good frame (0
        until the first).
    drive : Out(DriveSignature)
        The pins.
    fault_clear : In(1)
        Clear ``fault`` (and the run of bad frames); the drive is enabled again after the next
        good frame.
    fault : Out(1)
        ``fault_errors`` bad frames in a row since the last clear: the drive is disabled.
    errors : Out(ERROR_COUNTER_BITS)
        Feedback frames dropped for a CRC mismatch since reset (saturating).
    valid : Out(1)
        A good frame has arrived since reset or since the last ``fault_clear``.
    frame_done : Out(1)
        One cycle after each frame, when ``sensor``, ``errors`` and ``fault`` have taken it.

    Raises
    ------
    TypeError
        If a parameter is not an integer.
    ValueError
        If a parameter is below its smallest value.
    """

    def __init__(self, *, divisor, gap, fault_errors=DEFAULT_FAULT_ERRORS):
        _positive("SPI clock divisor", divisor, 2)
        _positive("Gap between frames (cycles)", gap, 2 * divisor)
        _positive("Bad frames to latch a fault", fault_errors, 1)
        self.divisor = divisor
        self.gap = gap
        self.fault_errors = fault_errors
        super().__init__({
            "actuator": In(ActuatorSignature),
            "sensor": Out(SensorSignature),
            "drive": Out(DriveSignature),
            "fault_clear": In(1),
            "fault": Out(1),
            "errors": Out(ERROR_COUNTER_BITS),
            "valid": Out(1),
            "frame_done": Out(1),
        })

    @property
    def frame_cycles(self):
        """int: clock cycles from one frame's start to the next's."""
        return frame_cycles(self.divisor, self.gap)

    def elaborate(self, platform):
        m = Module()
        divisor = self.divisor

        miso = Signal(init=1)
        m.submodules.miso_sync = FFSynchronizer(self.drive.miso, miso, init=1)
        m.submodules.tx_crc = tx_crc = CRC(data_width=1).create()
        m.submodules.rx_crc = rx_crc = CRC(data_width=1).create()

        # The command frame latched when it starts; the bit on the wire is ``index`` of the
        # frame (FRAME_BITS - 1 first), the CRC's bits once the payload has gone out.
        # Loaded at every frame start, no reset of its own: the flip-flops' reset input zeroes
        # i_ref while disabled (32 LUTs fewer on Spartan-6).
        command = Signal(COMMAND_LAYOUT, reset_less=True)
        frame = Cat(tx_crc.crc, command.as_value())
        index = Signal(range(FRAME_BITS))
        bit_out = frame.bit_select(index, 1)
        feedback = Signal(FEEDBACK_LAYOUT)      # shifted in, the payload's bits only
        # Cycles gone in this half period and in the gap, counted up from 0 (the flip-flops'
        # synchronous reset restarts them; no load multiplexer).
        half = Signal(range(max(divisor, 2)))
        gap = Signal(range(self.gap + 1))
        run = Signal(range(self.fault_errors + 1))     # bad frames in a row

        enabled = Signal()
        m.d.comb += enabled.eq(self.actuator.enable & self.valid & ~self.fault)
        m.d.sync += self.drive.enable.eq(enabled)
        m.d.comb += self.drive.mosi.eq(bit_out & ~self.drive.cs_n)
        m.d.comb += [tx_crc.data.eq(bit_out), rx_crc.data.eq(miso)]
        m.d.sync += self.frame_done.eq(0)

        with m.If(self.fault_clear):
            m.d.sync += [self.fault.eq(0), self.valid.eq(0), run.eq(0)]

        with m.FSM():
            with m.State("gap"):
                m.d.sync += gap.eq(gap + 1)
                with m.If(gap == self.gap):
                    m.d.sync += [
                        command.i_ref.eq(Mux(enabled, self.actuator.i_ref, 0)),
                        command.control.eq(enabled),
                        self.drive.cs_n.eq(0),
                        index.eq(FRAME_BITS - 1),
                        half.eq(0),
                        gap.eq(0),
                    ]
                    m.d.comb += [tx_crc.start.eq(1), rx_crc.start.eq(1)]
                    m.next = "low"
            with m.State("low"):
                m.d.sync += half.eq(half + 1)
                with m.If(half == divisor - 1):
                    m.d.sync += [self.drive.sclk.eq(1), half.eq(0)]
                    m.next = "high"
            with m.State("high"):
                m.d.sync += half.eq(half + 1)
                with m.If(half == divisor - 1):
                    # The end of bit ``index``: take miso, then the falling edge.
                    m.d.sync += [self.drive.sclk.eq(0), half.eq(0)]
                    m.d.comb += [rx_crc.valid.eq(1), tx_crc.valid.eq(index >= CRC.crc_width)]
                    with m.If(index >= CRC.crc_width):
                        m.d.sync += feedback.eq(Cat(miso, feedback.as_value()[:-1]))
                    with m.If(index == 0):
                        m.next = "lag"
                    with m.Else():
                        m.d.sync += index.eq(index - 1)
                        m.next = "low"
            with m.State("lag"):
                # Half a period after the last falling edge, the frame ends and is checked.
                m.d.sync += half.eq(half + 1)
                with m.If(half == divisor - 1):
                    m.d.sync += [self.drive.cs_n.eq(1), self.frame_done.eq(1)]
                    with m.If(rx_crc.match_detected):
                        m.d.sync += [self.sensor.q.eq(feedback.q), self.sensor.qd.eq(feedback.qd),
                                     run.eq(0)]
                        with m.If(~self.fault):
                            m.d.sync += self.valid.eq(1)
                    with m.Else():
                        with m.If(self.errors != (1 << ERROR_COUNTER_BITS) - 1):
                            m.d.sync += self.errors.eq(self.errors + 1)
                        with m.If(run == self.fault_errors - 1):
                            m.d.sync += [self.fault.eq(1), self.valid.eq(0)]
                        with m.Else():
                            m.d.sync += run.eq(run + 1)
                    m.next = "gap"
        return m


#: The joint port's status as the controller window reads it (port side, ``Out``): ``fault``,
#: ``valid``, ``errors`` of a :class:`JointPort` and ``present`` (1 where a port is joined,
#: :func:`linkdyn.boards.joint_pins.connect_joint_port`). A component that takes it as ``In``
#: and is joined to no port reads 0 in every field: the register map's word for "no joint
#: port" (:mod:`linkdyn.model.protocol.joint_port_map`).
JointPortStatusSignature = wiring.Signature({
    "fault": Out(1), "valid": Out(1), "present": Out(1), "errors": Out(ERROR_COUNTER_BITS)})
JointPortStatusSignature.__doc__ = (
    "The joint port's status (port side): ``fault``, ``valid``, ``present``, ``errors`` "
    "(the fields of the controller window's ``joint_port`` word).")


def status_word(status):
    """Return the 32-bit ``joint_port`` word of a :data:`JointPortStatusSignature` interface,
    its fields placed as :data:`~linkdyn.model.protocol.joint_port_map.JOINT_PORT_FIELDS` says
    (the other bits 0)."""
    parts, position = [], 0
    for field in sorted(JOINT_PORT_FIELDS, key=lambda f: f.offset):
        if field.offset > position:
            parts.append(Const(0, field.offset - position))
        parts.append(getattr(status, field.name)[:field.width])
        position = field.offset + field.width
    parts.append(Const(0, _W - position))
    return Cat(*parts)
