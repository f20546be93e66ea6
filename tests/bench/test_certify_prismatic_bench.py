"""linkdyn.bench.certify_prismatic: the figures it writes are linkdyn.model.certify's certificates,
above the golden model's sampled errors, and the saturation it names is one the golden model
flags."""

import re

import numpy as np
import pytest

from linkdyn.bench.certify_prismatic import RANDOM_BOX, SEEDS, main, mixed_chain
from linkdyn.model import load_robot
from linkdyn.model.certify import certify


def test_the_report_holds_the_certified_bounds_and_the_named_saturation(tmp_path):
    try:
        tiago = load_robot("tiago", tip="arm_7_link")
    except FileNotFoundError as error:
        pytest.skip(str(error))
    out = tmp_path / "prismatic.md"
    assert main(["--states", "200", "--rounds", "1", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    row = "| certified bound | " + " | ".join(f"{v:.2e}" for v in certify(tiago).bound_nm) + " |"
    assert row in text
    for seed in SEEDS:
        robot = mixed_chain(seed)
        largest = max(certify(robot, **RANDOM_BOX).bound_nm)
        assert re.search(rf"\| {re.escape(robot.name)} \| [0-9, ]+ \| yes \| {largest:.2e} \|",
                         text)
    assert "node 1 `r_q_z`" in text and "overflow flag of node 1 is set" in text
    for name in ("tiago", "baxter"):
        png = tmp_path / f"prismatic-{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Every ratio of bound to sampled maximum in the report is above 1 (soundness).
    ratios = [float(v) for line in text.splitlines() if line.startswith("| bound / sampled")
              for v in line.split("|")[2:-1]]
    assert ratios and np.min(ratios) > 1
