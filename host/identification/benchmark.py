"""Identification figures for the documentation: the real Panda run, timings against Pinocchio,
the UR5 excitation optimisation.

Run from the repository (a few minutes; writes ``docs/img/*.png`` and a JSON of the numbers)::

    .venv/bin/python -m linkdyn.host.identification.benchmark --out docs/img \\
        --json build/identification_figures.json

Needs the optional ``reference`` packages (``pin``, ``example-robot-data``) and the
``panda-gaz2019`` data set (:func:`~.data.dataset_path`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["pinocchio_regressor_seconds", "linkdyn_regressor_seconds", "panda_figures",
           "compare_friction_models", "excitation_figures", "main"]


def _pinocchio_panda(urdf):
    """Pinocchio model of the Panda arm with the finger joints locked at zero (7 joints), the
    same chain as ``load_robot(urdf, tip="panda_hand")``."""
    import pinocchio as pin
    full = pin.buildModelFromUrdf(os.fspath(urdf))
    locked = [full.getJointId(name) for name in full.names if "finger" in name]
    if not locked:
        return full
    return pin.buildReducedModel(full, locked, pin.neutral(full))


def pinocchio_regressor_seconds(model, q, qd, qdd):
    """Time ``pinocchio.computeJointTorqueRegressor`` over all samples (a Python loop, as a
    user of Pinocchio's Python bindings would write it). Returns ``(seconds, regressor)``, the
    regressor shape (N, n, 10 n) in Pinocchio's parameter order."""
    import pinocchio as pin
    data = model.createData()
    out = np.empty((q.shape[0], model.nv, 10 * model.nv))
    start = time.perf_counter()
    for k in range(q.shape[0]):
        out[k] = pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])
    return time.perf_counter() - start, out


def linkdyn_regressor_seconds(robot, q, qd, qdd):
    """Time :func:`linkdyn.model.regressor` on all samples at once. Returns
    ``(seconds, regressor)``."""
    from linkdyn.model import regressor
    start = time.perf_counter()
    y = regressor(robot, q, qd, qdd)
    return time.perf_counter() - start, y


def _best_of(function, repeats):
    best, value = math.inf, None
    for _ in range(repeats):
        seconds, value = function()
        best = min(best, seconds)
    return best, value


def panda_figures(out, *, repeats=3, progress=print):
    """Identify the Panda on the real run (70 / 30), time the regressors; plots into ``out``."""
    from linkdyn.model import load_robot
    from .data import dataset_path, load_measurements
    from .pipeline import IdentificationOptions, identify, summary, write_outputs
    from linkdyn.model.reference import example_robot_urdf

    urdf = example_robot_urdf("panda")
    robot = load_robot(urdf, tip="panda_hand")
    start = time.perf_counter()
    measurements = load_measurements(dataset_path("panda-gaz2019"))
    load_seconds = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        runs.append(identify(robot, measurements, IdentificationOptions()))
    result = min(runs, key=lambda r: r.seconds)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        written = write_outputs(result, scratch, plots=True)
        shutil.copy(written["validation_plot"], folder / "identification_panda_validation.png")
        shutil.copy(written["steepness_plot"], folder / "identification_panda_steepness.png")
    written = {"validation_plot": folder / "identification_panda_validation.png",
               "steepness_plot": folder / "identification_panda_steepness.png"}
    figures = {"identification": summary(result), "load_seconds": load_seconds,
               "identify_seconds_all_runs": [r.seconds for r in runs]}
    # Other variants, for the documentation's comparison.
    variants = {}
    for label, options in (
            ("differentiated accelerations", IdentificationOptions(acceleration="differentiate")),
            ("steepness k = 100 (paper)", IdentificationOptions(steepness=100.0)),
            ("no low-pass filter", IdentificationOptions(cutoff=None))):
        variant = identify(robot, measurements, options)
        variants[label] = {
            "validation_rms_nm": variant.errors["identified"].rms.tolist(),
            "validation_rms_unfiltered_nm": variant.errors_unfiltered["identified"].rms.tolist(),
            "steepness": variant.steepness, "seconds": variant.seconds}
    figures["variants"] = variants
    figures["friction_models"] = compare_friction_models(robot, measurements)
    # Regressor timings on the same (training) samples.
    train = result.train
    q, qd, qdd = train.q, train.qd, train.qdd
    ours, y = _best_of(lambda: linkdyn_regressor_seconds(robot, q, qd, qdd), repeats)
    model = _pinocchio_panda(urdf)
    model.gravity.linear = robot.gravity  # Pinocchio's default is 9.81 m/s^2
    pinocchio, y_pin = _best_of(lambda: pinocchio_regressor_seconds(model, q, qd, qdd),
                                repeats)
    # The torques agree (nominal parameters, both orders).
    import pinocchio as pin
    inertial = np.concatenate([model.inertias[j].toDynamicParameters()
                               for j in range(1, model.njoints)])
    tau_pin = y_pin @ inertial
    tau_ours = y[..., :10 * robot.n] @ robot.parameters()[:10 * robot.n]
    figures["regressor"] = {
        "samples": int(q.shape[0]), "joints": robot.n,
        "linkdyn_seconds": ours, "pinocchio_loop_seconds": pinocchio,
        "pinocchio_version": pin.__version__,
        "max_torque_difference_nm": float(np.max(np.abs(tau_pin - tau_ours))),
    }
    figures["files"] = {key: os.fspath(path) for key, path in written.items()}
    progress(f"panda: validation RMS {np.round(result.errors['identified'].rms, 3)} N·m, "
             f"nominal {np.round(result.errors['nominal'].rms, 3)} N·m, {result.seconds:.2f} s; "
             f"regressor {ours:.3f} s (Pinocchio loop {pinocchio:.3f} s)")
    return figures


def _sigmoid_column(qd, phi2, phi3):
    """Gaz et al.'s friction shape ``1 / (1 + exp(-phi2 (qd + phi3))) - 1 / (1 + exp(-phi2 phi3))``
    (linear in its amplitude ``phi1``)."""
    from scipy.special import expit
    return expit(phi2 * (qd + phi3)) - expit(phi2 * phi3)


def compare_friction_models(robot, measurements, options=None):
    """Validation RMS of two friction models with the same rigid-body base parameters (WLS):
    the seed paper's eq. (20) (``atan`` Coulomb + viscous + offset, ``k`` searched) and the
    sigmoid of Gaz et al. 2019 (3 parameters per joint, ``phi2``, ``phi3`` fitted per joint by
    nonlinear least squares on the friction residual, then all linear parameters refitted).

    Returns a dict of per-joint validation RMS (N·m) and the fitted sigmoid parameters.
    """
    import scipy.optimize
    from linkdyn.model import regressor
    from .base_parameters import base_parameters
    from .data import resample_uniform
    from .estimation import noise_weights, select_steepness, weighted_least_squares
    from .pipeline import IdentificationOptions, prepare
    from .validation import torque_errors

    options = IdentificationOptions() if options is None else options
    if not measurements.is_uniform:
        measurements = resample_uniform(measurements)
    train_raw, validation_raw = measurements.split(options.train_fraction)
    train, validation = prepare(train_raw, options), prepare(validation_raw, options)
    n = robot.n
    base = base_parameters(robot)
    independent = list(base.independent)
    friction = [independent.index(10 * n + 3 * i + k) for i in range(n) for k in range(3)]
    rigid = [c for c in range(base.count) if c not in friction]

    def rigid_regressor(part):
        return base.base_regressor(regressor(robot, part.q, part.qd, part.qdd))[..., rigid]

    y_train, y_validation = rigid_regressor(train), rigid_regressor(validation)
    eye = np.eye(n)[None, :, :]

    def atan_columns(part, k):
        return np.concatenate([np.arctan(k * part.qd)[:, :, None] * eye,
                               part.qd[:, :, None] * eye, np.ones_like(part.qd)[:, :, None]
                               * eye], axis=2)

    weights = noise_weights(np.concatenate([y_train, atan_columns(train, 100.0)], axis=2),
                            train.tau)
    fixed = np.concatenate([y_train, atan_columns(train, 1.0)[..., n:]], axis=2)
    k = select_steepness(fixed, train.qd, train.tau, weights=weights).steepness
    a_train = np.concatenate([y_train, atan_columns(train, k)], axis=2)
    atan_fit = weighted_least_squares(a_train, train.tau, weights)
    a_validation = np.concatenate([y_validation, atan_columns(validation, k)], axis=2)
    atan_rms = torque_errors(validation.tau, a_validation @ atan_fit.base).rms
    # Sigmoid: per joint, fit (phi1, phi2, phi3) to what the rigid-body part leaves.
    residual = train.tau - y_train @ atan_fit.base[:len(rigid)]
    sigmoid = []
    for j in range(n):
        def error(x, j=j):
            return x[0] * _sigmoid_column(train.qd[:, j], x[1], x[2]) - residual[:, j]
        x0 = [2 * float(np.max(np.abs(residual[:, j]))), 50.0, 0.0]
        fit = scipy.optimize.least_squares(error, x0, bounds=([-np.inf, 1.0, -0.5],
                                                              [np.inf, 1e4, 0.5]))
        sigmoid.append(fit.x)
    sigmoid = np.array(sigmoid)

    def sigmoid_columns(part):
        return np.stack([_sigmoid_column(part.qd[:, j], sigmoid[j, 1], sigmoid[j, 2])
                         for j in range(n)], axis=1)[:, :, None] * eye

    s_train = np.concatenate([y_train, sigmoid_columns(train)], axis=2)
    sigmoid_fit = weighted_least_squares(s_train, train.tau, weights)
    s_validation = np.concatenate([y_validation, sigmoid_columns(validation)], axis=2)
    sigmoid_rms = torque_errors(validation.tau, s_validation @ sigmoid_fit.base).rms
    return {"atan_eq20_validation_rms_nm": atan_rms.tolist(), "atan_steepness": k,
            "sigmoid_validation_rms_nm": sigmoid_rms.tolist(),
            "sigmoid_phi": np.column_stack([sigmoid_fit.base[len(rigid):], sigmoid[:, 1:]])
            .tolist()}


def excitation_figures(out, *, max_iterations=100, samples=100, progress=print):
    """Optimise a UR5 excitation (5 harmonics, 10 s; boxes on the origins of frames 5 and 6)
    and plot it."""
    from linkdyn.model import load_robot
    from .excitation import CartesianBox, ExcitationLimits, optimise_excitation
    from .plots import plot_trajectory

    robot = load_robot("ur5")
    center = np.array([0.0, -np.pi / 2, 0.0, -np.pi / 2, 0.0, 0.0])
    boxes = (CartesianBox(5, lower=[-np.inf, -np.inf, 0.25]),
             CartesianBox(6, lower=[-np.inf, -np.inf, 0.25]))
    limits = ExcitationLimits.from_robot(robot, boxes=boxes)
    result = optimise_excitation(robot, harmonics=5, period=10.0, limits=limits, center=center,
                                 samples=samples, max_iterations=max_iterations, progress=True)
    t = result.trajectory.sample_times(1e-3)
    q, qd, qdd = result.trajectory.evaluate(t)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = plot_trajectory(folder / "identification_ur5_excitation.png", t, q, qd, qdd,
                           limits=(limits.q_min, limits.q_max, limits.qd_max, limits.qdd_max),
                           interval=result.trajectory.excitation_interval,
                           title=f"UR5 excitation: -log det {result.initial_value:.1f} -> "
                                 f"{result.value:.1f}")
    progress(f"ur5 excitation: {result.criterion} {result.initial_value:.2f} -> "
             f"{result.value:.2f}, {result.iterations} iterations, {result.seconds:.1f} s, "
             f"check {result.check}")
    return {"criterion": result.criterion, "initial": result.initial_value,
            "final": result.value, "condition_initial": result.initial_condition,
            "condition_final": result.condition, "iterations": result.iterations,
            "seconds": result.seconds, "success": result.success, "message": result.message,
            "check": result.check.as_dict(), "amplitude_scale": result.amplitude_scale,
            "samples": samples, "plot": os.fspath(path)}


def main(argv=None):
    """Run the benchmarks; print and optionally save the numbers."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.host.identification.benchmark",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/img", help="folder for the figures")
    parser.add_argument("--json", help="write the numbers to this JSON file")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats (best of)")
    parser.add_argument("--max-iterations", type=int, default=100,
                        help="SLSQP iterations of the excitation optimisation")
    parser.add_argument("--skip-excitation", action="store_true")
    args = parser.parse_args(argv)
    figures = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
               "platform": platform.platform(), "python": platform.python_version()}
    figures["panda"] = panda_figures(args.out, repeats=args.repeats)
    if not args.skip_excitation:
        figures["ur5_excitation"] = excitation_figures(args.out,
                                                       max_iterations=args.max_iterations)
    text = json.dumps(figures, indent=2)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
