"""Machine facts: CPU, caches, TLBs, memory and page size.

Read by the C library from the kernel (/proc, /sys) and cpuid, the same code
that fills the <machineinfo> of every report psrun writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from psuite.libperfsuite.native import load, text


@dataclass
class Cache:
    type: str  # "data", "instruction" or "unified"
    level: int
    size_kb: float  # in size_units; whole except where a document wrote a fraction
    line_size: int  # bytes; 0 if unknown
    associativity: int  # ways; 0 = fully associative
    shared_cpus: int = 0
    size_units: str = "KB"  # or "KuOps": a trace cache's size in micro-operations, as PerfSuite wrote it


@dataclass
class TLB:
    type: str
    level: int
    entries: int
    associativity: int  # ways; 0 = fully associative
    page_kb: int = 4


@dataclass
class MachineInfo:
    cpu_count: int
    vendor: str
    brand: str
    family: int
    model: int
    stepping: int
    mhz: float
    hypervisor: str = ""
    caches: list[Cache] = field(default_factory=list)
    tlbs: list[TLB] = field(default_factory=list)
    memory_mb: float = 0  # whole from the kernel; the original PerfSuite wrote decimals (2904.20)
    page_size: int = 4096

    @property
    def revision(self) -> str:
        return str(self.stepping)

    @property
    def cpuidinfo(self) -> str:
        return f"Family {self.family} Model {self.model} Stepping {self.stepping}"

    def to_dict(self) -> dict:
        return asdict(self)


def machine_info() -> MachineInfo:
    """This machine, as the kernel and cpuid describe it."""
    ffi, lib = load()
    m = ffi.new("ps_machineinfo_t *")
    lib.ps_machineinfo(m)
    caches = [
        Cache(text(ffi, c.type), c.level, c.size_kb, c.line_size, c.associativity, c.shared_cpus)
        for c in (m.caches[i] for i in range(m.cache_count))
    ]
    tlbs = [
        TLB(text(ffi, t.type), t.level, t.entries, t.associativity, t.page_kb)
        for t in (m.tlbs[i] for i in range(m.tlb_count))
    ]
    return MachineInfo(
        cpu_count=m.cpu_count,
        vendor=text(ffi, m.vendor),
        brand=text(ffi, m.brand),
        family=m.family,
        model=m.model,
        stepping=m.stepping,
        mhz=round(m.mhz, 3),
        hypervisor=text(ffi, m.hypervisor),
        caches=caches,
        tlbs=tlbs,
        memory_mb=m.memory_kb // 1024,
        page_size=m.page_size,
    )


def cpuid(leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]:
    """Raw cpuid registers (eax, ebx, ecx, edx); zeros off x86."""
    ffi, lib = load()
    regs = ffi.new("unsigned[4]")
    lib.ps_cpuid(leaf, subleaf, regs)
    return tuple(regs)  # type: ignore[return-value]
