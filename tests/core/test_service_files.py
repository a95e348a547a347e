"""core/service_files.py: which paths a service file can hold, and telling an edited file."""

from __future__ import annotations

import pytest

from askvault.core.service_files import (
    ServiceSpec,
    file_state,
    render_launchd_plist,
    render_systemd_unit,
    unsafe_path,
)

SPEC = ServiceSpec(
    name="askvault-notes",
    vault="/home/me/My Notes",
    state_dir="/home/me/.local/state/askvault/notes",
    command=("/usr/bin/python3", "-m", "askvault", "run", "--vault", "/home/me/My Notes"),
    environment={"PYTHONUNBUFFERED": "1"},
    documentation="file:///doc.md",
)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/a\rb", "a carriage return"),
        ("/a\nb", "a line break"),
        ("/a\tb", "a tab"),
        ("/a\x00b", "a control character"),
        ("/a\x7fb", "a control character"),
        ("/a\x85b", "a control character"),
        ("/a" + b"\xff".decode("utf-8", "surrogateescape"), "a byte that is not UTF-8"),
    ],
)
def test_unsafe_path_names_what_a_service_file_cannot_hold(path: str, why: str) -> None:
    assert why in (unsafe_path(path) or "")


@pytest.mark.parametrize("path", ["/home/me/My Notes 100% $HOME", "/home/me/Notizen ä 日本"])
def test_ordinary_paths_are_safe(path: str) -> None:
    assert unsafe_path(path) is None


@pytest.mark.parametrize("render", [render_systemd_unit, render_launchd_plist])
def test_a_file_is_as_written_until_a_byte_of_it_changes(render: object) -> None:
    text = render(SPEC)  # type: ignore[operator]
    data = text.encode("utf-8") if isinstance(text, str) else text
    assert file_state(data) == "as_written"
    assert file_state(data.replace(b"PYTHONUNBUFFERED", b"PYTHONDONTWRITEBYTECODE")) == "edited"
    assert file_state(data.replace(b"/home/me", b"/home/you")) == "edited"
    assert file_state(b"[Service]\nExecStart=/bin/true\n") == "foreign"


def test_rendering_refuses_a_path_it_cannot_hold() -> None:
    with pytest.raises(ValueError, match="carriage return"):
        render_systemd_unit(ServiceSpec(**{**SPEC.__dict__, "vault": "/a\rb"}))
