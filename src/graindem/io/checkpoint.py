"""HDF5 checkpoints: a flat dict of numpy arrays plus JSON-able metadata, exact and versioned.

Interface:

    save_checkpoint(path, arrays, metadata=None, *, schema=SCHEMA_VERSION) -> Path
        arrays: {name: numpy array}; names may contain '/' (stored as HDF5 groups) and come back
        unchanged. metadata: a dict that json.dumps accepts (Python ints of any size, floats
        including nan/inf, strings, bools, None, lists, dicts with string keys; numpy scalars are
        stored as the Python numbers they hold), e.g. the step
        count, dt, law name, numpy Generator state (`rng.bit_generator.state`).
    load_checkpoint(path, *, required=(), max_bytes=MAX_BYTES) -> (arrays, metadata)
        Returns every array with its dtype, shape and bits exactly as saved (NaN payloads, -0.0,
        byte order included) and the metadata as json.loads gives it back (tuples become lists).
        `required` lists array names that must be present; a file whose datasets declare more
        than `max_bytes` in total, or more than the file itself holds, is refused before any
        dataset is read.
    checkpoint_info(path) -> dict  (schema, graindem version, names, shapes, dtypes; reads no data)

What the file holds: root attributes `format` = "graindem-checkpoint", `schema` (int),
`graindem_version`, `metadata` (JSON text), `file_sha256`; one dataset per array (contiguous,
uncompressed), each with a `sha256` attribute of its raw bytes. `file_sha256` covers the format,
schema, version, metadata text and every array's name, dtype, shape and checksum, so damage
anywhere in the file, metadata included, is reported rather than silently restarted. (Checksums
detect damage, not forgery: what the arrays mean is validated by the reader, e.g.
graindem.io.checkpoint_check for engine checkpoints.)

Schema policy: SCHEMA_VERSION is the layout written. A newer schema is refused (this graindem
cannot know its meaning); older known schemas are converted on load: schema 1 lacks file_sha256
(its arrays' checksums are still checked); anything below 1 is refused.

Writes are atomic: the file is written under a temporary name in the target folder, flushed to
disk (fsync) and renamed over the target, so a crash leaves either the old checkpoint or the new
one, never half of one. Saving only reads the arrays (it never changes simulation state).

Errors: a missing file raises FileNotFoundError, a file that is not a readable graindem checkpoint
(corrupt, truncated, wrong format, checksum mismatch, newer schema) raises ValueError; both name
the path. Bad arguments to save raise ValueError before anything is written.
"""

import hashlib
import json
import os
from pathlib import Path

import h5py
import numpy as np

from .. import __version__
from .outputs import replacing

__all__ = ["SCHEMA_VERSION", "MAX_BYTES", "save_checkpoint", "load_checkpoint", "checkpoint_info", "array_sha256",
           "check_declared_sizes"]

FORMAT = "graindem-checkpoint"
# Bump when the layout of the file changes; loading refuses files from a newer schema (see above).
SCHEMA_VERSION = 2
OLDEST_SCHEMA = 1
# Largest total of array bytes a checkpoint may declare (64 GiB): a bound on what a load allocates.
MAX_BYTES = 1 << 36


def array_sha256(array):
    """sha256 (hex) of an array's raw bytes in C order."""
    return hashlib.sha256(np.ascontiguousarray(array).view(np.uint8).reshape(-1).tobytes() if array.size else b"").hexdigest()


def _file_digest(fmt, schema, version, meta_text, table):
    """sha256 over the header, the metadata text and the (name, dtype, shape, sha256) table."""
    doc = json.dumps({"format": fmt, "schema": int(schema), "graindem_version": str(version),
                      "metadata": meta_text, "arrays": sorted(table)}, sort_keys=True)
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _numpy_scalar(value):
    """json.dumps fallback: numpy scalars as the Python numbers they hold (arrays are refused)."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _check_arrays(arrays):
    if not isinstance(arrays, dict):
        raise ValueError(f"arrays must be a dict of name -> numpy array; got {type(arrays).__name__}")
    checked = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name or name.startswith("/") or name.endswith("/") or "//" in name:
            raise ValueError(f"array names must be non-empty strings without leading, trailing or double '/'; got {name!r}")
        if not isinstance(value, np.ndarray):
            raise ValueError(f"arrays[{name!r}] must be a numpy array; got {type(value).__name__}")
        if value.dtype.kind not in "biufc" or value.dtype.fields is not None:
            raise ValueError(f"arrays[{name!r}] must have a bool, integer, float or complex dtype; got {value.dtype}")
        checked[name] = value
    names = sorted(checked)
    for a, b in zip(names, names[1:]):
        if b.startswith(a + "/"):
            raise ValueError(f"array name {a!r} is also used as a group by {b!r}; rename one of them")
    return checked


def save_checkpoint(path, arrays, metadata=None, *, schema=SCHEMA_VERSION):
    """Atomically write `arrays` and `metadata` to the HDF5 file `path` (see the module docstring)."""
    path = Path(path)
    arrays = _check_arrays(arrays)
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a dict; got {type(metadata).__name__}")
    try:
        meta_text = json.dumps(metadata, sort_keys=True, default=_numpy_scalar)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata must be JSON-serialisable (plain ints, floats, str, bool, None, lists, dicts): {exc}") from None
    if not isinstance(schema, int) or schema < 1:
        raise ValueError(f"schema must be an integer >= 1; got {schema!r}")

    with replacing(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.attrs["schema"] = schema
            f.attrs["graindem_version"] = __version__
            f.attrs["metadata"] = meta_text
            table = []
            for name, value in arrays.items():
                ds = f.create_dataset(name, data=value)
                ds.attrs["sha256"] = digest = array_sha256(value)
                table.append([name, value.dtype.str, list(value.shape), digest])
            if schema >= 2:
                f.attrs["file_sha256"] = _file_digest(FORMAT, schema, __version__, meta_text, table)
    return path


def _open(path):
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"checkpoint file {str(path)!r} does not exist")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ValueError(f"checkpoint file {str(path)!r} is not a readable HDF5 file (corrupt or truncated?): {exc}") from None
    try:
        fmt = f.attrs.get("format")
        if isinstance(fmt, bytes):
            fmt = fmt.decode()
        if fmt != FORMAT:
            raise ValueError(f"{str(path)!r} is an HDF5 file but not a graindem checkpoint (format attribute {fmt!r})")
        schema = f.attrs["schema"]
        if not isinstance(schema, (int, np.integer)):
            raise ValueError(f"checkpoint {str(path)!r}: schema attribute {schema!r} is not an integer")
        schema = int(schema)
        if schema < OLDEST_SCHEMA:
            raise ValueError(f"checkpoint {str(path)!r} has schema {schema}; this graindem reads schemas "
                             f"{OLDEST_SCHEMA}..{SCHEMA_VERSION}")
        if schema > SCHEMA_VERSION:
            raise ValueError(
                f"checkpoint {str(path)!r} has schema {schema}, newer than this graindem ({__version__}) reads "
                f"(<= {SCHEMA_VERSION}); written by graindem {f.attrs.get('graindem_version')!r}"
            )
    except (KeyError, TypeError, OSError, RuntimeError) as exc:
        f.close()
        raise ValueError(f"checkpoint {str(path)!r} has a damaged header: {exc}") from None
    except BaseException:
        f.close()
        raise
    return f


def check_declared_sizes(f, path, max_bytes=MAX_BYTES, what="checkpoint"):
    """Refuse datasets of the open HDF5 file `f` (at `path`) whose declared size the file cannot
    hold, or stored otherwise than graindem stores arrays, before reading any of them."""
    file_size = os.path.getsize(path)
    total = 0
    for name in _datasets(f):
        ds = f[name]
        if ds.dtype.kind not in "biufc" or ds.dtype.fields is not None:
            raise ValueError(f"{what} {str(path)!r}: array {name!r} has the unsupported dtype {ds.dtype}")
        plist = ds.id.get_create_plist()
        if ds.compression is not None or plist.get_layout() not in (h5py.h5d.CONTIGUOUS, h5py.h5d.COMPACT) \
                or plist.get_external_count() or ds.is_virtual:
            raise ValueError(f"{what} {str(path)!r}: array {name!r} is not stored as graindem writes arrays "
                             "(contiguous, uncompressed, in the file)")
        nbytes = int(np.prod(ds.shape, dtype=object)) * ds.dtype.itemsize
        if nbytes > file_size:
            raise ValueError(f"{what} {str(path)!r}: array {name!r} declares {nbytes} bytes, more than the "
                             f"file's {file_size} (damaged or crafted)")
        total += nbytes
    if total > max_bytes:
        raise ValueError(f"{what} {str(path)!r} declares {total} bytes of arrays, more than max_bytes = {max_bytes}")
    if total > file_size:
        raise ValueError(f"{what} {str(path)!r} declares {total} bytes of arrays, more than the file's "
                         f"{file_size} (damaged or crafted)")


def _datasets(f):
    found = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return found


def load_checkpoint(path, *, required=(), max_bytes=MAX_BYTES):
    """Read a checkpoint; returns (arrays, metadata). See the module docstring for errors."""
    f = _open(path)
    try:
        try:
            check_declared_sizes(f, path, max_bytes)
            schema = int(f.attrs["schema"])
            meta_text = _text(f.attrs["metadata"])
            if not isinstance(meta_text, str):
                raise ValueError(f"checkpoint {str(path)!r}: metadata is not text")
            arrays = {}
            table = []
            for name in _datasets(f):
                ds = f[name]
                value = ds[()]
                if not isinstance(value, np.ndarray):  # 0-d datasets come back as numpy scalars
                    value = np.array(value, dtype=ds.dtype)
                expected = ds.attrs.get("sha256")
                if isinstance(expected, bytes):
                    expected = expected.decode()
                if expected != array_sha256(value):
                    raise ValueError(f"checkpoint {str(path)!r}: array {name!r} fails its checksum (file damaged)")
                arrays[name] = value
                table.append([name, value.dtype.str, list(value.shape), expected])
            if schema >= 2:
                stored = _text(f.attrs.get("file_sha256"))
                if stored != _file_digest(_text(f.attrs["format"]), schema, _text(f.attrs.get("graindem_version")),
                                          meta_text, table):
                    raise ValueError(f"checkpoint {str(path)!r} fails its whole-file checksum (metadata or array "
                                     "table damaged)")
            metadata = json.loads(meta_text)
            if not isinstance(metadata, dict):
                raise ValueError(f"checkpoint {str(path)!r}: metadata is not a JSON object")
        except json.JSONDecodeError as exc:
            raise ValueError(f"checkpoint {str(path)!r}: metadata is not valid JSON: {exc}") from None
        except ValueError:
            raise
        except (OSError, KeyError, RuntimeError, TypeError) as exc:
            raise ValueError(f"checkpoint {str(path)!r} is damaged and cannot be read: {exc}") from None
    finally:
        f.close()
    missing = [name for name in required if name not in arrays]
    if missing:
        raise ValueError(f"checkpoint {str(path)!r} lacks required arrays {missing}")
    return arrays, metadata


def checkpoint_info(path):
    """Schema, versions and the name -> (shape, dtype) table of a checkpoint, without reading arrays."""
    f = _open(path)
    try:
        return {
            "path": str(path),
            "schema": int(f.attrs["schema"]),
            "graindem_version": str(f.attrs.get("graindem_version")),
            "arrays": {name: (tuple(f[name].shape), str(f[name].dtype)) for name in _datasets(f)},
        }
    finally:
        f.close()
