"""Random numbers (randint4x, randint, rand, randn) in the CPU interpreter: Philox-4x32-10
checked against the known-answer vectors of Random123 (Salmon et al., SC 2011) through an
independent Python model of the rounds, the words of every element against that model,
and the distributions for sanity."""

import math

import pytest
import torch

import tilus
from tilus import float32, int32, int64, uint32

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox_model(counter, key, rounds=10):
    """Philox-4x32-R written from the paper: S-box by two 32x32->64 multiplies, key
    schedule by the Weyl constants."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & MASK, p1 & MASK, ((p0 >> 32) ^ c3 ^ k1) & MASK, p0 & MASK
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    return [c0, c1, c2, c3]


# Random123's kat_vectors for philox4x32_10: counter, key -> output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK, MASK, MASK, MASK), (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,want", KAT)
def test_the_model_reproduces_random123_known_answers(counter, key, want):
    assert philox_model(counter, key) == list(want)


class Words(tilus.Script):
    """out[w, i] = word w of randint4x(seed, offsets[i]) (as int64), plus randint, rand and
    randn of the same offsets."""

    def __init__(self, n, offset_dtype, rounds=10, warps=2):
        super().__init__()
        self.n, self.offset_dtype, self.rounds, self.warps = n, offset_dtype, rounds, warps

    def __call__(self, seed: int64, offsets: ~int64, words: ~int64, floats: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        off = self.cast(self.load_global(self.global_view(offsets, dtype=int64, shape=[self.n]),
                                         offsets=[0], shape=[self.n]), dtype=self.offset_dtype)
        gw = self.global_view(words, dtype=int64, shape=[5, self.n])
        r0, r1, r2, r3 = self.randint4x(seed, off, n_rounds=self.rounds)
        self.store_global(gw, self.cast(r0, dtype=int64), offsets=[0, 0], dims=[1])
        self.store_global(gw, self.cast(r1, dtype=int64), offsets=[1, 0], dims=[1])
        self.store_global(gw, self.cast(r2, dtype=int64), offsets=[2, 0], dims=[1])
        self.store_global(gw, self.cast(r3, dtype=int64), offsets=[3, 0], dims=[1])
        self.store_global(gw, self.cast(self.randint(seed, off, self.rounds), dtype=int64),
                          offsets=[4, 0], dims=[1])
        gf = self.global_view(floats, dtype=tilus.float32, shape=[2, self.n])
        self.store_global(gf, self.rand(seed, off, self.rounds), offsets=[0, 0], dims=[1])
        self.store_global(gf, self.randn(seed, off, self.rounds), offsets=[1, 0], dims=[1])


def run_words(seed, offsets, offset_dtype=int64, rounds=10):
    n = offsets.numel()
    words = torch.full((5, n), -1, dtype=torch.int64)
    floats = torch.full((2, n), float("nan"))
    Words(n, offset_dtype, rounds)(seed, offsets, words, floats)
    return words, floats


def model_words(seed, offset, wide, rounds=10):
    o = offset & 0xFFFFFFFFFFFFFFFF
    counter = (o & MASK, (o >> 32) & MASK if wide else 0, 0, 0)
    return philox_model(counter, (seed & MASK, (seed >> 32) & MASK), rounds)


def test_seed_0_offset_0_is_the_first_known_answer():
    words, _ = run_words(0, torch.zeros(3, dtype=torch.int64))
    assert words[:4, 0].tolist() == list(KAT[0][2])
    assert words[4, 0].item() == KAT[0][2][0]


@pytest.mark.parametrize("seed", [0, 1, 42, 0x243F6A8885A308D3, -1])
@pytest.mark.parametrize("offset_dtype", [int32, int64, uint32])
def test_every_word_matches_the_model(seed, offset_dtype):
    n = 37
    offsets = torch.randint(-(2**40), 2**40, (n,), dtype=torch.int64)
    offsets[:3] = torch.tensor([0, 2**32 - 1, -1])
    words, _ = run_words(seed, offsets, offset_dtype)
    wide = offset_dtype == int64
    for i in range(n):
        o = offsets[i].item()
        if not wide:
            o &= MASK
        want = model_words(seed & 0xFFFFFFFFFFFFFFFF, o, wide)
        assert words[:4, i].tolist() == want, (i, o)
        assert words[4, i].item() == want[0]


def test_rounds_are_honoured():
    offsets = torch.arange(5, dtype=torch.int64)
    words, _ = run_words(7, offsets, rounds=7)
    assert words[:4, 3].tolist() == model_words(7, 3, True, rounds=7)


def test_rand_is_exactly_the_top_24_bits_and_randn_box_muller():
    n = 301
    offsets = torch.arange(n, dtype=torch.int64) * 3 + 11
    words, floats = run_words(1234, offsets)
    u = (words[0] >> 8).double() * 2.0**-24
    assert torch.equal(floats[0].double(), u)
    assert 0.0 <= floats[0].min() and floats[0].max() < 1.0
    u1 = ((words[0] >> 8) + 1).double() * 2.0**-24
    u2 = (words[1] >> 8).double() * 2.0**-24
    z = torch.sqrt(-2 * torch.log(u1)) * torch.cos(2 * math.pi * u2)
    torch.testing.assert_close(floats[1].double(), z, rtol=1e-5, atol=1e-5)


def test_the_same_seed_and_offsets_repeat_and_others_differ():
    offsets = torch.arange(64, dtype=torch.int64)
    a, fa = run_words(99, offsets)
    b, fb = run_words(99, offsets)
    c, _ = run_words(100, offsets)
    assert torch.equal(a, b) and torch.equal(fa, fb)
    assert (a != c).float().mean() > 0.99


def test_distributions():
    n = 4096
    offsets = torch.arange(n, dtype=torch.int64)
    words, floats = run_words(2024, offsets)
    u, z = floats[0].double(), floats[1].double()
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    assert abs(z.mean()) < 0.06 and abs(z.std() - 1.0) < 0.05
    # every bit of every word is set about half the time
    for w in range(4):
        bits = torch.stack([(words[w] >> b) & 1 for b in range(32)]).double().mean(dim=1)
        assert ((bits - 0.5).abs() < 0.05).all()
    # uniform histogram: chi-square with 15 degrees of freedom well under its 99.9% point
    counts = torch.bincount((u * 16).long(), minlength=16).double()
    chi2 = ((counts - n / 16) ** 2 / (n / 16)).sum().item()
    assert chi2 < 37.7


def test_errors_name_the_parameter():
    class Bad(tilus.Script):
        def __call__(self, x: ~tilus.float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            self.rand(0, self.register_tensor(dtype=tilus.float32, shape=[4], init=0.0))

    with pytest.raises(TypeError, match="offset must be an integer register tensor") as info:
        Bad()(torch.zeros(1))
    assert "test_random.py" in str(info.value)

    class BadRounds(tilus.Script):
        def __call__(self, x: ~tilus.float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            self.randint(0, self.register_tensor(dtype=int32, shape=[4], init=0), n_rounds=0)

    with pytest.raises(ValueError, match="n_rounds must be between 1 and 64"):
        BadRounds()(torch.zeros(1))
