"""The call-path model: calling contexts of a profile, raw and resolved.

One model for psprocess's call-tree reports, its exporters (CUBE, folded
stacks, speedscope, pprof), combining and psuite.read_document():

- CallPathProfile / ThreadCallPaths: a companion <callpaths> document as
  recorded (docs/formats/callpaths.md): per thread, nodes of absolute
  addresses under parents, with exclusive sample counts.
- CallTree / CallNode: the same after resolution, one node per calling
  context of resolved Frames (inlined frames are frames of their own),
  exclusive values per node; inclusive values are sums over subtrees.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

UNKNOWN = "??"

# ThreadCallPaths.kind values, as in the document's kind attribute
KIND_CALL, KIND_SAMPLE, KIND_TRUNCATED, KIND_BLOCKED = 0, 1, 2, 3
KIND_NAMES = ("call", "sample", "truncated", "blocked")

# Frames that stand for a kind="truncated" or kind="blocked" placeholder
TRUNCATED_FUNCTION = "[truncated stack]"
BLOCKED_FUNCTION = "[blocked in the kernel]"


@dataclass(frozen=True, slots=True)
class Frame:
    """One resolved frame. `inlined`: an inlined call, shown as a frame of its
    own inside the function that follows it towards the root; `line` is
    where this frame is (the call site for a caller frame)."""

    function: str
    module: str = ""
    file: str = UNKNOWN
    line: int = 0
    inlined: bool = False

    @property
    def key(self) -> tuple[str, str, bool]:
        """What makes two frames the same node of a tree: the function in its
        module (call-tree reports are per function, as perf's and gprof's)."""
        return (self.function, self.module, self.inlined)


class CallNode:
    """One calling context: the parent's context plus `frame`."""

    __slots__ = ("frame", "parent", "children", "exclusive")

    def __init__(self, frame: Frame, parent: CallNode | None) -> None:
        self.frame = frame
        self.parent = parent
        self.children: dict[tuple[str, str, bool], CallNode] = {}
        self.exclusive = 0.0

    def child(self, frame: Frame) -> CallNode:
        """The child for `frame`, created when new."""
        node = self.children.get(frame.key)
        if node is None:
            node = self.children[frame.key] = CallNode(frame, self)
        return node

    def path(self) -> tuple[Frame, ...]:
        """Frames from the outermost to this node."""
        frames = []
        node: CallNode | None = self
        while node is not None and node.parent is not None:
            frames.append(node.frame)
            node = node.parent
        return tuple(reversed(frames))

    def walk(self) -> Iterator[CallNode]:
        """This node and its descendants, parents before children."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children.values())))

    def inclusive(self) -> float:
        return sum(n.exclusive for n in self.walk())

    def __repr__(self) -> str:
        return f"CallNode({self.frame.function!r}, exclusive={self.exclusive})"


ROOT_FRAME = Frame("<root>")


@dataclass
class CallTree:
    """A resolved calling-context tree: one thread's, or a combination."""

    root: CallNode = field(default_factory=lambda: CallNode(ROOT_FRAME, None))

    def add(self, path: Sequence[Frame], value: float) -> CallNode:
        """Add `value` exclusive to the context `path` (outermost first)."""
        node = self.root
        for frame in path:
            node = node.child(frame)
        node.exclusive += value
        return node

    def nodes(self) -> Iterator[CallNode]:
        """Every context (not the root), parents before children."""
        it = self.root.walk()
        next(it)
        return it

    def inclusive_values(self) -> dict[int, float]:
        """id(node) -> inclusive value, for every node, in one pass."""
        order = list(self.root.walk())
        out: dict[int, float] = {}
        for node in reversed(order):
            out[id(node)] = node.exclusive + sum(out[id(c)] for c in node.children.values())
        return out

    def total(self) -> float:
        return sum(n.exclusive for n in self.root.walk())

    def paths(self) -> Iterator[tuple[tuple[Frame, ...], float]]:
        """(path, exclusive) of every context with a nonzero exclusive value."""
        for node in self.nodes():
            if node.exclusive:
                yield node.path(), node.exclusive

    def merge(self, other: CallTree, scale: float = 1.0) -> None:
        """Add `other`'s values (times `scale`) into this tree."""
        for path, value in other.paths():
            self.add(path, value * scale)


@dataclass
class ThreadCallPaths:
    """One thread's recorded tree: node i (1..) has parent[i], module[i],
    addr[i], kind[i] and exclusive samples[i]; index 0 is the root."""

    thread: int
    tid: int
    samples: int = 0
    truncated: int = 0
    lost: int = 0
    parent: list[int] = field(default_factory=lambda: [0])
    module: list[int] = field(default_factory=lambda: [0])
    addr: list[int] = field(default_factory=lambda: [0])
    kind: list[int] = field(default_factory=lambda: [KIND_CALL])
    exclusive: list[int] = field(default_factory=lambda: [0])
    tree: CallTree | None = None  # filled by resolution
    # The thread's flat profile: its sampled addresses resolved as the flat
    # profile's PCs are (psuite.read_document fills it), so that a process report's
    # records can name the thread of every sample.  None: not resolved.
    # psuite.model.report.Location items, unnamed here: psuite.model.report imports this module.
    locations: list | None = None

    def add_node(self, node_id: int, parent: int, module: int, addr: int, kind: int, samples: int) -> None:
        """Append node `node_id` (ids are dense and ascending in the document)."""
        if node_id != len(self.parent) or not 0 <= parent < node_id:
            raise ValueError(f"node {node_id}: ids must ascend from 1 and parents come first (parent {parent})")
        self.parent.append(parent)
        self.module.append(module)
        self.addr.append(addr)
        self.kind.append(kind)
        self.exclusive.append(samples)

    def __len__(self) -> int:
        return len(self.parent) - 1

    def sampled(self) -> dict[tuple[int, int, int], int]:
        """(kind, module id, address) -> the exclusive samples there, for
        every node with samples of its own: the thread's flat profile before
        resolution.  A call node's address is moved to its call instruction
        (addr - 1), as resolution looks it up."""
        out: dict[tuple[int, int, int], int] = {}
        for kind, module, addr, n in zip(self.kind, self.module, self.addr, self.exclusive, strict=True):
            if n:
                key = (kind, module, addr - 1 if kind == KIND_CALL else addr)
                out[key] = out.get(key, 0) + n
        return out

    def truncated_deeper_than(self, maxdepth: int) -> int:
        """Of the truncated samples, those whose known frames reach
        `maxdepth` (the stack was deeper than psrun records); the others were
        cut short where the unwinder could not go on."""
        if maxdepth <= 0:
            return 0
        depth = [0] * len(self.parent)  # frames below the truncated node; -1: not under one
        depth[0] = -1
        deep = 0
        for i in range(1, len(self.parent)):
            above = depth[self.parent[i]]
            if self.kind[i] == KIND_TRUNCATED:
                depth[i] = 0
            else:
                depth[i] = above + 1 if above >= 0 else -1
            if depth[i] >= maxdepth:
                deep += self.exclusive[i]
        return deep


@dataclass
class CallPathModule:
    id: int
    file: str
    offset: int  # file address = addr - offset
    buildid: str = ""  # the GNU build-id the module was mapped with, hex ("" when not recorded)


@dataclass
class CallPathProfile:
    """A <callpaths> document: the calling contexts of one process."""

    source: str = ""  # where it was read from
    profile_file: str = ""
    pid: int = 0
    hostname: str = ""
    command: str = ""
    event: str = ""
    threshold: int = 0
    maxdepth: int = 0
    unwinder: str = ""
    modules: dict[int, CallPathModule] = field(default_factory=dict)
    threads: list[ThreadCallPaths] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return sum(t.samples for t in self.threads)

    @property
    def truncated(self) -> int:
        return sum(t.truncated for t in self.threads)

    @property
    def lost(self) -> int:
        return sum(t.lost for t in self.threads)


@dataclass
class ThreadTree:
    """One thread's resolved tree with where it ran, for reports and exports."""

    hostname: str
    pid: int
    rank: int | None
    thread: int
    tid: int
    tree: CallTree

    @property
    def label(self) -> str:
        where = f"rank {self.rank}" if self.rank is not None else f"{self.hostname} pid {self.pid}"
        return f"{where} thread {self.thread}"


def thread_trees(report) -> list[ThreadTree]:
    """The resolved call tree of every thread of a ProfileReport, or of every
    profile of a MultiReport (its members' process totals left out), in
    document order.  Empty when nothing was recorded or resolved."""
    members = getattr(report, "reports", None)
    out: list[ThreadTree] = []
    for r in members if members is not None else [report]:
        cp = getattr(r, "callpaths", None)
        if cp is None:
            continue
        for t in cp.threads:
            if t.tree is not None:
                out.append(ThreadTree(cp.hostname or getattr(r, "hostname", ""), cp.pid or (getattr(r, "pid", 0) or 0),
                                      getattr(r, "rank", None), t.thread, t.tid, t.tree))
    return out


def tree_records(tree: CallTree) -> list[dict]:
    """One row per context of `tree`, parents before children: "path"
    (function names, outermost first), "function", "module", "inlined",
    "inclusive", "exclusive", "depth".  One pass, O(nodes)."""
    inclusive = tree.inclusive_values()
    rows: list[dict] = []
    stack: list[tuple[CallNode, tuple[str, ...]]] = [(c, ()) for c in reversed(list(tree.root.children.values()))]
    while stack:
        node, above = stack.pop()
        frame = node.frame
        path = (*above, frame.function)
        rows.append({"path": path, "function": frame.function, "module": frame.module, "inlined": frame.inlined,
                     "inclusive": _number(inclusive[id(node)]), "exclusive": _number(node.exclusive),
                     "depth": len(path)})
        stack.extend((c, path) for c in reversed(list(node.children.values())))
    return rows


def merged(trees: Sequence[CallTree]) -> CallTree:
    """One tree with the values of all `trees` added (threads merged)."""
    out = CallTree()
    for tree in trees:
        stack = [(tree.root, out.root)]
        while stack:
            src, dst = stack.pop()
            dst.exclusive += src.exclusive
            stack.extend((c, dst.child(c.frame)) for c in src.children.values())
    return out


def _number(v: float) -> float | int:
    """Sample counts as ints (trees hold floats so that they can be scaled)."""
    return int(v) if float(v).is_integer() else v
