# temporary debugging script (deleted after use)
import ctypes, os, subprocess, sys, tempfile, re
sys.path.insert(0, os.getcwd())
from tests.codegen.nvrtc_ctypes import device_headers, load_nvrtc
from tests.codegen.test_device_headers_gpu import Gpu
import numpy as np
gpu = Gpu()
nv, _ = load_nvrtc()
print(nv.path)
V = {
 "A": 'asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(x));',
 "B": 'unsigned u; asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b32 %0, {t, t}; }" : "=r"(u) : "f"(x)); b = (unsigned short)u;',
 "D": 'unsigned u; asm("cvt.rn.f16x2.f32 %0, %1, %1;" : "=r"(u) : "f"(x)); b = (unsigned short)u;',
 "E": 'unsigned u; asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; cvt.u32.u16 %0, t; }" : "=r"(u) : "f"(x)); b = (unsigned short)u;',
 "F": 'asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(b) : "f"(x));',
 "G": 'unsigned u; asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b32 %0, {t, 0}; }" : "=r"(u) : "f"(x)); b = (unsigned short)u;',
 "BF_A": 'asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(x));',
 "BF_B": 'unsigned u; asm("{ .reg .b16 t; cvt.rn.bf16.f32 t, %1; mov.b32 %0, {t, t}; }" : "=r"(u) : "f"(x)); b = (unsigned short)u;',
 "INT_A": 'asm("cvt.rn.f16.s32 %0, %1;" : "=h"(b) : "r"((int)x));',
 "INT_B": 'unsigned u; asm("{ .reg .b16 t; cvt.rn.f16.s32 t, %1; mov.b32 %0, {t, t}; }" : "=r"(u) : "r"((int)x)); b = (unsigned short)u;',
}
src = "\n".join(f'extern "C" __global__ void k_{n}(const float* in, unsigned char* out) {{ float x = in[threadIdx.x]; unsigned short b; {body} memcpy(out + 8 * threadIdx.x, &b, 2); }}' for n, body in V.items())
for n in ["G"]:
    ok, log, cubin, ptx = nv.compile(src, gpu.arch, device_headers())
    if not ok:
        print("compile fail", log); src = "\n".join(l for l in src.splitlines() if "k_G(" not in l)
ok, log, cubin, ptx = nv.compile(src, gpu.arch, device_headers())
assert ok, log
with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
    f.write(cubin)
sass = subprocess.run(["/usr/local/cuda/bin/cuobjdump", "-sass", f.name], capture_output=True, text=True).stdout
for line in sass.splitlines():
    if "Function" in line or re.search(r"F2I|F2F|I2F|PRMT|STG|SHF|LOP|MOV", line):
        print(line.split("/*")[1] if "/*0" in line else line)
ins = np.array([1, 2, 3, 4.5, 300, -7, 0.25, 65504], dtype=np.float32)
for name in V:
    if f"k_{name}(" not in src: continue
    s = gpu.to_device(ins.tobytes()); out = gpu.to_device(bytes(64))
    fn = ctypes.c_void_p(); mod = ctypes.c_void_p()
    gpu.lib.cuModuleLoadData(ctypes.byref(mod), cubin); gpu.lib.cuModuleGetFunction(ctypes.byref(fn), mod, f"k_{name}".encode())
    gpu.launch(fn, (1,1,1), (8,1,1), s, out)
    print(name, [hex(x) for x in np.frombuffer(gpu.from_device(out, 64), dtype=np.uint16)[::4]])
