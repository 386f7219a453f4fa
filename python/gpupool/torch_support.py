"""PyTorch glue, used only when torch is importable.

use_as_cuda_allocator() makes PyTorch allocate device memory through
libgpupool's device pool (torch.cuda.memory.CUDAPluggableAllocator over the
gp_torch_alloc / gp_torch_free functions the library exports).  Pinned host
tensors come from Pool.tensor() / Buffer.torch().
"""


def use_as_cuda_allocator(library=None):
    """Install libgpupool as PyTorch's CUDA allocator.  Must run before
    PyTorch's first CUDA allocation (a PyTorch rule).  Returns the
    allocator object."""
    import torch
    from ._lib import lib
    path = library or lib._name
    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        path, "gp_torch_alloc", "gp_torch_free")
    torch.cuda.memory.change_current_allocator(allocator)
    return allocator
