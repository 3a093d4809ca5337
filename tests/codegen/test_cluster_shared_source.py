"""self.cluster.store_shared / load_shared compile through NVRTC for sm_90a: the view's
base address mapped to the peer once (mapa), then 16-byte st/ld.shared::cluster
(narrower where a transposed view leaves single elements); sm_80 refuses them at their
script line."""
import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
import tilus
from tests.interp.test_cluster_shared import ClusterRing, ClusterSplitSum
from tilus import _C, float32

require_nvrtc()


def _compile(kernel, args):
    return kernel_source(kernel, args, "sm_90a")


def test_store_into_the_peer_compiles_to_mapped_vector_stores():
    src = _compile(ClusterSplitSum(4, warps=2), (3, torch.zeros(12, 8, 48), torch.zeros(3, 8, 48)))
    assert "__cluster_dims__(4, 1, 1)" in src
    assert src.count("mapa.shared::cluster.u32") == 1  # the view's base, once
    assert "tilus::store_shared_cluster_vec<16>(" in src
    assert "tilus::load_shared_cluster_vec" not in src


def test_load_from_the_peer_compiles_plain_and_through_a_transposed_view():
    args = (8, torch.zeros(8, 16, 24, dtype=torch.int32), torch.zeros(8, 16, 24, dtype=torch.int32))
    assert "tilus::load_shared_cluster_vec<16>(" in _compile(ClusterRing(4), args)
    transposed = _compile(ClusterRing(4, transposed=True), args)
    assert "tilus::load_shared_cluster_vec<" in transposed and "mapa.shared::cluster.u32" in transposed


class PeerStoreOnly(tilus.Script):
    def __call__(self, out_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=float32, shape=[4, 8])
        self.cluster.store_shared(s, self.register_tensor(dtype=float32, shape=[4, 8], init=1.0), target_rank=1)
        self.free_shared(s)


def test_sm80_refuses_peer_shared_memory():
    with pytest.raises(Exception, match="cluster_store_shared needs sm_90a"):
        _C.generate_cuda(PeerStoreOnly().compile(torch.zeros(1)).program, True, "sm_80")
