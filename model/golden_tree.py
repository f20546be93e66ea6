"""Fixed-point golden model of a kinematic tree of LinkDyn nodes (source paper eq. 17).

A tree runs the node microprogram of a chain (:mod:`linkdyn.model.microprogram`) unchanged, on
the same node words; only the wiring between the nodes differs (docs/trees.md, *The fixed-point
tree*):

- **Nodes.** Every link of the robot is one node. A link with a :attr:`~linkdyn.model.Link.mount`
  gets one more node in front of it, its *mount node*: a massless link with the mount's DH
  constants ``(a, d, alpha, theta)`` whose joint never moves (``q = qd = qdd = 0``, no friction,
  no external wrench), so its forward step is the mount's transform and its backward step the
  transform's transpose (``mu + r x f``, then ``R``): the float model's constant DH step
  (:func:`linkdyn.model.rnea`). :func:`node_tree` numbers the nodes: the links in robot order,
  a mount node just before its link; so every parent comes before its children and a chain in
  plain DH is node for node the robot's chain.
- **Forward (broadcast).** Node ``j`` receives the forward message (``omega, omega_dot,
  p_ddot``, 9 words) of its parent node as a chain node receives its proximal neighbour's; a
  branch point sends the same words to every child. Every root receives the base motion.
- **Backward (merge).** A node's ``backward_in`` words are the *exact* sum of its children's
  backward messages (each already rotated into the node's frame), word by word, over its
  children in node order, saturated once to the word range (:func:`merge_backward`); a
  saturated word raises the receiving node's overflow flag. The sum of integers is exact, so the
  order only matters for saturation, which comes once at the end: the result is the one the
  float model's left-to-right sum would round to. A node with one child receives that child's
  words unchanged (the chain), a leaf zeros. The node's ``distal`` segment then adds its own
  wrench and the external one to ``backward_in`` in one rounded Dot, as on a chain.

:class:`GoldenTree` executes it for one state at a time with the compiled segments of
:mod:`linkdyn.model.compiled`; on a chain it gives :class:`~linkdyn.model.golden.GoldenChain`'s
words (tests/model/test_golden_tree.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fixedpoint import saturate
from .golden import encode_base_motion, encode_links, executor_tables
from .microprogram import microprogram, node_formats
from .robot import Link, Robot

__all__ = ["NodeTree", "node_tree", "encode_tree", "merge_backward", "TreeResult",
           "GoldenTree"]


@dataclass(frozen=True)
class NodeTree:
    """The nodes that compute a robot: its links and the mount nodes in front of mounted links.

    Attributes
    ----------
    parents : tuple of int
        ``parents[j]``: the parent node of node ``j``, ``-1`` for a root (on the base). Every
        parent comes before its children.
    link_node : tuple of int
        ``link_node[i]``: the node that runs link ``i`` (its ``tau`` is link ``i``'s).
    mount_node : tuple of int
        ``mount_node[i]``: the mount node of link ``i``, ``-1`` for a link without a mount.
    links : tuple of Link
        The link every node runs (a mount node's massless :class:`Link`, named
        ``"<link>.mount"``).
    """

    parents: tuple
    link_node: tuple
    mount_node: tuple
    links: tuple

    @property
    def n(self):
        """int: number of nodes."""
        return len(self.parents)

    @property
    def children(self):
        """tuple of tuple of int: the children of every node, in node order (the merge order)."""
        children = [[] for _ in self.parents]
        for node, parent in enumerate(self.parents):
            if parent >= 0:
                children[parent].append(node)
        return tuple(tuple(c) for c in children)

    @property
    def roots(self):
        """tuple of int: the nodes on the base, in node order."""
        return tuple(j for j, parent in enumerate(self.parents) if parent < 0)

    @property
    def is_chain(self):
        """bool: whether the nodes form a serial chain ``(-1, 0, 1, ..., n - 2)``."""
        return self.parents == tuple(range(-1, self.n - 1))


def _mount_link(link):
    a, d, alpha, theta = (float(x) for x in link.mount)
    return Link(f"{link.name}.mount", a=a, d=d, alpha=alpha, offset=theta)


def node_tree(robot):
    """Return the nodes of a robot's tree of revolute and prismatic joints (:class:`NodeTree`).

    Parameters
    ----------
    robot : Robot
        A tree (or chain) of revolute and prismatic joints; links may have mounts. A node
        runs either joint type (the ``revolute`` / ``prismatic`` constant words); a mount node
        is a revolute node that never moves.

    Returns
    -------
    NodeTree

    Raises
    ------
    TypeError
        If ``robot`` is not a Robot.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    parents, links, link_node, mount_node = [], [], [], []
    for i, link in enumerate(robot.links):
        parent = robot.parents[i]
        above = -1 if parent < 0 else link_node[parent]
        if link.has_mount:
            mount_node.append(len(links))
            parents.append(above)
            links.append(_mount_link(link))
            above = len(links) - 1
        else:
            mount_node.append(-1)
        link_node.append(len(links))
        parents.append(above)
        links.append(link)
    return NodeTree(tuple(parents), tuple(link_node), tuple(mount_node), tuple(links))


def encode_tree(robot, fmt=None):
    """Return the constant words of every node of a robot's tree (:func:`node_tree` order).

    Parameters
    ----------
    robot : Robot
        A tree of revolute and prismatic joints.
    fmt : QFormat
        Word format (default Q15.16).

    Returns
    -------
    list of dict
        Per node, ``{register name: word}`` of every constant register; on a chain without
        mounts exactly :func:`~linkdyn.model.golden.encode_robot`'s.

    Raises
    ------
    FixedPointRangeError
        If a constant does not fit its format (the message names the node and the link).
    """
    tree = node_tree(robot)
    return encode_links(tree.links, fmt, [f"node {j + 1}" for j in range(tree.n)])


def merge_backward(messages):
    """Sum children's backward messages word by word, exactly, saturated once (eq. 17).

    Parameters
    ----------
    messages : sequence of sequence of int
        The children's backward messages (``f_out, mu_out`` words, 6 each), children in node
        order; empty for a leaf.

    Returns
    -------
    (list of int, bool)
        The merged words (zeros for a leaf) and whether any word saturated.
    """
    if not messages:
        return [0] * 6, False
    if len(messages) == 1:
        return [int(w) for w in messages[0]], False
    sums = [sum(int(message[k]) for message in messages) for k in range(len(messages[0]))]
    words, flags = saturate(np.array(sums, dtype=np.int64))
    return [int(w) for w in words], bool(np.any(flags))


@dataclass(frozen=True)
class TreeResult:
    """Result of :meth:`GoldenTree.step`.

    Attributes
    ----------
    tau : numpy.ndarray, shape (n,)
        Joint torques per link (robot order), N·m (decoded words).
    tau_words : numpy.ndarray of int64, shape (n,)
        The raw ``tau`` words per link.
    overflow : numpy.ndarray of bool, shape (n,)
        Per link: some result of its node or of its mount node saturated (a saturated merge of
        its children's wrenches included).
    base_wrench : numpy.ndarray, shape (6,)
        ``(f, mu)`` on the base in frame 0 (N, N·m): the sum of the roots' decoded wrenches.
    node_tau_words : numpy.ndarray of int64, shape (nodes,)
        Every node's ``tau`` word (mount nodes included), node order.
    node_overflow : numpy.ndarray of bool, shape (nodes,)
        Every node's overflow flag (its results and its merge).
    registers : list of dict or None
        Per node, every register's word (0-d int64 arrays) when ``keep_registers`` was set.
    """

    tau: np.ndarray
    tau_words: np.ndarray
    overflow: np.ndarray
    base_wrench: np.ndarray
    node_tau_words: np.ndarray
    node_overflow: np.ndarray
    registers: list | None = None


class GoldenTree:
    """The golden model of a robot's tree of LinkDyn nodes, for one state at a time.

    The node microprogram of a chain on every node (compiled, :mod:`linkdyn.model.compiled`),
    the forward message broadcast to every child, the children's backward messages merged by
    :func:`merge_backward` (module docstring; docs/trees.md). On a chain without mounts equal to
    :class:`~linkdyn.model.golden.GoldenChain` word for word.

    Parameters
    ----------
    robot : Robot
        A tree (or chain) of revolute and prismatic joints, mounts and friction included.
    fmt : QFormat
        Word format (default Q15.16).
    base_motion : tuple, optional
        Base motion of every update (every root's ``forward_in``), see
        :func:`~linkdyn.model.golden.encode_base_motion` (default a fixed base).

    Attributes
    ----------
    robot : Robot
    fmt : QFormat
    tree : NodeTree
        The nodes (:func:`node_tree`).
    constants : list of dict
        ``encode_tree(robot, fmt)``.
    base_words : dict
        The base motion's 9 ``forward_in`` words, loaded into every root.

    Raises
    ------
    TypeError
        If ``robot`` is not a Robot or ``fmt`` not a QFormat.
    FixedPointRangeError
        If a constant or the base motion does not fit its format.
    """

    def __init__(self, robot, fmt=None, base_motion=None):
        tables = executor_tables(fmt)
        self.tree = node_tree(robot)
        self.robot = robot
        self.fmt = node_formats(fmt)
        self.registers = microprogram(fmt).registers
        self.constants = encode_tree(robot, fmt)
        self.base_words = encode_base_motion(robot, fmt, base_motion)
        self._segments = tables.segments
        self._wrench_inputs = tables.wrench_inputs
        self._forward = tables.forward
        self._backward = tables.backward
        self._children = self.tree.children

    def node_inputs(self, q, qd, qdd, f_ext=None):
        """Return every node's input words ``{q, qd, qdd, f_ext_x, ..., mu_ext_z: word}``.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (n,)
            Per link: rad, rad/s, rad/s^2.
        f_ext : array_like, shape (n, 6), optional
            External wrench per link, as for :func:`linkdyn.model.rnea`.

        Returns
        -------
        list of dict
            Per node (node order); a mount node's inputs are all zero.

        Raises
        ------
        ValueError
            If an input has the wrong shape.
        FixedPointRangeError
            If an input does not fit the format (the message names the link's node and the
            quantity).
        """
        n = self.robot.n
        arrays = [np.asarray(v, dtype=float) for v in (q, qd, qdd)]
        for name, array in zip(("q", "qd", "qdd"), arrays):
            if array.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},), not {array.shape}")
        if f_ext is not None:
            f_ext = np.asarray(f_ext, dtype=float)
            if f_ext.shape != (n, 6):
                raise ValueError(f"f_ext must have shape ({n}, 6), not {f_ext.shape}")
        names = ("q", "qd", "qdd") + tuple(self._wrench_inputs)
        inputs = [dict.fromkeys(names, 0) for _ in range(self.tree.n)]
        for i, node in enumerate(self.tree.link_node):
            for name, array in zip(("q", "qd", "qdd"), arrays):
                inputs[node][name] = int(self.registers.encode(name, array[i],
                                                               f"node {node + 1} {name}"))
            if f_ext is not None:
                for k, name in enumerate(self._wrench_inputs):
                    inputs[node][name] = int(self.registers.encode(name, f_ext[i, k],
                                                                   f"node {node + 1} {name}"))
        return inputs

    def step(self, q, qd, qdd, f_ext=None, keep_registers=False):
        """Compute the inverse dynamics of one state on the tree of nodes.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (n,)
            Joint positions (rad), velocities (rad/s), accelerations (rad/s^2), per link.
        f_ext : array_like, shape (n, 6), optional
            External wrench per link (the wrench the link exerts, DH frame of the link, N and
            N·m about its origin), as for :func:`linkdyn.model.rnea`.
        keep_registers : bool
            Return every node's registers.

        Returns
        -------
        TreeResult

        Raises
        ------
        ValueError
            If an input has the wrong shape.
        FixedPointRangeError
            If an input does not fit the format.
        """
        return self.run(self.node_inputs(q, qd, qdd, f_ext), keep_registers)

    def run(self, inputs, keep_registers=False):
        """Run one update on node input words (:meth:`node_inputs`); return a TreeResult."""
        tree, segments = self.tree, self._segments
        count = tree.n
        nodes = []
        for j in range(count):
            regs = dict(self.constants[j])
            regs.update(inputs[j])
            nodes.append(regs)
        overflow = [False] * count
        joint = segments["joint"]
        if joint.lockstep:
            overflow = joint.run(nodes)
        forward_all = ("forward", "local") if joint.lockstep else ("joint", "forward", "local")
        for j, regs in enumerate(nodes):
            parent = tree.parents[j]
            for source, target in self._forward:
                regs[target] = self.base_words[target] if parent < 0 else nodes[parent][source]
            for name in forward_all:
                if segments[name].run([regs])[0]:
                    overflow[j] = True
        distal = segments["distal"]
        for j in reversed(range(count)):
            regs = nodes[j]
            merged, saturated = merge_backward(
                [[nodes[c][source] for source, _ in self._backward] for c in self._children[j]])
            for (_, target), word in zip(self._backward, merged):
                regs[target] = word
            if saturated:
                overflow[j] = True
            if distal.run([regs])[0]:
                overflow[j] = True
        fmt = self.fmt
        node_tau = np.array([regs["tau"] for regs in nodes], dtype=np.int64)
        node_overflow = np.array(overflow, dtype=bool)
        tau_words = node_tau[list(tree.link_node)]
        link_overflow = node_overflow[list(tree.link_node)].copy()
        for i, mount in enumerate(tree.mount_node):
            if mount >= 0:
                link_overflow[i] |= node_overflow[mount]
        base_wrench = np.zeros(6)
        for root in tree.roots:
            base_wrench += self.registers.decode_wrench(np.array(
                [nodes[root][f"{q}_out_{c}"] for q in ("f", "mu") for c in "xyz"], dtype=np.int64))
        registers = None
        if keep_registers:
            registers = [{name: np.asarray(word, dtype=np.int64) for name, word in regs.items()}
                         for regs in nodes]
        return TreeResult(self.registers.decode("tau", tau_words), tau_words, link_overflow,
                          base_wrench,
                          node_tau, node_overflow, registers)
