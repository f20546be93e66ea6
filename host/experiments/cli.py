"""``linkdyn experiment {point,payload,contact,track,identify} --out DIR [--seconds S]``.

``--controller golden`` (default: the golden models) or ``gateware`` (the controller and chain
gateware in Verilator, :mod:`linkdyn.host.experiments.gateware`).
"""

from __future__ import annotations

__all__ = ["register"]


def register(subparsers):
    """Add the ``experiment`` subcommand."""
    parser = subparsers.add_parser(
        "experiment", help="run a closed-loop experiment of the paper on the MuJoCo plant",
        description="Closed-loop experiments (paper Sect. 4.1 identify, 4.2 contact, 4.3 point, "
                    "4.4 track, 4.5 payload) with the golden controller (or the gateware "
                    "in Verilator) and the MuJoCo plant; writes DIR/<run>.csv, "
                    "DIR/summary.json and plots.")
    parser.add_argument("name", metavar="EXPERIMENT",
                        help="point, payload, contact, track or identify")
    parser.add_argument("--robot", default="ur5", help="reference arm (default ur5)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--controller", default="golden",
                        help="golden models (default) or the controller and chain gateware "
                             "in Verilator (slower than real time)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="length of each run, s (default 2 for point, 3 for payload, 4 for "
                             "contact, 10 for track; identify: a short version with runs of "
                             "S s)")
    parser.set_defaults(func=_run)


def _run(args):
    from linkdyn.host.cli import CommandError
    from .report import run_experiment
    from .runs import EXPERIMENTS, NOT_BUILT
    if args.controller not in ("golden", "gateware"):
        raise CommandError(f"--controller must be golden or gateware, not {args.controller!r}")
    if args.name in NOT_BUILT:
        raise CommandError(f"experiment {args.name!r} is not built yet; built: "
                           f"{', '.join(EXPERIMENTS)}")
    if args.name not in EXPERIMENTS:
        raise CommandError(f"unknown experiment {args.name!r}; built: {', '.join(EXPERIMENTS)}"
                           + (f" (not yet: {', '.join(NOT_BUILT)})" if NOT_BUILT else ""))
    if args.seconds is not None and not args.seconds > 0:
        raise CommandError(f"--seconds must be > 0, not {args.seconds!r}")
    try:
        entry = run_experiment(args.name, args.out, robot=args.robot, seconds=args.seconds,
                               controller=args.controller)
    except ValueError as error:
        raise CommandError(str(error)) from None
    print(f"{args.name}: {entry['ours']}")
    print(f"  paper: {entry['paper']}")
    print(f"  real-time factor ({entry['controller']}, wall clock): "
          f"{entry['real_time_factor']:.3f}")
    print(f"  wrote {args.out}/summary.json, "
          + ", ".join(f"{run}.csv" for run in entry["figures"]) + ", "
          + ", ".join(entry["plots"]))
    return 0
