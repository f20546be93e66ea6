"""linkdyn sim-board --boards: its argument checks (the runs are in
test_sim_board_distributed.py)."""

from linkdyn.host.cli import main
from support.host import sim_board_arguments


def test_sim_board_boards_refuses_other_chains_and_link_options_alone(capsys):
    assert main(["sim-board", "--boards", "2", "--chain", "fake"]) == 2
    assert "--boards builds its own chain" in capsys.readouterr().err
    assert main(["sim-board", "--nodes", "2", "--link-ber", "1e-4"]) == 2
    assert "--link-bitrate, --link-ber and --link-cuts need --boards" in capsys.readouterr().err
    assert main(["sim-board", "--nodes", "2", "--link-cuts", "0:10:20"]) == 2
    assert "--link-cuts need --boards" in capsys.readouterr().err
    assert main(["sim-board", "--nodes", "3", "--boards", "2"]) == 2
    err = capsys.readouterr().err
    assert "3 nodes need boards=3, not 2" in err and "building" not in err


def test_sim_board_link_cuts_are_parsed_and_checked(capsys, monkeypatch):
    for cuts, message in (("0:10", "each cut is HOP:CUT:RESTORE (three integers"),
                          ("0:10:x", "not '0:10:x'"),
                          ("1:10:20", "0 <= hop < 1"),
                          ("0:10:20,0:15:30", "of hop 0 overlap")):
        assert main(["sim-board", "--boards", "2", "--link-cuts", cuts]) == 2
        err = capsys.readouterr().err
        assert message in err and "building" not in err, err
    made = sim_board_arguments(monkeypatch,
                               ["--boards", "3", "--link-cuts", "0:300000:500000, 1:5:9"])
    assert made["boards"] == 3 and made["link_cuts"] == [(0, 300_000, 500_000), (1, 5, 9)]
