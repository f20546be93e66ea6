"""The actuator board of the distributed mode: one LinkDyn node per board, its neighbour links
on header pins, the host UART on the base board (``docs/distributed.md``, ``docs/link.md``).

:class:`ActuatorBoardCore` is board-independent: an
:class:`~linkdyn.gateware.actuator.ActuatorCore` (node, mailboxes, upstream and downstream
:class:`~linkdyn.gateware.link.NeighbourLink`, scheduler, bus routing), on the base board the
:class:`~linkdyn.gateware.hostlink.HostLink` (UART and protocol engine with
``ProtocolSpec(boards=n)``) in front of it, and the status LEDs. :class:`ActuatorBoardTop`
puts it on a board (:data:`ACTUATOR_BOARDS`: ULX3S, Numato Mimas, SK-XC6SLX9): the board
clock through the PLL to the core clock (default 50 MHz, links at 2 bits per cycle = 100
Mbit/s) and a second PLL output 90 degrees later, the UART pins (base board), the LEDs and,
per link port, four header pins:

========  =====  ==========================================================================
pin       dir    what
========  =====  ==========================================================================
tx_data   out    the link's serial data, DDR (``io.DDRBuffer("o")`` in the core clock):
                 ``tx[0]`` from the rising edge, ``tx[1]`` from the falling edge
tx_clk    out    the forwarded clock: a DDR output driving (1, 0) in the 90-degree clock,
                 so its edges fall in the middle of the data bits (centre-aligned)
rx_clk    in     the neighbour's forwarded clock: the port's receive clock domain
rx_data   in     the neighbour's data, DDR input (``io.DDRBuffer("i")``) in that domain
========  =====  ==========================================================================

A cable joins board k's downstream ``tx_*`` to board k+1's upstream ``rx_*`` and back, plus
ground. Each receive port runs in its own clock domain (``rx_up``, ``rx_down``: the two
neighbours' clocks), constrained to the core clock's frequency; the link's ``AsyncFIFO``
crosses into the core clock (``docs/link.md``, *PHY*). Vendor primitives (the PLLs, the
Spartan-6 clock buffers) are only here, never in the simulated cores.
"""

from __future__ import annotations

from amaranth.hdl import (
    Cat, ClockDomain, ClockSignal, Const, DomainRenamer, Elaboratable, Instance, Module,
    ResetSignal, Signal,
)
from amaranth.build import Attrs, Clock, Pins, Resource, Subsignal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

from linkdyn.gateware.actuator import ActuatorCore
from linkdyn.gateware.controlled_actuator import BoardController, ControlledFrontEnd
from linkdyn.gateware.controller import ActuatorSignature, SensorSignature
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.gateware.hostlink import HostLink
from linkdyn.gateware.joint_port import JointPortStatusSignature
from linkdyn.model.protocol import MAX_NODES

from .common import (
    ecp5_pll_setting, oscillator_input, reset_input, spartan6_pll_setting, synchronised_domain,
)
from .core import LED_COUNT, heartbeat
from .joint_pins import add_joint_ports, describe

__all__ = ["ROLES", "ActuatorBoardCore", "ActuatorBoardTop", "ACTUATOR_BOARDS",
           "actuator_pll_setting",
           "LINK_PINS", "DEFAULT_LINK_CLOCK_HZ"]

#: Where a board sits in the chain: the base (board 0: UART, no upstream link), a middle board
#: (both links), the last board (no downstream link).
ROLES = ("base", "middle", "last")
#: Core clock of the actuator boards, Hz: 2 bits per cycle on every link, 100 Mbit/s.
DEFAULT_LINK_CLOCK_HZ = 50_000_000
#: Link ports of the actuator boards: board -> (connector, {port: {pin: connector pin}}).
LINK_PINS = {
    # ULX3S: GPIO header J1, pairs 0 .. 3 used single-ended (LVCMOS33).
    "ulx3s": (("gpio", 0), {
        "up": {"rx_clk": "0+", "rx_data": "0-", "tx_clk": "1+", "tx_data": "1-"},
        "down": {"rx_clk": "2+", "rx_data": "2-", "tx_clk": "3+", "tx_data": "3-"},
    }),
    # Numato Mimas: header P1, pins 15 .. 22 (FPGA P17 P16 P15 P14 P12 P11 P10 P9).
    "mimas": (("p", 1), {
        "up": {"rx_clk": "15", "rx_data": "16", "tx_clk": "19", "tx_data": "20"},
        "down": {"rx_clk": "17", "rx_data": "18", "tx_clk": "21", "tx_data": "22"},
    }),
    # SK-XC6SLX9: header X7, pins 15 .. 22 (the same FPGA pins as the Mimas's P1).
    "sk_xc6slx9": (("x", 7), {
        "up": {"rx_clk": "15", "rx_data": "16", "tx_clk": "19", "tx_data": "20"},
        "down": {"rx_clk": "17", "rx_data": "18", "tx_clk": "21", "tx_data": "22"},
    }),
}


def _link_resources(board, clock_hz):
    """The link ports' resources; each ``rx_clk`` pin carries the forwarded clock's period
    constraint (``Clock``: a FREQUENCY PORT / TIMESPEC on the pin itself)."""
    conn, ports = LINK_PINS[board]
    attrs = Attrs(IO_TYPE="LVCMOS33") if board == "ulx3s" else Attrs(IOSTANDARD="LVCMOS33")
    resources = []
    for port, pins in ports.items():
        subsignals = [Subsignal(name, Pins(pin, dir="i" if name.startswith("rx") else "o",
                                           conn=conn),
                                *([Clock(clock_hz)] if name == "rx_clk" else []))
                      for name, pin in pins.items()]
        resources.append(Resource(f"link_{port}", 0, *subsignals, attrs))
    return resources


def actuator_pll_setting(board, clock_hz):
    """Return the PLL setting that makes ``clock_hz`` (and its 90-degree copy) from the
    oscillator of ``board`` (one of :data:`ACTUATOR_BOARDS`).

    Raises
    ------
    ValueError
        If the PLL cannot make it, or (ECP5) the 90-degree output is not a whole number of
        VCO cycles (CLKOP_DIV not a multiple of 4).
    """
    from . import BOARDS
    if not isinstance(clock_hz, int) or isinstance(clock_hz, bool) or clock_hz <= 0:
        raise ValueError(f"Clock frequency must be a positive integer (Hz), not {clock_hz!r}")
    cls = BOARDS[board]
    osc = cls.oscillator_hz()
    if cls.family == "ecp5":
        setting = ecp5_pll_setting(osc, clock_hz)
        if setting.output_div % 4:
            raise ValueError(f"The ECP5 PLL makes {clock_hz / 1e6:g} MHz with CLKOP_DIV "
                             f"{setting.output_div}, not a multiple of 4: no 90-degree "
                             "output in whole VCO cycles")
        return setting
    return spartan6_pll_setting(osc, clock_hz)


def _check_role(role, boards):
    if role not in ROLES:
        raise ValueError(f"Board role must be one of {', '.join(ROLES)}, not {role!r}")
    if role == "base":
        if not isinstance(boards, int) or isinstance(boards, bool):
            raise TypeError(f"The base board needs the number of boards, an integer, not "
                            f"{boards!r}")
        if not 1 <= boards <= MAX_NODES:
            raise ValueError(f"Board count must be 1 .. {MAX_NODES}, not {boards!r}")
    elif boards is not None:
        raise ValueError(f"Only the base board takes the number of boards, not boards="
                         f"{boards!r} on a {role} board")


class ActuatorBoardCore(wiring.Component):
    """One actuator board without pins: ActuatorCore, the host link on the base board, LEDs.

    Parameters
    ----------
    role : str
        ``"base"``, ``"middle"`` or ``"last"`` (:data:`ROLES`); a 1-board chain is a base
        board that is also the last.
    boards : int, optional
        Base board only: the number of boards n (the protocol's nodes).
    clock_hz : int
        Core clock, Hz.
    baudrate, divisor : int, optional
        Base board: the UART's (:class:`~linkdyn.gateware.hostlink.HostLink`).
    fmt : QFormat
        Word format.
    board_id : int
        BOARD_ID of the base board's build information.
    bits : int
        Bits per cycle on the links (2: DDR I/O).
    cordic_step_cycles : int
        Of the node.
    link_parameters : dict, optional
        Of the links (``window``, ``ack_timeout``, ``down_timeout``).
    policy : str
        Update policy of the distributed chain, ``"sequential"`` (default) or
        ``"pipelined"`` (every board of a chain must be built with the same one).
    banks : int, optional
        Pipelined policy: register banks, 2 or 4 (default
        :data:`~linkdyn.model.microprogram.BANKS`).
    controllers : bool
        The board's joint controller beside its node (paper Fig. 7,
        ``docs/distributed.md``, *Joint controllers on the boards*): the ActuatorCore's bus
        target is a :class:`~linkdyn.gateware.controlled_actuator.BoardController`; on the base
        board the host link has the controller window and the CONTROL command
        (``ProtocolSpec(controllers=True, boards=n)``) and a
        :class:`~linkdyn.gateware.controlled_actuator.ControlledFrontEnd` (the control step's
        front end and sequencer) stands between it and the ActuatorCore, so a chain of these
        boards is :class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain`.
        Sequential policy only. Every board of a chain must be built with it.

    Members
    -------
    rx : In(1), tx : Out(1)
        Base board: the UART lines.
    up_tx : Out(bits), up_rx : In(bits)
        Not on the base board: the upstream link; ``up_rx`` in domain ``rx_up``.
    down_tx : Out(bits), down_rx : In(bits)
        Not on the last board: the downstream link; ``down_rx`` in domain ``rx_down``.
    leds : Out(4)
        0 heartbeat, 1 upstream link up (base: host link busy), 2 downstream link up, 3 the
        board index is known (base: an update runs; with ``controllers``: or a control step).
    joint_sensor : In(SensorSignature)
        With ``controllers``: the joint's measured ``q`` (rad), ``qd`` (rad/s), Q15.16.
    joint_actuator : Out(ActuatorSignature)
        With ``controllers``: the joint's current reference ``i_ref`` (A, Q15.16), ``enable``.
    joint_fault : Out(1)
        With ``controllers``: the controller's fault latch.
    joint_port : In(JointPortStatusSignature)
        With ``controllers``: the joint port's status, read in the window word ``joint_port``
        (0, "no port", undriven).

    Raises
    ------
    TypeError, ValueError
        For a bad role, board count or clock; ValueError for ``controllers`` with the
        pipelined policy.
    """

    def __init__(self, *, role, boards=None, clock_hz, baudrate=None, divisor=None,
                 fmt=None, board_id=0, bits=2, cordic_step_cycles=2, link_parameters=None,
                 policy="sequential", banks=None, controllers=False):
        _check_role(role, boards)
        if not isinstance(controllers, bool):
            raise TypeError(f"controllers must be a bool, not {controllers!r}")
        if controllers and policy != "sequential":
            raise ValueError(f"Joint controllers on the boards run with the sequential policy "
                             f"only (one update per control step), not policy={policy!r}")
        self.controllers = controllers
        if not isinstance(clock_hz, int) or isinstance(clock_hz, bool) or clock_hz <= 0:
            raise ValueError(f"Clock frequency must be a positive integer (Hz), not {clock_hz!r}")
        self.role = role
        self.boards = boards
        self.clock_hz = clock_hz
        self.fmt = fmt
        base = role == "base"
        last = role == "last" or (base and boards == 1)
        self.base, self.last = base, last
        #: The board's BoardController (``controllers``), else None.
        self.target = None
        extra = {}
        if controllers:
            def target(node):
                self.target = BoardController(node, fmt=fmt)
                return self.target
            extra["node_target"] = target
        self.actuator = self.chain = ActuatorCore(fmt, base=base, last=last,
                                     nodes=boards if base else None, bits=bits,
                                     rx_domain="rx", link_parameters=link_parameters,
                                     cordic_step_cycles=cordic_step_cycles,
                                     policy=policy, banks=banks, **extra)
        self.policy = self.actuator.policy
        # One receive clock per neighbour: the links' "rx" domain renamed per port.
        if self.actuator.upstream is not None:
            self.actuator.upstream = DomainRenamer({"rx": "rx_up"})(self.actuator.upstream)
        if self.actuator.downstream is not None:
            self.actuator.downstream = DomainRenamer({"rx": "rx_down"})(
                self.actuator.downstream)
        self.hostlink = None
        #: The base board's ControlledFrontEnd (``controllers``), else None.
        self.front_end = None
        members = {"leds": Out(LED_COUNT)}
        if controllers:
            members.update({"joint_sensor": In(SensorSignature),
                            "joint_actuator": Out(ActuatorSignature), "joint_fault": Out(1),
                            "joint_port": In(JointPortStatusSignature)})
        if base:
            banked = ({"banks": self.actuator.banks} if self.policy == "pipelined" else {})
            if controllers:
                banked["controllers"] = True
                self.front_end = ControlledFrontEnd(boards)
            self.hostlink = HostLink(boards, clock_hz=clock_hz, baudrate=baudrate,
                                     divisor=divisor, fmt=fmt, board_id=board_id,
                                     boards=boards, **banked)
            members.update({"rx": In(1, init=1), "tx": Out(1, init=1)})
        else:
            members.update({"up_tx": Out(bits), "up_rx": In(bits)})
        if not last:
            members.update({"down_tx": Out(bits), "down_rx": In(bits)})
        super().__init__(members)

    @property
    def baudrate(self):
        """int: the base board's UART rate, baud; 0 on the other boards (no UART)."""
        return self.hostlink.baudrate if self.hostlink is not None else 0

    def elaborate(self, platform):
        m = Module()
        m.submodules.actuator = core = self.actuator
        if not self.base:
            m.d.comb += [self.up_tx.eq(core.up_tx), core.up_rx.eq(self.up_rx)]
        if not self.last:
            m.d.comb += [self.down_tx.eq(core.down_tx), core.down_rx.eq(self.down_rx)]
        beat = heartbeat(m, self.clock_hz)
        m.d.comb += self.leds[0].eq(beat)
        if self.controllers:
            target = self.target
            m.d.comb += [target.sensor.q.eq(self.joint_sensor.q),
                         target.sensor.qd.eq(self.joint_sensor.qd),
                         self.joint_actuator.i_ref.eq(target.actuator.i_ref),
                         self.joint_actuator.enable.eq(target.actuator.enable),
                         self.joint_fault.eq(target.fault)]
            wiring.connect(m, wiring.flipped(self.joint_port), target.joint_port)
        if self.base:
            m.submodules.hostlink = hostlink = self.hostlink
            busy = core.busy
            if self.front_end is not None:
                m.submodules.front_end = front_end = self.front_end
                wiring.connect(m, hostlink.bus, front_end.bus)
                wiring.connect(m, front_end.chain_bus, core.bus)
                m.d.comb += [front_end.chain_busy.eq(core.busy),
                             front_end.chain_overflow.eq(core.overflow_sticky),
                             front_end.chain_link_down.eq(core.link_down)]
                busy = front_end.busy
            else:
                wiring.connect(m, hostlink.bus, core.bus)
            m.d.comb += [hostlink.rx.eq(self.rx), self.tx.eq(hostlink.tx),
                         self.leds[1].eq(~self.rx | ~self.tx), self.leds[3].eq(busy)]
        else:
            m.d.comb += [self.leds[1].eq(core.upstream.status.up),
                         self.leds[3].eq(core.board_index_valid)]
        if not self.last:
            m.d.comb += self.leds[2].eq(core.downstream.status.up)
        return m


class ActuatorBoardTop(Elaboratable):
    """An actuator board top-level: :class:`ActuatorBoardCore` on a board's pins.

    Parameters
    ----------
    board : str
        One of :data:`ACTUATOR_BOARDS`.
    role : str
        ``"base"``, ``"middle"`` or ``"last"``.
    boards : int, optional
        Base board: the number of boards.
    clock_hz : int
        Core clock (default :data:`DEFAULT_LINK_CLOCK_HZ`: 100 Mbit/s links); the PLL must
        make it and its 90-degree copy.
    baudrate : int, optional
        Base board: the UART rate.
    policy : str
        Update policy, ``"sequential"`` (default) or ``"pipelined"``
        (:class:`~linkdyn.gateware.actuator.ActuatorCore`).
    banks : int, optional
        With ``policy="pipelined"``: register banks of the node and mailbox slots, 2 or 4
        (default :data:`~linkdyn.model.microprogram.BANKS`; every board of a chain needs the
        same; the base board's INFO reports them as BANKS).
    controllers : bool
        The board's joint controller beside its node (:class:`ActuatorBoardCore`; sequential
        policy only). As the single-FPGA builds with controllers
        (:class:`~linkdyn.boards.common.BoardTop`), the joint's controller talks to its drive
        through a :class:`~linkdyn.gateware.joint_port.JointPort` on the board's joint 0 pins
        (the board module's ``joint_pins``, :mod:`linkdyn.boards.joint_pins`; free of the
        link and UART pins).

    Attributes
    ----------
    name, title, device, family, uart_note : str
        Of the board (as :class:`~linkdyn.boards.common.BoardTop`).
    core : ActuatorBoardCore

    Raises
    ------
    TypeError, ValueError
        For an unknown board, a bad role or board count, a clock the PLL cannot make, or
        ``banks`` that do not fit the policy (sequential: none; pipelined: 2 or 4).
    """

    def __init__(self, board, role, boards=None, *, clock_hz=DEFAULT_LINK_CLOCK_HZ,
                 baudrate=None, fmt=None, policy="sequential", banks=None,
                 controllers=False):
        if board not in ACTUATOR_BOARDS:
            raise ValueError(f"Actuator boards are {', '.join(ACTUATOR_BOARDS)}, not "
                             f"{board!r}")
        from . import BOARDS
        self.board_class = BOARDS[board]
        cls = self.board_class
        self.name, self.title, self.family = cls.name, cls.title, cls.family
        self.uart_note = cls.uart_note if role == "base" else "none (not the base board)"
        self.device = cls.platform_class.device
        self.clock_hz = clock_hz
        self.role = role
        self.nodes = 1
        self._pll = actuator_pll_setting(board, clock_hz)
        self.core = ActuatorBoardCore(role=role, boards=boards, clock_hz=clock_hz,
                                      baudrate=baudrate, fmt=fmt, board_id=cls.board_id,
                                      cordic_step_cycles=STEP_CYCLES[cls.family],
                                      policy=policy, banks=banks, controllers=controllers)

    @property
    def banks(self):
        """int: register banks of the board's node (1: the sequential policy)."""
        return self.core.actuator.banks

    @property
    def distributed_report(self):
        """dict: what a build report says about the board's place in the distributed chain."""
        conn, ports = LINK_PINS[self.name]
        used = [p for p in ("up", "down") if not (p == "up" and self.core.base)
                and not (p == "down" and self.core.last)]
        pins = "; ".join(f"{p}stream " + ", ".join(f"{k} {conn[0]}{conn[1]}-{v}"
                                                   for k, v in ports[p].items())
                         for p in used)
        report = {"role": self.role, "boards": self.core.boards,
                  "link_mbit_s": 2 * self.clock_hz / 1e6, "link_pins": pins or "none"}
        if self.core.policy != "sequential":
            report["policy"] = self.core.policy
            report["banks"] = self.banks
        if self.core.controllers:
            report["controller"] = True
            report["joint_pins"] = describe(self.board_class, 1, self.clock_hz)
        return report

    def update_cycles(self, updates=3):
        """Return ``(figures, source)`` for the build report: on the base board, the update
        latency and interval of ``DistributedChain(boards)`` (its LATENCY_CYCLES and
        INTERVAL_CYCLES in the Amaranth simulator, links at 2 bits per cycle, line delay 3
        cycles); the other boards have none of their own."""
        if not self.core.base:
            return ({"update_latency_cycles": None, "update_interval_cycles": None},
                    "none: a middle or last board has no update counters (the base board's "
                    "report has the chain's)")
        from linkdyn.gateware.distributed import DistributedChain
        from .cycles import simulate_update_cycles
        n = self.core.boards
        figures = simulate_update_cycles(
            DistributedChain(n, self.core.fmt, cordic_step_cycles=self.cordic_step_cycles,
                             **({"policy": self.core.policy, "banks": self.banks}
                                if self.core.policy != "sequential" else {})),
            updates=updates, max_cycles=20_000 * (n + 1))
        figures.pop("update_count", None)
        return figures, (f"simulation of DistributedChain({n}) (one node per board, links at "
                         "2 bits per cycle, line delay 3 cycles, zero state, Amaranth "
                         "simulator): LATENCY_CYCLES of one update alone, INTERVAL_CYCLES of "
                         "back-to-back starts over its register bus")

    @property
    def cordic_step_cycles(self):
        """int: the family's CORDIC step cycles."""
        return STEP_CYCLES[self.family]

    def pll_setting(self, clock_hz):
        """Return :func:`actuator_pll_setting` for this board."""
        return actuator_pll_setting(self.name, clock_hz)

    def platform(self, **kwargs):
        """Return the board's platform with the UART, LED and link resources added."""
        platform = self.board_class.platform(**kwargs)
        platform.add_resources(_link_resources(self.name, self.clock_hz))
        return platform

    # -- clocking ----------------------------------------------------------------------------

    def _ecp5_clock(self, m, platform):
        cls, setting = self.board_class, self._pll
        in_hz = cls.oscillator_hz()
        clk = oscillator_input(m, platform, cls.oscillator)
        button = reset_input(m, platform, getattr(cls, "reset", None))
        clock, clock90, locked = Signal(), Signal(), Signal()
        div = setting.output_div
        cphase = (div - 1) // 2
        mhz = 1e6
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{in_hz / mhz:g}",
            a_FREQUENCY_PIN_CLKOP=f"{float(setting.out_hz) / mhz:g}",
            a_FREQUENCY_PIN_CLKOS=f"{float(setting.out_hz) / mhz:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=setting.input_div, p_CLKOP_ENABLE="ENABLED", p_CLKOS_ENABLE="ENABLED",
            p_CLKOP_DIV=div, p_CLKOP_CPHASE=cphase, p_CLKOP_FPHASE=0,
            # A quarter period later: div / 4 VCO cycles.
            p_CLKOS_DIV=div, p_CLKOS_CPHASE=cphase + div // 4, p_CLKOS_FPHASE=0,
            p_FEEDBK_PATH="CLKOP", p_CLKFB_DIV=setting.feedback_mult,
            i_RST=Const(0), i_STDBY=Const(0), i_CLKI=clk, i_CLKFB=clock,
            i_PHASESEL0=Const(0), i_PHASESEL1=Const(0), i_PHASEDIR=Const(1),
            i_PHASESTEP=Const(1), i_PHASELOADREG=Const(1), i_PLLWAKESYNC=Const(0),
            i_ENCLKOP=Const(0), i_ENCLKOS=Const(0),
            o_CLKOP=clock, o_CLKOS=clock90, o_LOCK=locked)
        synchronised_domain(m, clock, button | ~locked)
        return clock90

    def _spartan6_clock(self, m, platform):
        cls, setting = self.board_class, self._pll
        osc = cls.oscillator_hz()
        clk = oscillator_input(m, platform, cls.oscillator)
        end_of_startup = Signal()
        m.submodules.startup = Instance("STARTUP_SPARTAN6", o_EOS=end_of_startup)
        out0, out1, feedback, locked = Signal(), Signal(), Signal(), Signal()
        m.submodules.pll = Instance(
            "PLL_BASE",
            p_BANDWIDTH="OPTIMIZED", p_CLK_FEEDBACK="CLKFBOUT", p_COMPENSATION="INTERNAL",
            p_DIVCLK_DIVIDE=setting.input_div, p_CLKFBOUT_MULT=setting.feedback_mult,
            p_CLKFBOUT_PHASE=0.0,
            p_CLKOUT0_DIVIDE=setting.output_div, p_CLKOUT0_PHASE=0.0,
            p_CLKOUT0_DUTY_CYCLE=0.5,
            p_CLKOUT1_DIVIDE=setting.output_div, p_CLKOUT1_PHASE=90.0,
            p_CLKOUT1_DUTY_CYCLE=0.5,
            p_CLKIN_PERIOD=round(1e9 / osc, 3), p_REF_JITTER=0.01,
            i_CLKIN=clk, i_CLKFBIN=feedback, i_RST=Const(0),
            o_CLKFBOUT=feedback, o_CLKOUT0=out0, o_CLKOUT1=out1, o_LOCKED=locked)
        clock, clock90 = Signal(), Signal()
        m.submodules.clock_buffer = Instance("BUFGCE", i_I=out0, i_CE=end_of_startup,
                                             o_O=clock)
        m.submodules.clock90_buffer = Instance("BUFG", i_I=out1, o_O=clock90)
        synchronised_domain(m, clock, ~locked)
        return clock90

    def _receive_clock(self, m, platform, name, pin):
        """The ``rx_<name>`` domain from a forwarded-clock pin (a global buffer on Spartan-6;
        nextpnr promotes it on ECP5), its reset synchronised from the core's; the pin's
        resource carries its period constraint."""
        m.submodules[f"{name}_clk_buf"] = buf = io.Buffer("i", pin)
        clock = buf.i
        if self.family == "xc6s":
            clock = Signal(name=f"{name}_clk_global")
            m.submodules[f"{name}_clk_bufg"] = Instance("BUFG", i_I=buf.i, o_O=clock)
        domain = f"rx_{name}"
        m.domains += ClockDomain(domain)
        m.d.comb += ClockSignal(domain).eq(clock)
        m.submodules[f"{name}_reset_sync"] = ResetSynchronizer(ResetSignal("sync"),
                                                               domain=domain)

    def elaborate(self, platform):
        m = Module()
        clock90 = (self._ecp5_clock if self.family == "ecp5" else self._spartan6_clock)(
            m, platform)
        m.domains.tx90 = ClockDomain("tx90", reset_less=True)
        m.d.comb += ClockSignal("tx90").eq(clock90)
        m.submodules.core = core = self.core
        if core.base:
            uart = platform.request("uart", 0, dir="-")
            m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
            m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
            m.d.comb += [core.rx.eq(uart_rx.i), uart_tx.o.eq(core.tx)]
        ports = ([] if core.base else [("up", core.up_tx, core.up_rx)]) + \
            ([] if core.last else [("down", core.down_tx, core.down_rx)])
        for name, tx, rx in ports:
            pins = platform.request(f"link_{name}", 0, dir="-")
            self._receive_clock(m, platform, name, pins.rx_clk)
            m.submodules[f"{name}_rx_data"] = rx_data = io.DDRBuffer(
                "i", pins.rx_data, i_domain=f"rx_{name}")
            m.submodules[f"{name}_tx_data"] = tx_data = io.DDRBuffer(
                "o", pins.tx_data, o_domain="sync")
            m.submodules[f"{name}_tx_clk"] = tx_clk = io.DDRBuffer(
                "o", pins.tx_clk, o_domain="tx90")
            m.d.comb += [
                rx.eq(Cat(rx_data.i[0], rx_data.i[1])),
                tx_data.o[0].eq(tx[0]), tx_data.o[1].eq(tx[1]),
                tx_clk.o[0].eq(1), tx_clk.o[1].eq(0),
            ]
        for index in range(LED_COUNT):
            led = io.Buffer("o", platform.request("led", index, dir="-"))
            m.submodules[f"led_{index}"] = led
            m.d.comb += led.o.eq(core.leds[index])
        if core.controllers:
            add_joint_ports(m, platform, self.clock_hz, [
                (core.joint_sensor, core.joint_actuator, core.target.controller.fault_clear,
                 core.joint_port)])
        return m


#: Boards an actuator board can be built for (``--distributed``).
ACTUATOR_BOARDS = tuple(LINK_PINS)
