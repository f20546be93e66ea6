"""Digilent Atlys (Xilinx Spartan-6 XC6SLX45-3CSG324).

- clock: the 100 MHz oscillator (``clk100``, L15), or a PLL_BASE output for another
  ``clock_hz``; reset: the RESET button (``rst``, T15, active low);
- UART: the XR21V1410 USB-UART (amaranth-boards ``uart`` 0, J17: rx A16, tx B16);
- LEDs LD0..LD3 (U18 M14 N14 L14): heartbeat, host link busy, overflow, chain busy;
- no joint pins (``joint_pins`` None): a build with the joint controllers reads their sensor
  inputs as 0 (:mod:`linkdyn.boards.joint_pins`).

Synthesis figures from Yosys (``synth_xilinx -family xc6s``); place and route and the
bitstream need Xilinx ISE 14.7 (the build tree is written by Amaranth).
"""

from amaranth_boards.atlys import AtlysPlatform

from .common import BoardTop, spartan6_clock, spartan6_pll_setting

__all__ = ["AtlysTop"]


class AtlysTop(BoardTop):
    """Atlys top-level (see the module documentation). Parameters as
    :class:`~linkdyn.boards.common.BoardTop`."""

    name = "atlys"
    board_id = 2
    title = "Digilent Atlys"
    platform_class = AtlysPlatform
    family = "xc6s"
    oscillator = "clk100"
    default_nodes = 6
    #: A node of the chain takes 4 of the 58 DSP48A1 and about 1,800 LUT6 (6-node synthesis,
    #: one-cycle CORDIC steps: 12,142 LUT6 with the host link): 14 nodes use 56 DSPs and ~98 %
    #: of the LUTs.
    max_nodes = 14
    default_clock_hz = 100_000_000
    uart_note = "XR21V1410 USB-UART, J17 (uart 0: rx A16, tx B16)"

    @classmethod
    def check_clock(cls, clock_hz):
        if clock_hz != cls.oscillator_hz():
            spartan6_pll_setting(cls.oscillator_hz(), clock_hz)

    def elaborate_clock(self, m, platform):
        spartan6_clock(m, platform, oscillator=self.oscillator,
                       oscillator_hz=self.oscillator_hz(), clock_hz=self.clock_hz, reset="rst")
