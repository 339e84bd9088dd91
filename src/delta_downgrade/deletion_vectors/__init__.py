"""Deletion vectors (PROTOCOL.md, "Deletion Vectors" and the Appendix "Deletion Vector Format" /
"Deletion Vector File Storage Format").

A deletion vector (DV) is the set of row indexes (0-based positions of rows in their parquet file)
that are deleted. Three layers, each its own module:

- ``bitmap``: *DV data*, the magic number and the RoaringBitmapArray (64-bit portable Roaring),
  whose 32-bit bitmaps CRoaring (pyroaring) encodes and decodes;
- ``files``: DV data stored in a DV file (version byte, size prefix, CRC-32) or inline (Z85), and
  writing them;
- ``reader``: from a data file's descriptor to its deleted row indexes, with table errors.

Where a DV lives (``u``/``p``/``i`` descriptors, Z85) is ``delta_downgrade.protocol.dv_paths``.
"""

from delta_downgrade.deletion_vectors.bitmap import (
    MAGIC_NUMBER,
    DeletionVectorFormatError,
    dv_data_cardinality,
    parse_dv_data,
    parse_dv_runs,
    parse_portable_bitmap64,
    parse_roaring32,
    serialize_bitmap,
    serialize_roaring32,
)
from delta_downgrade.deletion_vectors.files import (
    DV_FILE_FORMAT_VERSION,
    decode_inline,
    dv_file_bytes,
    encode_inline,
    frame_dv,
    inline_descriptor,
    unframe_dv,
    write_dv_file,
)
from delta_downgrade.deletion_vectors.reader import (
    DeletionVectorCardinalityError,
    DeletionVectorChecksumError,
    DeletionVectorError,
    DeletionVectorNotFoundError,
    DeletionVectorSizeError,
    DvFileReader,
    read_deletion_vector,
    row_index_list,
)

__all__ = [
    "MAGIC_NUMBER", "DV_FILE_FORMAT_VERSION", "DeletionVectorFormatError", "DeletionVectorError",
    "DeletionVectorNotFoundError", "DeletionVectorChecksumError", "DeletionVectorSizeError",
    "DeletionVectorCardinalityError", "parse_roaring32", "parse_portable_bitmap64", "parse_dv_data",
    "parse_dv_runs", "serialize_roaring32", "serialize_bitmap", "dv_data_cardinality", "frame_dv",
    "dv_file_bytes", "unframe_dv",
    "encode_inline", "decode_inline", "inline_descriptor", "write_dv_file", "DvFileReader",
    "read_deletion_vector", "row_index_list",
]
