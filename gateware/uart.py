"""UART (8N1) receiver and transmitter with stream interfaces.

The structure follows amaranth-stdio's ``serial.py``: separate receiver and transmitter
components, a fixed clock ``divisor`` (clock cycles per bit), the receive input passed through
an :class:`~amaranth.lib.cdc.FFSynchronizer`, and error flags as a
:class:`~amaranth.lib.data.StructLayout`. Bytes leave the receiver and enter the transmitter as :mod:`amaranth.lib.stream` payloads.
:func:`uart_divisor` computes a divisor from the clock and the baud rate and refuses a rate the
clock cannot make closely enough.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from ..model.protocol import DEFAULT_BAUDRATE

__all__ = ["MIN_DIVISOR", "UARTErrors", "uart_divisor", "default_baudrate", "UARTReceiver",
           "UARTTransmitter"]

#: The smallest divisor (clock cycles per bit): the receiver needs a middle of the bit.
MIN_DIVISOR = 4

#: Error events of the receiver, each a one-cycle pulse.
UARTErrors = data.StructLayout({
    "frame": 1,     # the stop bit was 0: the byte is dropped
    "overflow": 1,  # a byte arrived while the previous one was still not taken: it is dropped
})

#: Line rates tried by :func:`default_baudrate`, fastest first.
STANDARD_BAUDRATES = (3_000_000, 2_000_000, 1_000_000, 921_600, 460_800, 230_400, 115_200)


def uart_divisor(clk_freq, baudrate=DEFAULT_BAUDRATE, *, max_error=0.015):
    """Return the divisor (clock cycles per bit) for a clock and a baud rate.

    Parameters
    ----------
    clk_freq : int or float
        Clock frequency, Hz.
    baudrate : int or float
        Line rate, baud.
    max_error : float
        Largest relative error of the resulting rate allowed (default 1.5 %; an 8N1 receiver
        that samples in the middle of the bits tolerates about 4 % between the two ends).

    Returns
    -------
    int
        ``round(clk_freq / baudrate)``.

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If an argument is not positive, the divisor is below :data:`MIN_DIVISOR`, or the
        resulting rate is off by more than ``max_error``.
    """
    for name, value in (("Clock frequency", clk_freq), ("Baud rate", baudrate),
                        ("Maximum error", max_error)):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"{name} must be a number, not {value!r}")
        if not value > 0:
            raise ValueError(f"{name} must be positive, not {value!r}")
    divisor = round(clk_freq / baudrate)
    if divisor < MIN_DIVISOR:
        raise ValueError(f"A {clk_freq:g} Hz clock cannot make {baudrate:g} baud: the divisor "
                         f"would be {clk_freq / baudrate:.3g}, at least {MIN_DIVISOR} is needed")
    error = abs(clk_freq / divisor - baudrate) / baudrate
    if error > max_error:
        raise ValueError(f"A {clk_freq:g} Hz clock makes {clk_freq / divisor:.6g} baud instead "
                         f"of {baudrate:g} (divisor {divisor}): {error:.2%} off, more than "
                         f"{max_error:.2%}")
    return divisor


def default_baudrate(clk_freq, *, max_error=0.015):
    """Return the fastest of :data:`STANDARD_BAUDRATES` the clock makes within ``max_error``.

    Raises
    ------
    ValueError
        If the clock makes none of them.
    """
    for baudrate in STANDARD_BAUDRATES:
        try:
            uart_divisor(clk_freq, baudrate, max_error=max_error)
        except ValueError:
            continue
        return baudrate
    raise ValueError(f"A {clk_freq:g} Hz clock makes none of the baud rates "
                     f"{STANDARD_BAUDRATES}")


def _check_divisor(divisor):
    if not isinstance(divisor, int) or isinstance(divisor, bool):
        raise TypeError(f"Divisor must be an integer, not {divisor!r}")
    if divisor < MIN_DIVISOR:
        raise ValueError(f"Divisor must be at least {MIN_DIVISOR}, not {divisor!r}")


class UARTReceiver(wiring.Component):
    """UART receiver, 8 data bits, no parity, 1 stop bit, least significant bit first.

    The line passes a two-stage :class:`~amaranth.lib.cdc.FFSynchronizer` (idle high). A falling
    edge starts a byte; every bit is sampled once in its middle, counted from the edge; the
    start bit is checked in its middle (a shorter low pulse is ignored). The receiver returns to
    idle in the middle of the stop bit, so it tolerates a rate mismatch of about 4 % (half a bit
    over 9.5 bits, minus the edge uncertainty of a clock cycle).

    Parameters
    ----------
    divisor : int
        Clock cycles per bit, at least :data:`MIN_DIVISOR` (see :func:`uart_divisor`).

    Members
    -------
    rx : In(1)
        The serial input (asynchronous), idle high.
    stream : Out(stream.Signature(8))
        Received bytes; ``valid`` is held until ``ready``.
    errors : Out(UARTErrors)
        One-cycle error pulses: ``frame`` (stop bit 0, byte dropped; the receiver then waits
        for the line to go high), ``overflow`` (a byte completed while the previous one was not
        taken yet, the new byte is dropped).

    Raises
    ------
    TypeError, ValueError
        If ``divisor`` is not an integer of at least :data:`MIN_DIVISOR`.
    """

    rx: In(1, init=1)
    stream: Out(stream.Signature(8))
    errors: Out(UARTErrors)

    def __init__(self, divisor):
        _check_divisor(divisor)
        self.divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()

        line = Signal(init=1)
        m.submodules.synchronizer = FFSynchronizer(self.rx, line, init=1)

        # The cycles waited in a state, up from 0 to the state's last (half a bit in START, a
        # bit in DATA and STOP): restarted by the flip-flops' synchronous reset, no load
        # multiplexer.
        timer = Signal(range(self.divisor))
        half = (self.divisor - 1) // 2
        full = self.divisor - 1
        bit = Signal(range(8))
        shift = Signal(8)

        with m.If(self.stream.ready):
            m.d.sync += self.stream.valid.eq(0)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += timer.eq(0)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer != half):
                    m.d.sync += timer.eq(timer + 1)
                with m.Elif(line):
                    m.next = "IDLE"     # a glitch, not a start bit
                with m.Else():
                    m.d.sync += [timer.eq(0), bit.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != full):
                    m.d.sync += timer.eq(timer + 1)
                with m.Else():
                    m.d.sync += [shift.eq(Cat(shift[1:], line)), bit.eq(bit + 1),
                                 timer.eq(0)]
                    with m.If(bit == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer != full):
                    m.d.sync += timer.eq(timer + 1)
                with m.Elif(line):
                    with m.If(self.stream.valid & ~self.stream.ready):
                        m.d.comb += self.errors.overflow.eq(1)
                    with m.Else():
                        m.d.sync += [self.stream.payload.eq(shift), self.stream.valid.eq(1)]
                    m.next = "IDLE"
                with m.Else():
                    m.d.comb += self.errors.frame.eq(1)
                    m.next = "BREAK"
            with m.State("BREAK"):
                with m.If(line):
                    m.next = "IDLE"

        return m


class UARTTransmitter(wiring.Component):
    """UART transmitter, 8 data bits, no parity, 1 stop bit, least significant bit first.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit, at least :data:`MIN_DIVISOR` (see :func:`uart_divisor`).

    Members
    -------
    stream : In(stream.Signature(8))
        Bytes to send; one is taken (``ready``) whenever the transmitter is idle.
    tx : Out(1)
        The serial output, registered, idle high.
    busy : Out(1)
        A byte is being sent.

    Raises
    ------
    TypeError, ValueError
        If ``divisor`` is not an integer of at least :data:`MIN_DIVISOR`.
    """

    stream: In(stream.Signature(8))
    tx: Out(1, init=1)
    busy: Out(1)

    def __init__(self, divisor):
        _check_divisor(divisor)
        self.divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()

        # The cycles waited in a state, up from 0 to the state's last (a bit in SEND; in STOP a
        # bit less the cycle IDLE takes of it): restarted by the flip-flops' synchronous reset.
        timer = Signal(range(self.divisor))
        full = self.divisor - 1
        stop = max(0, self.divisor - 2)
        bits = Signal(range(9))
        # Data LSB first, then the stop bit; shifted out from the bottom.
        frame = Signal(9)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.stream.ready.eq(1)
                with m.If(self.stream.valid):
                    m.d.sync += [
                        self.tx.eq(0),  # start bit
                        frame.eq(Cat(self.stream.payload, C(1, 1))),
                        bits.eq(0),
                        timer.eq(0),
                    ]
                    m.next = "SEND"
            with m.State("SEND"):
                m.d.comb += self.busy.eq(1)
                with m.If(timer != full):
                    m.d.sync += timer.eq(timer + 1)
                with m.Else():
                    m.d.sync += [
                        self.tx.eq(frame[0]),
                        frame.eq(frame[1:]),
                        timer.eq(0),
                        bits.eq(bits + 1),
                    ]
                    with m.If(bits == 8):
                        # The stop bit went out; IDLE takes one cycle of it.
                        m.next = "STOP"
            with m.State("STOP"):
                m.d.comb += self.busy.eq(1)
                with m.If(timer != stop):
                    m.d.sync += timer.eq(timer + 1)
                with m.Else():
                    m.next = "IDLE"

        return m
