"""The old home of gpupool.torch.use_as_cuda_allocator (kept so that
`gpupool.use_as_cuda_allocator` and `gpupool.torch_support` still work);
torch is imported only when it is called.  See gpupool/torch.py."""


def use_as_cuda_allocator(library=None):
    """gpupool.torch.use_as_cuda_allocator (needs torch >= 2.0)."""
    from .torch import use_as_cuda_allocator as install
    return install(library)
