"""SK-XC6SLX9 (Xilinx Spartan-6 XC6SLX9-2TQG144), UART and LEDs on header X7.

The board has neither a USB-UART nor LEDs, so both are added on header X7 (3.3 V): a USB-UART
adapter on pins 3 and 5 and four LEDs (with series resistors to GND) on pins 6 to 9:

========  ==========  ========  ==========================================
signal    header pin  FPGA pin  direction
========  ==========  ========  ==========================================
rx        X7-3        P34       adapter TXD -> FPGA (pull-up, idle high)
tx        X7-5        P33       FPGA -> adapter RXD
led 0     X7-6        P32       heartbeat
led 1     X7-7        P30       host link busy
led 2     X7-8        P29       overflow
led 3     X7-9        P27       chain busy
========  ==========  ========  ==========================================

- clock: the 50 MHz oscillator (``clk50``, P134), or a PLL_BASE output for another
  ``clock_hz``; no reset button: reset is released synchronously after configuration;
- UART: 2 Mbaud by default (50 MHz makes 3 Mbaud only 2 % off; 2 Mbaud is exact).

Joint ports (built with the joint controllers, ``controllers=True``; an SPI link per joint to
its drive, :mod:`linkdyn.boards.joint_pins`, docs/controller.md, "Joint port"), on header
X7, LVCMOS33, ``miso`` pulled up (the same FPGA pins on the Mimas's P1 and the SK-XC6SLX9's
X7):

=====  =============  =============  =============  =============  =============
joint  sclk           cs_n           mosi           miso (in)      enable
=====  =============  =============  =============  =============  =============
0      X7-10 (P26)   X7-11 (P24)   X7-12 (P23)   X7-13 (P22)   X7-14 (P21)
1      X7-23 (P8)    X7-24 (P7)    X7-25 (P6)    X7-26 (P5)    X7-27 (P2)
=====  =============  =============  =============  =============  =============
"""

from amaranth.build import Attrs, Pins, Resource, Subsignal
from amaranth_boards.sk_xc6slx9 import SK_XC6SLX9Platform

from .common import BoardTop, spartan6_clock, spartan6_pll_setting

__all__ = ["SK_XC6SLX9Top", "HEADER_UART", "HEADER_LEDS"]

#: The UART on header X7 (pins 3 and 5).
HEADER_UART = Resource(
    "uart", 0,
    Subsignal("rx", Pins("3", dir="i", conn=("x", 7)), Attrs(PULLUP="TRUE")),
    Subsignal("tx", Pins("5", dir="o", conn=("x", 7))),
    Attrs(IOSTANDARD="LVCMOS33"))

#: Four status LEDs on header X7 (pins 6 to 9).
HEADER_LEDS = tuple(
    Resource("led", index, Pins(pin, dir="o", conn=("x", 7)), Attrs(IOSTANDARD="LVCMOS33"))
    for index, pin in enumerate(("6", "7", "8", "9")))


class SK_XC6SLX9Top(BoardTop):
    """SK-XC6SLX9 top-level (see the module documentation). Parameters as
    :class:`~linkdyn.boards.common.BoardTop`."""

    name = "sk_xc6slx9"
    board_id = 4
    title = "SK-XC6SLX9"
    platform_class = SK_XC6SLX9Platform
    family = "xc6s"
    oscillator = "clk50"
    #: Yosys synthesis (synth_xilinx, one-cycle CORDIC steps): 1 node 3,191 LUT6 (56 %),
    #: 2 nodes 5,038 (88 %), 3 nodes more than the 5,720 the device has; a node also takes 4 of
    #: the 16 DSP48A1. Two nodes, as many as fit, are the default (ISE's map and place, not run
    #: here, have the last word).
    default_nodes = 2
    max_nodes = 2
    default_clock_hz = 50_000_000
    uart_note = "header X7: rx X7-3 (P34), tx X7-5 (P33), 3.3 V USB-UART adapter"
    #: The joint ports (module documentation): header X7 pins 10..14 and 23..27.
    joint_pins = (("x", 7), [
        {"sclk": "10", "cs_n": "11", "mosi": "12", "miso": "13", "enable": "14"},
        {"sclk": "23", "cs_n": "24", "mosi": "25", "miso": "26", "enable": "27"},
    ])
    extra_resources = (HEADER_UART, *HEADER_LEDS)

    @classmethod
    def check_clock(cls, clock_hz):
        if clock_hz != cls.oscillator_hz():
            spartan6_pll_setting(cls.oscillator_hz(), clock_hz)

    def elaborate_clock(self, m, platform):
        spartan6_clock(m, platform, oscillator=self.oscillator,
                       oscillator_hz=self.oscillator_hz(), clock_hz=self.clock_hz, reset=None)
