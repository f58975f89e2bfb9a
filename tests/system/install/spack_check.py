"""Check contrib/spack/package.py without Spack: load it against a small
stand-in for the `spack.package` directives, then check that it declares the
+cuda, +nccl, +mpi and +python variants and that every configure option it produces,
for every combination of variants, is one that configure --help lists.

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

    shim.AutotoolsPackage = AutotoolsPackage
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
        known = set(re.findall(r"--(?:with|without|enable|disable)-[a-z0-9-]+", f.read()))
    known |= {o.replace("--with-", "--without-") for o in known if o.startswith("--with-")}
    known |= {o.replace("--disable-", "--enable-") for o in known if o.startswith("--disable-")}
    errors = []
    for name in ("cuda", "nccl", "mpi", "python"):
        if name not in declared["variants"]:
            errors.append("no variant +" + name)
    names = sorted(declared["variants"])
    for values in itertools.product([False, True], repeat=len(names)):
        on = {n for n, v in zip(names, values) if v}
        pkg = cls()
        pkg.spec = Spec(on)
        for arg in pkg.configure_args():
            option = arg.split("=", 1)[0]
            if option not in known:
                errors.append("variants %s give %s, which configure does not know" % (sorted(on), arg))
    for dep in ("ucx@1.10:", "hwloc@2:", "pkgconfig"):
        if not any(a[0] == dep for a, _ in declared["depends_on"]):
            errors.append("no depends_on(%r)" % dep)
    for error in sorted(set(errors)):
        print(error)
    print("%d variants, %d combinations checked" % (len(names), 2 ** len(names)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
