"""Distributed benchmark (bench/distributed.py): a 2-board measurement's words and hop figures,
and the report's arithmetic."""

from linkdyn.bench.distributed import CHIP_LATENCY_CYCLES, measure, report
from linkdyn.gateware.actuator import LINK_BURST
from linkdyn.gateware.link import burst_frame_bytes

#: Cycles per character on the line at 2 bits per cycle (10 bits per 8b/10b symbol).
CHARACTER_CYCLES = 5


def _runs(cycles):
    """Lengths of the runs of consecutive cycles (the words of one frame come one per cycle)."""
    runs = [1]
    for a, b in zip(cycles, cycles[1:]):
        if b == a + 1:
            runs[-1] += 1
        else:
            runs.append(1)
    return runs


def test_two_boards_deliver_every_message_word_once_in_order_in_burst_frames():
    result = measure(2, updates=1, settle=1500)
    assert len(result["latency"]) == 1 and result["interval"] == []
    ((forward,),), ((backward,),) = result["hops"]["forward"], result["hops"]["backward"]
    assert sorted(w for w, _, _ in forward) == list(range(9))
    assert sorted(w for w, _, _ in backward) == list(range(6))
    shortest = len(burst_frame_bytes(0, [(0, 0)])) * CHARACTER_CYCLES
    for words, burst in ((forward, LINK_BURST["down"]), (backward, LINK_BURST["up"])):
        # Delivered in the order the sender's MAC produced them (the link keeps it), once
        # the whole frame arrived and its CRC was checked, the words of a frame one per cycle.
        delivered = [got for _, _, got in words]
        assert delivered == sorted(delivered)
        assert all(got - sent > shortest for _, sent, got in words)
        assert max(_runs(delivered)) <= burst
    # distal writes the backward message at its end: all of it goes in one frame.
    assert _runs([got for _, _, got in backward]) == [6]
    frame = len(burst_frame_bytes(0, [(0, 0)] * 6)) * CHARACTER_CYCLES
    assert backward[0][2] - backward[0][1] > frame
    # The update waits for the backward frame on top of the nodes' own work.
    assert result["latency"][0] > CHIP_LATENCY_CYCLES[2] + frame
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
    assert "| 1 | 198 / 198 | 4.0 / 4.0 | 0 | 252.5 | 201 | - | 5000 | 10.0 |" in text
    # (3003 - 501) / 5 = 500.4 cycles per hop; 3028 cycles = 60.6 us, 16.5 kHz.
    assert "| 6 | 2978 / 3028 | 59.6 / 60.6 | 50 | 16.5 | 501 | 500 | 5000 | 10.0 |" in text
    assert "| forward, 9 words | 60 / 60 / 60 | 300 / 300 / 300 | 1.20 | 6.00 |" in text
    assert "59.6 .. 60.6 us, **missed**" in text
    assert "| Spartan-6 (`synth_xilinx -family xc6s`) | 5,000 | 3,000 | 4 | 4 | 87% |" in text
    assert "not run: no yosys" in text


def test_report_before_after_and_bit_error_tables():
    def fake(n, latencies, last_forward, last_backward):
        return {"n": n, "latency": latencies, "interval": [5000],
                "hops": {"forward": [[[(0, 10, 70), (8, 100, 100 + last_forward)]]] * (n - 1),
                         "backward": [[[(0, 20, 90), (5, 50, 50 + last_backward)]]] * (n - 1)},
                "runs": [], "words": []}
    after = fake(6, [2400, 2450], 150, 180)
    before = fake(6, [3032, 3117], 188, 279)
    noisy = dict(fake(6, [2400, 2500, 3600], 150, 180), ber=1e-4, flipped=12, crc_errors=9,
                 retransmissions=20)
    text = report([after], before=before, noisy=noisy)
    assert "| one word per frame | 3032 / 3117 | 60.6 / 62.3 | 16.0 | 188 | 279 |" in text
    assert "| burst frames | 2400 / 2450 | 48.0 / 49.0 | 20.4 | 150 | 180 |" in text
    assert "48.0 .. 49.0 us, met" in text
    assert ("latency 2400 / 2500 / 3600 cycles (min / median / max), 48.0 / 72.0 us, jitter "
            "1200 cycles; 12 bits flipped, 9 frames dropped") in text


def test_the_on_chip_latencies_the_benches_take_are_the_chains_own():
    # The benchmarks compare the links with the single-FPGA chain's LATENCY_CYCLES as
    # constants; they must be what the chain's own counter reads (they go stale when the
    # microprogram changes).
    from linkdyn.bench import link
    from linkdyn.boards.cycles import simulate_update_cycles
    from linkdyn.gateware.chain import LinkDynChain
    for n in (1, 2, 6):
        measured = simulate_update_cycles(LinkDynChain(n), updates=3)
        assert measured["update_latency_cycles"] == CHIP_LATENCY_CYCLES[n], n
    assert link.CHIP_LATENCY_CYCLES == CHIP_LATENCY_CYCLES[6]
