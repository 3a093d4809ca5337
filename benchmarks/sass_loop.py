#!/usr/bin/env python3
"""What one trip of a kernel's main loop costs in instructions, read from the SASS of its
NVRTC build: no GPU needed. The main loop is the shortest of the loops (a backward branch
and the label it jumps to) that issue the most tensor-core instructions (HGMMA, HMMA);
its instructions are counted by opcode, predicates dropped, sub-opcodes kept where they
tell shifts and moves from multiplies (IMAD.SHL, IMAD.MOV).

    PYTHONPATH=python python benchmarks/sass_loop.py              # the fused A16Wx prefill kernel, each weight type
    PYTHONPATH=python python benchmarks/sass_loop.py a16wx-decode             # its m = 1 decode kernel
    PYTHONPATH=python python benchmarks/sass_loop.py flash-attention-hopper --top 30

Instructions are counted as laid out: both sides of a branch inside the loop count (the
attention's masking, skipped at run time on the blocks that need no mask, among them).
Beside that count, the path a trip takes when every cp.async tile lies inside its tensor
(hot_path: without each copy's bounds-tested twin).

Needs nvdisasm: the CUDA toolkit's, or `pip install nvidia-cuda-nvdisasm` (a test extra).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

TENSOR_CORE_OPS = ("HGMMA", "HMMA")

_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_BRANCH = re.compile(r"\bBRA(?:\.[A-Z.]+)?\s+(?:!?U?P[T0-9]+,\s*)?`\((\.L_x_\d+)\)")  # BRA [P0,] `(.L_x_N)
_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")


def find_nvdisasm() -> Optional[str]:
    """nvdisasm on PATH, in the pip wheel (nvidia/cu*/bin) or under /usr/local/cuda."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    roots = []
    try:
        import nvidia  # the namespace package of NVIDIA's pip wheels

        roots += list(nvidia.__path__)
    except ImportError:
        pass
    for root in roots:
        for candidate in sorted(glob.glob(os.path.join(root, "*", "bin", "nvdisasm"))):
            if os.access(candidate, os.X_OK):
                return candidate
    candidate = "/usr/local/cuda/bin/nvdisasm"
    return candidate if os.access(candidate, os.X_OK) else None


def disassemble(cubin: bytes, nvdisasm: Optional[str] = None) -> str:
    """The SASS of a cubin, as nvdisasm prints it (labels and `(.L_x_N) branch targets)."""
    tool = nvdisasm or find_nvdisasm()
    if tool is None:
        raise FileNotFoundError("nvdisasm not found: install the CUDA toolkit or `pip install nvidia-cuda-nvdisasm`")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, f.name], check=True, capture_output=True, text=True).stdout


def parse(sass: str) -> Tuple[List[Tuple[int, str]], Dict[str, int]]:
    """(instructions as (address, text), label -> address of the instruction after it)."""
    instructions, labels, pending = [], {}, []
    for line in sass.splitlines():
        label = _LABEL.match(line.strip())
        if label:
            pending.append(label.group(1))
            continue
        match = _INSTRUCTION.match(line)
        if match:
            address = int(match.group(1), 16)
            for name in pending:
                labels[name] = address
            pending = []
            instructions.append((address, match.group(2)))
    return instructions, labels


def opcode(text: str) -> str:
    """The opcode of one instruction: predicate dropped; IMAD's and SHF's sub-opcode kept
    (IMAD.SHL and IMAD.MOV are shifts and moves, not multiplies), others cut at the dot."""
    name = _PREDICATE.sub("", text).split()[0]
    head, _, rest = name.partition(".")
    if head in ("IMAD", "SHF") and rest:
        return f"{head}.{rest.split('.')[0]}"
    return head


def main_loop(sass: str, markers=TENSOR_CORE_OPS) -> List[Tuple[int, str]]:
    """The instructions of the main loop: of the loops (a backward branch and the range of
    addresses back to its target) that issue the most of `markers`, the shortest; empty
    when no loop issues any. Most, then shortest: ptxas lays slow paths (an mbarrier
    wait's retry, a division's slow path) out after the kernel and branches back into
    the loop from there, which makes ranges that hold part of the loop's body."""
    instructions, labels = parse(sass)
    best, best_key = [], None
    for address, text in instructions:
        branch = _BRANCH.search(text)
        if not branch or labels.get(branch.group(1), address + 1) > address:
            continue
        start = labels[branch.group(1)]
        body = [(a, t) for a, t in instructions if start <= a <= address]
        tensor = sum(opcode(t) in markers for _, t in body)
        key = (-tensor, len(body))
        if tensor and (best_key is None or key < best_key):
            best, best_key = body, key
    return best


_SIZED_COPY = re.compile(r"^LDGSTS\S*\s.*\],\s*!?(?:P[T0-9]+|R\d+)$")  # src-size: a predicate or register


def _blocks(body: List[Tuple[int, str]], labels: Dict[str, int]) -> List[List[Tuple[int, str]]]:
    """The loop's straight runs: a new one at each branch target and after each branch."""
    targets = set(labels.values())
    blocks: List[List[Tuple[int, str]]] = []
    for address, text in body:
        if not blocks or address in targets or _BRANCH.search(blocks[-1][-1][1]):
            blocks.append([])
        blocks[-1].append((address, text))
    return blocks


def hot_path(sass: str, body: List[Tuple[int, str]]) -> List[Tuple[int, str]]:
    """The loop without the bounds-tested twin of each cp.async tile copy: the run whose
    copies all carry a source size (a tile that may cross its tensor's edge) where the loop
    also has a run with as many unguarded untested copies (the branch a tile wholly in
    bounds takes; codegen's whole-tile test picks one of the two). What a trip issues
    when every tile is inside its tensor."""
    _, labels = parse(sass)

    def copies(block):
        unguarded = [_PREDICATE.sub("", t) for _, t in block if opcode(t) == "LDGSTS" and not _PREDICATE.match(t)]
        return unguarded if len(unguarded) == sum(opcode(t) == "LDGSTS" for _, t in block) else []

    blocks = _blocks(body, labels)
    whole = collections.Counter(len(c) for c in map(copies, blocks) if c and not any(map(_SIZED_COPY.match, c)))
    kept = []
    for block in blocks:
        c = copies(block)
        if c and all(map(_SIZED_COPY.match, c)) and whole[len(c)] > 0:
            whole[len(c)] -= 1
            continue
        kept += block
    return kept


def mix(body: List[Tuple[int, str]]) -> collections.Counter:
    return collections.Counter(opcode(text) for _, text in body)


def report(name: str, cubin: bytes, top: int, nvdisasm: Optional[str] = None) -> collections.Counter:
    sass = disassemble(cubin, nvdisasm)
    body = main_loop(sass)
    counts, hot = mix(body), len(hot_path(sass, body))
    tensor = sum(counts[op] for op in TENSOR_CORE_OPS)
    print(f"{name}: {sum(counts.values())} instructions a trip, {tensor} on the tensor cores"
          + (f"; {hot} with every copied tile inside its tensor" if hot < len(body) else ""))
    print("    " + ", ".join(f"{op} {n}" for op, n in counts.most_common(top)))
    return counts


def build(script, args, arch: str) -> bytes:
    """The cubin of `script` compiled for `args` (its aligned build) for `arch`."""
    from tilus import _C

    generated = _C.generate_cuda(script.compile(*args).program, True, arch)
    return _C.runtime.compile_report(generated["source"], generated["name"], arch, [], None)["cubin"]


def _example(name: str):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import load_example

    return load_example(name)


def a16wx_hopper_cubins(arch: str):
    """(name, cubin) of the fused A16Wx prefill kernel (examples/matmul_a16wx_hopper.py) for
    each weight type, at the configurations its tests compile."""
    import torch

    from tilus import float6_e3m2, float8_e4m3, float16, int3b, int8, uint4b

    hx = _example("matmul_a16wx_hopper")
    half, codes = torch.zeros(8, dtype=torch.float16), torch.zeros(8, dtype=torch.uint8)
    for w_dtype, has_zero, stages in ((uint4b, True, 4), (int8, False, 4), (float8_e4m3, False, 4),
                                      (int3b, False, 3), (float6_e3m2, False, 5)):
        kernel = hx.MatmulA16WxHopper(float16, w_dtype, 128, has_zero, block_m=256, stages=stages, group_m=8,
                                      num_blocks=132)
        yield (f"MatmulA16WxHopper {w_dtype.name}{' (zero points)' if has_zero else ''}",
               build(kernel, (4096, 4096, 4096, half, codes, half, half, half), arch))


def flash_attention_hopper_cubins(arch: str):
    """(name, cubin) of examples/flash_attention_hopper.py (32 heads, 8 KV heads, d 128,
    fp16) in its tuning space's configurations, causal and not."""
    import torch

    from tilus import float16

    fah = _example("flash_attention_hopper")
    q = torch.zeros(1, 8, 32, 128, dtype=torch.float16)
    kv = torch.zeros(1, 8, 8, 128, dtype=torch.float16)
    for causal in (False, True):
        for stages, epilogue, block_kv in fah.CONFIGS:
            kernel = fah.FlashAttentionHopper(float16, 32, 8, 128, causal, stages=stages, epilogue=epilogue,
                                              block_kv=block_kv)
            yield (f"FlashAttentionHopper {'causal' if causal else 'full'} stages {stages} {epilogue} "
                   f"block_kv {block_kv}", build(kernel, (1, 4096, q, kv, kv, q), arch))


def a16wx_decode_kernel(w_dtype, has_zero: bool = False):
    """(kernel, args) of the A16Wx decode kernel (examples/matmul_a16wx.py, mma.sync) for
    `w_dtype` in the 8-row tile the tuner picks at m = 1 on the large weights (128
    columns, k-steps of 128, split 4, 2 warps, 3 stages, the k loop unrolled by the ring),
    at 14336x4096; uint8 zero points with has_zero."""
    import torch

    from tilus import float16, uint8

    ex = _example("matmul_a16wx")
    ptr = torch.zeros(8, dtype=torch.uint8)
    kernel = ex.MatmulA16Wx(float16, w_dtype, 128, has_zero, block_m=8, block_n=128, block_k=128, split_k=4,
                            num_warps=2, num_stages=3, zero_dtype=uint8 if has_zero else None, static_stages=None)
    return kernel, (1, 14336, 4096, ptr, ptr, ptr, ptr, ptr)


def a16wx_decode_cubins(arch: str):
    """(name, cubin) of a16wx_decode_kernel for each weight type."""
    from tilus import float6_e3m2, float8_e4m3, int3b, int8, uint4b

    for w_dtype, has_zero in ((uint4b, True), (int8, False), (float8_e4m3, False), (int3b, False),
                              (float6_e3m2, False)):
        yield (f"MatmulA16Wx {w_dtype.name}{' (uint8 zero points)' if has_zero else ''} m=1",
               build(*a16wx_decode_kernel(w_dtype, has_zero), arch))


def loop_mix(cubin: bytes, nvdisasm: Optional[str] = None, hot: bool = False) -> collections.Counter:
    """The opcode counts of a cubin's main loop (`hot`: its hot_path)."""
    sass = disassemble(cubin, nvdisasm)
    body = main_loop(sass)
    return mix(hot_path(sass, body) if hot else body)


KERNELS = {"a16wx-hopper": a16wx_hopper_cubins, "a16wx-decode": a16wx_decode_cubins,
           "flash-attention-hopper": flash_attention_hopper_cubins}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", nargs="?", default="a16wx-hopper", choices=sorted(KERNELS))
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--top", type=int, default=16, help="how many opcodes to list")
    args = parser.parse_args(argv)
    tool = find_nvdisasm()
    if tool is None:
        sys.exit("nvdisasm not found: install the CUDA toolkit or `pip install nvidia-cuda-nvdisasm`")
    for name, cubin in KERNELS[args.kernel](args.arch):
        report(name, cubin, args.top, tool)


if __name__ == "__main__":
    main()
