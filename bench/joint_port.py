"""Joint port figures: its area on Spartan-6 and ECP5, its frame timing at the boards' clocks.

Run as ``python -m linkdyn.bench.joint_port``. It synthesises one
:class:`~linkdyn.gateware.joint_port.JointPort` with the boards' timing at 100 MHz and at
50 MHz (:func:`linkdyn.boards.joint_pins.port_timing`) with Yosys for Spartan-6 (``synth_xilinx
-family xc6s``) and ECP5 (``synth_ecp5``), flattened, as the board builds count
(:func:`linkdyn.boards.toolchain.yosys_utilisation`), and prints the SPI clock, the frame
period and the cells; docs/controller.md, "Joint port", has the figures.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from amaranth.back import rtlil

from linkdyn.boards.joint_pins import port_timing
from linkdyn.boards.toolchain import ToolError, yosys_utilisation
from linkdyn.gateware.joint_port import JointPort, frame_cycles

__all__ = ["CLOCKS_HZ", "synthesize", "timing", "main"]

#: Core clocks of the figures: the single-FPGA builds' (100 MHz) and the actuator boards' (50).
CLOCKS_HZ = (100_000_000, 50_000_000)


def timing(clock_hz):
    """Return ``{"divisor", "gap", "sclk_mhz", "frame_cycles", "frame_us", "miso_margin_ns"}``
    of the boards' joint ports at ``clock_hz`` (Hz)."""
    divisor, gap = port_timing(clock_hz)
    cycles = frame_cycles(divisor, gap)
    return {"divisor": divisor, "gap": gap, "sclk_mhz": clock_hz / (2 * divisor) / 1e6,
            "frame_cycles": cycles, "frame_us": cycles / clock_hz * 1e6,
            "miso_margin_ns": (2 * divisor - 3) / clock_hz * 1e9}


def synthesize(family, clock_hz):
    """Synthesise one joint port with the boards' timing at ``clock_hz`` with Yosys.

    Returns
    -------
    dict
        :func:`~linkdyn.boards.toolchain.yosys_utilisation`'s result.

    Raises
    ------
    ToolError
        If no Yosys is found or it fails.
    """
    divisor, gap = port_timing(clock_hz)
    text = rtlil.convert(JointPort(divisor=divisor, gap=gap), name="linkdyn_joint_port")
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "joint_port.il").write_text(text)
        return yosys_utilisation(family, "joint_port.il", tmp, top="linkdyn_joint_port",
                                 flatten=True)


def main(argv=None):
    """Print the joint port's timing and area."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.joint_port",
                                     description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    print("| clock [MHz] | divisor | sclk [MHz] | gap [cycles] | frame [cycles] | frame [us] "
          "| miso margin [ns] | Spartan-6 LUT6 / FF | ECP5 LUT4 / FF |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for clock_hz in CLOCKS_HZ:
        t = timing(clock_hz)
        area = {}
        for family in ("xc6s", "ecp5"):
            try:
                result = synthesize(family, clock_hz)
                area[family] = f"{result['luts']:g} / {result['ffs']:g}"
            except ToolError as error:
                area[family] = f"not run: {str(error).splitlines()[0]}"
        print(f"| {clock_hz / 1e6:g} | {t['divisor']} | {t['sclk_mhz']:.3g} | {t['gap']} | "
              f"{t['frame_cycles']} | {t['frame_us']:.2f} | {t['miso_margin_ns']:.0f} | "
              f"{area['xc6s']} | {area['ecp5']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
