"""Numato Mimas (Xilinx Spartan-6 XC6SLX9-2TQG144), UART on header P1.

The board has no USB-UART (its USB port only configures the flash), so the UART is added on
header P1 for a 3.3 V USB-UART adapter (FT232R/FT2232H class for 3 Mbaud):

========  ==========  ========  ==========================================
signal    header pin  FPGA pin  direction
========  ==========  ========  ==========================================
rx        P1-3        P35       adapter TXD -> FPGA (pull-up, idle high)
tx        P1-4        P34       FPGA -> adapter RXD
GND       P1-1 / 2    -         adapter GND
========  ==========  ========  ==========================================

- clock: the 100 MHz oscillator (``clk100``, P126), or a PLL_BASE output for another
  ``clock_hz``; no reset button is used (the four push buttons stay free): reset is released
  synchronously after configuration;
- LEDs D1..D4 (P119 P118 P117 P116): heartbeat, host link busy, overflow, chain busy.

Joint ports (built with the joint controllers, ``controllers=True``; an SPI link per joint to
its drive, :mod:`linkdyn.boards.joint_pins`, docs/controller.md, "Joint port"), on header
P1, LVCMOS33, ``miso`` pulled up (the same FPGA pins on the Mimas's P1 and the SK-XC6SLX9's
X7); LED D5 (P115) lights while a joint port's fault is latched:

=====  =============  =============  =============  =============  =============
joint  sclk           cs_n           mosi           miso (in)      enable
=====  =============  =============  =============  =============  =============
0      P1-10 (P26)   P1-11 (P24)   P1-12 (P23)   P1-13 (P22)   P1-14 (P21)
1      P1-23 (P8)    P1-24 (P7)    P1-25 (P6)    P1-26 (P5)    P1-27 (P2)
=====  =============  =============  =============  =============  =============
"""

from amaranth.build import Attrs, Pins, Resource, Subsignal
from amaranth_boards.numato_mimas import NumatoMimasPlatform

from .common import BoardTop, spartan6_clock, spartan6_pll_setting

__all__ = ["MimasTop", "HEADER_UART"]

#: The UART on header P1 (pins 3 and 4).
HEADER_UART = Resource(
    "uart", 0,
    Subsignal("rx", Pins("3", dir="i", conn=("p", 1)), Attrs(PULLUP="TRUE")),
    Subsignal("tx", Pins("4", dir="o", conn=("p", 1))),
    Attrs(IOSTANDARD="LVCMOS33"))


class MimasTop(BoardTop):
    """Numato Mimas top-level (see the module documentation). Parameters as
    :class:`~linkdyn.boards.common.BoardTop`."""

    name = "mimas"
    board_id = 3
    title = "Numato Mimas"
    platform_class = NumatoMimasPlatform
    family = "xc6s"
    oscillator = "clk100"
    #: Yosys synthesis (synth_xilinx, one-cycle CORDIC steps): 1 node 3,191 LUT6 (56 %),
    #: 2 nodes 5,038 (88 %), 3 nodes more than the 5,720 the device has; a node also takes 4 of
    #: the 16 DSP48A1. Two nodes, as many as fit, are the default (ISE's map and place, not run
    #: here, have the last word).
    default_nodes = 2
    max_nodes = 2
    default_clock_hz = 100_000_000
    uart_note = "header P1: rx P1-3 (P35), tx P1-4 (P34), 3.3 V USB-UART adapter"
    #: The joint ports (module documentation): header P1 pins 10..14 and 23..27.
    joint_pins = (("p", 1), [
        {"sclk": "10", "cs_n": "11", "mosi": "12", "miso": "13", "enable": "14"},
        {"sclk": "23", "cs_n": "24", "mosi": "25", "miso": "26", "enable": "27"},
    ])
    extra_resources = (HEADER_UART,)

    @classmethod
    def check_clock(cls, clock_hz):
        if clock_hz != cls.oscillator_hz():
            spartan6_pll_setting(cls.oscillator_hz(), clock_hz)

    def elaborate_clock(self, m, platform):
        spartan6_clock(m, platform, oscillator=self.oscillator,
                       oscillator_hz=self.oscillator_hz(), clock_hz=self.clock_hz, reset=None)
