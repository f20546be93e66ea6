"""The tree benchmark: its trees equal the golden tree, its branch-point records are complete,
the chain it compares with has the tree's depth."""

from linkdyn.bench.tree_gateware import TREES, _star, depth, measure


def test_depth_counts_the_nodes_of_the_longest_path():
    assert depth((-1,)) == 1
    assert depth((-1, 0, 1, 2)) == 4
    assert depth((-1, 0, 0, -1, 3, 4, 1)) == 3
    assert set(TREES) >= {"two-arm tree (UR5 arms)"}


def test_a_star_is_measured_against_the_golden_tree_with_every_branch_start():
    result = measure("star", _star(3))
    assert result["matches_golden"]
    assert (result["nodes"], result["depth"], result["roots"]) == (4, 2, 1)
    (branch,) = result["branches"]
    assert branch["node"] == 0 and branch["children"] == (1, 2, 3)
    # every child starts its forward request after the hub's and the hub's backward after
    # its children's (the order of eq. 17), whatever the cycle figures are
    assert min(branch["forward"]) > branch["own_forward"]
    assert branch["backward"] > branch["last_child_backward"]
    assert len(result["tau_cycles"]) == 4
