"""What every board top-level shares: the chain choice, the node and clock checks, the pins.

A board top-level (:class:`BoardTop`) is the board-independent :class:`~linkdyn.boards.core.
BoardCore` plus what the board adds: its clock (straight from the oscillator or through a PLL),
a reset synchroniser, the UART pins and the status LEDs, all through ``io.Buffer`` on the
resources of an amaranth-boards platform. Vendor primitives (PLL, clock buffers, startup block)
appear only here and in the board modules, never in the simulated cores.
"""

from dataclasses import dataclass
from fractions import Fraction

from amaranth.hdl import ClockDomain, ClockSignal, Const, Elaboratable, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import ResetSynchronizer

from linkdyn.gateware.cordic import STEP_CYCLES

from .core import LED_COUNT, BoardCore
from .joint_pins import add_joint_ports, check_joint_count, describe, joint_resources

__all__ = [
    "CHAINS", "DEFAULT_CHAIN", "check_chain", "make_chain", "chain_name", "chain_policy",
    "chain_parents", "has_controllers",
    "BoardTop", "BOARD_TOPS", "PllSetting", "ecp5_pll_setting", "spartan6_pll_setting",
]

#: Chains a board can be built with: ``"linkdyn"`` is the real chain of LinkDyn nodes
#: (:class:`linkdyn.gateware.chain.LinkDynChain`), ``"fake"`` the register-bus stand-in
#: :class:`linkdyn.gateware.fake_chain.FakeChain` (no inverse dynamics; host-link tests).
CHAINS = ("linkdyn", "fake")

#: The chain of board builds when none is named ("fake" builds the host link around the
#: stand-in; this line is the switch).
DEFAULT_CHAIN = "linkdyn"


def check_chain(kind, policy=None):
    """Return ``(kind, policy)`` with the defaults filled in, if such a chain can be built.

    Parameters
    ----------
    kind : str or None
        One of :data:`CHAINS`; None for :data:`DEFAULT_CHAIN`.
    policy : str or None
        Update policy of the real chain (``linkdyn.gateware.chain.POLICIES``; None for
        ``"sequential"``); the stand-in has none (returned as None).

    Raises
    ------
    ValueError
        If ``kind`` is not one of :data:`CHAINS`, ``"linkdyn"`` is asked for while
        ``linkdyn.gateware.chain`` is not there, or the policy is unknown or given for the
        stand-in.
    """
    kind = DEFAULT_CHAIN if kind is None else kind
    if kind not in CHAINS:
        raise ValueError(f"Chain must be one of {', '.join(CHAINS)}, not {kind!r}")
    if kind == "fake":
        if policy not in (None, "sequential"):
            raise ValueError(f"The stand-in chain has no update policy {policy!r}")
        return kind, None
    try:
        from linkdyn.gateware.chain import POLICIES
    except ImportError as error:
        raise ValueError("The LinkDyn chain (linkdyn.gateware.chain.LinkDynChain) is not "
                         f"available ({error}); build with chain 'fake'") from None
    policy = "sequential" if policy is None else policy
    if policy not in POLICIES:
        raise ValueError(f"Policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    return kind, policy


def make_chain(kind, nodes, fmt=None, policy=None, cordic_step_cycles=2, parents=None,
               banks=None):
    """Return a chain component for a board core.

    Parameters
    ----------
    kind : str
        One of :data:`CHAINS`, or None for :data:`DEFAULT_CHAIN`.
    nodes : int
        Number of nodes.
    fmt : QFormat
        Word format of the nodes.
    policy : str, optional
        Update policy of the real chain (default ``"sequential"``).
    cordic_step_cycles : int
        Cycles per CORDIC step of the real chain's nodes (default 2; a board top passes its
        family's, :attr:`BoardTop.cordic_step_cycles`); the stand-in has no CORDIC.
    parents : sequence of int, optional
        The parent node of every node (``-1`` a root, every parent before its children; see
        docs/trees.md): the real chain is then the tree of nodes
        ``LinkDynChain(nodes, parents=parents)``. None (default) is the chain; the stand-in
        takes only the chain.
    banks : int, optional
        Register banks of the pipelined real chain, 2 or 4 (``LinkDynChain(banks=)``; default
        :data:`~linkdyn.model.microprogram.BANKS`); None for the other chains.

    Returns
    -------
    wiring.Component
        A register-bus target (``bus: In(RegisterBusSignature())``).

    Raises
    ------
    ValueError
        See :func:`check_chain`; also if the stand-in is asked for a tree, or ``banks`` is
        given for a chain that is not the pipelined LinkDyn chain or is not 2 or 4.
    """
    kind, policy = check_chain(kind, policy)
    if banks is not None and policy != "pipelined":
        raise ValueError(f"Register banks are chosen for the pipelined policy only (the "
                         f"{policy or 'stand-in'} chain has one), not banks={banks!r}")
    if kind == "fake" and parents is not None and tuple(parents) != tuple(range(-1, nodes - 1)):
        raise ValueError("The stand-in chain is a chain only; a tree of nodes (parents) needs "
                         "the LinkDyn chain")
    if kind == "fake":
        from linkdyn.gateware.fake_chain import FakeChain
        return FakeChain(nodes, fmt=fmt, wait_states=False)
    from linkdyn.gateware.chain import LinkDynChain
    return LinkDynChain(nodes, fmt=fmt, policy=policy, cordic_step_cycles=cordic_step_cycles,
                        parents=parents, **({} if banks is None else {"banks": banks}))


def chain_parents(chain):
    """Return the parent node of every node of a chain component (``-1`` a root): a tree of
    nodes' ``parents``, ``(-1, 0, 1, ..., n - 2)`` for a chain or a stand-in."""
    inner = chain.chain if type(chain).__name__ == "ControlledChain" else chain
    parents = getattr(inner, "parents", None)
    if parents is None:
        # An actuator board's core without the host link (no spec) carries one node.
        spec = getattr(inner, "spec", None)
        parents = tuple(range(-1, (spec.n_nodes if spec is not None else 1) - 1))
    return tuple(parents)


def chain_name(chain):
    """Return ``"fake"`` for a :class:`FakeChain`, ``"linkdyn"`` for the real chain (alone or
    inside a :class:`~linkdyn.gateware.controlled_chain.ControlledChain`), else the class
    name."""
    name = type(chain).__name__
    return {"FakeChain": "fake", "LinkDynChain": "linkdyn",
            "ControlledChain": "linkdyn"}.get(name, name)


def chain_policy(chain):
    """Return the update policy of a real chain, or None for a stand-in."""
    if type(chain).__name__ == "ControlledChain":
        return chain.chain.policy
    return chain.policy if chain_name(chain) == "linkdyn" else None


def has_controllers(chain):
    """Return True if ``chain`` has a joint controller beside every node (a
    :class:`~linkdyn.gateware.controlled_chain.ControlledChain`, or an actuator board's
    ActuatorCore whose bus target is a
    :class:`~linkdyn.gateware.controlled_actuator.BoardController`)."""
    return (type(chain).__name__ == "ControlledChain"
            or type(getattr(chain, "target", None)).__name__ == "BoardController")


# -- PLL settings ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PllSetting:
    """Divider setting of a PLL: ``f_out = f_in / input_div * feedback_mult / output_div``
    (feedback taken from the output itself on ECP5, from the VCO on Spartan-6).

    Attributes
    ----------
    input_div, feedback_mult, output_div : int
        The dividers (ECP5: CLKI_DIV, CLKFB_DIV, CLKOP_DIV; Spartan-6: DIVCLK_DIVIDE,
        CLKFBOUT_MULT, CLKOUT0_DIVIDE).
    vco_hz, out_hz : Fraction
        VCO and output frequency, Hz.
    """

    input_div: int
    feedback_mult: int
    output_div: int
    vco_hz: Fraction
    out_hz: Fraction


#: Largest relative difference between a PLL's output and the clock asked for (10 ppm, below a
#: crystal oscillator's tolerance), so that 100/3 MHz can be asked for as 33333333 Hz.
TOLERANCE = Fraction(1, 100_000)


def _check_frequency(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer (Hz), not {value!r}")


def ecp5_pll_setting(in_hz, out_hz):
    """Return the EHXPLLL setting that makes ``out_hz`` from ``in_hz`` (CLKOP feedback), exactly
    or within :data:`TOLERANCE`.

    Ranges as Project Trellis' ``ecppll``: PFD 3.125 to 400 MHz, VCO 400 to 800 MHz, output
    3.125 to 400 MHz, CLKI_DIV and CLKOP_DIV 1 to 128, CLKFB_DIV 1 to 80. Among exact settings
    the one with the VCO nearest 600 MHz is taken (25 MHz to 100 MHz: 1, 4, 6, as ``ecppll``).

    Raises
    ------
    ValueError
        If no setting makes the frequency exactly (the message names the nearest one).
    """
    _check_frequency("Input frequency", in_hz)
    _check_frequency("Output frequency", out_hz)
    mhz = 1_000_000
    best, nearest = None, None
    for input_div in range(1, 129):
        pfd = Fraction(in_hz, input_div)
        if not 3_125_000 <= pfd <= 400 * mhz:
            continue
        for feedback_mult in range(1, 81):
            out = pfd * feedback_mult
            if not 3_125_000 <= out <= 400 * mhz:
                continue
            for output_div in range(1, 129):
                vco = out * output_div
                if vco < 400 * mhz:
                    continue
                if vco > 800 * mhz:
                    break
                setting = PllSetting(input_div, feedback_mult, output_div, vco, out)
                if nearest is None or abs(out - out_hz) < abs(nearest.out_hz - out_hz):
                    nearest = setting
                if abs(out - out_hz) <= out_hz * TOLERANCE and (best is None or
                                      abs(vco - 600 * mhz) < abs(best.vco_hz - 600 * mhz)):
                    best = setting
    if best is None:
        near = f"; nearest {float(nearest.out_hz) / mhz:.4f} MHz" if nearest else ""
        raise ValueError(f"The ECP5 PLL cannot make {out_hz / mhz:g} MHz from "
                         f"{in_hz / mhz:g} MHz exactly{near}")
    return best


def spartan6_pll_setting(in_hz, out_hz):
    """Return the PLL_BASE setting that makes ``out_hz`` from ``in_hz`` (CLKOUT0), exactly or
    within :data:`TOLERANCE`.

    Spartan-6 ranges (DS162, speed grade -2): PFD 19 to 375 MHz, VCO 400 to 1000 MHz,
    DIVCLK_DIVIDE 1 to 52, CLKFBOUT_MULT 1 to 64, CLKOUT0_DIVIDE 1 to 128, and the output at
    most 375 MHz (the core clock goes through a BUFG: its FMAX for -2); the smallest input
    divider (highest PFD), then the highest VCO, is preferred.

    Raises
    ------
    ValueError
        If ``out_hz`` is above 375 MHz, or no setting makes the frequency exactly.
    """
    _check_frequency("Input frequency", in_hz)
    _check_frequency("Output frequency", out_hz)
    mhz = 1_000_000
    if out_hz > 375 * mhz:
        raise ValueError(f"The Spartan-6 core clock can be at most 375 MHz (a global clock "
                         f"buffer, DS162, speed grade -2), not {out_hz / mhz:g} MHz")
    best = None
    for input_div in range(1, 53):
        pfd = Fraction(in_hz, input_div)
        if not 19 * mhz <= pfd <= 375 * mhz:
            continue
        for feedback_mult in range(1, 65):
            vco = pfd * feedback_mult
            if not 400 * mhz <= vco <= 1000 * mhz:
                continue
            output_div = round(vco / out_hz)
            if not 1 <= output_div <= 128 or abs(vco / output_div - out_hz) > out_hz * TOLERANCE:
                continue
            setting = PllSetting(input_div, feedback_mult, output_div, vco, vco / output_div)
            if best is None or (input_div, -vco) < (best.input_div, -best.vco_hz):
                best = setting
    if best is None:
        raise ValueError(f"The Spartan-6 PLL cannot make {out_hz / mhz:g} MHz from "
                         f"{in_hz / mhz:g} MHz exactly")
    return best


# -- the board top --------------------------------------------------------------------------------

#: Board name -> top-level class, filled by :class:`BoardTop` subclasses as they are defined.
BOARD_TOPS = {}


class BoardTop(Elaboratable):
    """A board top-level: :class:`BoardCore` + clock, reset synchroniser, UART pins, LEDs.

    Subclasses set the class attributes below and implement :meth:`elaborate_clock`. A
    subclass that sets ``name`` registers itself (:data:`BOARD_TOPS`, read by
    :data:`linkdyn.boards.BOARDS`): a new board is one module in ``boards/`` (see
    ``docs/architecture.md``).

    Class attributes
    ----------------
    name : str
        Registry name (``--board``).
    board_id : int
        ``BOARD_ID`` of the build info (:mod:`linkdyn.model.protocol`), unique, >= 1 (0 is a
        simulation or an unnamed build).
    title : str
        Human-readable board name.
    platform_class : type
        The amaranth-boards platform.
    family : str
        ``"ecp5"`` or ``"xc6s"``; it sets the nodes' CORDIC step timing
        (:attr:`cordic_step_cycles`, from :data:`linkdyn.gateware.cordic.STEP_CYCLES`).
    oscillator : str
        Name of the board clock resource; its ``Clock`` constraint gives the frequency.
    default_nodes, max_nodes : int
        Node counts: built by default, and the most the device takes (checked).
    default_clock_hz : int
        Core clock when none is given, Hz.
    uart_note : str
        Where the UART is (documentation, report).
    joint_pins : tuple or None
        The joint ports' header pins (:mod:`linkdyn.boards.joint_pins`), None for none.

    Parameters
    ----------
    nodes : int, optional
        Number of LinkDyn nodes (default ``default_nodes``).
    clock_hz : int, optional
        Core clock, Hz (default ``default_clock_hz``); must be one the board's clocking makes.
    baudrate : int, optional
        UART rate (default: 3 Mbaud where the clock allows it).
    chain : str or wiring.Component, optional
        ``"linkdyn"``, ``"fake"`` (see :func:`make_chain`; default :data:`DEFAULT_CHAIN`) or a
        chain component.
    policy : str, optional
        Update policy of the real chain (``"sequential"`` by default, or ``"pipelined"``).
    banks : int, optional
        With ``policy="pipelined"``: the chain's register banks, 2 or 4 (default
        :data:`~linkdyn.model.microprogram.BANKS`; INFO's BANKS reports them).
    controllers : bool
        A joint controller beside every node (paper Fig. 7): the chain is a
        :class:`~linkdyn.gateware.controlled_chain.ControlledChain` (sequential policy, the
        family's CORDIC steps) and the core has the CONTROL command
        (``BoardCore(..., controllers=True)``). On a board with ``joint_pins`` every joint's
        controller talks to its drive through a
        :class:`~linkdyn.gateware.joint_port.JointPort` on the header pins
        (:mod:`linkdyn.boards.joint_pins`; docs/controller.md, "Joint port"); on one without
        (Atlys) the sensor inputs read 0 (a joint at rest at q = 0) and the actuator outputs
        reach only the records the host reads (``i_ref``, ``tau_cmd``).
    local_loop : bool
        With ``controllers``: the controlled chain with the local loop (``ControlledChain(...,
        local_loop=True)``; LOCAL_MULTIPLE, INFO CONTROLLERS bit 1; docs/controller.md).

    Raises
    ------
    TypeError
        If ``nodes`` or ``clock_hz`` is not an integer, or ``controllers`` or ``local_loop``
        not a bool.
    ValueError
        If ``nodes`` is outside 1 .. ``max_nodes``, the clock cannot be made, the chain or
        policy is unknown, a chain component has another node count, or ``controllers`` is
        asked with the stand-in chain, a chain component or the pipelined policy, or for more
        joints than the board has joint pins for, or ``local_loop`` without ``controllers``,
        or ``banks`` without the pipelined policy or not 2 or 4.
    parents : sequence of int, optional
        The parent node of every node: a tree of nodes (:func:`make_chain`; docs/trees.md);
        None (default) the chain. Not with ``controllers`` or a chain component.
    """

    name = None
    board_id = None
    title = None
    platform_class = None
    family = None
    oscillator = None
    default_nodes = 1
    max_nodes = 1
    default_clock_hz = None
    uart_note = ""
    #: Resources added to the amaranth-boards platform (header UART, LEDs).
    extra_resources = ()
    #: The joint ports' header pins, ``(connector, [{pin name: connector pin}, ...])``, one dict
    #: per joint (:mod:`linkdyn.boards.joint_pins`); None: the board has none.
    joint_pins = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name is None:
            return
        if not isinstance(cls.board_id, int) or isinstance(cls.board_id, bool) \
                or cls.board_id < 1:
            raise TypeError(f"Board {cls.name!r} must set board_id to an integer >= 1, "
                            f"not {cls.board_id!r}")
        for other in BOARD_TOPS.values():
            if other.name == cls.name and other is not cls:
                raise ValueError(f"Board name {cls.name!r} is taken by {other.__qualname__}")
            if other.board_id == cls.board_id and other.name != cls.name:
                raise ValueError(f"Board id {cls.board_id} of {cls.name!r} is taken by "
                                 f"{other.name!r}")
        BOARD_TOPS[cls.name] = cls

    def __init__(self, nodes=None, *, clock_hz=None, baudrate=None, chain=None, policy=None,
                 fmt=None, controllers=False, parents=None, local_loop=False, banks=None):
        self.nodes, self.clock_hz = self.check_arguments(nodes, clock_hz)
        if banks is not None and not (chain is None or isinstance(chain, str)):
            raise ValueError("banks builds the pipelined LinkDyn chain; a chain component "
                             "brings its own")
        if parents is not None and (controllers or not (chain is None
                                                        or isinstance(chain, str))):
            raise ValueError("A tree of nodes (parents) is built from the LinkDyn chain alone, "
                             "not with controllers or a chain component")
        if not isinstance(controllers, bool):
            raise TypeError(f"controllers must be a bool, not {controllers!r}")
        if not isinstance(local_loop, bool):
            raise TypeError(f"local_loop must be a bool, not {local_loop!r}")
        if local_loop and not controllers:
            raise ValueError("The local loop is built with the joint controllers "
                             "(controllers=True)")
        if controllers:
            if chain not in (None, "linkdyn"):
                given = chain if isinstance(chain, str) else type(chain).__name__
                raise ValueError("Controllers are built beside the LinkDyn chain only, not "
                                 f"with chain {given!r}")
            if policy not in (None, "sequential"):
                raise ValueError("The controlled chain runs the sequential policy, not "
                                 f"{policy!r}")
            if banks is not None:
                raise ValueError("The controlled chain runs the sequential policy (one "
                                 f"register bank), not banks={banks!r}")
            check_joint_count(type(self), self.nodes)
            from linkdyn.gateware.controlled_chain import ControlledChain
            chain = ControlledChain(self.nodes, fmt,
                                    cordic_step_cycles=self.cordic_step_cycles,
                                    local_loop=local_loop)
        elif chain is None or isinstance(chain, str):
            chain = make_chain(chain, self.nodes, fmt, policy, self.cordic_step_cycles,
                               parents=parents, banks=banks)
        elif getattr(getattr(chain, "spec", None), "n_nodes", self.nodes) != self.nodes:
            raise ValueError(f"The chain has {chain.spec.n_nodes} nodes, the board "
                             f"{self.nodes}")
        self.core = BoardCore(self.nodes, clock_hz=self.clock_hz, baudrate=baudrate, fmt=fmt,
                              board_id=self.board_id, chain=chain,
                              controllers=has_controllers(chain))

    @classmethod
    def check_arguments(cls, nodes=None, clock_hz=None):
        """Return ``(nodes, clock_hz)`` with the defaults filled in, if the board takes them.

        Raises
        ------
        TypeError, ValueError
            As the constructor.
        """
        nodes = cls.default_nodes if nodes is None else nodes
        if isinstance(nodes, bool) or not isinstance(nodes, int):
            raise TypeError(f"Node count must be an integer, not {nodes!r}")
        if not 1 <= nodes <= cls.max_nodes:
            raise ValueError(f"Node count for {cls.title} ({cls.platform_class.device}) must "
                             f"be in 1..{cls.max_nodes}, not {nodes}")
        clock_hz = cls.default_clock_hz if clock_hz is None else clock_hz
        if isinstance(clock_hz, bool) or not isinstance(clock_hz, int):
            raise TypeError(f"Clock frequency must be an integer (Hz), not {clock_hz!r}")
        cls.check_clock(clock_hz)
        return nodes, clock_hz

    # -- board description ----------------------------------------------------------------------

    @classmethod
    def platform(cls, **kwargs):
        """Return a new platform instance with :attr:`extra_resources` and the joint ports'
        resources (:attr:`joint_pins`) added."""
        platform = cls.platform_class(**kwargs)
        if cls.extra_resources:
            platform.add_resources(list(cls.extra_resources))
        if cls.joint_pins is not None:
            platform.add_resources(joint_resources(cls))
        return platform

    @classmethod
    def oscillator_hz(cls):
        """int: frequency of the board oscillator, Hz (from the platform's resource)."""
        platform = cls.platform_class()
        resource = platform.lookup(cls.oscillator, 0)
        return int(resource.clock.frequency)

    @property
    def device(self):
        """str: the FPGA (amaranth-boards' ``device``)."""
        return self.platform_class.device

    @property
    def cordic_step_cycles(self):
        """int: cycles per CORDIC step of the nodes the board builds: its family's
        (:data:`linkdyn.gateware.cordic.STEP_CYCLES`; a chain component passed in keeps its
        own)."""
        return STEP_CYCLES[self.family]

    @classmethod
    def check_clock(cls, clock_hz):
        """Raise ValueError if the board's clocking cannot make ``clock_hz``."""
        raise NotImplementedError

    def elaborate_clock(self, m, platform):
        """Add the ``sync`` domain (clock and synchronised reset) to ``m``."""
        raise NotImplementedError

    # -- elaboration ----------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        self.elaborate_clock(m, platform)
        m.submodules.core = core = self.core

        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.d.comb += [core.rx.eq(uart_rx.i), uart_tx.o.eq(core.tx)]

        for index in range(LED_COUNT):
            led = io.Buffer("o", platform.request("led", index, dir="-"))
            m.submodules[f"led_{index}"] = led
            m.d.comb += led.o.eq(core.leds[index])

        if core.controllers and self.joint_pins is not None:
            add_joint_ports(m, platform, self.clock_hz, [
                (core.sensor[i], core.actuator[i], controller.fault_clear, core.joint_port[i])
                for i, controller in enumerate(core.chain.controllers)])
        return m

    @property
    def joint_pins_report(self):
        """str: what a build report says of the joint pins (:func:`~linkdyn.boards.joint_pins.
        describe`); None without controllers."""
        if not self.core.controllers:
            return None
        return describe(type(self), self.nodes, self.clock_hz)


def oscillator_input(m, platform, resource):
    """Request the board clock through an input ``io.Buffer``; return its signal."""
    m.submodules.clk_buf = clk_buf = io.Buffer("i", platform.request(resource, 0, dir="-"))
    return clk_buf.i


def reset_input(m, platform, resource):
    """Request a reset button (active high after the resource's inversion); return its
    signal, or ``Const(0)`` for None."""
    if resource is None:
        return Const(0)
    m.submodules.rst_buf = rst_buf = io.Buffer("i", platform.request(resource, 0, dir="-"))
    return rst_buf.i


def synchronised_domain(m, clock, reset):
    """Add the ``sync`` domain driven by ``clock``, with ``reset`` (asynchronous: a button,
    a PLL's loss of lock) released synchronously through a :class:`ResetSynchronizer`; the
    power-on reset is released the same way."""
    m.domains.sync = ClockDomain("sync")
    m.d.comb += ClockSignal("sync").eq(clock)
    m.submodules.reset_sync = ResetSynchronizer(reset, domain="sync")


def spartan6_clock(m, platform, *, oscillator, oscillator_hz, clock_hz, reset):
    """Spartan-6 clocking: the oscillator (or a PLL_BASE output) on a BUFGCE enabled by the
    end of startup (STARTUP_SPARTAN6 EOS, as Amaranth's own Xilinx platform does), reset
    released synchronously. ``reset`` is the request name of a reset button or None."""
    clk_i = oscillator_input(m, platform, oscillator)
    rst_i = reset_input(m, platform, reset)
    end_of_startup = Signal()
    m.submodules.startup = Instance("STARTUP_SPARTAN6", o_EOS=end_of_startup)
    clock = Signal()
    if clock_hz == oscillator_hz:
        source, locked = clk_i, Const(1)
    else:
        setting = spartan6_pll_setting(oscillator_hz, clock_hz)
        source, feedback, locked = Signal(), Signal(), Signal()
        m.submodules.pll = Instance(
            "PLL_BASE",
            p_BANDWIDTH="OPTIMIZED", p_CLK_FEEDBACK="CLKFBOUT", p_COMPENSATION="INTERNAL",
            p_DIVCLK_DIVIDE=setting.input_div, p_CLKFBOUT_MULT=setting.feedback_mult,
            p_CLKFBOUT_PHASE=0.0, p_CLKOUT0_DIVIDE=setting.output_div, p_CLKOUT0_PHASE=0.0,
            p_CLKOUT0_DUTY_CYCLE=0.5, p_CLKIN_PERIOD=round(1e9 / oscillator_hz, 3),
            p_REF_JITTER=0.01,
            i_CLKIN=clk_i, i_CLKFBIN=feedback, i_RST=Const(0),
            o_CLKFBOUT=feedback, o_CLKOUT0=source, o_LOCKED=locked)
    m.submodules.clock_buffer = Instance("BUFGCE", i_I=source, i_CE=end_of_startup, o_O=clock)
    synchronised_domain(m, clock, rst_i | ~locked)
