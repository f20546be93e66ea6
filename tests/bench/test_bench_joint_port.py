"""The joint port benchmark's timing figures (bench/joint_port.py; the synthesis runs with the
benchmark, not here)."""

import pytest

from linkdyn.bench.joint_port import CLOCKS_HZ, timing


@pytest.mark.parametrize("clock_hz, expected", [
    # divisor, gap, sclk [MHz], frame [cycles], frame [us], miso margin [ns]
    (100_000_000, (4, 200, 12.5, 781, 7.81, 50.0)),
    (50_000_000, (3, 100, 50 / 6, 536, 10.72, 60.0)),
])
def test_joint_port_timing_at_the_boards_clocks(clock_hz, expected):
    assert clock_hz in CLOCKS_HZ
    t = timing(clock_hz)
    got = (t["divisor"], t["gap"], t["sclk_mhz"], t["frame_cycles"], t["frame_us"],
           t["miso_margin_ns"])
    assert got == pytest.approx(expected)
    # 72 bits of 2 divisor cycles, half a period, gap + 1 cycles with cs_n high.
    assert t["frame_cycles"] == 144 * t["divisor"] + t["divisor"] + t["gap"] + 1
