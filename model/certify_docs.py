"""Certified against sampled torque error of UR5, UR10 and Panda, and a formats what-if.

``python -m linkdyn.model.certify_docs [--states 100000] --out docs/certificate.md``

For each robot (example-robot-data URDFs, :func:`linkdyn.model.reference.load_reference_robot`)
in the default box of :func:`linkdyn.model.certify.certify` it writes the certified bound per
joint, the sampled maximum of ``|rnea_fixed - rnea|`` over random and corner states of the same
box (:func:`linkdyn.model.certify.sampled_error`), their ratio and ``saturation_free``; the
analysis variants (interval or affine ranges, with or without the vector-norm groups); and a
what-if: the fractional bits per quantity that the certified ranges allow (one set for the three
robots, :func:`common_range_formats`) with sine tables of several sizes, each a real run of the
analysis.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

from .certify import (QUANTITIES, SEED, certify, range_formats, sampled_error,
                      sine_error_bound)
from .reference import load_reference_robot
from .tables import SineTable, SINE_TABLE

__all__ = ["ROBOTS", "common_range_formats", "what_if_table", "TABLE_INDEX_BITS", "main"]

#: Robots of the report (example-robot-data URDFs).
ROBOTS = ("ur5", "ur10", "panda")

_TITLES = {"ur5": "UR5", "ur10": "UR10", "panda": "Panda"}

#: Goal of issue 17 for the certified bound, N·m.
GOAL = 1e-3


def _worst(robots, formats, table):
    """The largest certified bound over the robots, or inf if one may saturate."""
    worst = 0.0
    for robot in robots:
        try:
            c = certify(robot, formats=formats, table=table)
        except ValueError:  # a constant or the box does not fit the word
            return float("inf")
        if not c.saturation_free:
            return float("inf")
        worst = max(worst, c.max_bound_nm)
    return worst


def common_range_formats(certificates, headroom_bits=1):
    """Per quantity, the fewest of the fractional bits that each certificate's ranges allow
    (:func:`linkdyn.model.certify.range_formats`): one set of formats for all the robots."""
    each = [range_formats(c, headroom_bits) for c in certificates]
    return {k: min(f[k] for f in each) for k in each[0]}


#: Sine-table sizes of the what-if (index bits: 2**k entries per quarter wave).
TABLE_INDEX_BITS = (9, 10, 11, 12, 13)


def what_if_table(index_bits):
    """The sine table of the what-if: ``2**index_bits`` entries (36 bits beyond the default)."""
    if index_bits == SINE_TABLE.index_bits:
        return SINE_TABLE
    return SineTable(index_bits=index_bits, fraction_bits=30 - index_bits, entry_bits=36)


def _plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.6), sharey=True)
    for ax, (name, (cert, sampled)) in zip(axes, results.items()):
        n = len(cert.bound_nm)
        x = np.arange(1, n + 1)
        ax.bar(x - 0.2, cert.bound_nm, 0.4, color="tab:red", label="certified bound")
        ax.bar(x + 0.2, sampled, 0.4, color="tab:blue", label="sampled maximum")
        ax.axhline(GOAL, color="k", linestyle="--", linewidth=1, label="goal 1e-3 N·m")
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xlabel("joint")
        ax.set_title(f"{_TITLES[name]} (Q15.16, default box)")
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel("|tau_fixed - tau| (N·m)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    """Write the certificate figures of UR5, UR10 and Panda to a Markdown file (+ PNG)."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.model.certify_docs",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    log = lambda text: print(text, file=sys.stderr)  # noqa: E731
    robots = {name: load_reference_robot(name) for name in ROBOTS}
    results, variants, timing = {}, {}, {}
    for name, robot in robots.items():
        start = time.perf_counter()
        cert = certify(robot)
        timing[name] = time.perf_counter() - start
        log(f"{name}: sampling {args.states:,} states")
        sampled, overflow = sampled_error(robot, cert, args.states)
        results[name] = (cert, sampled)
        variants[name] = {
            "affine, vector norms (default)": cert,
            "interval, vector norms": certify(robot, domain="interval"),
            "affine, componentwise only": certify(robot, vector_norms=False),
            "interval, componentwise only": certify(robot, domain="interval",
                                                    vector_norms=False),
        }
        if overflow.any():
            log(f"{name}: the golden model saturated on a sampled state")
    png = args.out.with_suffix(".png")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    _plot(results, png)
    formats = common_range_formats([c for c, _ in results.values()])
    whatif = {}
    for index_bits in TABLE_INDEX_BITS:
        table = what_if_table(index_bits)
        whatif[index_bits] = {name: certify(robot, formats=formats, table=table)
                              for name, robot in robots.items()}
        log(f"what-if, table 2^{index_bits}: "
            + " ".join(f"{c.max_bound_nm:.2e}" for c in whatif[index_bits].values()))

    reached = any(all(c.max_bound_nm <= GOAL and c.saturation_free for c in certs.values())
                  for certs in whatif.values())
    out = []
    w = out.append
    w("# Certified worst-case torque error of the fixed-point node")
    w("")
    w(f"Generated by `python -m linkdyn.model.certify_docs --states {args.states} --out "
      f"{args.out.as_posix()}` on {datetime.date.today().isoformat()} (machine: "
      f"{os.cpu_count()} cores). Do not edit by hand: rerun the command.")
    w("")
    w("`linkdyn.model.certify.certify(robot, ...)` analyses the node microprogram over a box of "
      "joint states (module docstring: every Dot's exact accumulation and one half-up "
      "rounding, saturation, the phase wrap, the sine table's and the CORDIC's proven worst "
      "cases, the encoding of the constants and the inputs) and returns a bound on "
      "`|tau_fixed - tau_exact|` that holds for *every* state of the box. Here it is set "
      "beside the sampled maximum of the golden model (`rnea_fixed`, bit-exact with the "
      "gateware) against the float model (`rnea`).")
    w("")
    w("Default box: `q` within the joint limits, `|qd|` within the velocity limits, "
      "`|qdd| <= 10 rad/s²`, no external wrench; robots: example-robot-data URDFs (UR5, UR10, "
      "Panda up to `panda_hand`), no friction (the URDFs publish none). Sampled: "
      f"{args.states:,} uniform random states and {args.states // 5:,} random corners of the "
      f"box per robot (seed {SEED}).")
    w("")
    w("## Certified bound and sampled maximum (Q15.16, the current formats)")
    w("")
    for name, (cert, sampled) in results.items():
        n = len(cert.bound_nm)
        w(f"**{_TITLES[name]}**: saturation free: **{'yes' if cert.saturation_free else 'NO'}**"
          f" (proven for the box); analysis {timing[name]:.2f} s.")
        w("")
        w("| | " + " | ".join(f"joint {i + 1}" for i in range(n)) + " |")
        w("|---|" + "---:|" * n)
        w("| certified bound (N·m) | " + " | ".join(f"{v:.2e}" for v in cert.bound_nm) + " |")
        w("| sampled max (N·m) | " + " | ".join(f"{v:.2e}" for v in sampled) + " |")
        w("| bound / sampled | " + " | ".join(f"{b / s:.0f}" for b, s in
                                              zip(cert.bound_nm, sampled)) + " |")
        for kind in ("input q", "input qd", "input qdd", "constant inertia",
                     "constant first_moment", "constant mass", "rounding", "table"):
            if kind in cert.sources:
                w(f"| of which {kind} | " + " | ".join(f"{v:.1e}" for v in cert.sources[kind])
                  + " |")
        w("")
        hot = cert.hot_registers
        words = [h for h in cert.registers if h["limit"][1] > 100]  # word-format registers
        top = max(words, key=lambda h: h["use"])
        w(f"Closest to saturation among the Q15.16 registers: node {top['node']} "
          f"`{top['register']}`, |x| + |e| up to {top['use'] * top['limit'][1]:.4g} of "
          f"{top['limit'][1]:.6g} ({top['use']:.1%}); overall: node {hot[0]['node']} "
          f"`{hot[0]['register']}` ({hot[0]['use']:.1%} of its Q1.30 word).")
        w("")
    w(f"![certified bound and sampled maximum per joint]({png.name})")
    w("")
    w("Goals of issue 17: bound <= 1e-3 N·m on every joint: **not met** (the bound is "
      f"{min(c.max_bound_nm for c, _ in results.values()):.1e} to "
      f"{max(c.max_bound_nm for c, _ in results.values()):.1e} N·m with the current "
      "formats" + ("; with formats per quantity and a finer sine table it is met, see the "
                   "what-if below" if reached else "") + "); sampled maximum never "
      "above the bound: **met** (also tested, `tests/model/test_certify.py`, 10^4 states per "
      "robot, 10^5 with `LINKDYN_LONG=1`); bound at most 4x the sampled maximum: **not met**"
      " (ratios above).")
    w("")
    w("### Analysis variants (certified bound per joint, N·m)")
    w("")
    for name, rows in variants.items():
        n = robots[name].n
        w(f"**{_TITLES[name]}**")
        w("")
        w("| analysis | " + " | ".join(f"joint {i + 1}" for i in range(n))
          + " | saturation free |")
        w("|---|" + "---:|" * n + "---|")
        for label, c in rows.items():
            w(f"| {label} | " + " | ".join(f"{v:.2e}" for v in c.bound_nm)
              + f" | {'yes' if c.saturation_free else 'NO'} |")
        w("")
    w("Affine forms over the state keep the dependence of a register on `q`, `qd`, `qdd` "
      "where intervals lose it; here they gain nothing: `q` spans whole turns, so `sin`/`cos` "
      "are [-1, 1] and every product's linear part vanishes into the remainder. In narrow "
      "boxes they do help: on the UR5 with `q` boxes 0.01 rad wide the affine bound was "
      "0.52 to 0.99 times the interval one (0.2 rad: 0.75 to 0.94; 1 rad: 0.90 to 1.00). "
      "What helps in the default box is the *vector-norm groups*: the "
      "analysis keeps a Euclidean-norm bound for every 3-vector the program computes (omega, "
      "omega_dot, p_ddot, f, mu, ...; `_GROUPS` in `linkdyn.model.certify`) and for each "
      "error symbol's coefficient vector; a rotation preserves it, while intervals of a "
      "rotated vector grow by up to sqrt 2 per joint (the wrapping effect). Componentwise "
      "only, the Panda's base force reaches 5e4 N and the analysis reports possible "
      "saturation that cannot occur.")
    w("")
    ratios = [b / x for c, sampled in results.values() for b, x in zip(c.bound_nm, sampled)]
    w(f"**Why the bound is {min(ratios):.0f}x to {max(ratios):.0f}x the sampled maximum.** "
      "(1) The analysis takes every rounding as an adversary: ~1,000 roundings per chain "
      "add in magnitude, while on real states they are nearly independent and add like a "
      "random walk; for the UR5 at three "
      "single states with qd = qdd = 0 (boxes of zero width, gravity only) the bound was "
      "2.5x to 45x the actual error on joints 2 to 4 (one state's error is one draw of "
      "the roundings, the bound their worst alignment). (2) Each "
      "error symbol's coefficient is bounded over the whole box separately, so the worst "
      "`q` of one symbol and the worst `q` of the next need not be the same state. (3) Norm "
      "bounds do not know directions, and they add the effects of one error (say the "
      "rounding of `q_i`, which turns frame i) along the forward and the backward paths "
      "where in the real torque they partly cancel; the large horizontal gravity moment's "
      "error counts fully in `tau_1` of a vertical first joint. (4) With every `|qd_i|` at "
      "its limit, `|omega|` is bounded by the sum of the joint rates, and the centripetal "
      "and gyroscopic "
      "products are bounded by products of such norms. Closing the gap needs subdivision of "
      "the box (branch and bound over `q`, `qd`) or a domain that keeps polynomial "
      "dependence (Taylor models / polynomial zonotopes); both are future work.")
    w("")
    w("## What if: formats per quantity (computed by the analysis)")
    w("")
    w("`range_formats(certificate)` gives every quantity of `QUANTITIES` the most fractional "
      "bits its certified range leaves in the 32-bit word (integer bits for the largest "
      "|x| + |e| over all nodes, plus one bit of headroom); one set for all three robots takes "
      "the fewest per quantity. The analysis then runs again with those formats (it proves "
      "them saturation free in the box) and with sine tables of 512 to 8,192 entries (36-bit "
      "entries beyond the current 512 x 31 bits): a real computation, not an estimate.")
    w("")
    w("| quantity | what | fractional bits now | what-if |")
    w("|---|---|---:|---:|")
    now = next(iter(results.values()))[0].formats
    for quantity, what in QUANTITIES.items():
        w(f"| {quantity} | {what} | {now[quantity]} | {formats[quantity]} |")
    w("")
    w("| sine table | table worst case (rad) | " + " | ".join(
        f"{_TITLES[name]}: largest bound (N·m)" for name in robots) + " | saturation free |")
    w("|---|---:|" + "---:|" * len(robots) + "---|")
    for index_bits, certs in whatif.items():
        table = what_if_table(index_bits)
        free = all(c.saturation_free for c in certs.values())
        w(f"| {table.size:,} x {table.entry_bits} bits | {sine_error_bound(table):.2e} | "
          + " | ".join(f"{c.max_bound_nm:.2e}" for c in certs.values())
          + f" | {'yes' if free else 'NO'} |")
    w("")
    reach = [k for k, certs in whatif.items()
             if all(c.max_bound_nm <= GOAL and c.saturation_free for c in certs.values())]
    if reach:
        k = reach[0]
        w(f"**The certified bound reaches 1e-3 N·m on every joint of the three robots with "
          f"these formats and a table of {1 << k:,} entries** (per joint, N·m):")
        w("")
        for name, cert in whatif[k].items():
            w(f"- {_TITLES[name]}: " + ", ".join(f"{v:.2e}" for v in cert.bound_nm) + ".")
        w("")
        w(f"Formats alone are not enough: with the current table the bound stays at "
          f"{max(c.max_bound_nm for c in whatif[9].values()):.1e} N·m, the table's "
          f"{sine_error_bound(SINE_TABLE):.2e} (per sine and cosine, every joint) dominates "
          f"it. A {1 << k:,} x 36-bit table is {(1 << k) * 36 / 1024:.0f} kbit (the current "
          "one fits one 18-kbit block RAM). The what-if assumes the node aligns sum terms of "
          "mixed formats and that its accumulator and shifter hold the wider products (e.g. "
          "`q * rate`: 27 + 32 fractional bits). The gateware and the golden model still use the "
          "current formats (changing them changes every bit-exact test and is a separate "
          "step).")
    else:
        w("The certified 1e-3 N·m is **not reached** with these formats and tables.")
    w("")
    w("## Beside RoboPrec")
    w("")
    w("RoboPrec (Yilmaz, Bourgeat, Pentecost, Plancher, Neuman; RA-L 2025) certifies "
      "worst-case error bounds for fixed-point robotics kernels such as RNEA: the kernel, "
      "written in Rust with RoboPrec's scalar, vector and matrix types, is unrolled and "
      "simplified into an analysis language; a static analyser (Daisy: interval and affine "
      "arithmetic for ranges and round-off errors) computes ranges and worst-case errors for "
      "given input ranges and a chosen uniform or mixed precision; and C or fixed-point "
      "(ap_fixed-style) code is generated that meets the bounds. LinkDyn's certificate is "
      "the same kind of analysis, but of the node microprogram itself, the program the "
      "gateware runs from its ROM: every Dot with its exact accumulation, its one half-up "
      "rounding and its saturation check, the phase word's wrap, the interpolated sine table "
      "and the CORDIC with proven worst cases, the encoding of the constants and inputs, "
      "node by node in the order the chain runs; and its soundness is tested against the "
      "golden model that is bit-exact with the hardware. It adds vector-norm groups, which "
      "keep rotations from inflating ranges and errors (the wrapping effect), and does not "
      "(yet) subdivide the input box, which is why it stays far above the sampled error on "
      "boxes that span whole turns of every joint.")
    w("")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(out), encoding="utf-8")
    log(f"wrote {args.out} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
