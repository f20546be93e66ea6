"""Benchmark: the distributed chain's update policies over the links, ``python -m
linkdyn.bench.distributed_pipelined [--boards 6] [--updates 16] [--synthesize]
[--write-docs docs/performance.md]``.

For each policy (sequential; pipelined with 4 banks) it simulates
:class:`~linkdyn.gateware.distributed.DistributedChain` of ``--boards`` boards (Amaranth
simulator, one clock for all boards, links at 2 bits per cycle = 100 Mbit/s at 50 MHz, line
delay 3 cycles, as :mod:`linkdyn.bench.distributed`) and drives its register bus as a host that
streams updates back to back: CONTROL.start again as soon as the chain takes it (sequential:
once the previous update has ended; pipelined: once the next sample's bank is free), the
inputs unchanged (each bank keeps its sample's words), UPDATE_COUNT and LATENCY_CYCLES read
between the starts. It prints per policy the update latency (LATENCY_CYCLES, each update), the
start-to-start interval (throughput) and their jitter (max - min in the steady state, the
first ``banks`` updates left out); with ``--synthesize`` one pipelined middle board's
utilisation on Spartan-6 and ECP5 (Yosys, as :func:`linkdyn.bench.distributed.synthesize`);
with ``--write-docs`` the ``## Distributed: update policies`` section of that file and a plot
``img/distributed_policies.png`` beside it.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

from amaranth.back import rtlil
from amaranth.sim import Simulator

from linkdyn.boards.toolchain import ToolError, yosys_utilisation
from linkdyn.gateware.actuator import ActuatorCore
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.gateware.distributed import DistributedChain
from linkdyn.sim.chain_testbench import BusHost

from .distributed import BITS, CLOCK_HZ, LINE_DELAY, board_platform

__all__ = ["POLICIES", "stream", "synthesize_pipelined", "report", "plot", "main"]

#: The policies compared: name -> DistributedChain keywords.
POLICIES = {"sequential": {}, "pipelined": {"policy": "pipelined", "banks": 4}}

SECTION = "## Distributed: update policies"


def _us(cycles):
    return cycles / CLOCK_HZ * 1e6


def stream(n, policy, updates=16, *, settle=3000):
    """Stream ``updates`` updates back to back on ``DistributedChain(n)`` under ``policy``
    (a key of :data:`POLICIES`); return the figures.

    Returns
    -------
    dict
        ``starts``: the cycle each CONTROL.start was taken; ``latency``: LATENCY_CYCLES of
        every update whose value the host could read before the next one finished (a list,
        ``None`` where it could not); ``finish``: start + latency where known;
        ``refused``: CONTROL.start writes refused; ``in_flight``: most updates running at
        once (from the starts and ends).
    """
    dut = DistributedChain(n, bits=BITS, delay=LINE_DELAY, **POLICIES[policy])
    host = BusHost(dut)
    starts, latency = [], [None] * updates
    seen = {"refused": 0}

    async def bench(ctx):
        await host.tick(ctx, settle)           # link-up of every hop
        count = 0
        while count < updates:
            if len(starts) < updates:
                if await host.start(ctx):
                    starts.append(host.cycle)
                    continue
                seen["refused"] += 1
            now = await host.control(ctx, "UPDATE_COUNT")
            if now == count + 1:
                value = await host.control(ctx, "LATENCY_CYCLES")
                if await host.control(ctx, "UPDATE_COUNT") == now:
                    latency[count] = value
            count = now

    sim = Simulator(dut)
    sim.add_clock(1 / CLOCK_HZ)
    sim.add_testbench(bench)
    sim.run()
    finish = [None if l is None else s + l for s, l in zip(starts, latency)]
    spans = [(s, f) for s, f in zip(starts, finish) if f is not None]
    seen["in_flight"] = max(sum(1 for s, f in spans if s <= t < f) for t, _ in spans)
    return {"n": n, "policy": policy, "banks": dut.banks, "starts": starts,
            "latency": latency, "finish": finish, **seen}


def steady(result):
    """Return ``(latencies, intervals)`` of the steady state (the first ``banks`` updates
    left out, at least one: the stream has filled the banks)."""
    skip = result["banks"] if result["policy"] == "pipelined" else 1
    starts = result["starts"]
    intervals = [b - a for a, b in zip(starts[skip:], starts[skip + 1:])]
    latencies = [l for l in result["latency"][skip:] if l is not None]
    return latencies, intervals


def synthesize_pipelined(family, banks=4):
    """Synthesise a pipelined middle board's core (``banks`` banks) with Yosys, as
    :func:`linkdyn.bench.distributed.synthesize` does the sequential one; return its dict or
    a message."""
    core = ActuatorCore(base=False, last=False, bits=BITS, rx_domain="rx",
                        cordic_step_cycles=STEP_CYCLES[family], policy="pipelined",
                        banks=banks)
    try:
        # Elaborated for the family's board platform, as the board builds are (the ROMs'
        # places follow the platform's family; linkdyn.bench.distributed.synthesize).
        text = rtlil.convert(core, name="linkdyn_actuator", platform=board_platform(family))
        with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
            Path(tmp, "actuator.il").write_text(text)
            return yosys_utilisation(family, "actuator.il", tmp, top="linkdyn_actuator",
                                     flatten=True)
    except ToolError as error:
        return f"not run: {str(error).splitlines()[0]}"


def _span(values):
    return f"{min(values):,} .. {max(values):,}" if values else "-"


def report(results, synthesis=None):
    """Return the Markdown section of the figures (``results``: :func:`stream` per policy;
    ``synthesis``: family -> dict or message)."""
    n = results[0]["n"]
    lines = [
        SECTION, "",
        f"Measured by `python -m linkdyn.bench.distributed_pipelined` (Amaranth simulation of "
        f"`DistributedChain({n})`, one node per board, links at {BITS} bits per cycle = "
        f"{BITS * CLOCK_HZ / 1e6:g} Mbit/s per direction at {CLOCK_HZ / 1e6:g} MHz, line "
        f"delay {LINE_DELAY} cycles). A host streams updates back to back over the base's "
        "register bus: CONTROL.start again as soon as the chain takes it (sequential: once the "
        "previous update has ended; pipelined: once the next sample's bank is free on every "
        "board), the inputs unchanged, UPDATE_COUNT and LATENCY_CYCLES read between the "
        "starts. Steady state: the first `banks` updates (pipelined) or the first update "
        "(sequential) left out; jitter is max - min.", "",
        "| policy | updates in flight (most) | latency, cycles | latency, us | interval "
        "(start to start), cycles | update rate, kHz | latency jitter, cycles | interval "
        "jitter, cycles |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines_alone = []
    for result in results:
        latencies, intervals = steady(result)
        if result.get("alone") is not None:
            lines_alone.append(f"{result['policy']} {result['alone']:,} cycles = "
                               f"{_us(result['alone']):.1f} us")
        mean_interval = sum(intervals) / len(intervals)
        name = result["policy"] + (f" ({result['banks']} banks)"
                                   if result["policy"] == "pipelined" else "")
        lines.append(
            f"| {name} | {result['in_flight']} | {_span(latencies)} | "
            f"{_us(min(latencies)):.1f} .. {_us(max(latencies)):.1f} | {_span(intervals)} | "
            f"{CLOCK_HZ / mean_interval / 1e3:.1f} | {max(latencies) - min(latencies)} | "
            f"{max(intervals) - min(intervals)} |")
    sequential, pipelined = results[0], results[-1]
    ratio = (sum(steady(sequential)[1]) / len(steady(sequential)[1])) / (
        sum(steady(pipelined)[1]) / len(steady(pipelined)[1]))
    lines += ["", f"The pipelined policy takes {ratio:.2f} times the sequential update rate. "
              "Its latency per update in the stream is longer: a host that starts as soon as "
              "a bank is free keeps several updates in flight, and each waits for the nodes "
              "and links the others use (Little's law: latency = mean updates in flight x "
              "interval). One update alone (nothing else in flight): " + "; ".join(lines_alone) + ". The plot "
              "`img/distributed_policies.png` shows every update of both streams from its "
              "start to its end.", ""]
    if synthesis:
        lines += ["One pipelined middle board's core (4 banks: one node, two links; Yosys, "
                  "flattened, as the sequential figures above):", "",
                  "| device family | LUTs | flip-flops | DSPs | block RAMs |",
                  "|---|---:|---:|---:|---:|"]
        for family, title in (("xc6s", "Spartan-6 (`synth_xilinx -family xc6s`)"),
                              ("ecp5", "ECP5 (`synth_ecp5`)")):
            value = synthesis.get(family)
            if isinstance(value, dict):
                lines.append(f"| {title} | {value['luts']:,} | {value['ffs']:,} | "
                             f"{value['dsps']} | {value['brams']} |")
            elif value is not None:
                lines.append(f"| {title} | {value} | | | |")
        lines.append("")
    return "\n".join(lines)


def plot(results, path):
    """Draw every update of each stream as a bar from its start to its end."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(results), 1, figsize=(9, 2.2 * len(results) + 0.6),
                                sharex=True)
    for axis, result in zip(axes, results):
        origin = result["starts"][0]
        for k, (start, finish) in enumerate(zip(result["starts"], result["finish"])):
            if finish is None:
                axis.plot([_us(start - origin)], [k], "k|")
                continue
            axis.barh(k, _us(finish - start), left=_us(start - origin), height=0.7,
                      color="tab:blue" if result["policy"] == "sequential" else "tab:orange")
        axis.invert_yaxis()
        axis.set_ylabel("update")
        name = result["policy"] + (f", {result['banks']} banks"
                                   if result["policy"] == "pipelined" else "")
        axis.set_title(f"{result['n']} boards, {name}: each update from CONTROL.start to its "
                       "end", fontsize=10)
        axis.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel(f"time, us (links {BITS * CLOCK_HZ / 1e6:g} Mbit/s, "
                        f"{CLOCK_HZ / 1e6:g} MHz)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _write_section(path, section):
    text = Path(path).read_text()
    pattern = re.compile(re.escape(SECTION) + r"\n.*?(?=\n## |\Z)", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n", text)
    else:
        # After the "## Distributed" section (linkdyn.bench.distributed's), else at the end.
        after = re.search(r"^## Distributed\n.*?(?=^## )", text, re.S | re.M)
        if after:
            text = (text[:after.end()].rstrip("\n") + "\n\n" + section.rstrip("\n")
                    + "\n\n" + text[after.end():])
        else:
            text = text.rstrip("\n") + "\n\n" + section
    Path(path).write_text(text)


def main(argv=None):
    """Run the benchmark (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.distributed_pipelined",
                                     description=__doc__.split("\n\n")[1])
    parser.add_argument("--boards", type=int, default=6, help="boards n (default 6)")
    parser.add_argument("--updates", type=int, default=16,
                        help="updates per policy (default 16)")
    parser.add_argument("--synthesize", action="store_true",
                        help="also synthesise a pipelined middle board with Yosys (minutes)")
    parser.add_argument("--families", default="xc6s,ecp5",
                        help="with --synthesize: device families (default xc6s,ecp5)")
    parser.add_argument("--banks", type=int, default=4,
                        help="with --synthesize: banks of the pipelined board (default 4)")
    parser.add_argument("--no-simulation", action="store_true",
                        help="only the synthesis (print its table)")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="write the section into this Markdown file and the plot beside it")
    args = parser.parse_args(argv)
    results = []
    for policy in () if args.no_simulation else POLICIES:
        print(f"simulating {args.boards} boards, {policy} policy ...", flush=True)
        result = stream(args.boards, policy, args.updates)
        if policy != "sequential":
            # One update with nothing else in flight (the sequential stream's are).
            result["alone"] = stream(args.boards, policy, 1)["latency"][0]
        else:
            result["alone"] = min(steady(result)[0])
        results.append(result)
    synthesis = None
    if args.synthesize:
        synthesis = {}
        for family in args.families.split(","):
            print(f"synthesising a pipelined middle board ({family}) ...", flush=True)
            synthesis[family] = synthesize_pipelined(family, args.banks)
    if not results:
        print(synthesis)
        return 0
    section = report(results, synthesis)
    print(section)
    if args.write_docs:
        _write_section(args.write_docs, section)
        image = Path(args.write_docs).parent / "img" / "distributed_policies.png"
        plot(results, image)
        print(f"wrote {args.write_docs} and {image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
