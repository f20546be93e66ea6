"""Certified against sampled torque error of UR5, UR10 and Panda, and a formats what-if.

``python -m linkdyn.model.certify_docs [--states 100000] --out docs/certificate.md``

For each robot (example-robot-data URDFs, :func:`linkdyn.model.reference.load_reference_robot`)
in the default box of :func:`linkdyn.model.certify.certify` it writes the certified bound per
joint, the sampled maximum of ``|rnea_fixed - rnea|`` over random and corner states of the same
box (:func:`linkdyn.model.certify.sampled_error`), their ratio and ``saturation_free``; the
analysis variants (interval or affine ranges, with or without the vector-norm groups); and a
what-if: a greedy search over the fractional bits per quantity (and the sine table's size) for
the formats whose *certified* bound is smallest, each step a real run of the analysis.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

from .certify import QUANTITIES, SEED, certify, sampled_error
from .reference import load_reference_robot
from .tables import SineTable, SINE_TABLE

__all__ = ["ROBOTS", "whatif_formats", "main"]

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


def whatif_formats(robots, steps=24, goal=GOAL, log=None):
    """Greedy search for per-quantity fractional bits (and a sine table) with a small bound.

    Each step tries one more fractional bit (two for the table's index: a table of four times
    the entries) for every quantity of :data:`linkdyn.model.certify.QUANTITIES` and keeps the
    change that lowers the largest certified bound over ``robots`` most, refusing formats where
    the analysis finds possible saturation. Stops at ``goal`` or when nothing helps.

    Returns
    -------
    list of (dict, int, float)
        Per step: the fractional bits changed so far, the table's index bits, and the bound.
    """
    base = certify(robots[0]).formats
    bits = {k: v for k, v in base.items() if k != "word"}
    index_bits = SINE_TABLE.index_bits
    history = [({}, index_bits, _worst(robots, {}, SINE_TABLE))]
    current = history[0][0]
    for _ in range(steps):
        best = None
        for quantity in QUANTITIES:
            trial = dict(current)
            trial[quantity] = trial.get(quantity, bits[quantity]) + 1
            if trial[quantity] > 31:
                continue
            table = SineTable(index_bits=index_bits, fraction_bits=30 - index_bits,
                              entry_bits=SINE_TABLE.entry_bits)
            value = _worst(robots, trial, table)
            if best is None or value < best[2]:
                best = (trial, index_bits, value)
        if index_bits + 2 <= 14:
            table = SineTable(index_bits=index_bits + 2, fraction_bits=28 - index_bits,
                              entry_bits=36)
            value = _worst(robots, current, table)
            if best is None or value < best[2]:
                best = (dict(current), index_bits + 2, value)
        if best is None or best[2] >= history[-1][2]:
            break
        current, index_bits = best[0], best[1]
        history.append(best)
        if log:
            log(f"what-if step {len(history) - 1}: {best[0]} table 2^{best[1]}: {best[2]:.3e}")
        if best[2] <= goal:
            break
    return history


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
    parser.add_argument("--steps", type=int, default=24, help="what-if search steps")
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
    history = whatif_formats(list(robots.values()), steps=args.steps, log=log)
    final_formats, final_index, _ = history[-1]
    final_table = SineTable(index_bits=final_index, fraction_bits=30 - final_index,
                            entry_bits=SINE_TABLE.entry_bits if final_index == 9 else 36)
    final = {name: certify(robot, formats=final_formats, table=final_table)
             for name, robot in robots.items()}

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
      f"{max(c.max_bound_nm for c, _ in results.values()):.1e} N·m); sampled maximum never "
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
      "are [-1, 1] and every product's linear part vanishes into the remainder (they do "
      "help in narrow boxes, see the tests). What helps is the *vector-norm groups*: the "
      "analysis keeps a Euclidean-norm bound for every 3-vector the program computes (omega, "
      "omega_dot, p_ddot, f, mu, ...; `_GROUPS` in `linkdyn.model.certify`) and for each "
      "error symbol's coefficient vector; a rotation preserves it, while intervals of a "
      "rotated vector grow by up to sqrt 2 per joint (the wrapping effect). Componentwise "
      "only, the Panda's base force reaches 5e4 N and the analysis reports possible "
      "saturation that cannot occur.")
    w("")
    w("**Why the bound is 10x to 150x the sampled maximum.** (1) The analysis takes every "
      "rounding as an adversary: ~1,000 roundings per chain add in magnitude, while on real "
      "states they are nearly independent and add like a random walk; for the UR5 at one "
      "joint position with qd = qdd = 0 (a box of zero width, gravity only) the bound was "
      "still 4x to 8x the observed error on joints 2 to 4. (2) Each "
      "error symbol's coefficient is bounded over the whole box separately, so the worst "
      "`q` of one symbol and the worst `q` of the next need not be the same state. (3) Norm "
      "bounds do not know directions, and they add the effects of one error (say the "
      "rounding of `q_i`, which turns frame i) along the forward and the backward paths "
      "where in the real torque they partly cancel; the large horizontal gravity moment's error counts "
      "fully in `tau_1` of a vertical first joint. (4) With every `|qd_i|` at its limit, "
      "`|omega|` is bounded by the sum of the joint rates, and the centripetal and gyroscopic "
      "products are bounded by products of such norms. Closing the gap needs subdivision of "
      "the box (branch and bound over `q`, `qd`) or a domain that keeps polynomial "
      "dependence (Taylor models / polynomial zonotopes); both are future work.")
    w("")
    w("## What if: formats per quantity (computed by the analysis)")
    w("")
    w("Greedy search (`whatif_formats`): each step gives one quantity of `QUANTITIES` one "
      "more fractional bit (the 32-bit word stays; the analysis refuses formats that may "
      "saturate in the box) or the sine table four times the entries (interpolation error "
      "/16), keeping the change that lowers the largest certified bound over the three robots "
      "most. Each line is a real run of the analysis on UR5, UR10 and Panda.")
    w("")
    w("| step | change (fractional bits, from the current formats) | table entries | largest "
      "certified bound (N·m) |")
    w("|---:|---|---:|---:|")
    for step, (formats, index_bits, value) in enumerate(history):
        change = ", ".join(f"{k} {v}" for k, v in sorted(formats.items())) or "current formats"
        w(f"| {step} | {change} | {1 << index_bits:,} | {value:.3e} |")
    w("")
    w("With the last formats of the table (per joint, N·m):")
    w("")
    for name, cert in final.items():
        w(f"- {_TITLES[name]}: " + ", ".join(f"{v:.2e}" for v in cert.bound_nm)
          + f"; saturation free: {'yes' if cert.saturation_free else 'NO'}.")
    w("")
    met = all(c.max_bound_nm <= GOAL for c in final.values())
    w("The certified 1e-3 N·m is " + ("**reached**" if met else "**not reached**") + " by "
      "formats alone with this analysis" + ("." if met else
      f" within {args.steps} steps: what limits it is the looseness of the bound (above); "
      "the what-if shows which quantities the certified bound is most sensitive to.")
      + " The gateware and the "
      "golden model still use the current formats (changing them is a separate step; every "
      "bit-exact test changes with them).")
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
