"""Pipelined host path benchmark (bench/pipelined_host.py): frame sizes, the rate arithmetic and
the report, on made-up measurements (the measurement itself runs the simulated board)."""

import pytest

from linkdyn.bench.pipelined_host import BAUDRATES, frame_bytes, rates, report
from linkdyn.model import protocol as P


def test_frame_bytes_are_the_protocol_frames():
    spec = P.ProtocolSpec(6, banks=4)
    # STEP: 6 header + 18 words + 2 CRC; reply 7 header + (6 tau + 5 status) words + 2 CRC.
    assert frame_bytes(spec, 0) == (6 + 72 + 2, 7 + 44 + 2)
    # BATCH of 4: the count word and 4 x 18 words; reply 4 x (6 + 2) + 5 words.
    assert frame_bytes(spec, 4) == (6 + 4 + 288 + 2, 7 + 148 + 2)
    request = P.encode_request(P.Command.BATCH, P.batch_payload(
        spec, [P.step_payload(spec, [0] * 6, [0] * 6, [0] * 6)] * 4))
    assert len(request) == frame_bytes(spec, 4)[0]


def test_rates_of_one_at_a_time_and_streamed_frames():
    # 100 MHz, 3 Mbaud -> divisor 33, 3.3 us a byte; 696 cycles = 6.96 us.
    one, streamed = rates(80, 53, 696, 1, 100e6, 3_000_000)
    assert one == pytest.approx(1 / (133 * 3.3e-6 + 6.96e-6))
    assert streamed == pytest.approx(1 / (80 * 3.3e-6))          # the request line
    # The engine's bound: an unlimited line leaves the turnaround plus a cycle per byte taken
    # and handed over; 4 states a frame.
    assert rates(300, 157, 1000, 4, 100e6, None) == (pytest.approx(4 / 14.57e-6),
                                                     pytest.approx(4 / 14.57e-6))
    # A slow board behind a fast line: the engine's time, not the line's.
    assert rates(10, 10, 1000, 1, 100e6, 25_000_000)[1] == pytest.approx(1 / 10.2e-6)
    # A long reply on a fast board: the reply's line time.
    assert rates(10, 100, 10, 1, 100e6, 25_000_000)[1] == pytest.approx(1 / 40e-6)


def test_report_has_both_tables_and_the_overlap():
    m = {"step": [700, 700, 701], "step_latency": 480, "banks": 4,
         "batch": {1: [720], 2: [900], 3: [1100], 4: [1300]},
         "latency": {1: 480, 2: 560, 3: 560, 4: 560}, "interval": {1: 9000, 2: 150, 3: 150,
                                                                     4: 150},
         "wall": {"step": 100.0, "batch": 120.0}, "simulator": "verilator",
         "clock_hz": 12_000_000, "divisor": 4}
    text = report(m, 100e6, image="img/x.png")
    assert text.startswith("## Pipelined host path\n")
    assert "| STEP | 1 | 80 + 53 | 700 | 700 | 480 | - |" in text
    assert "| BATCH K = 4 | 4 | 300 + 157 | 1300 | 325 | 560 | 150 |" in text
    assert "2.2 x fewer" in text                                   # 700 / 325
    assert len(BAUDRATES) == 3 and "unlimited line" in text and "25 Mbaud" in text
    assert "![Updates per second, STEP and BATCH, per line rate](img/x.png)" in text
    assert "STEP 100, BATCH 120" in text
    assert "Engine resources" not in text
    m["synthesis"] = {1: {"luts": 1000, "ffs": 600, "dsps": 0, "brams": 0.5,
                          "buffer_words": 153},
                      4: {"luts": 1200, "ffs": 700, "dsps": 0, "brams": 0.5,
                          "buffer_words": 217}}
    text = report(m, 100e6)
    assert "| sequential (no BATCH) | 1000 | 600 | 0.5 | 153 |" in text
    assert "| 4 banks (BATCH) | 1200 | 700 | 0.5 | 217 |" in text
