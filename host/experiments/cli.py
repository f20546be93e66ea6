"""``linkdyn experiment {point,payload,contact,track,identify} --out DIR [--seconds S]``.

``contact`` takes ``--amplitude N``, the peak commanded force (default 40 N, paper Sect. 4.2);
a value above the predicted saturation shows the torque limit
(``linkdyn experiment contact --amplitude 1114.6``).

``--controller golden`` (default: the golden models) or ``gateware`` (the controller and chain
gateware in Verilator, :mod:`linkdyn.host.experiments.gateware`).
"""

from __future__ import annotations

import math

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
                             "S s); at least what the figures need: 0.93 for point, 1.78 for "
                             "payload, 2 for contact")
    parser.add_argument("--amplitude", type=float, default=None, metavar="N",
                        help="contact only: peak commanded force, N (default 40, the paper's); "
                             "above the predicted saturation the torque limit shows; it must "
                             "fit the last node's wrench registers")
    parser.set_defaults(func=_run)


def _run(args):
    from linkdyn.host.cli import CommandError
    from .report import run_experiment
    from .runs import EXPERIMENTS, NOT_BUILT, minimum_seconds
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
    shortest = minimum_seconds(args.name)
    if args.seconds is not None and shortest is not None and args.seconds < shortest:
        raise CommandError(f"--seconds must be >= {shortest:g} for {args.name} (the shortest "
                           f"run that measures its figures), not {args.seconds:g}")
    options = {}
    if args.amplitude is not None:
        if args.name != "contact":
            raise CommandError(f"--amplitude is an option of contact, not of {args.name}")
        if not math.isfinite(args.amplitude) or not args.amplitude > 0:
            raise CommandError(f"--amplitude must be a finite force > 0 N, not "
                               f"{args.amplitude!r}")
        options["amplitude"] = args.amplitude
    try:
        entry = run_experiment(args.name, args.out, robot=args.robot, seconds=args.seconds,
                               controller=args.controller, **options)
    except ValueError as error:
        raise CommandError(str(error)) from None
    except OSError as error:
        path = error.filename if error.filename is not None else args.out
        raise CommandError(f"cannot write {path}: {error.strerror or error}") from None
    print(f"{args.name}: {entry['ours']}")
    print(f"  paper: {entry['paper']}")
    print(f"  real-time factor ({entry['controller']}, wall clock): "
          f"{entry['real_time_factor']:.3f}")
    print(f"  wrote {args.out}/summary.json, "
          + ", ".join(f"{run}.csv" for run in entry["figures"]) + ", "
          + ", ".join(entry["plots"]))
    return 0
