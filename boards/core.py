"""The board-independent top level: UART host link, the chain of LinkDyn nodes, status LEDs.

Every board top (:mod:`linkdyn.boards`) and the simulated board (:mod:`linkdyn.sim`) instantiate
:class:`BoardCore`; a board only adds its clock, reset synchroniser and pins.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from linkdyn.gateware.controller import ActuatorSignature, SensorSignature
from linkdyn.gateware.hostlink import HostLink
from linkdyn.gateware.joint_port import JointPortStatusSignature

__all__ = ["BoardCore", "LED_COUNT", "heartbeat"]

#: Status LEDs driven by the core.
LED_COUNT = 4


def heartbeat(m, clock_hz):
    """Add a heartbeat to module ``m`` and return its signal: toggles every half second of a
    ``clock_hz`` clock (an LED blinks at about 1 Hz)."""
    # An up-counter that returns to 0 by the flip-flops' synchronous reset (its incrementer
    # and two constant comparisons need few LUTs; a loaded down-counter needs two per bit).
    period = max(1, clock_hz // 2)
    count = Signal(range(max(2, period)), name="heartbeat")
    beat = Signal(name="beat")
    m.d.sync += count.eq(count + 1)
    with m.If(count == period - 1):
        m.d.sync += count.eq(0)
    with m.If(count == 0):
        m.d.sync += beat.eq(~beat)
    return beat


class BoardCore(wiring.Component):
    """UART host link + chain of nodes + status LEDs.

    Parameters
    ----------
    nodes : int
        Number of LinkDyn nodes (robot joints), 1 to 32.
    clock_hz : int
        Clock frequency of the core, Hz.
    baudrate : int, optional
        UART baud rate (default: 3 Mbaud where the clock allows, see
        :class:`~linkdyn.gateware.hostlink.HostLink`).
    divisor : int, optional
        UART divisor instead of ``baudrate`` (simulation-friendly small values).
    fmt : QFormat
        Word format of the nodes (default Q15.16).
    board_id : int
        Board identifier reported by the build info (BOARD_ID); the build info also reports the
        chain's register banks (BANKS, the chain's ``banks``, 1 for a chain without).
    chain : wiring.Component, optional
        The register-bus target; default :class:`~linkdyn.gateware.chain.LinkDynChain`
        ``(nodes, fmt=fmt)``, with ``controllers``
        :class:`~linkdyn.gateware.controlled_chain.ControlledChain` ``(nodes, fmt=fmt)``.
        Tests may pass a stand-in. A tree of nodes (``LinkDynChain(n, parents=...)``) reports
        its ``parents`` through INFO (PARENTS_k).
    controllers : bool
        A joint controller beside every node (paper Fig. 7): the chain is a
        :class:`~linkdyn.gateware.controlled_chain.ControlledChain` and the protocol has the
        controller window and the CONTROL command (``ProtocolSpec(controllers=True)``); its
        ``sensor`` / ``actuator`` ports are the core's (members below).
    boards : int, optional
        The chain is distributed, one node per board (``boards == nodes``): ``chain`` is a
        :class:`~linkdyn.gateware.distributed.DistributedChain` (default
        ``DistributedChain(nodes, fmt=fmt)``) and the protocol has LINK_DOWN, BOARDS and the
        link window (``ProtocolSpec(boards=...)``); the chain's line controls are the core's
        ``link_cut`` / ``link_noise`` (members below).
    local_loop : bool
        With ``controllers``: the chain is built with the local loop (paper Sect. 3.1, the
        third update policy; ``ControlledChain(nodes, fmt=fmt, local_loop=True)``): INFO's
        CONTROLLERS reads 3 (bit 1: the local loop), LOCAL_MULTIPLE sets the control steps per
        chain update and CONTROL.local starts a local update (``ProtocolSpec(local_loop=
        True)``). A ``chain`` passed in brings its own ``local_loop``.

    Members
    -------
    rx : In(1)
        UART receive line (idle high); synchronised inside.
    tx : Out(1)
        UART transmit line (idle high).
    leds : Out(4)
        0: heartbeat (about 1 Hz), 1: host link busy (a byte seen recently), 2: a node
        overflowed since the last clear, 3: chain busy.
    sensor : In(SensorSignature).array(nodes)
        With ``controllers`` only: joint i's measured ``q`` (rad), ``qd`` (rad/s), Q15.16, to
        the chain's ``sensor[i]`` (pins, or a plant in simulation).
    actuator : Out(ActuatorSignature).array(nodes)
        With ``controllers`` only: joint i's current reference ``i_ref`` (A, Q15.16) and
        ``enable``, from the chain's ``actuator[i]``.
    joint_port : In(JointPortStatusSignature).array(nodes)
        With ``controllers`` only: joint i's joint-port status, to the chain's
        ``joint_port[i]`` (the window word ``joint_port``; a board top joins its ports here,
        :func:`~linkdyn.boards.joint_pins.connect_joint_port`; undriven it reads 0, no port).
    link_cut, link_noise : In(max(nodes - 1, 1))
        With ``boards`` only: the chain's ``cut`` and ``noise`` (bit h: hop h from board h to
        h+1), for a simulation's line faults.

    Raises
    ------
    ValueError
        If ``nodes`` is not an integer in 1..32 or the UART settings are impossible, or
        ``local_loop`` is asked without ``controllers``, with ``boards`` or with a ``chain``
        built without it.
    TypeError
        If ``controllers`` or ``local_loop`` is not a bool.
    """

    def __init__(self, nodes, *, clock_hz, baudrate=None, divisor=None, fmt=None,
                 board_id=0, chain=None, controllers=False, boards=None, local_loop=False):
        if not isinstance(nodes, int) or not 1 <= nodes <= 32:
            raise ValueError(f"Node count must be an integer in 1..32, not {nodes!r}")
        self.nodes = nodes
        self.clock_hz = clock_hz
        self.fmt = fmt
        if not isinstance(controllers, bool):
            raise TypeError(f"controllers must be a bool, not {controllers!r}")
        self.controllers = controllers
        if not isinstance(local_loop, bool):
            raise TypeError(f"local_loop must be a bool, not {local_loop!r}")
        if local_loop and not controllers:
            raise ValueError("the local loop is built with joint controllers (controllers=True): "
                             "INFO reports it beside them (CONTROLLERS bit 1)")
        if local_loop and boards is not None:
            raise ValueError("the local loop is built into a chain on one FPGA, not a "
                             "distributed one (boards)")
        if local_loop and chain is not None and not getattr(chain, "local_loop", False):
            raise ValueError(f"local_loop=True needs a chain built with the local loop, not "
                             f"{type(chain).__name__} without it")
        if boards is not None:
            if boards != nodes:
                raise ValueError(f"A distributed chain has one node per board: {nodes} nodes "
                                 f"need boards={nodes}, not {boards!r}")
            if chain is None and controllers:
                from linkdyn.gateware.controlled_actuator import ControlledDistributedChain
                chain = ControlledDistributedChain(nodes, fmt=fmt)
            elif chain is None:
                from linkdyn.gateware.distributed import DistributedChain
                chain = DistributedChain(nodes, fmt=fmt)
        self.boards = boards
        if chain is None and controllers:
            from linkdyn.gateware.controlled_chain import ControlledChain
            chain = ControlledChain(nodes, fmt=fmt, local_loop=local_loop)
        elif chain is None:
            from linkdyn.gateware.chain import LinkDynChain
            chain = LinkDynChain(nodes, fmt=fmt)
        self.chain = chain
        self.local_loop = bool(getattr(chain, "local_loop", False))
        # A chain without banks (the FakeChain stand-in) has one set of input registers.
        self.hostlink = HostLink(nodes, clock_hz=clock_hz, baudrate=baudrate, divisor=divisor,
                                 fmt=fmt, board_id=board_id, banks=getattr(chain, "banks", 1),
                                 controllers=controllers, boards=boards,
                                 parents=getattr(chain, "parents", None),
                                 local_loop=self.local_loop)
        members = {"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(LED_COUNT)}
        if boards is not None:
            members["link_cut"] = In(max(nodes - 1, 1))
            members["link_noise"] = In(max(nodes - 1, 1))
        if controllers:
            members["sensor"] = In(SensorSignature).array(nodes)
            members["actuator"] = Out(ActuatorSignature).array(nodes)
            members["joint_port"] = In(JointPortStatusSignature).array(nodes)
        super().__init__(members)

    @property
    def baudrate(self):
        """int: the UART baud rate."""
        return self.hostlink.baudrate

    def elaborate(self, platform):
        m = Module()
        m.submodules.hostlink = hostlink = self.hostlink
        m.submodules.chain = chain = self.chain
        wiring.connect(m, hostlink.bus, chain.bus)
        m.d.comb += [hostlink.rx.eq(self.rx), self.tx.eq(hostlink.tx)]

        beat = heartbeat(m, self.clock_hz)

        # Line activity: the LED is lit for clock_hz // 20 - 1 cycles after the last cycle with
        # rx or tx low. Cycles since then count up from 0 (the flip-flops' synchronous reset)
        # and stop at the end; `heard` keeps the LED dark until the first activity.
        span = max(2, self.clock_hz // 20)
        quiet = Signal(range(span), name="quiet")
        heard = Signal(name="heard")
        lit = Signal()
        m.d.comb += lit.eq(heard & (quiet != span - 1))
        with m.If(~self.rx | ~self.tx):
            m.d.sync += [quiet.eq(0), heard.eq(1)]
        with m.Elif(quiet != span - 1):
            m.d.sync += quiet.eq(quiet + 1)

        m.d.comb += [self.leds[0].eq(beat), self.leds[1].eq(lit)]
        if hasattr(chain, "overflow_sticky"):
            m.d.comb += self.leds[2].eq(chain.overflow_sticky.any())
        if hasattr(chain, "busy"):
            m.d.comb += self.leds[3].eq(chain.busy)
        if self.boards is not None:
            m.d.comb += [chain.cut.eq(self.link_cut), chain.noise.eq(self.link_noise)]
        if self.controllers:
            for i in range(self.nodes):
                m.d.comb += [
                    chain.sensor[i].q.eq(self.sensor[i].q),
                    chain.sensor[i].qd.eq(self.sensor[i].qd),
                    self.actuator[i].i_ref.eq(chain.actuator[i].i_ref),
                    self.actuator[i].enable.eq(chain.actuator[i].enable),
                ]
                wiring.connect(m, wiring.flipped(self.joint_port[i]), chain.joint_port[i])
        return m
