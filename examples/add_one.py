"""Add one to every element: the first program of the Tilus Script docs.

    python examples/add_one.py            # CPU tensors: runs in the tilus interpreter
    python examples/add_one.py --cuda     # CUDA tensors: runs on the GPU
"""

import sys

import torch

import tilus
from tilus import float32, int32
from tilus.utils import cdiv


class AddOneKernel(tilus.Script):
    def __init__(self, block_n, warps):
        super().__init__()
        self.block_n: int = block_n
        self.warps: int = warps

    def __call__(self, n: int32, a_ptr: ~float32, b_ptr: ~float32):
        self.attrs.blocks = cdiv(n, self.block_n)  # define the number of thread blocks
        self.attrs.warps = self.warps  # define the number of warps per block

        # get the offset for the current block
        offset = self.blockIdx.x * self.block_n

        # create two global tensors for input and output, given their pointers
        ga = self.global_view(a_ptr, shape=[n], dtype=float32)
        gb = self.global_view(b_ptr, shape=[n], dtype=float32)

        # load the inputs from global memory into a register tensor
        a = self.load_global(ga, offsets=[offset], shape=[self.block_n])

        # perform the computation: add 1 to each element in the register tensor
        b = a + 1.0

        # store the result back to global memory
        self.store_global(gb, b, offsets=[offset])


def main(device: str = "cpu"):
    kernel = AddOneKernel(block_n=128, warps=4)

    n = 16
    a = torch.arange(n, dtype=torch.float32, device=device)
    b = torch.empty_like(a)

    kernel(n, a, b)

    print(a)
    print(b)


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
