"""Pipelined host path figures: BATCH against one STEP per state on a pipelined board. Run as
``python -m linkdyn.bench.pipelined_host [--write-docs docs/performance.md] [--plot PNG]``.

1. **Engine cycles per state**, measured on the simulated board
   (:class:`linkdyn.sim.SimulatedBoard`, Verilator, ``LinkDynChain(6, policy="pipelined")``, 4
   banks, UR5 loaded): the turnaround (board cycles from a request's last stop bit to its
   reply's start bit) of one STEP, and of one BATCH of K = 1 .. 4 states; with the chain's
   LATENCY_CYCLES and INTERVAL_CYCLES of the batch's last update (INTERVAL < LATENCY: the
   updates overlapped).
2. **Updates per second** at a board clock (default 100 MHz) and a line rate, from the frame
   sizes (8N1, 10 bits a byte) and the measured turnarounds: *one at a time* (the host waits for
   each reply: request line + turnaround + reply line per frame, a byte taking at least a
   cycle) and *streamed* (frames in
   flight: per frame the slowest of the request's line time, the reply's line time and the
   engine's time, the turnaround plus a cycle per request and reply byte -- the receive FIFO
   holds a backlog of requests and the transmit FIFO a whole reply, ``linkdyn.gateware.hostlink``,
   so the engine takes and hands over bytes at one a cycle), divided by the states a frame
   carries. At the default 3 Mbaud, at 25 Mbaud
   (100 MHz / the UART's smallest divisor, 4) and with an unlimited line (the engine's bound).
3. **Simulated board speed**: wall-clock states per second, streamed, BATCH and STEP.
4. **Engine resources** (``--synthesize``): the protocol engine alone, 6 nodes, Spartan-6
   (``synth_xilinx -family xc6s``, the board builds' counter), sequential (no BATCH) and
   with 4 banks (BATCH).

With ``--write-docs PATH`` the figures replace the ``## Pipelined host path`` section of a
Markdown file; ``--plot PNG`` draws the updates per second.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time

import numpy as np

from linkdyn.model import protocol as P

from .report import replace_section

__all__ = ["frame_bytes", "rates", "measure", "synthesize_engine", "report", "plot", "main",
           "SECTION", "BAUDRATES"]

SECTION = "## Pipelined host path"
#: Line rates of the figures, baud: the protocol's default and 100 MHz / 4 (None: unlimited).
BAUDRATES = (P.DEFAULT_BAUDRATE, 25_000_000, None)
NODES = 6
BANKS = 4


def frame_bytes(spec, samples):
    """Return ``(request, reply)`` bytes of one frame carrying ``samples`` states without the
    wrench: a STEP for ``samples == 0`` (one state), else a BATCH of ``samples``."""
    header = P.REQUEST_HEADER_BYTES + P.CRC_BYTES
    reply = P.REPLY_HEADER_BYTES + P.CRC_BYTES
    if samples == 0:
        return (header + P.WORD_BYTES * spec.step_words(),
                reply + P.WORD_BYTES * spec.step_reply_words)
    return (header + P.WORD_BYTES * spec.batch_words(samples),
            reply + P.WORD_BYTES * spec.batch_reply_words(samples))


def rates(request_bytes, reply_bytes, turnaround_cycles, states, clock_hz, baudrate):
    """Return ``(one at a time, streamed)`` states per second of frames of ``states`` states.

    Parameters
    ----------
    request_bytes, reply_bytes : int
        Frame sizes, bytes.
    turnaround_cycles : float
        Board cycles from the request's last stop bit to the reply's start bit.
    states : int
        States per frame.
    clock_hz : float
        Board clock, Hz.
    baudrate : float or None
        Nominal line rate, baud (the board's is ``clock / round(clock / baud)``); None: an
        unlimited line (only the turnaround counts).
    """
    if baudrate is None:
        line = 0.0
    else:
        line = 10.0 / (clock_hz / round(clock_hz / baudrate))     # s per byte, 8N1
    board = turnaround_cycles / clock_hz
    # The engine takes and hands over a byte a cycle at most (the line is slower at any UART
    # rate; an unlimited line leaves only this).
    one = (request_bytes + reply_bytes) * max(line, 1 / clock_hz) + board
    engine = board + (request_bytes + reply_bytes) / clock_hz
    streamed = max(request_bytes * line, reply_bytes * line, engine)
    return states / one, states / streamed


def measure(repeat=5, stream_states=200, seed=0):
    """Run the pipelined simulated board and measure turnarounds and wall-clock rates.

    Returns
    -------
    dict
        ``step`` (list of STEP turnarounds, cycles), ``batch`` ({K: list of turnarounds}),
        ``latency``/``interval`` ({K: LATENCY_CYCLES / INTERVAL_CYCLES of the batch's last
        update}), ``step_latency``, ``wall`` ({"step": states/s, "batch": states/s}),
        ``simulator``, ``clock_hz``, ``divisor``, ``banks``.
    """
    from linkdyn.gateware.chain import LinkDynChain
    from linkdyn.host.simulated import open_simulated
    from linkdyn.model import load_robot
    from linkdyn.sim.board import SimulatedBoard

    robot = load_robot("ur5")
    rng = np.random.default_rng(seed)
    low, high = robot.q_limits()
    q = rng.uniform(low, high, (stream_states, NODES))
    qd = rng.uniform(-2, 2, (stream_states, NODES))
    qdd = rng.uniform(-5, 5, (stream_states, NODES))
    out = {"batch": {}, "latency": {}, "interval": {}}
    with SimulatedBoard(NODES, chain=LinkDynChain(NODES, policy="pipelined"), trace=True) \
            as sim, open_simulated(sim) as board:
        board.load_robot(robot)
        board.rnea(q[0], qd[0], qdd[0])                      # the wrench zeroed once

        def turnaround(call):
            before = len(sim.turnarounds())
            result = call()
            return sim.turnarounds()[before:], result

        step = []
        for k in range(repeat):
            t, result = turnaround(lambda: board.rnea(q[k], qd[k], qdd[k], batch=False))
            step += t
        out["step"], out["step_latency"] = step, int(result.latency_cycles)
        banks = board.info().banks
        for samples in range(1, banks + 1):
            cycles, latency, interval = [], [], []
            for k in range(repeat):
                rows = slice(k, k + samples)
                t, result = turnaround(lambda: board.rnea(q[rows], qd[rows], qdd[rows]))
                cycles += t
                latency.append(int(result.latency_cycles[-1]))
                interval.append(int(result.interval_cycles[-1]))
            out["batch"][samples] = cycles
            out["latency"][samples] = statistics.median(latency)
            out["interval"][samples] = statistics.median(interval)
        wall = {}
        for name, batch in (("step", False), ("batch", True)):
            start = time.perf_counter()
            board.rnea(q, qd, qdd, batch=batch, progress=False)
            wall[name] = stream_states / (time.perf_counter() - start)
        out.update(wall=wall, simulator=sim.simulator, clock_hz=sim.clock_hz,
                   divisor=sim.divisor, banks=banks)
    return out


def synthesize_engine(banks, family="xc6s", n=NODES, clock_hz=100_000_000):
    """Synthesise the protocol engine of an ``n``-node board with ``banks`` register banks and
    count its resources (:func:`linkdyn.boards.toolchain.yosys_utilisation`).

    Returns
    -------
    dict
        ``luts``, ``ffs``, ``dsps``, ``brams``, ``buffer_words``.

    Raises
    ------
    ToolError
        If no Yosys is found or it fails.
    """
    import tempfile
    from pathlib import Path

    from amaranth.back import rtlil

    from linkdyn.boards.toolchain import yosys_utilisation
    from linkdyn.gateware.protocol import ProtocolEngine
    engine = ProtocolEngine(n, clock_hz=clock_hz, baudrate=P.DEFAULT_BAUDRATE, banks=banks)
    text = rtlil.convert(engine, name="protocol_engine")
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "engine.il").write_text(text)
        result = yosys_utilisation(family, "engine.il", tmp, top="protocol_engine")
    return {**{key: result[key] for key in ("luts", "ffs", "dsps", "brams")},
            "buffer_words": engine.spec.buffer_words}


def _table(m, clock_hz):
    """Rows ``(label, states, request, reply, turnaround, {baud: (one, streamed)})``."""
    spec = P.ProtocolSpec(NODES, banks=m["banks"])
    rows = []
    for label, samples, turnarounds in (
            [("STEP", 0, m["step"])]
            + [(f"BATCH K = {k}", k, m["batch"][k]) for k in sorted(m["batch"])]):
        request, reply = frame_bytes(spec, samples)
        turnaround = statistics.median(turnarounds)
        states = max(samples, 1)
        rows.append((label, states, request, reply, turnaround,
                     {baud: rates(request, reply, turnaround, states, clock_hz, baud)
                      for baud in BAUDRATES}))
    return rows


def _baud_name(baud, clock_hz):
    if baud is None:
        return "unlimited line"
    return f"{clock_hz / round(clock_hz / baud) / 1e6:.3g} Mbaud"


def report(m, clock_hz=100e6, *, command="python -m linkdyn.bench.pipelined_host",
           image=None):
    """Return the ``## Pipelined host path`` Markdown section of the measurements ``m``
    (:func:`measure`)."""
    rows = _table(m, clock_hz)
    step = rows[0]
    full = rows[-1]
    lines = [SECTION, "",
             f"Figures from `{command}` ({datetime.date.today().isoformat()}, "
             f"{platform.machine()}, Python {platform.python_version()}): BATCH "
             "(`docs/protocol.md`) against one STEP per state on a pipelined board, "
             f"{NODES} nodes, {m['banks']} banks (`LinkDynChain(6, policy=\"pipelined\")`), UR5, "
             "no external wrench.", "",
             "### Engine cycles per state", "",
             f"Measured on the simulated board ({m['simulator']}, {m['clock_hz'] / 1e6:g} MHz, "
             f"divisor {m['divisor']}): turnaround = board cycles from the request's last stop "
             "bit to the reply's start bit (frame check, bus transfers, the updates, reply "
             "header; median of the runs). LATENCY_CYCLES and INTERVAL_CYCLES are the chain's "
             "counters of the frame's last update: INTERVAL below LATENCY means the last update "
             "started while the one before it ran.", "",
             "| frame | states | request + reply [bytes] | turnaround [cycles] | "
             "per state [cycles] | LATENCY_CYCLES | INTERVAL_CYCLES |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, states, request, reply, turnaround, _ in rows:
        if label == "STEP":
            latency, interval = m["step_latency"], "-"
        else:
            latency, interval = m["latency"][states], m["interval"][states]
            interval = f"{interval:g}" if states > 1 else "-"
        lines.append(f"| {label} | {states} | {request} + {reply} | {turnaround:g} | "
                     f"{turnaround / states:.0f} | {latency:g} | {interval} |")
    gain = step[4] / (full[4] / full[1])
    lines += ["", f"A BATCH of {full[1]} costs the engine {full[4] / full[1]:.0f} cycles per "
              f"state against {step[4]:g} for a STEP ({gain:.1f} x fewer): the chain overlaps "
              "the updates and the engine checks one frame, reads STATUS once and sends one "
              "header for all of them.", "",
              "### Updates per second", "",
              f"Board clock {clock_hz / 1e6:g} MHz; the line rate is the one the clock makes. "
              "One at a time: the host waits for every reply (request line + turnaround + reply "
              "line per frame). Streamed: frames in flight, per frame the slowest of the "
              "request's line time, the reply's line time and the engine's time (turnaround + a "
              "cycle per request and reply byte: the FIFOs of the host link hold a backlog of "
              "requests and a whole reply).", "",
              "| frame | " + " | ".join(f"{_baud_name(b, clock_hz)}: one at a time / streamed "
                                        "[updates/s]" for b in BAUDRATES) + " |",
              "|---|" + "---:|" * len(BAUDRATES)]
    for label, _, _, _, _, by_baud in rows:
        lines.append(f"| {label} | " + " | ".join(
            f"{one:,.0f} / {streamed:,.0f}" for one, streamed in by_baud.values()) + " |")
    default = BAUDRATES[0]
    s1, b1 = step[5][default], full[5][default]
    fast = BAUDRATES[1]
    s2, b2 = step[5][fast], full[5][fast]
    s3, b3 = step[5][None], full[5][None]
    lines += ["", f"At {_baud_name(default, clock_hz)} the serial line sets the rate: BATCH "
              f"gains {b1[0] / s1[0] - 1:.0%} one at a time and {b1[1] / s1[1] - 1:.0%} "
              "streamed, from fewer bytes per state (one header and CRC per frame; besides the "
              "torques 2 words per state and the 5 status words once per frame, instead of 5 "
              "per state), not from the overlap. At "
              f"{_baud_name(fast, clock_hz)}: {b2[0] / s2[0] - 1:.0%} and "
              f"{b2[1] / s2[1] - 1:.0%}. With an unlimited line the engine and the chain set it: "
              f"{s3[1]:,.0f} updates/s with STEP, {b3[1]:,.0f} with BATCH "
              f"({b3[1] / s3[1]:.1f} x): the pipelined policy pays where the host link is "
              "faster than a UART.", ""]
    if image:
        lines += [f"![Updates per second, STEP and BATCH, per line rate]({image})", ""]
    wall = m["wall"]
    lines += ["### Simulated board", "",
              f"Wall-clock states per second on the simulated board, streamed: STEP "
              f"{wall['step']:.0f}, BATCH {wall['batch']:.0f} (Verilator through cocotb, the "
              "machine shared with other jobs; repeated runs vary by tens of percent).", ""]
    synthesis = m.get("synthesis")
    if synthesis:
        lines += ["### Engine resources", "",
                  f"The protocol engine alone ({NODES} nodes, 100 MHz timeouts), Spartan-6 "
                  "(`synth_xilinx -family xc6s`, flattened; block RAM in 18 Kb blocks):", "",
                  "| build | LUTs | flip-flops | block RAM | frame buffer [words] |",
                  "|---|---:|---:|---:|---:|"]
        for banks, r in sorted(synthesis.items()):
            label = "sequential (no BATCH)" if banks == 1 else f"{banks} banks (BATCH)"
            lines.append(f"| {label} | {r['luts']:g} | {r['ffs']:g} | {r['brams']:g} | "
                         f"{r['buffer_words']} |")
        lines.append("")
    return "\n".join(lines)


def plot(m, path, clock_hz=100e6):
    """Draw the streamed and one-at-a-time updates per second per line rate into ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = _table(m, clock_hz)
    chosen = [rows[0], rows[-1]]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    width = 0.38
    for ax, index, title in zip(axes, (0, 1), ("one at a time", "streamed")):
        x = np.arange(len(BAUDRATES))
        for k, (label, *_, by_baud) in enumerate(chosen):
            values = [by_baud[b][index] for b in BAUDRATES]
            bars = ax.bar(x + (k - 0.5) * width, values, width, label=label)
            ax.bar_label(bars, labels=[f"{v / 1e3:.1f}k" for v in values], fontsize=7)
        ax.set_xticks(x, [_baud_name(b, clock_hz) for b in BAUDRATES])
        ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("updates per second")
    axes[0].legend()
    fig.suptitle(f"{NODES}-node pipelined board, {clock_hz / 1e6:g} MHz: STEP against BATCH")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    """Command line: measure, print the figures; optionally write the docs section, the plot."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.pipelined_host",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--clock-mhz", type=float, default=100.0,
                        help="board clock of the rates, MHz (default 100)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stream-states", type=int, default=200)
    parser.add_argument("--write-docs", metavar="PATH",
                        help=f"replace the '{SECTION}' section of this Markdown file")
    parser.add_argument("--plot", metavar="PNG", help="draw the updates per second")
    parser.add_argument("--synthesize", action="store_true",
                        help="also synthesise the engine with and without BATCH (Yosys)")
    parser.add_argument("--image-link", metavar="PATH",
                        help="the plot's path as the docs section links it")
    args = parser.parse_args(argv)
    print("simulated pipelined board, 6 nodes (the first build takes minutes) ...",
          file=sys.stderr, flush=True)
    m = measure(args.repeat, args.stream_states)
    if args.synthesize:
        m["synthesis"] = {banks: synthesize_engine(banks) for banks in (1, BANKS)}
    clock_hz = args.clock_mhz * 1e6
    if args.plot:
        plot(m, args.plot, clock_hz)
    section = report(m, clock_hz, image=args.image_link or args.plot)
    print(section)
    if args.write_docs:
        replace_section(args.write_docs, section)
        print(f"wrote the '{SECTION}' section of {args.write_docs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
