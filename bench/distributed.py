"""Distributed-mode figures: per-hop latency, update latency and rate of 1 .. 6 boards.

Run as ``python -m linkdyn.bench.distributed [--write-docs docs/performance.md]
[--link-docs docs/link.md] [--boards 6] [--updates 5] [--jobs 2] [--synthesize]``. It simulates
:class:`~linkdyn.gateware.distributed.DistributedChain` (one node per board, 2 bits per cycle:
the DDR link at 100 Mbit/s with a 50 MHz board clock, line delay 3 cycles) in the Amaranth
simulator and, for n = 1 .. ``boards``,

1. waits for link-up, then runs ``updates`` sequential updates through the register bus
   (CONTROL.start, STATUS polled until done, LATENCY_CYCLES read), one after the other;
2. records, on every hop, the cycle each message word is written by the sender's MAC (the
   node's ``result`` port) and the cycle the receiving board's link delivers it into its
   mailbox: the per-hop latency of the first and of the last word of the forward (9 words)
   and backward (6 words) messages;
3. on 6 boards also with one word per frame (the links' ``burst=1``: the figures before the
   burst frames) and with bit errors on every line (``--ber``, the jitter they cause);
4. with ``--write-docs``, writes the ``## Distributed`` section of that file and a plot of the
   6-board update (when each board's node runs, when the words cross each hop); with
   ``--link-docs``, the ``## Distributed chain`` section of that file.

The update's cycles do not depend on the robot's numbers (the nodes' schedule is fixed), so the
boards run with the power-up constants (zeros); the bit-exactness of the words is the tests'
business (``tests/gateware/test_distributed.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from concurrent.futures import ProcessPoolExecutor
import sys
import tempfile
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import Const
from amaranth.sim import Simulator

from linkdyn.boards.mimas import MimasTop
from linkdyn.boards.toolchain import ToolError, yosys_utilisation
from linkdyn.boards.ulx3s import ULX3STop
from linkdyn.gateware.actuator import LINK_BURST, ActuatorCore
from linkdyn.gateware.cordic import STEP_CYCLES

from linkdyn.gateware.distributed import DistributedChain
from linkdyn.gateware.mailbox import message_layout
from linkdyn.model.microprogram import microprogram
from linkdyn.model.protocol import STATUS_BUSY
from linkdyn.sim.chain_testbench import BusHost

from .report import replace_section

__all__ = ["CLOCK_HZ", "BITS", "LINE_DELAY", "CHIP_LATENCY_CYCLES", "measure", "synthesize",
           "board_platform", "report", "utilisation_lines", "main"]

#: Board clock of the figures (2 bits per cycle: 100 Mbit/s per direction).
CLOCK_HZ = 50e6
BITS = 2
#: Line delay, cycles (the DDR output and input registers and a short cable).
LINE_DELAY = 3
#: LATENCY_CYCLES of the on-chip sequential chain per n (``docs/performance.md``, "Chain";
#: ``boards.cycles.simulate_update_cycles(LinkDynChain(n))``).
CHIP_LATENCY_CYCLES = {1: 201, 2: 261, 3: 321, 4: 381, 5: 441, 6: 501, 7: 561, 8: 621}
#: Goal of the distributed mode: a 6-board update in at most this many microseconds.
GOAL_US = 50.0


def _us(cycles):
    return cycles / CLOCK_HZ * 1e6


def measure(n, updates=5, *, settle=3000, link_parameters=None, ber=0.0, seed=1,
            step_traffic=True):
    """Run ``updates`` sequential updates on ``DistributedChain(n)``; return the figures.

    ``link_parameters`` go to the links (e.g. ``{"burst": 1}``: one word per frame); ``ber``
    and ``seed``: bit errors on every line; without ``step_traffic`` the updates follow each
    other with only the start, the STATUS polls and the LATENCY_CYCLES read between (no input
    writes and torque reads: a faster simulation, for the latency under bit errors).

    Returns
    -------
    dict
        ``latency``: LATENCY_CYCLES per update; ``hops``: per hop and direction, per update,
        the list of ``(word, produced, delivered)`` cycles; ``requests``: per board, the
        ``(start, end, kind)`` cycles of its node's requests in the last update;
        ``interval``: INTERVAL_CYCLES of the second and later updates (start to start with a
        STEP's bus traffic between: 3n input writes, the start, STATUS polls, n tau reads).
        The words of a hop are listed in the order the sender produced them.
    """
    rmap = microprogram().registers
    dut = DistributedChain(n, bits=BITS, delay=LINE_DELAY, link_parameters=link_parameters,
                           ber=ber, seed=seed)
    host = BusHost(dut)
    forward = {rmap[source].address: k for k, (source, _) in
               enumerate(message_layout("forward"))}
    backward = {rmap[source].address: k for k, (source, _) in
                enumerate(message_layout("backward"))}
    events = []          # (cycle, kind, board, word)
    latencies = []
    intervals = []       # INTERVAL_CYCLES: start to start through the bus
    marks = []           # cycle of each start
    flipped = []
    counters = {}

    inputs = [rmap[name].address for name in ("q", "qd", "qdd")]
    tau = rmap["tau"].address

    async def bench(ctx):
        await host.tick(ctx, settle)            # link-up of every hop
        for _ in range(updates):
            # As the protocol engine's STEP: the joint words of every node, CONTROL.start,
            # STATUS until done, every tau.
            for node in range(n if step_traffic else 0):
                for address in inputs:
                    assert await host.write(ctx, node, address, 0), "input write refused"
            assert await host.start(ctx), "CONTROL.start refused"
            marks.append(host.cycle)
            while (await host.control(ctx, "STATUS")) & STATUS_BUSY:
                pass
            for node in range(n if step_traffic else 0):
                await host.read(ctx, node, tau)
            latencies.append(await host.control(ctx, "LATENCY_CYCLES"))
            intervals.append(await host.control(ctx, "INTERVAL_CYCLES"))
        flipped.append(sum(ctx.get(line.flipped) for pair in dut.lines for line in pair))
        for core in dut.cores:
            for link in (core.upstream, core.downstream):
                if link is not None:
                    for name in ("crc_errors", "retransmissions"):
                        counters[name] = counters.get(name, 0) + ctx.get(
                            getattr(link.counters, name))

    async def monitor(ctx):
        signals = []
        for core in dut.cores:
            node = core.node
            signals += [node.result.valid, node.result.addr, node.busy]
            for link in (core.upstream, core.downstream):
                if link is None:
                    signals += [Const(0, 1), Const(0, 4), Const(0, 1)]
                else:
                    words = link.rx_words
                    signals += [words.valid & words.ready, words.payload.word,
                                words.payload.direction]
        cycle = 0
        busy_before = [0] * n
        async for _, _, *values in ctx.tick().sample(*signals):
            cycle += 1
            for board in range(n):
                valid, addr, busy, up_valid, up_word, _, down_valid, down_word, _ = \
                    values[9 * board:9 * board + 9]
                if valid and addr in forward and board < n - 1:
                    events.append((cycle, "forward_sent", board, forward[addr]))
                if valid and addr in backward and board > 0:
                    events.append((cycle, "backward_sent", board, backward[addr]))
                if up_valid and up_word < 9:
                    events.append((cycle, "forward_delivered", board, up_word))
                if down_valid and down_word < 6:
                    events.append((cycle, "backward_delivered", board, down_word))
                if busy != busy_before[board]:
                    events.append((cycle, "busy" if busy else "idle", board, 0))
                    busy_before[board] = busy

    sim = Simulator(dut)
    sim.add_clock(1 / CLOCK_HZ)
    sim.add_testbench(bench)
    sim.add_testbench(monitor, background=True)
    sim.run()

    # Per update (events between two starts), per hop: the words' production and delivery.
    bounds = marks + [10 ** 12]
    hops = {"forward": [[] for _ in range(n - 1)], "backward": [[] for _ in range(n - 1)]}
    for u in range(updates):
        window = [e for e in events if bounds[u] <= e[0] < bounds[u + 1]]
        for h in range(n - 1):
            for direction, sender, receiver in (("forward", h, h + 1),
                                                ("backward", h + 1, h)):
                sent = {w: c for c, kind, b, w in window
                        if kind == f"{direction}_sent" and b == sender}
                got = {w: c for c, kind, b, w in window
                       if kind == f"{direction}_delivered" and b == receiver}
                # In production order (the MAC's order, which the link keeps).
                hops[direction][h].append([(w, sent[w], got[w])
                                           for w in sorted(sent, key=sent.get) if w in got])
    last = [e for e in events if e[0] >= marks[-1]]
    runs = []
    for board in range(n):
        start = None
        for cycle, kind, b, _ in last:
            if b != board:
                continue
            if kind == "busy":
                start = cycle
            elif kind == "idle" and start is not None:
                runs.append((board, start - marks[-1], cycle - marks[-1]))
                start = None
    words = [(kind, b, w, c - marks[-1]) for c, kind, b, w in last
             if kind.endswith("_sent") or kind.endswith("_delivered")]
    return {"n": n, "latency": latencies, "interval": intervals[1:], "hops": hops,
            "runs": runs, "words": words, "flipped": flipped[0], **counters}


def synthesize(family):
    """Synthesise the core of a middle board (one node, two links, receive domain ``rx``) with
    Yosys (:func:`~linkdyn.boards.toolchain.yosys_utilisation`, flattened, as the board builds;
    the CORDIC step of the family, :data:`~linkdyn.gateware.cordic.STEP_CYCLES`).

    Returns
    -------
    dict
        ``{"luts", "ffs", "dsps", "brams", ...}``.

    Raises
    ------
    ToolError
        If Yosys is missing or fails.
    """
    core = ActuatorCore(base=False, last=False, bits=BITS, rx_domain="rx",
                        cordic_step_cycles=STEP_CYCLES[family])
    # Elaborated for the family's board platform, as the board builds are (the platform's
    # family places the node's schedule ROM, the controller's program ROM and the CORDIC's
    # angle ROM: linkdyn.gateware.node.SCHEDULE_ROM_STYLE and its kin).
    text = rtlil.convert(core, name="linkdyn_actuator", platform=board_platform(family))
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "actuator.il").write_text(text)
        return yosys_utilisation(family, "actuator.il", tmp, top="linkdyn_actuator",
                                 flatten=True)


def board_platform(family):
    """The platform of the family's board build (Spartan-6: the Mimas, ECP5: the ULX3S), for
    elaborating a core as that build does.

    Raises
    ------
    ValueError
        If ``family`` is neither ``"xc6s"`` nor ``"ecp5"``.
    """
    if family == "xc6s":
        return MimasTop.platform_class()
    if family == "ecp5":
        return ULX3STop.platform_class()
    raise ValueError(f"family must be 'xc6s' or 'ecp5', not {family!r}")


def _synthesize_or_message(family):
    try:
        return synthesize(family)
    except ToolError as error:
        return f"not run: {str(error).splitlines()[0]}"


def _hop_figures(result):
    """Per direction: lists of first-word and last-word hop latencies over hops and updates."""
    figures = {}
    for direction, per_hop in result["hops"].items():
        first, last = [], []
        for updates in per_hop:
            for words in updates:
                if words:
                    first.append(words[0][2] - words[0][1])
                    last.append(words[-1][2] - words[-1][1])
        figures[direction] = {"first": first, "last": last}
    return figures


def plot(result, path):
    """Write a PNG of one update on ``result["n"]`` boards: each node's requests (bars) and
    every message word's production and delivery on each hop."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = result["n"]
    figure, axis = plt.subplots(figsize=(8, 0.6 * n + 2.2))
    for board, start, end in result["runs"]:
        axis.barh(board, _us(end - start), left=_us(start), height=0.35, color="tab:gray")
    for kind, colour, marker, offset in (("forward_sent", "tab:blue", "o", 0.25),
                                         ("forward_delivered", "tab:blue", "x", -0.25),
                                         ("backward_sent", "tab:orange", "o", -0.25),
                                         ("backward_delivered", "tab:orange", "x", 0.25)):
        points = [(b, c) for k, b, _, c in result["words"] if k == kind]
        if points:
            axis.scatter([_us(c) for _, c in points], [b + offset for b, _ in points], s=14,
                         color=colour, marker=marker,
                         label=kind.replace("_", " ") + " (message word)")
    axis.axvline(_us(result["latency"][-1]), color="k", linestyle="--", linewidth=1,
                 label=f"end of the update ({_us(result['latency'][-1]):.1f} us)")
    axis.set_yticks(range(n))
    axis.set_yticklabels([f"board {b}" for b in range(n)])
    axis.invert_yaxis()
    axis.set_xlabel(f"time from CONTROL.start [us at {CLOCK_HZ / 1e6:g} MHz]")
    axis.set_title(f"One sequential update on {n} boards, links {BITS * CLOCK_HZ / 1e6:g} "
                   "Mbit/s (grey: the node runs a request)")
    axis.grid(alpha=0.3, axis="x")
    axis.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def report(results, synthesis=None, *, before=None, noisy=None,
           command="python -m linkdyn.bench.distributed"):
    """Return the ``## Distributed`` Markdown section for the results of :func:`measure` (a
    list, one per n) and of :func:`synthesize` (family -> dict or a message); ``before``: a
    6-board :func:`measure` with one word per frame, ``noisy``: one with bit errors (its
    ``ber`` added)."""
    rate = BITS * CLOCK_HZ / 1e6
    lines = [
        "## Distributed",
        "",
        f"`linkdyn.gateware.distributed.DistributedChain` (one node per board, sequential "
        f"policy), figures from `{command}`: Amaranth simulator, board clock "
        f"{CLOCK_HZ / 1e6:g} MHz, {BITS} bits per cycle on each link ({rate:g} Mbit/s per "
        f"direction, 8b/10b: a character every 5 cycles), line delay {LINE_DELAY} cycles; "
        "the updates started through the register bus as the protocol engine does "
        "(`docs/distributed.md`). The links send burst frames "
        f"(`docs/link.md`, *Frames*): up to {LINK_BURST['up']} words per frame upstream (the "
        f"backward message in one frame) and {LINK_BURST['down']} downstream "
        "(`linkdyn.gateware.actuator.LINK_BURST`).",
        "",
        "**Update latency and rate** (LATENCY_CYCLES, min / max over the updates; rate = one "
        "update after the other, the chain alone; through the bus = INTERVAL_CYCLES, start to "
        "start with a STEP's register-bus traffic between, as the protocol engine does it: "
        "the 3n joint words written, the start, STATUS polled, n torques read, each access "
        "to board k travelling k hops and back):",
        "",
        "| boards | latency [cycles] | latency [us] | jitter [cycles] | rate [kHz] | on-chip "
        "chain [cycles] | added per hop, both ways [cycles] | through the bus [cycles] | "
        "rate through the bus [kHz] |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        n = result["n"]
        low, high = min(result["latency"]), max(result["latency"])
        chip = CHIP_LATENCY_CYCLES[n]
        per_hop = f"{(statistics.median(result['latency']) - chip) / (n - 1):.0f}" if n > 1 \
            else "-"
        interval = max(result.get("interval") or [0])
        through = (f"{interval} | {1e3 / _us(interval):.1f}" if interval else "- | -")
        lines.append(f"| {n} | {low} / {high} | {_us(low):.1f} / {_us(high):.1f} | "
                     f"{high - low} | {1e3 / _us(high):.1f} | {chip} | {per_hop} | "
                     f"{through} |")
    biggest = results[-1]
    figures = _hop_figures(biggest)
    lines += [
        "",
        f"**Per hop** ({biggest['n']} boards, every hop and update: from the cycle the "
        "sender's MAC writes a message word to the cycle the receiving board's link delivers "
        "it into the mailbox; min / median / max):",
        "",
        "| message | first word [cycles] | last word [cycles] | first word [us] | "
        "last word [us] |",
        "|---|---:|---:|---:|---:|",
    ]
    for direction, words in (("forward", 9), ("backward", 6)):
        f = figures[direction]
        if not f["first"]:
            continue

        def span(values):
            return f"{min(values)} / {statistics.median(values):g} / {max(values)}"
        lines.append(f"| {direction}, {words} words | {span(f['first'])} | {span(f['last'])} "
                     f"| {_us(statistics.median(f['first'])):.2f} | "
                     f"{_us(statistics.median(f['last'])):.2f} |")
    six = next((r for r in results if r["n"] == 6), None)
    if six is None:
        before = None
    else:
        worst = _us(max(six["latency"]))
        verdict = "met" if worst <= GOAL_US else "**missed**"
        lines += [
            "",
            f"Goal: a 6-board update in <= {GOAL_US:g} us at 100 Mbit/s links: "
            f"{_us(min(six['latency'])):.1f} .. {worst:.1f} us, {verdict}.",
            "",
            "Where the time goes (the plot below): the forward pass overlaps, a node starts on "
            "the first word it reads and its outputs follow its inputs, so each forward hop "
            "adds little more than a frame's latency plus the node's `forward` work; small "
            "frames downstream keep it so (one 9-word frame would hold the first word back "
            "until the last one is on the line). The backward pass is store-and-forward by "
            "nature: `distal` writes the outgoing wrench words at its end (`f' = R (f + "
            "f_in)`, every word needs every incoming one), so each backward hop costs the "
            "whole backward message on the wire plus `distal`: 6 word frames of 9 characters "
            "(270 cycles) with one word per frame, one burst frame of 5 + 6 x 5 = 35 "
            "characters (175 cycles) now. The jitter comes from the links' idle fill: a word "
            "offered while a training frame or a link acknowledge is on the line waits for "
            "its end (up to 7 characters, 35 cycles, per hop).",
        ]
    if before is not None:
        b_low, b_high = min(before["latency"]), max(before["latency"])
        a_low, a_high = min(six["latency"]), max(six["latency"])
        f_before, f_after = _hop_figures(before), _hop_figures(six)
        lines += [
            "",
            "**Before / after** (6 boards; before: every word in its own 9-character frame, "
            "`link_parameters={\"burst\": 1}`; after: the burst frames above; hop latency to "
            "the last word of a message, median):",
            "",
            "| frames | latency [cycles] | latency [us] | rate [kHz] | forward hop, last "
            "word [cycles] | backward hop, last word [cycles] |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for title, low, high, f in (("one word per frame", b_low, b_high, f_before),
                                    ("burst frames", a_low, a_high, f_after)):
            lines.append(f"| {title} | {low} / {high} | {_us(low):.1f} / {_us(high):.1f} | "
                         f"{1e3 / _us(high):.1f} | "
                         f"{statistics.median(f['forward']['last']):g} | "
                         f"{statistics.median(f['backward']['last']):g} |")
    if noisy is not None:
        low, high = min(noisy["latency"]), max(noisy["latency"])
        lines += [
            "",
            f"**With bit errors** ({noisy['n']} boards, bit-error rate {noisy['ber']:g} on "
            f"every line, {len(noisy['latency'])} updates one after the other): latency "
            f"{low} / {statistics.median(noisy['latency']):g} / {high} cycles (min / median / "
            f"max), {_us(low):.1f} / {_us(high):.1f} us, jitter {high - low} cycles; "
            f"{noisy['flipped']} bits flipped, {noisy['crc_errors']} frames dropped (CRC or "
            f"code errors), {noisy['retransmissions']} words and slot acknowledges repeated "
            "(the links' counters). A lost frame costs its repeat after the receiver's NAK "
            "(the next frame shows the gap) or, for the last frame of a burst of traffic, after "
            "the acknowledge timeout (1,024 cycles).",
        ]
    if synthesis:
        lines += [""] + utilisation_lines(synthesis)
    return "\n".join(lines) + "\n"


def utilisation_lines(synthesis):
    """The section's utilisation paragraph and table (lines, no newlines) of ``synthesis``
    (family -> :func:`synthesize`'s dict or a message)."""
    lines = ["**Utilisation** of one middle board's core (`ActuatorCore(base=False, "
             "last=False, rx_domain=\"rx\")`: one node, two links; Yosys, flattened, "
             "elaborated for the family's board platform as the board builds are; without "
             "the host UART, which only board 0 has, and the I/O buffers):", "",
             "| family | LUTs | FFs | block RAM 18 Kb | DSP | share of an XC6SLX9 (5,720 "
             "LUTs) |", "|---|---:|---:|---:|---:|---:|"]
    for family, title in (("xc6s", "Spartan-6 (`synth_xilinx -family xc6s`)"),
                          ("ecp5", "ECP5 (`synth_ecp5`)")):
        result = synthesis.get(family)
        if result is None:
            continue
        if isinstance(result, str):
            lines.append(f"| {title} | {result} | | | | |")
        else:
            share = f"{result['luts'] / 5720:.0%}" if family == "xc6s" else "-"
            lines.append(f"| {title} | {result['luts']:,} | {result['ffs']:,} | "
                         f"{result['brams']:g} | {result['dsps']} | {share} |")
    return lines


def main(argv=None):
    """Run the distributed benchmark; print the figures (and write them with
    ``--write-docs`` / ``--link-docs``)."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.distributed",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=6, help="largest n (default 6)")
    parser.add_argument("--updates", type=int, default=5, help="updates per n (default 5)")
    parser.add_argument("--synthesize", action="store_true",
                        help="also synthesise one middle board's core with Yosys (minutes)")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Distributed' section of this Markdown file")
    parser.add_argument("--link-docs", metavar="PATH",
                        help="replace the '## Distributed chain' section of this file")
    parser.add_argument("--ber", type=float, default=1e-4,
                        help="bit-error rate of the jitter run on 6 boards (default 1e-4)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="simulations run in parallel processes (default 1)")
    parser.add_argument("--synthesis-json", metavar="PATH",
                        help="take the utilisation from this file (family -> synthesize()'s "
                             "dict) instead of synthesising; with --synthesize, write it there")
    args = parser.parse_args(argv)
    jobs = {n: (measure, (n, args.updates), {}) for n in range(1, args.boards + 1)}
    if args.boards >= 6:
        jobs["before"] = (measure, (6, max(2, args.updates // 2)),
                          {"link_parameters": {"burst": 1}})
        jobs["noisy"] = (measure, (6, 2 * args.updates),
                         {"ber": args.ber, "seed": 5, "step_traffic": False})
    if args.synthesize or not args.synthesis_json:
        for family in ("xc6s", "ecp5") if args.synthesize else ():
            jobs[family] = (_synthesize_or_message, (family,), {})
    print(f"running {len(jobs)} simulations / syntheses, {args.jobs} at a time ...", flush=True)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {key: pool.submit(function, *positional, **keywords)
                   for key, (function, positional, keywords) in jobs.items()}
        done = {key: future.result() for key, future in futures.items()}
    results = [done[n] for n in range(1, args.boards + 1)]
    synthesis = {family: done[family] for family in ("xc6s", "ecp5") if family in done}
    if args.synthesis_json and args.synthesize:
        Path(args.synthesis_json).write_text(json.dumps(synthesis, indent=1, default=str))
    elif args.synthesis_json:
        synthesis = json.loads(Path(args.synthesis_json).read_text())
    before, noisy = done.get("before"), done.get("noisy")
    if noisy is not None:
        noisy["ber"] = args.ber
    section = report(results, synthesis, before=before, noisy=noisy)
    print(section)
    if args.write_docs:
        image = Path(args.write_docs).parent / "img" / "distributed_update.png"
        image.parent.mkdir(parents=True, exist_ok=True)
        plot(results[-1], image)
        section += (f"\n![One update on {results[-1]['n']} boards: node requests and message "
                    f"words per hop](img/{image.name})\n")
        replace_section(args.write_docs, section)
        print(f"wrote {args.write_docs} and {image}")
    if args.link_docs:
        text = section.replace("## Distributed", "## Distributed chain", 1)
        text = text.replace("](img/", "](img/", 1)
        replace_section(args.link_docs, text, title="# Neighbour link")
        print(f"wrote {args.link_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
