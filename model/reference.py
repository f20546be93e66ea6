"""Reference robots: the URDF files of the ``example-robot-data`` package, found at run time.

The package (optional dependency, extra ``reference``) installs its robots under
``<site-packages>/cmeel.prefix/share/example-robot-data/robots/``; the folder is located from the
installed distribution, never written into the code.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

__all__ = ["example_robot_data_dir", "example_robot_urdf", "REFERENCE_URDFS", "load_reference_robot"]

#: URDF files of real arms, relative to the ``robots`` folder, with the tip link used here.
REFERENCE_URDFS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", None),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", None),
    "panda": ("panda_description/urdf/panda.urdf", "panda_hand"),
    "z1": ("z1_description/urdf/z1.urdf", None),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", None),
    "kinova": ("kinova_description/robots/kinova.urdf", None),
}


def example_robot_data_dir():
    """Return the ``robots`` folder of the installed example-robot-data package.

    Returns
    -------
    pathlib.Path
        ``<site-packages>/cmeel.prefix/share/example-robot-data/robots``, located at run time.

    Raises
    ------
    FileNotFoundError
        If example-robot-data is not installed (``pip install 'linkdyn[reference]'``).
    """
    try:
        distribution = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError("example-robot-data is not installed; "
                                "pip install 'linkdyn[reference]'") from None
    path = Path(distribution.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    if not path.is_dir():
        raise FileNotFoundError(f"example-robot-data {distribution.version} has no robots folder")
    return path


def example_robot_urdf(name):
    """Return the path of an example-robot-data URDF.

    Parameters
    ----------
    name : str
        A key of :data:`REFERENCE_URDFS` or a path relative to the ``robots`` folder.

    Raises
    ------
    FileNotFoundError
        If the package is not installed or has no such file.
    """
    relative = REFERENCE_URDFS[name][0] if name in REFERENCE_URDFS else name
    path = example_robot_data_dir() / relative
    if not path.is_file():
        raise FileNotFoundError(f"example-robot-data has no robots/{relative}")
    return path


def load_reference_robot(name, **kwargs):
    """Load a reference arm of :data:`REFERENCE_URDFS` with its tip link (e.g. Panda up to
    ``panda_hand``, fingers merged); keyword arguments go to :func:`linkdyn.model.urdf.load_urdf`.
    """
    from .urdf import load_urdf

    relative, tip = REFERENCE_URDFS[name]
    return load_urdf(example_robot_urdf(name), tip=tip, **kwargs)
