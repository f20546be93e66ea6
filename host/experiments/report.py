"""Files of an experiment: one CSV per run, DIR/summary.json (figures + the paper's claims), plots."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .identify import identify_experiment
from .loop import write_csv
from .report_extra import CLAIMS as EXTRA_CLAIMS, DEFAULT_SECONDS, describe_identify, \
    describe_track
from .runs import contact_experiment, payload_experiment, point_experiment
from .track import track_experiment

__all__ = ["CLAIMS", "run_experiment", "write_experiment", "prepare_output", "OutputError"]

#: What the source paper (and issue 15's acceptance) says each experiment shows.
CLAIMS = {
    "contact": ("Sect. 4.2, Fig. 12: a 40 N sinusoidal force in x (horizontal) commanded through "
                "the last actuator controller's registers, open loop, the tool against a fixed "
                "board: the force measured at the wrist 'resembles the commanded force, but "
                "saturates at ca. 30 N' on COMPI (28 N·m nominal actuator torque; the amplitude "
                "chosen to cover about the full range); some force in z as well."),
    "point": ("Sect. 4.3, Fig. 13: for high, medium and low damping settings of K_p, K_d the "
              "reaction to an end-effector disturbance is damped as intended: high K_d much more "
              "damped, low K_d shows some periods of a damped oscillation (overshoot ordered "
              "low > medium > high)."),
    "payload": ("Sect. 4.5, Figs. 16, 18, 19: with low feedback gains an unmodelled 0.8 kg "
                "payload degrades tracking severely (more than 0.75 m sag of the end effector "
                "on COMPI); with its gravity written to the last node the accuracy returns to the "
                "no-payload level while the arm stays compliant (acceptance: modelled <= 1.2x, "
                "unmodelled >= 5x the no-payload error)."),
    **EXTRA_CLAIMS,
}


class OutputError(ValueError):
    """The output directory or a file in it cannot be made, read or written (names the path)."""


def _describe(error):
    path = error.filename if error.filename is not None else "?"
    return f"{path}: {error.strerror or error}"


def _read_summary(path):
    try:
        text = path.read_text()
    except OSError as error:
        raise OutputError(f"cannot read {_describe(error)}") from None
    try:
        summary = json.loads(text)
    except ValueError as error:
        raise OutputError(f"{path} is not a summary (not valid JSON: {error}); move it away or "
                          f"choose another --out") from None
    if not isinstance(summary, dict):
        raise OutputError(f"{path} is not a summary (a JSON object of experiments expected, "
                          f"found {type(summary).__name__})")
    return summary


def prepare_output(out):
    """Make the output directory (parents too) and check it before an experiment runs.

    Parameters
    ----------
    out : str or path-like
        Output directory.

    Returns
    -------
    pathlib.Path
        The directory.

    Raises
    ------
    OutputError
        If ``out`` (or a parent) is a file, the directory cannot be made or written into, or an
        existing ``out/summary.json`` is not a readable JSON object (the message names the
        path).
    """
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"{out} exists and is not a directory") from None
    except OSError as error:
        raise OutputError(f"cannot make the output directory {_describe(error)}") from None
    probe = out / ".linkdyn-write-test"
    try:
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise OutputError(f"cannot write into the output directory {_describe(error)}") \
            from None
    summary = out / "summary.json"
    if summary.exists():
        _read_summary(summary)
    return out


def run_experiment(name, out, robot="ur5", seconds=None, controller="golden", **options):
    """Run an experiment and write its files into ``out``; return its summary entry.

    Parameters
    ----------
    name : str
        ``"point"``, ``"payload"``, ``"contact"``, ``"track"`` or ``"identify"``.
    out : str or path-like
        Output directory (created if missing). ``summary.json`` there is updated (other
        experiments' entries kept).
    robot : str
        Reference arm.
    seconds : float, optional
        Length of each run, s (default 2 s for point, 3 s for payload, 4 s for contact, 10 s
        for track; identify: the paper's 10 s excitation period and 8.5 s eights, a given
        ``seconds`` is the short version of :func:`.identify.identify_experiment`).
    controller : str
        ``"golden"`` or ``"gateware"`` (the controller and chain gateware in Verilator,
        :mod:`linkdyn.host.experiments.gateware`).
    **options
        Keyword arguments of the experiment's function (``amplitude`` of
        :func:`.runs.contact_experiment`).

    Raises
    ------
    ValueError
        Unknown experiment, ``seconds`` not > 0 or shorter than the run that measures the
        figures (:func:`.runs.minimum_seconds`), unknown controller mode.
    OutputError
        (a ValueError) If ``out`` cannot be made or written, or its ``summary.json`` is not a
        summary (checked before the run; :func:`prepare_output`) or a file cannot be written
        after it (the message names the path).
    NotImplementedError
        An experiment of issue 15 not built yet.
    """
    from .runs import EXPERIMENTS, NOT_BUILT, minimum_seconds
    if controller not in ("golden", "gateware"):
        raise ValueError(f"controller must be 'golden' or 'gateware', not {controller!r}")
    if name in NOT_BUILT:
        raise NotImplementedError(f"experiment {name!r} is not built yet; built: {EXPERIMENTS}")
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {EXPERIMENTS}, not {name!r}")
    if seconds is None:
        seconds = {"point": 2.0, "payload": 3.0, "contact": 4.0, **DEFAULT_SECONDS}[name]
    shortest = minimum_seconds(name)
    if shortest is not None and isinstance(seconds, (int, float)) and seconds < shortest:
        raise ValueError(f"seconds must be >= {shortest:g} for {name} ({_WHY_MINIMUM[name]}), "
                         f"not {seconds!r}")
    made = not Path(out).exists()
    prepare_output(out)
    try:
        result = {"point": point_experiment, "payload": payload_experiment,
                  "contact": contact_experiment, "track": track_experiment,
                  "identify": identify_experiment}[name](robot, seconds, controller=controller,
                                                         **options)
    except BaseException:
        if made and not any(Path(out).iterdir()):      # leave no empty folder behind
            Path(out).rmdir()
        raise
    return write_experiment(name, result, out, robot)


#: Why each experiment needs its :func:`.runs.minimum_seconds`.
_WHY_MINIMUM = {
    "point": "the pulse and the settling of the slowest designed response, so that overshoot "
             "and settling are measured",
    "payload": "the pulse and the designed settling of the compliant gains: the error window "
               "of the no-payload reference",
    "contact": "half a period of the commanded force, so that it reaches its amplitude",
}


def write_experiment(name, result, out, robot):
    """Write the CSVs, plots and summary entry of an experiment result; return the entry.

    Raises
    ------
    OutputError
        If a file cannot be written or ``out/summary.json`` is not a summary (names the path).
    """
    try:
        return _write_experiment(name, result, Path(out), robot)
    except OSError as error:
        raise OutputError(f"cannot write {_describe(error)}") from None


def _write_experiment(name, result, out, robot):
    prepare_output(out)
    for run, log in result["runs"].items():
        write_csv(log, out / f"{run}.csv")
    entry = {key: value for key, value in result.items() if key not in ("runs", "objects")}
    entry["robot"] = robot
    entry["controller"] = result.get("controller", "golden")
    entry["real_time_factor"] = 1e-3 / result["seconds_per_cycle"]
    entry["paper"] = CLAIMS[name]
    if name == "point":
        figures = result["figures"]
        order = [figures[f"point_{s}"]["measured"]["overshoot"] for s in ("low", "medium", "high")]
        entry["ours"] = (f"overshoot low {order[0]:.1%}, medium {order[1]:.1%}, high "
                         f"{order[2]:.1%} (designed "
                         + ", ".join(f"{figures[f'point_{s}']['designed']['overshoot']:.1%}"
                                     for s in ("low", "medium", "high"))
                         + "); ordered as designed: "
                         + str(order[0] > order[1] > order[2]))
        entry["plots"] = [_plot_point(result, out / "point.png")] + _scene("point", result,
                                                                          out, robot)
    elif name == "track":
        entry["ours"], entry["plots"] = describe_track(result, out)
    elif name == "identify":
        entry["ours"], entry["plots"] = describe_identify(result, out)
    elif name == "contact":
        c = result["figures"]["contact"]
        entry["ours"] = (f"commanded 0..{c['commanded_max']:g} N along x: measured max "
                         f"{c['measured_max']:.1f} N, RMS error {c['rms_error']:.3f} N, gain "
                         f"{c['gain']:.4f} below the predicted saturation "
                         f"{c['predicted_saturation']:.0f} N (joint {c['limiting_joint']}); "
                         + ("torque limit reached at "
                            f"{c['force_at_first_clip']:.0f} N" if c["saturated"]
                            else "no joint at its torque limit"))
        entry["plots"] = [_plot_contact(result, out / "contact.png")] + _scene("contact", result,
                                                                          out, robot)
    else:
        figures = result["figures"]
        entry["ours"] = (f"RMS error none {figures['payload_none']['rms_error'] * 1e3:.1f} mm, "
                         f"unmodelled {figures['payload_unmodelled']['rms_error'] * 1e3:.1f} mm "
                         f"({figures['payload_unmodelled']['ratio_to_none']:.1f}x), modelled "
                         f"{figures['payload_modelled']['rms_error'] * 1e3:.1f} mm "
                         f"({figures['payload_modelled']['ratio_to_none']:.2f}x)")
        entry["plots"] = [_plot_payload(result, out / "payload.png")] + _scene("payload", result,
                                                                          out, robot)
    path = out / "summary.json"
    summary = _read_summary(path) if path.exists() else {}
    summary[name] = entry
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return entry


def _scene(name, result, out, robot):
    """The scene picture (:func:`.scenes.render_scene`) as a list of 0 or 1 file names."""
    from .scenes import render_scene
    picture = render_scene(name, {"robot": robot, **result}, out / f"{name}_scene.png")
    return [picture] if picture else []


def _figure():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _plot_point(result, path):
    plt = _figure()
    runs = result["runs"]
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 7), sharex=True)
    for ax, (name, log) in zip(axes, runs.items()):
        fig_data = result["figures"][name]
        error = log.error * 1e3
        for k, axis in enumerate("xyz"):
            ax.plot(log.t, error[:, k], label=f"e_{axis}")
        ax.plot(log.t, np.linalg.norm(error, axis=1), "k", lw=0.8, label="|e|")
        on = np.linalg.norm(log.d, axis=1) > 0
        if on.any():
            ax.axvspan(log.t[on][0], log.t[on][-1], color="0.9", zorder=0)
        m = fig_data["measured"]
        settle = "-" if m["settling_time"] is None else f"{m['settling_time']:.3f} s"
        ax.set_title(f"{name}: zeta {fig_data['zeta']}, K_p {fig_data['kp']:g}, "
                     f"K_d {fig_data['kd']:g}; overshoot {m['overshoot']:.1%} (designed "
                     f"{fig_data['designed']['overshoot']:.1%}), settling {settle}", fontsize=9)
        ax.set_ylabel("error, mm")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8, ncol=4)
    axes[-1].set_xlabel("t, s (grey: disturbance pulse "
                        f"{np.linalg.norm(result['force']):g} N on the tool)")
    fig.suptitle("Point control: Cartesian position error after a force pulse (cf. paper Fig. 13)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _plot_payload(result, path):
    plt = _figure()
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name, log in result["runs"].items():
        error = log.error * 1e3
        style = dict(ls="--", lw=2.2) if name.endswith("_modelled") else dict(lw=1.2)
        axes[0].semilogy(log.t, np.maximum(np.linalg.norm(error, axis=1), 1e-4), label=name,
                         **style)
        axes[1].plot(log.t, error[:, 2], label=name, **style)
    axes[0].set_ylabel("|e|, mm (log)")
    axes[1].set_ylabel("e_z (height), mm")
    axes[1].set_xlabel(f"t, s ({result['mass']:g} kg payload; {np.linalg.norm(result['force']):g}"
                       f" N pulse on the tool; K_p {result['gains']['kp']:g}, "
                       f"K_d {result['gains']['kd']:g})")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Payload: Cartesian error without payload, unmodelled, weight told to the last "
                 "node (cf. paper Figs. 16, 18, 19)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _plot_contact(result, path):
    plt = _figure()
    log = result["runs"]["contact"]
    c = result["figures"]["contact"]
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    axes[0].plot(log.t, log.f_cmd[:, 0], "k--", lw=1.5, label="commanded f_x")
    axes[0].plot(log.t, log.f[:, 0], lw=1.2, label="measured f_x (wrist)")
    if c["predicted_saturation"] <= 1.2 * c["commanded_max"]:
        axes[0].axhline(c["predicted_saturation"], color="r", lw=0.8,
                        label=f"predicted saturation {c['predicted_saturation']:.0f} N")
    axes[0].set_ylabel("f_x, N")
    axes[1].plot(log.t, log.f_cmd[:, 2], "k--", lw=1.5, label="commanded f_z")
    axes[1].plot(log.t, log.f[:, 2], lw=1.0, label="measured f_z (wrist)")
    axes[1].set_ylabel("f_z, N")
    axes[1].set_xlabel(f"t, s (K_p {result['gains']['kp']:g}, K_d {result['gains']['kd']:g}; "
                       f"predicted saturation {c['predicted_saturation']:.0f} N, joint "
                       f"{c['limiting_joint']}; RMS error below it {c['rms_error']:.3f} N)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    fig.suptitle("Contact: force commanded through the last node vs measured at the wrist "
                 "(cf. paper Fig. 12)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name
