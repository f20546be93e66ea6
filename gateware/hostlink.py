"""The board side of the host link: UART, FIFOs and the protocol engine in one component.

::

    rx pin -> UARTReceiver -> receive FIFO -> [register] -> ProtocolEngine -> transmit FIFO
                                                                   |                |
                                                     register bus to the chain    UARTTransmitter
                                                                                    -> tx pin

The receive FIFO holds the bytes that arrive while the engine executes or replies (the UART
cannot wait); the transmit FIFO lets the engine hand over a reply at clock speed and return to
the next request, so that back-to-back STEP frames (stream mode) keep the line busy in both
directions. A stream register between the receive FIFO and the engine keeps the FIFO's block
RAM output away from the engine's logic (frame decoding, CRC): one cycle more per frame, the
same rate.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out, connect, flipped

from ..model.protocol import REPLY_HEADER_BYTES, REQUEST_HEADER_BYTES, CRC_BYTES
from .bus import RegisterBusSignature
from .protocol import ProtocolEngine
from .uart import UARTReceiver, UARTTransmitter, default_baudrate, uart_divisor

__all__ = ["HostLink"]


def _power_of_two_above(value):
    return 1 << max(4, (value - 1).bit_length())


class HostLink(wiring.Component):
    """UART and protocol engine: serial lines on one side, the register bus on the other.

    Parameters
    ----------
    n_nodes : int
        Number of nodes of the chain.
    clock_hz : int
        Clock frequency, Hz.
    baudrate : int, optional
        Line rate; default the fastest standard rate the clock makes (3 Mbaud where it can,
        :func:`~linkdyn.gateware.uart.default_baudrate`).
    divisor : int, optional
        Clock cycles per bit, instead of ``baudrate`` (simulation with tiny divisors).
    fmt : QFormat
        Node word format.
    board_id : int
        Board identifier reported by INFO.
    banks : int
        Register banks of the chain reported by INFO (1, 2 or 4).
    controllers : bool
        The chain has joint controllers (INFO CONTROLLERS; the controller window and the
        CONTROL command, :class:`~linkdyn.gateware.protocol.ProtocolEngine`).
    parents : sequence of int, optional
        The parent node of every node (INFO's PARENTS_k; docs/trees.md); default the chain.
    boards : int, optional
        The chain is distributed over ``boards`` boards (``ProtocolSpec(boards=...)``).
    local_loop : bool
        The chain is built with the local loop (INFO CONTROLLERS bit 1 with controllers,
        LOCAL_MULTIPLE; :class:`~linkdyn.gateware.protocol.ProtocolEngine`).
    rx_fifo_depth, tx_fifo_depth : int, optional
        FIFO depths, bytes; default two longest requests and one longest reply, rounded up to
        a power of two (block RAM).
    timeout_cycles, step_timeout_cycles : int, optional
        See :class:`~linkdyn.gateware.protocol.ProtocolEngine`.

    Members
    -------
    rx : In(1)
        Serial input from the host (asynchronous, idle high).
    tx : Out(1)
        Serial output to the host, idle high.
    bus : Out(RegisterBusSignature())
        Register bus toward the chain.

    Raises
    ------
    TypeError, ValueError
        If a parameter is invalid or the clock cannot make the baud rate.
    """

    rx: In(1, init=1)
    tx: Out(1, init=1)
    bus: Out(RegisterBusSignature())

    def __init__(self, n_nodes, *, clock_hz, baudrate=None, divisor=None, fmt=None,
                 board_id=0, banks=1, controllers=False, rx_fifo_depth=None, tx_fifo_depth=None, timeout_cycles=None,
                 step_timeout_cycles=None, parents=None, boards=None, local_loop=False):
        if not isinstance(clock_hz, int) or clock_hz <= 0:
            raise ValueError(f"Clock frequency must be a positive integer (Hz), not {clock_hz!r}")
        if divisor is not None:
            if baudrate is not None:
                raise ValueError("Give either baudrate or divisor, not both")
            baudrate = clock_hz // divisor
        else:
            if baudrate is None:
                baudrate = default_baudrate(clock_hz)
            divisor = uart_divisor(clock_hz, baudrate)
        self.divisor = divisor
        self.baudrate = baudrate
        self.engine = ProtocolEngine(n_nodes, fmt=fmt, clock_hz=clock_hz, baudrate=baudrate,
                                     board_id=board_id, banks=banks, controllers=controllers,
                                     timeout_cycles=timeout_cycles,
                                     step_timeout_cycles=step_timeout_cycles,
                                     parents=parents, boards=boards, local_loop=local_loop)
        self.receiver = UARTReceiver(divisor)
        self.transmitter = UARTTransmitter(divisor)
        spec = self.engine.spec
        request = REQUEST_HEADER_BYTES + spec.max_payload_bytes + CRC_BYTES
        reply = REPLY_HEADER_BYTES + spec.max_payload_bytes + CRC_BYTES
        self.rx_fifo_depth = rx_fifo_depth or _power_of_two_above(2 * request)
        self.tx_fifo_depth = tx_fifo_depth or _power_of_two_above(reply)
        for name, value in (("Receive FIFO depth", self.rx_fifo_depth),
                            ("Transmit FIFO depth", self.tx_fifo_depth)):
            if not isinstance(value, int) or value < 2:
                raise ValueError(f"{name} must be an integer of at least 2, not {value!r}")
        super().__init__()

    @property
    def spec(self):
        """ProtocolSpec: the protocol parameters of the engine."""
        return self.engine.spec

    def elaborate(self, platform):
        m = Module()
        m.submodules.receiver = receiver = self.receiver
        m.submodules.transmitter = transmitter = self.transmitter
        m.submodules.engine = engine = self.engine
        m.submodules.rx_fifo = rx_fifo = SyncFIFOBuffered(width=8, depth=self.rx_fifo_depth)
        m.submodules.tx_fifo = tx_fifo = SyncFIFOBuffered(width=8, depth=self.tx_fifo_depth)

        m.d.comb += [receiver.rx.eq(self.rx), self.tx.eq(transmitter.tx),
                     engine.uart_errors.eq(receiver.errors)]
        connect(m, receiver.stream, rx_fifo.w_stream)
        # Stream register (full rate: it takes a byte whenever it is empty or handing one over).
        rx_valid = Signal()
        rx_payload = Signal(8)
        take = ~rx_valid | engine.rx.ready
        m.d.comb += [rx_fifo.r_stream.ready.eq(take), engine.rx.valid.eq(rx_valid),
                     engine.rx.payload.eq(rx_payload)]
        with m.If(take):
            m.d.sync += [rx_valid.eq(rx_fifo.r_stream.valid),
                         rx_payload.eq(rx_fifo.r_stream.payload)]
        connect(m, engine.tx, tx_fifo.w_stream)
        connect(m, tx_fifo.r_stream, transmitter.stream)
        connect(m, flipped(self.bus), engine.bus)
        return m
