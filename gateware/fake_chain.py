"""A stand-in for the chain behind the register bus, for testing the host link.

:class:`FakeChain` is a small memory-backed register-bus target that implements the chain's
side of the protocol (:mod:`linkdyn.model.protocol`): the node register maps with their access
rules and the chain-owned words of the control block (CONTROL, STATUS, OVERFLOW, ...,
RESULT_SELECT, see ``docs/protocol.md``). Its "update" is not the inverse dynamics but a
simple, exactly predictable function of the registers a STEP and a LOAD_ROBOT write::

    tau_i = saturate(sum of node i's 9 input words + m_i + p_ddot_in_z_i)   (signed words)

with the node's overflow bit set when the sum saturates (:func:`summed_addresses`). It is
synthesisable: a board can be built around it (``--chain fake``) to test the host link alone.
:class:`linkdyn.sim.fake_chain_model.FakeChainModel` is the same target in Python, so that the
protocol's reference engine can predict every reply of the gateware engine.
"""

from amaranth import *
from amaranth.hdl import MemoryData
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In

from ..model.protocol import (
    CONTROL_CLEAR, CONTROL_NODE, CONTROL_REGISTERS, CONTROL_START, RESULT_FOLLOW,
    RESULT_SELECT, STATUS_BUSY, STATUS_DONE, STATUS_OVERFLOW, ProtocolSpec,
)
from .bus import RegisterBusSignature

__all__ = ["FakeChain", "NODE_STRIDE", "summed_addresses"]

#: Words of the fake register memory per node (node i at ``i * NODE_STRIDE``).
NODE_STRIDE = 128

_ADDR = {reg.name: reg.address for reg in CONTROL_REGISTERS}


def summed_addresses(spec):
    """Return the register addresses whose words a fake update sums into ``tau`` (the inputs,
    ``m`` and ``p_ddot_in_z``)."""
    rmap = spec.registers
    return ([reg.address for reg in rmap.of_kind("input")]
            + [rmap["m"].address, rmap["p_ddot_in_z"].address])


class FakeChain(wiring.Component):
    """Memory-backed register-bus target standing in for ``LinkDynChain`` in host-link tests.

    Parameters
    ----------
    n_nodes : int
        Number of nodes.
    fmt : QFormat
        Word format (register map).
    latency : int
        Cycles an update keeps STATUS.busy high (LATENCY_CYCLES); at least the cycles the
        fake update needs (``13 n + 2``).
    wait_states : bool
        Answer every access after 0 .. 3 extra cycles (pseudo-random), to exercise the
        initiator's handshake.

    Members
    -------
    bus : In(RegisterBusSignature())
        The register bus, target side.
    force_error : In(1)
        Refuse every access (tests the engine's BUS_ERROR path).
    hang : In(1)
        Never finish a started update (tests the engine's TIMEOUT path).

    Attributes
    ----------
    registers : MemoryData
        The node register words, node ``i`` at ``i * NODE_STRIDE``; readable in simulation.
    """

    bus: In(RegisterBusSignature())
    force_error: In(1)
    hang: In(1)

    def __init__(self, n_nodes, *, fmt=None, latency=None, wait_states=True):
        self.spec = ProtocolSpec(n_nodes, fmt)
        minimum = 13 * n_nodes + 2
        if latency is None:
            latency = minimum + 8
        if not isinstance(latency, int) or latency < minimum:
            raise ValueError(f"Latency must be an integer of at least {minimum} cycles, "
                             f"not {latency!r}")
        self.latency = latency
        self.wait_states = bool(wait_states)
        self.registers = MemoryData(shape=32, depth=n_nodes * NODE_STRIDE, init=[])
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        n = spec.n_nodes
        bus = self.bus

        m.submodules.memory = memory = Memory(data=self.registers)
        rd = memory.read_port()
        wr = memory.write_port()

        busy = Signal()
        done = Signal()
        overflow = Signal(32)
        overflow_sticky = Signal(32)
        latency = Signal(32)
        interval = Signal(32)
        since_start = Signal(32)
        update_count = Signal(32)
        m.d.sync += since_start.eq(since_start + (since_start != 0xFFFFFFFF))

        # -- bus side ---------------------------------------------------------------------------
        lfsr = Signal(16, init=0xACE1)
        m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        delay = Signal(2)
        index = Signal(range(n * NODE_STRIDE))
        m.d.comb += index.eq(bus.node * NODE_STRIDE + bus.addr)
        is_node = bus.node < n
        exists = Signal()
        writable = Signal()
        with m.If(is_node):
            m.d.comb += [exists.eq(bus.addr < spec.node_map_size),
                         writable.eq(bus.addr < Mux(bus.node == 0, spec.writable_end_node0,
                                                    spec.writable_end))]
        with m.Elif(bus.node == CONTROL_NODE):
            with m.Switch(bus.addr):
                for reg in spec.control_registers:
                    if reg.owner == "chain":
                        with m.Case(reg.address):
                            m.d.comb += [exists.eq(1), writable.eq(reg.writable)]

        # RESULT_SELECT as the sequential chain has it (one update kept: the last one, the
        # only number selectable, and the one shown whatever is selected).
        select_follow = Signal(init=1)
        select_number = Signal(31)
        is_select = (bus.node == CONTROL_NODE) & (bus.addr == RESULT_SELECT)
        select_valid = (bus.wdata[31] | ((bus.wdata[:31] != 0)
                                         & (bus.wdata[:31] == update_count)))
        refuse = (self.force_error | ~exists | (bus.we & (~writable | busy))
                  | (bus.we & is_select & ~select_valid))

        control_value = Signal(32)
        with m.Switch(bus.addr):
            with m.Case(RESULT_SELECT):
                m.d.comb += control_value.eq(Mux(select_follow, RESULT_FOLLOW, select_number))
            for name, value in (("STATUS", Cat(busy, done, overflow_sticky.any())),
                                ("OVERFLOW", overflow), ("OVERFLOW_STICKY", overflow_sticky),
                                ("LATENCY_CYCLES", latency), ("INTERVAL_CYCLES", interval),
                                ("UPDATE_COUNT", update_count)):
                with m.Case(_ADDR[name]):
                    m.d.comb += control_value.eq(value)
        assert STATUS_BUSY == 1 and STATUS_DONE == 2 and STATUS_OVERFLOW == 4

        start = Signal()
        seq_read_addr = Signal.like(index)
        seq_write = Signal()
        seq_write_addr = Signal.like(index)
        seq_write_data = Signal(32)

        with m.FSM(name="bus_fsm"):
            with m.State("IDLE"):
                with m.If(bus.valid):
                    m.d.sync += delay.eq(lfsr[:2] if self.wait_states else 0)
                    m.next = "DELAY"
            with m.State("DELAY"):
                with m.If(delay != 0):
                    m.d.sync += delay.eq(delay - 1)
                with m.Elif(refuse):
                    m.d.comb += [bus.ready.eq(1), bus.error.eq(1)]
                    m.next = "IDLE"
                with m.Elif(bus.node == CONTROL_NODE):
                    m.d.comb += [bus.ready.eq(1),
                                 bus.rdata.eq(Mux(bus.we, bus.wdata, control_value))]
                    with m.If(bus.we & is_select):
                        m.d.sync += [select_follow.eq(bus.wdata[31]),
                                     select_number.eq(bus.wdata[:31])]
                    with m.Elif(bus.we):
                        with m.If((bus.wdata & CONTROL_CLEAR).any()):
                            m.d.sync += overflow_sticky.eq(0)
                        with m.If((bus.wdata & CONTROL_START).any()):
                            m.d.comb += start.eq(1)
                    m.next = "IDLE"
                with m.Elif(bus.we):
                    m.d.comb += [bus.ready.eq(1), bus.rdata.eq(bus.wdata),
                                 wr.addr.eq(index), wr.data.eq(bus.wdata), wr.en.eq(1)]
                    m.next = "IDLE"
                with m.Elif(~busy):
                    # Node reads wait while an update runs (it owns the read port).
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += [bus.ready.eq(1), bus.rdata.eq(rd.data)]
                m.next = "IDLE"

        m.d.comb += rd.addr.eq(Mux(busy, seq_read_addr, index))
        with m.If(seq_write):
            m.d.comb += [wr.addr.eq(seq_write_addr), wr.data.eq(seq_write_data), wr.en.eq(1)]

        # -- the fake update --------------------------------------------------------------------
        summed = summed_addresses(spec)
        node = Signal(range(n))
        step = Signal(range(len(summed) + 2))
        acc = Signal(signed(40))
        cycles = Signal(32)
        new_overflow = Signal(32)
        computing = Signal()
        word_min, word_max = -(1 << 31), (1 << 31) - 1

        with m.Switch(step):
            for k, addr in enumerate(summed):
                with m.Case(k):
                    m.d.comb += seq_read_addr.eq(node * NODE_STRIDE + addr)

        with m.If(start):
            m.d.sync += [busy.eq(1), done.eq(0), cycles.eq(0), interval.eq(since_start),
                         since_start.eq(1), node.eq(0), step.eq(0), acc.eq(0),
                         new_overflow.eq(0), computing.eq(1)]
        with m.Elif(busy):
            m.d.sync += cycles.eq(cycles + 1)
            with m.If(computing):
                m.d.sync += step.eq(step + 1)
                with m.If((step >= 1) & (step <= len(summed))):
                    m.d.sync += acc.eq(acc + rd.data.as_signed())
                with m.If(step == len(summed) + 1):
                    saturated = (acc > word_max) | (acc < word_min)
                    m.d.comb += [seq_write.eq(1),
                                 seq_write_addr.eq(node * NODE_STRIDE + spec.tau_address),
                                 seq_write_data.eq(Mux(acc > word_max, word_max,
                                                       Mux(acc < word_min, word_min, acc)))]
                    with m.If(saturated):
                        m.d.sync += new_overflow.eq(new_overflow | (1 << node))
                    m.d.sync += [step.eq(0), acc.eq(0)]
                    with m.If(node == n - 1):
                        m.d.sync += computing.eq(0)
                    with m.Else():
                        m.d.sync += node.eq(node + 1)
            with m.Elif(~self.hang & (cycles >= self.latency - 1)):
                m.d.sync += [busy.eq(0), done.eq(1), latency.eq(cycles + 1),
                             update_count.eq(update_count + 1), overflow.eq(new_overflow),
                             overflow_sticky.eq(overflow_sticky | new_overflow)]

        return m
