"""Resolution of recorded call paths: every thread's raw nodes (absolute
addresses under parents) become a CallTree of Frames.

Per module, one srcmap.resolve_frames call over all the distinct file
addresses of every thread (a return address at addr - 1 - offset, the call
instruction; an interrupted instruction at addr - offset).  Each address
gives its frames innermost first; they are laid out outermost first, so an
inlined call hangs under the function it was inlined into.  A module
whose profiled binary is not found (binaries.bindings) is one marked
frame at each of its addresses.  The Python
work per node is a dict look-up and a child step per frame: O(nodes)."""

from __future__ import annotations

from collections.abc import Callable

from psuite.model.calltree import (
    BLOCKED_FUNCTION,
    KIND_BLOCKED,
    KIND_CALL,
    KIND_SAMPLE,
    KIND_TRUNCATED,
    TRUNCATED_FUNCTION,
    UNKNOWN,
    CallNode,
    CallPathProfile,
    CallTree,
    Frame,
)

Steps = tuple[tuple[Frame, tuple], ...]  # frames outermost first, each with its key (made once per address)


def _steps(frames) -> Steps:
    return tuple((f, f.key) for f in frames)


TRUNCATED_FRAMES = _steps([Frame(TRUNCATED_FUNCTION)])
BLOCKED_FRAMES = _steps([Frame(BLOCKED_FUNCTION)])
NO_FRAME = _steps([Frame(UNKNOWN)])


def _unknown(addr: int) -> Steps:
    """An address in no known object: named by the address, as nothing
    else is known of it."""
    return _steps([Frame(f"{UNKNOWN} {addr:#x}", UNKNOWN)])


def resolve(cp: CallPathProfile, progress: Callable[[int, int], None] | None = None,
            bound: dict | None = None) -> None:
    """Fill every thread's tree (ThreadCallPaths.tree).  bound: per module
    file, its binaries.Binding (the profile's; default: each module from
    its recorded path)."""
    from psuite.analysis import srcmap

    # Per module, the absolute addresses to resolve: a return address one
    # byte back (the call), an interrupted instruction as it is.
    wanted: dict[int, dict[int, None]] = {ident: {} for ident in cp.modules}
    for t in cp.threads:
        for module, addr, kind in zip(t.module, t.addr, t.kind, strict=True):
            table = wanted.get(module)
            if table is not None and kind <= KIND_SAMPLE:
                table[addr - 1 if kind == KIND_CALL else addr] = None
    frames: dict[int, dict[int, Steps]] = {}
    done, todo = 0, sum(len(v) for v in wanted.values())
    for ident, table in wanted.items():
        mod = cp.modules[ident]
        addrs = list(table)
        binding = bound.get(mod.file) if bound else None
        if binding is not None and binding.problem:  # another build, or none: marked, never resolved wrongly
            frames[ident] = dict.fromkeys(addrs, _steps([Frame(binding.marker, mod.file)]))
            done += len(addrs)
            if progress:
                progress(done, todo)
            continue
        file_addrs = [a - mod.offset for a in addrs]
        # resolve_frames takes file addresses; one below the load address
        # is none (a corrupt document): unknown, as the flat profile says.
        valid = [i for i, a in enumerate(file_addrs) if a >= 0]
        moved = (binding.file,) if binding is not None and binding.file != mod.file else ()  # found elsewhere
        found = srcmap.resolve_frames(mod.file, [file_addrs[i] for i in valid], *moved) if valid else []
        unknown = _steps([Frame(UNKNOWN, mod.file)])
        out = dict.fromkeys(addrs, unknown)
        for i, stack in zip(valid, found, strict=True):
            out[addrs[i]] = _steps(reversed(stack)) if stack else unknown
        frames[ident] = out
        done += len(addrs)
        if progress:
            progress(done, todo)
    for t in cp.threads:
        t.tree = _tree(t.parent, t.module, t.addr, t.kind, t.exclusive, frames)


def _tree(parents: list[int], modules: list[int], addrs: list[int], kinds: list[int], exclusive: list[int],
          frames: dict[int, dict[int, Steps]]) -> CallTree:
    tree = CallTree()
    nodes = [tree.root]
    append = nodes.append
    for i in range(1, len(parents)):
        kind = kinds[i]
        if kind == KIND_CALL or kind == KIND_SAMPLE:
            table = frames.get(modules[i])
            path = table[addrs[i] - 1 if kind == KIND_CALL else addrs[i]] if table is not None else _unknown(addrs[i])
        else:
            path = TRUNCATED_FRAMES if kind == KIND_TRUNCATED else BLOCKED_FRAMES if kind == KIND_BLOCKED \
                else NO_FRAME
        node = nodes[parents[i]]
        for frame, key in path:
            children = node.children
            child = children.get(key)
            if child is None:
                child = children[key] = CallNode(frame, node)
            node = child
        n = exclusive[i]
        if n:
            node.exclusive += n
        append(node)
    return tree


def resolve_into(report, progress: Callable[[int, int], None] | None = None) -> None:
    """Resolve report.callpaths (a ProfileReport's), unless done already."""
    cp = getattr(report, "callpaths", None)
    if cp is not None and any(t.tree is None for t in cp.threads):
        from psuite.formats.binaries import bindings

        resolve(cp, progress, bindings(report))
