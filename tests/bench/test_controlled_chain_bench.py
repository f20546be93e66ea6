"""The controlled-chain benchmark: its parts add up to the step the chain reports, and its
records equal the model's."""

from linkdyn.bench.controlled_chain import measure, report
from linkdyn.gateware.controller import CYCLES


def test_the_parts_of_a_control_step_add_up_to_control_latency_cycles():
    r = measure(2, steps=2)
    assert r["matches_model"]
    assert r["added"] == r["step"] - r["update"]
    assert r["update_span"] == r["update"]
    parts = r["feedback"] + r["writes"] + r["update"] + r["reads"] + r["output"] + r["record"]
    assert abs(parts - r["step"]) <= 1, (parts, r)
    # The controller's segments are inside the step: feedback first, the last output after the
    # last tau read.
    assert r["feedback"] >= CYCLES["feedback"] and r["output"] >= CYCLES["output"]
    # 3 writes per node and CONTROL.start, one tau read per node, over the chain's bus.
    assert r["writes"] >= 4 * (3 * 2 + 1) and r["reads"] >= 3 * 2
    text = report([r])
    assert f"| 2 | {r['robot']} | {r['feedback']} |" in text


def test_fit_blocks_sum_every_module_into_its_first_matching_block():
    from linkdyn.bench.controlled_chain import FIT_BLOCKS, fit_blocks
    modules = {
        "top": {"luts": 80, "ffs": 30, "dsps": 0, "brams": 0},
        "top.chain": {"luts": 700, "ffs": 600, "dsps": 0, "brams": 0},
        "top.chain.controller0": {"luts": 800, "ffs": 500, "dsps": 4, "brams": 0},
        "top.chain.controller0.mul": {"luts": 100, "ffs": 10, "dsps": 0, "brams": 1},
        "top.chain.chain": {"luts": 580, "ffs": 400, "dsps": 0, "brams": 0},
        "top.chain.chain.node0.cordic": {"luts": 559, "ffs": 100, "dsps": 0, "brams": 0},
        "top.chain.chain.node0": {"luts": 219, "ffs": 100, "dsps": 0, "brams": 0.5},
        "top.hostlink.engine.registers": {"luts": 251, "ffs": 250, "dsps": 0, "brams": 0},
        "top.hostlink.engine": {"luts": 711, "ffs": 300, "dsps": 0, "brams": 0.5},
        "top.hostlink.rx_fifo": {"luts": 47, "ffs": 20, "dsps": 0, "brams": 0},
    }
    blocks = fit_blocks(modules)
    assert list(blocks) == [label for label, _ in FIT_BLOCKS]
    luts = [b["luts"] for b in blocks.values()]
    assert luts == [900, 778, 580, 700, 962, 47, 80]
    assert blocks["joint controller"]["brams"] == 1 and blocks["joint controller"]["dsps"] == 4
    assert sum(luts) == sum(m["luts"] for m in modules.values())
    text = report([], {"node + controller + UART": {"luts": 4805, "percent": 84.0, "ffs": 1,
                                                    "dsps": 8, "brams": 4.5}}, blocks)
    assert "**not met** (801 LUT6 over)" in text and "| joint controller | 900 |" in text
