"""Packaging of warpdrive-marl (import name: warp_drive)."""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).parent
version = {}
for line in (ROOT / "warp_drive" / "__init__.py").read_text().splitlines():
    if line.startswith("__version__"):
        version["v"] = line.split("=")[1].strip().strip('"')

setup(
    name="warpdrive-marl",
    version=version["v"],
    description="End-to-end multi-agent reinforcement learning on one GPU: CUDA C env steps, "
    "in-kernel sampling and resets, PyTorch A2C/PPO, all on the device.",
    long_description=(ROOT / "README.md").read_text(),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.9",
    packages=find_packages(include=["warp_drive", "warp_drive.*", "example_envs", "example_envs.*"]),
    package_data={
        "warp_drive": ["cuda/core/*.cuh", "cuda_includes/*.cu", "config/*.yaml", "training/run_configs/*.yaml", "py.typed"],
        "example_envs": ["**/*.cu", "**/*.cuh", "**/*.yaml", "**/*.md"],
    },
    include_package_data=True,
    install_requires=[
        "numpy>=1.23",
        "torch>=2.1",
        "gymnasium>=1.0",
        "pyyaml>=6.0",
        "tqdm>=4.60",
    ],
    extras_require={
        "cuda": ["pycuda>=2024.1"],
        # env steps written in Numba (env_backend="numba"); on a GPU the service kernels also need pycuda and nvcc
        # numba-cuda 0.30.4 (the newest) registers np.row_stack, which NumPy 2.5 removed: importing its
        # kernels' array support fails there (seen on the H100 machine, NumPy 2.5), hence the NumPy bound
        "numba": ["numba-cuda>=0.30", "numpy<2.5", "pycuda>=2024.1"],
        "viz": ["matplotlib>=3.6", "pillow>=9.0"],
        "lightning": ["lightning>=2.0", "pytorch_lightning>=2.0"],
        "interop": ["pettingzoo>=1.24"],
        # the API reference: python -m sphinx -W --keep-going -b html docs docs/_build/html
        "docs": ["sphinx>=7.2", "myst-parser>=2.0"],
        "dev": ["pytest>=7.0", "pytest-xdist>=3.0", "matplotlib>=3.6", "pillow>=9.0", "pettingzoo>=1.24", "tensorboard>=2.10", "lightning>=2.0",
                "pytorch_lightning>=2.0", "nbformat>=5.7",
                # the Numba backend's CPU tests run Numba kernels in its CUDA simulator (no GPU, no pycuda)
                "numba-cuda>=0.30; python_version >= '3.10'",
                # a third-party trainer run through the Gymnasium adapter in the tests (skrl 2.1 needs Python >= 3.10)
                "skrl>=2.1; python_version >= '3.10'",
                # the MPE reference implementation the MPE envs are tested against (mpe2 needs Python >= 3.10)
                "mpe2>=1.1; python_version >= '3.10'"],
    },
    entry_points={"console_scripts": ["warp-drive-train=warp_drive.cli.train:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "License :: OSI Approved :: BSD License",
        "Operating System :: POSIX :: Linux",
        "Environment :: GPU :: NVIDIA CUDA",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
