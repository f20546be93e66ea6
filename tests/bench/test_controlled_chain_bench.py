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
