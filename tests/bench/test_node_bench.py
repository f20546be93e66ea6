"""The node benchmark: simulated cycles equal the schedule; the docs section is replaced alone."""

from linkdyn.bench.node import report, segment_cycles
from linkdyn.bench.report import replace_section
from linkdyn.model.golden import microprogram


def test_simulated_cycles_per_segment_equal_the_microprogram():
    measured = segment_cycles()
    program = microprogram()
    assert measured["matches_golden"]
    assert measured["segments"] == {name: segment.cycles
                                    for name, segment in program.segments.items()}
    assert measured["forward"] == sum(program.segments[name].cycles
                                      for name in ("joint", "forward", "local"))
    assert measured["backward"] == program.segments["distal"].cycles


def test_replace_section_replaces_only_the_node_gateware_section(tmp_path):
    path = tmp_path / "performance.md"
    path.write_text("# Performance\n\n## Float model\n\nfloat figures\n\n"
                    "## Node gateware\n\nold figures\n\n## Chain\n\nchain figures\n")
    measured = {"segments": {"joint": 29}, "forward": 160, "backward": 34,
                "forward_done_after": 84, "matches_golden": True}
    replace_section(path, report(measured, {}))
    text = path.read_text()
    assert "float figures" in text and "chain figures" in text
    assert "old figures" not in text
    assert text.count("## Node gateware") == 1
    assert text.index("## Float model") < text.index("## Node gateware") < text.index("## Chain")
    # A file without the section gets it appended.
    other = tmp_path / "other.md"
    other.write_text("# Performance\n\n## Float model\n\nfloat figures\n")
    replace_section(other, report(measured, {}))
    assert other.read_text().index("## Float model") < other.read_text().index("## Node gateware")


def test_report_names_each_familys_cordic_step_timing():
    measured = {"segments": {"joint": 29}, "forward": 160, "backward": 34,
                "forward_done_after": 84, "matches_golden": True}
    text = " ".join(report(measured, {}).split())
    assert "xc6s 1 cycle per step (latency 25)" in text
    assert "ecp5 2 cycles per step (latency 49)" in text
