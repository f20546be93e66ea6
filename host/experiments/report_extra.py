"""Files of the ``track`` and ``identify`` experiments: the claim, the ``ours`` line, the plots.

Used by :func:`linkdyn.host.experiments.report.write_experiment` (CSV and summary.json are
written there, as for every experiment).
"""

from __future__ import annotations

import numpy as np

from linkdyn.model import save_robot

__all__ = ["CLAIMS", "DEFAULT_SECONDS", "describe_track", "describe_identify"]

CLAIMS = {
    "track": ("Sect. 4.4, Figs. 14, 15, 17: the arm tracks a Lissajous figure-eight (inverse "
              "kinematics solved centrally) with low feedback gains and reacts compliantly to "
              "disturbances at the end effector and at any other link; the end-effector "
              "compliance in that configuration is about 10 N / 0.25 m (40 N/m); with the "
              "feedback outputs limited the arm gives in to a disturbance above the saturation "
              "and 'is still able to recover immediately from large disturbances and keeps "
              "tracking the trajectory accurately' (acceptance: measured stiffness within 15 % "
              "of J^-T M K_p J^-1 at the pose)."),
    "identify": ("Sect. 4.1, Figs. 9, 10: a Fourier excitation (5 harmonics, 10 s period, one "
                 "period of fade-in and fade-out, link origins 5 and 6 at least 0.25 m high) "
                 "optimised on the prior model, run with high-gain position control; the "
                 "parameters (36 base inertial parameters of the 6-DOF arm, plus friction, "
                 "eq. 20) estimated by least squares (eq. 25); on the figure-eight the "
                 "model-computed torques are 'predominantly in good agreement' with the measured "
                 "ones (acceptance: the identified model's torque error at most half the "
                 "nominal model's on every joint)."),
}

#: Default length of each run, s (None: the experiment's own default).
DEFAULT_SECONDS = {"track": 10.0, "identify": None}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def describe_track(result, out):
    """Return the ``ours`` line and write the plots of a track result; return (text, plots)."""
    figures = result["figures"]
    disturbed = figures["track_disturbed"]
    s = disturbed["stiffness"]
    push = disturbed["disturbances"].get("push_tool")
    push_u = figures["track_disturbed_unsaturated"]["disturbances"].get("push_tool")
    text = (f"stiffness along the force {s['stiffness']:.1f} N/m measured "
            f"({np.linalg.norm(s['force']):.2f} N, {np.linalg.norm(s['deflection']) * 1e3:.1f} "
            f"mm), predicted J^-T M K_p J^-1 {s['predicted_stiffness']:.1f} N/m (ratio "
            f"{s['ratio']:.3f}); tracking RMS error undisturbed "
            f"{figures['track']['rms_error_eight'] * 1e3:.2f} mm")
    if push is not None:
        recovery = ("never" if push["recovery_time"] is None
                    else f"{push['recovery_time']:.2f} s")
        recovery_u = ("never" if push_u["recovery_time"] is None
                      else f"{push_u['recovery_time']:.2f} s")
        text += (f"; push {np.linalg.norm(push['force']):.1f} N for "
                 f"{push['until'] - push['start']:.1f} s: largest deviation "
                 f"{push['max_deviation'] * 1e3:.0f} mm limited feedback, "
                 f"{push_u['max_deviation'] * 1e3:.0f} mm unlimited (linear prediction "
                 f"{push['linear_deflection'] * 1e3:.0f} mm), back within 5 % after "
                 f"{recovery} and {recovery_u}")
    plots = [_plot_track_path(result, out / "track_path.png"),
             _plot_track_error(result, out / "track_error.png")]
    scene = _render_scene("track", result, out / "track_scene.png")
    return text, plots + ([scene] if scene else [])


def _render_scene(name, result, path):
    """Render the experiment's scene (:func:`.scenes.render_scene`); its name, or None."""
    from .scenes import render_scene
    return render_scene(name, result, path)


def _plane(result, points):
    centre = np.array(result["eight_centre"])
    axes = np.array(result["eight_axes"])
    return (points - centre) @ axes.T


def _plot_track_path(result, path):
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 5.5))
    base = result["runs"]["track"]
    hold = result["hold"]
    ref = _plane(result, base.x_ref[base.t >= hold]) * 1e3
    ax.plot(ref[:, 0], ref[:, 1], "k--", lw=2.0, label="reference")
    styles = {"track": dict(lw=1.2), "track_disturbed": dict(lw=1.0),
              "track_disturbed_unsaturated": dict(lw=1.0, ls=":")}
    for name, log in result["runs"].items():
        xy = _plane(result, log.x_ee[log.t >= hold]) * 1e3
        ax.plot(xy[:, 0], xy[:, 1], label=name, **styles[name])
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x in the tool plane, mm")
    ax.set_ylabel("y in the tool plane, mm")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Figure-eight: reference vs measured tool path (cf. paper Fig. 15)\n"
                 f"{result['size']:g} m wide, period {result['period']:g} s, K_p "
                 f"{result['gains']['kp']:g}, K_d {result['gains']['kd']:g}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _plot_track_error(result, path):
    plt = _pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for name, log in result["runs"].items():
        axes[0].plot(log.t, np.linalg.norm(log.error, axis=1) * 1e3, label=name,
                     lw=1.0 if name != "track_disturbed_unsaturated" else 1.4,
                     ls="-" if name != "track_disturbed_unsaturated" else ":")
    log = result["runs"]["track_disturbed"]
    # The CSV's convention (issue 15's columns): fx, fy, fz is the force the tool exerts, as
    # the wrist sensor measures it; a push d on the tool is held by the tool exerting -d.
    for k, axis in enumerate("xyz"):
        line, = axes[1].plot(log.t, log.f[:, k], lw=1.0, label=f"f{axis} (wrist)")
        if np.any(log.d[:, k]):
            axes[1].plot(log.t, -log.d[:, k], ":", color=line.get_color(), lw=1.2,
                         label=f"-d{axis} (applied, tool or forearm)")
    s = result["figures"]["track_disturbed"]["stiffness"]
    axes[0].axvspan(result["hold"] - 0.5, result["hold"], color="0.9", zorder=0)
    axes[0].set_ylabel("|x_ee - x_ref|, mm")
    axes[0].set_title(f"stiffness (grey window) measured {s['stiffness']:.1f} N/m, predicted "
                      f"{s['predicted_stiffness']:.1f} N/m; saturation "
                      f"{result['stiffness']['saturation_force']:.2f} N (joint "
                      f"{result['stiffness']['saturating_joint']})", fontsize=9)
    axes[1].set_ylabel("force the tool exerts, N\n(CSV fx, fy, fz)")
    axes[1].set_xlabel("t, s (hold at the start pose, then the eight)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    fig.suptitle("Tracking under disturbances: Cartesian error and force (cf. paper Fig. 17)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def describe_identify(result, out):
    """Return the ``ours`` line, write the plots and the identified robot file."""
    figures = result["figures"]
    lines = []
    for name in ("identify_validation", "identify_nominal", "identify_identified"):
        f = figures[name]
        lines.append(f"{name} (model in the nodes: {f['model_in_the_nodes']}, omega "
                     f"{f['gains']['omega']:g} rad/s): torque RMS "
                     "nominal " + "/".join(f"{v:.2f}" for v in f["torque_rms_nominal"])
                     + " N·m, identified " + "/".join(f"{v:.2f}" for v in
                                                       f["torque_rms_identified"])
                     + " N·m (ratio " + "/".join(f"{v:.2f}" for v in f["torque_ratio"])
                     + f"; at most half on every joint: {f['at_most_half_on_every_joint']}; "
                     "the plant's own parameters "
                     + "/".join(f"{v:.2f}" for v in f["torque_rms_plant_parameters"])
                     + " N·m), "
                     f"tracking RMS {f['rms_error_eight'] * 1e3:.1f} mm")
    text = "; ".join(lines)
    save_robot(result["objects"]["identified"], out / "identify_robot.json",
               source="linkdyn experiment identify: the perturbed MuJoCo plant, closed loop")
    plots = [_plot_identify_torques(result, out / "identify_torques.png"),
             _plot_identify_tracking(result, out / "identify_tracking.png")]
    scene = _render_scene("identify", result, out / "identify_scene.png")
    return text, plots + ([scene] if scene else [])


def _plot_identify_torques(result, path):
    plt = _pyplot()
    data = result["objects"]["torque"]["identify_validation"]["_data"]
    t, measured = data["t"], data["tau"]
    n = measured.shape[1]
    fig, axes = plt.subplots(n // 2, 2, figsize=(11, 7), sharex=True)
    for j in range(n):
        ax = axes[j % (n // 2)][j // (n // 2)]
        ax.plot(t, measured[:, j], "k", lw=1.4, label="plant (applied)")
        for label, style in (("nominal", ":"), ("identified", "--"), ("plant parameters", "-")):
            values = data["predicted"][label][:, j]
            rms = float(np.sqrt(np.mean((values - measured[:, j]) ** 2)))
            ax.plot(t, values, style, lw=1.0 if label != "plant parameters" else 0.7,
                    label=f"{label} (RMS {rms:.2f})")
        ax.set_ylabel(f"joint {j + 1}, N·m", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper right")
    for ax in axes[-1]:
        ax.set_xlabel("t, s")
    fig.suptitle("identify_validation: the figure-eight on the perturbed plant (identified model "
                 "in the nodes, high gains)\ntorques each model computes for the measured motion "
                 "vs the applied torque (cf. paper Fig. 10)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _plot_identify_tracking(result, path):
    plt = _pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(8, 6))
    log = result["runs"]["identify_excitation"]
    axes[0].plot(log.t, log.q, lw=0.9)
    axes[0].set_ylabel("q, rad")
    axes[0].set_xlabel("t, s")
    axes[0].set_title("identify_excitation: the optimised excitation on the plant (high gains; "
                      "cf. paper Fig. 9)", fontsize=9)
    for name, what in (("identify_nominal", "compliant, nominal model"),
                       ("identify_identified", "compliant, identified model"),
                       ("identify_validation", "high gains, identified model")):
        run = result["runs"][name]
        axes[1].plot(run.t, np.linalg.norm(run.error, axis=1) * 1e3, label=f"{name} ({what})")
    axes[1].set_ylabel("|x_ee - x_ref|, mm")
    axes[1].set_xlabel("t, s (rest, then the eight)")
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name
