# Spack package for ZeroShard, in a package repository of its own:
#   spack repo add contrib/spack/spack_repo/zeroshard
#   spack install zeroshard
# contrib/spack/install.sh does this from the source tree (docs/install-spack.md).
#
# Each variant maps to a configure option that exists (tests/system/install checks
# that), so what Spack asks for is what configure builds, or it fails. Everything
# configure would otherwise find on its own (BLAS, liburing, libaio, the Python
# package) is named either way, so the library links only what the spec holds.

from spack.package import *

try:
    # Spack >= 1.0: the build systems live in the builtin package repository.
    from spack_repo.builtin.build_systems.autotools import AutotoolsPackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ImportError:
    # Spack 0.23: spack.package above has them.
    pass


class Zeroshard(AutotoolsPackage, CudaPackage):
    """ZeRO, the Zero Redundancy Optimizer, as MPI-style C middleware:
    collectives over UCX (host) and NCCL (GPU), sharded tensors, a ZeRO stage
    0-3 optimizer with offload to host and NVMe, checkpoints, and a Python
    package with a torch.distributed backend."""

    homepage = "https://github.com/zeroshard/zeroshard"
    url = "https://github.com/zeroshard/zeroshard/releases/download/v0.1.0/zeroshard-0.1.0.tar.gz"
    git = "https://github.com/zeroshard/zeroshard.git"

    version("main", branch="main")
    # The tarball `make dist` makes (it carries configure; no autotools needed).
    version("0.1.0", sha256="be187030129f37b45dbbdd78effe71d64f8656cfbc7a71d64f0efadafd695f71")

    variant("mpi", default=True, description="Build the MPI tests and the <zeroshard/mpi.h> bootstrap examples")
    variant("pmix", default=True, description="Bootstrap zsh_comm_init() through PMIx launchers (mpirun, srun)")
    variant("nccl", default=False, description="GPU collectives through NCCL")
    variant("python", default=True,
            description="The Python package zeroshard (zeroshard.Comm, zeroshard.Optimizer); "
                        "with py-torch at run time, the torch.distributed backend zsh and ZeRO "
                        "for torch modules")
    variant("blas", default=False, description="zsh_train's matrix products through OpenBLAS (else plain loops)")
    variant("liburing", default=True, description="io_uring backend of the NVMe offload tier's I/O engine")
    variant("libaio", default=True, description="libaio backend of the NVMe offload tier's I/O engine")

    conflicts("+nccl", when="~cuda", msg="NCCL needs CUDA")
    conflicts("platform=darwin", msg="ZeroShard needs Linux (UCX, io_uring, /proc)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("pkgconfig", type="build")
    # A git checkout has no configure script yet; a release tarball has one.
    for _tool in ("autoconf", "automake", "libtool"):
        depends_on(_tool, type="build", when="@main")

    depends_on("ucx@1.10:")
    depends_on("hwloc@2:")
    # The bootstrap store's authentication; checkpoint manifests and their checksums.
    depends_on("openssl@1.1:")
    depends_on("json-c@0.13:")
    depends_on("xxhash")
    depends_on("pmix", when="+pmix")
    depends_on("mpi", when="+mpi")
    # cudaStreamGetDevice came in CUDA 12.8; nonblocking communicators in NCCL 2.14.
    # A conflict rather than depends_on("cuda@12.8:"): Spack releases that list
    # no 12.8 yet still take an external CUDA that is.
    conflicts("^cuda@:12.7", when="+cuda", msg="ZeroShard needs CUDA 12.8 or newer (cudaStreamGetDevice)")
    depends_on("nccl@2.14:", when="+nccl")
    depends_on("openblas", when="+blas")
    depends_on("liburing@2:", when="+liburing")
    depends_on("libaio", when="+libaio")
    depends_on("googletest", type="test")
    extends("python", when="+python")
    depends_on("python@3.8:", when="+python", type=("build", "run"))
    depends_on("py-numpy", when="+python", type=("build", "run"))
    depends_on("py-pybind11", when="+python", type="build")

    @when("@main")
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
        # Users' compilers warn about what the project's do not: warnings stay warnings.
        args = ["--disable-werror"]
        args.extend(self.with_or_without("mpi"))
        args.extend(self.with_or_without("pmix"))
        # --enable-python stops configure when numpy or pybind11 is missing,
        # rather than installing without the package.
        args.extend(self.enable_or_disable("python"))
        args.extend(self.with_or_without("blas"))
        args.extend(self.with_or_without("liburing"))
        args.extend(self.with_or_without("libaio"))
        if spec.satisfies("+cuda"):
            args.append("--with-cuda={0}".format(spec["cuda"].prefix))
            archs = spec.variants["cuda_arch"].value
            if archs and archs[0] != "none":
                args.append("NVCC_FLAGS={0}".format(" ".join(self.cuda_flags(archs))))
        else:
            args.append("--without-cuda")
        if spec.satisfies("+nccl"):
            args.append("--with-nccl={0}".format(spec["nccl"].prefix))
        else:
            args.append("--without-nccl")
        return args

    def check(self):
        # make check runs the whole suite: most of an hour on a small node, and
        # multi-rank jobs a build node may not allow. The install test builds,
        # installs and loads a copy from these sources with this spec's
        # dependencies, the way a user does.
        # Autotools builds in the source directory; the package (unlike its
        # builder) has no build_directory.
        build_dir = self.stage.source_path
        makefile = join_path(build_dir, "Makefile")
        with open(makefile) as f:
            version = next(l.split("=", 1)[1].strip() for l in f if l.startswith("PACKAGE_VERSION ="))
        test = join_path(self.stage.source_path, "tests", "system", "install", "run_install.sh")
        with working_dir(build_dir):
            which("bash")(test, extra_env={"abs_top_srcdir": self.stage.source_path,
                                           "abs_top_builddir": build_dir,
                                           "PACKAGE_VERSION": version})
