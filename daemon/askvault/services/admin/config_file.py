"""Writing the example configuration (`config-example --write`): to a file the user names, or
to the user's config file, the one askvault reads by default."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from askvault.adapters.vault_writes import write_atomic
from askvault.errors import AskvaultError
from askvault.settings import user_config_file


def write_user_config(text: str, *, force: bool = False, env: dict[str, str] | None = None) -> Path:
    """Write `text` to the user's config file (`$XDG_CONFIG_HOME/askvault/config.toml`),
    making its folder (mode 0700, as a config folder is); never over an existing file
    unless `force`. Returns the file written."""
    path = user_config_file(os.environ if env is None else env)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise AskvaultError(f"cannot create {path.parent}: {exc.strerror or exc}") from exc
    write_config_example(path, text, force=force)
    return path


def write_config_example(path: Path, text: str, *, force: bool = False) -> None:
    """Write `text` to `path`, never over an existing file unless `force`.

    Without `force` the file is created whole or not at all: a temp file is written, then
    hard-linked to `path`, which fails if `path` exists, even if it appeared meanwhile.
    """
    path = path.expanduser()
    data = text.encode("utf-8")
    if not path.parent.is_dir():
        raise AskvaultError(
            f"cannot write {path}: the folder {path.parent} does not exist",
            f"create it first (mkdir -p {path.parent})",
        )
    if force:
        write_atomic(path, data)
        return
    if os.path.lexists(path):
        raise AskvaultError(
            f"{path} exists; not overwriting it",
            "pass --force to replace it, or choose another file",
        )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise AskvaultError(
                f"{path} exists; not overwriting it",
                "pass --force to replace it, or choose another file",
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            # No hard links here (FAT, some network mounts): an exclusive create still
            # never replaces a file.
            with open(path, "xb") as handle:
                handle.write(data)
    except FileExistsError:
        raise AskvaultError(
            f"{path} exists; not overwriting it",
            "pass --force to replace it, or choose another file",
        ) from None
    except OSError as exc:
        raise AskvaultError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
