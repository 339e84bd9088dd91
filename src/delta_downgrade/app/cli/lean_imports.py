"""The CLI's process loads pyarrow without pandas.

pyarrow tries ``import pandas`` each time it converts Python values (``pa.array``, ``pa.scalar``,
a compute function given a Python number) until the import succeeds: its pandas shim and its C++
converter look for pandas objects among the values. That import costs about 0.3 s per process
(more than the rest of a fast drop on a small table), and this package hands pyarrow no pandas
object. So in a process the CLI owns, an ``import pandas`` that this package's own code set off
through pyarrow fails (pyarrow then converts without pandas, as where pandas is not installed);
any other import of pandas - pyspark's Connect client, a Spark rewrite, user code - goes ahead,
and pyarrow is told at once, the way it learns of pandas on its own, so that pandas objects are
converted exactly as before from then on.

Installed by :func:`delta_downgrade.app.cli.main` only: a library import never changes how the
embedding process imports modules.

numpy likewise (:func:`pyarrow_without_numpy`), for the commands that work on a table's path (the
native engine: ``inspect``, ``compat``, ``drop-feature``, ``truncate-history``, ``cleanup``,
``vacuum``): pyarrow imports numpy when it loads, if numpy is installed (about 0.15 s of CPU, more
than half of ``import pyarrow.parquet``), and this package never hands pyarrow a numpy object.
Unlike pandas, numpy cannot be given back to pyarrow later (it sets up numpy's C API once, when it
loads), so only the commands whose every use of pyarrow is the package's own go without it. That
includes the rewrites that start a Spark session (deletion vectors, column mapping, type widening)
and the Spark checkpoint engine: they give Spark Arrow tables (sent as Arrow IPC, classic and
Connect alike) and read back rows, and pyspark's own numpy and pandas still load for pyspark, as
numpy does for anything but pyarrow. A catalog name keeps numpy: its Spark session runs Delta's
SQL, whatever that converts.
"""

from __future__ import annotations

import sys
from types import FrameType, ModuleType
from typing import Any, Callable

_PANDAS = "pandas"
_PYARROW = "pyarrow"
_PACKAGE = __name__.split(".", 1)[0]


# The finders and the loader below are plain classes, not subclasses of importlib.abc's: the import
# system only calls their methods (find_spec; create_module, exec_module), and importing
# importlib.abc loads importlib.resources with it - about 7 ms of every CLI process.


class _Then:
    """A module's own loader, and ``then(module)`` once the module has run."""

    def __init__(self, loader: Any, then: Callable[[ModuleType], None]) -> None:
        self._loader, self._then = loader, then

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        try:
            self._then(module)
        except Exception:  # pragma: no cover - never let the speed-up break an import
            pass

    def __getattr__(self, name: str) -> Any:  # resource readers and the like: the real loader's
        return getattr(self._loader, name)


class _AfterImport:
    """Runs ``then(module)`` right after the top-level module ``name`` is imported (once)."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Then(spec.loader, self.then)
                return spec
        return None


def _under(module: str, package: str) -> bool:
    """``module`` is ``package`` or one of its submodules."""
    return module == package or module.startswith(package + ".")


def _importer(looking_through: str | None = None) -> str | None:
    """The module whose code runs the import being resolved: the first frame outside the import
    machinery, this module and (when given) the package ``looking_through``; None when none is."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if frame.f_code.co_filename.startswith("<frozen importlib") or module == __name__ \
                or (looking_through is not None and _under(module, looking_through)):
            frame = frame.f_back
            continue
        return str(module)
    return None


class _NoPandas:
    """Makes ``import pandas`` fail when this package's code set it off (through pyarrow: the
    package itself never imports pandas); any other importer gets pandas."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
        if not _under(fullname, _PANDAS) or _PANDAS in sys.modules:
            return None
        if _Refuse.always:
            raise ImportError("pandas is not loaded by the delta-downgrade CLI")
        # pyarrow's Python wrappers are looked through: who set them off decides
        importer = _importer(looking_through=_PYARROW)
        if importer is not None and _under(importer, _PACKAGE):
            raise ImportError("pandas is not loaded by the delta-downgrade CLI")
        return None


_NUMPY = "numpy"
#: The package's module that imports pyarrow's compiled kernels module (``pyarrow._compute``)
#: itself, where pyarrow's own ``pyarrow.compute`` would.
_KERNELS = f"{_PACKAGE}.arrow_compute"


class _NoNumpyForPyarrow:
    """Makes ``import numpy`` fail when pyarrow's own code asks for it (pyarrow then runs as where
    numpy is not installed, which it supports); any other importer gets numpy."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
        if not _under(fullname, _NUMPY) or _NUMPY in sys.modules:
            return None
        # pyarrow's compiled modules have no frame: their import shows as pyarrow's package (or
        # the wrapper module, or the package's own gateway to the kernels) importing them
        importer = _importer()
        if importer is not None and (_under(importer, _PYARROW) or importer == _KERNELS):
            raise ImportError("numpy is not loaded for pyarrow by this delta-downgrade command")
        return None


def pyarrow_without_numpy() -> None:
    """For the rest of this process, pyarrow loads without numpy (see the module's doc): only for
    a command whose every use of pyarrow is this package's own, called before pyarrow is imported
    (once it is, nothing changes)."""
    if _PYARROW in sys.modules or _NUMPY in sys.modules or _NoNumpyForPyarrow in sys.meta_path:
        return
    sys.meta_path.insert(0, _NoNumpyForPyarrow)


def _shim() -> Any:
    lib = sys.modules.get("pyarrow.lib")
    return getattr(lib, "_pandas_api", None)


class _Probed:
    """Whether pyarrow's shim was answered "no pandas" by :func:`_probe_shim`."""

    shim = False


def _probe_shim(_: ModuleType | None = None) -> None:
    """Right after pyarrow is loaded, its pandas shim makes its one try, refused: from then on the
    shim answers from what it remembers (and takes its lock no more). Done here, not on the
    shim's own first try, so that pandas is never loaded while the shim holds its lock."""
    shim = _shim()
    if shim is None or _PANDAS in sys.modules:
        return
    _Refuse.always = True
    try:
        _ = shim.have_pandas
        _Probed.shim = True
    finally:
        _Refuse.always = False


class _Refuse:
    always = False


def _tell_pyarrow(_: ModuleType) -> None:
    """pandas is loaded now: pyarrow's shim imports it again when asked for its pandas support
    (its C++ converter tries the import again on its next conversion by itself)."""
    if _NoPandas in sys.meta_path:
        sys.meta_path.remove(_NoPandas)
    shim = _shim()
    if shim is not None and _Probed.shim:
        _ = shim.compat  # the shim tried before: it does not take its lock again


def install() -> None:
    """Refuse pandas to pyarrow's probes set off by this package, until pandas is imported by
    anything else."""
    if _PANDAS in sys.modules or _NoPandas in sys.meta_path:
        return
    sys.meta_path.insert(0, _AfterImport(_PANDAS, _tell_pyarrow))
    sys.meta_path.insert(0, _NoPandas)
    if _PYARROW in sys.modules:
        _probe_shim()
    else:
        sys.meta_path.insert(0, _AfterImport(_PYARROW, _probe_shim))
