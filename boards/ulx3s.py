"""ULX3S 85F (Lattice ECP5 LFE5U-85F): the open-toolchain board.

- clock: the 25 MHz oscillator (``clk25``, G2) through an EHXPLLL to the core clock (default
  100 MHz, which the 6-node build meets; any frequency the PLL makes, see
  :func:`~linkdyn.boards.common.ecp5_pll_setting`); reset: the PWR button (``button_pwr``,
  D6, active low) or a lost PLL lock;
- UART: the FT231X USB-UART (amaranth-boards ``uart`` 0: FPGA receives on M1, transmits on
  L4), 2 Mbaud at 50 MHz, 3 Mbaud at 60, 75, 80 or 100 MHz (the fastest standard rate the
  clock makes within 1.5 %);
- LEDs 0..3 (B2 C2 C1 D2): heartbeat, host link busy, overflow, chain busy;
- joint ports (built with the joint controllers, ``controllers=True``; an SPI link per joint to
  its drive, :mod:`linkdyn.boards.joint_pins`, docs/controller.md, "Joint port"): six, on the
  GPIO headers' single-ended GP/GN pins, LVCMOS33, ``miso`` pulled up. Pairs 0..3 stay free for
  the distributed mode's links, 11..13 (shared with the ESP32) and 14..17 (the ADC's inputs)
  are not used; LED 4 (D1) lights while a joint port's fault is latched:

  =====  ============  ============  ============  ============  ============
  joint  sclk          cs_n          mosi          miso (in)     enable
  =====  ============  ============  ============  ============  ============
  0      GP4 (A7)      GN4 (A8)      GP5 (C8)      GN5 (B8)      GP6 (C6)
  1      GN6 (C7)      GP7 (A6)      GN7 (B6)      GP8 (A4)      GN8 (A5)
  2      GP18 (H18)    GN18 (H17)    GP19 (F17)    GN19 (G18)    GP20 (D18)
  3      GN20 (E17)    GP21 (C18)    GN21 (D17)    GP22 (B15)    GN22 (C15)
  4      GP23 (B17)    GN23 (C17)    GP24 (C16)    GN24 (D16)    GP25 (D14)
  5      GN25 (E14)    GP26 (B13)    GN26 (C13)    GP27 (D13)    GN27 (E13)
  =====  ============  ============  ============  ============  ============

Built with Yosys, nextpnr-ecp5 and ecppack (YoWASP), programmed with openFPGALoader.
"""

from amaranth.hdl import Const, Instance, Signal
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from .common import BoardTop, ecp5_pll_setting, oscillator_input, reset_input, \
    synchronised_domain

__all__ = ["ULX3STop"]


class ULX3STop(BoardTop):
    """ULX3S 85F top-level (see the module documentation). Parameters as
    :class:`~linkdyn.boards.common.BoardTop`."""

    name = "ulx3s"
    board_id = 1
    title = "ULX3S 85F"
    platform_class = ULX3S_85F_Platform
    family = "ecp5"
    oscillator = "clk25"
    default_nodes = 6
    #: A node of the chain takes about 3,000 TRELLIS_COMB, 4 MULT18X18D and 4 DP16KD (6-node
    #: build: 21,216 / 24 / 27 with the host link); 23 fill the 83,640 LUT4 slots to ~85 %
    #: (23 x 4 DSPs of 156; not placed and routed at that size).
    max_nodes = 23
    #: 100 MHz (UART 3 Mbaud, divisor 33): the 6-node build meets timing there (104.2 MHz
    #: at a 100 MHz target; docs/performance.md, "Boards").
    default_clock_hz = 100_000_000
    uart_note = "FT231X USB-UART (uart 0: rx M1, tx L4)"
    reset = "button_pwr"
    #: The joint ports (module documentation): GPIO pairs 4..8 (J1) and 18..27 (J2).
    joint_pins = (("gpio", 0), [
        {"sclk": "4+", "cs_n": "4-", "mosi": "5+", "miso": "5-", "enable": "6+"},
        {"sclk": "6-", "cs_n": "7+", "mosi": "7-", "miso": "8+", "enable": "8-"},
        {"sclk": "18+", "cs_n": "18-", "mosi": "19+", "miso": "19-", "enable": "20+"},
        {"sclk": "20-", "cs_n": "21+", "mosi": "21-", "miso": "22+", "enable": "22-"},
        {"sclk": "23+", "cs_n": "23-", "mosi": "24+", "miso": "24-", "enable": "25+"},
        {"sclk": "25-", "cs_n": "26+", "mosi": "26-", "miso": "27+", "enable": "27-"},
    ])

    @classmethod
    def check_clock(cls, clock_hz):
        ecp5_pll_setting(cls.oscillator_hz(), clock_hz)

    def elaborate_clock(self, m, platform):
        in_hz = self.oscillator_hz()
        setting = ecp5_pll_setting(in_hz, self.clock_hz)
        clk25 = oscillator_input(m, platform, self.oscillator)
        button = reset_input(m, platform, self.reset)
        clock, locked = Signal(), Signal()
        mhz = 1e6
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{in_hz / mhz:g}",
            a_FREQUENCY_PIN_CLKOP=f"{float(setting.out_hz) / mhz:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=setting.input_div, p_CLKOP_ENABLE="ENABLED",
            p_CLKOP_DIV=setting.output_div, p_CLKOP_CPHASE=(setting.output_div - 1) // 2,
            p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP", p_CLKFB_DIV=setting.feedback_mult,
            i_RST=Const(0), i_STDBY=Const(0), i_CLKI=clk25, i_CLKFB=clock,
            i_PHASESEL0=Const(0), i_PHASESEL1=Const(0), i_PHASEDIR=Const(1),
            i_PHASESTEP=Const(1), i_PHASELOADREG=Const(1), i_PLLWAKESYNC=Const(0),
            i_ENCLKOP=Const(0),
            o_CLKOP=clock, o_LOCK=locked)
        # nextpnr derives the PLL output's constraint from the oscillator's (FREQUENCY PORT).
        synchronised_domain(m, clock, button | ~locked)
