"""Distributed benchmark (bench/distributed.py): a 2-board measurement's words and hop figures,
and the report's arithmetic."""

from linkdyn.bench.distributed import CHIP_LATENCY_CYCLES, measure, report

#: Cycles of one word frame on the line at 2 bits per cycle: 9 8b/10b symbols of 5 cycles.
FRAME_CYCLES = 45


def test_two_boards_deliver_every_message_word_once_in_order_after_a_frame():
    result = measure(2, updates=1, settle=1500)
    assert len(result["latency"]) == 1 and result["interval"] == []
    ((forward,),), ((backward,),) = result["hops"]["forward"], result["hops"]["backward"]
    assert sorted(w for w, _, _ in forward) == list(range(9))
    assert sorted(w for w, _, _ in backward) == list(range(6))
    for words in (forward, backward):
        # Delivered in the order the sender's MAC produced them (the link keeps it).
        delivered = [got for _, _, got in words]
        assert delivered == sorted(delivered)
        # A word is delivered once its whole frame arrived (and its CRC checked), and the
        # words of one message follow at least a frame apart.
        assert all(got - sent > FRAME_CYCLES for _, sent, got in words)
        assert all(b - a >= FRAME_CYCLES for a, b in zip(delivered, delivered[1:]))
    # The update waits for both messages' last words on top of the nodes' own work.
    assert result["latency"][0] > CHIP_LATENCY_CYCLES[2] + (9 + 6 - 2) * FRAME_CYCLES
    assert {board for board, _, _ in result["runs"]} == {0, 1}


def test_report_tables_and_the_goal():
    def fake(n, latencies):
        return {"n": n, "latency": latencies, "interval": [5000],
                "hops": {"forward": [[[(0, 10, 70), (8, 100, 400)]]] * max(n - 1, 0),
                         "backward": [[[(0, 20, 90), (5, 50, 300)]]] * max(n - 1, 0)},
                "runs": [], "words": []}
    results = [fake(1, [198, 198]), fake(6, [2978, 3028])]
    text = report(results, {"xc6s": {"luts": 5000, "ffs": 3000, "brams": 4, "dsps": 4},
                            "ecp5": "not run: no yosys"})
    assert text.startswith("## Distributed\n")
    assert "| 1 | 198 / 198 | 4.0 / 4.0 | 0 | 252.5 | 198 | - | 5000 | 10.0 |" in text
    # (3003 - 478) / 5 = 505 cycles per hop; 3028 cycles = 60.6 us, 16.5 kHz.
    assert "| 6 | 2978 / 3028 | 59.6 / 60.6 | 50 | 16.5 | 478 | 505 | 5000 | 10.0 |" in text
    assert "| forward, 9 words | 60 / 60 / 60 | 300 / 300 / 300 | 1.20 | 6.00 |" in text
    assert "59.6 .. 60.6 us, **missed**" in text
    assert "| Spartan-6 (`synth_xilinx -family xc6s`) | 5,000 | 3,000 | 4 | 4 | 87% |" in text
    assert "not run: no yosys" in text
