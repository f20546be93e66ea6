"""Reference robots: the URDF files of the ``example-robot-data`` package, found at run time.

The package (an optional dependency, extra ``reference``) installs its robots under
``<site-packages>/cmeel.prefix/share/example-robot-data/robots/``; the path is read from the
package's installed file list, never written into the code.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

__all__ = ["example_robot_urdf", "REFERENCE_URDFS"]

#: URDF files of some arms, relative to the package's ``robots`` folder.
REFERENCE_URDFS = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
}


def example_robot_urdf(name):
    """Return the path of an ``example-robot-data`` URDF file.

    Parameters
    ----------
    name : str
        A key of :data:`REFERENCE_URDFS` or a path relative to the ``robots`` folder.

    Raises
    ------
    FileNotFoundError
        If the package is not installed or has no such file (the message says which).
    """
    relative = REFERENCE_URDFS.get(name, name)
    try:
        distribution = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError("the package example-robot-data is not installed (pip install "
                                "'linkdyn[reference]')") from None
    suffix = "robots/" + relative
    for entry in distribution.files or ():
        if str(entry).replace("\\", "/").endswith(suffix):
            path = Path(distribution.locate_file(entry))
            if path.is_file():
                return path
    raise FileNotFoundError(f"example-robot-data {distribution.version} has no robots/{relative}")
