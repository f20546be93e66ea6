"""Plots for identification: measured against predicted torques (source paper Fig. 10), the
excitation trajectory (Fig. 9) and the friction steepness search. PNG files, matplotlib's Agg
backend (no display needed)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["plot_torques", "plot_trajectory", "plot_steepness_search"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _grid(n):
    columns = 1 if n <= 3 else 2
    return int(math.ceil(n / columns)), columns


def plot_torques(path, t, measured, predictions, *, joint_names=None, title=None):
    """Plot measured and predicted torque per joint, one panel per joint (paper Fig. 10).

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG file.
    t : array_like, shape (N,)
        Times, s.
    measured : array_like, shape (N, n)
        Measured torques, N·m.
    predictions : dict of str to array_like, shape (N, n)
        Predicted torques by label (e.g. ``{"identified": ..., "nominal": ...}``).
    joint_names : sequence of str, optional
    title : str, optional

    Returns
    -------
    pathlib.Path
    """
    plt = _pyplot()
    t = np.asarray(t, dtype=float)
    measured = np.asarray(measured, dtype=float)
    n = measured.shape[1]
    rows, columns = _grid(n)
    figure, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 1.9 * rows + 0.8),
                                sharex=True, squeeze=False)
    styles = ["-", "--", ":", "-."]
    for j in range(rows * columns):
        axis = axes[j % rows][j // rows]
        if j >= n:
            axis.set_visible(False)
            continue
        axis.plot(t, measured[:, j], color="black", linewidth=1.2, label="measured")
        for k, (label, values) in enumerate(predictions.items()):
            values = np.asarray(values, dtype=float)
            rms = float(np.sqrt(np.mean((values[:, j] - measured[:, j]) ** 2)))
            axis.plot(t, values[:, j], styles[k % len(styles)], linewidth=1.0,
                      label=f"{label} (RMS {rms:.3g} N·m)")
        name = joint_names[j] if joint_names else f"joint {j + 1}"
        axis.set_ylabel(f"{name}\nN·m", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.legend(fontsize=6, loc="upper right")
        axis.grid(True, linewidth=0.3)
    for axis in axes[-1]:
        axis.set_xlabel("t [s]", fontsize=8)
    if columns > 1 and n % columns:
        axes[rows - 2][columns - 1].set_xlabel("t [s]", fontsize=8)
        axes[rows - 2][columns - 1].xaxis.set_tick_params(labelbottom=True)
    if title:
        figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_trajectory(path, t, q, qd, qdd, *, limits=None, interval=None, title=None):
    """Plot an excitation trajectory: q, qd, qdd of every joint over time (paper Fig. 9).

    Parameters
    ----------
    path : str or os.PathLike
        Output PNG file.
    t : array_like, shape (K,)
        Times, s.
    q, qd, qdd : array_like, shape (K, n)
        rad, rad/s, rad/s^2.
    limits : tuple of array_like, optional
        ``(q_min, q_max, qd_max, qdd_max)``, each shape (n,), drawn as dashed lines.
    interval : tuple of float, optional
        ``(start, end)`` of the excitation periods, shaded.
    title : str, optional

    Returns
    -------
    pathlib.Path
    """
    plt = _pyplot()
    t = np.asarray(t, dtype=float)
    figure, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    labels = ("q [rad]", "qd [rad/s]", "qdd [rad/s²]")
    n = np.asarray(q).shape[1]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for axis, values, label in zip(axes, (q, qd, qdd), labels):
        values = np.asarray(values, dtype=float)
        for j in range(n):
            axis.plot(t, values[:, j], linewidth=0.9, color=colours[j % len(colours)],
                      label=f"joint {j + 1}")
        axis.set_ylabel(label, fontsize=8)
        axis.grid(True, linewidth=0.3)
        if interval is not None:
            axis.axvspan(interval[0], interval[1], color="0.93", zorder=0)
    if limits is not None:
        q_min, q_max, qd_max, qdd_max = (np.asarray(v, dtype=float) for v in limits)
        for j in range(n):
            colour = colours[j % len(colours)]
            for axis, bounds in ((axes[0], (q_min[j], q_max[j])),
                                 (axes[1], (-qd_max[j], qd_max[j])),
                                 (axes[2], (-qdd_max[j], qdd_max[j]))):
                for bound in bounds:
                    if math.isfinite(bound) and abs(bound) < 50:
                        axis.axhline(bound, color=colour, linewidth=0.5, linestyle="--")
    axes[0].legend(fontsize=6, ncol=min(n, 7), loc="upper right")
    axes[-1].set_xlabel("t [s]", fontsize=8)
    if title:
        figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_steepness_search(path, search):
    """Plot the residual of :func:`~linkdyn.host.identification.estimation.select_steepness`
    against the friction steepness ``k`` (log scale). Returns the path."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5, 3))
    axis.semilogx(search.grid, search.cost, "o-", markersize=3)
    axis.axvline(search.steepness, color="red", linewidth=0.8,
                 label=f"k = {search.steepness:.3g} s/rad")
    axis.set_xlabel("steepness k [s/rad]", fontsize=8)
    axis.set_ylabel("mean squared weighted residual", fontsize=8)
    axis.legend(fontsize=7)
    axis.grid(True, linewidth=0.3)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
