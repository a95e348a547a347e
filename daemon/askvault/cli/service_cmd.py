"""`askvault service install|uninstall|status`: the per-vault user service."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from askvault.cli import render
from askvault.cli.common import build_settings, common_options, handle_errors, print_json

if TYPE_CHECKING:
    from askvault.services.admin.user_service import ServiceFile

# services.admin.user_service.PLATFORMS (a test checks they agree); the service code itself is
# imported only when a service command runs, not by every other command's start-up.
PLATFORMS = ("linux", "macos")


def service_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--unit-dir, --no-start and the hidden --platform of every service command."""
    options = [
        click.option(
            "--unit-dir",
            type=click.Path(file_okay=False, path_type=Path),
            envvar="ASKVAULT_SERVICE_DIR",
            help="Folder of the service file (default: ~/.config/systemd/user, or "
            "~/Library/LaunchAgents on macOS; or ASKVAULT_SERVICE_DIR).",
        ),
        click.option(
            "--no-start",
            is_flag=True,
            help="Only write or read the file: do not call systemctl / launchctl.",
        ),
        click.option(
            "--platform",
            type=click.Choice(PLATFORMS),
            hidden=True,
            help="linux or macos (default: this system).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _target(opts: dict[str, Any]) -> tuple[ServiceFile, Any]:
    from askvault.services.admin.user_service import current_platform, default_manager, service_file

    unit_dir, no_start = opts.pop("unit_dir"), opts.pop("no_start")
    platform = opts.pop("platform") or current_platform()
    settings = build_settings(**opts)
    target = service_file(
        settings, platform=platform, unit_dir=unit_dir, config_file=opts.get("config_file")
    )
    return target, None if no_start else default_manager(platform)


@click.group()
def service() -> None:
    """Run askvault for this vault as a user service (systemd on Linux, launchd on macOS)."""


@service.command("install")
@common_options
@service_options
@click.option(
    "--force",
    is_flag=True,
    help="Replace a service file askvault did not write, or one edited since (a copy of it "
    "is kept as <file>.bak).",
)
@handle_errors
def install(force: bool, **opts: Any) -> None:
    """Write the service file for this vault and enable and start it."""
    from askvault.services.admin.user_service import install_service

    target, manager = _target(opts)
    report = install_service(target, manager, force=force)
    render.echo_lines(render.service_install_lines(target, report, started=manager is not None))


@service.command("uninstall")
@common_options
@service_options
@click.option("--force", is_flag=True, help="Remove the file even if askvault did not write it.")
@handle_errors
def uninstall(force: bool, **opts: Any) -> None:
    """Stop and disable this vault's service and remove its file."""
    from askvault.services.admin.user_service import uninstall_service

    target, manager = _target(opts)
    report = uninstall_service(target, manager, force=force)
    render.echo_lines(render.service_uninstall_lines(target, report))


@service.command("status")
@common_options
@service_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@handle_errors
def status(as_json: bool, **opts: Any) -> None:
    """Whether this vault's service file is installed and up to date, and if it runs."""
    from askvault.services.admin.user_service import service_status

    target, manager = _target(opts)
    report = service_status(target, manager)
    if as_json:
        print_json(report.as_dict())
        return
    render.echo_lines(render.service_status_lines(target, report))
