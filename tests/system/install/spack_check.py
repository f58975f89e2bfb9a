"""Check Spack's recipe (contrib/spack/spack_repo/zeroshard/packages/zeroshard/
package.py) without Spack: load it against a small stand-in for the
`spack.package` directives, then check that it declares the +cuda, +nccl, +mpi,
+python, +blas, +liburing and +libaio variants and cuda_arch, the libraries
configure requires and the compilers, and that every configure option it
produces, for every combination of variants, is one that configure --help
lists; that each detected-on-its-own feature is named either way, warnings are
not errors and +python asks for the package by --enable-python (which fails
rather than builds without it).

usage: spack_check.py PACKAGE_PY CONFIGURE_HELP_TXT
"""
import itertools
import re
import sys
import types


class Spec:
    """Just enough of a concrete spec: variants and dependency prefixes."""

    def __init__(self, on):
        self.on = on
        self.variants = {"cuda_arch": types.SimpleNamespace(value=("80", "90"))}

    def satisfies(self, constraint):
        sign, name = constraint[0], constraint[1:]
        return (name in self.on) == (sign == "+")

    def __getitem__(self, dep):
        return types.SimpleNamespace(prefix="/opt/" + dep)


def load_package(path):
    declared = {"variants": {}, "depends_on": [], "conflicts": []}
    shim = types.ModuleType("spack.package")

    class AutotoolsPackage:
        def with_or_without(self, name):
            return ["--with-" + name if self.spec.satisfies("+" + name) else "--without-" + name]

        def enable_or_disable(self, name):
            return ["--enable-" + name if self.spec.satisfies("+" + name) else "--disable-" + name]

    class CudaPackage:
        # Spack's CudaPackage declares these two itself.
        declared["variants"]["cuda"] = {"default": False}
        declared["variants"]["cuda_arch"] = {"multi": True}

        @staticmethod
        def cuda_flags(archs):
            return ["-gencode=arch=compute_{0},code=sm_{0}".format(a) for a in archs]

    shim.AutotoolsPackage = AutotoolsPackage
    shim.CudaPackage = CudaPackage
    shim.when = lambda *a, **k: (lambda f: f)
    shim.version = lambda *a, **k: None
    shim.variant = lambda name, **k: declared["variants"].__setitem__(name, k)
    shim.depends_on = lambda *a, **k: declared["depends_on"].append((a, k))
    shim.conflicts = lambda *a, **k: declared["conflicts"].append((a, k))
    shim.which = lambda *a, **k: None
    shim.extends = lambda *a, **k: declared["depends_on"].append((a, k))
    spack = types.ModuleType("spack")
    spack.package = shim
    sys.modules["spack"] = spack
    sys.modules["spack.package"] = shim
    namespace = {}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), namespace)
    return namespace["Zeroshard"], declared


def main(package_py, help_txt):
    cls, declared = load_package(package_py)
    with open(help_txt) as f:
        help_text = f.read()
    known = set(re.findall(r"--(?:with|without|enable|disable)-[a-z0-9-]+", help_text))
    known |= {o.replace("--with-", "--without-") for o in known if o.startswith("--with-")}
    known |= {o.replace("--disable-", "--enable-") for o in known if o.startswith("--disable-")}
    known |= {o.replace("--enable-", "--disable-") for o in known if o.startswith("--enable-")}
    known_vars = set(re.findall(r"^  ([A-Z][A-Z0-9_]*)\s", help_text, re.M))
    errors = []
    for name in ("cuda", "cuda_arch", "nccl", "mpi", "python", "blas", "liburing", "libaio"):
        if name not in declared["variants"]:
            errors.append("no variant " + name)
    names = sorted(n for n, k in declared["variants"].items() if not k.get("multi") and "values" not in k)
    for values in itertools.product([False, True], repeat=len(names)):
        on = {n for n, v in zip(names, values) if v}
        pkg = cls()
        pkg.spec = Spec(on)
        args = pkg.configure_args()
        for arg in args:
            option = arg.split("=", 1)[0]
            if option not in known and option not in known_vars:
                errors.append("variants %s give %s, which configure does not know" % (sorted(on), arg))
        # What configure would find on its own is asked for or refused by name.
        for name in ("blas", "liburing", "libaio"):
            want = "--with-" + name if name in on else "--without-" + name
            if want not in args:
                errors.append("variants %s do not give %s" % (sorted(on), want))
        if "--disable-werror" not in args:
            errors.append("variants %s leave -Werror on for the user's compiler" % sorted(on))
        if "python" in on and "--enable-python" not in args:
            errors.append("+python does not give --enable-python")
        if "cuda" in on and not any(a.startswith("NVCC_FLAGS=") and "sm_90" in a for a in args):
            errors.append("+cuda cuda_arch=80,90 does not reach NVCC_FLAGS: %s" % args)
    for dep in ("ucx@1.10:", "hwloc@2:", "pkgconfig", "openssl@1.1:", "json-c@0.13:", "xxhash", "c", "cxx"):
        if not any(a[0] == dep for a, _ in declared["depends_on"]):
            errors.append("no depends_on(%r)" % dep)
    for error in sorted(set(errors)):
        print(error)
    print("%d variants, %d combinations checked" % (len(names), 2 ** len(names)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
