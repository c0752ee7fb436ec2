"""Checkpoint files that a crash cannot leave half written."""

import os
import tempfile

import torch

from .errors import CommoptError


def save_checkpoint(obj, path):
    """Writes `obj` with torch.save to `path` so that `path` always holds a
    whole checkpoint: the data goes to a temporary file in the same
    directory, is flushed to the disk (fsync), and then replaces `path` in
    one rename, which the directory's fsync makes durable. A process killed
    while writing (its rank dying, the job stopped) leaves the previous
    file at `path` as it was, and at most a temporary `.NAME.*.tmp` beside
    it. Not collective: call it where the checkpoint is written (on rank
    0 for `state_dict(gather=True)`, on every rank for files per rank)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    try:
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise CommoptError(f"cannot write the checkpoint {path}: {error}")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            torch.save(obj, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise CommoptError(
                f"cannot write the checkpoint {path}: {error}") from error
        raise
    # The rename is done; a directory that cannot be synced (some file
    # systems refuse) only makes it less durable across a power loss.
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        directory_descriptor = os.open(directory, flags)
    except OSError:
        return
    try:
        os.fsync(directory_descriptor)
    except OSError:
        pass
    finally:
        os.close(directory_descriptor)
