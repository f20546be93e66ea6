"""``linkdyn certify``: the certified worst-case torque error of a robot's fixed-point node chain.

``linkdyn certify --robot R [--tip LINK] [--qd-max ...] [--qdd-max 10] [--wrench-max F,M]
[--states 10000] --out DIR`` runs :func:`linkdyn.model.certify.certify` over the box of states
and writes ``DIR/certificate.json`` (``bound_nm`` per joint, ``saturation_free``, the box, the
formats, the error budget), ``DIR/certificate.md`` (a readable report) and
``DIR/certificate.png`` (certified bound beside the sampled maximum of the golden model, per
joint). Exit status 0 when no register can saturate in the box, 1 when one may (the report
names it), 2 on bad input.
"""

from __future__ import annotations

import sys

from linkdyn.host.cli import CommandError


def register(subparsers):
    """Add ``certify`` to the ``linkdyn`` parser."""
    from linkdyn.model.certify import add_box_arguments

    parser = subparsers.add_parser(
        "certify", help="certified worst-case fixed-point torque error over a box of states",
        description="Certify the fixed-point node chain of a robot over a box of joint states "
                    "(q within the joint limits, |qd| within the velocity limits, |qdd| <= "
                    "10 rad/s^2, no external wrench by default): a guaranteed bound on "
                    "|tau_fixed - tau_exact| per joint and a proof that no register saturates. "
                    "Writes DIR/certificate.json, certificate.md and certificate.png.")
    add_box_arguments(parser)
    parser.set_defaults(func=command_certify)


def command_certify(args):
    """Run ``linkdyn certify``; return 0 (saturation free) or 1 (a register may saturate)."""
    from linkdyn.model.certify import write_certificate
    from linkdyn.model.library import load_robot
    from linkdyn.model.robot import RobotDescriptionError

    try:
        robot = load_robot(args.robot, tip=args.tip)
    except (FileNotFoundError, RobotDescriptionError, NotImplementedError) as error:
        raise CommandError(str(error)) from None
    try:
        certificate, sampled = write_certificate(
            robot, args.out, qd_max=args.qd_max, qdd_max=args.qdd_max,
            wrench_max=args.wrench_max, domain=args.domain, states=args.states,
            log=lambda text: print(text, file=sys.stderr))
    except (TypeError, ValueError, NotImplementedError) as error:
        raise CommandError(str(error)) from None
    print(f"{robot.name}: certified bound per joint (N·m): "
          + " ".join(f"{v:.3e}" for v in certificate.bound_nm))
    if args.states:
        print(f"{robot.name}: sampled maximum per joint (N·m):  "
              + " ".join(f"{v:.3e}" for v in sampled))
    print(f"saturation free: {'yes' if certificate.saturation_free else 'NO'}"
          + ("" if certificate.saturation_free else
             f" (first: node {certificate.saturations[0]['node']} "
             f"{certificate.saturations[0]['register']})"))
    print(f"wrote {args.out / 'certificate.json'}, certificate.md, certificate.png")
    return 0 if certificate.saturation_free else 1
