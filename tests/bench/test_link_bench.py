"""Link benchmark (bench/link.py): the 6-board estimate's arithmetic and the report."""

from linkdyn.bench.link import CHIP_LATENCY_CYCLES, estimate, report


def test_estimate_adds_hops_and_serialisation_to_the_chip_latency():
    forward = {"first": [60, 70, 80], "last": [420, 430, 440]}
    backward = {"first": [65, 70, 75], "last": [290, 300, 310]}
    bounds = estimate(forward, backward, word_cycles=45)
    assert bounds["overlapped"] == CHIP_LATENCY_CYCLES + 5 * (70 + 70) + 13 * 45
    assert bounds["store_and_forward"] == CHIP_LATENCY_CYCLES + 5 * (430 + 300)


def test_report_has_every_table_and_judges_the_goal():
    forward = {"first": [76], "last": [436]}
    backward = {"first": [76], "last": [301]}
    counters = {"crc_errors": 1, "retransmissions": 2}
    run = {"words_per_cycle": 1 / 45.5, "flipped": 3, "a": counters, "b": counters}
    synthesis = {"xc6s": {"luts": 900, "ffs": 550, "brams": 1, "dsps": 0},
                 "ecp5": "not run: no yosys"}
    fmax = {"$glbnet$clk$TRELLIS_IO_IN": {"achieved": 100.0, "constraint": 100},
            "$glbnet$rx_clk$TRELLIS_IO_IN": {"achieved": 106.33, "constraint": 100}}
    text = report(forward, backward, {"one way": run}, {"one way": run}, synthesis, fmax)
    assert "Fmax board clock 100.0 MHz, receive clock 106.3 MHz" in text
    assert text.startswith("## Figures\n")
    assert "| forward, 9 words (A to B) | 76 / 76 / 76 | 436 / 436 / 436 | 1.52 | 8.72 |" in text
    assert "| one way | 0 | 45.5 | 1.099 M | 35.2 | 3 | 2 | 2 |" in text
    assert "| Spartan-6 (`synth_xilinx -family xc6s`) | 900 | 550 | 1 | 0 |" in text
    assert "not run: no yosys" in text
    # 501 + 5 x 152 + 13 x 45.5 = 1852.5 cycles = 37.05 us: met; 501 + 5 x 737 = 4186: missed.
    assert "| 1852 | 37.0 | met |" in text and "| 4186 | 83.7 | missed |" in text
