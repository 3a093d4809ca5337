"""self.cuda (Tilus 0.2's layout helpers): resolve_dot_config picks the warp grid Tilus 0.2
picks and gives tilus's mma block layouts on it; a dot laid out with them runs on the
tensor cores (layout inference accepts an accumulator on any warp grid) and computes the
right thing in the interpreter; default_register_layout and shared_layout. The mma atoms
of atomic_mma_configs against the PTX ISA's fragment tables and tilus's own atoms;
mma_dot_config's blocks, layouts and register limit, and a dot laid out by it through
shared memory in the interpreter (and as mma.sync in the generated CUDA)."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, int8, int32
from tilus.layout import local, mma_atom, mma_block_layouts, shared_row_major, spatial

helpers = tilus.Script.cuda


def _registers(m, n, k, wm, wn, a=8, b=4, c=4):
    """Operand and accumulator registers a thread holds on a wm x wn grid (m16n8k16 fp16:
    an A atom is 8 halves, B 4, C 4 floats), as Tilus 0.2 counts them."""
    rm, rn, rk = m // 16 // wm, n // 8 // wn, k // 16
    return (rm * rk * a * 2 + rk * rn * b * 2 + rm * rn * c * 4) // 4


@pytest.mark.parametrize("m, n, k, warps", [(32, 32, 16, 2), (32, 64, 32, 4), (64, 64, 16, 2), (128, 128, 32, 8),
                                            (16, 256, 64, 4)])
def test_the_grid_with_the_fewest_registers_and_tilus_layouts_on_it(m, n, k, warps):
    cfg = helpers.resolve_dot_config(float16, float32, m=m, n=n, k=k, num_warps=warps)
    grids = [(wm, warps // wm) for wm in range(1, warps + 1)
             if warps % wm == 0 and (m // 16) % wm == 0 and (n // 8) % (warps // wm) == 0]
    best = min(grids, key=lambda g: _registers(m, n, k, *g))  # the first of equals, as Tilus 0.2
    ref = mma_block_layouts("m16n8k16", m, n, k, warps, warps_m=best[0])
    assert (cfg.la, cfg.lb, cfg.lc) == (ref["a"], ref["b"], ref["c"])
    assert (cfg.m, cfg.n, cfg.k, cfg.num_warps) == (m, n, k, warps)
    assert cfg.lb_T.shape == [n, k] and cfg.lb_T.coords(5, 3) == cfg.lb.coords(5, 3)[::-1]


def test_warp_grid_given_and_other_types():
    cfg = helpers.resolve_dot_config(bfloat16, float32, m=64, n=64, k=32, warp_m=4, warp_n=1)
    assert cfg.num_warps == 4 and cfg.lc == mma_block_layouts("m16n8k16", 64, 64, 32, 4, warps_m=4)["c"]
    cfg = helpers.resolve_dot_config(int8, int32, m=32, n=32, k=64, num_warps=2)
    assert cfg.la.shape == [32, 64]


def test_refusals_name_the_reason():
    with pytest.raises(ValueError, match="no mma for float32 operands"):
        helpers.resolve_dot_config(float32, float32, m=32, n=32, k=16, num_warps=1)
    with pytest.raises(ValueError, match="multiples"):
        helpers.resolve_dot_config(float16, float32, m=30, n=32, k=16, num_warps=1)
    with pytest.raises(ValueError, match="no grid of 3 warps"):
        helpers.resolve_dot_config(float16, float32, m=32, n=32, k=16, num_warps=3)
    with pytest.raises(ValueError, match="registers a thread"):
        helpers.resolve_dot_config(float16, float32, m=256, n=256, k=64, num_warps=1)
    with pytest.raises(ValueError, match="give num_warps"):
        helpers.resolve_dot_config(float16, float32, m=32, n=32, k=16, warp_m=1)


class HandLaidDot(tilus.Script):
    """C = A @ B with every tile laid out by resolve_dot_config, as Tilus 0.2 programs do."""

    def __init__(self, bm, bn, bk, warps):
        super().__init__()
        self.bm, self.bn, self.bk, self.warps = bm, bn, bk, warps
        self.mma = self.cuda.resolve_dot_config(float16, float32, m=bm, n=bn, k=bk, num_warps=warps)

    def __call__(self, m: int32, n: int32, k: int32, a: ~float16, b: ~float16, c: ~float32):
        self.attrs.blocks = [(m + self.bm - 1) // self.bm, (n + self.bn - 1) // self.bn]
        self.attrs.warps = self.warps
        ga = self.global_view(a, dtype=float16, shape=[m, k])
        gb = self.global_view(b, dtype=float16, shape=[k, n])
        acc = self.register_tensor(dtype=float32, shape=[self.bm, self.bn], layout=self.mma.lc, init=0.0)
        for kk in range(0, k, self.bk):
            ta = self.load_global(ga, offsets=[self.blockIdx.x * self.bm, kk], shape=[self.bm, self.bk])
            tb = self.load_global(gb, offsets=[kk, self.blockIdx.y * self.bn], shape=[self.bk, self.bn])
            self.annotate_layout(ta, self.mma.la)
            self.annotate_layout(tb, self.mma.lb)
            self.dot(ta, tb, acc, out=acc)
        gc = self.global_view(c, dtype=float32, shape=[m, n])
        self.store_global(gc, acc, offsets=[self.blockIdx.x * self.bm, self.blockIdx.y * self.bn])


@pytest.mark.parametrize("cfg", [(32, 32, 16, 2), (64, 64, 16, 2), (32, 128, 16, 8)])
def test_a_dot_on_tilus_02s_grid_runs_on_the_tensor_cores(cfg):
    """These grids are not the one tilus would choose (checked): the accumulator the user
    fixed still plans an mma dot, with no layout conversion and no FMA fallback."""
    kernel = HandLaidDot(*cfg)
    assert kernel.mma.lc != mma_block_layouts("m16n8k16", cfg[0], cfg[1], cfg[2], cfg[3])["c"]
    g = torch.Generator().manual_seed(sum(cfg))
    a = torch.randn(70, 48, generator=g).half()
    b = torch.randn(48, 90, generator=g).half()
    c = torch.full((70, 90), float("nan"))
    kernel(70, 90, 48, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    src = tilus._C.generate_cuda(kernel.compile(70, 90, 48, a, b, c).program, True, "sm_80")["source"]
    assert "mma_m16n8k16" in src and "fmaf" not in src and "layout conversion" not in src


def test_default_register_layout_and_shared_layout():
    lay = helpers.default_register_layout(4, float16, [64, 256])  # 128 threads, 128 elements each
    # 8 consecutive halves (16 bytes) a thread; 32 threads along the 32 chunks of a row, 4 rows
    # of threads, the 16 row blocks repeated in registers
    assert lay == local(16, 1) * spatial(4, 32) * local(1, 8)
    for t, l in [(0, 0), (1, 0), (33, 9), (127, 127)]:
        assert tuple(lay.coords(t, l)) == ((l // 8) * 4 + t // 32, (t % 32) * 8 + l % 8)
    assert tuple(helpers.default_register_layout(1, float32, [8, 8], vector_size=2).coords(1, 1)) == (0, 3)
    with pytest.raises(ValueError, match="vector_size 4"):
        helpers.default_register_layout(1, float32, [4, 8], vector_size=4)
    with pytest.raises(RuntimeError, match="do not spread"):
        helpers.default_register_layout(4, float16, [3, 5])
    assert helpers.shared_layout([16, 32]) == shared_row_major(16, 32)


# ---- Tilus 0.2's atomic_mma_configs and mma_dot_config ------------------------------------

atoms = helpers.atomic_mma_configs


def _ptx_fragments(shape, operand_bits):
    """The mma.sync fragments as the PTX ISA's tables give them ("Matrix fragments for
    mma.m16n8k16 / m16n8k32 / m8n8k16"), per lane and register element: lane = 4 * g + t
    (g the group, t the thread in the group); `e` an element index over the fragment's
    registers. Returns {"a"|"b"|"c": f(lane, e) -> (row, col)}."""
    def split(lane):
        return lane // 4, lane % 4

    per_reg = 32 // operand_bits  # operand elements in one 32-bit register
    if shape == "m16n8k16" and operand_bits == 16:
        def a(lane, e):  # a0..a7: rows g (a0, a1, a4, a5) / g + 8, columns 2t.. / 2t + 8..
            g, t = split(lane)
            return g + 8 * ((e // 2) % 2), 2 * t + (e % 2) + 8 * (e // 4)

        def b(lane, e):  # b0..b3: rows 2t, 2t + 1, 2t + 8, 2t + 9, column g
            g, t = split(lane)
            return 2 * t + (e % 2) + 8 * (e // 2), g
    elif shape == "m16n8k32":
        def a(lane, e):  # a0..a15: 4 per register; registers: (g, 4t), (g+8, 4t), (g, 4t+16), (g+8, 4t+16)
            g, t = split(lane)
            reg = e // per_reg
            return g + 8 * (reg % 2), 4 * t + (e % per_reg) + 16 * (reg // 2)

        def b(lane, e):  # b0..b7: rows 4t..4t+3, then 4t+16..4t+19, column g
            g, t = split(lane)
            return 4 * t + (e % per_reg) + 16 * (e // per_reg), g
    elif shape == "m16n8k16" and operand_bits == 8:
        def a(lane, e):  # a0..a7: rows g then g + 8, columns 4t..4t+3
            g, t = split(lane)
            return g + 8 * (e // per_reg), 4 * t + e % per_reg

        def b(lane, e):  # b0..b3: rows 4t..4t+3, column g
            g, t = split(lane)
            return 4 * t + e, g
    else:  # m8n8k16, 8-bit
        def a(lane, e):
            g, t = split(lane)
            return g, 4 * t + e

        def b(lane, e):
            g, t = split(lane)
            return 4 * t + e, g

    rows_c = 16 if shape.startswith("m16") else 8

    def c(lane, e):  # c0..c3: row g (c0, c1) / g + 8 (c2, c3), columns 2t, 2t + 1
        g, t = split(lane)
        return g + 8 * (e // 2) if rows_c == 16 else g, 2 * t + e % 2

    return {"a": a, "b": b, "c": c}


ATOMS = [  # name, m, n, k, operand, accumulator, A/B/C elements a lane holds
    ("m16n8k16_f16_f32", 16, 8, 16, float16, float32, 8, 4, 4),
    ("m16n8k16_f16_f16", 16, 8, 16, float16, float16, 8, 4, 4),
    ("m16n8k16_bf16_f32", 16, 8, 16, bfloat16, float32, 8, 4, 4),
    ("m8n8k16_i8_i32", 8, 8, 16, int8, int32, 4, 4, 2),
    ("m16n8k16_i8_i32", 16, 8, 16, int8, int32, 8, 4, 4),
    ("m16n8k32_i8_i32", 16, 8, 32, int8, int32, 16, 8, 4),
]


@pytest.mark.parametrize("name, m, n, k, op, acc, na, nb, nc", ATOMS)
def test_atomic_mma_configs_are_the_ptx_fragments(name, m, n, k, op, acc, na, nb, nc):
    atom = getattr(atoms, name)
    assert (atom.m, atom.n, atom.k, atom.vec_k) == (m, n, k, 1)
    assert (atom.operand_type, atom.acc_type) == (op, acc)
    assert (atom.la.shape, atom.lb.shape, atom.lc.shape) == ([m, k], [k, n], [m, n])
    assert (atom.la.local_size, atom.lb.local_size, atom.lc.local_size) == (na, nb, nc)
    assert atom.la.num_threads == atom.lb.num_threads == atom.lc.num_threads == 32
    frag = _ptx_fragments(name.split("_")[0], op.bits)
    for key, layout in (("a", atom.la), ("b", atom.lb), ("c", atom.lc)):
        for lane in range(32):
            for e in range(layout.local_size):
                assert tuple(layout.coords(lane, e)) == frag[key](lane, e), (key, lane, e)


@pytest.mark.parametrize("name, kind", [("m16n8k16_f16_f32", "m16n8k16"), ("m16n8k16_f16_f16", "m16n8k16"),
                                        ("m16n8k16_bf16_f32", "m16n8k16"), ("m16n8k32_i8_i32", "m16n8k32")])
def test_atomic_mma_configs_coincide_with_tilus_atoms(name, kind):
    atom, ours = getattr(atoms, name), mma_atom(kind)
    assert (atom.m, atom.n, atom.k) == (ours["m"], ours["n"], ours["k"])
    assert (atom.la, atom.lb, atom.lc) == (ours["a"], ours["b"], ours["c"])


def test_from_dtypes_vec_k_and_identity():
    assert atoms.from_dtypes(float16, float32) is atoms.m16n8k16_f16_f32
    assert atoms.from_dtypes(float16, float16) is atoms.m16n8k16_f16_f16
    assert atoms.from_dtypes(bfloat16, float32) is atoms.m16n8k16_bf16_f32
    assert atoms.from_dtypes(int8, int32) is atoms.m16n8k32_i8_i32
    with pytest.raises(ValueError, match="no mma for float32 operands"):
        atoms.from_dtypes(float32, float32)
    # vec_k = 2: two k16 steps in one fragment, a lane's pairs side by side
    from tilus.lang.cuda_helpers import AtomicMmaConfig

    v2 = AtomicMmaConfig.m16n8k16_f16_f32(2)
    assert v2.k == 16 and v2.vec_k == 2 and v2.la.shape == [16, 32] and v2.lb.shape == [32, 8]
    assert v2.la.local_size == 16 and v2.lc == atoms.m16n8k16_f16_f32.lc
    assert v2 != atoms.m16n8k16_f16_f32 and AtomicMmaConfig.m16n8k16_f16_f32(1) == atoms.m16n8k16_f16_f32
    assert len({atoms.m16n8k16_f16_f32, AtomicMmaConfig.m16n8k16_f16_f32(1), v2}) == 2
    assert len(AtomicMmaConfig.all_configs()) == 24


def _lane_elements(layout, thread):
    return {tuple(layout.coords(thread, e)) for e in range(layout.local_size)}


@pytest.mark.parametrize("ws, wr", [((1, 1), (1, 1, 1)), ((2, 2), (2, 4, 2)), ((1, 4), (2, 4, 1)),
                                    ((4, 1), (1, 2, 3)), ((2, 4), (1, 2, 2))])
def test_mma_dot_config_block_and_layouts(ws, wr):
    atom = atoms.m16n8k16_f16_f32
    cfg = helpers.mma_dot_config(atomic_mma=atom, warp_spatial=ws, warp_repeat=wr)
    (wsm, wsn), (wrm, wrn, wrk) = ws, wr
    m, n, k = 16 * wsm * wrm, 8 * wsn * wrn, 16 * wrk
    assert (cfg.m, cfg.n, cfg.k, cfg.num_warps) == (m, n, k, wsm * wsn)
    assert (cfg.operand_dtype, cfg.accumulator_dtype) == (float16, float32)
    assert (cfg.la.shape, cfg.lb.shape, cfg.lc.shape) == ([m, k], [k, n], [m, n])
    # the same layouts as tilus's block layouts on that warp grid
    ref = mma_block_layouts("m16n8k16", m, n, k, wsm * wsn, warps_m=wsm)
    assert (cfg.la, cfg.lb, cfg.lc) == (ref["a"], ref["b"], ref["c"])
    # independently: warp w = (w // wsn, w % wsn) holds the atoms (i, j) of its C tile, its
    # registers row-major over the repetitions, each an atom fragment
    for w in range(wsm * wsn):
        wi, wj = divmod(w, wsn)
        for lane in (0, 5, 31):
            t = 32 * w + lane
            for r in range(cfg.lc.local_size):
                rep, e = divmod(r, atom.lc.local_size)
                ri, rj = divmod(rep, wrn)
                row, col = atom.lc.coords(lane, e)
                assert tuple(cfg.lc.coords(t, r)) == ((wi * wrm + ri) * 16 + row, (wj * wrn + rj) * 8 + col)
            for r in range(cfg.la.local_size):
                rep, e = divmod(r, atom.la.local_size)
                ri, rk = divmod(rep, wrk)
                row, col = atom.la.coords(lane, e)
                assert tuple(cfg.la.coords(t, r)) == ((wi * wrm + ri) * 16 + row, rk * 16 + col)
            for r in range(cfg.lb.local_size):
                rep, e = divmod(r, atom.lb.local_size)
                rk, rj = divmod(rep, wrn)
                row, col = atom.lb.coords(lane, e)
                assert tuple(cfg.lb.coords(t, r)) == (rk * 16 + row, (wj * wrn + rj) * 8 + col)
            # a grid row shares A, a grid column B
            assert _lane_elements(cfg.la, t) == _lane_elements(cfg.la, 32 * (wi * wsn) + lane)
            assert _lane_elements(cfg.lb, t) == _lane_elements(cfg.lb, 32 * wj + lane)
    assert (cfg.lb_T.shape, cfg.lb_T.coords(3, 1)) == ([n, k], cfg.lb.coords(3, 1)[::-1])


def test_mma_dot_config_other_atoms_and_vec_k():
    from tilus.lang.cuda_helpers import AtomicMmaConfig

    cfg = helpers.mma_dot_config(atoms.m16n8k32_i8_i32, (2, 1), (1, 2, 2))
    assert (cfg.m, cfg.n, cfg.k, cfg.num_warps) == (32, 16, 64, 2) and cfg.accumulator_dtype == int32
    assert cfg.la == mma_block_layouts("m16n8k32", 32, 16, 64, 2, warps_m=2)["a"]
    cfg = helpers.mma_dot_config(AtomicMmaConfig.m16n8k16_bf16_f32(2), (1, 2), (1, 1, 2))
    assert (cfg.m, cfg.n, cfg.k) == (16, 16, 64) and cfg.la.shape == [16, 64] and cfg.lb.shape == [64, 16]
    cfg = helpers.mma_dot_config(atoms.m8n8k16_i8_i32, (1, 1), (2, 1, 1))
    assert (cfg.m, cfg.n, cfg.k) == (16, 8, 16) and cfg.lc.local_size == 4


def test_mma_dot_config_refuses_too_many_registers():
    # m16n8k16 f16 -> f32, wr = (8, 8, 1): A 8*1*4, B 8*1*2, C 8*8*4 = 304 registers
    with pytest.raises(ValueError, match=r"304 registers a thread .* the limit is 223"):
        helpers.mma_dot_config(atoms.m16n8k16_f16_f32, (1, 1), (8, 8, 1))
    # 223 is still allowed: the limit is Tilus 0.2's (registers >= 256 - 32 refused)
    assert atoms.m16n8k16_f16_f32.registers((4, 12, 1)) == 4 * 4 + 12 * 2 + 48 * 4 == 232
    with pytest.raises(ValueError, match="232 registers"):
        helpers.mma_dot_config(atoms.m16n8k16_f16_f32, (1, 1), (4, 12, 1))
    assert helpers.mma_dot_config(atoms.m16n8k16_f16_f32, (1, 1), (4, 8, 2)).m == 64  # 16+16+128 = 160 + 16
    with pytest.raises(ValueError, match="positive"):
        helpers.mma_dot_config(atoms.m16n8k16_f16_f32, (0, 1), (1, 1, 1))
    with pytest.raises(TypeError, match="atomic_mma_configs"):
        helpers.mma_dot_config(mma_atom("m16n8k16"), (1, 1), (1, 1, 1))


class StagedMmaDot(tilus.Script):
    """C = A @ B through shared memory, every tile laid out by mma_dot_config: the operands
    read from shared memory with load_shared(layout=...), the accumulator annotated (and
    the shared tiles too, as Tilus 0.2 programs do)."""

    def __init__(self, atom, warp_spatial, warp_repeat):
        super().__init__()
        self.mma = self.cuda.mma_dot_config(atomic_mma=atom, warp_spatial=warp_spatial,
                                            warp_repeat=warp_repeat)
        self.op, self.acc = atom.operand_type, atom.acc_type

    def __call__(self, m: int32, n: int32, k: int32, a_ptr: tilus.void_p, b_ptr: tilus.void_p,
                 c_ptr: tilus.void_p):
        bm, bn, bk = self.mma.m, self.mma.n, self.mma.k
        self.attrs.blocks = [(m + bm - 1) // bm, (n + bn - 1) // bn]
        self.attrs.warps = self.mma.num_warps
        ga = self.global_view(a_ptr, dtype=self.op, shape=[m, k])
        gb = self.global_view(b_ptr, dtype=self.op, shape=[k, n])
        sa = self.shared_tensor(dtype=self.op, shape=[bm, bk])
        sb = self.shared_tensor(dtype=self.op, shape=[bk, bn])
        acc = self.register_tensor(dtype=self.acc, shape=[bm, bn], init=0)
        for k0 in range(0, k, bk):
            self.copy_async(src=ga, dst=sa, offsets=[self.blockIdx.x * bm, k0])
            self.copy_async(src=gb, dst=sb, offsets=[k0, self.blockIdx.y * bn])
            self.copy_async_commit_group()
            self.copy_async_wait_group(0)
            self.sync()
            a = self.load_shared(sa, layout=self.mma.la)
            b = self.load_shared(sb, layout=self.mma.lb)
            self.dot(a, b, acc, out=acc)
            self.sync()
        gc = self.global_view(c_ptr, dtype=self.acc, shape=[m, n])
        self.store_global(gc, acc, offsets=[self.blockIdx.x * bm, self.blockIdx.y * bn])
        self.annotate_layout(acc, self.mma.lc)
        self.annotate_layout(sa, shared_row_major(bm, bk))
        self.annotate_layout(sb, shared_row_major(bk, bn))


@pytest.mark.parametrize("name, ws, wr", [("m16n8k16_f16_f32", (2, 2), (1, 2, 2)),
                                          ("m16n8k16_bf16_f32", (1, 2), (2, 1, 1)),
                                          ("m16n8k32_i8_i32", (2, 1), (1, 2, 1))])
def test_a_dot_laid_out_by_mma_dot_config_in_the_interpreter(name, ws, wr):
    kernel = StagedMmaDot(getattr(atoms, name), ws, wr)
    g = torch.Generator().manual_seed(7)
    m, n, k = 50, 40, 96
    if name.startswith("m16n8k32"):
        a = torch.randint(-8, 8, (m, k), generator=g, dtype=torch.int8)
        b = torch.randint(-8, 8, (k, n), generator=g, dtype=torch.int8)
        c = torch.full((m, n), -1, dtype=torch.int32)
        kernel(m, n, k, a, b, c)
        assert torch.equal(c, a.int() @ b.int())
    else:
        dt = torch.bfloat16 if "bf16" in name else torch.float16
        a = torch.randn(m, k, generator=g).to(dt)
        b = torch.randn(k, n, generator=g).to(dt)
        c = torch.full((m, n), float("nan"))
        kernel(m, n, k, a, b, c)
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    # the layouts are mma.sync fragments: on the GPU the dot is the atom's mma, the
    # operands come straight from shared memory, nothing is converted
    src = tilus._C.generate_cuda(kernel.compile(m, n, k, a, b, c).program, True, "sm_80")["source"]
    mma = {"m16n8k16_f16_f32": "mma_m16n8k16_f16_f32", "m16n8k16_bf16_f32": "mma_m16n8k16_bf16_f32",
           "m16n8k32_i8_i32": "mma_m16n8k32_s8_s32"}[name]
    assert mma in src and "layout conversion" not in src and "fmaf" not in src


def test_annotating_a_shared_tensor_checks_its_shape():
    class Wrong(tilus.Script):
        def __call__(self, x: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            s = self.shared_tensor(dtype=float32, shape=[32, 4])
            self.annotate_layout(s, shared_row_major(4, 32))

    with pytest.raises(ValueError, match=r"layout's shape \[4, 32\] differs from the shared tensor's \[32, 4\]"):
        Wrong()(torch.zeros(4))

    class RegisterLayoutOnShared(tilus.Script):
        def __call__(self, x: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            s = self.shared_tensor(dtype=float32, shape=[32, 4])
            self.annotate_layout(s, spatial(32, 1).local(1, 4))

    with pytest.raises(TypeError, match="a shared tensor takes a SharedLayout"):
        RegisterLayoutOnShared()(torch.zeros(4))
