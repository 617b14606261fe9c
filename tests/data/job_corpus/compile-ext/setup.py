from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="fused_ops",
    ext_modules=[CUDAExtension("fused_ops", ["csrc/fused.cpp", "csrc/fused_kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
