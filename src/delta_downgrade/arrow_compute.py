"""Arrow's compute kernels, called by name: what the package uses of ``pyarrow.compute``.

``import pyarrow.compute`` builds a documented Python wrapper (a signature, a docstring scraped from
its options class) for each of Arrow's ~290 kernels when it loads: about 0.06 s of CPU, more than
``import pyarrow`` itself and a fifth of a fast drop on a small table, for the ~50 kernels this
package calls. The kernels themselves live in ``pyarrow._compute`` (the compiled module
``pyarrow.compute`` re-exports): ``call_function(name, args, options)`` runs one with the same
options classes, so each function below does what its namesake in ``pyarrow.compute`` does.

The kernel methods of Arrow's arrays and tables (``cast``, ``take``, ``filter``, ``is_null``,
``is_valid``, ``fill_null``, ``unique``, ``value_counts``, ``sum``, ``sort_by``, ``index``, the
arithmetic operators) and ``from_arrays(..., mask=...)`` import ``pyarrow.compute`` on their first
call, so the native engine's Arrow code (``log/``, ``deletion_vectors/``) calls the functions here
instead; ``tests/integration/test_command_imports.py`` checks that the commands on a table's path
never load ``pyarrow.compute``. The Spark rewrites (``rewrite/``) keep ``pyarrow.compute``: they
group with Arrow's hash aggregates, which only it exposes, in a process that runs a Spark job.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

try:  # the compiled kernels' module, as every pyarrow since 1.0 lays it out
    import pyarrow._compute as _kernels
except ImportError:  # pragma: no cover - a pyarrow that moved it: the public module has the same names
    import pyarrow.compute as _kernels

call_function = _kernels.call_function
CastOptions = _kernels.CastOptions
FilterOptions = _kernels.FilterOptions
JoinOptions = _kernels.JoinOptions
MapLookupOptions = _kernels.MapLookupOptions
MatchSubstringOptions = _kernels.MatchSubstringOptions
ReplaceSubstringOptions = _kernels.ReplaceSubstringOptions
SetLookupOptions = _kernels.SetLookupOptions
SliceOptions = _kernels.SliceOptions
StructFieldOptions = _kernels.StructFieldOptions

__all__ = [
    "add", "all", "and_", "and_kleene", "any", "binary_join_element_wise", "binary_length",
    "binary_slice", "bit_wise_and", "bit_wise_or", "bit_wise_xor", "cast", "cumulative_sum",
    "divide", "equal", "fill_null", "fill_null_forward", "filter", "greater", "greater_equal",
    "if_else", "indices_nonzero", "invert", "is_finite", "is_in", "is_null", "is_valid", "less",
    "map_lookup", "match_substring", "match_substring_regex", "max", "multiply", "not_equal", "or_",
    "or_kleene", "replace_substring", "replace_with_mask", "shift_left", "shift_right",
    "sort_indices", "struct_field", "subtract", "sum", "take", "unique", "utf8_slice_codeunits",
    "value_counts", "with_validity",
]


def _kernel(name: str) -> Any:
    """A kernel of fixed arity whose options (if any) the package always leaves at their defaults."""

    def kernel(*args: Any, memory_pool: pa.MemoryPool | None = None) -> Any:
        return call_function(name, list(args), None, memory_pool)

    kernel.__name__ = kernel.__qualname__ = name.rstrip("_")
    kernel.__doc__ = f"The Arrow kernel {name!r} (``pyarrow.compute.{name}``), default options."
    return kernel


# Element-wise arithmetic, comparisons and logic ("add" is the unchecked kernel, as pc.add is).
add = _kernel("add")
subtract = _kernel("subtract")
multiply = _kernel("multiply")
divide = _kernel("divide")
equal = _kernel("equal")
not_equal = _kernel("not_equal")
greater = _kernel("greater")
greater_equal = _kernel("greater_equal")
less = _kernel("less")
and_ = _kernel("and")
or_ = _kernel("or")
and_kleene = _kernel("and_kleene")
or_kleene = _kernel("or_kleene")
invert = _kernel("invert")
bit_wise_and = _kernel("bit_wise_and")
bit_wise_or = _kernel("bit_wise_or")
bit_wise_xor = _kernel("bit_wise_xor")
shift_left = _kernel("shift_left")
shift_right = _kernel("shift_right")
if_else = _kernel("if_else")
is_valid = _kernel("is_valid")
is_null = _kernel("is_null")            # NullOptions(nan_is_null=False): NaN is not null
is_finite = _kernel("is_finite")
binary_length = _kernel("binary_length")
# Aggregates with ScalarAggregateOptions' defaults (skip nulls; null under one value), as the
# pc functions and the methods of the same names run them when given no options.
any = _kernel("any")  # noqa: A001 - the kernel's name, as in pyarrow.compute
all = _kernel("all")  # noqa: A001
sum = _kernel("sum")  # noqa: A001
max = _kernel("max")  # noqa: A001
# Vector kernels.
indices_nonzero = _kernel("indices_nonzero")
sort_indices = _kernel("sort_indices")  # ascending, nulls at the end; stable
unique = _kernel("unique")
value_counts = _kernel("value_counts")
cumulative_sum = _kernel("cumulative_sum")  # start 0, unchecked
fill_null_forward = _kernel("fill_null_forward")
replace_with_mask = _kernel("replace_with_mask")


def cast(values: Any, target_type: Any, safe: bool = True) -> Any:
    """``pc.cast`` / ``values.cast(target_type, safe)``: a safe cast unless ``safe`` is False."""
    options = CastOptions.safe(target_type) if safe else CastOptions.unsafe(target_type)
    return call_function("cast", [values], options)


def take(data: Any, indices: Any) -> Any:
    """``pc.take`` / ``data.take(indices)`` (arrays, chunked arrays, tables), bounds checked."""
    return call_function("take", [data, indices])


def filter(data: Any, mask: Any) -> Any:  # noqa: A001 - the kernel's name, as in pyarrow.compute
    """``pc.filter`` / ``data.filter(mask)`` (arrays, chunked arrays, tables): a null in the mask
    drops its row."""
    return call_function("filter", [data, mask], FilterOptions("drop"))


def fill_null(values: Any, fill_value: Any) -> Any:
    """``pc.fill_null`` / ``values.fill_null(v)``: nulls replaced by ``fill_value``, a Python value
    or an Arrow value, given ``values``' type as ``pyarrow.compute`` gives it."""
    if not isinstance(fill_value, (pa.Array, pa.ChunkedArray, pa.Scalar)):
        fill_value = pa.scalar(fill_value, type=values.type)
    elif fill_value.type != values.type:
        fill_value = pa.scalar(fill_value.as_py(), type=values.type)
    return call_function("coalesce", [values, fill_value])


def is_in(values: Any, value_set: Any) -> Any:
    """``pc.is_in(values, value_set=...)``: null never matches (skip_nulls=False matches a null
    only against a null in the set; the package's sets have none)."""
    return call_function("is_in", [values], SetLookupOptions(value_set))


def match_substring(strings: Any, pattern: str) -> Any:
    return call_function("match_substring", [strings], MatchSubstringOptions(pattern))


def match_substring_regex(strings: Any, pattern: str) -> Any:
    return call_function("match_substring_regex", [strings], MatchSubstringOptions(pattern))


def replace_substring(strings: Any, pattern: str, replacement: str,
                      max_replacements: int | None = None) -> Any:
    return call_function("replace_substring", [strings],
                         ReplaceSubstringOptions(pattern, replacement, max_replacements=max_replacements))


def binary_join_element_wise(*strings: Any, null_handling: str = "emit_null",
                             null_replacement: str = "") -> Any:
    """``pc.binary_join_element_wise``: the last argument is the separator."""
    return call_function("binary_join_element_wise", list(strings),
                         JoinOptions(null_handling=null_handling, null_replacement=null_replacement))


def utf8_slice_codeunits(strings: Any, start: int, stop: int | None = None, step: int = 1) -> Any:
    return call_function("utf8_slice_codeunits", [strings], SliceOptions(start, stop, step))


def binary_slice(strings: Any, start: int, stop: int | None = None, step: int = 1) -> Any:
    return call_function("binary_slice", [strings], SliceOptions(start, stop, step))


def struct_field(values: Any, indices: Any) -> Any:
    return call_function("struct_field", [values], StructFieldOptions(indices))


def map_lookup(values: Any, query_key: Any, occurrence: str) -> Any:
    return call_function("map_lookup", [values], MapLookupOptions(query_key, occurrence))


def with_validity(array: Any, valid: Any) -> Any:
    """``array`` with slot ``i`` null wherever ``valid[i]`` is false (``array`` itself when
    ``valid`` is None).

    ``array`` is an unsliced struct or map array without nulls; ``valid`` a boolean array
    without nulls, of the same length. The result shares ``array``'s children and takes
    ``valid``'s bits as its validity bitmap (Arrow columnar format: a struct's only buffer is its
    validity bitmap; a map's are its validity bitmap and its offsets). It equals
    ``StructArray.from_arrays(..., mask=invert(valid))`` (or the map equivalent) without computing
    the inverted mask."""
    if valid is None:
        return array
    if array.offset or array.null_count or valid.null_count:
        raise ValueError("with_validity: the array must be unsliced and without nulls, the validity without nulls")
    if valid.offset:  # a bitmap that does not start at its buffer's first bit: copy it to one that does
        valid = pa.concat_arrays([pa.array([], pa.bool_()), valid])
    bitmap = valid.buffers()[1]
    if pa.types.is_struct(array.type):
        children = [array.field(i) for i in range(array.type.num_fields)]
        return pa.Array.from_buffers(array.type, len(array), [bitmap], children=children)
    if pa.types.is_map(array.type):
        return pa.Array.from_buffers(array.type, len(array), [bitmap, array.buffers()[1]],
                                     children=[array.values])
    raise TypeError(f"with_validity: a struct or map array, not {array.type}")
