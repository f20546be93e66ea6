"""PNG figures of trajectories and of the mapping comparison (matplotlib, Agg back end).

Every function writes one PNG and returns its path; none shows a window.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plot_cartesian", "plot_joints", "plot_condition_sweep", "plot_singular_sweep",
           "plot_relative_singular_values", "plot_phase_plane", "plot_duration_vs_jerk"]


def _save(fig, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_cartesian(path, t, reference, reached, *, error=None, title="Cartesian path"):
    """Plot a tool path in 3-D (reference solid, reached dashed) and the position error.

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG.
    t : array_like, shape (N,)
        Times, s.
    reference, reached : array_like, shape (N, 3)
        Tool positions, m (``reference`` may be ``None``).
    error : array_like, shape (N,), optional
        Position error, m (default ``|reference - reached|`` when both are given).
    title : str
        Figure title.
    """
    reached = np.asarray(reached)
    fig = plt.figure(figsize=(11, 4.5))
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    if reference is not None:
        reference = np.asarray(reference)
        ax.plot(*reference.T, "-", lw=2.0, color="tab:blue", label="reference")
        if error is None:
            error = np.linalg.norm(reference - reached, axis=1)
    ax.plot(*reached.T, "--", lw=1.2, color="tab:orange", label="reached")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]", labelpad=8)
    # Equal scale on all axes, so that the shape is not distorted.
    everything = reached if reference is None else np.concatenate([reference, reached])
    low, high = everything.min(axis=0), everything.max(axis=0)
    middle, half = (low + high) / 2, max(float(np.max(high - low)) / 2, 1e-6)
    ax.set_xlim(middle[0] - half, middle[0] + half)
    ax.set_ylim(middle[1] - half, middle[1] + half)
    ax.set_zlim(middle[2] - half, middle[2] + half)
    ax.set_box_aspect((1, 1, 1))
    ax.legend(loc="upper left")
    ax.set_title(title)
    ax2 = fig.add_subplot(1, 2, 2)
    if error is not None:
        ax2.semilogy(t, np.maximum(np.asarray(error), 1e-12), color="tab:red")
        ax2.set_ylabel("position error [m]")
        ax2.set_title("tool position error")
    else:
        ax2.plot(t, reached)
        ax2.set_ylabel("position [m]")
    ax2.set_xlabel("t [s]")
    ax2.grid(True, which="both", alpha=0.3)
    fig.subplots_adjust(wspace=0.35)
    return _save(fig, path)


def plot_joints(path, t, q, qd, qdd, *, limits=None, torque=None, jerk=None, q_range=None,
                title="joint trajectory"):
    """Plot joint positions and, normalised by their limits, velocities, accelerations, jerks and
    torques (``+-1`` dashed: the limit), as in seed 002 Figs. 2.6-2.8.

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG.
    t : array_like, shape (N,)
        Times, s.
    q, qd, qdd : array_like, shape (N, n)
        rad, rad/s, rad/s^2.
    limits : object with ``velocity``, ``acceleration``, ``torque``, ``jerk`` arrays, optional
        Limits (e.g. :class:`~linkdyn.host.trajectory.timing.Limits`); a quantity whose limits
        are all infinite is plotted raw.
    torque : array_like, shape (N, n), optional
        Joint torques, N·m.
    jerk : array_like, shape (M, n), optional
        Joint jerks on ``t[:M]`` (or midpoints), rad/s^3.
    q_range : array_like, shape (2, n), optional
        Joint range, drawn if finite.
    title : str
        Figure title.
    """
    t = np.asarray(t)
    q = np.asarray(q)
    panels = [("q [rad]", q, None)]
    for label, values, attr in (("qd", qd, "velocity"), ("qdd", qdd, "acceleration"),
                                ("qddd", jerk, "jerk"), ("tau", torque, "torque")):
        if values is None:
            continue
        panels.append((label, np.asarray(values), attr))
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.3 * len(panels)), sharex=True)
    axes = np.atleast_1d(axes)
    n = q.shape[1]
    colours = plt.cm.tab10(np.arange(n) % 10)
    units = {"qd": "rad/s", "qdd": "rad/s²", "qddd": "rad/s³", "tau": "N·m"}
    for ax, (label, values, attr) in zip(axes, panels):
        times = t[:len(values)]
        limit = None if (limits is None or attr is None) else np.asarray(getattr(limits, attr))
        normalise = limit is not None and np.all(np.isfinite(limit))
        for j in range(n):
            y = values[:, j] / limit[j] if normalise else values[:, j]
            ax.plot(times, y, color=colours[j], lw=1.0, label=f"joint {j + 1}")
        if normalise:
            ax.axhline(1.0, color="k", ls="--", lw=0.8)
            ax.axhline(-1.0, color="k", ls="--", lw=0.8)
            ax.set_ylabel(f"{label} / limit")
        elif attr is None and q_range is not None:
            ax.set_ylabel(label)
            rng = np.asarray(q_range)
            span = np.max(q) - np.min(q)
            for j in range(n):
                for bound in rng[:, j]:
                    if np.isfinite(bound) and np.min(q) - span <= bound <= np.max(q) + span:
                        ax.axhline(bound, color=colours[j], ls="--", lw=0.6)
        else:
            ax.set_ylabel(f"{label} [{units.get(label, '')}]" if label in units else label)
            if limit is not None:
                for j in range(n):
                    if np.isfinite(limit[j]):
                        ax.axhline(limit[j], color=colours[j], ls="--", lw=0.6)
                        ax.axhline(-limit[j], color=colours[j], ls="--", lw=0.6)
        ax.grid(True, alpha=0.3)
    axes[0].legend(ncol=min(n, 7), fontsize=7, loc="upper right")
    axes[0].set_title(title)
    axes[-1].set_xlabel("t [s]")
    return _save(fig, path)


def plot_condition_sweep(path, sweep):
    """Seed 001 Fig. 7: median ``kappa(J M)`` against ``gamma`` (FD) and ``alpha`` (DLS).

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG.
    sweep : ConditionSweep
        From :func:`linkdyn.host.trajectory.conditioning.condition_sweep`.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    ax1.loglog(sweep.gammas, sweep.fd, "o-", color="tab:green", label="FD (median)")
    ax1.fill_between(sweep.gammas, sweep.fd_quartiles[:, 0], sweep.fd_quartiles[:, 1],
                     color="tab:green", alpha=0.2, label="quartiles")
    ax2.loglog(sweep.alphas, sweep.dls, "s-", color="tab:purple", label="DLS (median)")
    ax2.fill_between(sweep.alphas, sweep.dls_quartiles[:, 0], sweep.dls_quartiles[:, 1],
                     color="tab:purple", alpha=0.2, label="quartiles")
    for ax in (ax1, ax2):
        ax.axhline(sweep.jt, color="tab:red", ls="--", label="J^T (median)")
        ax.axhline(1.0, color="k", ls=":", label="J^-1 (= 1)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax1.set_xlabel("gamma")
    ax2.set_xlabel("alpha")
    ax2.invert_xaxis()
    ax1.set_ylabel("median kappa = sigma_max / sigma_min of J M")
    fig.suptitle(f"Ill conditioning over {sweep.samples} random configurations (seed 001, Fig. 7)")
    return _save(fig, path)


def plot_singular_sweep(path, sweep, keys=None, *, title=None):
    """Seed 001 Figs. 8-10: ``sigma_min`` and ``sigma_max`` of mappings along a joint motion.

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG.
    sweep : SingularSweep
        From :func:`linkdyn.host.trajectory.conditioning.singular_sweep`.
    keys : sequence of str, optional
        Which mappings to draw (default all).
    title : str, optional
        Figure title.
    """
    keys = list(sweep.sigma_min) if keys is None else list(keys)
    steps = np.arange(len(sweep.q))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    styles = {"J^-1": ("k", "-"), "J^T": ("tab:red", "-")}
    palette = iter(plt.cm.viridis(np.linspace(0.1, 0.9, max(len(keys), 1))))
    for key in keys:
        colour, style = styles.get(key, (next(palette), "-"))
        ax1.plot(steps, sweep.sigma_min[key], color=colour, ls=style, lw=1.2, label=key)
        ax2.semilogy(steps, sweep.sigma_max[key], color=colour, ls=style, lw=1.2, label=key)
    for ax in (ax1, ax2):
        for s in sweep.singular_steps:
            ax.axvline(s, color="grey", ls="--", lw=0.8)
        ax.grid(True, alpha=0.3)
    ax1.set_ylabel("sigma_min of M")
    ax2.set_ylabel("sigma_max of M")
    ax2.set_xlabel("step")
    ax1.legend(fontsize=8, ncol=3)
    ax1.set_title(title or "Passing singular configurations (dashed) (seed 001, Figs. 8-10)")
    return _save(fig, path)


def plot_relative_singular_values(path, relative, *, sigma_min=None):
    """Seed 001 Figs. 11-12: relative manipulability and instability at singular configurations.

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG.
    relative : RelativeSingularValues
        From :func:`linkdyn.host.trajectory.conditioning.relative_singular_values`.
    sigma_min : float, optional
        ``sigma_min(J)`` of the configurations, for the title.
    """
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharey="row")
    axes[0, 0].semilogx(relative.gammas, relative.fd_manipulability, "o-", color="tab:green")
    axes[0, 1].semilogx(relative.alphas, relative.dls_manipulability, "s-", color="tab:purple")
    axes[1, 0].semilogx(relative.gammas, relative.fd_instability, "o-", color="tab:green")
    axes[1, 1].semilogx(relative.alphas, relative.dls_instability, "s-", color="tab:purple")
    axes[0, 1].invert_xaxis()
    axes[1, 1].invert_xaxis()
    axes[0, 0].set_ylabel("mean sigma_min(M) / sigma_min(J^-1)")
    axes[1, 0].set_ylabel("mean sigma_max(M) / sigma_max(J^T)")
    axes[1, 0].set_xlabel("gamma (FD)")
    axes[1, 1].set_xlabel("alpha (DLS)")
    for ax in axes.ravel():
        ax.grid(True, which="both", alpha=0.3)
    where = "" if sigma_min is None else f", sigma_min(J) = {sigma_min:g}"
    fig.suptitle(f"{relative.samples} singular configurations{where} (seed 001, Figs. 11-12)")
    return _save(fig, path)


def plot_phase_plane(path, curves, *, limit_curve=None, title="path speed"):
    """Plot path speed against the path coordinate for several time laws.

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG.
    curves : dict of str to (array_like, array_like)
        ``label -> (s, sd)``.
    limit_curve : (array_like, array_like), optional
        ``(s, sd_max)`` from the velocity limits.
    title : str
        Figure title.
    """
    fig, ax = plt.subplots(figsize=(9, 3.8))
    if limit_curve is not None:
        ax.plot(limit_curve[0], limit_curve[1], "k:", lw=1.0, label="velocity limit")
    for label, (s, sd) in curves.items():
        ax.plot(s, sd, lw=1.2, label=label)
    top = max(np.max(sd) for _, sd in curves.values())
    ax.set_ylim(0, 1.3 * top)
    ax.set_xlabel("s [rad of joint-space arc length]")
    ax.set_ylabel("sd [1/s]")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return _save(fig, path)


def plot_duration_vs_jerk(path, jerks, durations, time_optimal):
    """Plot the jerk-limited duration against the jerk limit, with the time-optimal duration.

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG.
    jerks, durations : array_like
        Jerk limits (rad/s^3) and durations (s).
    time_optimal : float
        Duration without a jerk limit (toppra), s.
    """
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.semilogx(jerks, durations, "o-", label="jerk-limited (online, seed 002 ch. 2)")
    ax.axhline(time_optimal, color="k", ls="--", label="time-optimal, no jerk limit (toppra)")
    ax.set_xlabel("jerk limit [rad/s³]")
    ax.set_ylabel("duration [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
