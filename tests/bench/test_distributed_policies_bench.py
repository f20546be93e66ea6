"""The policy benchmark of the distributed chain (bench/distributed_pipelined.py): on one board
the sequential stream's latency is the on-chip chain's of one node (201 cycles,
``bench.distributed.CHIP_LATENCY_CYCLES``, itself checked against LinkDynChain), the
pipelined stream keeps several updates in flight, its first takes the same 201 cycles; the report's table and the section's place in docs/performance.md."""

import pytest

from linkdyn.bench.distributed import CHIP_LATENCY_CYCLES
from linkdyn.bench.distributed_pipelined import SECTION, _write_section, report, steady, stream

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def test_one_board_streams_of_both_policies():
    sequential = stream(1, "sequential", 4, settle=10)
    pipelined = stream(1, "pipelined", 8, settle=10)
    assert sequential["latency"] == [CHIP_LATENCY_CYCLES[1]] * 4
    assert sequential["in_flight"] == 1
    _, sequential_intervals = steady(sequential)
    assert min(sequential_intervals) >= CHIP_LATENCY_CYCLES[1]
    # One node does all the work of every sample: the pipelined stream keeps several updates
    # in flight, the first one alone takes the chip's latency, and the next start as soon as
    # the node can take them (the start no longer waits for the STATUS poll).
    assert pipelined["in_flight"] > 1
    assert pipelined["latency"][0] == CHIP_LATENCY_CYCLES[1]
    _, intervals = steady(pipelined)
    assert min(intervals) < min(sequential_intervals)
    sequential["alone"] = CHIP_LATENCY_CYCLES[1]
    pipelined["alone"] = pipelined["latency"][0]
    text = report([sequential, pipelined], {"xc6s": {"luts": 1, "ffs": 2, "dsps": 3,
                                                     "brams": 4}})
    rows = [line for line in text.splitlines() if line.startswith("| sequential")
            or line.startswith("| pipelined")]
    assert len(rows) == 2 and "| 201 .. 201 |" in rows[0]
    assert "| Spartan-6 (`synth_xilinx -family xc6s`) | 1 | 2 | 3 | 4 |" in text


def test_the_section_goes_after_the_distributed_one(tmp_path):
    path = tmp_path / "performance.md"
    path.write_text("# P\n\n## Distributed\n\ntext\n\n## Distributed boards\n\nmore\n")
    _write_section(path, f"{SECTION}\n\nfirst\n")
    _write_section(path, f"{SECTION}\n\nsecond\n")
    text = path.read_text()
    assert text.count(SECTION) == 1 and "first" not in text
    assert text.index("## Distributed\n") < text.index(SECTION) < text.index(
        "## Distributed boards")
