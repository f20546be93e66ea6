"""Writing a benchmark's figures into a Markdown document (``docs/performance.md``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["replace_section"]


def replace_section(path, section, *, title="# Performance"):
    """Replace a section of a Markdown file by ``section``, or append it.

    The section is named by its first line, its heading (e.g. ``"## Chain"``); in the file it
    runs from that heading, alone on a line, to the next line starting with ``"## "`` or the
    end. Everything else in the file is kept.

    Parameters
    ----------
    path : str or Path
        The Markdown file; created with the line ``title`` if it does not exist.
    section : str
        The new section, heading first.
    title : str
        First line of a new file.

    Raises
    ------
    ValueError
        If the first line of ``section`` is not a ``"## "`` heading.
    """
    heading = section.split("\n", 1)[0]
    if not heading.startswith("## "):
        raise ValueError(f"A section must start with a '## ' heading, not {heading!r}")
    path = Path(path)
    text = path.read_text() if path.exists() else title + "\n"
    lines = text.split("\n")
    if heading not in lines:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        start = lines.index(heading)
        end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("## ")),
                   len(lines))
        rest = "\n".join(lines[end:])
        text = ("\n".join(lines[:start] + [section.rstrip("\n")])
                + ("\n\n" + rest if rest else ""))
    path.write_text(text.rstrip("\n") + "\n")
