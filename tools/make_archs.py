"""Writes npusched/arch/data/*.json: the accelerators of the four seed papers as npusched/arch/v1.

Every number is taken from the paper cited in the file's ``source`` (per-field quotes in
``source.fields``); values a paper does not give are left out (null) or, where a model needs them,
listed in ``assumptions`` with the reason. Units: KB / MB in the papers are 2**10 / 2**20 bytes,
GB/s is 10**9 bytes per second.

    python tools/make_archs.py            # (re)write the files
    python tools/make_archs.py --check    # exit 1 if a shipped file differs from this script
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from npusched.arch import (
    Arch,
    CoreSpec,
    DramSpec,
    NocSpec,
    Register,
    Source,
    arch_to_dict,
    write_arch,
)

DATA = Path(__file__).resolve().parents[1] / "npusched" / "arch" / "data"
KiB = 1024

KLOTSKI = "Bai et al., Klotski: DNN Model Orchestration Framework for Dataflow Architecture "
KLOTSKI += "Accelerators (2023)"
FLEXER = "Min, Kwon, Egger, Flexer: Out-of-Order Scheduling for Multi-NPUs, CGO 2023"
TSO = "Sousa et al., Tensor Slicing and Optimization for Multicore NPUs (NMP by LG Electronics)"
STREAM = "Symons et al., Towards Heterogeneous Multi-core Accelerators Exploiting Fine-grained "
STREAM += "Scheduling of Layer-Fused Deep Neural Networks (Stream), arXiv:2212.10612"

# --- Klotski ---------------------------------------------------------------------------------
# "5.86 MB": 5.86 * 1024 KiB = 6000.6 KiB, kept as the whole 6000 KiB (which prints as 5.86 MiB).
KLOTSKI_SRAM = 6000 * KiB
KLOTSKI_HEADER_BITS = 64  # assumption (see the file's assumptions)
KLOTSKI_DRAM_BYTES_PER_CYCLE = 256  # assumption (see the file's assumptions)
# The two parameters fitted to Klotski's baseline-1 cycles of VGG16 and ResNet-50 (Tables I-III)
# by `python -m npusched.bench.calibrate fit` (docs/results_calibration.md): the SRAM's bandwidth
# to the PE array and the register bytes per operand the KC-partition dataflow reuses (of the
# 5 KB per PE), one 32-bit word per cycle in and out of each register file
KLOTSKI_SRAM_BYTES_PER_CYCLE = 20
KLOTSKI_REGISTER_BYTES = 48
KLOTSKI_REGISTERS = {op: Register(KLOTSKI_REGISTER_BYTES, 4) for op in ("W", "I", "O")}


def klotski(n: int) -> Arch:
    cores = tuple(
        CoreSpec(
            id=k,
            name=f"core{k}",
            pe_unroll={"K": 14, "C": 12},
            memory_bytes=KLOTSKI_SRAM,
            buffers={"sram": KLOTSKI_SRAM},
            kind="pe_array",
            coord=divmod(k, n),
            registers=KLOTSKI_REGISTERS,
            sram_read_bytes_per_cycle=KLOTSKI_SRAM_BYTES_PER_CYCLE,
            sram_write_bytes_per_cycle=KLOTSKI_SRAM_BYTES_PER_CYCLE,
        )
        for k in range(n * n)
    )
    quote = "Sec. IV-A (Implementation Details)"
    return Arch(
        name=f"klotski-{n}x{n}",
        description=(
            f"Klotski's dataflow architecture accelerator: {n}x{n} individual DNN accelerators "
            "on a mesh NoC, each a KC-partition (NVDLA-like) 12x14 PE array with its own 5.86 MB "
            "SRAM (and 5 KB of registers per PE, not counted in memory_bytes); 32-bit, 1 GHz."
        ),
        source=Source(
            paper=KLOTSKI,
            where=f"{quote}; mesh sizes of Sec. IV-C and Tables I-III ({n}x{n} topology)",
            seed="002_2b184d22122ccaba.txt",
            fields={
                "cores/pe_unroll": (
                    f"{quote}: 'Each individual DNN accelerator adopts KC-partition and equips "
                    "with a 12x14 PE array'; Sec. III-B: 'its PEs are tiled into an m x n 2D "
                    "array. Then, ic and oc should be multiple of m and n' -> C (ic) on 12, "
                    "K (oc) on 14"
                ),
                "cores/memory_bytes": (
                    f"{quote}: 'PEs are shared with an on-chip SRAM memory of 5.86 MB' (per "
                    "individual accelerator: Sec. II-C, b_i is the on-chip memory capacity of "
                    "accelerator a_i)"
                ),
                "noc": (
                    f"{quote}: 'proprietary NoC with the mesh topology ... XY-YX routing "
                    "algorithm ... its bandwidth is 512 bytes/cycle, with each packet size of 8 "
                    "bytes ... The flit size is 192 bits'"
                ),
                "frequency_hz": f"{quote}: 'frequency is 1GHz'",
                "precision_bits": f"{quote}: 'The precision of computations are 32 bits'",
                "mesh": "Sec. IV-C: 'individual accelerators are organized in 3x3, 4x4, and 5x5 "
                "arrays'",
            },
        ),
        frequency_hz=1e9,
        precision_bits=32,
        cores=cores,
        mesh=(n, n),
        noc=NocSpec(
            topology="mesh",
            bandwidth_bytes_per_cycle=512,
            hop_latency_cycles=1,
            routing="XY-YX",
            flit_bits=192,
            packet_bytes=8,
            packet_header_bits=KLOTSKI_HEADER_BITS,
        ),
        dram=DramSpec(
            kind="off-chip DRAM (not described by the paper)",
            bandwidth_bytes_per_cycle=KLOTSKI_DRAM_BYTES_PER_CYCLE,
            controllers=(0, n - 1, n * (n - 1), n * n - 1),
        ),
        assumptions=(
            "noc/hop_latency_cycles = 1: Klotski gives no router latency (its NoC cost is the "
            "hop count, eq. 9); one cycle per hop as npusched.bench.generate uses",
            f"noc/packet_header_bits = {KLOTSKI_HEADER_BITS}: not given; any header up to 128 "
            "bits keeps one 8-byte packet in one 192-bit flit, so links carry 512 * 64 / 192 = "
            "170.7 payload bytes per cycle",
            f"dram/bandwidth_bytes_per_cycle = {KLOTSKI_DRAM_BYTES_PER_CYCLE}: Klotski gives no "
            "off-chip memory; the order of the Wormhole processor it cites for dataflow "
            "accelerators ([19]: GDDR6, 288 GB/s at about 1 GHz)",
            "dram/controllers: Klotski gives none; Sec. II-A says memory controllers surround "
            "the 2D array of accelerators: one at each corner router of the mesh",
            f"cores/registers = {KLOTSKI_REGISTER_BYTES} bytes per operand: fitted (python -m "
            "npusched.bench.calibrate fit, on VGG16 and ResNet-50 baseline-1 cycles only; VGG19, "
            "ResNet-152 and Inception v3 are the check): Sec. IV-A gives 5 KB of registers per "
            "PE, but its MAESTRO model runs one fixed KC-partition dataflow, which reuses what "
            "this parameter says; one 32-bit word per cycle in and out of each",
            f"cores/sram_read_bytes_per_cycle = cores/sram_write_bytes_per_cycle = "
            f"{KLOTSKI_SRAM_BYTES_PER_CYCLE}: fitted as cores/registers (the paper does not give "
            "the SRAM's bandwidth to the array)",
            "cores/pe_unroll: 12x14 read as C=12 (m, input channels) x K=14 (n, output "
            "channels) from Sec. III-B 'ic and oc should be multiple of m and n'",
            "cores/memory_bytes: 5.86 MB read as 6000 KiB = 6,144,000 B (MB = 2^20 B)",
        ),
    )


# --- Flexer ----------------------------------------------------------------------------------
FLEXER_TABLE1 = {  # Table 1: name -> (# of cores, on-chip memory size, bandwidth)
    "arch1": (2, 256, 32),
    "arch2": (2, 256, 64),
    "arch3": (2, 512, 32),
    "arch4": (2, 512, 64),
    "arch5": (4, 256, 32),
    "arch6": (4, 256, 64),
    "arch7": (4, 512, 32),
    "arch8": (4, 512, 64),
}


FLEXER_COPY_BYTES_PER_CYCLE = 64  # assumption (see the file's assumptions)
# Stream's TPU-like core (Stream git 303f9dc1, inputs/examples/hardware/cores/tpu_like.yaml):
# rf_128B holds weights per PE (8 bit/cycle), rf_2B the partial sum of one output lane, shared by
# the PEs that reduce over C (16 bit/cycle); inputs come from the SRAM (2048 bit/cycle r and w)
TPU_REGISTERS = {"W": Register(128, 1), "O": Register(2, 2, ("C",))}
TPU_SRAM_BYTES_PER_CYCLE = 256


def flexer(name: str) -> Arch:
    ncores, mem_kb, bw = FLEXER_TABLE1[name]
    cores = tuple(
        CoreSpec(
            id=k,
            name=f"npu{k}",
            pe_unroll={"K": 32, "C": 32},
            memory_bytes=None,
            registers=TPU_REGISTERS,
            sram_read_bytes_per_cycle=TPU_SRAM_BYTES_PER_CYCLE,
            sram_write_bytes_per_cycle=TPU_SRAM_BYTES_PER_CYCLE,
        )
        for k in range(ncores)
    )
    return Arch(
        name=f"flexer-{name}",
        description=(
            f"Flexer {name}: {ncores} NPU cores of 32x32 PEs at 1 GHz sharing a {mem_kb} KB "
            f"global buffer (scratchpad), off-chip memory bandwidth {bw} (Table 1, no unit "
            "given: read as bytes/cycle = GB/s at 1 GHz)."
        ),
        source=Source(
            paper=FLEXER,
            where=f"Sec. 5 (Evaluation), Table 1 row {name}; Sec. 2.1 (architecture)",
            seed="000_4482881724fd7be8.txt",
            fields={
                "cores": f"Table 1, {name}: '# of cores' = {ncores}",
                "shared_buffer_bytes": (
                    f"Table 1, {name}: 'on-chip memory size' = {mem_kb}; Sec. 2.1: 'A shared "
                    "on-chip scratchpad memory, labeled Global Buffer'"
                ),
                "dram/bandwidth_bytes_per_cycle": (
                    f"Table 1, {name}: 'bandwidth' = {bw}; Sec. 5: 'parameterizable in the size "
                    "of the on-chip memory, the available memory bandwidth, and the number of NPU "
                    "cores'"
                ),
                "cores/pe_unroll": (
                    "Sec. 5: 'Each NPU core contains a compute array comprising 32 x 32 PEs'"
                ),
                "frequency_hz": "Sec. 5: '32 x 32 PEs running at 1 GHz'",
            },
        ),
        frequency_hz=1e9,
        precision_bits=8,
        cores=cores,
        noc=NocSpec(
            topology="shared_memory",
            bandwidth_bytes_per_cycle=FLEXER_COPY_BYTES_PER_CYCLE,
            description="cores exchange data through the shared global buffer (Sec. 2.1, Fig. 2)",
        ),
        shared_buffer_bytes=mem_kb * KiB,
        dram=DramSpec(kind="off-chip memory", bandwidth_bytes_per_cycle=bw),
        assumptions=(
            "shared_buffer_bytes: Table 1 gives no unit for the on-chip memory size; read as KB "
            "(KiB), the only plausible magnitude for a mobile multi-NPU global buffer",
            "dram/bandwidth_bytes_per_cycle: Table 1 gives no unit for the bandwidth; read as "
            "bytes/cycle, which equals GB/s at the 1 GHz clock (bits/cycle would be 8x lower)",
            "cores/pe_unroll: the paper gives only '32 x 32 PEs'; K x C unrolling assumed "
            "(as a TPU-like array)",
            "precision_bits = 8: not stated; 8-bit integer as usual for a mobile NPU",
            "cores/memory_bytes: no per-core memory given; all tiles live in the global buffer",
            "cores/registers, cores/sram_read_bytes_per_cycle, cores/sram_write_bytes_per_cycle: "
            "not given; those of Stream's TPU-like 32x32 core (a W register of 128 B per PE, a "
            "2-byte partial-sum register per output lane, 256 B/cycle between buffer and array)",
            f"noc/bandwidth_bytes_per_cycle = {FLEXER_COPY_BYTES_PER_CYCLE}: not given (cores "
            "share the buffer); the routed machine model gives each core an even share of the "
            "buffer and copies data between shares at this rate, one copy at a time",
        ),
    )


# --- TSO / NMP -------------------------------------------------------------------------------
def tso(bits: int) -> Arch:
    macs = 128 // bits  # 128-bit datapath: 16 MACs/cycle at 8 bit, 8 at 16 bit
    cores = tuple(
        CoreSpec(
            id=8 * e + t,
            name=f"TLE{e}.TLT{t}",
            pe_unroll={"OY*OX*FY*FX": macs},
            memory_bytes=3 * 8 * KiB,
            buffers={"MB0": 8 * KiB, "MB1": 8 * KiB, "MB2": 8 * KiB},
            kind="tlt",
            cluster=e,
            sram_read_bytes_per_cycle=32,
            sram_write_bytes_per_cycle=16,
        )
        for e in range(4)
        for t in range(8)
    )
    return Arch(
        name=f"tso-nmp-{bits}",
        description=(
            f"LG NMP as used by TSO, {bits}-bit fixed point: 4 TLEs x 8 TLTs (RISC-V + MAC unit, "
            f"{macs} MACs/cycle), each TLT with three 8 KB scratchpads MB0 (IN), MB1 (W), "
            "MB2 (OUT); ring buses; DDR3-2133 DRAM at 17 GB/s with 128 B bursts; 1 GHz."
        ),
        source=Source(
            paper=TSO,
            where=(
                "Sec. III (The NMP Architecture); Sec. I and Fig. 1 (bursts, CAS); Sec. IV-E, "
                "eq. 7 and Algorithm 4; Sec. VI"
            ),
            seed="004_442fbcc29e97fffd.txt",
            fields={
                "cores": (
                    "Sec. III: 'composed of 4 TLEs, each containing 8 TLTs (RISC-V + MAC unit)'"
                ),
                "cores/buffers": (
                    "Sec. III: 'three on-chip (scratchpad) memories, namely MB0, MB1 and MB2, "
                    "which respectively store the IN, W and OUT tiles'; 'Each TLT has three "
                    "on-chip memories of size 8KB each'"
                ),
                "cores/pe_unroll": (
                    "Sec. III: '128-bit wide ... for 8-bit fixed-point, up to 16 MAC operations "
                    "are executed per cycle, while for 16-bit fixed-point, up to 8'; eq. 7 "
                    "Tile_MAC = T_N x T_M x ceil(T_R x T_C x K x K / #MACs)"
                ),
                "frequency_hz": "Sec. III: 'With an operating frequency of @1GHz'",
                "dram": (
                    "Sec. III: 'The DRAM memory is a DDR3 that operates on a 1066MHz clock rate "
                    "(DDR3-2133 - 17GB/s)'; Sec. I: 'each red dot represents a (128B) memory "
                    "burst'; 'reading the first byte from a 128B burst of a typical DDR3 memory "
                    "takes ~ 14 ns'"
                ),
                "noc": (
                    "Sec. III: 'data can be shared between TLEs ... by using a Global Ringbus. "
                    "The TLEs of a TLE also have their own Ringbus'"
                ),
                "precision_bits": (
                    "Sec. III: 'capable of executing 8- and 16-bit fixed-point operations'; "
                    "Sec. VI: models compiled to 16-bit fixed point"
                ),
            },
        ),
        frequency_hz=1e9,
        precision_bits=bits,
        cores=cores,
        noc=NocSpec(
            topology="ring",
            bandwidth_bytes_per_cycle=16,
            description=(
                "a Global Ringbus between the 4 TLEs and one Ringbus per TLE between its 8 TLTs "
                "(cluster = TLE); multicast loads reach all TLTs of one TLE; no bandwidth given"
            ),
        ),
        dram=DramSpec(
            kind="DDR3-2133",
            bandwidth_bytes_per_s=17e9,
            burst_bytes=128,
            cas_latency_ns=14,
            clock_hz=1066e6,
        ),
        assumptions=(
            "dram/cas_latency_ns = 14: Sec. I gives '~ 14 ns' for 'a typical DDR3 memory' "
            "(Algorithm 4 takes CAS as a parameter); 14 cycles at the 1 GHz NMP clock",
            "dram/bandwidth_bytes_per_s: '17GB/s' read as 17e9 B/s (DDR3-2133 x 8 B = "
            "17.06e9): 17 bytes per NMP cycle",
            "noc/bandwidth_bytes_per_cycle = 16: no ring bandwidth given; one 128-bit word per "
            "cycle, the width of the TLTs' datapath (Sec. III)",
            "cores/sram_read_bytes_per_cycle = 32, cores/sram_write_bytes_per_cycle = 16: the "
            "MAC unit reads one 128-bit word each of IN (MB0) and W (MB1) and writes one of OUT "
            "(MB2) per cycle (Sec. III: a 128-bit wide unit); no registers besides",
        ),
    )


# --- Stream ----------------------------------------------------------------------------------
def stream_hetero() -> Arch:
    tpu_sram = 16777216 // 8  # sram_2MB, size in bits in the export
    pool_sram = 1048576 // 8  # sram_128KB / sram_128KB_2rw
    coords = [(0, 0), (0, 1), (1, 1), (1, 0)]  # 2d_mesh 2x2 as Stream links it: 0-1-2-3-0
    cores = [
        CoreSpec(
            id=k,
            name=f"tpu_like{k}",
            pe_unroll={"K": 32, "C": 32},
            memory_bytes=tpu_sram,
            buffers={"sram_2MB": tpu_sram},
            kind="tpu_like",
            registers=TPU_REGISTERS,
            sram_read_bytes_per_cycle=TPU_SRAM_BYTES_PER_CYCLE,
            sram_write_bytes_per_cycle=TPU_SRAM_BYTES_PER_CYCLE,
        )
        for k in range(4)
    ]
    cores.append(
        CoreSpec(
            id=4,
            name="pooling",
            pe_unroll={"FX": 3, "FY": 3, "K": 8},
            memory_bytes=pool_sram,
            buffers={"sram_128KB": pool_sram},
            kind="pooling",
            sram_read_bytes_per_cycle=72,
            sram_write_bytes_per_cycle=64,
        )
    )
    cores.append(
        CoreSpec(
            id=5,
            name="simd",
            pe_unroll={"K": 64},
            memory_bytes=pool_sram,
            buffers={"sram_128KB_2rw": pool_sram},
            kind="simd",
            sram_read_bytes_per_cycle=64,
            sram_write_bytes_per_cycle=64,
        )
    )
    export = "../shared/benchmarks/stream/*_tpu_quad_core_fused.json"
    return Arch(
        name="stream-hetero",
        description=(
            "Stream's tpu_like_quad_core: four TPU-like 32x32 (K x C) cores with 2 MB SRAM each "
            "on a 2x2 mesh of 32 bit/cycle links, a 3x3x8 pooling core and a 64-lane SIMD core "
            "(128 KB each) linked to every TPU-like core, and an off-chip DRAM port of 64 "
            "bit/cycle shared by all; 8-bit operands; cycles only (no clock)."
        ),
        source=Source(
            paper=STREAM,
            where=(
                "Sec. V (exploration setup: SIMD core, shared DRAM port of 64 bit/cc); hardware "
                f"of the Stream exports {export} (cores[], links[]; Stream git 303f9dc1, "
                "tpu_like_quad_core.yaml)"
            ),
            seed="001_06bcf2f59a1e0c47.txt",
            fields={
                "cores/0-3": (
                    "export cores 0-3 'tpu_like': pe_array_dims D1=32, D2=32, top memory "
                    "sram_2MB 16777216 bits; Stream TPU_like dataflow {'D1': ('K', 32), "
                    "'D2': ('C', 32)}; Sec. II Fig. 2(b): C reused across rows, K across columns"
                ),
                "cores/4": (
                    "export core 4 'pooling': pe_array_dims D1=3, D2=3, D3=8, sram_128KB "
                    "1048576 bits; Stream pooling dataflow D1=FX 3, D2=FY 3"
                ),
                "cores/5": (
                    "export core 5 (named 'pooling' in the export, Stream's simd.yaml): "
                    "pe_array_dims D1=64, sram_128KB_2rw 1048576 bits; dataflow D1 = K 64; "
                    "Sec. V: 'pooling and residual addition layers are assigned to the "
                    "additional SIMD core'"
                ),
                "noc": (
                    "export links: 32 bits/cycle between TPU-like cores 0-1, 1-2, 2-3, 3-0 and "
                    "from each of them to cores 4 and 5 (hardware graph 2d_mesh 2x2, bandwidth 32)"
                ),
                "dram": (
                    "export core 6 'offchip', link 'Core(6), Any, bw=64' bits/cycle; Sec. V: "
                    "'the DRAM port, which has a shared bandwidth of 64 bit/cc'"
                ),
                "precision_bits": (
                    "Stream tpu_like core: 8-bit operands (int8), 32-bit accumulators"
                ),
                "cores/registers": (
                    "Stream git 303f9dc1, inputs/examples/hardware/cores/tpu_like.yaml: rf_128B "
                    "(W, per PE, 8 bit/cycle) and rf_2B (O, served over D2 = C, 16 bit/cycle); "
                    "inputs straight from the SRAM. Pooling and SIMD cores: none modelled"
                ),
                "cores/sram_read_bytes_per_cycle": (
                    "export cores[].top_memories r_bw_bits_per_cycle: 2048 (tpu_like), 576 "
                    "(pooling), 512 (simd)"
                ),
                "cores/sram_write_bytes_per_cycle": (
                    "export cores[].top_memories w_bw_bits_per_cycle: 2048, 512, 512"
                ),
                "noc/hop_latency_cycles": (
                    "Stream's communication model: a transfer holds its links for its size over "
                    "the bandwidth, with no per-hop latency (the exports' communication_events)"
                ),
            },
        ),
        frequency_hz=None,
        precision_bits=8,
        cores=tuple(cores),
        noc=NocSpec(
            topology="links",
            bandwidth_bytes_per_cycle=4,
            hop_latency_cycles=0,
            links=tuple(
                pair
                for a, b in [(0, 1), (1, 2), (2, 3), (3, 0)]
                + [(k, x) for k in range(4) for x in (4, 5)]
                for pair in ((a, b), (b, a))
            ),
            description=(
                "point-to-point links of 32 bit/cycle: the four tpu_like cores form a 2x2 mesh "
                f"(core k at {dict(enumerate(coords))}), and the pooling and simd cores are "
                "linked to each tpu_like core; one transfer per link at a time"
            ),
        ),
        dram=DramSpec(kind="off-chip DRAM port", bandwidth_bytes_per_cycle=8),
        assumptions=(
            "cores/4/pe_unroll: the export gives D3=8 without its loop; K (channels) assumed",
            "noc/bandwidth_bytes_per_cycle = 4: the export's 32 bit/cycle links; the paper's "
            "Sec. V exploration uses a 128 bit/cc bus instead",
            "no mesh: the pooling and SIMD cores sit outside the 2x2 mesh of tpu_like cores, "
            "so Accelerator.from_arch() gives an accelerator without mesh",
        ),
    )


def all_archs() -> list[Arch]:
    out = [klotski(n) for n in (3, 4, 5)]
    out += [flexer(name) for name in FLEXER_TABLE1]
    out += [tso(16), tso(8), stream_hetero()]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    ap.add_argument("--out", type=Path, default=DATA, help="output folder")
    args = ap.parse_args(argv)
    stale = []
    for arch in all_archs():
        path = args.out / f"{arch.name}.json"
        if args.check:
            if not path.is_file() or json.loads(path.read_text()) != arch_to_dict(arch):
                stale.append(path.name)
        else:
            write_arch(arch, path)
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)} (run tools/make_archs.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
