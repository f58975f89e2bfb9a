# Spack package for ZeroShard. Copy it into a Spack repository as
# packages/zeroshard/package.py, then: spack install zeroshard +mpi
#
# Each variant maps to a configure option that exists (tests/system/install checks
# that), so what Spack asks for is what configure builds, or it fails.

from spack.package import *


class Zeroshard(AutotoolsPackage):
    """ZeRO, the Zero Redundancy Optimizer, as MPI-style C middleware:
    all-gather, reduce-scatter, all-reduce, broadcast and barrier over UCX,
    bootstrapped by MPI, PMIx or a TCP store, with a zsh_ C API."""

    homepage = "https://github.com/zeroshard/zeroshard"
    git = "https://github.com/zeroshard/zeroshard.git"

    version("main", branch="main")

    variant("mpi", default=True, description="Build the MPI tests and the <zeroshard/mpi.h> bootstrap examples")
    variant("pmix", default=True, description="Bootstrap zsh_comm_init() through PMIx launchers (mpirun, srun)")
    variant("cuda", default=False, description="GPU buffers through the CUDA runtime")
    variant("nccl", default=False, description="GPU collectives through NCCL")
    variant("python", default=True,
            description="The Python package zeroshard (zeroshard.Comm, zeroshard.Optimizer); "
                        "with py-torch at run time, the torch.distributed backend zsh and ZeRO "
                        "for torch modules")

    conflicts("+nccl", when="~cuda", msg="NCCL needs CUDA")

    # A git checkout has no configure script yet.
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("ucx@1.10:")
    depends_on("hwloc@2:")
    depends_on("pmix", when="+pmix")
    depends_on("mpi", when="+mpi")
    depends_on("cuda", when="+cuda")
    depends_on("nccl", when="+nccl")
    depends_on("googletest", type="test")
    extends("python", when="+python")
    depends_on("python@3.8:", when="+python", type=("build", "run"))
    depends_on("py-numpy", when="+python", type=("build", "run"))
    depends_on("py-pybind11", when="+python", type="build")

    def autoreconf(self, spec, prefix):
        which("sh")("./autogen.sh")

    def setup_build_environment(self, env):
        # configure finds MPI through mpi-c.pc, which not every MPI provides;
        # pkg-config's own override variables work for all of them.
        if self.spec.satisfies("+mpi"):
            mpi = self.spec["mpi"]
            env.set("MPI_CFLAGS", mpi.headers.cpp_flags)
            env.set("MPI_LIBS", mpi.libs.ld_flags)
        # configure takes the interpreter from PYTHON, else /usr/bin/python3.
        if self.spec.satisfies("+python"):
            env.set("PYTHON", self.spec["python"].command.path)

    def configure_args(self):
        spec = self.spec
        args = []
        args.extend(self.with_or_without("mpi"))
        args.extend(self.with_or_without("pmix"))
        args.extend(self.enable_or_disable("python"))
        if spec.satisfies("+cuda"):
            args.append("--with-cuda={0}".format(spec["cuda"].prefix))
        else:
            args.append("--without-cuda")
        if spec.satisfies("+nccl"):
            args.append("--with-nccl={0}".format(spec["nccl"].prefix))
        else:
            args.append("--without-nccl")
        return args
