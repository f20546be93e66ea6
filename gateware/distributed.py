"""The distributed chain: n actuator board cores (:class:`~linkdyn.gateware.actuator.ActuatorCore`,
one LinkDyn node each) joined by line models, behind the same register-bus target as the
single-FPGA :class:`~linkdyn.gateware.chain.LinkDynChain` (``docs/distributed.md``).

The protocol engine and the host work unchanged on it: the bus at board 0 has the chain's
semantics (``docs/chain.md``, *The register bus*); what differs is the time an access to board
k takes (it travels k hops and back) and the faults a line can have. Each hop has one
:class:`LineModel` per direction: a delay in cycles, bit errors at a given rate from a seeded
xorshift generator, a cut (the receiver sees 0) and noise (random bits), both controlled by
ports, so a testbench (or a Verilator top) can cut and restore a hop at any cycle.

One clock for all boards (the links' receive PHYs run in ``sync``); the links themselves are
tested with two clocks 0.3 % apart in ``tests/gateware/test_link.py``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from linkdyn.model.protocol import MAX_NODES, ProtocolSpec

from .actuator import ActuatorCore, check_policy
from .bus import RegisterBusSignature
from linkdyn.model.microprogram import node_formats

__all__ = ["LineModel", "DistributedChain", "xorshift32"]


def xorshift32(state):
    """Return the next state of Marsaglia's xorshift32 generator (13, 17, 5) (Python
    reference of :class:`LineModel`'s generator).

    Parameters
    ----------
    state : int
        Non-zero 32-bit state.
    """
    state ^= (state << 13) & 0xFFFFFFFF
    state ^= state >> 17
    state ^= (state << 5) & 0xFFFFFFFF
    return state


class LineModel(wiring.Component):
    """One direction of a board-to-board line, for simulation.

    Parameters
    ----------
    bits : int
        Bits per cycle (the link's ``bits``).
    delay : int
        Cycles from ``tx`` to ``rx`` (>= 1: the wire and the I/O registers).
    ber : float
        Probability that a bit is flipped (0 .. 0.5): bit j of a cycle is flipped when lane
        j's xorshift32 state is below ``round(ber * 2**32)``.
    seed : int
        Seed of the generators (lane j starts from a state derived from ``seed`` and j).

    Members
    -------
    tx : In(bits)
        The sender's serial data.
    rx : Out(bits)
        What the receiver sees.
    cut : In(1)
        The line is cut: ``rx`` is 0.
    noise : In(1)
        ``rx`` is random bits (the generator's), not the signal.
    flipped : Out(32)
        Bits flipped so far.

    Raises
    ------
    TypeError, ValueError
        If a parameter is not of its type or out of range.
    """

    def __init__(self, *, bits=2, delay=3, ber=0.0, seed=1):
        for name, value, low, high in (("Bits per cycle", bits, 1, 10), ("Delay", delay, 1, 4096),
                                       ("Seed", seed, 0, (1 << 32) - 1)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if not low <= value <= high:
                raise ValueError(f"{name} must be {low} .. {high}, not {value!r}")
        if not isinstance(ber, (int, float)) or not 0 <= ber <= 0.5:
            raise ValueError(f"Bit-error rate must be a number in 0 .. 0.5, not {ber!r}")
        self._bits = bits
        self._delay = delay
        self._threshold = round(ber * (1 << 32))
        self._seeds = []
        for lane in range(bits):
            state = (seed * 0x9E3779B1 + lane * 0x85EBCA6B + 1) & 0xFFFFFFFF
            self._seeds.append(state or 1)
        super().__init__({
            "tx": In(bits), "rx": Out(bits), "cut": In(1), "noise": In(1), "flipped": Out(32),
        })

    @property
    def seeds(self):
        """list of int: the generators' initial states, per lane."""
        return list(self._seeds)

    @property
    def threshold(self):
        """int: a lane's bit flips when its generator's state is below this."""
        return self._threshold

    def elaborate(self, platform):
        m = Module()
        stages = [Signal(self._bits, name=f"stage_{k}") for k in range(self._delay)]
        m.d.sync += stages[0].eq(self.tx)
        for a, b in zip(stages, stages[1:]):
            m.d.sync += b.eq(a)
        states = [Signal(32, init=seed, name=f"lfsr_{lane}")
                  for lane, seed in enumerate(self._seeds)]
        flips = []
        for state in states:
            x1 = state ^ (state << 13)[:32]
            x2 = x1 ^ (x1 >> 17)
            x3 = x2 ^ (x2 << 5)[:32]
            m.d.sync += state.eq(x3)
            flips.append(state < self._threshold if self._threshold else 0)
        flip = Cat(*flips)
        random_bits = Cat(*(state[31] for state in states))
        with m.If(self.cut):
            m.d.comb += self.rx.eq(0)
        with m.Elif(self.noise):
            m.d.comb += self.rx.eq(random_bits)
        with m.Else():
            m.d.comb += self.rx.eq(stages[-1] ^ flip)
            if self._threshold:
                count = sum(f.as_unsigned() for f in flips)
                m.d.sync += self.flipped.eq(self.flipped + count)
        return m


class DistributedChain(wiring.Component):
    """n actuator board cores in a row joined by line models, with the chain's register bus.

    Parameters
    ----------
    n : int
        Number of boards (one node each), ``1 .. MAX_NODES``.
    fmt : QFormat
        Word format (default Q15.16).
    bits : int
        Bits per cycle of the links (2: DDR I/O, 100 Mbit/s at 50 MHz; 5: a faster simulation).
    delay : int
        Line delay in cycles, per hop and direction.
    ber : float
        Bit-error rate of every line.
    seed : int
        Seed of the lines' bit errors (line 2h is hop h downstream, 2h+1 upstream).
    timeout : int
        Cycles after which the base answers an access with ``error``
        (:class:`~linkdyn.gateware.actuator.ActuatorCore`).
    link_parameters : dict, optional
        ``window``, ``ack_timeout``, ``down_timeout``, ``burst`` of every link
        (:class:`~linkdyn.gateware.actuator.ActuatorCore`; the default bursts are
        :data:`~linkdyn.gateware.actuator.LINK_BURST`).
    cordic_step_cycles : int
        Of the nodes.
    node_target : callable, optional
        Every board's bus target in place of the node's own (``ActuatorCore(node_target=)``):
        the joint controller beside each node
        (:class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain`).
    policy : str
        Update policy, ``"sequential"`` (default) or ``"pipelined"`` (the next update starts
        before the previous one has finished on every board; the bus semantics of the
        pipelined :class:`~linkdyn.gateware.chain.LinkDynChain`, ``docs/distributed.md``).
    banks : int, optional
        Register banks of the nodes and mailbox slots: 1 sequential; 2 or 4 pipelined (default
        :data:`~linkdyn.model.microprogram.BANKS`).

    Members
    -------
    bus : In(RegisterBusSignature())
        As :class:`~linkdyn.gateware.chain.LinkDynChain`'s.
    busy : Out(1)
    overflow_sticky : Out(n)
    cut : In(n - 1)
        Bit h: hop h (board h to h+1) is cut, both directions.
    noise : In(n - 1)
        Bit h: both lines of hop h carry random bits.
    link_down : Out(n - 1)
        The base's LINK_DOWN.

    Attributes
    ----------
    cores : list of ActuatorCore
    nodes : list of LinkDynNode
        The cores' nodes, base first.
    lines : list of (LineModel, LineModel)
        Per hop: downstream, upstream.
    spec : ProtocolSpec
    banks : int
        Register banks (1: the sequential policy).
    max_in_flight : int
        Updates in flight at most (``2 * banks`` when pipelined).
    policy : str

    Raises
    ------
    TypeError, ValueError
        For a bad parameter.
    """

    def __init__(self, n, fmt=None, *, bits=2, delay=3, ber=0.0, seed=1, timeout=1 << 16,
                 link_parameters=None, cordic_step_cycles=2, node_target=None,
                 policy="sequential", banks=None):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"Board count must be an integer, not {n!r}")
        if not 1 <= n <= MAX_NODES:
            raise ValueError(f"Board count must be 1 .. {MAX_NODES}, not {n!r}")
        fmt = node_formats(fmt)
        self._n = n
        self.spec = ProtocolSpec(n, fmt)
        self.policy, self.banks = check_policy(policy, banks)
        self.max_in_flight = 2 * self.banks if self.policy == "pipelined" else 1
        self.cores = [
            ActuatorCore(fmt, base=i == 0, last=i == n - 1, nodes=n if i == 0 else None,
                         bits=bits, timeout=timeout, link_parameters=link_parameters,
                         cordic_step_cycles=cordic_step_cycles, node_target=node_target,
                         policy=self.policy, banks=self.banks)
            for i in range(n)
        ]
        self.nodes = [core.node for core in self.cores]
        self.lines = [(LineModel(bits=bits, delay=delay, ber=ber, seed=seed + 2 * h),
                       LineModel(bits=bits, delay=delay, ber=ber, seed=seed + 2 * h + 1))
                      for h in range(n - 1)]
        hops = max(n - 1, 1)
        super().__init__({
            "bus": In(RegisterBusSignature()),
            "busy": Out(1),
            "overflow_sticky": Out(n),
            "cut": In(hops),
            "noise": In(hops),
            "link_down": Out(hops),
        })

    @property
    def n(self):
        """int: number of boards (nodes)."""
        return self._n

    def elaborate(self, platform):
        m = Module()
        for i, core in enumerate(self.cores):
            m.submodules[f"board{i}"] = core
        base = self.cores[0]
        wiring.connect(m, wiring.flipped(self.bus), base.bus)
        m.d.comb += [self.busy.eq(base.busy), self.overflow_sticky.eq(base.overflow_sticky),
                     self.link_down.eq(base.link_down)]
        for h, (down_line, up_line) in enumerate(self.lines):
            m.submodules[f"line{h}_down"] = down_line
            m.submodules[f"line{h}_up"] = up_line
            proximal, distal = self.cores[h], self.cores[h + 1]
            m.d.comb += [
                down_line.tx.eq(proximal.down_tx), distal.up_rx.eq(down_line.rx),
                up_line.tx.eq(distal.up_tx), proximal.down_rx.eq(up_line.rx),
            ]
            for line in (down_line, up_line):
                m.d.comb += [line.cut.eq(self.cut[h]), line.noise.eq(self.noise[h])]
        return m
